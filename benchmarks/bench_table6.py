"""Table 6 for both shipped models, as `entropic-bound compress` runs it (no export): every allocation rule at 25 / 50 / 75 %
of the query-key directions over three fit / held-out splits, fidelity on the held-out half of the shipped text and on the
Python documentation topics, the `t6.*` claims graded on the latter. MiniLM runs the quick preset, SmolLM2 the decoder
preset (`table6.TABLE6_PRESETS`). Writes benchmarks/table6.json — per model the time, what each fidelity averages over, the
rows, every claim's verdict and margin, and the one-sentence summary (`table6.table6_summary`) that the front page and
README quote through benchmarks/figures.json (scripts/make_figures.py). Nothing here is a test.

    python benchmarks/bench_table6.py [--models minilm,smollm2] [--out DIR]

`--out DIR` keeps each model's run in DIR/<model> (the runner's records): a second run with the same code reuses them, and the
time quoted is the one the measuring run recorded.
"""
import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _commit import head_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent


def one(model: str, out: Path) -> dict:
    "Table 6 of `model` through `run_compress` into `out`, summarised for table6.json."
    from entropic_bound.compress_run import run_compress
    from entropic_bound.table6 import table6_summary
    result = run_compress(out, model, export_model=False, progress=True, route="fold")   # Table 6 (a decoder's default route measures keys in bits instead)
    seconds = json.loads((out / ".records" / "table6.json").read_text())["seconds"]   # the measuring run's time, also when its record is reused
    keep = ("budget", "allocation", "order", "cosine", "cosine_min", "cosine_max", "other_cosine", "other_cosine_min", "other_cosine_max",
            "kl", "kl_min", "kl_max", "other_kl", "other_kl_min", "other_kl_max", "ppl_ratio", "other_ppl_ratio", "top1", "other_top1", "zero_rank_units")
    return dict(model=model, seconds=seconds, positions=result.extra["positions"][0],
                rows=[{k: r[k] for k in keep if k in r} for r in result.rows],
                claims=[dict(id=c.id, verdict=c.verdict, measured=c.measured, margin=c.margin, control_margin=c.control.margin) for c in result.claims],
                summary=table6_summary(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="minilm,smollm2", help="comma-separated shipped models (default minilm,smollm2)")
    ap.add_argument("--out", default=None, help="keep each model's run (and the runner's records) in OUT/<model>; default a temporary folder")
    a = ap.parse_args()
    base = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="table6-"))
    models = {m: one(m, base / m) for m in a.models.split(",")}
    for m, r in models.items(): print(f"{m}: {r['seconds']:.0f} s; {r['summary']}", flush=True)
    record = dict(models=models, seconds=sum(r["seconds"] for r in models.values()), date=time.strftime("%Y-%m-%d"),
                  commit=head_commit())
    (HERE / "table6.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {HERE / 'table6.json'}")


if __name__ == "__main__":
    main()
