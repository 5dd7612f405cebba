"""What more seeds decide: the quick preset on the reference's seeds with the sequential design, `entropic-bound reproduce
--preset quick --seeds-up-to 12`, claim by claim beside the reference's one look at seeds 0-2.

    python benchmarks/sequential_design.py [--up-to 12] [--jobs N] [--out DIR] [--only table1,table2]

An experiment with an undecided empirical claim (or control) is measured on more seeds, on looks doubling from 3 up to the cap
(3 -> 6 -> 12), every look graded at the corrected level (`report.looks_confidence`), stopping once none is undecided; the others
keep their 3 seeds. Writes benchmarks/sequential_claims.json (the run's claim records, each with the seeds and looks it was graded
on, and the reference's verdict, margin and critical value per claim); tests/test_sequential_claims.py checks that it covers every
claim of the reference and that the design added seeds exactly where the reference leaves an empirical claim undecided, and
scripts/make_figures.py quotes what the added seeds decided on the front page and in the README.
"""
import argparse
import datetime
import json
import tempfile
from pathlib import Path

from _commit import head_commit
from seed_stability import reference_by_claim
from entropic_bound.experiment import REFERENCE_SEEDS, shelf
from entropic_bound.policy import tune_allocator
from entropic_bound.reproduce import default_jobs, reproduce

STORED = Path(__file__).parent / "sequential_claims.json"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--up-to", type=int, default=12, help="the sequential design's cap on seeds (default 12, the quick preset's)")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--out", default=None, help="keep the run's outputs here and reuse what a run there already finished with the same "
                   "code (default: a temporary directory, every table measured)")
    p.add_argument("--only", default=None, help="comma-separated tables (a trial: the stored record needs every table)")
    a = p.parse_args()
    tune_allocator()
    only = a.only.split(",") if a.only else None
    jobs = default_jobs(only or shelf("paper")) if a.jobs is None else a.jobs
    seeds = list(REFERENCE_SEEDS)
    with tempfile.TemporaryDirectory() as tmp:
        claims = reproduce(Path(a.out or tmp), "quick", seeds, "cpu", only=only, force=a.out is None, progress=False, jobs=jobs,
                           seeds_up_to=a.up_to)
    reference = reference_by_claim()
    ref, ref_margin, ref_critical = ({i: r[k] for i, r in reference.items() if r[k] is not None} for k in ("verdict", "margin", "critical"))
    print(f"quick preset, seeds {seeds[0]}-{seeds[-1]} and up to {a.up_to} where a claim is undecided, beside one look at seeds 0-2:")
    print(f"{'claim':40s} {'seeds 0-2':>20s} {'sequential':>20s} seeds looks")
    for c in claims:
        crit = lambda v: "inf" if v is None else f"{v:.2f}"
        print(f"{c['id']:40s} {ref.get(c['id'], '-'):>13s} {ref_margin.get(c['id'], float('nan')):+8.2g} ±{crit(ref_critical.get(c['id'])):5s} "
              f"{c['verdict']:>13s} {c['margin']:+8.2g} ±{crit(c.get('critical')):5s} {c['seeds']:5d} {c['looks']:5d}")
    if only:
        print("a trial on some tables: nothing stored")
        return
    STORED.write_text(json.dumps(dict(preset="quick", seeds=seeds, up_to=a.up_to, date=datetime.date.today().isoformat(), commit=head_commit(),
                                      reference=reference, claims=claims), indent=1) + "\n")
    print(f"claim records written to {STORED}")


if __name__ == "__main__":
    main()
