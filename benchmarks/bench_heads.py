"""Benchmark of the real-heads audit: the shipped MiniLM on the shipped text (target <= 30 s on 2 CPU cores) and a
randomly initialised BERT-base-sized model (12 layers, width 768, 12 heads; target <= 120 s) on the same text.

    python benchmarks/bench_heads.py [--device cpu|cuda] [--skip-base]

Reports wall time per stage; nothing here is a test.
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch

from entropic_bound import heads


def run(name, make_adapter, device):
    t0 = time.perf_counter()
    adapter = make_adapter()
    t_load = time.perf_counter() - t0
    batch = heads.encode_text(adapter, heads.read_text(heads.default_text_path()))
    t1 = time.perf_counter()
    report = heads.audit_heads(adapter, batch, tol=0.05, progress=False)
    t_audit = time.perf_counter() - t1
    f = heads.findings(report)
    print(f"{name}: load {t_load:.1f} s, audit {t_audit:.1f} s, total {t_load + t_audit:.1f} s "
          f"({report.meta['n_layers']}x{report.meta['n_heads']} heads, {report.meta['tokens']} tokens, device {device}); "
          f"median ranks: static energy {f['static_energy_median']:.1f}, native TV {f['native_tv_median']:g}, "
          f"native output {f['native_out_median']:g} of d_head {f['d_head']}")
    return t_load + t_audit


def bert_base(device):
    transformers = heads.require("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=30522)
    tok = heads.load_adapter(device="cpu").tokenizer                     # BERT-base and MiniLM share the 30522-token vocabulary
    return heads.adapter_from_model(transformers.BertModel(cfg).to(device), tok)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--skip-base", action="store_true", help="only the MiniLM run")
    a = ap.parse_args()
    t_mini = run("MiniLM (shipped), shipped text", lambda: heads.load_adapter(device=a.device), a.device)
    print(f"  target <= 30 s: {'met' if t_mini <= 30 else 'NOT met'}")
    if not a.skip_base:
        t_base = run("random BERT-base (12 x 768), shipped text", lambda: bert_base(a.device), a.device)
        print(f"  target <= 120 s: {'met' if t_base <= 120 else 'NOT met'}")
