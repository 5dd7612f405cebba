"""How far is training from its arithmetic floor? The quick preset's training, table by table: the floating-point operations of its
matrix products counted, the machine's large-fp32-GEMM rate measured in the same run, and the ratio of the training's wall time to
the time those products would take at that rate.

    python benchmarks/bench_flops.py [--preset quick] [--seeds 3] [--only table1,table3] [--gemm 2048]

Counting, not guessing: every `train_batched` call of the run is wrapped. Before it trains, one step of its batch is run under
torch's `FlopCounterMode`, which counts the multiply-adds of every matrix product (2 FLOPs each; elementwise work is not counted),
forward and backward: autograd's step for a model trained by autograd or by a fused step (which does the same products), the loss
function itself for a closed-form one. Divided by the batch size, that is the FLOPs of one model-step. The model-steps the call
then takes are read from its result: with per-model data the engine sheds a model at the check where it stops, so model b takes
`steps[b]` steps; without, every model of the batch runs until the last stops. The run is one process (`--jobs 1`) whose
engine runs on `engine_threads()` cores, and the GEMM rate is measured on as many threads, so the floor is that of the cores
the training used.

Writes benchmarks/flops.json.
"""
import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

import entropic_bound.attention
import entropic_bound.ladder
import entropic_bound.linear
import entropic_bound.train
from entropic_bound.experiment import shelf
from entropic_bound.policy import cpu_threads, engine_threads, tune_allocator
from entropic_bound.reproduce import reproduce

sys.path.insert(0, str(Path(__file__).parent))
from _commit import head_commit  # noqa: E402

STORED = Path(__file__).parent / "flops.json"
TRAINERS = (entropic_bound.attention, entropic_bound.ladder, entropic_bound.linear)   # the modules that call the engine


def step_flops(loss_fn, params: dict, data: dict | None, closed_form: bool) -> int:
    "Matrix-product FLOPs of one step of the whole batch (forward and gradients), counted by FlopCounterMode."
    p = {k: v.detach().clone().requires_grad_(not closed_form) for k, v in params.items()}
    with FlopCounterMode(display=False) as counter:
        out = loss_fn(p) if data is None else loss_fn(p, data)
        if not closed_form: torch.autograd.grad(out.sum(), list(p.values()))
    return counter.get_total_flops()


class Counter:
    "Wraps the engine: per table, the counted FLOPs, model-steps and wall seconds of every training call."
    def __init__(self):
        self.table, self.calls = None, defaultdict(list)

    def __call__(self, loss_fn, params, *args, **kw):
        data, closed_form = kw.get("data"), kw.get("closed_form", False)
        B = next(iter(params.values())).shape[0]
        per_model = step_flops(loss_fn, params, data, closed_form) / B
        t0 = time.perf_counter()
        res = entropic_bound.train.train_batched(loss_fn, params, *args, **kw)
        seconds = time.perf_counter() - t0
        model_steps = int(res.steps.sum()) if data is not None else B * int(res.steps.max())
        self.calls[self.table].append(dict(desc=kw.get("desc", "training"), models=B, fused=kw.get("fused") is not None, closed_form=closed_form,
                                           flops_per_model_step=per_model, model_steps=model_steps, flops=per_model * model_steps, seconds=seconds))
        return res


def gemm_rate(n: int, threads: int, repeats: int = 5) -> float:
    "FLOP/s of an n x n fp32 matrix product on `threads` threads, best of `repeats`."
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    with cpu_threads("cpu", threads):
        a @ b
        for _ in range(repeats):
            t0 = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="quick")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--only", default=None, help="comma-separated tables (default: every table of the paper)")
    p.add_argument("--gemm", type=int, default=2048, help="size of the square GEMM that measures the machine's rate")
    a = p.parse_args()
    tune_allocator()
    names = a.only.split(",") if a.only else list(shelf("paper"))
    threads = engine_threads()
    rate_before = gemm_rate(a.gemm, threads)
    counter = Counter()
    for m in TRAINERS: m.train_batched = counter
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            counter.table = name
            reproduce(Path(tmp), a.preset, range(a.seeds), "cpu", only=[name], force=True, progress=False, jobs=1)
    rate = max(rate_before, gemm_rate(a.gemm, threads))              # the machine at its best in this run, before or after
    tables = {}
    for name in names:
        calls = counter.calls.get(name, [])
        flops, seconds = sum(c["flops"] for c in calls), sum(c["seconds"] for c in calls)
        floor = flops / rate
        tables[name] = dict(training_flops=flops, training_s=round(seconds, 2), floor_s=round(floor, 3),
                            ratio=round(seconds / floor, 2) if flops else None, calls=calls)
    flops, seconds = sum(t["training_flops"] for t in tables.values()), sum(t["training_s"] for t in tables.values())
    result = dict(script="bench_flops.py", date=datetime.date.today().isoformat(), commit=head_commit(), preset=a.preset, seeds=a.seeds,
                  machine=f"{platform.machine()}, {threads} engine threads, torch {torch.__version__}",
                  gemm=dict(n=a.gemm, threads=threads, gflops=round(rate / 1e9, 1)),
                  training=dict(flops=flops, seconds=round(seconds, 2), floor_s=round(flops / rate, 3), ratio=round(seconds / (flops / rate), 2) if flops else None),
                  tables=tables)
    STORED.write_text(json.dumps(result, indent=1) + "\n")
    print(f"fp32 GEMM {a.gemm}x{a.gemm} on {threads} threads: {rate / 1e9:.1f} GFLOP/s")
    print(f"{'table':8s} {'GFLOP':>9s} {'train s':>8s} {'floor s':>8s} {'ratio':>6s}")
    for name, t in tables.items():
        print(f"{name:8s} {t['training_flops'] / 1e9:9.1f} {t['training_s']:8.2f} {t['floor_s']:8.3f} {t['ratio'] if t['ratio'] else '-':>6}")
    tr = result["training"]
    print(f"{'all':8s} {tr['flops'] / 1e9:9.1f} {tr['seconds']:8.2f} {tr['floor_s']:8.3f} {tr['ratio']:>6}")
    print(f"written to {STORED}")


if __name__ == "__main__":
    main()
