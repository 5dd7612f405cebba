"""Fused step benchmark: one training step of a batch of attention students, the compiled fused step against the
batched autograd step (the engine's reference path), side by side in one run on one CPU thread.

    python benchmarks/bench_fused.py [--steps 60] [--rounds 3]

For each batch size B (Table 3's underdetermined batches: 12 students seed by seed, 36 in the quick preset, about
100 in the paper preset) and each number of samples per student n, both paths take the same steps from the same
students (Adam, T = 16, d = 12, half of them softmax); the rounds alternate the two paths so that a machine's drift
hits both. `entropic_bound.fused.FUSED_UP_TO` is the largest n at which the fused step is the faster at every B here:
`fit_students` reads a student's own n, never its batch's size, so that choice must hold for every batch it meets.
Writes benchmarks/fused.json (per cell: ms per step of each path and their ratio).
"""
import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch

from _commit import head_commit
from entropic_bound.attention import student_outputs
from entropic_bound.fused import attention_student_step, FUSED_UP_TO
from entropic_bound.train import _Optimizer

STORED = Path(__file__).parent / "fused.json"


def students(B: int, n: int, T: int = 16, d: int = 12, seed: int = 0) -> tuple:
    "B float32 students (full rank, small initialisation) and their data, half of them softmax."
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)
    params = dict(WQ=r(B, d, d) * 0.01, WK=r(B, d, d) * 0.01, V=r(B, d, d) * 0.01)
    return params, dict(X=r(B, n, T, d), Y=r(B, n, T, d), mask=torch.ones(B, 1, d), softmax=torch.arange(B) % 2 == 1)


def _loss(p, d):
    return ((student_outputs(p, d["mask"], d["softmax"], d["X"]) - d["Y"]) ** 2).sum((-1, -2)).mean(-1)


def time_cell(B: int, n: int, steps: int, rounds: int) -> dict:
    "ms per step of the fused and the autograd step on the same students, alternating rounds."
    params, data = students(B, n)
    pf = {k: v.clone() for k, v in params.items()}
    opt_f = _Optimizer("adam", pf, 1e-2)
    pa = {k: v.clone() for k, v in params.items()}
    opt_a = _Optimizer("adam", pa, 1e-2)
    keep = torch.zeros(B, dtype=torch.bool)
    attention_student_step(pf, data, opt_f)                          # compile (or load the cache) outside the clock
    fused = autograd = 0.0
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(steps): attention_student_step(pf, data, opt_f)
        fused += time.perf_counter() - t
        t = time.perf_counter()
        for _ in range(steps):
            leaf = {k: v.requires_grad_(True) for k, v in pa.items()}
            grads = torch.autograd.grad(_loss(leaf, data).sum(), list(leaf.values()))
            for v in pa.values(): v.requires_grad_(False)
            opt_a.step(pa, dict(zip(pa, grads)), keep)
        autograd += time.perf_counter() - t
    per = lambda s: 1e3 * s / (steps * rounds)
    return dict(B=B, n=n, fused_ms=per(fused), autograd_ms=per(autograd), ratio=autograd / fused)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    cells = []
    for B in (12, 36, 100):
        for n in (1, 2, 4, 16):
            c = time_cell(B, n, a.steps, a.rounds)
            cells.append(c)
            print(f"B {B:3d}, n {n:2d}: fused {c['fused_ms']:.3f} ms, autograd {c['autograd_ms']:.3f} ms a step -> autograd / fused {c['ratio']:.2f}", flush=True)
    faster = max((n for n in sorted({c["n"] for c in cells}) if all(c["ratio"] > 1 for c in cells if c["n"] <= n)), default=0)
    print(f"the fused step is the faster at every B up to n = {faster}; FUSED_UP_TO = {FUSED_UP_TO}")
    STORED.write_text(json.dumps(dict(date=datetime.date.today().isoformat(), commit=head_commit(), machine=platform.machine(),
                                      torch=torch.__version__, threads=1, cells=cells, fastest_up_to=faster, FUSED_UP_TO=FUSED_UP_TO), indent=1) + "\n")


if __name__ == "__main__":
    main()
