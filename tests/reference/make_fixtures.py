#!/usr/bin/env python3
"""Writes the reference fixtures under tests/data (see FIXTURES.md).

Runs on the GPU machine, which has torch, transformers >= 5.17, tokenizers and Pillow.
Everything here is produced by the reference implementation itself: the C tests only
compare against what this script wrote. Deterministic (fixed seeds).

    python3 tests/reference/make_fixtures.py [--out tests/data] [--only tokenizer,processor,...]
"""
import argparse
import binascii
import io
import json
import math
import os
import random
import shutil
import struct
import sys
import traceback
import zlib

import numpy as np
import torch
from PIL import Image, ImageDraw

import tokenizers
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hy_release import (CHAT_TEMPLATE, N_ADDED, NAMED_ADDED, SPLIT_CJK, SPLIT_DIGITS, SPLIT_MAIN,  # noqa: E402
                        added_token_names, placeholder, tokenizer_config)

CORPUS = [
    "The quick brown fox jumps over the lazy dog. Invoice No. 2024-0815, total $1,234.56 (VAT 19%).",
    "提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，文档中公式用latex格式表示，按照阅读顺序组织进行解析。",
    "检测并识别图片中的文字，将文本坐标格式化输出。识别图片中的公式，用LaTeX格式表示。把图中的表格解析为HTML。",
    "按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为英文。",
    "解析图中的图表，对于流程图使用Mermaid格式表示，其他图表使用Markdown格式表示。提取图中的文字。提取图片中的字幕。",
    "東京都千代田区丸の内一丁目、カタカナとひらがなの混じった文章です。ラーメンを食べました。",
    "대한민국 서울특별시 중구 세종대로 110, 영수증 합계 금액: 45,000원",
    "مرحبا بالعالم، هذا نص عربي للاختبار ١٢٣٤٥ فاتورة رقم ٧٨٩",
    "สวัสดีครับ นี่คือข้อความภาษาไทยสำหรับทดสอบ ๑๒๓",
    "Привет, мир! Ёлка и щётка. Ελληνικά γράμματα αβγ. Ümlaute: äöüß, façade, naïve, coöperate.",
    "<table><tr><td>Name</td><td>Qty</td></tr><tr><td>Apple</td><td>3</td></tr></table>",
    "$$\\frac{a}{b} = \\sqrt{x^2 + y^2} \\sum_{i=1}^{n} i$$ and \\(E = mc^2\\)",
    "# Title\n\n- item one\n- item two\n\n```python\ndef f(x):\n    return x * 2\n```\n",
    "emoji 😀😃🎉👍🏽 👨‍👩‍👧‍👦 🇨🇳🇺🇸 ❤️ ✅",
    "1234567890 00001 3.14159 2026-12-02 12:30:45 +86 138-0013-8000",
    "   leading spaces\ttabs\t\tand\r\nwindows newlines\n\n\nmany\n",
    "can't won't it's we're they've I'd you'll DON'T",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "全角字符：ＡＢＣ１２３，标点符号！？【】（）《》“引号”‘单引号’……——",
    "{\"name\": \"张三\", \"date\": \"2024-01-01\", \"total\": 99.5}",
]


def build_tokenizer(vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_DIGITS), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(SPLIT_CJK), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(SPLIT_MAIN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(CORPUS * 3, trainer)
    n_bpe = tok.get_vocab_size()
    tok.add_special_tokens([AddedToken(n, special=True, normalized=False) for n in added_token_names()])
    assert tok.get_vocab_size() == n_bpe + N_ADDED
    return tok, n_bpe


# ----------------------------------------------------------------------------- checkpoints

def ids_for(n_bpe):
    return dict(bos=n_bpe + 0, eos=n_bpe + 7, pad=n_bpe + 2, eod=n_bpe + 18 + 2,
                image=n_bpe + 18 + 102, im_start=n_bpe + 18 + 100, im_end=n_bpe + 18 + 101,
                im_newline=n_bpe + 18 + 103)


def vision_config(max_image_size):
    return {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 1, "num_channels": 3,
            "max_image_size": max_image_size, "hidden_act": "gelu", "rms_norm_eps": 1e-5,
            "interpolate_mode": "bilinear", "out_hidden_size": 64, "text_hidden_size": 64,
            "img_max_token_num": 4096, "max_vit_seq_len": 16384, "min_image_size": 64}


def flat_config(n_bpe):
    """Legacy flat Tencent layout (1.0): text fields at the top level."""
    ids = ids_for(n_bpe)
    vocab = n_bpe + N_ADDED
    return {
        "architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl",
        "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "attention_head_dim": 32, "head_dim": 32, "intermediate_size": 96, "vocab_size": vocab,
        "org_vocab_size": vocab, "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": {"type": "xdrope", "alpha": 1000.0, "factor": 1.0, "beta_fast": 32, "beta_slow": 1,
                         "mscale": 1.0, "mscale_all_dim": 1.0, "xdrope_section": [4, 4, 4, 4]},
        "max_position_embeddings": 32768, "tie_word_embeddings": True, "use_qk_norm": True,
        "attention_bias": False, "mlp_bias": False, "initializer_range": 0.02,
        "pad_id": ids["pad"], "pad_token_id": -1, "bos_token_id": ids["bos"], "eos_token_id": ids["eos"],
        "eod_token_id": ids["eod"], "sep_token_id": 0, "text_start_id": 7, "text_end_id": 8,
        "image_token_id": ids["image"], "im_start_id": ids["im_start"], "im_end_id": ids["im_end"],
        "im_newline_id": ids["im_newline"],
        # leftovers of the HunYuan family that the released 1.0 config carries and nobody reads
        "use_cla": False, "cla_share_factor": 1, "use_mla": False, "kv_lora_rank": None, "q_lora_rank": None,
        "num_experts": 1, "moe_topk": 1, "norm_type": "rms", "mlp_bias": False,
        "vision_config": vision_config(128),
        "torch_dtype": "bfloat16", "transformers_version": "4.49.0",
    }


def nested_config(n_bpe):
    """transformers-5 layout: text_config / vision_config."""
    ids = ids_for(n_bpe)
    vocab = n_bpe + N_ADDED
    text = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 32, "intermediate_size": 96, "vocab_size": vocab, "hidden_act": "silu",
            "rms_norm_eps": 1e-5, "max_position_embeddings": 131072, "tie_word_embeddings": False,
            "attention_bias": False, "initializer_range": 0.02,
            "rope_parameters": {"rope_type": "xdrope", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0,
                                "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                "mrope_section": [4, 4, 4, 4]},
            "pad_token_id": ids["pad"], "bos_token_id": ids["bos"], "eos_token_id": ids["eos"],
            "eod_token_id": ids["eod"]}
    return {"architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl",
            "text_config": text, "vision_config": vision_config(256), "tie_word_embeddings": False,
            "image_token_id": ids["image"], "im_start_id": ids["im_start"], "im_end_id": ids["im_end"],
            "im_newline_id": ids["im_newline"], "dtype": "float32", "transformers_version": "5.17.0"}


def to_tencent_name(name):
    """transformers-5 parameter name → the release's on-disk name (spec §2.2)."""
    if name.startswith("model.vision_tower.patch_merger."):
        rest = name[len("model.vision_tower.patch_merger."):]
        rest = rest.replace("proj_conv.", "proj.0.").replace("proj_out.", "proj.2.")
        return "vit.perceive." + rest
    if name.startswith("model.vision_tower."):
        rest = name[len("model.vision_tower."):]
        rest = rest.replace(".layer_norm1.", ".input_layernorm.").replace(".layer_norm2.", ".post_attention_layernorm.")
        rest = rest.replace(".mlp.fc1.", ".mlp.dense_h_to_4h.").replace(".mlp.fc2.", ".mlp.dense_4h_to_h.")
        return "vit." + rest
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def randomize(model, seed):
    """Random weights with the reference's init, then spread norms and biases so that every
    parameter matters (zero biases and unit norms would hide bugs), and a larger scale so the
    logits of a 2-layer model have clear winners."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "begin" in name or "image_end" in name or "newline" in name or "sep" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
            elif "norm" in name or "_rms" in name:
                if p.dim() == 1:
                    p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)
            elif "position_embedding" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.15)
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))


def round_params(model, dtype_of):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(p.to(dtype_of(name)).to(torch.float32))


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def save_flat(model, d):
    """BF16, Tencent names, no lm_head, two shards + index (like the v1.0 folder)."""
    from safetensors.torch import save_file
    sd = {to_tencent_name(k): v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()
          if k != "lm_head.weight"}
    names = sorted(sd)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    weight_map, total = {}, 0
    for fname, keys in shards.items():
        save_file({k: sd[k] for k in keys}, os.path.join(d, fname), metadata={"format": "pt"})
        for k in keys:
            weight_map[k] = fname
            total += sd[k].numel() * 2
    write_json(os.path.join(d, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})


def nested_dtype(name):
    # F16 for the vision MLPs, F32 for the rest: exercises the mixed-dtype path.
    return torch.float16 if ".mlp.fc" in name else torch.float32


def save_nested(model, d):
    from safetensors.torch import save_file
    sd = {k: v.to(nested_dtype(k)).contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})


def make_checkpoint(kind, d, tok, n_bpe, seed):
    from transformers import HunYuanVLConfig, HunYuanVLForConditionalGeneration
    os.makedirs(d, exist_ok=True)
    cfg_dict = flat_config(n_bpe) if kind == "flat" else nested_config(n_bpe)
    write_json(os.path.join(d, "config.json"), cfg_dict)
    ids = ids_for(n_bpe)
    if kind == "flat":
        write_json(os.path.join(d, "generation_config.json"),
                   {"bos_token_id": ids["bos"], "eos_token_id": [ids["eos"], ids["eod"]], "pad_token_id": ids["pad"],
                    "repetition_penalty": 1.03, "transformers_version": "4.49.0"})
        write_json(os.path.join(d, "preprocessor_config.json"),
                   {"min_pixels": 64 * 64, "max_pixels": 160 * 160, "patch_size": 16, "temporal_patch_size": 1,
                    "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
                    "image_std": [0.26862954, 0.26130258, 0.27577711], "rescale_factor": 0.00392156862745098,
                    "resample": 1, "do_resize": True, "do_rescale": True, "do_normalize": True,
                    "do_convert_rgb": True, "image_processor_type": "HunYuanVLImageProcessor",
                    "processor_class": "HunYuanVLProcessor"})
    else:
        write_json(os.path.join(d, "generation_config.json"),
                   {"bos_token_id": ids["bos"], "eos_token_id": ids["eod"], "pad_token_id": ids["pad"],
                    "transformers_version": "5.17.0"})
        write_json(os.path.join(d, "processor_config.json"), {
            "image_processor": {"do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
                                "image_mean": [0.48145466, 0.4578275, 0.40821073],
                                "image_std": [0.26862954, 0.26130258, 0.27577711],
                                "image_processor_type": "HunYuanVLImageProcessor",
                                "max_pixels": 224 * 224, "min_pixels": 96 * 96, "merge_size": 2, "patch_size": 16,
                                "resample": 1, "rescale_factor": 0.00392156862745098,
                                "size": {"longest_edge": 224 * 224, "shortest_edge": 96 * 96},
                                "temporal_patch_size": 1},
            "processor_class": "HunYuanVLProcessor"})
        with open(os.path.join(d, "chat_template.jinja"), "w", encoding="utf-8") as f:
            f.write(CHAT_TEMPLATE)
    tok.save(os.path.join(d, "tokenizer.json"))
    write_json(os.path.join(d, "tokenizer_config.json"), tokenizer_config(n_bpe, inline_template=(kind == "flat")))
    write_json(os.path.join(d, "special_tokens_map.json"),
               {"bos_token": NAMED_ADDED[0], "eos_token": NAMED_ADDED[7], "pad_token": NAMED_ADDED[2]})

    torch.manual_seed(seed)
    config = HunYuanVLConfig.from_pretrained(d)
    config._attn_implementation = "eager"
    model = HunYuanVLForConditionalGeneration(config).float().eval()
    randomize(model, seed)
    if kind == "flat":
        round_params(model, lambda n: torch.bfloat16)
        save_flat(model, d)
    else:
        round_params(model, nested_dtype)
        save_nested(model, d)
    # The real loading path must give back exactly what we saved.
    loaded = HunYuanVLForConditionalGeneration.from_pretrained(d, dtype=torch.float32,
                                                                attn_implementation="eager").eval()
    ref = model.state_dict()
    got = loaded.state_dict()
    for k, v in ref.items():
        if k not in got or not torch.equal(got[k].float(), v.float()):
            raise SystemExit("reload of %s changed %s: the on-disk naming is not what transformers reads" % (d, k))
    return loaded


# ----------------------------------------------------------------------------- images

def write_png_raw(path, w, h, arr, color_type, bit_depth):
    """Minimal PNG writer for what Pillow cannot save (16-bit RGB)."""
    raw = b""
    for y in range(h):
        raw += b"\x00" + arr[y].tobytes()

    def chunk(t, data):
        c = struct.pack(">I", len(data)) + t + data
        return c + struct.pack(">I", zlib.crc32(t + data) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def scene(w, h, seed):
    """A photo-ish test picture: gradients, shapes, text-like strokes, noise."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([128 + 100 * np.sin(x / (7 + seed)), 128 + 90 * np.cos(y / 9.0), 255 * x / max(w, 1)], -1)
    img = Image.fromarray(np.clip(base + rng.randn(h, w, 3) * 12, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    for i in range(6):
        x0, y0 = rng.randint(0, max(w - 4, 1)), rng.randint(0, max(h - 4, 1))
        d.rectangle([x0, y0, x0 + rng.randint(2, max(w // 3, 3)), y0 + rng.randint(2, max(h // 3, 3))],
                    outline=tuple(int(c) for c in rng.randint(0, 255, 3)))
    d.text((2, 2), "Total 42.00", fill=(0, 0, 0))
    return img


def make_images(out):
    d = os.path.join(out, "images")
    os.makedirs(d, exist_ok=True)
    made = {}

    def save(name, img, **kw):
        img.save(os.path.join(d, name), **kw)
        made[name] = True
    save("tiny_40x30.png", scene(40, 30, 1))
    save("square_200.png", scene(200, 200, 2))
    save("strip_32x256.png", scene(32, 256, 3))
    save("odd_137x91.png", scene(137, 91, 4))
    save("big_420x300.png", scene(420, 300, 5))
    save("gray_120x90.png", scene(120, 90, 6).convert("L"))
    rgba = scene(150, 100, 7).convert("RGBA")
    a = np.array(rgba)
    a[..., 3] = np.linspace(0, 255, 150, dtype=np.uint8)[None, :]
    save("alpha_150x100.png", Image.fromarray(a, "RGBA"))
    save("palette_100x100.png", scene(100, 100, 8).quantize(colors=37))
    g16 = (np.arange(100 * 80, dtype=np.uint32).reshape(80, 100) * 8 % 65536).astype(">u2")
    write_png_raw(os.path.join(d, "gray16_100x80.png"), 100, 80, g16, 0, 16)
    made["gray16_100x80.png"] = True
    rgb16 = (np.array(scene(96, 64, 9)).astype(np.uint16) * 257 + np.arange(64 * 96 * 3).reshape(64, 96, 3) % 200)
    write_png_raw(os.path.join(d, "rgb16_96x64.png"), 96, 64, rgb16.astype(">u2"), 2, 16)
    made["rgb16_96x64.png"] = True
    save("photo_q90_190x140.jpg", scene(190, 140, 10), quality=90)
    save("progressive_170x130.jpg", scene(170, 130, 11), quality=85, progressive=True)
    save("gray_110x75.jpg", scene(110, 75, 12).convert("L"), quality=90)
    save("yuv444_96x96.jpg", scene(96, 96, 13), quality=95, subsampling=0)
    save("cmyk_88x66.jpg", scene(88, 66, 14).convert("CMYK"), quality=92)
    return sorted(made)


def load_rgb(path):
    """The reference scripts' decode: PIL open + convert('RGB'). 16-bit gray is the one departure:
    Pillow clips I;16 to 255 on convert, which makes scans white; hyocr takes the high byte, so the
    expected input is computed that way here (documented in image.c)."""
    im = Image.open(path)
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        a = np.array(im).astype(np.uint32) >> 8
        return Image.fromarray(a.astype(np.uint8), "L").convert("RGB")
    return im.convert("RGB")


# ----------------------------------------------------------------------------- tokenizer cases

def tokenizer_cases(tok_hf):
    rng = random.Random(1234)
    frags = [c for s in CORPUS for c in s.split(" ")] + CORPUS
    specials = [NAMED_ADDED[0], NAMED_ADDED[7], NAMED_ADDED[6], placeholder(102), placeholder(3)]
    extra = ["", " ", "  ", "\n", "\r\n", "\t", "\u3000", "\u00a0", "a\u00a0b", "x\u3000y", "a  b", "a\n\nb",
             "1", "12", "123", "1234", "12345", "123456789", "٣٤٥", "①②③", "Ⅻ", "1,000,000.00",
             "hello", " hello", "hello ", "Hello World", "HELLO 2026\nNCNN CPU TEST", "don't", "'s'", "ab'cd",
             "你好", "你好世界", "你好，世界！", "日本語のテキスト", "カタカナ", "ひらがな", "한국어", "ﾊﾝｶｸ",
             "e\u0301", "\u0915\u094d\u0937", "🎉", "👨‍👩‍👧", "🇨🇳", "a😀b", "😀😀😀",
             "...", "!!!", "?!", "--", "==>", "<|x|>", "<tag>", "</tag>", "``", "\\n", "$x$", "\\frac{1}{2}",
             "请逐行识别图片中的所有文字。只输出图片中的文字本身，保留换行，不要解释。",
             "<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>",
             "text<｜hy_User｜>more", "<｜hy_User｜><｜hy_User｜>", "<｜hy_Assistant", "｜hy_User｜>", "a" * 300,
             " " * 17, "\n" * 5 + "x", "x" + "\t " * 6, "ab12cd345ef6789", "a1b22c333d4444"]
    texts = [("fixed_%03d" % i, t) for i, t in enumerate(extra)]
    for i in range(260):
        n = rng.randint(1, 6)
        parts = []
        for _ in range(n):
            r = rng.random()
            if r < 0.1:
                parts.append(rng.choice(specials))
            elif r < 0.2:
                parts.append(rng.choice(["\n", " ", "  ", "\t", "\r\n", "\u3000", "\n\n"]))
            elif r < 0.3:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
            else:
                f = rng.choice(frags)
                a = rng.randint(0, max(len(f) - 1, 0))
                parts.append(f[a:a + rng.randint(1, 40)])
        texts.append(("random_%03d" % i, "".join(parts)))
    raw = [b"\xff", b"abc\xe4\xb8", b"\xc3\x28", b"\xed\xa0\x80x", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe4\xb8\xad\xe6",
           b"\x80\x80abc", b"\xf4\x90\x80\x80", b"a\xfe\xfeb", b"\xe2\x82", b"\xf0\x9f\x98\x80\xf0\x9f",
           b"ok\xc3", b"\xe6\x96\x87\xe5\xad\x97\xff\xe6\x96\x87"]
    cases = []

    def add(name, text, raw_bytes=None):
        ids = tok_hf(text, add_special_tokens=False)["input_ids"]
        c = {"name": name, "ids": ids,
             "decoded": tok_hf.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False),
             "decoded_skip": tok_hf.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)}
        if raw_bytes is not None:
            c["bytes_hex"] = binascii.hexlify(raw_bytes).decode()
        else:
            c["text"] = text
        cases.append(c)
    for name, t in texts:
        add(name, t)
    for i, b in enumerate(raw):
        add("invalid_%02d" % i, b.decode("utf-8", errors="replace"), raw_bytes=b)
    return cases


# ----------------------------------------------------------------------------- tasks

FIELDS = ["姓名", "date", "total"]
TASKS_15 = {
    "recognize": "提取图中的文字。",
    "spotting": "检测并识别图片中的文字，将文本坐标格式化输出。",
    "parse_document": "提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，文档中公式用latex格式表示，按照阅读顺序组织进行解析。",
    "parse_table": "把图中的表格解析为HTML。",
    "parse_formula": "识别图片中的公式，用LaTeX格式表示。",
    "parse_chart": "解析图中的图表，对于流程图使用Mermaid格式表示，其他图表使用Markdown格式表示。",
    "translate_zh": "按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为中文。",
    "translate_en": "按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为英文。",
    "extract_fields": "提取图片中的: " + repr(FIELDS) + " 的字段内容，并按照 JSON 格式返回。",
    "subtitles": "提取图片中的字幕。",
    "custom": "Describe the image.",
}
TASKS_10 = dict(TASKS_15)
TASKS_10["translate_zh"] = "先提取文字，再将文字内容翻译为中文。若是文档，则其中页眉、页脚忽略。公式用latex格式表示，表格用html格式表示。"
TASKS_10["translate_en"] = "先提取文字，再将文字内容翻译为英文。若是文档，则其中页眉、页脚忽略。公式用latex格式表示，表格用html格式表示。"


def make_processor(ckpt_dir):
    from transformers import AutoTokenizer
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil
    from transformers.models.hunyuan_vl.processing_hunyuan_vl import HunYuanVLProcessor
    pp = os.path.join(ckpt_dir, "preprocessor_config.json")
    if os.path.exists(pp):
        pc = json.load(open(pp))
    else:
        pc = json.load(open(os.path.join(ckpt_dir, "processor_config.json")))["image_processor"]
    ip = HunYuanVLImageProcessorPil(min_pixels=pc["min_pixels"], max_pixels=pc["max_pixels"],
                                    image_mean=pc["image_mean"], image_std=pc["image_std"],
                                    patch_size=pc["patch_size"], merge_size=pc["merge_size"],
                                    temporal_patch_size=pc["temporal_patch_size"])
    tk = AutoTokenizer.from_pretrained(ckpt_dir)
    return HunYuanVLProcessor(image_processor=ip, tokenizer=tk, chat_template=CHAT_TEMPLATE), tk


def render(proc, image, prompt):
    messages = [{"role": "system", "content": ""},
                {"role": "user", "content": [{"type": "image", "image": "x"}, {"type": "text", "text": prompt}]}]
    text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    inputs = proc(text=[text], images=[image], return_tensors="pt")
    return text, inputs


def write_ints(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(" ".join(str(int(v)) for v in r) + "\n")


def f32(path, t):
    np.ascontiguousarray(t.detach().float().cpu().numpy().astype("<f4")).tofile(path)


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data"))
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    torch.set_grad_enabled(False)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    for sub in ("ckpt-flat", "ckpt-nested", "images", "processor", "prompts", "model"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    manifest = {"transformers": transformers.__version__, "torch": torch.__version__,
                "tokenizers": tokenizers.__version__, "pillow": Image.__version__, "numpy": np.__version__,
                "notes": []}

    tok, n_bpe = build_tokenizer(3000)
    manifest["bpe_vocab"] = n_bpe
    models_ = {}
    for kind, seed in (("flat", 11), ("nested", 22)):
        d = os.path.join(out, "ckpt-" + kind)
        models_[kind] = make_checkpoint(kind, d, tok, n_bpe, seed)
        print("checkpoint", d, flush=True)

    proc_flat, tk = make_processor(os.path.join(out, "ckpt-flat"))
    # tokenizer cases through the transformers tokenizer (what the processor uses) ...
    cases = tokenizer_cases(tk)
    # ... which must agree with the raw tokenizers library
    for c in cases:
        text = c.get("text") if "text" in c else binascii.unhexlify(c["bytes_hex"]).decode("utf-8", "replace")
        raw_ids = tok.encode(text, add_special_tokens=False).ids
        if raw_ids != c["ids"]:
            manifest["notes"].append("tokenizers and transformers disagree on case %s" % c["name"])
    write_json(os.path.join(out, "tokenizer_cases.json"), cases)
    print("tokenizer cases", len(cases), flush=True)

    images = make_images(out)
    image_ckpts = {
        "flat": ["tiny_40x30.png", "strip_32x256.png", "big_420x300.png", "gray_120x90.png", "palette_100x100.png",
                 "gray16_100x80.png", "photo_q90_190x140.jpg", "gray_110x75.jpg", "cmyk_88x66.jpg", "odd_137x91.png"],
        "nested": ["square_200.png", "odd_137x91.png", "alpha_150x100.png", "rgb16_96x64.png",
                   "progressive_170x130.jpg", "yuv444_96x96.jpg", "big_420x300.png", "tiny_40x30.png"],
    }
    model_cases = {
        "flat": [("odd_137x91.png", "recognize"), ("big_420x300.png", "spotting"), ("tiny_40x30.png", "extract_fields")],
        "nested": [("square_200.png", "parse_document"), ("alpha_150x100.png", "translate_en"),
                   ("odd_137x91.png", "recognize")],
    }
    for kind in ("flat", "nested"):
        ck = os.path.join(out, "ckpt-" + kind)
        proc, _ = make_processor(ck)
        tasks = TASKS_10 if kind == "flat" else TASKS_15
        for name in image_ckpts[kind]:
            img = load_rgb(os.path.join(out, "images", name))
            _, inputs = render(proc, img, tasks["recognize"])
            pd = os.path.join(out, "processor", "ckpt-" + kind, name)
            os.makedirs(pd, exist_ok=True)
            t, gh, gw = inputs["image_grid_thw"][0].tolist()
            write_ints(os.path.join(pd, "grid_thw.txt"), [[t, gh, gw]])
            write_ints(os.path.join(pd, "resized.txt"), [[gw * 16, gh * 16]])
            f32(os.path.join(pd, "pixel_values.f32"), inputs["pixel_values"])
        prompt_images = [image_ckpts[kind][0], image_ckpts[kind][1]]
        for name in prompt_images:
            img = load_rgb(os.path.join(out, "images", name))
            for task, prompt in tasks.items():
                text, inputs = render(proc, img, prompt)
                pd = os.path.join(out, "prompts", "ckpt-" + kind, name, task)
                os.makedirs(pd, exist_ok=True)
                ids = inputs["input_ids"]
                pos, _ = models_[kind].model.get_rope_index(ids, inputs["mm_token_type_ids"], inputs["image_grid_thw"])
                write_ints(os.path.join(pd, "input_ids.txt"), [ids[0].tolist()])
                write_ints(os.path.join(pd, "position_ids.txt"), [pos[a, 0].tolist() for a in range(pos.shape[0])])
                with open(os.path.join(pd, "text.txt"), "w", encoding="utf-8") as f:
                    f.write(prompt)
        model = models_[kind]
        eos = json.load(open(os.path.join(ck, "generation_config.json")))["eos_token_id"]
        eos = eos if isinstance(eos, list) else [eos]
        eos = sorted(set(eos + [ids_for(n_bpe)["eos"]]))
        for name, task in model_cases[kind]:
            img = load_rgb(os.path.join(out, "images", name))
            _, inputs = render(proc, img, tasks[task])
            md = os.path.join(out, "model", "ckpt-" + kind, name + "__" + task)
            os.makedirs(md, exist_ok=True)
            feats = model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"])
            f32(os.path.join(md, "vision_out.f32"), feats.last_hidden_state[0])
            f32(os.path.join(md, "merger_out.f32"), feats.pooler_output.reshape(-1, feats.pooler_output.shape[-1]))
            logits = model(**inputs).logits[0, -1]
            f32(os.path.join(md, "prefill_logits.f32"), logits)
            top = torch.topk(logits, 2).values
            manifest["notes"].append("%s/%s top-2 logit margin %.4g" % (kind, md.split("/")[-1], float(top[0] - top[1])))
            for fname, rp in (("greedy.txt", 1.0), ("greedy_rp.txt", 1.08)):
                gen = model.generate(**inputs, max_new_tokens=48, do_sample=False, repetition_penalty=rp,
                                     eos_token_id=eos, pad_token_id=ids_for(n_bpe)["pad"])
                new = gen[0, inputs["input_ids"].shape[1]:].tolist()
                write_ints(os.path.join(md, fname), [new])
            print("model case", md, flush=True)

    write_json(os.path.join(out, "manifest.json"), manifest)
    total = 0
    for root, _, files in os.walk(out):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("fixtures: %.2f MB in %s" % (total / 1e6, out))
    for n in manifest["notes"]:
        print("note:", n)


if __name__ == "__main__":
    main()
