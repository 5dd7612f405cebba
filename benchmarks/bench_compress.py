"""Benchmark of `entropic-bound compress`: Table 6 with every allocation x budgets 25/50/75 % x N splits of the shipped text, on
the shipped MiniLM (both direction orders; target <= 120 s on the project's 2-core CPU machine) or on the shipped SmolLM2-135M
(`--model smollm2`: pre-rotary cuts with one key basis per key-value group, next-token fidelity; no target, a measured time and
a cost model), with the time per split divided into calibration and fold-and-measure.

    python benchmarks/bench_compress.py [--model minilm|smollm2] [--device cpu|cuda] [--splits N]

Reports wall time and the table's whitened rows; nothing here is a test.
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from entropic_bound import checkpoints, compress, text
from entropic_bound.table6 import TABLE6


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm", choices=["minilm", "smollm2"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--splits", type=int, default=3)
    a = ap.parse_args()
    s = TABLE6.settings("quick", model=None if a.model == "minilm" else a.model)
    t0 = time.perf_counter()
    units = TABLE6.measure(s, "main", tuple(range(a.splits)), a.device, False)
    result = TABLE6.summarise(s, {"main": units})
    total = time.perf_counter() - t0
    ad = checkpoints.load_adapter(s.model, a.device, causal_lm=True)
    fit, _ = text.split_lines(text.read_text(text.default_text_path()), 0)
    t1 = time.perf_counter(); compress.calibrate(ad, text.encode_text(ad, fit)); t_cal = time.perf_counter() - t1
    n_fold = len(next(iter(units.values())).fidelity)
    per_fold = (total / a.splits - t_cal) / n_fold
    target = "" if a.model != "minilm" else f"; target <= 120 s: {'met' if total <= 120 else 'NOT met'}"
    print(f"Table 6 on {a.model}: {len(result.rows)} rows ({n_fold} compressed models per split) x {a.splits} splits in {total:.1f} s "
          f"(device {a.device}, loading included); one calibration {t_cal:.1f} s, about {per_fold:.2f} s per fold-and-measure{target}")
    print(f"  cost model: time = splits x (calibration + models x fold-and-measure) = {a.splits} x ({t_cal:.1f} + {n_fold} x {per_fold:.2f}) s")
    metrics = [m for m in result.rows[0] if m not in ("budget", "allocation", "order") and not m.endswith(("_min", "_max"))]
    for r in result.rows:
        if r["order"] == "whitened": print("  " + ", ".join(f"{k} {r[k]:.4g}" if isinstance(r[k], float) else f"{k} {r[k]}" for k in ("budget", "allocation", *metrics)))
    for c in result.claims: print(f"  {c.id}: {c.verdict}, {c.measured:.4g} [{c.spread[0]:.4g}, {c.spread[1]:.4g}], margin {c.margin:+.2f}, control {c.control.measured:.4g} (margin {c.control.margin:+.2f})")
