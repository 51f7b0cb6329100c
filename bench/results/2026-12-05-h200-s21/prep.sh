# What every call of session 21 needs first on a bare GPU machine (sourced): the build, the full-size
# random checkpoint and the benchmark's pages, each made only where missing.
export PATH=/usr/local/cuda/bin:$PATH
[ -f /tmp/hy-full/model.safetensors ] || python3 bench/make_random_checkpoint.py /tmp/hy-full > /tmp/ckpt.txt 2>&1 &
[ -f /tmp/hyocr-img/page_1024.png ] || python3 bench/make_images.py /tmp/hyocr-img > /dev/null 2>&1 &
[ -f build-gpu/build.ninja ] || meson setup build-gpu -Dgui=disabled -Dcuda=enabled -Dgpu_archs=90 -Ddownload=enabled \
  --buildtype=release > /tmp/setup.txt 2>&1
ninja -C build-gpu > /tmp/build.txt 2>&1 || { tail -20 /tmp/build.txt; exit 1; }
wait
