#!/usr/bin/env python3
"""Tables of bench/dflash-bench.sh's outputs (issue 20).

    python3 bench/dflash_table.py lossless OUT   plain vs speculative tokens, per penalty
    python3 bench/dflash_table.py speed OUT      decode tokens/s, acceptance, the draft's cost, memory
    python3 bench/dflash_table.py check OUT      every job of the speed runs against the plain continuation"""
import glob
import json
import os
import re
import sys


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def spec(r):
    s = r.get("speculative", {}) if r else {}
    return s.get("rounds", 0), s.get("tokens", 0), s.get("fallbacks", 0)


def lossless(out):
    ok = True
    for pen in ("1.0", "1.08"):
        plain = load(os.path.join(out, "dflash_plain_rp%s.json" % pen))
        if not plain:
            print("penalty %s: no plain run" % pen)
            ok = False
            continue
        want = plain["token_ids"]
        for name in ("draft", "standin15"):
            r = load(os.path.join(out, "dflash_%s_rp%s.json" % (name, pen)))
            if not r:
                print("penalty %s, %s: no run" % (pen, name))
                ok = False
                continue
            got = r["token_ids"]
            rounds, tokens, falls = spec(r)
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
            if first is None and len(got) == len(want):
                verdict = "identical (%d tokens)" % len(got)
            else:
                ok = False
                first = min(len(got), len(want)) if first is None else first
                verdict = "DIFFER from token %d of %d (got %s, plain %s)" % (
                    first, len(want), got[first] if first < len(got) else "end", want[first] if first < len(want)
                    else "end")
            print("penalty %s, %-9s: %s; %d rounds committed %d tokens, %d fallbacks" % (
                pen, name, verdict, rounds, tokens, falls))
    print("lossless: %s" % ("yes" if ok else "NO"))


def aggregate(err_path):
    """tokens/s of a --repeat run's summary line, or None."""
    try:
        text = open(err_path).read()
    except OSError:
        return None
    m = re.findall(r"([\d.]+) tokens/s", text)
    return float(m[-1]) if m else None


def speed(out):
    plain = load(os.path.join(out, "dflash_b1_plain.json"))
    base = plain["timings"]["decode_tokens_per_s"] if plain else 0
    print("Batch 1, a 2048² page (4191 prompt tokens), %d new tokens, warm engine (the second job), "
          "the stand-in proposing the job's own continuation right for k drafts a round:\n" %
          (len(plain["token_ids"]) if plain else 0))
    print("| run | decode tokens/s | vs plain | rounds | tokens a round | fallbacks | decode ms | peak GiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = [("plain (--speculative-tokens 0)", "b1_plain"), ("stand-in k = 0 (fallback)", "b1_k0"),
            ("stand-in k = 3", "b1_k3"), ("stand-in k = 6.4 (Tencent's mean)", "b1_k6.4"),
            ("stand-in k = 15", "b1_k15"), ("k = 6.4, the draft not run", "b1_k6.4-nodraft"),
            ("k = 6.4, verify row by row (HYOCR_VERIFY_KERNEL=0)", "b1_k6.4-rowbyrow"),
            ("the random draft (accepts ~nothing)", "b1_draft")]
    got = {}
    for label, key in rows:
        r = load(os.path.join(out, "dflash_%s.json" % key))
        if not r:
            print("| %s | failed | | | | | | |" % label)
            continue
        got[key] = r
        t, m = r["timings"], r["memory"]
        rounds, tokens, falls = spec(r)
        print("| %s | %.1f | %s | %d | %s | %d | %.1f | %.3f |" % (
            label, t["decode_tokens_per_s"], "%.2f×" % (t["decode_tokens_per_s"] / base) if base else "–", rounds,
            "%.2f" % (tokens / rounds) if rounds else "–", falls, t["decode_ms"], m.get("peak", 0) / 2 ** 30))
    a, b = got.get("b1_k6.4"), got.get("b1_k6.4-nodraft")
    if a and b and spec(a)[0]:
        cost = (a["timings"]["decode_ms"] - b["timings"]["decode_ms"]) / spec(a)[0]
        per_round = a["timings"]["decode_ms"] / spec(a)[0]
        print("\nThe draft's cost per round (k = 6.4 with and without the draft running): %.3f ms of a %.3f ms "
              "round" % (cost, per_round))
    if plain and a:
        print("Memory: peak %.3f GiB speculating (k = 6.4) against %.3f GiB plain: %+.3f GiB" % (
            a["memory"]["peak"] / 2 ** 30, plain["memory"]["peak"] / 2 ** 30,
            (a["memory"]["peak"] - plain["memory"]["peak"]) / 2 ** 30))
    print("\nBatches of 1024² pages, 256 new tokens each, all submitted at once (aggregate tokens/s of the run):\n")
    print("| jobs | plain tokens/s | k = 6.4 tokens/s | ratio | rounds | tokens a round |")
    print("|---:|---:|---:|---:|---:|---:|")
    for path in sorted(glob.glob(os.path.join(out, "dflash_batch*_plain.json.err"))):
        n = int(re.search(r"batch(\d+)_", path).group(1))
        p = aggregate(path)
        s = aggregate(os.path.join(out, "dflash_batch%d_k6.4.json.err" % n))
        rs = load(os.path.join(out, "dflash_batch%d_k6.4.json.all" % n)) or []
        rounds = sum(spec(r)[0] for r in rs)
        tokens = sum(spec(r)[1] for r in rs)
        print("| %d | %s | %s | %s | %d | %s |" % (
            n, "%.1f" % p if p else "failed", "%.1f" % s if s else "failed",
            "%.2f×" % (s / p) if p and s else "–", rounds, "%.2f" % (tokens / rounds) if rounds else "–"))


def check(out):
    """Every job of every speed run (both of a warm run, all of a batch) against the plain
    continuation of its page at penalty 1.08."""
    conts = {"b1": os.path.join(out, "cont_rp1.08.txt"), "batch": os.path.join(out, "cont_1024.txt")}
    bad = 0
    for path in sorted(glob.glob(os.path.join(out, "dflash_b*.json.all"))):
        name = os.path.basename(path)[len("dflash_"):-len(".json.all")]
        try:
            want = [int(x) for x in open(conts["batch" if name.startswith("batch") else "b1"]).read().split()]
        except OSError:
            continue
        jobs = load(path) or []
        verdicts = []
        for r in jobs:
            got = r.get("token_ids", [])
            if r.get("error"):
                verdicts.append("error: " + r["error"][:60])
            elif got == want[:len(got)] and len(got) == len(want):
                verdicts.append("same")
            else:
                first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                verdicts.append("differs at %d" % first)
        bad += sum(v != "same" for v in verdicts)
        print("%-22s %d jobs: %s" % (name, len(jobs), ", ".join(sorted(set(verdicts))) or "none"))
    print("every job as plain decoding: %s" % ("yes" if bad == 0 else "NO (%d jobs)" % bad))


if __name__ == "__main__":
    modes = {"lossless": lossless, "speed": speed, "check": check}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](sys.argv[2])
