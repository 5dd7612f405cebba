"""Engine benchmark: the §4 rank-sweep models trained one at a time (a Python loop over models, B = 1 each)
and all at once (one batch), side by side in one run, on one CPU thread.

    python benchmarks/bench_engine.py

Both paths call the same `train_rank_sweep` -> `train_batched`, so each model sees the same initialisation, loss
and optimiser; the script checks that both give the same models (population excess risk, which is invariant to the
scale A -> cA, V -> V/c that floating-point order can move). Two step rules:

* `table1`: Table 1's settings (Adam, early stopping per model). A batch runs until its slowest model has converged,
  while the loop stops each model at its own step, so the ratio is the per-step speed-up times (mean steps / max steps).
* `fixed`: a fixed budget of steps for every model (no early stopping): the per-step throughput of batching.
"""
import time

import torch

from entropic_bound.linear import excess_risk, task_moments, train_rank_sweep
from entropic_bound.table1 import TABLE1
from entropic_bound.train import cpu_threads, set_engine_threads
from entropic_bound.tasks import linear_task

FIXED_STEPS = 500


def bench(n_models: int, mode: str) -> dict:
    "Wall times of the loop over models and of the batched run for `n_models` (8 ranks per task) under step rule `mode`."
    c = TABLE1.settings("quick")
    ranks = list(c.ranks)
    seeds = list(range(n_models // len(ranks)))
    steps, rtol = (c.sweep_steps, 1e-7) if mode == "table1" else (FIXED_STEPS, 0.0)
    train = lambda m, s, r: train_rank_sweep(m, r, s, c.sweep_init, c.sweep_lr, steps, rtol=rtol, progress=False)
    tasks = [linear_task(c.n, c.T, c.d, c.r_star, c.spectrum, c.noise_std, seed=s) for s in seeds]
    moments, singles = task_moments(tasks), [task_moments([t]) for t in tasks]   # data -> moments: not timed
    A_star = torch.stack([t.A for t in tasks]); V_star = torch.stack([t.V for t in tasks])
    t0 = time.perf_counter()
    looped, loop_steps = [], 0
    for i, s in enumerate(seeds):
        for r in ranks:
            A, V, res = train(singles[i], [s], [r])
            looped.append(excess_risk(A[0, 0], V[0, 0], A_star[i], V_star[i])); loop_steps += int(res.steps.sum())
    t_loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    A, V, res = train(moments, seeds, ranks)
    t_batch = time.perf_counter() - t0
    batched = excess_risk(A, V, A_star[:, None], V_star[:, None]).reshape(-1)
    return dict(mode=mode, models=n_models, loop_s=t_loop, batched_s=t_batch, ratio=t_loop / t_batch, loop_steps=loop_steps,
                batched_steps=int(res.steps.max()) * n_models, max_diff=(torch.stack(looped) - batched).abs().max().item())


def main():
    print(f"torch {torch.__version__}, 1 thread; rank-sweep models of §4 (T=16, d=12, n=256)")
    print(f"{'rule':>6} {'models':>6} {'loop (s)':>9} {'batched (s)':>11} {'ratio':>6} {'model-steps loop':>16} {'batched':>8} {'max |Δexcess|':>13}")
    for mode in ("table1", "fixed"):
        for n_models in (8, 40):
            b = bench(n_models, mode)
            print(f"{b['mode']:>6} {b['models']:>6} {b['loop_s']:>9.2f} {b['batched_s']:>11.2f} {b['ratio']:>5.1f}x "
                  f"{b['loop_steps']:>16} {b['batched_steps']:>8} {b['max_diff']:>13.1e}")


if __name__ == "__main__":
    set_engine_threads(1)                      # the engine's steps on one thread too
    with cpu_threads("cpu"): main()
