#!/usr/bin/env python3
"""Writes a full-size HunyuanOCR checkpoint with random weights, for speed and memory work.

Same files, config, tensor names, shapes and dtype (BF16, one model.safetensors) as the 1.5
release, so both hyocr and transformers load it through their real loading code. Weights follow
the reference's init (normal, std = initializer_range 0.02; norms 1; biases 0; the merger's
begin/end/newline vectors std = hidden^-0.5). The tokenizer is a synthetic byte-level BPE with the
release's size (120000 + 818 added tokens) and exact pre-tokenizer. Needs only numpy.

    python3 bench/make_random_checkpoint.py OUT_DIR [--seed 0] [--layers-vision 27] [--layers-text 24] [--draft]

--draft also writes dflash/: a random DFlash speculative-decoding draft in the release's format
(dflash-notes §3: 5 Qwen3-style layers, hidden 1024, 16/8 heads of 128, MLP 3584, block 16, mask
token 120817, reading target layers 1, 8, 15, 22; F32 like the HF copy), for the engine's speed and
memory with speculation. Random weights accept almost nothing: benchmarks choose the acceptance
with the draft stand-in (HYOCR_DRAFT_STANDIN).
"""
import argparse
import json
import os
import random
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from hy_release import (CHAT_TEMPLATE, NAMED_ADDED, SPLIT_CJK, SPLIT_DIGITS, SPLIT_MAIN,  # noqa: E402
                        added_token_names, placeholder, tokenizer_config)

N_BPE = 120000


def bytes_to_unicode():
    """GPT-2's printable stand-ins for the 256 byte values (ByteLevel alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(keep, cs))]


def synthetic_bpe(seed):
    rng = random.Random(seed)
    vocab = bytes_to_unicode()
    seen = set(vocab)
    merges = []
    short = vocab[:]  # prefer building from short pieces, like real merges
    while len(vocab) < N_BPE:
        a = rng.choice(short if rng.random() < 0.7 else vocab)
        b = rng.choice(short if rng.random() < 0.7 else vocab)
        ab = a + b
        if ab in seen or len(ab) > 16:
            continue
        seen.add(ab)
        vocab.append(ab)
        merges.append([a, b])
        if len(ab) <= 4:
            short.append(ab)
    return vocab, merges


def tokenizer_json(seed):
    vocab, merges = synthetic_bpe(seed)
    added = [{"id": N_BPE + i, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, name in enumerate(added_token_names())]
    split = lambda rx: {"type": "Split", "pattern": {"Regex": rx}, "behavior": "Isolated", "invert": False}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            split(SPLIT_DIGITS), split(SPLIT_CJK), split(SPLIT_MAIN),
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(vocab)}, "merges": merges},
    }


def config_json(n_vit, n_text):
    text = {"hidden_size": 1024, "num_hidden_layers": n_text, "num_attention_heads": 16, "num_key_value_heads": 8,
            "head_dim": 128, "intermediate_size": 3584, "vocab_size": 120818, "hidden_act": "silu",
            "rms_norm_eps": 1e-5, "max_position_embeddings": 131072, "tie_word_embeddings": True,
            "attention_bias": False, "initializer_range": 0.02, "pad_token_id": 120002, "bos_token_id": 120000,
            "eos_token_id": 120007, "eod_token_id": 120020,
            "rope_theta": 10000.0,
            "rope_scaling": {"type": "xdrope", "alpha": 1000.0, "factor": 1.0, "beta_fast": 32, "beta_slow": 1,
                             "mscale": 1.0, "mscale_all_dim": 1.0, "xdrope_section": [16, 16, 16, 16]}}
    vision = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": n_vit, "num_attention_heads": 16,
              "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 1, "num_channels": 3,
              "max_image_size": 2048, "hidden_act": "gelu", "rms_norm_eps": 1e-5, "interpolate_mode": "bilinear",
              "out_hidden_size": 1024, "text_hidden_size": 1024, "img_max_token_num": 16384,
              "max_vit_seq_len": 65536, "min_image_size": 512}
    cfg = {"architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl",
           "text_config": dict(text), "vision_config": vision, "image_token_id": 120120, "im_start_id": 120118,
           "im_end_id": 120119, "im_newline_id": 120121, "tie_word_embeddings": True, "dtype": "bfloat16",
           "use_qk_norm": True, "use_cla": False, "use_mla": False, "num_experts": 1}
    cfg.update(text)  # 1.5 keeps the text fields at the top level as well
    return cfg


def tensor_shapes(n_vit, n_text):
    C, I, T, V = 1152, 4304, 1024, 120818
    yield "vit.embeddings.patch_embedding.weight", (C, 3, 16, 16)
    yield "vit.embeddings.patch_embedding.bias", (C,)
    yield "vit.embeddings.position_embedding.weight", (128 * 128 + 1, C)
    for i in range(n_vit):
        p = "vit.layers.%d." % i
        for n in ("input_layernorm", "post_attention_layernorm"):
            yield p + n + ".weight", (C,)
            yield p + n + ".bias", (C,)
        for n in "qkvo":
            yield p + "self_attn.%s_proj.weight" % n, (C, C)
            yield p + "self_attn.%s_proj.bias" % n, (C,)
        yield p + "mlp.dense_h_to_4h.weight", (I, C)
        yield p + "mlp.dense_h_to_4h.bias", (I,)
        yield p + "mlp.dense_4h_to_h.weight", (C, I)
        yield p + "mlp.dense_4h_to_h.bias", (C,)
    yield "vit.perceive.before_rms.weight", (C,)
    yield "vit.perceive.proj.0.weight", (2 * C, C, 2, 2)
    yield "vit.perceive.proj.0.bias", (2 * C,)
    yield "vit.perceive.proj.2.weight", (4 * C, 2 * C, 1, 1)
    yield "vit.perceive.proj.2.bias", (4 * C,)
    yield "vit.perceive.mlp.weight", (T, 4 * C)
    yield "vit.perceive.mlp.bias", (T,)
    yield "vit.perceive.image_newline", (4 * C,)
    for n in ("image_begin", "image_end", "image_sep"):
        yield "vit.perceive." + n, (T,)
    yield "vit.perceive.after_rms.weight", (T,)
    yield "model.embed_tokens.weight", (V, T)
    for i in range(n_text):
        p = "model.layers.%d." % i
        yield p + "input_layernorm.weight", (T,)
        yield p + "self_attn.q_proj.weight", (2048, T)
        yield p + "self_attn.k_proj.weight", (1024, T)
        yield p + "self_attn.v_proj.weight", (1024, T)
        yield p + "self_attn.o_proj.weight", (T, 2048)
        yield p + "self_attn.query_layernorm.weight", (128,)
        yield p + "self_attn.key_layernorm.weight", (128,)
        yield p + "post_attention_layernorm.weight", (T,)
        yield p + "mlp.gate_proj.weight", (3584, T)
        yield p + "mlp.up_proj.weight", (3584, T)
        yield p + "mlp.down_proj.weight", (T, 3584)
    yield "model.norm.weight", (T,)


def draft_config(n_text):
    return {"architectures": ["DFlashDraftModel"], "attention_bias": False, "attention_dropout": 0.0,
            "auto_map": {"AutoModel": "dflash.DFlashDraftModel"}, "block_size": 16,
            "dflash_config": {"mask_token_id": 120817, "target_layer_ids": [1, 8, 15, 22]},
            "dtype": "float32", "eos_token_id": 120020, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
            "initializer_range": 0.02, "intermediate_size": 3584, "layer_types": ["full_attention"] * 5,
            "max_position_embeddings": 32768, "max_window_layers": 5, "model_type": "qwen3",
            "num_attention_heads": 16, "num_hidden_layers": 5, "num_key_value_heads": 8,
            "num_target_layers": n_text, "pad_token_id": -1, "rms_norm_eps": 1e-5, "rope_scaling": None,
            "rope_theta": 10000.0, "sliding_window": None, "tie_word_embeddings": True,
            "transformers_version": "4.57.1", "use_cache": True, "use_sliding_window": False,
            "vocab_size": 120818}


def draft_shapes():
    T = 1024
    yield "fc.weight", (T, 4 * T)
    yield "hidden_norm.weight", (T,)
    for i in range(5):
        p = "layers.%d." % i
        yield p + "input_layernorm.weight", (T,)
        yield p + "self_attn.q_proj.weight", (2048, T)
        yield p + "self_attn.k_proj.weight", (1024, T)
        yield p + "self_attn.v_proj.weight", (1024, T)
        yield p + "self_attn.o_proj.weight", (T, 2048)
        yield p + "self_attn.q_norm.weight", (128,)
        yield p + "self_attn.k_norm.weight", (128,)
        yield p + "post_attention_layernorm.weight", (T,)
        yield p + "mlp.gate_proj.weight", (3584, T)
        yield p + "mlp.up_proj.weight", (3584, T)
        yield p + "mlp.down_proj.weight", (T, 3584)
    yield "norm.weight", (T,)


def init_values(name, shape, rng):
    if name.endswith("norm.weight") or "layernorm.weight" in name or name.endswith("_rms.weight"):
        return np.ones(shape, np.float32)
    if name.endswith(".bias"):
        return np.zeros(shape, np.float32)
    if name.split(".")[-1] in ("image_newline", "image_begin", "image_end", "image_sep"):
        return rng.standard_normal(shape, dtype=np.float32) * (1024 ** -0.5)
    return rng.standard_normal(shape, dtype=np.float32) * 0.02


def to_bf16(a):
    bits = a.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return (rounded >> 16).astype(np.uint16)


def write_safetensors(path, shapes, seed, f32=False):
    header, offset, esz = {}, 0, 4 if f32 else 2
    for name, shape in shapes:
        n = int(np.prod(shape)) * esz
        header[name] = {"dtype": "F32" if f32 else "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name, shape in shapes:
            v = init_values(name, shape, rng)
            f.write(v.astype("<f4").tobytes() if f32 else to_bf16(v).tobytes())
    return offset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers-vision", type=int, default=27)
    ap.add_argument("--layers-text", type=int, default=24)
    ap.add_argument("--draft", action="store_true", help="also write a random DFlash draft into dflash/")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dump = lambda name, obj: json.dump(obj, open(os.path.join(args.out, name), "w", encoding="utf-8"),
                                       ensure_ascii=False, indent=1)
    dump("config.json", config_json(args.layers_vision, args.layers_text))
    dump("generation_config.json", {"bos_token_id": 120000, "eos_token_id": 120020, "pad_token_id": 120002})
    dump("preprocessor_config.json", {
        "min_pixels": 262144, "max_pixels": 16777216, "patch_size": 16, "temporal_patch_size": 1, "merge_size": 2,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
        "rescale_factor": 0.00392156862745098, "resample": 1, "image_processor_type": "HunYuanVLImageProcessor",
        "processor_class": "HunYuanVLProcessor"})
    dump("tokenizer_config.json", tokenizer_config(N_BPE, inline_template=False))
    dump("special_tokens_map.json", {"bos_token": NAMED_ADDED[0], "eos_token": NAMED_ADDED[7],
                                     "pad_token": NAMED_ADDED[2]})
    open(os.path.join(args.out, "chat_template.jinja"), "w", encoding="utf-8").write(CHAT_TEMPLATE)
    json.dump(tokenizer_json(args.seed), open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8"),
              ensure_ascii=False)
    shapes = list(tensor_shapes(args.layers_vision, args.layers_text))
    size = write_safetensors(os.path.join(args.out, "model.safetensors"), shapes, args.seed)
    print("wrote %s: %d tensors, %.2f GB BF16" % (args.out, len(shapes), size / 1e9))
    if args.draft:
        d = os.path.join(args.out, "dflash")
        os.makedirs(d, exist_ok=True)
        json.dump(draft_config(args.layers_text), open(os.path.join(d, "config.json"), "w"), indent=1)
        ds = list(draft_shapes())
        size = write_safetensors(os.path.join(d, "model.safetensors"), ds, args.seed + 1, f32=True)
        print("wrote %s: %d tensors, %.2f GB F32" % (d, len(ds), size / 1e9))


if __name__ == "__main__":
    main()
