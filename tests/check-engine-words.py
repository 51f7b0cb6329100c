#!/usr/bin/env python3
"""The engine speaks in its own terms: no string literal in src/engine names a
front end's command-line option ("--max-side", "--endpoint", ...). Front ends
word what the engine returns as data (error.h, memplan.h) in their own terms.
TAP output; argument: the source root."""
import re
import sys
from pathlib import Path

# Commands for other programs that a message quotes whole; not hyocr's options.
ALLOWED = {
    "flatpak override --user --device=dri io.github.hyocr.Hyocr",
}

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def strip_comments(src):
    """C source with comments blanked (string literals kept intact)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    root = Path(sys.argv[1])
    files = sorted(list((root / "src/engine").glob("*.c")) + list((root / "src/engine").glob("*.h")))
    n, failed = 0, 0
    for f in files:
        text = strip_comments(f.read_text(encoding="utf-8"))
        bad = []
        for m in LITERAL.finditer(text):
            s = m.group(1)
            if "--" in s and s not in ALLOWED:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{f.relative_to(root)}:{line}: \"{s}\"")
        n += 1
        if bad:
            failed += 1
            print(f"not ok {n} - {f.relative_to(root)} names no command-line option")
            for b in bad:
                print(f"# {b}")
        else:
            print(f"ok {n} - {f.relative_to(root)} names no command-line option")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
