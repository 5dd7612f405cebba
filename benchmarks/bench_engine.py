"""Engine benchmark: the §4 rank-sweep models trained one at a time (a Python loop over models, B = 1 each)
and all at once (one batch), side by side in one run, on one CPU thread (or on `--device cuda`).

    python benchmarks/bench_engine.py [--device cpu|cuda] [--no-ceiling]

Both paths call the same `train_rank_sweep` -> `train_batched` on the engine's autograd path (`fused=False`: what
batching buys the engine; Table 1's fused step is measured by bench_fused.py), so each model sees the same initialisation, loss
and optimiser; the script checks that both give the same models (population excess risk, which is invariant to the
scale A -> cA, V -> V/c that floating-point order can move). Two step rules:

* `table1`: Table 1's settings (Adam, early stopping per model). A batch runs until its slowest model has converged,
  while the loop stops each model at its own step, so the ratio is the per-step speed-up times (mean steps / max steps).
* `fixed`: a fixed budget of steps for every model (no early stopping): the per-step throughput of batching.

The ceiling section splits a 40-model step's cost. The ratio at 40 models is 40 x (one model's step) / (a 40-model
step). A batch of 40 models on 5 tasks reads the 5 tasks' moments (R and H, 2.8 MB together in float64, more than a core's
L2 cache holds on the project's machine) at every step, as five products of 8 models each; the same 40 models
on one task's moments (0.56 MB, which stay in the cache) do the same arithmetic as one product of 40 models. The ratio
against that step bounds what a batch could reach if its data stayed in the cache; the rest of a 40-model step is its
own operations on 40 times the data. The script prints the moments' sizes and, where Linux says, the cache's.
"""
import argparse
import time

import torch

from entropic_bound.linear import excess_risk, task_moments, train_rank_sweep
from entropic_bound.table1 import TABLE1
from entropic_bound.policy import cpu_threads, set_engine_threads
from entropic_bound.tasks import linear_task

FIXED_STEPS = 500


def _tasks(groups: int) -> list:
    "The §4 tasks of Table 1's quick preset, seeds 0..groups-1."
    c = TABLE1.settings("quick")
    return [linear_task(c.n, c.T, c.d, c.r_star, c.spectrum, c.noise_std, seed=s) for s in range(groups)]


def _sync(device: str):
    if str(device).startswith("cuda"): torch.cuda.synchronize()


def bench(n_models: int, mode: str, device: str = "cpu") -> dict:
    "Wall times of the loop over models and of the batched run for `n_models` (8 ranks per task) under step rule `mode`."
    c = TABLE1.settings("quick")
    ranks = list(c.ranks)
    seeds = list(range(n_models // len(ranks)))
    steps, rtol = (c.sweep_steps, 1e-7) if mode == "table1" else (FIXED_STEPS, None)   # None: no stopping rule at all
    train = lambda m, s, r: train_rank_sweep(m, r, s, c.sweep_init, c.sweep_lr, steps, rtol=rtol, progress=False, fused=False)
    tasks = _tasks(len(seeds))
    moments, singles = task_moments(tasks).to(device), [task_moments([t]).to(device) for t in tasks]   # not timed
    A_star = torch.stack([t.A for t in tasks]).to(device); V_star = torch.stack([t.V for t in tasks]).to(device)
    train(singles[0], [seeds[0]], [ranks[0]]); _sync(device)                        # warm-up (first calls, CUDA context)
    t0 = time.perf_counter()
    looped, loop_steps = [], 0
    for i, s in enumerate(seeds):
        for r in ranks:
            A, V, res = train(singles[i], [s], [r])
            looped.append(excess_risk(A[0, 0], V[0, 0], A_star[i], V_star[i])); loop_steps += int(res.steps.sum())
    _sync(device)
    t_loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    A, V, res = train(moments, seeds, ranks)
    _sync(device)
    t_batch = time.perf_counter() - t0
    batched = excess_risk(A, V, A_star[:, None], V_star[:, None]).reshape(-1)
    return dict(mode=mode, models=n_models, loop_s=t_loop, batched_s=t_batch, ratio=t_loop / t_batch, loop_steps=loop_steps,
                batched_steps=int(res.steps.max()) * n_models, max_diff=(torch.stack(looped).cpu() - batched.cpu()).abs().max().item())


def _cache_bytes() -> int | None:
    "Bytes of this machine's per-core L2 cache, where Linux says (None elsewhere)."
    try: text = open("/sys/devices/system/cpu/cpu0/cache/index2/size").read().strip()
    except OSError: return None
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def ceiling(device: str = "cpu", n_models: int = 40, steps: int = FIXED_STEPS, repeats: int = 3) -> dict:
    "Seconds per step (best of `repeats`, `steps` steps, no stopping rule) of one model (mean over the ranks, each alone), of `n_models` on 5 tasks and of `n_models` on one task's moments; and the moments' bytes."
    c = TABLE1.settings("quick")
    ranks = list(c.ranks)
    groups = n_models // len(ranks)
    tasks = _tasks(groups)
    many, one = task_moments(tasks).to(device), task_moments(tasks[:1]).to(device)
    def per_step(m, seeds, rs):
        best = float("inf")
        for _ in range(repeats):
            _sync(device); t0 = time.perf_counter()
            train_rank_sweep(m, rs, seeds, c.sweep_init, c.sweep_lr, steps, rtol=None, progress=False, fused=False)
            _sync(device); best = min(best, time.perf_counter() - t0)
        return best / steps
    size = lambda m: (m.R.numel() + m.H.numel()) * m.R.element_size()
    return {"one model": sum(per_step(one, [0], [r]) for r in ranks) / len(ranks),
            f"{n_models} models, {groups} tasks": per_step(many, list(range(groups)), ranks),
            f"{n_models} models, one task": per_step(one, [0], ranks * groups),
            "bytes": {f"{groups} tasks": size(many), "one task": size(one), "cache": _cache_bytes()}}


def report_ceiling(device: str = "cpu", n_models: int = 40) -> dict:
    "Print the per-step seconds of `ceiling` and the ratios they allow; return those ratios {row: n_models x one / row}."
    c = ceiling(device, n_models)
    size = c.pop("bytes")
    one = next(iter(c))
    mb = lambda b: "?" if b is None else f"{b / 2**20:.2f} MB"
    print(f"ceiling: seconds per step ({FIXED_STEPS} steps, no stopping rule, best of 3), {n_models} models against one "
          f"(moments R and H: {', '.join(f'{k} {mb(v)}' for k, v in size.items() if k != 'cache')}; per-core L2 cache {mb(size['cache'])}):")
    for name in c:
        extra = "   (mean over the ranks, each alone)" if name == one else f"   {n_models} x one / this = {n_models * c[one] / c[name]:.1f}x"
        print(f"  {name:22s} {c[name] * 1e3:7.3f} ms{extra}")
    return {name: n_models * c[one] / c[name] for name in c if name != one}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--no-ceiling", action="store_true", help="skip the ceiling section")
    a = p.parse_args()
    where = torch.cuda.get_device_name() if a.device == "cuda" else "1 thread"
    print(f"torch {torch.__version__}, {where}; rank-sweep models of §4 (T=16, d=12, n=256)")
    print(f"{'rule':>6} {'models':>6} {'loop (s)':>9} {'batched (s)':>11} {'ratio':>6} {'model-steps loop':>16} {'batched':>8} {'max |Δexcess|':>13}")
    for mode in ("table1", "fixed"):
        for n_models in (8, 40):
            b = bench(n_models, mode, a.device)
            print(f"{b['mode']:>6} {b['models']:>6} {b['loop_s']:>9.2f} {b['batched_s']:>11.2f} {b['ratio']:>5.1f}x "
                  f"{b['loop_steps']:>16} {b['batched_steps']:>8} {b['max_diff']:>13.1e}")
    if not a.no_ceiling: report_ceiling(a.device)


if __name__ == "__main__":
    set_engine_threads(1)                      # the engine's steps on one thread too
    with cpu_threads("cpu"): main()
