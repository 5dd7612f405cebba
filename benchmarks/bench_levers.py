"""What each speed lever buys, measured side by side in one run, each variant in a fresh process, the same seeds.

Table 3's students (quick preset, 3 seeds), trained

  A. as one batch to the end (no shedding of converged models), default allocator;
  B. shedding converged models (`train.COMPACT_BELOW`, the default);
  C. B plus `policy.tune_allocator()` (glibc keeps freed step buffers);
  D. C with the engine's steps on every core (`policy.engine_threads()`, the default; A-C set it to one thread).

Table 2 at the quick preset (3 seeds), one process, the engine on every core:

  T2a. the step budgets the quick preset had before (500 steps per class, B3+pos 1500);
  T2b. the quick preset's budgets now (300, B3+pos 1000).

The whole quick preset, `reproduce(..., force=True)` as the command runs it (the allocator tuned in all four):

  Q1. one process, one thread, every least-squares design computed afresh (`predict._DESIGN_CACHE = 0`);
  Q2. Q1 with designs reused across fits on the same inputs (the default);
  Q3. Q2 with the engine's steps on every core (`--jobs 1`);
  Q4. Q3 as worker processes, one per core (the default `--jobs`).

The quick preset's tasks, the whole command as it runs by default (worker processes, designs reused):

  R4. Tables 2 and 3 on r* in {1, 2, 3, 4}, as the quick preset had them before;
  R3. r* in {1, 2, 3}, the quick preset now (the paper preset keeps all four).

Prints wall times, minor page faults (students) and ratios; checks that A-D give identical students, and that Q1-Q4
give the same verdicts (with the largest relative change of a claim's value); for R4 and R3, the verdicts and every claim
value that moved.

    python benchmarks/bench_levers.py [--only students,table2,quick,ranks]
"""
import argparse
import json
import subprocess
import sys

STUDENTS = r"""
import json, resource, sys, time
import numpy as np
from entropic_bound import policy, train
from entropic_bound.experiment import measure_unit, units
from entropic_bound.table3 import TABLE3
variant = sys.argv[1]
if variant == "A": train.COMPACT_BELOW = 0.0
if variant in ("C", "D"): assert policy.tune_allocator()
if variant != "D": policy.set_engine_threads(1)
s = TABLE3.settings("quick")
unit = [u for u in units(TABLE3, s, (0, 1, 2)) if u.part == "students"][0]
t0, f0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
out = measure_unit(TABLE3, s, unit, "cpu", False)
wall, faults = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
excess = [v for x in sorted(out) for _, v in sorted(out[x].excess.items())] + \
         [f.excess for x in sorted(out) for _, f in sorted(out[x].nonflat.items())]
print(json.dumps(dict(wall=wall, faults=faults, excess=excess, threads=policy.engine_threads())))
"""

TABLE2 = r"""
import dataclasses, json, sys, time
from entropic_bound import policy, train
from entropic_bound.experiment import run
from entropic_bound.table2 import TABLE2
assert policy.tune_allocator()
s = TABLE2.settings("quick")
if sys.argv[1] == "T2a": s = dataclasses.replace(s, steps=500, pos_steps=1500)
t0 = time.perf_counter()
res = run(TABLE2, s, (0, 1, 2))
print(json.dumps(dict(wall=time.perf_counter() - t0, claims={c.id: [c.measured, c.verdict] for c in res.claims},
                      steps=[s.steps, s.pos_steps])))
"""

QUICK = r"""
import json, sys, tempfile, time
from entropic_bound import policy, predict, train
from entropic_bound.experiment import experiment, shelf
from entropic_bound.reproduce import default_jobs, reproduce
variant = sys.argv[1]
assert policy.tune_allocator()
if variant == "Q1": predict._DESIGN_CACHE = 0
if variant in ("Q1", "Q2"): policy.set_engine_threads(1)
if variant == "R4":                # the presets live in this process; the workers get the settings made from them
    for name in ("table2", "table3"): experiment(name).presets["quick"]["r_stars"] = (1, 2, 3, 4)
jobs = 1 if variant in ("Q1", "Q2", "Q3") else default_jobs(shelf("paper"))
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    claims = reproduce(d, "quick", force=True, progress=False, jobs=jobs)
    wall = time.perf_counter() - t0
r_stars = experiment("table2").settings("quick").r_stars
print(json.dumps(dict(wall=wall, jobs=jobs, threads=policy.engine_threads(), r_stars=r_stars,
                      claims={c["id"]: [c["measured"], c["verdict"]] for c in claims})))
"""


def child(code: str, variant: str) -> dict:
    r = subprocess.run([sys.executable, "-c", code, variant], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def claim_change(a: dict, b: dict):
    "Same verdicts? and the largest relative change of a claim's value between two runs."
    same = all(a[k][1] == b[k][1] for k in a)
    rel = max(abs(a[k][0] - b[k][0]) / max(abs(a[k][0]), 1e-300) for k in a)
    return same, rel


def students():
    res = {v: child(STUDENTS, v) for v in ("A", "B", "C", "D")}
    same = res["A"]["excess"] == res["B"]["excess"] == res["C"]["excess"] == res["D"]["excess"]
    print("Table 3 students (quick preset, 3 seeds), one process each, side by side:")
    for v, what in (("A", "one batch to the end"), ("B", "shed converged models"), ("C", "shed + tune_allocator"),
                    ("D", f"C + engine on {res['D']['threads']} cores")):
        print(f"  {v}  {what:26s} {res[v]['wall']:7.1f} s  {res[v]['faults']:>10d} minor faults   "
              f"speed-up vs A {res['A']['wall'] / res[v]['wall']:.2f}x")
    print(f"  identical students in A, B, C, D: {same}")
    return same


def before_after(res: dict, label) -> bool:
    "Print two variants `res` {name: child output} side by side (`label(output)` names each) and the claim values that moved; same verdicts?"
    (va, a), (vb, b) = res.items()
    for v, r in res.items():
        print(f"  {v}  {label(r):36s} {r['wall']:7.1f} s   speed-up vs {va} {a['wall'] / r['wall']:.2f}x")
    same, _ = claim_change(a["claims"], b["claims"])
    moved = [f"{k} {a['claims'][k][0]:.4g} -> {b['claims'][k][0]:.4g}" for k in a["claims"] if a["claims"][k][0] != b["claims"][k][0]]
    print(f"  verdicts the same: {same}; claim values that moved: " + (", ".join(moved) or "none"))
    return same


def side_by_side(source: str, variants, title: str, label) -> bool:
    "Run `variants` of the child `source` in fresh processes, print `title` and the before/after comparison."
    res = {v: child(source, v) for v in variants}
    print(title)
    return before_after(res, label)


def table2():
    return side_by_side(TABLE2, ("T2a", "T2b"), "Table 2 (quick preset, 3 seeds), one process each, the engine on every core:",
                        lambda r: f"steps {r['steps'][0]}, B3+pos {r['steps'][1]}")


def quick():
    res = {v: child(QUICK, v) for v in ("Q1", "Q2", "Q3", "Q4")}
    print("The quick preset (3 seeds), the whole command, one fresh process each, side by side:")
    what = {"Q1": "one process, one thread, no design reuse", "Q2": "Q1 + designs reused", "Q3": f"Q2 + engine on {res['Q3']['threads']} cores",
            "Q4": f"Q3 as {res['Q4']['jobs']} worker processes"}
    ok = True
    for v in ("Q1", "Q2", "Q3", "Q4"):
        same, rel = claim_change(res["Q1"]["claims"], res[v]["claims"])
        ok &= same
        print(f"  {v}  {what[v]:42s} {res[v]['wall']:7.1f} s   speed-up vs Q1 {res['Q1']['wall'] / res[v]['wall']:.2f}x   "
              f"verdicts as Q1: {same}, largest relative change of a claim value {rel:.1e}")
    return ok


def ranks():
    return side_by_side(QUICK, ("R4", "R3"), "The quick preset (3 seeds), the whole command (default --jobs), one fresh process each, side by side:",
                        lambda r: f"Tables 2 and 3 on r* in {{{', '.join(map(str, r['r_stars']))}}}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="students,table2,quick,ranks")
    parts = p.parse_args().only.split(",")
    ok = True
    for name, fn in (("students", students), ("table2", table2), ("quick", quick), ("ranks", ranks)):
        if name in parts: ok &= fn()
    if not ok: sys.exit(1)


if __name__ == "__main__":
    main()
