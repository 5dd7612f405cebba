"""`entropic-bound reproduce --jobs N`: the units of every experiment measured on N worker processes of this machine
give the same files as the run in one process with the same engine threads per model batch; a second run reuses
every experiment; bad `--jobs` values are one line and exit status 2. Tiny sizes: the `smoke` preset."""
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import pytest

from entropic_bound.cli import main
from entropic_bound.experiment import InProcess, ProcessPool, run_experiments, shelf
from entropic_bound.reproduce import default_jobs, reproduce
from entropic_bound.policy import engine_threads, set_engine_threads

SEEDS = [0, 1]
JOBS = 2
FILES = [f"{name}.csv" for name in shelf("paper")] + ["claims.json", "summary.md"]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    "Every experiment at the smoke preset in this process, its engine on the threads each of the JOBS workers gets."
    out = tmp_path_factory.mktemp("one_process")
    before = set_engine_threads(max(1, engine_threads() // JOBS))
    try: reproduce(out, "smoke", seeds=SEEDS, progress=False)
    finally: set_engine_threads(before)
    return out


def test_jobs_run_equals_one_process_run(one_process, tmp_path):
    out = tmp_path / "jobs"
    claims = reproduce(out, "smoke", seeds=SEEDS, progress=False, jobs=JOBS)
    for f in FILES:
        assert (out / f).read_bytes() == (one_process / f).read_bytes(), f"{f} differs between --jobs {JOBS} and one process"
    assert claims == json.loads((one_process / "claims.json").read_text())
    records = {n: json.loads((out / ".records" / f"{n}.json").read_text()) for n in shelf("paper")}
    assert all(not r["reused"] and r["seconds"] > 0 for r in records.values())
    # a second run finds every experiment up to date and measures nothing
    reproduce(out, "smoke", seeds=SEEDS, progress=False, jobs=JOBS)
    for n in shelf("paper"):
        assert json.loads((out / ".records" / f"{n}.json").read_text())["seconds"] == records[n]["seconds"], n


def test_default_jobs(tmp_path):
    assert default_jobs(list(shelf("paper"))) == max(1, min(engine_threads(), len(shelf("paper"))))
    assert default_jobs(["table1"]) == 1
    assert default_jobs(list(shelf("paper")), device="cuda") == default_jobs(list(shelf("paper")))   # the estimator tables use the CPU beside a GPU
    assert default_jobs(list(shelf("paper")), scheduler="local") == 1
    with pytest.raises(ValueError, match="positive integer"): reproduce(tmp_path / "out", "smoke", jobs=0)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [["--jobs", "0"], ["--jobs", "2", "--scheduler", "local:2"]])
def test_bad_jobs_exit_2(tmp_path, capsys, extra):
    code = main(["reproduce", "--preset", "smoke", "--out", str(tmp_path / "out"), "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--jobs" in err, err
    assert not (tmp_path / "out").exists()


def _per_seed(base):
    "The backend class `base` with one seed per unit, counting the jobs it is given; `stop_after`: a Ctrl-C once that many units are in."
    class PerSeed(base):
        def __init__(self, *args, stop_after: int | None = None):
            super().__init__(*args); self.stop_after, self.given = stop_after, []
        def seed_groups(self, seeds): return [(s,) for s in seeds]
        def measure(self, jobs):
            self.given += jobs
            for i, done in enumerate(super().measure(jobs)):
                if i == self.stop_after: raise KeyboardInterrupt
                yield done
    return PerSeed


_PerSeedPool, _PerSeedHere = _per_seed(ProcessPool), _per_seed(InProcess)


def test_ctrl_c_keeps_finished_units_of_a_jobs_run(tmp_path):
    "Ctrl-C in a --jobs run keeps every unit that came back (under .units/); the rerun measures only the others and writes the same table."
    seeds = (0, 1, 2)                                                      # Table 4 at smoke: three units of a second or less
    run_experiments(["table4"], tmp_path / "whole", "smoke", seeds, backend=InProcess(), progress=False)
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt): run_experiments(["table4"], out, "smoke", seeds, backend=_PerSeedPool(JOBS, stop_after=1), progress=False)
    kept = sorted((out / ".units" / "table4").glob("*.pkl"))
    assert len(kept) == 1 and not (out / "table4.csv").exists(), kept
    again = _PerSeedPool(JOBS)
    run_experiments(["table4"], out, "smoke", seeds, backend=again, progress=False)
    assert sorted(j.unit.seeds for j in again.given) == [s for s in [(0,), (1,), (2,)] if s[0] not in
                                                          {int(p.name.split("-")[1][4:]) for p in kept}]   # only the two missing units
    assert (out / "table4.csv").read_bytes() == (tmp_path / "whole" / "table4.csv").read_bytes()
    assert not (out / ".units").exists()                                  # gone with the record written


@pytest.mark.parametrize("when", ["workers starting", "a unit landed"])
def test_ctrl_c_in_a_jobs_run_is_one_line(when, tmp_path):
    """Ctrl-C to the whole process group of a --jobs 2 run, while the workers are still importing or once a unit has landed: the parent's one
    line (naming the units kept) and exit 130, no worker traceback, no leaked semaphore of a worker stopped mid-unit."""
    cli = [sys.executable, "-c", "import sys; from entropic_bound.cli import main; sys.exit(main(sys.argv[1:]))"]
    out = tmp_path / "o"
    p = subprocess.Popen(cli + ["reproduce", "--preset", "smoke", "--seeds", "1", "--only", "table2", "--jobs", "2", "--out", str(out), "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # a suite started in the background inherits SIGINT ignored
    def parent_hears_ctrl_c():                   # SIGINT not ignored: the few milliseconds of spawning, the one moment it is, are over
        try: return not int(Path(f"/proc/{p.pid}/status").read_text().split("SigIgn:")[1].split()[0], 16) & (1 << (signal.SIGINT - 1))
        except (OSError, IndexError): return False
    workers = lambda: len(subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()) >= 4   # parent, 2 workers, tracker
    ready = ((lambda: workers() and parent_hears_ctrl_c()) if when == "workers starting"
             else lambda: any((out / ".units" / "table2").glob("*.pkl")))                                         # table2: three units
    deadline = time.monotonic() + 120
    while not ready():
        assert p.poll() is None and time.monotonic() < deadline, f"never reached: {when}"
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130 and err.count("\n") == 1 and "Traceback" not in err and "leaked" not in err, err
    if when == "a unit landed": assert "finished unit" in err and "of table2" in err, err


def test_an_unreadable_kept_unit_is_measured_again(tmp_path):
    "A unit file a stopped run left unreadable is measured again and replaced, and the table is the uninterrupted run's."
    run_experiments(["table4"], tmp_path / "whole", "smoke", (0, 1), backend=_PerSeedHere(), progress=False)
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt): run_experiments(["table4"], out, "smoke", (0, 1), backend=_PerSeedHere(stop_after=1), progress=False)
    kept, = (out / ".units" / "table4").glob("*.pkl")
    kept.write_bytes(b"cut sh")
    again = _PerSeedHere(stop_after=1)                                     # a Ctrl-C once the broken unit is measured again
    with pytest.raises(KeyboardInterrupt): run_experiments(["table4"], out, "smoke", (0, 1), backend=again, progress=False)
    assert len(again.given) == 2 and (not kept.exists() or kept.read_bytes() != b"cut sh"), again.given   # measured again; the broken file not kept
    (kept.parent / f".{kept.name}.x1y2.tmp").write_bytes(b"cut")           # the temporary file of a write a kill cut short
    run_experiments(["table4"], out, "smoke", (0, 1), backend=_PerSeedHere(), progress=False)
    assert (out / "table4.csv").read_bytes() == (tmp_path / "whole" / "table4.csv").read_bytes()
    assert not (out / ".units").exists()                                   # every unit file, and that temporary file, gone with the record


WORKER = """
import atexit, os, signal, sys, time
when = sys.argv[1]
if when == "exit": atexit.register(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.2)))   # a stop during an earlier exit hook
from entropic_bound.experiment import _pool_init
_pool_init(1)
if when == "work":
    try: os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)
    finally: os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.2)                     # a second stop while the first unwinds
"""


@pytest.mark.parametrize("when, status", [("work", 128 + signal.SIGTERM), ("exit", 0)])
def test_a_pool_worker_stops_once_and_quietly(when, status):
    "The parent's stop ends a worker as an exit does, once (exit 143, no traceback); a stop during the worker's own exit hooks is ignored."
    r = subprocess.run([sys.executable, "-c", WORKER, when], capture_output=True, text=True, timeout=120)
    assert r.returncode == status and "Traceback" not in r.stderr, r.stderr[-2000:]
