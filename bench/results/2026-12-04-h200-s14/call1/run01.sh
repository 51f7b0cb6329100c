# s14 call1: k_vis_wg EXPV variants (fp16 ex2 pairs, sum via a column of ones) in flash_bench
set -u
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
L=$OUT/log.txt
nvcc -O3 -std=c++17 -DFB_VIS_LAZY -DFB_VIS_EXP -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/fb > $OUT/fb-build.txt 2>&1 || { cat $OUT/fb-build.txt; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s" >> $L
for e in 0 1 2 3; do
  f="_Z8k_vis_wgI6__halfLi4ELi64ELi2ELi1ELb0ELb1ELi${e}EEvPKT_PS1_iif"
  echo "EXPV=$e half SASS: $(cuobjdump -sass -fun $f /tmp/fb | grep -oE '(MUFU|HMMA|FADD|FFMA|FMNMX|F2FP|HADD2|FMUL|BAR|WARPGROUP|HGMMA)[.A-Z0-9_]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';')" >> $L
done
/tmp/fb > $OUT/fb-1.txt 2>&1; echo "fb rc=$?" >> $L
/tmp/fb > $OUT/fb-2.txt 2>&1; echo "fb2 rc=$?" >> $L
for f in fb-1 fb-2; do grep -E "n=16384|n=4096 |us " $OUT/$f.txt | tr -s ' ' >> $L; done
grep -E "rel-L2" $OUT/fb-1.txt | grep -E "x[123]|wg4x64s2/1s " | sort | uniq | head -80 > $OUT/acc.txt
echo "all at $(( $(date +%s) - T0 )) s" >> $L
cat $L
