# s14 call9 (planned; no machine was lent after call6): k_vis_wg2 (bench/vis_wg2.cuh then, in
# kernels/attention-vision.cu behind HYOCR_VIS_WG2 since session 15; two 64-row
# blocks a warpgroup, one block's softmax under the other's product) against the launched k_vis_wg:
# the same bits (FB_DUMP + cmp against the wg4x64s2/1s row) and the time.
# From the repository root: cp this to .device/run09.sh; source .device/setup.sh >/dev/null && bash .device/run09.sh
set -u
export PATH=/usr/local/cuda/bin:$PATH
L=$OUT/log.txt
nvcc -O3 -std=c++17 -DFB_VIS_LAZY -DFB_VIS_WG2 -gencode=arch=compute_90a,code=sm_90a -Ikernels -Xptxas -v \
  bench/flash_bench.cu -o /tmp/fb > $OUT/fb-build.txt 2>&1 || { tail -20 $OUT/fb-build.txt; exit 1; }
grep -A2 "k_vis_wg2" $OUT/fb-build.txt | grep -E "registers|spill" >> $L
mkdir -p /tmp/d && FB_DUMP=/tmp/d /tmp/fb > $OUT/fb-1.txt 2>&1; echo "fb rc=$?" >> $L
/tmp/fb > $OUT/fb-2.txt 2>&1; echo "fb2 rc=$?" >> $L
(cd /tmp/d && for f in *wg2x128s*.bin; do ref=$(echo $f | sed 's/wg2x128s[0-9]/wg4x64s2_1s/'); cmp -s $f $ref && echo "same $f" || echo "DIFF $f"; done) > $OUT/cmp.txt
echo "cmp against wg4x64s2/1s: $(grep -c same $OUT/cmp.txt) same, $(grep -c DIFF $OUT/cmp.txt) differ" >> $L
for f in fb-1 fb-2; do grep -E "n=16384|n=4096 | us " $OUT/$f.txt | tr -s ' ' >> $L; done
cat $L
