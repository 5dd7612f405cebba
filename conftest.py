"""Test-suite glue: notebooks run as tests through nbval, the way `nbdev_test` would run them.

* nbdev_clean stores every ``execution_count`` as null, and nbval treats a null count with stored
  outputs as an error ("Unrun reference cell has outputs"). Committed notebooks *are* run, so the
  count is restored in memory before the cell runs.
* Cells carrying one of nbdev's test flags (``tst_flags`` in settings.ini, e.g. ``#| slow``) are
  skipped, exactly as ``nbdev_test`` skips them; ``--flags slow`` runs them too.
* The heavy notebooks (``SLOW_NOTEBOOKS``: the table experiments, real checkpoints, a Dask cluster) and the heavy
  test files (``pytestmark = pytest.mark.slow``) carry the ``slow`` marker: the README's test command and CI run them,
  ``pytest -m "not slow"`` leaves them out for a quick local check.
"""
import configparser
import os
import re
from pathlib import Path

import pytest

_ROOT = Path(__file__).parent
_cfg = configparser.ConfigParser()
_cfg.read(_ROOT / "settings.ini")
TST_FLAGS = set(_cfg["DEFAULT"].get("tst_flags", "").split())
SLOW_NOTEBOOKS = {"09_real_heads", "09b_decoders", "11_compress", "24_checkpoints", "31_table1", "32_table2", "33_table3", "34_table4", "35_table5",
                  "36_table6", "36b_table6_decoder", "37_audit_run", "11b_sliced", "11c_key_cache", "11d_key_cache_runtime", "11e_key_bits", "91_cluster"}
_DIRECTIVE = re.compile(r"^\s*#\s*\|\s*([\w-]+)\s*$")


MAX_WORKERS = 8   # `-n auto`'s ceiling: every worker starts notebook kernels and loads models of its own


def pytest_xdist_auto_num_workers(config):
    "`-n auto` (pytest.ini): one worker per core this process may use (its affinity mask, capped by a container's CPU quota, as the engine counts them), at most `MAX_WORKERS`."
    from entropic_bound.policy import engine_threads
    return max(1, min(engine_threads(), MAX_WORKERS))


def pytest_configure(config):
    """Under pytest-xdist (`-n N`), each worker process takes its own share of this process's cores (its affinity mask):
    the notebook kernels it starts and the engine's threads inherit it, so N workers never run more threads than there
    are cores (two workers on a 2-core machine: one core each, instead of two threads each on the same two cores)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"): return
    cores, n, i = sorted(os.sched_getaffinity(0)), int(count), int(worker.removeprefix("gw"))
    if len(cores) < n: return                                   # fewer cores than workers: leave the scheduler to share them
    os.sched_setaffinity(0, cores[i::n])


def pytest_addoption(parser):
    parser.addoption("--flags", default="", help="space-separated nbdev test flags whose cells should run (e.g. 'slow')")


def _cell_flags(source: str) -> set:
    "nbdev directives of a cell that are bare words (like `#| slow`)."
    return {m.group(1) for line in source.splitlines() if (m := _DIRECTIVE.match(line))}


HEAVY_FIRST = ("11e_key_bits", "36b_table6_decoder", "36_table6", "09b_decoders")   # the longest notebooks, collected first so that under -n they start at once
                                                                                     # (pytest.ini's --no-loadscope-reorder keeps this order for xdist)


def pytest_collection_modifyitems(config, items):
    wanted = set(config.getoption("--flags").split())
    first = lambda item: (HEAVY_FIRST.index(s) if (s := Path(str(getattr(item, "path", item.fspath))).stem) in HEAVY_FIRST else len(HEAVY_FIRST))
    items.sort(key=first)                                    # stable: every file keeps its items in order
    for item in items:
        if Path(str(getattr(item, "path", item.fspath))).stem in SLOW_NOTEBOOKS: item.add_marker(pytest.mark.slow)
    for i, item in enumerate(items):
        cell = getattr(item, "cell", None)
        if cell is None:
            continue
        if cell.get("execution_count") is None:
            cell["execution_count"] = i + 1
        skipped = (_cell_flags(cell.get("source", "")) & TST_FLAGS) - wanted
        if skipped:
            item.add_marker(pytest.mark.skip(reason=f"nbdev test flag: {', '.join(sorted(skipped))}"))


# ---- tests/: stand-in experiments for the reproduce bookkeeping ------------------------------------------------------

FAKE_EXPERIMENTS = '''
"""Two tiny stand-in experiments, fake1 and fake2, registered in place of the paper's tables.

Environment: FAKE_DIE_IN=<name> kills the measuring process inside that experiment (exit status 9);
FAKE_HANG_IN=<name> prints READY and sleeps there for a minute (to be interrupted).
"""
import os
import time
from dataclasses import dataclass

from entropic_bound.experiment import Experiment
from entropic_bound.report import ExperimentResult, claim_over_seeds

CALLS = []                                                  # names of the experiments measured in this process


@dataclass(frozen=True)
class FakeSettings:
    scale: float = 1.0


class Fake(Experiment):
    Settings, presets = FakeSettings, {"quick": {}, "paper": dict(scale=2.0)}

    def __init__(self, name): self.name, self.section, self.title = name, "§0", f"{name} stand-in"

    def measure(self, s, part, seeds, device="cpu", progress=None):
        CALLS.append(self.name)
        if os.environ.get("FAKE_DIE_IN") == self.name: os._exit(9)          # a kill in the middle of the run
        if os.environ.get("FAKE_HANG_IN") == self.name: print("READY", flush=True); time.sleep(60)
        return {x: s.scale * (x + 1) for x in seeds}

    def summarise(self, s, units):
        vals = list(units["main"].values())
        return ExperimentResult(self.name, [dict(seed=x, value=v) for x, v in units["main"].items()],
                                [claim_over_seeds(f"{self.name}.c", "§0", "value is positive", vals, 0.0, ">=",
                                                  control=("the same value negated", [-v for v in vals]), removes="the sign")])


fake1, fake2 = Fake("fake1"), Fake("fake2")
'''


@pytest.fixture
def fake_experiments(tmp_path, monkeypatch):
    """The module `fake_experiments` (source: FAKE_EXPERIMENTS), written to `tmp_path` so that subprocesses can import it
    with `tmp_path` on their path; imported afresh here and registered as experiments fake1 and fake2 for this test."""
    import importlib.util
    import sys
    from entropic_bound import reproduce as rp
    path = tmp_path / "fake_experiments.py"
    path.write_text(FAKE_EXPERIMENTS)
    spec = importlib.util.spec_from_file_location("fake_experiments", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fake_experiments", module)
    spec.loader.exec_module(module)
    for name in ("fake1", "fake2"):
        monkeypatch.setitem(rp.EXPERIMENTS, name, f"fake_experiments:{name}")
    return module


@pytest.fixture(scope="session")
def kept_runs():
    """Output folders of runs the tests made, by a name for the run: a later test of the same run (same model, text, settings and
    code) starts from a copy of their `.records` (`reuse_run`), so the runner summarises the units kept there instead of measuring
    them again. The first test to make a run measures it; a test that runs alone measures it too."""
    return {}


def reuse_run(kept: dict, name: str, out):
    "Before a run named `name` into `out`: copy the records a test's earlier run of it kept, if any; `out` is then the one kept."
    import shutil
    if name in kept and (Path(kept[name]) / ".records").is_dir(): shutil.copytree(Path(kept[name]) / ".records", Path(out) / ".records")
    kept[name] = out
