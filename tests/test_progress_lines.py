"""Progress is readable in a log: with stderr a pipe (not a terminal), long runs print one plain line per unit of real work —
no carriage returns, no bar — and say when a result is reused."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=900)


def _plain(err: str):
    assert "\r" not in err and "\x1b[" not in err, "a bar's control characters in a log"


def test_progress_bar_prints_lines_to_a_pipe(tmp_path):
    got = _run("from entropic_bound.policy import progress_bar\n"
               "for x in progress_bar(range(3), desc='demo', unit='step'): pass\n"
               "for x in progress_bar(range(5), desc='inner', lines=False): pass\n"
               "for x in progress_bar(range(2), desc='hidden', show=False): pass\n", tmp_path)
    assert got.returncode == 0, got.stderr
    _plain(got.stderr)
    lines = got.stderr.splitlines()
    assert [l.split(" (")[0] for l in lines] == ["demo: 1/3 step", "demo: 2/3 step", "demo: 3/3 step"], lines


def test_run_experiments_one_line_per_unit_and_reuse_said(tmp_path):
    code = ("from entropic_bound.experiment import run_experiments\n"
            "run_experiments(['table1'], 'out', 'smoke', seeds=(0, 1))\n")
    first = _run(code, tmp_path)
    assert first.returncode == 0, first.stderr
    _plain(first.stderr)
    units = [l for l in first.stderr.splitlines() if l.startswith("units: ")]
    assert units and all("table1/" in l for l in units), first.stderr
    assert units[-1].startswith(f"units: {len(units)}/{len(units)} unit"), units
    again = _run(code, tmp_path)
    assert again.returncode == 0, again.stderr
    assert [l for l in again.stderr.splitlines() if "reused" in l] == \
        ["table1: reused, its record under out is up to date (--force measures it again)"], again.stderr
    assert not [l for l in again.stderr.splitlines() if l.startswith("units: ")]


@pytest.mark.slow
def test_audit_one_line_per_layer(tmp_path):
    pytest.importorskip("transformers")
    code = ("from entropic_bound.audit_run import run_audit\n"
            "run_audit(out='audit', max_sequences=4, n_curves=1, progress=True, log=lambda s: None)\n")
    got = _run(code, tmp_path)
    assert got.returncode == 0, got.stderr
    _plain(got.stderr)
    steps = [l.split(" (")[0] for l in got.stderr.splitlines() if l.startswith("audit: ")]
    n = (len(steps) - 2) // 2                                       # inputs, the heads of each layer, curves, the matrices of each layer
    assert n >= 1 and len(steps) == 2 * n + 2, steps
    total = 2 * n + 2
    assert steps[0] == f"audit: 1/{total} step, attention inputs"
    assert [s.split(", ")[1] for s in steps[1:n + 1]] == [f"layer {l} heads" for l in range(n)]
    assert steps[n + 1].startswith(f"audit: {n + 2}/{total} step, error curves")
    assert steps[-1] == f"audit: {total}/{total} step, layer {n - 1} matrices"    # the layer table is on the bar, to its last step
