"""Compare the records of `entropic-bound reproduce --preset quick` runs with the stored reference.

Usage: python scripts/check_reference.py DIR [DIR ...]
Each DIR is a reproduce output folder (quick preset, seeds 0, 1, 2); every experiment record in DIR/.records must
match `entropic_bound/data/reference_quick.json` cell by cell within the experiment's own spread over seeds
(`entropic_bound.experiment.check_reference`). Exits 1 naming every cell that does not.
"""
import json
import sys
from pathlib import Path

from entropic_bound.experiment import REFERENCE_SEEDS, check_reference


def check_dir(out: Path) -> list:
    records = sorted((out / ".records").glob("*.json"))
    if not records: return [f"{out}: no experiment records (run entropic-bound reproduce --preset quick --out {out})"]
    bad = []
    for path in records:
        record = json.loads(path.read_text())
        config = record["config"]
        if config["preset"] != "quick" or tuple(config["seeds"]) != REFERENCE_SEEDS:
            bad.append(f"{path}: made with preset {config['preset']!r}, seeds {config['seeds']}; the reference is the quick preset, seeds {list(REFERENCE_SEEDS)}")
            continue
        found = check_reference(record)
        print(f"{out.name}/{record['name']}: {'reproduces the reference' if not found else f'{len(found)} cells outside their spread over seeds'}")
        bad += [f"{record['name']}: {m}" for m in found]
    return bad


def main(dirs) -> int:
    if not dirs: print(__doc__); return 2
    bad = [m for d in dirs for m in check_dir(Path(d))]
    for m in bad: print("  " + m)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
