"""What compression by native rank delivers, original and compressed side by side in one run: the shipped MiniLM sliced
(`--route slice`) and the shipped SmolLM2-135M with a low-rank key cache (`--route latent`, Palu's pre-rotary latent, and
`--route cache`, the post-rotary basis), at 25 / 50 / 75 % of the query-key directions, native allocation.

    python benchmarks/bench_payoff.py [--budgets 0.25,0.5,0.75] [--contexts 2048,8192] [--decode 32] [--speed-budget 0.5]

Per budget: parameters, attention-score multiply-adds, key-cache and whole-cache bytes per token, and the fidelity of each
(MiniLM: cosine, Spearman, top-10 neighbours; SmolLM2: next-token KL, perplexity ratio, top-1 agreement) on the held-out
half of the shipped text. At `--speed-budget`: MiniLM sentences per second; SmolLM2 prefill and decode tokens per second and
peak memory at each context, every model in a fresh process loading its exported folder (prefill in chunks of 512 tokens,
so the cache, not the score matrix, is what grows with the context). The theory speaks of the query-key kernel only: keys are
half of the key-value cache and values are untouched, so both the key-cache and the whole-cache figures are reported.
Writes benchmarks/payoff.json; nothing here is a test.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _commit import head_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")
WORKER = "--worker"


def _peak_mb() -> float:
    "This process's peak resident memory (VmHWM: its own since exec, unlike getrusage, which a fork inherits), in MiB."
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _worker(folder: str, context: int, decode: int) -> dict:
    "In a fresh process: load the exported folder, prefill `context` tokens in chunks of 512 through the cache, decode `decode` tokens greedily; times, cache bytes and peak memory."
    import torch
    import transformers
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    rss_loaded = _peak_mb()
    ids = torch.randint(100, 40000, (1, context), generator=torch.Generator().manual_seed(0))
    cache = model.new_key_cache() if hasattr(model, "new_key_cache") else transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        t0 = time.perf_counter()
        for i in range(0, context, 512):
            out = model(input_ids=ids[:, i:i + 512], past_key_values=cache, use_cache=True)
        t_prefill = time.perf_counter() - t0
        nxt, t0 = out.logits[:, -1:].argmax(-1), time.perf_counter()
        for _ in range(decode):
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            nxt = out.logits[:, -1:].argmax(-1)
        t_decode = time.perf_counter() - t0
    cache_bytes = sum(l.keys.numel() * l.keys.element_size() + l.values.numel() * l.values.element_size() for l in cache.layers)
    key_bytes = sum(l.keys.numel() * l.keys.element_size() for l in cache.layers)
    return dict(context=context, prefill_tok_s=context / t_prefill, decode_tok_s=decode / t_decode, cache_mb=cache_bytes / 2**20,
                key_cache_mb=key_bytes / 2**20, peak_rss_mb=_peak_mb(), loaded_rss_mb=rss_loaded)


def _run_worker(folder, context, decode) -> dict:
    r = subprocess.run([sys.executable, __file__, WORKER, str(folder), str(context), str(decode)], capture_output=True, text=True)
    if r.returncode: raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def minilm(budgets, speed_budget) -> dict:
    import torch
    from entropic_bound import checkpoints, compress, text
    from entropic_bound.modeling_sliced_bert import SlicedBertModel, slice_savings
    ad = checkpoints.load_adapter()
    fit, held = text.split_lines(text.read_text(text.default_text_path()), 0)
    cal = compress.calibrate(ad, text.encode_text(ad, fit))
    E0 = compress.sentence_embeddings(ad.model, ad.tokenizer, held)
    n0 = sum(p.numel() for p in ad.model.parameters())
    rows = []
    for b in budgets:
        ranks = compress.allocate(cal, b, "native")
        net = compress.fold(ad, cal, ranks)
        sliced = SlicedBertModel.from_folded(net, ranks)
        E1 = compress.sentence_embeddings(sliced, ad.tokenizer, held)
        row = dict(budget=b, params=n0, params_sliced=sum(p.numel() for p in sliced.parameters()), **slice_savings(net.config, ranks),
                   **compress.fidelity(E0, E1))
        if b == speed_budget:                                   # sentences per second, interleaved repeats, the median of each
            times = {"original": [], "sliced": []}
            for _ in range(3):
                for name, m in (("original", ad.model), ("sliced", sliced)):
                    t0 = time.perf_counter(); compress.sentence_embeddings(m, ad.tokenizer, held); times[name].append(time.perf_counter() - t0)
            med = {k: sorted(v)[1] for k, v in times.items()}
            row.update(sentences_per_s_original=len(held) / med["original"], sentences_per_s_sliced=len(held) / med["sliced"])
        rows.append(row); print("MiniLM", {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return dict(rows=rows, held_out_lines=len(held))


def smollm2(budgets, speed_budget, contexts, decode) -> dict:
    from entropic_bound import checkpoints, compress, text
    from entropic_bound.key_cache import key_cache_model, latent_maps, post_rotary_maps
    ad = checkpoints.load_adapter("smollm2", causal_lm=True)
    fit_lines, held_lines = text.split_lines(text.read_text(text.default_text_path()), 0)
    fit, held = text.encode_text(ad, fit_lines), text.encode_text(ad, held_lines)
    t0 = time.perf_counter(); cal = compress.calibrate(ad, fit); t_cal = time.perf_counter() - t0
    P0 = compress.next_token_logprobs(ad.model, held)
    rows, speed = [], {}
    with tempfile.TemporaryDirectory() as d:
        for b in budgets:
            ranks = compress.allocate(cal, b, "native")
            folded = compress.fold(ad, cal, ranks)
            models = {"latent": key_cache_model(folded, latent_maps(cal, ranks)), "cache": key_cache_model(ad.model, post_rotary_maps(ad, fit, ranks))}
            row = dict(budget=b, directions=int(ranks.sum()), **{f"bytes_{k}": v for k, v in models["cache"].key_maps().key_bytes_per_token(2).items()})
            for name, m in models.items():
                row.update({f"{name}_{k}": v for k, v in compress.next_token_fidelity(P0, compress.next_token_logprobs(m, held), held).items()})
            rows.append(row); print("SmolLM2", {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
            if b == speed_budget:
                folders = {"original (sdpa)": Path(d) / "sdpa", "original (eager)": Path(d) / "eager", "latent": Path(d) / "latent", "cache": Path(d) / "cache"}
                plain = copy.deepcopy(ad.model); plain.hf_quantizer = None
                if hasattr(plain.config, "quantization_config"): del plain.config.quantization_config
                plain.config._attn_implementation = "sdpa"; plain.save_pretrained(folders["original (sdpa)"])
                plain.config._attn_implementation = "eager"; plain.save_pretrained(folders["original (eager)"])
                for name in ("latent", "cache"): models[name].save_pretrained(folders[name])
                for c in contexts:
                    for name, f in folders.items():
                        speed.setdefault(name, []).append(_run_worker(f, c, decode)); print(f"  {name} at {c} tokens: {speed[name][-1]}", flush=True)
    return dict(rows=rows, speed=speed, calibration_s=t_cal, held_out_tokens=int(held.mask.sum()), speed_budget=speed_budget)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER:
        print(json.dumps(_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))); sys.exit(0)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="0.25,0.5,0.75")
    ap.add_argument("--contexts", default="2048,8192")
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--speed-budget", type=float, default=0.5)
    a = ap.parse_args()
    budgets, contexts = [float(b) for b in a.budgets.split(",")], [int(c) for c in a.contexts.split(",")]
    t0 = time.perf_counter()
    result = dict(minilm=minilm(budgets, a.speed_budget), smollm2=smollm2(budgets, a.speed_budget, contexts, a.decode))
    result.update(seconds=time.perf_counter() - t0, date=time.strftime("%Y-%m-%d"),
                  commit=head_commit())
    Path(__file__).with_name("payoff.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote benchmarks/payoff.json in {result['seconds']:.0f} s")
