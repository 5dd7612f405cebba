"""What each speed lever buys, measured side by side in one run: the students of Table 3 (quick preset, 3 seeds) trained

  A. as one batch to the end (no shedding of converged models), default allocator;
  B. shedding converged models (`train.COMPACT_BELOW`, the default);
  C. B plus `train.tune_allocator()` (glibc keeps freed step buffers);
  D. C with the engine's steps on every core (`train.engine_threads()`, the default; A-C set it to one thread);

each in a fresh process, the same seeds. Prints wall time, minor page faults and the ratios to A, and
checks that the three runs give identical students (same excess per student).

    python benchmarks/bench_levers.py
"""
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np
from entropic_bound import train
from entropic_bound.experiment import measure_unit, units
from entropic_bound.table3 import TABLE3
variant = sys.argv[1]
if variant == "A": train.COMPACT_BELOW = 0.0
if variant in ("C", "D"): assert train.tune_allocator()
if variant != "D": train.set_engine_threads(1)
s = TABLE3.settings("quick")
unit = [u for u in units(TABLE3, s, (0, 1, 2)) if u.part == "students"][0]
t0, f0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
out = measure_unit(TABLE3, s, unit, "cpu", False)
wall, faults = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
excess = [v for x in sorted(out) for k, v in sorted(out[x]["excess"].items())]
print(json.dumps(dict(wall=wall, faults=faults, excess=excess, threads=train.engine_threads())))
"""


def main():
    res = {}
    for v in ("A", "B", "C", "D"):
        r = subprocess.run([sys.executable, "-c", CHILD, v], capture_output=True, text=True, check=True)
        res[v] = json.loads(r.stdout.strip().splitlines()[-1])
    same = res["A"]["excess"] == res["B"]["excess"] == res["C"]["excess"] == res["D"]["excess"]
    print("Table 3 students (quick preset, 3 seeds), one process each, side by side:")
    for v, what in (("A", "one batch to the end"), ("B", "shed converged models"), ("C", "shed + tune_allocator"),
                      ("D", f"C + engine on {res['D']['threads']} cores")):
        print(f"  {v}  {what:24s} {res[v]['wall']:7.1f} s  {res[v]['faults']:>10d} minor faults   "
              f"speed-up vs A {res['A']['wall'] / res[v]['wall']:.2f}x")
    print(f"  identical students in A, B, C, D: {same}")
    if not same: sys.exit(1)


if __name__ == "__main__":
    main()
