"""`entropic-bound reproduce --scheduler`: the units of every experiment on a Dask cluster of two local worker
processes give the same files as the in-process run; a worker killed in the middle of a run costs nothing but
time; a command killed in the middle of a run is resumed unit by unit; and the errors a user meets (no Dask, a
scheduler that cannot be reached) are one line and exit status 2. Tiny sizes: the `smoke` preset."""
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.slow          # heavy: deselect with pytest -m "not slow"

pytest.importorskip("dask", reason="needs the [cluster] extra: pip install 'entropic_bound[cluster]'")
distributed = pytest.importorskip("distributed", reason="needs the [cluster] extra: pip install 'entropic_bound[cluster]'")

from entropic_bound.cli import main  # noqa: E402
from entropic_bound.cluster import ClusterError, DaskBackend, dask_backend  # noqa: E402
from entropic_bound.experiment import shelf, experiment, units  # noqa: E402
from entropic_bound.reproduce import reproduce  # noqa: E402

WAIT = 120                                   # seconds: the longest any wait of this file may take
SEEDS = [0, 1]
FILES = [f"{name}.csv" for name in shelf("paper")] + ["claims.json", "summary.md"]
KILL_SEEDS = list(range(6))                  # Table 4 for the kill tests: six units of about a second each
CLI = [sys.executable, "-c", "import sys; from entropic_bound.cli import main; sys.exit(main(sys.argv[1:]))"]


def _wait(condition, what: str, timeout: float = WAIT, every: float = 0.02):
    "Poll `condition()` until it is true; fail naming `what` after `timeout` seconds."
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline: pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def _recorded(out, name: str) -> list:
    return sorted((out / ".units" / name).glob("*.pkl")) if (out / ".units" / name).is_dir() else []


@pytest.fixture(scope="module")
def cluster():
    "A LocalCluster of two single-threaded worker processes, and a client to watch it."
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
         distributed.Client(c, timeout=WAIT) as client:
        client.wait_for_workers(2, timeout=WAIT)
        yield c, client


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    "Every experiment at the smoke preset, in this process: the reference."
    out = tmp_path_factory.mktemp("in_process")
    reproduce(out, "smoke", seeds=SEEDS, progress=False)
    return out


@pytest.fixture(scope="module")
def table4_reference(tmp_path_factory):
    "Table 4 at the smoke preset on six seeds, in this process and uninterrupted."
    out = tmp_path_factory.mktemp("table4_reference")
    reproduce(out, "smoke", seeds=KILL_SEEDS, only=["table4"], progress=False)
    return out


def test_cluster_run_equals_in_process_run(cluster, in_process, tmp_path):
    c, _ = cluster
    out = tmp_path / "cluster"
    reproduce(out, "smoke", seeds=SEEDS, progress=False, scheduler=c.scheduler_address)
    for f in FILES:
        assert (out / f).read_bytes() == (in_process / f).read_bytes(), f"{f} differs between the cluster and the in-process run"
    for name in shelf("paper"):
        exp = experiment(name)
        expected = len(units(exp, exp.settings("smoke"), SEEDS, groups=DaskBackend(cluster[1], tmp_path).seed_groups(SEEDS)))
        assert json.loads((out / ".records" / f"{name}.json").read_text())["units"] == dict(reused=0, computed=expected)
    # every unit was kept on disk as it arrived, and its file went once its experiment's record was written (the record keeps them all)
    assert not (out / ".units").exists() and not (in_process / ".units").exists()
    # a second run reuses every experiment; with --force it measures every unit again, with the same result
    reproduce(out, "smoke", seeds=SEEDS, progress=False, scheduler=c.scheduler_address, force=True, only=["table1"])
    assert json.loads((out / ".records" / "table1.json").read_text())["units"] == dict(reused=0, computed=len(SEEDS))
    assert (out / "table1.csv").read_bytes() == (in_process / "table1.csv").read_bytes()


def test_killed_worker_unit_is_recomputed(cluster, table4_reference, tmp_path):
    c, client = cluster
    out, box = tmp_path / "killed", {}

    def go():
        try: box["claims"] = reproduce(out, "smoke", seeds=KILL_SEEDS, only=["table4"], progress=False, scheduler=c.scheduler_address,
                                       seeds_per_unit=1)
        except BaseException as e: box["error"] = e

    pids = client.run(os.getpid)                                       # worker address -> process id
    run = threading.Thread(target=go, daemon=True); run.start()
    busy = []
    def a_worker_is_measuring():
        busy[:] = [w for w, keys in client.processing().items() if any(str(k).startswith("table4-") for k in keys)]
        assert run.is_alive(), f"the run ended before a worker could be killed: {box}"
        return bool(busy)
    _wait(a_worker_is_measuring, "a worker measuring a unit")
    os.kill(pids[busy[0]], signal.SIGKILL)                             # mid-unit: the unit is lost with its worker
    run.join(WAIT)
    assert not run.is_alive(), "the run did not finish after the kill"
    assert "error" not in box, box.get("error")
    assert busy[0] not in client.scheduler_info()["workers"]           # the killed worker is gone
    for f in ("table4.csv", "claims.json", "summary.md"):
        assert (out / f).read_bytes() == (table4_reference / f).read_bytes(), f"{f} differs from the uninterrupted run"
    assert json.loads((out / ".records" / "table4.json").read_text())["units"]["computed"] == len(KILL_SEEDS)
    assert not (out / ".units").exists()                               # the unit files went with the record written
    client.wait_for_workers(2, timeout=WAIT)                           # its nanny started a new one


def test_killed_command_resumes_unit_by_unit(cluster, table4_reference, tmp_path):
    c, client = cluster
    out = tmp_path / "resumed"
    args = ["reproduce", "--preset", "smoke", "--seeds", str(len(KILL_SEEDS)), "--only", "table4", "--out", str(out),
            "--no-progress", "--scheduler", c.scheduler_address, "--seeds-per-unit", "1"]
    proc = subprocess.Popen(CLI + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: len(_recorded(out, "table4")) >= 2 or proc.poll() is not None, "two recorded units")
    finally:
        proc.kill(); proc.wait(WAIT)
    kept = len(_recorded(out, "table4"))
    assert 2 <= kept < len(KILL_SEEDS), f"the command was to be killed mid-run; {kept} units were recorded"
    assert not (out / "table4.csv").exists()
    for unit in (out / ".units").rglob("*.pkl"): pickle.loads(unit.read_bytes())   # nothing half-written: a kill inside a write leaves its temporary file only
    client.wait_for_workers(2, timeout=WAIT)
    reproduce(out, "smoke", seeds=KILL_SEEDS, only=["table4"], progress=False, scheduler=c.scheduler_address, seeds_per_unit=1)
    counts = json.loads((out / ".records" / "table4.json").read_text())["units"]
    assert counts["reused"] >= kept and counts["reused"] + counts["computed"] == len(KILL_SEEDS), counts
    assert not (out / ".units").exists()                               # the units went with the record, and any temporary file with them
    for f in ("table4.csv", "claims.json", "summary.md"):
        assert (out / f).read_bytes() == (table4_reference / f).read_bytes(), f"{f} differs from the uninterrupted run"


def test_unreachable_scheduler_is_one_line_and_exit_2(tmp_path, capsys):
    rc = main(["reproduce", "--preset", "smoke", "--only", "table1", "--out", str(tmp_path / "out"), "--no-progress",
               "--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "tcp://127.0.0.1:9" in err and "1 s" in err, err


def test_missing_dask_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)             # as if Dask were not installed
    code = main(["reproduce", "--preset", "smoke", "--out", str(tmp_path), "--scheduler", "local"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "entropic_bound[cluster]" in err, err
    with pytest.raises(ClusterError, match=r"entropic_bound\[cluster\]"):
        with dask_backend("local:1", tmp_path): pass
    assert os.listdir(tmp_path) == []


def test_in_process_run_imports_no_dask(tmp_path):
    code = ("import sys; from entropic_bound.cli import main; "
            f"rc = main(['reproduce', '--preset', 'smoke', '--only', 'table1', '--seeds', '1', '--out', {str(tmp_path)!r}, '--no-progress']); "
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')); "
            "assert not loaded, loaded; assert rc in (0, 1), rc")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "claims.json").exists() and not (tmp_path / ".units").exists()
