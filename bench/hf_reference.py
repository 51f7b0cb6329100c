#!/usr/bin/env python3
"""transformers side of the GPU benchmark and the full-size parity check.

    hf_reference.py bench  --model DIR --image IMG [--attn sdpa|eager] [--new-tokens 256] --json OUT
    hf_reference.py parity --model DIR --image IMG --task-text TEXT --out DIR

bench: fp16, batch 1: time to first token (processor excluded, vision + prefill + first token),
       decode tokens/s over the remaining new tokens (EOS suppressed so every run decodes the same
       count), peak GPU memory (torch.cuda.max_memory_allocated).
parity: fp32 (TF32 off) vision-tower output, merger output and first-step logits, as raw float32.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from hy_release import CHAT_TEMPLATE  # noqa: E402


def processor(model_dir):
    from transformers import AutoTokenizer
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil
    from transformers.models.hunyuan_vl.processing_hunyuan_vl import HunYuanVLProcessor
    pc = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))
    ip = HunYuanVLImageProcessorPil(min_pixels=pc["min_pixels"], max_pixels=pc["max_pixels"],
                                    image_mean=pc["image_mean"], image_std=pc["image_std"])
    tk = AutoTokenizer.from_pretrained(model_dir)
    return HunYuanVLProcessor(image_processor=ip, tokenizer=tk, chat_template=CHAT_TEMPLATE)


def inputs_for(proc, image_path, text, device):
    img = Image.open(image_path).convert("RGB")
    messages = [{"role": "system", "content": ""},
                {"role": "user", "content": [{"type": "image", "image": "x"}, {"type": "text", "text": text}]}]
    rendered = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    return proc(text=[rendered], images=[img], return_tensors="pt").to(device)


def load(model_dir, dtype, attn):
    from transformers import HunYuanVLForConditionalGeneration
    return HunYuanVLForConditionalGeneration.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn,
                                                             device_map="cuda").eval()


class NoEos:
    """Logits processor that keeps every run decoding the full count (random weights may hit EOS)."""
    def __init__(self, ids):
        self.ids = ids

    def __call__(self, input_ids, scores):
        scores[:, self.ids] = -float("inf")
        return scores


def bench(a):
    torch.backends.cuda.matmul.allow_tf32 = True
    model = load(a.model, torch.float16, a.attn)
    proc = processor(a.model)
    inp = inputs_for(proc, a.image, "提取图中的文字。", "cuda")
    eos = [120007, 120020]
    from transformers import LogitsProcessorList
    lp = LogitsProcessorList([NoEos(eos)])
    kw = dict(do_sample=False, repetition_penalty=1.08, logits_processor=lp, pad_token_id=120002)
    with torch.no_grad():
        model.generate(**inp, max_new_tokens=2, **kw)  # warm-up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        model.generate(**inp, max_new_tokens=1, **kw)
        torch.cuda.synchronize()
        ttft = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = model.generate(**inp, max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, **kw)
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
    n_new = out.shape[1] - inp["input_ids"].shape[1]
    res = {"impl": "transformers-" + a.attn, "image": os.path.basename(a.image),
           "prompt_tokens": int(inp["input_ids"].shape[1]), "new_tokens": int(n_new),
           "ttft_ms": ttft * 1e3, "decode_tok_s": (n_new - 1) / max(total - ttft, 1e-9),
           "peak_gib": torch.cuda.max_memory_allocated() / 2 ** 30}
    print(json.dumps(res))
    with open(a.json, "w") as f:
        json.dump(res, f)


def parity(a):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = load(a.model, torch.float32, "sdpa")
    proc = processor(a.model)
    inp = inputs_for(proc, a.image, a.task_text, "cuda")
    os.makedirs(a.out, exist_ok=True)
    save = lambda name, t: np.ascontiguousarray(t.detach().float().cpu().numpy()).astype("<f4").tofile(
        os.path.join(a.out, name))
    with torch.no_grad():
        feats = model.model.get_image_features(inp["pixel_values"], inp["image_grid_thw"])
        save("vision_out.f32", feats.last_hidden_state[0])
        save("merger_out.f32", feats.pooler_output.reshape(-1, feats.pooler_output.shape[-1]))
        logits = model(**inp).logits[0, -1]
        save("prefill_logits.f32", logits)
    with open(os.path.join(a.out, "input_ids.txt"), "w") as f:
        f.write(" ".join(str(int(v)) for v in inp["input_ids"][0].tolist()) + "\n")
    print("parity reference written to", a.out, "top-1", int(logits.argmax()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["bench", "parity"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--json")
    ap.add_argument("--task-text", default="提取图中的文字。")
    ap.add_argument("--out")
    a = ap.parse_args()
    bench(a) if a.mode == "bench" else parity(a)


if __name__ == "__main__":
    main()
