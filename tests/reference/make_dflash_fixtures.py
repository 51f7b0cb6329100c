#!/usr/bin/env python3
"""Writes the DFlash speculative-decoding fixtures (issue 20; FIXTURES.md says what each file is).

Runs on the GPU machine (torch, transformers >= 5.17, tokenizers, Pillow, safetensors), like
make_fixtures.py, whose checkpoint code it reuses. The draft's reference is the authors' own
model code (github z-lab/dflash, dflash/model.py: DFlashDraftModel, dflash_generate), which is
never part of this tree: pass the path of a copy on the command line.

    python3 tests/reference/make_dflash_fixtures.py --reference /path/to/dflash/model.py [--out tests/data]

Writes, under --out:
  ckpt-dflash/           a tiny target like ckpt-flat but with 8 layers, so that the draft has four
                         distinct target layers to read (the release reads 4 of 24)
  ckpt-dflash/dflash/    a tiny random draft in the release's format (config.json + model.safetensors)
  dflash/block/          the reference draft's block logits for random context states, two rounds
  dflash/e2e/<case>/     dflash_generate with the tiny target against plain greedy decoding
  dflash/manifest.json   versions and what was checked
Deterministic (fixed seeds). Each part is tried on its own: a failure is reported and the
script exits non-zero, but what the other parts wrote stays.
"""
import argparse
import importlib.util
import json
import math
import os
import shutil
import sys
import traceback
from types import SimpleNamespace

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# The tiny target: ckpt-flat's layout and tokenizer with more layers. The release's draft reads
# layers 1, 8, 15, 22 of 24 (neither the first nor the last); here 1, 3, 5, 6 of 8 keeps both
# properties and uneven gaps, so a tap taken from the wrong layer or in the wrong order shows.
TARGET_LAYERS = 8
TARGET_LAYER_IDS = [1, 3, 5, 6]
BLOCK_SIZE = 16
DRAFT_LAYERS = 5
# Release: hidden 1024, 16 heads / 8 KV heads of 128 (q width 2048 != hidden), MLP 3584 (3.5x).
DRAFT_HEADS, DRAFT_KV_HEADS, DRAFT_HEAD_DIM, DRAFT_INTERMEDIATE = 4, 2, 32, 224
SEED_TARGET, SEED_DRAFT, SEED_BLOCK = 33, 44, 55
E2E_CASES = [("odd_137x91.png", "recognize"), ("tiny_40x30.png", "extract_fields")]
E2E_NEW_TOKENS = 64


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def write_ints(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(" ".join(str(int(v)) for v in r) + "\n")


def f32(path, t):
    np.ascontiguousarray(t.detach().float().cpu().numpy().astype("<f4")).tofile(path)


def load_reference(path):
    spec = importlib.util.spec_from_file_location("dflash_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- the draft

def draft_config(n_bpe, vocab):
    """The release's dflash/config.json (dflash-notes §3) field for field, tiny sizes. The release's
    mask token 120817 is the last id (vocab 120818 = 120000 BPE + 818 added), eos 120020 is
    hy_place_holder_no_2 (BPE + 20): the same ids relative to this tokenizer."""
    return {
        "architectures": ["DFlashDraftModel"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
        "block_size": BLOCK_SIZE,
        "dflash_config": {"mask_token_id": vocab - 1, "target_layer_ids": TARGET_LAYER_IDS},
        "dtype": "bfloat16",
        "eos_token_id": n_bpe + 20,
        "head_dim": DRAFT_HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": DRAFT_INTERMEDIATE,
        "layer_types": ["full_attention"] * DRAFT_LAYERS,
        "max_position_embeddings": 32768,
        "max_window_layers": DRAFT_LAYERS,
        "model_type": "qwen3",
        "num_attention_heads": DRAFT_HEADS,
        "num_hidden_layers": DRAFT_LAYERS,
        "num_key_value_heads": DRAFT_KV_HEADS,
        "num_target_layers": TARGET_LAYERS,
        "pad_token_id": -1,
        "rms_norm_eps": 1e-5,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "transformers_version": "4.57.1",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": vocab,
    }


def qwen3_config(raw, notes):
    """Qwen3Config for the reference model from the release-format dict (dflash-notes §2 recipe).
    transformers 5 renamed rope_theta into rope_parameters and made the config a strict
    dataclass; whatever it drops or misreads is put back here and said in the notes, so the
    reference runs the release's numbers (theta 10000, not a default)."""
    from transformers import Qwen3Config
    # layer_types left to the config: some 5.x versions skip the base class's post-init (which
    # turns rope_theta into rope_parameters and keeps the extra keys) when it is given.
    skip = {"architectures", "auto_map", "model_type", "transformers_version", "dtype", "layer_types"}
    cfg = Qwen3Config(**{k: v for k, v in raw.items() if k not in skip})

    def put(key, value):
        try:
            setattr(cfg, key, value)
        except Exception:  # a strict dataclass may refuse: the model only reads the attribute
            object.__setattr__(cfg, key, value)
    for key in ("block_size", "dflash_config", "num_target_layers"):
        if getattr(cfg, key, None) != raw[key]:
            put(key, raw[key])
            notes.append("Qwen3Config dropped %s; set by hand" % key)
    rp = getattr(cfg, "rope_parameters", None) or {}
    notes.append("Qwen3Config rope_parameters from the release's rope_theta/rope_scaling: %r" % (rp,))
    if rp.get("rope_theta") != raw["rope_theta"] or rp.get("rope_type", "default") != "default":
        notes.append("  not theta %g with default RoPE: set by hand" % raw["rope_theta"])
        put("rope_parameters", {"rope_type": "default", "rope_theta": raw["rope_theta"]})
    if list(cfg.layer_types) != raw["layer_types"]:
        raise SystemExit("Qwen3Config layer_types %r != %r" % (cfg.layer_types, raw["layer_types"]))
    cfg._attn_implementation = "eager"
    return cfg


def randomize_draft(model, seed):
    """Like make_fixtures.randomize: norms spread around 1 so that every weight matters, linears
    at 1/sqrt(fan_in); then rounded to bf16 so the F32 file and a BF16 copy hold the same values."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p[0].numel()))
            p.copy_(p.to(torch.bfloat16).float())


def make_draft(ref, d, n_bpe, vocab, notes):
    """Writes ckpt-dflash/dflash and returns the reference draft model (fp32, eval)."""
    from safetensors.torch import load_file, save_file
    os.makedirs(d, exist_ok=True)
    raw = draft_config(n_bpe, vocab)
    write_json(os.path.join(d, "config.json"), raw)
    torch.manual_seed(SEED_DRAFT)
    model = ref.DFlashDraftModel(qwen3_config(raw, notes)).float().eval()
    randomize_draft(model, SEED_DRAFT)
    if list(model.target_layer_ids) != TARGET_LAYER_IDS or model.mask_token_id != vocab - 1 \
            or model.block_size != BLOCK_SIZE:
        raise SystemExit("the reference draft did not take the config's target layers / mask / block size")
    # The HF release stores the draft in float32 (its README), named as DFlashDraftModel's
    # state dict (fc, hidden_norm, norm, layers.N.*): no rotary buffers, no embedding or head.
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    back = load_file(os.path.join(d, "model.safetensors"))
    if sorted(back) != sorted(sd) or any(not torch.equal(back[k], sd[k]) for k in sd):
        raise SystemExit("the draft's safetensors did not read back as written")
    notes.append("draft tensors: %d, %d parameters" % (len(sd), sum(v.numel() for v in sd.values())))
    return model


# ----------------------------------------------------------------------------- block logits

def draft_block(draft, embed, lm_head, ctx, bonus, cache, start):
    """One proposal as dflash_generate makes it: context rows ctx (positions cache_len..start-1),
    block [bonus, MASK x 15] at start..start+15; the cache keeps the context only afterwards."""
    ids = torch.full((1, BLOCK_SIZE), draft.mask_token_id, dtype=torch.long)
    ids[0, 0] = bonus
    pos = torch.arange(cache.get_seq_length(), start + BLOCK_SIZE).unsqueeze(0)
    hidden = draft(target_hidden=ctx.unsqueeze(0), noise_embedding=embed(ids), position_ids=pos,
                   past_key_values=cache, use_cache=True, is_causal=False)
    cache.crop(start)
    return hidden[0], lm_head(hidden[:, 1 - BLOCK_SIZE:, :])[0]


def make_block(draft, embed, lm_head, out, vocab, notes):
    """Two rounds on random context states: 37 prompt rows, then 5 accepted rows. The states are
    the four target layers' outputs concatenated; random values of the target's scale."""
    from transformers import DynamicCache
    d = os.path.join(out, "dflash", "block")
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(SEED_BLOCK)
    width = len(TARGET_LAYER_IDS) * draft.config.hidden_size
    t0, a = 37, 5
    ctx1 = torch.randn(t0, width, generator=g) * 2.0
    ctx2 = torch.randn(a, width, generator=g) * 2.0
    bonus = torch.randint(0, vocab - 1, (2,), generator=g).tolist()
    cache = DynamicCache()
    h1, l1 = draft_block(draft, embed, lm_head, ctx1, bonus[0], cache, t0)
    if cache.get_seq_length() != t0:
        raise SystemExit("draft cache holds %d rows after round 1, want %d" % (cache.get_seq_length(), t0))
    h2, l2 = draft_block(draft, embed, lm_head, ctx2, bonus[1], cache, t0 + a)
    write_ints(os.path.join(d, "ids.txt"), [[t0, bonus[0]], [a, bonus[1]]])
    for name, t in (("ctx1", ctx1), ("ctx2", ctx2), ("hidden1", h1), ("hidden2", h2), ("logits1", l1),
                    ("logits2", l2)):
        f32(os.path.join(d, name + ".f32"), t)
    for r, l in ((1, l1), (2, l2)):
        top = torch.topk(l, 2, dim=-1).values
        notes.append("block round %d: argmax %s, smallest top-2 margin %.4g" % (
            r, l.argmax(-1).tolist(), float((top[:, 0] - top[:, 1]).min())))


# ----------------------------------------------------------------------------- the target

class TokenizerFile:
    """make_checkpoint saves a tokenizers.Tokenizer; the target reuses ckpt-flat's file instead."""

    def __init__(self, path):
        self.path = path

    def save(self, dest):
        shutil.copyfile(self.path, dest)


def make_target(mf, data, out, n_bpe):
    """ckpt-flat's recipe (make_fixtures.make_checkpoint, which also checks that transformers
    reads the files back unchanged) with TARGET_LAYERS layers and its own seed."""
    flat = mf.flat_config
    mf.flat_config = lambda n: dict(flat(n), num_hidden_layers=TARGET_LAYERS)
    try:
        d = os.path.join(out, "ckpt-dflash")
        shutil.rmtree(d, ignore_errors=True)
        tok = TokenizerFile(os.path.join(data, "ckpt-flat", "tokenizer.json"))
        return mf.make_checkpoint("flat", d, tok, n_bpe, SEED_TARGET), d
    finally:
        mf.flat_config = flat


class TargetAdapter:
    """What dflash_generate expects of a target (a Qwen3-like causal LM: .model.embed_tokens,
    .lm_head, called with 1-D positions) over HunYuanVLForConditionalGeneration. The prefill
    brings the image and lets the model make its XD-RoPE positions (spec §5.4.3); every later
    call passes the 1-D positions, which the model spreads over the four axes (§5.4.4). It
    records each verify block (bonus + 15 drafts) and the prefill's taps."""

    def __init__(self, hf, inputs):
        self.hf = hf
        self.inputs = inputs
        self.device = hf.device
        self.model = SimpleNamespace(embed_tokens=hf.model.language_model.embed_tokens)
        self.lm_head = hf.lm_head
        self.blocks = []
        self.prefill_hidden = None

    def __call__(self, input_ids, position_ids, past_key_values, **kw):
        if past_key_values.get_seq_length() == 0:
            out = self.hf(input_ids=input_ids, pixel_values=self.inputs["pixel_values"],
                          image_grid_thw=self.inputs["image_grid_thw"],
                          mm_token_type_ids=self.inputs["mm_token_type_ids"],
                          past_key_values=past_key_values, **kw)
            self.prefill_hidden = out.hidden_states
            return out
        self.blocks.append(input_ids[0].tolist())
        return self.hf(input_ids=input_ids, position_ids=position_ids, past_key_values=past_key_values, **kw)


def make_e2e(mf, ref, draft, hf, ck, data, out, n_bpe, notes):
    d0 = os.path.join(out, "dflash", "e2e")
    proc, _ = mf.make_processor(ck)
    gen = json.load(open(os.path.join(ck, "generation_config.json")))
    eos = gen["eos_token_id"] if isinstance(gen["eos_token_id"], list) else [gen["eos_token_id"]]
    eos = sorted(set(eos + [mf.ids_for(n_bpe)["eos"]]))
    pad = mf.ids_for(n_bpe)["pad"]
    n_layers = hf.config.text_config.num_hidden_layers
    all_equal = True
    for name, task in E2E_CASES:
        img = mf.load_rgb(os.path.join(data, "images", name))
        _, inputs = mf.render(proc, img, mf.TASKS_10[task])
        d = os.path.join(d0, name + "__" + task)
        os.makedirs(d, exist_ok=True)
        n_in = inputs["input_ids"].shape[1]
        plain = hf.generate(**inputs, max_new_tokens=E2E_NEW_TOKENS, do_sample=False, repetition_penalty=1.0,
                            eos_token_id=eos, pad_token_id=pad)[0, n_in:].tolist()
        adapter = TargetAdapter(hf, inputs)
        spec = ref.dflash_generate(draft, adapter, inputs["input_ids"], max_new_tokens=E2E_NEW_TOKENS,
                                   stop_token_ids=eos, temperature=0.0)[0, n_in:].tolist()
        hs = adapter.prefill_hidden
        if hs is None or len(hs) != n_layers + 1:
            raise SystemExit("prefill hidden states: %s entries, want %d" % (None if hs is None else len(hs),
                                                                              n_layers + 1))
        taps = torch.cat([hs[i + 1][0] for i in TARGET_LAYER_IDS], dim=-1)
        f32(os.path.join(d, "taps.f32"), taps)
        write_ints(os.path.join(d, "input_ids.txt"), [inputs["input_ids"][0].tolist()])
        write_ints(os.path.join(d, "greedy.txt"), [plain])
        write_ints(os.path.join(d, "dflash.txt"), [spec])
        write_ints(os.path.join(d, "blocks.txt"), adapter.blocks)
        equal = spec == plain
        all_equal &= equal
        notes.append("e2e %s/%s: %d prompt tokens, %d new, %d verify rounds, dflash == greedy: %s" % (
            name, task, n_in, len(spec), len(adapter.blocks), equal))
        if not equal:
            notes.append("  greedy %s" % plain)
            notes.append("  dflash %s" % spec)
    return all_equal


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True, help="z-lab/dflash's dflash/model.py")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data"),
                    help="the fixtures of make_fixtures.py (ckpt-flat's tokenizer, images, manifest)")
    ap.add_argument("--out", default=None, help="where to write (default: --data)")
    args = ap.parse_args()
    data = os.path.abspath(args.data)
    out = os.path.abspath(args.out or args.data)
    torch.set_grad_enabled(False)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    import transformers
    import make_fixtures as mf
    from hy_release import N_ADDED

    ref = load_reference(args.reference)
    n_bpe = json.load(open(os.path.join(data, "manifest.json")))["bpe_vocab"]
    vocab = n_bpe + N_ADDED
    shutil.rmtree(os.path.join(out, "dflash"), ignore_errors=True)
    os.makedirs(os.path.join(out, "dflash"), exist_ok=True)
    manifest = {"transformers": transformers.__version__, "torch": torch.__version__,
                "reference": "z-lab/dflash dflash/model.py", "target_layer_ids": TARGET_LAYER_IDS, "notes": []}
    notes = manifest["notes"]
    failed = []

    def part(label, fn, *a):
        try:
            r = fn(*a)
            print("done:", label, flush=True)
            return r
        except BaseException as e:  # noqa: B036 — SystemExit too: report, go on with the other parts
            traceback.print_exc()
            failed.append("%s: %s" % (label, e))
            return None

    made = part("target", make_target, mf, data, out, n_bpe)
    hf, ck = made if made else (None, None)
    draft = None
    if ck:
        draft = part("draft", make_draft, ref, os.path.join(ck, "dflash"), n_bpe, vocab, notes)
    if draft is not None:
        part("block", make_block, draft, hf.model.language_model.embed_tokens, hf.lm_head, out, vocab, notes)
        eq = part("e2e", make_e2e, mf, ref, draft, hf, ck, data, out, n_bpe, notes)
        manifest["dflash_equals_greedy"] = eq
    manifest["failed"] = failed
    write_json(os.path.join(out, "dflash", "manifest.json"), manifest)
    for n in notes:
        print("note:", n)
    for f in failed:
        print("FAILED:", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
