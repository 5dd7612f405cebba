"""Benchmark: wall time of `entropic-bound reproduce` (default: the paper preset, 5 seeds), per experiment and in
total, on this machine — plus, measured side by side in the same run, the speed-up of the batched engine over the
per-model Python loop it replaced (the §4 rank-sweep models, via bench_engine.py).

    python benchmarks/bench_reproduce.py [--preset paper] [--seeds 5] [--device cpu|cuda] [--out DIR]

Targets (issue): paper preset in <= 10 minutes on the 2-core CPU machine, <= 60 s on one GPU.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from entropic_bound.reproduce import EXPERIMENTS, reproduce
from entropic_bound.train import cpu_threads

sys.path.insert(0, str(Path(__file__).parent))
from bench_engine import bench  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="paper", choices=("quick", "paper"))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--out", default=None, help="keep the outputs here (default: a temporary directory)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.out or tmp)
        t0 = time.perf_counter()
        claims = reproduce(out, a.preset, range(a.seeds), a.device, force=True, progress=False)
        total = time.perf_counter() - t0
        print(f"reproduce --preset {a.preset} --seeds {a.seeds} --device {a.device}  (torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads)")
        for name in EXPERIMENTS:
            rec = json.loads((out / ".records" / f"{name}.json").read_text())
            print(f"  {name:7s} {rec['seconds']:8.1f} s")
        target = 60 if a.device == "cuda" else 600
        print(f"  total   {total:8.1f} s   (target <= {target} s: {'met' if total <= target else 'NOT met'}); "
              f"{sum(c['holds'] for c in claims)}/{len(claims)} claims hold")
    with cpu_threads("cpu"): b = bench(40, "fixed")
    print(f"engine, side by side: 40 §4 models, fixed 500 steps, one thread: loop {b['loop_s']:.2f} s, "
          f"batched {b['batched_s']:.2f} s, ratio {b['ratio']:.1f}x")


if __name__ == "__main__":
    main()
