"""Benchmark of `entropic-bound reproduce`, in one run on this machine: the paper preset (5 seeds) per experiment and in
total against its targets (<= 600 s in all and <= 300 s per table on the 2-core CPU; <= 60 s on one GPU), the quick
preset (3 seeds) against <= 40 s, and — side by side in the same run — the speed-up of the batched engine over the
per-model Python loop (40 §4 rank-sweep models, via bench_engine.py) against >= 20x, with bench_engine.py's ceiling
(the same 40 models with their data held in cache). With `--baseline REV`, the quick preset also runs side by side with
git revision REV (say the commit before): fresh commands, alternating, `--rounds` of each, their medians and ratio, and
whether the two wrote the same tables and claims byte for byte (a change that should move no number must show "same").

    python benchmarks/bench_reproduce.py [--preset paper] [--seeds 5] [--device cpu|cuda] [--no-quick] [--out DIR]
                                         [--baseline REV [--rounds 3] [--only-baseline]] [--claims-only]

The paper preset's claim records (5 seeds) are stored in benchmarks/paper_claims.json; tests/test_paper_claims.py checks that
every claim there has the verdict the quick preset's reference has, so no claim holds only at quick sizes. With `--claims-only`
(a change of claims, on a machine too busy to time): the paper preset runs and its claim records are stored, nothing is timed or logged.
Every timed run is appended to benchmarks/timings.json, the log that scripts/make_figures.py quotes the times from.
"""
import argparse
import datetime
import filecmp
import json
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import torch

from entropic_bound.reproduce import default_jobs, reproduce
from entropic_bound.experiment import shelf
from entropic_bound.policy import cpu_threads, engine_threads, set_engine_threads, tune_allocator

sys.path.insert(0, str(Path(__file__).parent))
from bench_engine import bench, report_ceiling  # noqa: E402
from _commit import head_commit  # noqa: E402
import _targets  # noqa: E402


def timed(out: Path, preset: str, seeds: int, device: str, jobs: int):
    "Run reproduce into `out` as the command does; per-experiment seconds, total seconds, claim records."
    t0 = time.perf_counter()
    claims = reproduce(out, preset, range(seeds), device, force=True, progress=False, jobs=jobs)
    total = time.perf_counter() - t0
    per = {name: json.loads((out / ".records" / f"{name}.json").read_text())["seconds"] for name in shelf("paper")}      # the tables reproduce runs
    return per, total, claims


TIMINGS = Path(__file__).parent / "timings.json"


def _append(key: str, entry: dict) -> None:
    "Append `entry`, stamped with the script, date, commit and machine, to the list `key` of benchmarks/timings.json, the machine-readable log that scripts/make_figures.py quotes from."
    log = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else dict(about="Runs of benchmarks/bench_reproduce.py, oldest first.", runs=[])
    stamp = dict(script="bench_reproduce.py", date=datetime.date.today().isoformat(), commit=head_commit(),
                 machine=f"{platform.machine()}, {engine_threads()} cores, torch {torch.__version__}")
    log.setdefault(key, []).append(stamp | entry)
    TIMINGS.write_text(json.dumps(log, indent=1) + "\n")


def record(preset: str, seeds: int, jobs: int, total: float, per: dict, claims, device: str = "cpu") -> None:
    "Append this run to timings.json's `runs` (a GPU run names its device)."
    run = dict(preset=preset, seeds=seeds, jobs=jobs, total_s=round(total, 1), tables_s={n: round(s, 1) for n, s in per.items()},
               claims_hold=None if claims is None else sum(c["verdict"] == "holds" for c in claims),
               claims=None if claims is None else len(claims), source="written by bench_reproduce.py")
    if device != "cpu": run.update(device=f"{device} ({torch.cuda.get_device_name()})", source=f"written by bench_reproduce.py --device {device} (benchmarks/gpu_check.sh)")
    _append("runs", run)


_QUICK_COMMAND = ("import sys; from entropic_bound.cli import main; out, jobs = sys.argv[1:]; "
                  "sys.argv = ['entropic-bound', 'reproduce', '--preset', 'quick', '--out', out, '--force', '--no-progress', '--jobs', jobs]; main()")


def _baseline_python(rev: str, tmp: Path) -> Path:
    "A Python that imports entropic_bound from a worktree of `rev` and every dependency from this environment (not its editable install): a venv with one .pth file."
    root = Path(__file__).resolve().parent.parent
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tmp / "tree"), rev], cwd=root, check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    site = next((tmp / "venv" / "lib").glob("python*/site-packages"))
    (site / "baseline.pth").write_text(f"{tmp / 'tree'}\n{sysconfig.get_paths()['purelib']}\n")
    return tmp / "venv" / "bin" / "python"


def side_by_side(rev: str, rounds: int, jobs: int) -> dict:
    "The quick preset as a fresh command at `rev` and at this checkout, alternating, `rounds` each -> {'baseline'|'head': [seconds], 'ratio': median head / median baseline, 'same': whether the last runs wrote byte-identical tables and claims}."
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        try:
            pythons = {"baseline": _baseline_python(rev, tmp), "head": Path(sys.executable)}
            times = {who: [] for who in pythons}
            for i in range(rounds):
                for who, python in pythons.items():
                    t0 = time.perf_counter()
                    run = subprocess.run([str(python), "-c", _QUICK_COMMAND, str(tmp / who), str(jobs)], cwd=tmp, capture_output=True, text=True)
                    times[who].append(time.perf_counter() - t0)
                    if run.returncode not in (0, 1): sys.exit(f"the quick preset at {who} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
                    print(f"  round {i + 1}, {who:8s} {times[who][-1]:6.1f} s")
            files = sorted(f.name for f in (tmp / "head").glob("table*.csv")) + ["claims.json"]
            same = all((tmp / "baseline" / f).is_file() and filecmp.cmp(tmp / "baseline" / f, tmp / "head" / f, shallow=False) for f in files)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "tree")], cwd=root, capture_output=True)
    return dict(times, ratio=statistics.median(times["head"]) / statistics.median(times["baseline"]), same=same)


def record_engine(rows: list, device: str = "cpu") -> None:
    "Append the engine-against-loop comparison (one row per thread count; `threads` None: the GPU) to timings.json's `engine`."
    _append("engine", dict(device=device, models=40, steps="fixed 500", rows=rows))


def record_side_by_side(rev: str, jobs: int, result: dict) -> None:
    "Append a side-by-side run to timings.json's `side_by_side` (its own list: the figures quote `runs`)."
    resolved = subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    _append("side_by_side", dict(script="bench_reproduce.py --baseline", baseline=resolved or rev, preset="quick", jobs=jobs,
                                 baseline_s=[round(t, 1) for t in result["baseline"]], head_s=[round(t, 1) for t in result["head"]],
                                 ratio=round(result["ratio"], 3), tables_and_claims_identical=result["same"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="paper", choices=("quick", "paper"))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: as the command, one per core, at most one per table)")
    p.add_argument("--no-quick", action="store_true", help="skip the quick-preset run")
    p.add_argument("--out", default=None, help="keep the outputs here (default: a temporary directory)")
    p.add_argument("--baseline", default=None, metavar="REV", help="also run the quick preset at git revision REV side by side (fresh commands, alternating)")
    p.add_argument("--rounds", type=int, default=3, help="runs of each side with --baseline (default 3)")
    p.add_argument("--only-baseline", action="store_true", help="with --baseline: only the side-by-side comparison")
    p.add_argument("--claims-only", action="store_true", help="only the paper preset's claim records (benchmarks/paper_claims.json): no timing "
                   "is logged, no quick run, no engine benchmark (for a change of claims on a busy machine)")
    a = p.parse_args()
    if a.only_baseline and not a.baseline: p.error("--only-baseline needs --baseline REV")
    if a.rounds < 1: p.error("--rounds must be >= 1")
    tune_allocator()                                   # as the command line does
    jobs = default_jobs(shelf("paper"), a.device) if a.jobs is None else a.jobs
    print(f"torch {torch.__version__}, device {a.device}" + (f" ({torch.cuda.get_device_name()})" if a.device == "cuda" else "")
          + f", {engine_threads()} cores, --jobs {jobs}")
    if a.baseline:
        print(f"the quick preset side by side with {a.baseline}, {a.rounds} round(s), --jobs {jobs}:")
        sbs = side_by_side(a.baseline, a.rounds, jobs)
        record_side_by_side(a.baseline, jobs, sbs)
        print(f"  median: {a.baseline} {statistics.median(sbs['baseline']):.1f} s, this checkout {statistics.median(sbs['head']):.1f} s, "
              f"ratio {sbs['ratio']:.3f}; tables and claims {'byte-identical' if sbs['same'] else 'DIFFER'}")
        if a.only_baseline: return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.out or tmp)
        per, total, claims = timed(out / a.preset, a.preset, a.seeds, a.device, jobs)
        target, table_target = (_targets.GPU, None) if a.device == "cuda" else (_targets.PAPER, _targets.TABLE)
        print(f"reproduce --preset {a.preset} --seeds {a.seeds} --jobs {jobs}:")
        for name, sec in per.items():
            flag = "" if table_target is None else f"   (<= {table_target} s: {'met' if sec <= table_target else 'NOT met'})"
            print(f"  {name:7s} {sec:8.1f} s{flag}")
        verdicts = [c["verdict"] for c in claims]
        print(f"  total   {total:8.1f} s   (target <= {target} s: {'met' if total <= target else 'NOT met'}); "
              f"{verdicts.count('holds')}/{len(claims)} claims hold")
        if not a.claims_only: record(a.preset, a.seeds, jobs, total, per, claims, a.device)
        if a.preset == "paper" and a.seeds == 5:                    # the CPU's records are the stored ones; a GPU's go beside its logs
            stored = Path(__file__).parent / ("paper_claims.json" if a.device == "cpu" else "gpu_check/paper_claims_cuda.json")
            stored.parent.mkdir(exist_ok=True)
            stored.write_text(json.dumps(dict(preset="paper", seeds=list(range(a.seeds)), claims=claims), indent=1) + "\n")
            print(f"  claim records written to {stored.relative_to(Path.cwd()) if stored.is_relative_to(Path.cwd()) else stored}")
        if a.claims_only: return
        if not a.no_quick:
            qper, qtotal, qclaims = timed(out / "quick", "quick", 3, a.device, jobs)
            record("quick", 3, jobs, qtotal, qper, qclaims, a.device)
            print(f"reproduce --preset quick --seeds 3 --jobs {jobs}: total {qtotal:.1f} s   (target <= {_targets.QUICK} s: {'met' if qtotal <= _targets.QUICK else 'NOT met'}); "
                  + ", ".join(f"{n} {s:.1f} s" for n, s in qper.items()))
    # the engine against the per-model loop: on the GPU, or on the CPU with one thread and with the engine's threads
    engine = []
    for threads in ([None] if a.device == "cuda" else sorted({1, engine_threads()})):
        before = set_engine_threads(threads)
        with cpu_threads(a.device, threads or 1):
            b = bench(40, "fixed", a.device)
            where = "on the GPU" if threads is None else f"{threads} thread(s)"
            print(f"engine, side by side: 40 §4 models, fixed 500 steps, {where} both ways: loop {b['loop_s']:.2f} s, "
                  f"batched {b['batched_s']:.2f} s, ratio {b['ratio']:.1f}x   (target >= {_targets.ENGINE}x: {'met' if b['ratio'] >= _targets.ENGINE else 'NOT met'})")
            ceiling = report_ceiling(a.device)
            engine.append(dict(threads=threads, loop_s=round(b["loop_s"], 2), batched_s=round(b["batched_s"], 2), ratio=round(b["ratio"], 1),
                               ceiling_one_task=round(next(v for k, v in ceiling.items() if k.endswith("one task")), 1)))
        set_engine_threads(before)
    record_engine(engine, a.device)

if __name__ == "__main__":
    main()
