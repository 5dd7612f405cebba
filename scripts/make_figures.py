"""Write benchmarks/figures.json, the one source of every figure the prose quotes, and put those figures into the marked
spans of the front page (nbs/index.ipynb, hence README.md) and benchmarks/README.md.

Sources, each written by a script: the latest CPU run per preset in benchmarks/timings.json (benchmarks/bench_reproduce.py),
the latest GPU run there with benchmarks/gpu_check/ (benchmarks/gpu_check.sh's logs, the GPU's paper-preset claim records and the CPU's
stored ones of the same checkout),
the stored paper-preset claim records, benchmarks/paper_claims.json (the same script), what compression delivers,
benchmarks/payoff.json (bench_payoff.py), Table 6 of both shipped models, benchmarks/table6.json (bench_table6.py), and the
quick preset's verdicts on seeds the reference never saw, benchmarks/seed_claims.json (seed_stability.py). A span in the prose reads
`<!-- fig:KEY -->VALUE<!-- /fig -->`; `entropic-bound reproduce --help` reads figures.json when it is at hand.
Usage: python scripts/make_figures.py [--check]   (--check: fail, changing nothing, if a file is out of step)
After a change to nbs/index.ipynb, run scripts/make_readme.py.
"""
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
FIGURES = BENCH / "figures.json"
PROSE = [ROOT / "nbs" / "index.ipynb", BENCH / "README.md", ROOT / "README.md"]
SPAN = re.compile(r"<!-- fig:([a-z0-9_]+) -->(.*?)<!-- /fig -->", re.DOTALL)      # a span may hold a table (several lines)


def latest(runs: list, preset: str, device: str = "cpu") -> dict | None:
    "The last recorded run of `preset` on `device` ('cpu': the runs that name no device; 'cuda': a GPU's); None where there is no GPU run."
    found = [r for r in runs if r["preset"] == preset and r.get("device", "cpu").split()[0] == device]
    if not found and device == "cpu": sys.exit(f"make_figures: benchmarks/timings.json has no run of the {preset} preset: run benchmarks/bench_reproduce.py")
    return found[-1] if found else None


GPU_LOGS = BENCH / "gpu_check"


def gpu_figures(runs: list) -> dict:
    "The GPU check (gpu_check.sh): its device, the tests' summary line, the paper and quick presets' times, the engine ratio (from the logs the script wrote) and whether the GPU's paper-preset verdicts are the CPU's, claim by claim."
    paper, quick = latest(runs, "paper", "cuda"), latest(runs, "quick", "cuda")
    if paper is None: return {"gpu_check": "not yet recorded (`--device cuda` has not yet run on a GPU)", "gpu_run": "—", "gpu_engine": "not yet measured"}
    tests = (GPU_LOGS / "test_cuda.txt").read_text().strip().splitlines()[-1]
    engine = re.search(r"loop ([\d.]+) s, batched ([\d.]+) s, ratio ([\d.]+)x", (GPU_LOGS / "bench_reproduce.txt").read_text())
    gpu = {c["id"]: c["verdict"] for c in json.loads((GPU_LOGS / "paper_claims_cuda.json").read_text())["claims"]}
    cpu_claims = json.loads((GPU_LOGS / "paper_claims_cpu.json").read_text())["claims"]     # the CPU's stored records of the checkout the GPU ran
    same = sum(gpu.get(c["id"]) == c["verdict"] for c in cpu_claims)
    tables = ", ".join(f"{n} {t:.1f} s" for n, t in paper["tables_s"].items())
    text = (f"{paper['device']}, torch {paper['machine'].split('torch ')[-1]}: `tests/test_cuda.py` {tests}; paper preset {paper['total_s']:.1f} s "
            f"({tables}; target <= {GPU_TARGET} s: {'met' if paper['total_s'] <= GPU_TARGET else 'not met'}), {paper['claims_hold']} of {paper['claims']} claims hold, "
            f"{same} of {len(cpu_claims)} verdicts equal to the CPU's stored paper-preset run of the same commit; quick preset {quick['total_s']:.1f} s"
            + (f"; engine, 40 §4 models on the GPU both ways: loop {engine[1]} s, batched {engine[2]} s, {engine[3]}x" if engine else ""))
    return {"gpu_check": text, "gpu_run": f"{paper['date']}, commit {paper['commit'] or 'not recorded'}, --jobs {paper['jobs']}",
            "gpu_engine": f"{engine[3]}x (loop {engine[1]} s, batched {engine[2]} s)" if engine else "not recorded"}


sys.path.insert(0, str(BENCH))
from _targets import QUICK as QUICK_TARGET, PAPER as PAPER_TARGET, TABLE as TABLE_TARGET, GPU as GPU_TARGET, ENGINE as ENGINE_TARGET  # noqa: E402  (bench_reproduce.py's targets)


def paper_verdict(paper: dict) -> str:
    "The paper preset's run against its targets: in all, and its slowest table's worker time."
    name, sec = max(paper["tables_s"].items(), key=lambda kv: kv[1])
    return (f"target <= {PAPER_TARGET} s in all: {'met' if paper['total_s'] <= PAPER_TARGET else 'not met'}; slowest table {name}, {sec:.1f} s of worker time "
            f"(<= {TABLE_TARGET} s per table: {'met' if sec <= TABLE_TARGET else 'not met'}); {paper['claims_hold']} of {paper['claims']} claims held in that run")


def figures() -> dict:
    "The quoted figures and where each comes from."
    log = json.loads((BENCH / "timings.json").read_text())
    runs = log["runs"]
    paper, quick = latest(runs, "paper"), latest(runs, "quick")
    claims = json.loads((BENCH / "paper_claims.json").read_text())["claims"]
    empirical = [c for c in claims if c["kind"] == "empirical"]
    when = lambda r: f"{r['date']}, commit {r['commit'] or 'not recorded'}"
    quoted = {"paper_time": f"{paper['total_s']:.1f} s", "quick_time": f"{quick['total_s']:.1f} s",
              "paper_run": when(paper), "quick_run": when(quick), "machine": paper["machine"],
              "paper_claims": f"{sum(c['verdict'] == 'holds' for c in claims)} of {len(claims)}",
              "paper_empirical": f"{sum(c['verdict'] == 'holds' for c in empirical)} of {len(empirical)}",
              "paper_verdict": paper_verdict(paper), "quick_verdict": f"target <= {QUICK_TARGET} s: {'met' if quick['total_s'] <= QUICK_TARGET else 'not met'}"}
    sources = {"paper_time": paper["source"], "quick_time": quick["source"],
               "paper_claims": "benchmarks/paper_claims.json (bench_reproduce.py, paper preset, 5 seeds)",
               "gpu_check": "benchmarks/timings.json (runs naming a device) and benchmarks/gpu_check/ (gpu_check.sh's logs and claim records)"}
    quoted.update(gpu_figures(runs))
    quoted.update(side_by_side_figures(log.get("side_by_side", [])))
    quoted.update(engine_figures([r for r in log.get("engine", []) if r["device"] == "cpu"]))
    sources["engine"] = "benchmarks/timings.json, engine (bench_reproduce.py through bench_engine.py)"
    sources["quick_side_by_side"] = "benchmarks/timings.json, side_by_side (bench_reproduce.py --baseline)"
    for file, read, key, script in RECORDS:                      # the benchmarks that write one record each
        if (BENCH / file).exists():
            quoted.update(read(json.loads((BENCH / file).read_text())))
            sources[key] = f"benchmarks/{file} ({script})"
    fused = BENCH / "fused.json"
    f = json.loads(fused.read_text()) if fused.exists() else {}
    for table in ("table1", "table2"):
        if table in f:
            quoted.update(fused_figures(f[table], table))
            sources[f"fused_{table}"] = f"benchmarks/fused.json, {table} (bench_fused.py --only {table})"
    return {"about": "Generated by scripts/make_figures.py from benchmarks/timings.json, benchmarks/paper_claims.json, benchmarks/fused.json and "
                     + ", ".join(f"benchmarks/{file}" for file, *_ in RECORDS) + "; do not edit.",
            "quoted": quoted, "sources": sources}


def flops_figures(t: dict) -> dict:
    "The quick preset's training against its arithmetic floor (bench_flops.py): FLOPs counted per table, the GEMM rate measured in the same run, their ratio."
    tables = {k: v for k, v in t["tables"].items() if v["training_flops"] > 0}
    idle = [k for k, v in t["tables"].items() if v["training_flops"] == 0]
    g, tr = t["gemm"], t["training"]
    return {"flops": (f"{tr['flops'] / 1e9:.0f} GFLOP of training (" + ", ".join(f"{k} {v['training_flops'] / 1e9:.1f}" for k, v in tables.items())
                      + (f"; {', '.join(idle)} train nothing" if idle else "") + f"); fp32 GEMM {g['n']}x{g['n']} on {g['threads']} threads "
                      f"{g['gflops']:.1f} GFLOP/s, so a floor of {tr['floor_s']:.2f} s; training took {tr['seconds']:.1f} s, {tr['ratio']:.1f}x the floor ("
                      + ", ".join(f"{k} {v['ratio']:.1f}x" for k, v in tables.items()) + "); target <= 3x: " + ("met" if tr["ratio"] <= 3 else "not met")),
            "flops_run": f"{t['date']}, commit {t['commit']}, {t['machine']}"}


def smollm2_figures(t: dict) -> dict:
    "Where the SmolLM2 pages' time goes (one row of keys in bits against a plain forward) and what each cut buys against the commit it names (bench_smollm2_ci.py)."
    sp, cuts = t["split"], t["cuts"]
    cut = lambda name, c: f"{name} {c['before_s']:.3g} s -> {c['after_s']:.3g} s" + (f" ({c['ratio']:.2f})" if "ratio" in c else "")
    return {"smollm2_pages": (f"one row of keys in bits on {sp['tokens']} tokens: {sp['coded_forward_with_log_softmax_s'] + sp['loss_sums_s']:.2f} s against "
                              f"{sp['plain_forward_with_head_s']:.2f} s for the plain forward ({(sp['coded_forward_with_log_softmax_s'] + sp['loss_sums_s']) / sp['plain_forward_with_head_s']:.2f}x: "
                              f"the codec {sp['codec_overhead_s']:.2f} s, the log-softmax {sp['log_softmax_s']:.2f} s, the sums {sp['loss_sums_s']:.2f} s); against commit {t['before']}, "
                              "every number equal: " + "; ".join(cut(k, c) for k, c in cuts.items())),
            "smollm2_pages_run": f"{t['machine']}, {t['threads']} thread, medians of {t['rounds']} alternating rounds against commit {t['before']}"}


def engine_figures(runs: list) -> dict:
    "The batched engine against the per-model loop on the CPU (the latest record): the ratio per thread count against its target, and the ceiling with the data in cache."
    if not runs: return {"engine": "not yet recorded", "engine_run": "—"}
    r = runs[-1]
    threads = lambda row: f"{row['threads']} thread{'s' if row['threads'] != 1 else ''}"
    ratios = ", ".join(f"{row['ratio']:.1f}x on {threads(row)} (loop {row['loop_s']:.2f} s, batched {row['batched_s']:.2f} s)" for row in r["rows"])
    met = [threads(row) for row in r["rows"] if row["ratio"] >= ENGINE_TARGET]
    ceiling = ", ".join(f"{row['ceiling_one_task']:.1f}x on {threads(row)}" for row in r["rows"])
    return {"engine": f"{ratios}: target >= {ENGINE_TARGET}x " + (f"met on {', '.join(met)}" if met else "not met")
                      + f". Ceiling (the same {r['models']} models on one task's moments, which stay in cache): {ceiling}",
            "engine_run": f"{r['date']}, commit {r['commit']}"}


def side_by_side_figures(runs: list) -> dict:
    "The latest side-by-side run of the quick preset against an earlier commit (bench_reproduce.py --baseline): both medians, their ratio, and whether the numbers moved."
    if not runs: return {"quick_side_by_side": "not yet recorded", "side_run": "—"}
    r = runs[-1]
    return {"quick_side_by_side": (f"commit {r['baseline']} {statistics.median(r['baseline_s']):.1f} s -> commit {r['commit']} {statistics.median(r['head_s']):.1f} s "
                                   f"(medians of {len(r['head_s'])} fresh commands each, alternating; ratio {r['ratio']:.2f}); tables and claims "
                                   + ("byte-identical" if r["tables_and_claims_identical"] else "differ")),
            "side_run": f"{r['date']}, commits {r['baseline']} and {r['commit']}"}


def payoff_figures(p: dict) -> dict:
    "What compression delivers, from bench_payoff.py's record: per budget, the sliced MiniLM and SmolLM2's low-rank key caches."
    m = "; ".join(f"{r['budget']:.0%}: parameters {r['params']:,} -> {r['params_sliced']:,}, query/key maps {r['qk_params_full']:,} -> {r['qk_params_sliced']:,}, "
                  f"score multiply-adds per token pair {r['score_madds_full']} -> {r['score_madds_padded']}, 1 - cosine {1 - r['cosine']:.4f}" for r in p["minilm"]["rows"])
    s = "; ".join(f"{r['budget']:.0%}: keys {r['bytes_keys_full']} -> {r['bytes_keys']} bytes per token (16-bit), whole cache {r['bytes_keys_full'] + r['bytes_values']} -> "
                  f"{r['bytes_keys'] + r['bytes_values']}; next-token KL latent {r['latent_kl']:.4f}, post-rotary {r['cache_kl']:.4f}" for r in p["smollm2"]["rows"])
    speed = p["smollm2"]["speed"]
    ctx = [x["context"] for x in speed["original (eager)"]]
    shown = {"latent": "latent route", "cache": "post-rotary route"}
    v = "; ".join(f"{c} tokens: " + ", ".join(f"{shown.get(name, name)}: cache {runs[i]['cache_mb']:.1f} MiB, peak {runs[i]['peak_rss_mb']:.0f} MiB, prefill {runs[i]['prefill_tok_s']:.1f} tok/s, "
                                               f"decode {runs[i]['decode_tok_s']:.2f} tok/s" for name, runs in speed.items()) for i, c in enumerate(ctx))
    mm = [r for r in p["minilm"]["rows"] if "sentences_per_s_original" in r]
    e = f"; sentences per second at {mm[0]['budget']:.0%}: original {mm[0]['sentences_per_s_original']:.1f}, sliced {mm[0]['sentences_per_s_sliced']:.1f}" if mm else ""
    return {"payoff_minilm": m + e, "payoff_smollm2": s, "payoff_speed": f"at {p['smollm2']['speed_budget']:.0%}: " + v,
            "payoff_run": f"{p['date']}, commit {p['commit']}, {p['seconds']:.0f} s"}


def table6_figures(t: dict) -> dict:
    "Where loss-aware native allocation wins, from bench_table6.py's record: per model the summary sentence, and the run."
    out = {f"table6_{m}": r["summary"].rstrip(".") for m, r in t["models"].items()}
    out["table6_run"] = f"{t['date']}, commit {t['commit']}, " + ", ".join(f"{m} {r['seconds']:.0f} s" for m, r in t["models"].items())
    return out


def seed_figures(t: dict) -> dict:
    """Verdicts that differ between the reference's seeds and new ones, from seed_stability.py's record: each claim with both verdicts and
    margins (in pooled standard errors); and every thin margin (report.thin_margins: within 3 standard errors on either set) as a table."""
    from entropic_bound.report import markdown_table, thin_margins
    ref, new = f"seeds {t['reference_seeds'][0]}-{t['reference_seeds'][-1]}", f"seeds {t['seeds'][0]}-{t['seeds'][-1]}"
    differ = [c for c in t["claims"] if c["verdict"] != t["reference"][c["id"]]["verdict"]]
    one = lambda c: (f"`{c['id']}` ({ref}: {t['reference'][c['id']]['verdict']}, margin {t['reference'][c['id']]['margin']:+.2g}; "
                     f"{new}: {c['verdict']}, margin {c['margin']:+.2g})")
    decided = lambda v: v != "undecided"
    flips = [c for c in differ if decided(c["verdict"]) and decided(t["reference"][c["id"]]["verdict"])]
    head = f"{len(t['claims']) - len(differ)} of {len(t['claims'])} verdicts on {new} are those of {ref}"
    said = (f"; {len(flips)} of the {len(differ)} that differ change between decided verdicts" if differ else "")
    thin = thin_margins({ref: t["reference"], new: {c["id"]: c for c in t["claims"]}})
    table = [dict(claim=f"`{r['id']}`", **{k: v for k, v in r.items() if k != "id"}) for r in thin]
    return {"seed_fragile": head + ("; they differ on: " + "; ".join(one(c) for c in differ) + said if differ else "; none differs"),
            "thin_margins": "\n\n" + (markdown_table(table) if table else "(none)") + "\n\n",
            "seed_run": f"{t['date']}, commit {t['commit']}"}


def sequential_figures(t: dict) -> dict:
    """What the sequential design's added seeds decided, from sequential_design.py's record: the experiments that took more seeds, and each
    claim the reference leaves undecided with its verdict, margin and seeds in the design (and, if still undecided, the seeds it would take)."""
    more = sorted({(c["id"].split(".")[0], c["seeds"], c["looks"]) for c in t["claims"] if c["seeds"] > len(t["seeds"])})
    if not more: return {"sequential": f"with --seeds-up-to {t['up_to']} no experiment took more seeds than {len(t['seeds'])}"}
    tables = "; ".join(f"Table {p[1:]} on {n} seeds ({k} looks)" for p, n, k in more)
    by_id = {c["id"]: c for c in t["claims"]}
    was = [i for i, r in t["reference"].items() if r["verdict"] == "undecided"]
    def one(i):
        c = by_id[i]
        left = f", would take {c['seeds_to_decide']} seeds" if c["verdict"] == "undecided" and c.get("seeds_to_decide") else ""
        kept = (", its experiment given no more: the design adds seeds for undecided empirical claims and controls"
                if c["seeds"] == len(t["seeds"]) and c["verdict"] == "undecided" else "")
        return f"`{i}` ({c['kind']}) {c['verdict']} on {c['seeds']} seeds (margin {c['margin']:+.2g}{left}{kept})"
    decided = sum(by_id[i]["verdict"] != "undecided" for i in was)
    return {"sequential": f"with --seeds-up-to {t['up_to']} ({t['date']}, commit {t['commit']}) the experiments with an empirical claim or control undecided at the design's corrected level took more "
                          f"seeds — {tables} — and {decided} of the {len(was)} claims undecided on seeds 0-2 are decided: " + "; ".join(one(i) for i in was)}


def fused_figures(t: dict, table: str = "table1") -> dict:
    "A table's fused steps against the engine's reference path, from bench_fused.py's record (`--only table1` or `table2`): per class of students the step, and the whole training."
    label = lambda c: c["students"] if "students" in c else c["cls"] + ("" if c.get("fused_at_this_n", True) else ", fused step forced (the table keeps autograd here)")
    steps = "; ".join(f"{label(c)} ({c['models']} students): {c['reference_ms']:.3f} -> {c['fused_ms']:.3f} ms per step ({c['ratio']:.2f}x)" for c in t["cells"])
    tr, name = t["training"], {"table1": "Table 1", "table2": "Table 2"}[table]
    return {f"fused_{table}": (f"{name}'s whole training {tr['reference_train_s']:.2f} s -> {tr['fused_train_s']:.2f} s ({tr['train_ratio']:.2f}x; the whole measurement "
                               f"{tr['measure_ratio']:.2f}x), medians of fresh processes alternating; per step: {steps}"),
            f"fused_{table}_run": f"{t['date']}, commit {t['commit']}, {t['threads']} thread, load average {t['load_average'][0]:.1f} -> {t['load_average'][1]:.1f} on 2 cores"}


def example_figures(t: dict) -> dict:
    """What each example of the front page costs, from bench_examples.py's record: per command its wall time (minutes past 100 s),
    on the machine it names; "idle" only where the rest of the machine used less than half a core during every example."""
    took = lambda s: f"{s:.0f} s" if s < 100 else f"{s / 60:.1f} min"
    rows = t["examples"]
    busiest = max(r["others_cores"] for r in rows)
    commits = list(dict.fromkeys(r["commit"] for r in rows))          # in the order the examples ran (a commit may land during a run)
    dates = [", ".join(sorted({r["date"] for r in rows})) + (f", commit {commits[0]}" if len(commits) == 1 else f", commits {', '.join(commits)}")]
    loud = max(rows, key=lambda r: r["longest_silence"])
    return {"example_costs": "; ".join(f"`{r['command'].removeprefix('entropic-bound ')}` {took(r['seconds'])}" for r in rows)
                             + f" (the longest any of them wrote nothing: {loud['longest_silence']:.0f} s, in `{loud['command'].removeprefix('entropic-bound ')}`; on {t['machine']}, " + ("idle" if busiest < 0.5 else f"not idle: the rest of the machine used up to {busiest:.1f} cores") + "; "
                             + "; ".join(dates) + ")"}


def rewrite(text: str, quoted: dict, where: str) -> str:
    "`text` with every marked span holding its figure; an unknown key is an error."
    def one(m):
        if m.group(1) not in quoted: sys.exit(f"make_figures: {where} quotes an unknown figure {m.group(1)!r}")
        return f"<!-- fig:{m.group(1)} -->{quoted[m.group(1)]}<!-- /fig -->"
    return SPAN.sub(one, text)


RECORDS = (("payoff.json", payoff_figures, "payoff", "bench_payoff.py"), ("table6.json", table6_figures, "table6", "bench_table6.py"),
           ("seed_claims.json", seed_figures, "seed_fragile", "seed_stability.py"),
           ("sequential_claims.json", sequential_figures, "sequential", "sequential_design.py"),
           ("flops.json", flops_figures, "flops", "bench_flops.py"), ("smollm2_ci.json", smollm2_figures, "smollm2_pages", "bench_smollm2_ci.py"),
           ("examples.json", example_figures, "example_costs", "bench_examples.py"))
# (record file, the function that reads its figures, the key of its source, the script that writes it)


def main(check: bool) -> int:
    fig = figures()
    want = {FIGURES: json.dumps(fig, indent=1, ensure_ascii=False) + "\n"}
    for path in PROSE:
        text = path.read_text()
        if path.suffix == ".ipynb":                                   # only markdown cells carry spans: rewrite the JSON strings in place
            nb = json.loads(text)
            for cell in nb["cells"]:
                if cell["cell_type"] == "markdown":
                    src = "".join(cell["source"]); new = rewrite(src, fig["quoted"], str(path.relative_to(ROOT)))
                    if new != src: cell["source"] = new.splitlines(keepends=True)
            new_text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
            want[path] = new_text if new_text != json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n" else text
        else: want[path] = rewrite(text, fig["quoted"], str(path.relative_to(ROOT)))
        if not SPAN.search(want[path]) and (check or path != ROOT / "README.md"): sys.exit(f"make_figures: {path.relative_to(ROOT)} quotes no figure span (README.md: run scripts/make_readme.py)")
    stale = [p for p, t in want.items() if not p.exists() or p.read_text() != t]
    if check:
        if stale: print("figures out of step with benchmarks/timings.json and paper_claims.json: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
                        + " (run python scripts/make_figures.py, then scripts/make_readme.py)"); return 1
        print("every quoted figure is the one benchmarks/figures.json records"); return 0
    for p in stale:
        if p != ROOT / "README.md": p.write_text(want[p])
    print("wrote " + (", ".join(str(p.relative_to(ROOT)) for p in stale if p != ROOT / "README.md") or "nothing (up to date)")
          + ("; now run scripts/make_readme.py" if ROOT / "nbs" / "index.ipynb" in stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
