"""Do the verdicts survive new seeds? The quick preset on seeds the stored reference never saw (default 3-8), claim by claim
beside the reference's verdicts (seeds 0-2, entropic_bound/data/reference_quick.json).

    python benchmarks/seed_stability.py [--seeds 3-8] [--jobs N] [--out DIR]

Writes benchmarks/seed_claims.json (the claim records of that run, with its seeds, and the reference's verdict, margin and critical
value per claim); tests/test_seed_stability.py checks that the stored run covers every claim of the reference, and
scripts/make_figures.py quotes from it the claims whose verdict differs between the two seed sets (seed-fragile) and every claim
whose margin is within 3 standard errors on either set (report.thin_margins, the table at the end of nbs/22_report.ipynb), with
both margins, on the front page and in the README.
"""
import argparse
import datetime
import json
import tempfile
from pathlib import Path

from _commit import head_commit
from entropic_bound.cli import reference_verdicts
from entropic_bound.experiment import shelf
from entropic_bound.policy import tune_allocator
from entropic_bound.reproduce import default_jobs, reproduce

STORED = Path(__file__).parent / "seed_claims.json"


def seed_range(text: str) -> list:
    "'3-8' -> [3, ..., 8]; '3,5,9' -> [3, 5, 9]."
    if "-" in text:
        lo, hi = (int(t) for t in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(t) for t in text.split(",")]


def reference_by_claim() -> dict:
    "The stored reference's verdict, margin and critical value per claim id (seeds 0-2), as the stored runs record it beside their own."
    ref, margin, critical = reference_verdicts(), reference_verdicts("margin"), reference_verdicts("critical")
    return {i: dict(verdict=v, margin=margin.get(i), critical=critical.get(i)) for i, v in ref.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="3-8", help="seeds of the new run (default 3-8)")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--out", default=None, help="keep the run's outputs here and reuse the tables a run there already finished "
                   "with the same code (default: a temporary directory, every table measured)")
    a = p.parse_args()
    seeds = seed_range(a.seeds)
    tune_allocator()
    jobs = default_jobs(shelf("paper")) if a.jobs is None else a.jobs
    with tempfile.TemporaryDirectory() as tmp:
        claims = reproduce(Path(a.out or tmp), "quick", seeds, "cpu", force=a.out is None, progress=False, jobs=jobs)
    reference = reference_by_claim()
    ref, ref_margin, ref_critical = ({i: r[k] for i, r in reference.items() if r[k] is not None} for k in ("verdict", "margin", "critical"))
    STORED.write_text(json.dumps(dict(preset="quick", seeds=seeds, date=datetime.date.today().isoformat(), commit=head_commit(),
                                      reference_seeds=[0, 1, 2], reference=reference, claims=claims), indent=1) + "\n")
    print(f"quick preset, seeds {seeds[0]}-{seeds[-1]} beside the reference's seeds 0-2 (margins in pooled standard errors, then the critical value):")
    print(f"{'claim':40s} {'seeds 0-2':>20s} {'new seeds':>20s}")
    for c in claims:
        mark = "" if c["verdict"] == ref.get(c["id"]) else "   <- differs"
        crit = lambda v: "inf" if v is None else f"{v:.2f}"
        print(f"{c['id']:40s} {ref.get(c['id'], '-'):>13s} {ref_margin.get(c['id'], float('nan')):+8.2g} ±{crit(ref_critical.get(c['id'])):5s} "
              f"{c['verdict']:>13s} {c['margin']:+8.2g} ±{crit(c.get('critical')):5s}{mark}")
    differ = [c["id"] for c in claims if c["verdict"] != ref.get(c["id"])]
    print(f"{len(claims) - len(differ)} of {len(claims)} verdicts as on seeds 0-2; differ: {', '.join(differ) or 'none'}")
    print(f"claim records written to {STORED}")


if __name__ == "__main__":
    main()
