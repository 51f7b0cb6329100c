#!/usr/bin/env python3
"""Conversations rendered by the release's chat template (spec §3.6), for the
renderer in src/engine/prompt.c and the request parser of hyocr serve.

Renders each conversation with jinja2 the way transformers' apply_chat_template
does (a sandboxed environment, trim_blocks and lstrip_blocks), from the template
shipped in tests/data/ckpt-nested/chat_template.jinja, and writes
tests/data/chat/cases.json: [{"name", "messages", "rendered", "images"}].
Messages are in the OpenAI request shape; an image part is an image_url whose
url is "IMAGE" (the tests put a real data: URI there). vLLM turns image_url
parts into {"type": "image"} before the template, which takes the same branch.

Runs anywhere with python3-jinja2:  python3 tests/reference/make_chat_fixtures.py
"""
import json
import os

from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
IMG = {"type": "image_url", "image_url": {"url": "IMAGE"}}


def text(t):
    return {"type": "text", "text": t}


CASES = [
    ("tencent", [{"role": "system", "content": ""},
                 {"role": "user", "content": [IMG, text("提取图中的文字。")]}]),
    ("no-system", [{"role": "user", "content": [IMG, text("提取图中的文字。")]}]),
    ("system-text-after-image", [{"role": "system", "content": "You read documents."},
                                 {"role": "user", "content": [text("Read this:\n"), IMG]}]),
    ("system-parts", [{"role": "system", "content": [text("first"), text("second")]},
                      {"role": "user", "content": [IMG]}]),
    ("system-empty-list", [{"role": "system", "content": []},
                           {"role": "user", "content": [IMG, text("x")]}]),
    ("user-string-then-image", [{"role": "user", "content": "Hello, 世界"},
                                {"role": "user", "content": [IMG, text("again")]}]),
    ("multi-turn", [{"role": "system", "content": ""},
                    {"role": "user", "content": [IMG, text("提取图中的文字。")]},
                    {"role": "assistant", "content": "an earlier answer"},
                    {"role": "user", "content": "Now only the title."}]),
    ("later-system-and-other-roles", [{"role": "user", "content": [IMG, text("a")]},
                                      {"role": "system", "content": "not the first: nothing"},
                                      {"role": "developer", "content": "nothing either"},
                                      {"role": "user", "content": "b"}]),
    ("special-characters", [{"role": "user", "content": [text("{{ not jinja }} {% x %} \"quotes\" \\ \t tab"), IMG]}]),
    ("two-images", [{"role": "user", "content": [IMG, text("and"), IMG]}]),
    ("no-image", [{"role": "system", "content": ""}, {"role": "user", "content": "just text"}]),
]


def main():
    with open(os.path.join(DATA, "ckpt-nested", "chat_template.jinja"), encoding="utf-8") as f:
        template = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tpl = env.from_string(template)
    out = []
    for name, messages in CASES:
        rendered = tpl.render(messages=messages, add_generation_prompt=False)
        images = sum(1 for m in messages if m["role"] == "user" and isinstance(m["content"], list)
                     for p in m["content"] if p.get("type") == "image_url")
        out.append({"name": name, "messages": messages, "rendered": rendered, "images": images})
    os.makedirs(os.path.join(DATA, "chat"), exist_ok=True)
    with open(os.path.join(DATA, "chat", "cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out)} conversations -> tests/data/chat/cases.json")


if __name__ == "__main__":
    main()
