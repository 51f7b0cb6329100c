#!/usr/bin/env python3
"""First-step logits of hyocr (--dump) against transformers fp32: relative L2 and top-1."""
import math
import struct
import sys

ref_dir, hy_dir, name = sys.argv[1], sys.argv[2], sys.argv[3]
ref_raw = open(ref_dir + "/prefill_logits.f32", "rb").read()
n = len(ref_raw) // 4
ref = struct.unpack("<%df" % n, ref_raw)
got = struct.unpack_from("<%df" % n, open(hy_dir + "/logits.f32", "rb").read(), 0)
num = math.sqrt(sum((a - b) ** 2 for a, b in zip(got, ref)))
den = math.sqrt(sum(b * b for b in ref))
t_ref = max(range(n), key=ref.__getitem__)
t_got = max(range(n), key=got.__getitem__)
ids_ref = open(ref_dir + "/input_ids.txt").read().split()
ids_got = open(hy_dir + "/input_ids.txt").read().split()
rel = num / den
ok = rel <= 1e-2 and t_ref == t_got and ids_ref == ids_got
print("%s %s: prompt ids %s, logits rel-L2 %.3g (limit 1e-2), top-1 hyocr %d / transformers %d"
      % ("ok  " if ok else "FAIL", name, "identical" if ids_ref == ids_got else "DIFFER", rel, t_got, t_ref))
