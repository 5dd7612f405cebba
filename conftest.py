"""Test-suite glue: notebooks run as tests through nbval, the way `nbdev_test` would run them.

* nbdev_clean stores every ``execution_count`` as null, and nbval treats a null count with stored
  outputs as an error ("Unrun reference cell has outputs"). Committed notebooks *are* run, so the
  count is restored in memory before the cell runs.
* Cells carrying one of nbdev's test flags (``tst_flags`` in settings.ini, e.g. ``#| slow``) are
  skipped, exactly as ``nbdev_test`` skips them; ``--flags slow`` runs them too.
"""
import configparser
import re
from pathlib import Path

import pytest

_ROOT = Path(__file__).parent
_cfg = configparser.ConfigParser()
_cfg.read(_ROOT / "settings.ini")
TST_FLAGS = set(_cfg["DEFAULT"].get("tst_flags", "").split())
_DIRECTIVE = re.compile(r"^\s*#\s*\|\s*([\w-]+)\s*$")


def pytest_addoption(parser):
    parser.addoption("--flags", default="", help="space-separated nbdev test flags whose cells should run (e.g. 'slow')")


def _cell_flags(source: str) -> set:
    "nbdev directives of a cell that are bare words (like `#| slow`)."
    return {m.group(1) for line in source.splitlines() if (m := _DIRECTIVE.match(line))}


def pytest_collection_modifyitems(config, items):
    wanted = set(config.getoption("--flags").split())
    for i, item in enumerate(items):
        cell = getattr(item, "cell", None)
        if cell is None:
            continue
        if cell.get("execution_count") is None:
            cell["execution_count"] = i + 1
        skipped = (_cell_flags(cell.get("source", "")) & TST_FLAGS) - wanted
        if skipped:
            item.add_marker(pytest.mark.skip(reason=f"nbdev test flag: {', '.join(sorted(skipped))}"))
