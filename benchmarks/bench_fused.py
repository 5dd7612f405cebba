"""Fused step benchmark: one training step of a batch of attention students, the compiled fused step against the
batched autograd step (the engine's reference path), side by side in one run on one CPU thread.

    python benchmarks/bench_fused.py [--only table3,table1,table2] [--steps 60] [--rounds 3] [--table1-steps 300] [--table1-rounds 3]
                                     [--table2-steps 30] [--table2-rounds 3]

For each batch size B (Table 3's underdetermined batches: 12 students seed by seed, 36 in the quick preset, about
100 in the paper preset) and each number of samples per student n, both paths take the same steps from the same
students (Adam, T = 16, d = 12, half of them softmax); the rounds alternate the two paths so that a machine's drift
hits both. `entropic_bound.fused.FUSED_UP_TO` is the largest n at which the fused step is the faster at every B here:
`fit_students` reads a student's own n, never its batch's size, so that choice must hold for every batch it meets.
Writes benchmarks/fused.json (per cell: ms per step of each path and their ratio).

Table 1 (`--only table1`): its students' training calls through the library's own functions, the fused path
(`surrogate_student_step`, the default on the CPU) against the reference path (`fused=False`: autograd on the second
moments, the batched closed form on the samples), on one thread:
- per step, each class at the quick preset's batch: the rank sweep (24 students, ranks 1..8 on 3 data sets' moments,
  n = 256), Theorem 4's over-parameterised students on moments (6), and the implicit-bias regime on one sample each —
  small- and large-init GD (6), Adam (3), the minimum-norm student (3) — a fixed number of steps both ways, alternating;
- the whole of Table 1's training (`measure_table1`, quick preset, seeds 0-2) in fresh processes, one per path and round,
  alternating: the seconds inside the engine (`train_batched`) and of the whole measurement, wall-clock and CPU (the
  process's own, which other users of a shared machine disturb less), and their ratios (medians);
  the machine's one-minute load average at the start and the end is recorded beside them.
Its record is the "table1" entry of benchmarks/fused.json; the rest of the file is kept (and the other way round).

Table 2 (`--only table2`): the ladder's training through `fit_ladder_class`, the fused path (the default on the CPU) against
the reference path (`fused=False`, autograd on `ladder_forward`), on one thread:
- per step, each class that has a fused step at the quick preset's batch (its two runs, rank r* and full width, on seeds 0-2:
  18 models of n = 256 samples), a fixed number of steps both ways, alternating: B0 on Table 1's token-mixing step, and B1,
  B1c and B2 on the attention step — which `ladder_fused_step` gives them only up to `FUSED_UP_TO` samples each, so here it
  is forced: these cells are the measurement behind that choice;
- the whole of Table 2's training (its three parts, `measure_table2_part`, quick preset, seeds 0-2) in fresh processes, one
  per path and round, alternating: the seconds inside the engine and of the whole measurement, wall-clock and CPU, and their
  ratios (medians),
  with the one-minute load average at the start and the end.
Its record is the "table2" entry of benchmarks/fused.json; the rest of the file is kept.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import torch

from _commit import head_commit
from entropic_bound.attention import student_outputs
from entropic_bound.fused import attention_student_step, FUSED_UP_TO
from entropic_bound.train import _Optimizer
import entropic_bound.ladder as ladder
import entropic_bound.linear as linear
import entropic_bound.table1 as table1
import entropic_bound.table2 as table2
from entropic_bound.policy import set_cpu_threads, set_engine_threads
from entropic_bound.tasks import linear_task

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


def table3_record(steps: int, rounds: int) -> dict:
    "The attention students' cells (Table 3)."
    cells = []
    for B in (12, 36, 100):
        for n in (1, 2, 4, 16):
            c = time_cell(B, n, steps, rounds)
            cells.append(c)
            print(f"B {B:3d}, n {n:2d}: fused {c['fused_ms']:.3f} ms, autograd {c['autograd_ms']:.3f} ms a step -> autograd / fused {c['ratio']:.2f}", flush=True)
    faster = max((n for n in sorted({c["n"] for c in cells}) if all(c["ratio"] > 1 for c in cells if c["n"] <= n)), default=0)
    print(f"the fused step is the faster at every B up to n = {faster}; FUSED_UP_TO = {FUSED_UP_TO}")
    return dict(date=datetime.date.today().isoformat(), commit=head_commit(), machine=platform.machine(),
                torch=torch.__version__, threads=1, cells=cells, fastest_up_to=faster, FUSED_UP_TO=FUSED_UP_TO)


# ---- Table 1 ----

def table1_classes() -> dict:
    "Each class of Table 1's students at the quick preset's batch: {name: (models, train(fused, steps))}, every call a fixed number of steps."
    s = table1.Table1Settings(**table1.TABLE1_PRESETS["quick"])
    sweep = linear.task_moments([linear_task(s.n, s.T, s.d, s.r_star, None, s.noise_std, seed=x) for x in (0, 1, 2)])
    recovery = linear.task_moments([linear_task(s.n, s.T, s.d, s.r_star, None, s.noise_std, seed=x) for x in range(6)])
    few = [linear_task(s.implicit_n, s.T, s.d, s.r_star, None, s.noise_std, seed=x) for x in (0, 1, 2)]
    samples = (torch.stack([t.X for t in few]), torch.stack([t.Y for t in few]))
    twice = tuple(t.repeat(2, 1, 1, 1) for t in samples)
    over = partial(linear.train_overparameterised, progress=False)
    return {"rank sweep (moments, masked rank 1..8)": (24, lambda f, k: linear.train_rank_sweep(sweep, s.ranks, [0, 1, 2], s.sweep_init, s.sweep_lr, k, rtol=None, progress=False, fused=f)),
            "Theorem 4, over-parameterised GD (moments)": (6, lambda f, k: over(recovery, list(range(6)), s.gd_init, s.gd_lr, k, fused=f)),
            "implicit bias, GD small and large init (n = 1)": (6, lambda f, k: over(twice, [0, 1, 2] * 2, [s.gd_init] * 3 + [s.large_init_scale] * 3, s.implicit_gd_lr, k, fused=f)),
            "implicit bias, Adam (n = 1)": (3, lambda f, k: over(samples, [0, 1, 2], s.gd_init, s.implicit_gd_lr, k, optimizer="adam", fused=f)),
            "implicit bias, minimum norm (unfactorised, n = 1)": (3, lambda f, k: over(samples, [0, 1, 2], 0.0, s.implicit_lr, k, factorised=False, fused=f))}


def alternating_cells(classes: dict, steps: int, rounds: int) -> dict:
    "{name: {'fused': ms, 'reference': ms} per step} for each of `classes` {name: (models, train(fused, steps))}: compiled (or the cache loaded) outside the clock, then the same calls alternating, the order swapped every round."
    out = {}
    for name, (models, train) in classes.items():
        train(True, 2); train(False, 2)
        t = dict(fused=0.0, reference=0.0)
        for i in range(rounds):
            for path in (("fused", "reference") if i % 2 == 0 else ("reference", "fused")):
                t0 = time.perf_counter(); train(path == "fused", steps); t[path] += time.perf_counter() - t0
        out[name] = {k: 1e3 * v / (steps * rounds) for k, v in t.items()}
    return out


def table1_cells(steps: int, rounds: int) -> list:
    "ms per step of each class of Table 1's students, fused and reference (`alternating_cells`)."
    cells = []
    for name, per in alternating_cells(classes := table1_classes(), steps, rounds).items():
        models = classes[name][0]
        cells.append(dict(students=name, models=models, steps=steps, fused_ms=per["fused"], reference_ms=per["reference"], ratio=per["reference"] / per["fused"]))
        print(f"{name}: {models} models, fused {per['fused']:.3f} ms, reference {per['reference']:.3f} ms a step -> reference / fused {per['reference'] / per['fused']:.2f}", flush=True)
    return cells


def _timed(engine, inside: list):
    "`engine` (the engine's `train_batched`) counting its wall-clock and CPU seconds into `inside` [wall, cpu]."
    def timed(*a, **kw):
        t0, c0 = time.perf_counter(), time.process_time(); res = engine(*a, **kw)
        inside[0] += time.perf_counter() - t0; inside[1] += time.process_time() - c0
        return res
    return timed


def table1_child(path: str) -> dict:
    "One fresh process: Table 1's measurement at the quick preset, seeds 0-2, on one thread, on `path` ('fused' or 'reference') -> seconds in the engine and in all."
    if path == "reference":                                                        # Table 1 reaches the engine through these two
        for name in ("train_rank_sweep", "train_overparameterised"): setattr(table1, name, partial(getattr(linear, name), fused=False))
    linear.train_batched = _timed(linear.train_batched, inside := [0.0, 0.0])
    s = table1.Table1Settings(**table1.TABLE1_PRESETS["quick"])
    t0, c0 = time.perf_counter(), time.process_time()
    table1.measure_table1(s, (0, 1, 2), progress=False)
    return dict(path=path, train_s=inside[0], measure_s=time.perf_counter() - t0, train_cpu_s=inside[1], measure_cpu_s=time.process_time() - c0)


def table1_record(steps: int, rounds: int, training_rounds: int) -> dict:
    "Table 1's record: the per-step cells and the whole training in fresh processes."
    load = [round(os.getloadavg()[0], 2)]                                             # the machine is shared: its load is part of the record
    cells = table1_cells(steps, rounds)
    training = fresh_processes("--table1-child", training_rounds, "Table 1")
    load.append(round(os.getloadavg()[0], 2))
    return dict(date=datetime.date.today().isoformat(), commit=head_commit(), machine=platform.machine(), torch=torch.__version__, threads=1,
                load_average=load, cells=cells, training=training)


# ---- Table 2 ----

TABLE2_CLASSES = ("B0", "B1", "B1c", "B2")


def table2_classes() -> dict:
    "Each class of Table 2's ladder that has a fused step, at the quick preset's batch: {class: (models, train(fused, steps))}, every call a fixed number of steps (no stopping rule); `fused` forces the attention step on B1, B1c and B2 at this n."
    s = table2.Table2Settings(**table2.TABLE2_PRESETS["quick"])
    data = ladder.ladder_data((0, 1, 2), s.r_stars, s.n, 2, s.T, s.d, s.noise_std, getattr(torch, s.dtype))
    M = len(data.seeds)
    def train(cls, fused, steps):
        ranks = [data.r_stars, [s.T if cls == "B0" else s.d] * M]
        up_to, ladder.FUSED_UP_TO = ladder.FUSED_UP_TO, (10 ** 9 if fused else ladder.FUSED_UP_TO)
        try: ladder.fit_ladder_class(cls, data, ranks, [s.achieve_init, s.recover_init], steps, s.lr, None, s.ffn, progress=False, fused=fused)
        finally: ladder.FUSED_UP_TO = up_to
    return {cls: (2 * M, partial(train, cls)) for cls in TABLE2_CLASSES}


def table2_cells(steps: int, rounds: int) -> list:
    "ms per step of each class of Table 2's ladder with a fused step, fused and reference (`alternating_cells`), and whether `fit_ladder_class` takes the fused step at the table's n."
    cells, n = [], table2.Table2Settings(**table2.TABLE2_PRESETS["quick"]).n
    for cls, per in alternating_cells(classes := table2_classes(), steps, rounds).items():
        models, taken = classes[cls][0], ladder.ladder_fused_step(cls, n) is not None
        cells.append(dict(cls=cls, models=models, steps=steps, fused_ms=per["fused"], reference_ms=per["reference"], ratio=per["reference"] / per["fused"], fused_at_this_n=taken))
        print(f"{cls}: {models} models, fused {per['fused']:.2f} ms, reference {per['reference']:.2f} ms a step -> reference / fused {per['reference'] / per['fused']:.2f}"
              f" ({'taken' if taken else 'not taken'} by fit_ladder_class at this n)", flush=True)
    return cells


def table2_child(path: str) -> dict:
    "One fresh process: Table 2's three parts at the quick preset, seeds 0-2, on one thread, on `path` ('fused' or 'reference') -> seconds in the engine and in all."
    if path == "reference": table2.fit_ladder_class = partial(ladder.fit_ladder_class, fused=False)   # Table 2 reaches the engine through this
    ladder.train_batched = _timed(ladder.train_batched, inside := [0.0, 0.0])
    s = table2.Table2Settings(**table2.TABLE2_PRESETS["quick"])
    t0, c0 = time.perf_counter(), time.process_time()
    for part in table2.TABLE2_PARTS: table2.measure_table2_part(s, part, (0, 1, 2), progress=False)
    return dict(path=path, train_s=inside[0], measure_s=time.perf_counter() - t0, train_cpu_s=inside[1], measure_cpu_s=time.process_time() - c0)


def fresh_processes(flag: str, rounds: int, name: str) -> dict:
    "A table's training in fresh processes (`flag` PATH runs one), alternating between the paths, medians over `rounds`."
    runs = []
    for i in range(rounds):
        for path in (("fused", "reference") if i % 2 == 0 else ("reference", "fused")):
            out = subprocess.run([sys.executable, __file__, flag, path], capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {i + 1}, {path}: training {runs[-1]['train_s']:.2f} s ({runs[-1]['train_cpu_s']:.2f} CPU s), measurement {runs[-1]['measure_s']:.2f} s", flush=True)
    med = lambda path, key: statistics.median(r[key] for r in runs if r["path"] == path)
    keys = ("train_s", "measure_s", "train_cpu_s", "measure_cpu_s")
    out = dict(runs=runs) | {f"{path}_{k}": med(path, k) for k in keys for path in ("fused", "reference")}
    out |= {k.replace("_s", "_ratio"): out[f"reference_{k}"] / out[f"fused_{k}"] for k in keys}   # train_ratio, measure_ratio, train_cpu_ratio, measure_cpu_ratio
    print(f"{name}'s training: reference {out['reference_train_s']:.2f} s, fused {out['fused_train_s']:.2f} s -> {out['train_ratio']:.2f}x "
          f"(CPU seconds {out['train_cpu_ratio']:.2f}x); the whole measurement {out['reference_measure_s']:.2f} s -> {out['fused_measure_s']:.2f} s ({out['measure_ratio']:.2f}x)", flush=True)
    return out


def table2_record(steps: int, rounds: int, training_rounds: int) -> dict:
    "Table 2's record: the per-step cells and the whole training in fresh processes."
    load = [round(os.getloadavg()[0], 2)]
    cells = table2_cells(steps, rounds)
    training = fresh_processes("--table2-child", training_rounds, "Table 2")
    load.append(round(os.getloadavg()[0], 2))
    return dict(date=datetime.date.today().isoformat(), commit=head_commit(), machine=platform.machine(), torch=torch.__version__, threads=1,
                load_average=load, cells=cells, training=training)


TABLES = ("table3", "table1", "table2")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="table3,table1,table2", help="comma-separated: table3 (attention students), table1 (token-mixing students), table2 (the ladder)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--table1-steps", type=int, default=300)
    p.add_argument("--table1-rounds", type=int, default=3, help="rounds of the per-step cells and of the fresh-process training runs")
    p.add_argument("--table2-steps", type=int, default=30)
    p.add_argument("--table2-rounds", type=int, default=3, help="rounds of the per-step cells and of the fresh-process training runs")
    p.add_argument("--table1-child", choices=("fused", "reference"), help=argparse.SUPPRESS)
    p.add_argument("--table2-child", choices=("fused", "reference"), help=argparse.SUPPRESS)
    a = p.parse_args()
    torch.set_num_threads(1); set_cpu_threads(1); set_engine_threads(1)
    if a.table1_child:
        print(json.dumps(table1_child(a.table1_child))); return
    if a.table2_child:
        print(json.dumps(table2_child(a.table2_child))); return
    only = set(a.only.split(","))
    if only - set(TABLES): p.error(f"--only: unknown {sorted(only - set(TABLES))}")
    stored = json.loads(STORED.read_text()) if STORED.exists() else {}
    others = {k: v for k, v in stored.items() if k in TABLES}                         # the other tables' entries
    record = (table3_record(a.steps, a.rounds) | others) if "table3" in only else dict(stored)
    if "table1" in only: record["table1"] = table1_record(a.table1_steps, a.table1_rounds, a.table1_rounds)
    if "table2" in only: record["table2"] = table2_record(a.table2_steps, a.table2_rounds, a.table2_rounds)
    STORED.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
