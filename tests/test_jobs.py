"""`entropic-bound reproduce --jobs N`: the units of every experiment measured on N worker processes of this machine
give the same files as the run in one process with the same engine threads per model batch; a second run reuses
every experiment; bad `--jobs` values are one line and exit status 2. Tiny sizes: the `smoke` preset."""
import json

import pytest

from entropic_bound.cli import main
from entropic_bound.experiment import shelf
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
