"""The one reader of the commit a benchmark record names (the scripts here run as `python benchmarks/X.py`, so this folder is on the path)."""
import subprocess
from pathlib import Path


def head_commit() -> str | None:
    "The short hash of this checkout's HEAD, or None outside a git checkout."
    try: out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    except OSError: return None
    return out or None
