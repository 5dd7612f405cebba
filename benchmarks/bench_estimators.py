"""Estimator benchmark: Tables 4 and 5's measurement (the data-only rank estimators of `entropic_bound.predict`, no training) at
the quick preset, seeds 0-2, this checkout against an earlier commit, side by side on one thread.

    python benchmarks/bench_estimators.py --baseline REV [--rounds 3]

Each round runs both sides as fresh processes, alternating which goes first, each measuring Table 4 then Table 5
(`measure_table4`, `measure_table5`; the summaries and figures are made after the clock stops). The baseline imports
`entropic_bound` from a git worktree of REV (`bench_reproduce._baseline_python`) and everything else from this environment.
Every process also reports its claims' measured values and verdicts, so the record says how far the two sides' numbers are apart.
Writes benchmarks/estimators.json: the date, both commits, the seconds of every run, the medians and their ratio
(baseline / this checkout), the machine's one-minute load average at the start and the end (the machine may be shared).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _commit import head_commit
from bench_reproduce import _baseline_python

STORED = Path(__file__).parent / "estimators.json"
TABLES = ("table4", "table5")
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}

_CHILD = """
import json, time
import torch
from entropic_bound.policy import set_cpu_threads
torch.set_num_threads(1); set_cpu_threads(1)
from entropic_bound import table4, table5
out = dict(seconds={}, claims={})
for name, mod, settings, presets, measure, summarise in (
        ("table4", table4, table4.Table4Settings, table4.TABLE4_PRESETS, table4.measure_table4, table4.summarise_table4),
        ("table5", table5, table5.Table5Settings, table5.TABLE5_PRESETS, table5.measure_table5, table5.summarise_table5)):
    s = settings(**presets["quick"])
    t0 = time.perf_counter()
    units = measure(s, (0, 1, 2), progress=False)
    out["seconds"][name] = time.perf_counter() - t0
    out["claims"].update({c.id: [c.measured, c.verdict] for c in summarise(s, units).claims})
print(json.dumps(out))
"""


def run_side(python: Path, cwd: Path) -> dict:
    "One fresh process of `python`: Tables 4 and 5 measured -> {'seconds': {table: s}, 'claims': {id: [measured, verdict]}}."
    run = subprocess.run([str(python), "-c", _CHILD], cwd=cwd, capture_output=True, text=True, env=os.environ | ONE_THREAD)
    if run.returncode != 0: sys.exit(f"{python} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def side_by_side(rev: str, rounds: int) -> dict:
    "Both sides, `rounds` rounds alternating which goes first -> the record."
    load = [round(os.getloadavg()[0], 2)]
    root = Path(__file__).resolve().parent.parent
    resolved = subprocess.run(["git", "rev-parse", "--short", rev], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix=f"wt-{resolved}-") as tmp:
        tmp = Path(tmp)
        try:
            pythons = {"baseline": _baseline_python(rev, tmp), "head": Path(sys.executable)}
            runs = []
            for i in range(rounds):
                for who in (("baseline", "head") if i % 2 == 0 else ("head", "baseline")):
                    r = run_side(pythons[who], tmp)
                    runs.append(dict(side=who, seconds={k: round(v, 2) for k, v in r["seconds"].items()}, claims=r["claims"]))
                    print(f"round {i + 1}, {who:8s} " + ", ".join(f"{k} {v:.1f} s" for k, v in r["seconds"].items()), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "tree")], cwd=root, capture_output=True)
    load.append(round(os.getloadavg()[0], 2))
    med = {who: {t: statistics.median(r["seconds"][t] for r in runs if r["side"] == who) for t in TABLES} for who in ("baseline", "head")}
    for who in med: med[who]["both"] = statistics.median(sum(r["seconds"].values()) for r in runs if r["side"] == who)
    last = {who: next(r["claims"] for r in reversed(runs) if r["side"] == who) for who in ("baseline", "head")}
    rel = lambda a, b: abs(a - b) / abs(b) if b else abs(a)
    moved = max((rel(last["head"][c][0], last["baseline"][c][0]) for c in last["baseline"]), default=0.0)
    verdicts = sum(last["head"][c][1] == v for c, (_, v) in last["baseline"].items())
    return dict(date=datetime.date.today().isoformat(), baseline=resolved, commit=head_commit(), machine=platform.machine(), threads=1,
                preset="quick", seeds=[0, 1, 2], rounds=rounds, load_average=load,
                runs=[{k: v for k, v in r.items() if k != "claims"} for r in runs],
                median_s=med, ratio={t: round(med["baseline"][t] / med["head"][t], 3) for t in (*TABLES, "both")},
                claims=len(last["baseline"]), verdicts_same=verdicts, claims_largest_relative_change=moved)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", required=True, metavar="REV", help="the git revision to compare with")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    record = side_by_side(a.baseline, a.rounds)
    m, r = record["median_s"], record["ratio"]
    print(f"medians: baseline {record['baseline']} {m['baseline']['both']:.1f} s, this checkout {m['head']['both']:.1f} s -> {r['both']:.2f}x "
          f"(table4 {r['table4']:.2f}x, table5 {r['table5']:.2f}x); verdicts the same: {record['verdicts_same']} of {record['claims']}, "
          f"claims' measured values within {record['claims_largest_relative_change']:.2g} relative")
    STORED.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
