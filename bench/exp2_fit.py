#!/usr/bin/env python3
"""hyocr — the coefficients of wg_ex2_fma (kernels/attention-vision.cu): 2^f on [-1/2, 1/2]
by a degree-5 polynomial, for the exponentials k_vis_wg takes off MUFU.
1. Remez exchange for the least max relative error |p(f)/2^f - 1| (doubles; 7.5e-8);
2. the coefficients rounded to fp32, then moved one coefficient at a time by up to 3 ulps
   while the max relative error of the fp32 Horner evaluation (p·f + c in double with an
   exact product, rounded to fp32: the device's fmaf up to rare double-rounding ties) on a
   sample of f drops.
Prints both sets and their errors. Plain Python 3, a minute or so:  python3 bench/exp2_fit.py"""
import math, struct

DEG, A, B = 5, -0.5, 0.5


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def bits(x):
    return struct.unpack('I', struct.pack('f', x))[0]


def from_bits(b):
    return struct.unpack('f', struct.pack('I', b))[0]


def solve(m, y):
    n = len(y)
    m = [row[:] + [y[i]] for i, row in enumerate(m)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [a - f * b for a, b in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def rel_err(c, f):
    s = 0.0
    for k in reversed(c):
        s = s * f + k
    return s / 2.0 ** f - 1


def remez():
    n = DEG + 2  # DEG + 1 coefficients and the level E
    ref = [A + (B - A) * (1 - math.cos(math.pi * (i + 0.5) / n)) / 2 for i in range(n)]
    grid = [A + (B - A) * i / 100000 for i in range(100001)]
    for _ in range(30):
        m = [[x ** k for k in range(DEG + 1)] + [-(-1) ** i * 2.0 ** x] for i, x in enumerate(ref)]
        sol = solve(m, [2.0 ** x for x in ref])
        c = sol[:DEG + 1]
        ext = []  # the largest |error| of each run of one sign
        for x in grid:
            e = rel_err(c, x)
            if ext and (e > 0) == (ext[-1][1] > 0):
                if abs(e) > abs(ext[-1][1]):
                    ext[-1] = (x, e)
            else:
                ext.append((x, e))
        while len(ext) > n:
            ext.pop(0 if abs(ext[0][1]) < abs(ext[-1][1]) else -1)
        ref = [x for x, _ in ext]
    return c, max(abs(rel_err(c, x)) for x in grid)


def horner32(c, f):
    p = c[DEG]
    for k in range(DEG - 1, -1, -1):
        p = f32(math.fma(p, f, c[k]) if hasattr(math, 'fma') else p * f + c[k])
    return p


# the fp32 f where the error peaks ([1/4, 1/2] and its negative, every 2^-13 of an ulp range), and a grid
SAMPLE = [s * from_bits(b) for b in range(bits(0.25), bits(0.5) + 1, 1 << 10) for s in (1, -1)]
SAMPLE += [f32(-0.25 + 0.5 * i / 4000) for i in range(4001)]


def err32(c):
    return max(abs(horner32(c, f) / 2.0 ** f - 1) for f in SAMPLE)


def main():
    c, e = remez()
    print('Remez, doubles: max rel err %.3g (2^%.2f)' % (e, math.log2(e)))
    c32 = [f32(x) for x in c]
    best = err32(c32)
    print('rounded to fp32: %.3g (2^%.2f)' % (best, math.log2(best)))
    for _ in range(2):
        for i in range(DEG + 1):
            base = bits(c32[i])
            for d in range(-3, 4):
                t = c32[:]
                t[i] = from_bits(base + d)
                e = err32(t)
                if e < best:
                    best, c32 = e, t
    print('tuned fp32: %.3g (2^%.2f)' % (best, math.log2(best)))
    for i, x in enumerate(c32):
        print('c%d = %.9ef  (0x%08x; Remez %.17g)' % (i, x, bits(x), c[i]))


main()
