"""Keys in bits at run time (nbs/11e_key_bits.ipynb), side by side on SmolLM2-135M in 16-bit numbers (bfloat16): the model's own
DynamicCache, KIVI-style 2-bit keys and native coding at the bytes of 2-bit keys (both `BitsKeyCache`). Each cache runs in a fresh
process, the three alternating over --rounds: a 2,048-token prefill of the other-source text, then --decode greedy tokens.
Reported per cache: the bytes its key and value tensors hold after the prefill, decode tokens per second (median over rounds), the
process's peak resident memory (the codecs are calibrated once, in a process of their own, so no measured process pays for it).
Writes benchmarks/key_bits.json.

    python benchmarks/bench_key_bits.py [--rounds 2] [--decode 32]
"""
import argparse, json, platform, resource, statistics, subprocess, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHES = ("original", "kivi", "native")

def prepare(path: str) -> None:
    "Calibrate the two codecs at the bytes of 2-bit keys on the fit half of the shipped text and save them to `path`."
    import torch
    from entropic_bound.checkpoints import load_adapter
    from entropic_bound.text import read_text, default_text_path, encode_text, split_lines
    from entropic_bound.key_bits import key_statistics, codecs_at, SEQ_LEN
    torch.set_num_threads(2)
    smol = load_adapter("smollm2", causal_lm=True)
    fit = encode_text(smol, split_lines(read_text(default_text_path()), 0)[0], SEQ_LEN)
    rows = codecs_at(*key_statistics(smol, fit, pre=(True, False)), 2)
    torch.save({k: rows[k] for k in ("kivi", "native")}, path)

def one(cache: str, decode: int, specs: str) -> dict:
    "Run one cache in this process: prefill, decode, bytes, time, peak memory."
    import torch
    from entropic_bound.checkpoints import load_adapter
    from entropic_bound.text import encode_text, python_docs_text
    from entropic_bound.key_bits import cache_bytes_after, SEQ_LEN, CONTEXT
    from entropic_bound.modeling_lowrank_keys import BitsKeyCache
    from transformers import DynamicCache
    torch.set_num_threads(2)
    smol = load_adapter("smollm2", causal_lm=True)
    long = torch.cat(list(encode_text(smol, python_docs_text(max_lines=400), SEQ_LEN).ids))[None, :CONTEXT]
    spec = None if cache == "original" else torch.load(specs, weights_only=False)[cache]
    model = smol.model.to(torch.bfloat16).eval()
    new = (lambda: DynamicCache(config=model.config)) if spec is None else (lambda: BitsKeyCache(model, spec))
    sizes = cache_bytes_after(model, long, None if spec is None else new)
    c = new()
    with torch.no_grad():
        o = model(input_ids=long, past_key_values=c, use_cache=True)
        nxt = o.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(decode):
            o = model(input_ids=nxt, past_key_values=c, use_cache=True); nxt = o.logits[:, -1:].argmax(-1)
        dt = time.perf_counter() - t0
    return dict(cache=cache, key_bytes=sizes["keys"], value_bytes=sizes["values"], tokens=int(long.shape[1]),
                decode_tokens_per_s=decode / dt, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2); ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--one", choices=CACHES, help=argparse.SUPPRESS); ap.add_argument("--specs", help=argparse.SUPPRESS)
    ap.add_argument("--prepare", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.prepare: prepare(a.prepare); return
    if a.one: print(json.dumps(one(a.one, a.decode, a.specs))); return
    import tempfile
    specs = str(Path(tempfile.mkdtemp()) / "specs.pt")
    done = subprocess.run([sys.executable, __file__, "--prepare", specs], capture_output=True, text=True)
    if done.returncode: sys.exit(done.stderr[-3000:])
    runs = {c: [] for c in CACHES}
    for r in range(a.rounds):
        for c in CACHES:
            out = subprocess.run([sys.executable, __file__, "--one", c, "--decode", str(a.decode), "--specs", specs], capture_output=True, text=True)
            if out.returncode: sys.exit(out.stderr[-3000:])
            runs[c].append(json.loads(out.stdout.strip().splitlines()[-1])); print(f"round {r + 1}: {runs[c][-1]}", flush=True)
    rows = [dict(runs[c][0], decode_tokens_per_s=statistics.median(x["decode_tokens_per_s"] for x in runs[c]),
                 peak_rss_mb=statistics.median(x["peak_rss_mb"] for x in runs[c])) for c in CACHES]
    from _commit import head_commit
    record = dict(date=time.strftime("%Y-%m-%d"), machine=f"{platform.machine()}, {__import__('os').cpu_count()} cores", rounds=a.rounds,
                  decode=a.decode, rows=rows, commit=head_commit())
    (HERE / "key_bits.json").write_text(json.dumps(record, indent=1) + "\n")
    for r in rows: print(f"{r['cache']:>9}: keys {r['key_bytes'] / r['tokens']:8.1f} B/token, values {r['value_bytes'] / r['tokens']:8.1f} B/token, "
                         f"decode {r['decode_tokens_per_s']:.2f} tokens/s, peak RSS {r['peak_rss_mb']:.0f} MB")

if __name__ == "__main__":
    main()
