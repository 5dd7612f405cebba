"""One multi-seed table on a LocalCluster of N single-threaded worker processes against the in-process run.

    python benchmarks/bench_cluster.py [--table table1] [--preset paper] [--seeds 4] [--workers 2]

In process, the experiment is measured as `reproduce` measures it without a scheduler: every seed in one batch,
one thread. On the cluster, as `reproduce --scheduler local:N` measures it: one unit per part and group of seeds,
one group per worker (`--seeds-per-unit K`: K seeds a unit), no unit reused. Both wall times include the summary; the cluster's start-up (worker processes, imports) is timed apart.
The per-unit cost is the compute time of each unit on its worker (Dask's task stream). Prints a ratio, not a
verdict: the results are checked to be identical, the speed is what it is on this machine.
"""
import argparse
import datetime
import os
import platform
import tempfile
import time

import distributed

from entropic_bound.cluster import DaskBackend
from entropic_bound.experiment import experiment, run, run_experiments, units
from entropic_bound.policy import set_engine_threads


def cpu_name() -> str:
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--table", default="table1")
    p.add_argument("--preset", default="paper")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seeds-per-unit", type=int, default=None)
    a = p.parse_args()
    exp, seeds = experiment(a.table), tuple(range(a.seeds))
    settings = exp.settings(a.preset)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{datetime.date.today()} · {cpu_name()}, {cores} cores available, Python {platform.python_version()}, "
          f"distributed {distributed.__version__} · load average before: {os.getloadavg()[0]:.2f}")

    set_engine_threads(1)                            # one thread, like each worker
    t0 = time.perf_counter()
    here = run(exp, settings, seeds, progress=False)
    t_here = time.perf_counter() - t0
    print(f"in process (all seeds in one batch, one thread): {t_here:.1f} s")

    t0 = time.perf_counter()
    with distributed.LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
         distributed.Client(cluster) as client:
        client.wait_for_workers(a.workers, timeout=300)
        client.run(__import__, f"entropic_bound.{a.table}")                 # the imports every worker pays once
        t_start = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as out, distributed.get_task_stream(client) as stream:
            t0 = time.perf_counter()
            backend = DaskBackend(client, out, reuse=False, seeds_per_unit=a.seeds_per_unit)
            n_units = len(units(exp, settings, seeds, groups=backend.seed_groups(seeds)))
            print(f"{a.table}, preset {a.preset}, {a.seeds} seeds: {n_units} units")
            there = run_experiments([a.table], out, a.preset, seeds, "cpu", backend, force=True, progress=False)[0]
            t_there = time.perf_counter() - t0
            counts = backend.unit_counts[a.table]
    unit_s = sorted(sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
                    for task in stream.data if str(task["key"]).startswith(f"{a.table}-"))
    assert counts == dict(reused=0, computed=n_units) and len(unit_s) == n_units, (counts, len(unit_s))
    assert there["claims"] == [c.record() for c in here.claims], "the cluster's claims differ"
    print(f"LocalCluster, {a.workers} workers x 1 thread: start-up {t_start:.1f} s, run {t_there:.1f} s")
    print(f"per-unit compute on a worker: mean {sum(unit_s) / len(unit_s):.2f} s, min {unit_s[0]:.2f} s, max {unit_s[-1]:.2f} s")
    print(f"in process per seed: {t_here / a.seeds:.2f} s")
    print(f"speed-up, cluster run against in process: {t_here / t_there:.2f}x ({t_here / (t_there + t_start):.2f}x with start-up)")
    print(f"identical claims: yes · load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
