"""How often each verdict of the quick preset holds on other seeds.

Reruns the paper's tables (quick preset) on further triples of seeds — (3, 4, 5), (6, 7, 8), … — and reports, per claim, the verdict the stored
reference documents for seeds 0–2, the verdict on each further triple, the margin on each, and the share of triples that agree with the
reference. A claim whose verdict differs on some triple is seed-fragile; its margins say by how much.

    python benchmarks/seed_stability.py [--triples 2] [--tables table1 table2 ...] [--out benchmarks/seed_stability.json]
"""
import argparse
import json
import sys
import time
from pathlib import Path

from entropic_bound.experiment import experiment, run, shelf, load_reference

ROOT = Path(__file__).resolve().parents[1]


def reference_claims(name: str) -> dict:
    "claim id -> (verdict, margin) of the stored quick reference (seeds 0, 1, 2) of table `name`."
    values = load_reference(name)["values"]
    ids = {p.split("/")[1] for p in values if p.startswith("claims/")}
    return {i: (values[f"claims/{i}/verdict"], values[f"claims/{i}/margin"]) for i in ids}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--triples", type=int, default=2, help="further seed triples to run, from (3, 4, 5) on (default 2)")
    p.add_argument("--tables", nargs="*", default=None, help="tables to rerun (default: every table of the paper)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "seed_stability.json")
    a = p.parse_args(argv)
    triples = [tuple(range(3 + 3 * k, 6 + 3 * k)) for k in range(a.triples)]
    report, start = {}, time.time()
    for name in a.tables or shelf("paper"):
        exp, ref = experiment(name), reference_claims(name)
        runs = {seeds: {c.id: (c.verdict, c.margin) for c in run(exp, exp.settings("quick"), seeds=seeds).claims} for seeds in triples}
        for cid, (verdict, margin) in sorted(ref.items()):
            other = [runs[seeds].get(cid, ("missing", float("nan"))) for seeds in triples]
            agree = sum(v == verdict for v, _ in other)
            report[cid] = dict(reference=dict(seeds=[0, 1, 2], verdict=verdict, margin=margin),
                               triples=[dict(seeds=list(seeds), verdict=v, margin=m) for seeds, (v, m) in zip(triples, other)],
                               agree=f"{agree}/{len(triples)}", fragile=agree < len(triples))
            print(f"{cid:40s} {verdict:13s} {margin:+9.3g}  " + "  ".join(f"{v:13s} {m:+9.3g}" for v, m in other) + f"  agree {agree}/{len(triples)}", flush=True)
    a.out.write_text(json.dumps(dict(preset="quick", triples=[list(t) for t in triples], seconds=round(time.time() - start, 1), claims=report),
                                indent=1, ensure_ascii=False) + "\n")
    fragile = [c for c, r in report.items() if r["fragile"]]
    print(f"{len(fragile)} of {len(report)} claims seed-fragile: {', '.join(fragile) or 'none'}  (wrote {a.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
