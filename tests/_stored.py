"""The one reader of a record a benchmark script stores in benchmarks/ (the test files here import it by name)."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def stored_record(name: str, how: str) -> dict:
    "benchmarks/`name`, read; a missing file fails the test with the command (`how`) that writes it."
    path = ROOT / "benchmarks" / name
    if not path.exists(): pytest.fail(f"{path.relative_to(ROOT)} is missing: run {how}")
    return json.loads(path.read_text())
