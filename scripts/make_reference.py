"""Write `entropic_bound/data/reference_quick.json`: the quick preset's cells (seeds 0, 1, 2) and their tolerances.

Every table notebook and CI's second-code-path check compare their results with this file (see `entropic_bound.experiment.check_reference`).
Rerun it when a change of code is meant to change the numbers:  python scripts/make_reference.py
"""
import json
import platform
import subprocess
import sys
from pathlib import Path

from entropic_bound import __version__
from entropic_bound.outputs import waiting_lock
from entropic_bound.experiment import shelf, REFERENCE_FILE, REFERENCE_SEEDS, experiment, reference_entry

ROOT = Path(__file__).resolve().parents[1]


def main(names=None) -> int:
    path = ROOT / "entropic_bound" / "data" / REFERENCE_FILE
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    entries = {}
    for name in names or shelf("paper"):
        exp = experiment(name)
        print(f"{name}: running the quick preset on seeds {REFERENCE_SEEDS} together and one by one", flush=True)
        entries[name] = reference_entry(exp, exp.settings("quick"), REFERENCE_SEEDS)
    with waiting_lock(path.with_suffix(".lock")):                       # several writers (one table each) read-modify-write in turn
        stored = json.loads(path.read_text()) if path.exists() else {"experiments": {}}
        stored.update(preset="quick", seeds=list(REFERENCE_SEEDS), version=__version__, commit=commit, machine=f"{platform.machine()} {platform.processor()}".strip())
        stored["experiments"] = dict(sorted((stored["experiments"] | entries).items()))
        path.write_text(json.dumps(stored, indent=0, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
