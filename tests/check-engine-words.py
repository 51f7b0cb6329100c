#!/usr/bin/env python3
"""The engine speaks in its own terms, translatably: no string literal in
src/engine names a front end's command-line option ("--max-side", "--endpoint",
...) or command ("hyocr download"), since front ends word what the engine returns as data (error.h, memplan.h,
download.h) in their own terms; and the message of every error the engine sets
is translatable (its format wrapped in _()). TAP output; argument: the source
root."""
import re
import sys
from pathlib import Path

# Commands for other programs that a message quotes whole; not hyocr's options.
ALLOWED = {
    "flatpak override --user --device=dri io.github.hyocr.Hyocr",
}

COMMAND = re.compile(r"\bhyocr (download|models|run)\b")   # "hyocr serve" names a kind of server too
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')

# Calls whose format argument is a message (GLib's and the files' own helpers).
ERROR_CALL = re.compile(r'\b(g_set_error|g_error_new|g_prefix_error|g_propagate_prefixed_error|fail|bad|'
                        r'entry_error|invalid|status_set|failf|fail_parse|set_at_error)\s*\(')
# Files whose every error message is translatable, and must stay so (issue 12).
SWEPT = {"backend.c", "backend-cpu.c", "backend-cuda.c", "batch.c", "checkpoint.c", "config.c", "decode.c",
         "dflash.c", "document.c", "download.c", "engine.c", "error.c", "image.c", "json.c", "kvcache.c",
         "memplan.c", "model.c", "models.c", "prompt.c", "resize.c", "safetensors.c", "speculate.c", "text.c",
         "tokenizer.c", "vision.c"}
SPEC = re.compile(r'%[-+ #0-9.*$]*(?:ll|l|z|h|hh)?[a-zA-Z]')


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


def untranslated(text):
    """(line, literal) of each error call whose format has words but no _()."""
    out = []
    for m in ERROR_CALL.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        prefix = text[line_start:m.start()]
        if re.search(r"\b(bool|gboolean|void|static)\b", prefix) or "G_GNUC_PRINTF" in prefix:
            continue   # the helper's own definition
        depth, i = 1, m.end()
        while i < len(text) and depth > 0 and text[i] != '"':
            depth += text[i] in "([" 
            depth -= text[i] in ")]"
            i += 1
        if i >= len(text) or text[i] != '"':
            continue
        lit = LITERAL.match(text, i).group(1)
        if not re.search(r"[A-Za-z]{2,}", SPEC.sub("", lit)):
            continue   # "%s: %s" and the like compose translated parts
        before = text[:i].rstrip()
        if not before.endswith("_(") and not re.search(r"\bg_dngettext\s*\(\s*GETTEXT_PACKAGE\s*,$", before):
            out.append((text.count("\n", 0, i) + 1, lit))
    return out


def main():
    root = Path(sys.argv[1])
    files = sorted(list((root / "src/engine").glob("*.c")) + list((root / "src/engine").glob("*.h")))
    n, failed = 0, 0
    for f in files:
        text = strip_comments(f.read_text(encoding="utf-8"))
        bad = []
        for m in LITERAL.finditer(text):
            s = m.group(1)
            # an option is "--" and a letter; "<!--", "-->" and "---" in written files are not
            if (re.search(r"--[A-Za-z]", s) or COMMAND.search(s)) and s not in ALLOWED:
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
        if f.name not in SWEPT:
            continue
        n += 1
        plain = untranslated(text)
        if plain:
            failed += 1
            print(f"not ok {n} - {f.relative_to(root)}: every error message is translatable")
            for line, lit in plain:
                print(f"# {f.relative_to(root)}:{line}: \"{lit}\"")
        else:
            print(f"ok {n} - {f.relative_to(root)}: every error message is translatable")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
