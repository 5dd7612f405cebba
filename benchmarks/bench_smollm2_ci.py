"""The SmolLM2 pages' share of CI (issue 56), at one thread on small inputs: where one row of keys in bits (nbs/11e_key_bits.ipynb)
spends its time against the model's plain forward of the same tokens (the floor), and each cut made for CI measured side by side with
the code of an earlier revision (`--before`): the old modules are read from git (`git show REV:entropic_bound/X.py`) and run beside
the working tree's on the same inputs, alternating, CPU seconds (median of --rounds). Every cut must give the same numbers: the script
asserts it, value by value. Writes benchmarks/smollm2_ci.json.

    python benchmarks/bench_smollm2_ci.py [--rounds 3] [--before 1b25303] [--gguf] [--table6] [--codec [--codec-only]]

--gguf: the load of SmolLM2 after a reinstall (the same GGUF bytes, a new modification time) with the old and the new cache key, in a
temporary cache (one de-quantisation each, about 30-45 s). --table6: `calibration_source` on one split of SmolLM2's decoder preset.
--codec: one row of keys in bits (`_measured_row`, the page's held sequences) through the coded attention of --before and of this checkout,
native and KIVI-style codes at the bytes of 2-bit keys, and the page's `codecs_at` for the two rows its caches hold against all eight;
with --codec-only nothing else is measured and these cuts are added to the record as it stands (each with the revision it was measured against).
"""
import argparse, copy, importlib.util, json, os, platform, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def old_module(rev: str, name: str, tmp: Path):
    "entropic_bound/`name`.py as of git revision `rev`, imported as entropic_bound._before_`name` (its relative imports read today's package)."
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:entropic_bound/{name}.py"], check=True, capture_output=True, text=True).stdout
    path = tmp / f"_before_{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"entropic_bound._before_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def cpu(f, rounds: int):
    "(median CPU seconds of `rounds` calls of f, its last result)."
    times, out = [], None
    for _ in range(rounds):
        t = time.process_time(); out = f(); times.append(time.process_time() - t)
    return statistics.median(times), out


def side_by_side(before, after, rounds: int, same) -> dict:
    "Alternate the two, `rounds` times each; `same(a, b)` must hold for their results."
    tb, ta = [], []
    for _ in range(rounds):
        b, rb = cpu(before, 1); a, ra = cpu(after, 1)
        tb.append(b); ta.append(a)
        assert same(rb, ra), "a cut changed a number"
    b, a = statistics.median(tb), statistics.median(ta)
    return dict(before_s=round(b, 3), after_s=round(a, 3), ratio=round(a / b, 3), same_numbers=True)


def equal(a, b) -> bool:
    import numpy as np, torch
    if isinstance(a, torch.Tensor): return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, np.ndarray): return a.shape == np.shape(b) and np.array_equal(a, b)
    if isinstance(a, dict): return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)): return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__"): return all(equal(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default="1b25303", help="the revision before the cuts")
    ap.add_argument("--gguf", action="store_true")
    ap.add_argument("--table6", action="store_true")
    ap.add_argument("--codec", action="store_true")
    ap.add_argument("--codec-only", action="store_true")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    from entropic_bound.policy import set_engine_threads
    set_engine_threads(1)
    from entropic_bound import checkpoints, compress, key_bits as kb, table6
    from entropic_bound.checkpoints import load_adapter
    from entropic_bound.text import read_text, default_text_path, encode_text, python_docs_text, split_lines
    tmp = Path(tempfile.mkdtemp(prefix="bench-smollm2-"))
    old = {n: old_module(args.before, n, tmp) for n in ("checkpoints", "compress", "key_bits", "table6")}
    old["key_bits"].attention_inputs = old["checkpoints"].attention_inputs          # the old statistics read the old hidden states
    R = args.rounds
    report = dict(machine=platform.processor() or platform.machine(), threads=1, rounds=R, before=args.before, split={}, cuts={})

    smol = load_adapter("smollm2", causal_lm=True)
    fit = encode_text(smol, split_lines(read_text(default_text_path()), 0)[0], kb.SEQ_LEN).head(1)
    held = encode_text(smol, python_docs_text(max_lines=400), kb.SEQ_LEN).head(1)
    pre, post = kb.key_statistics(smol, fit, pre=(True, False))
    codec = kb.codecs_at(pre, post, 2, names=("native",))["native"]
    if args.codec or args.codec_only:
        codec_cuts(args, old, kb, smol, pre, post, R)
        if args.codec_only: return

    # Where one row's time goes (one held sequence, native coding at the bytes of 2-bit keys).
    m = kb.use_codec(smol.model, None)
    with torch.no_grad():
        floor, _ = cpu(lambda: m.base_model(input_ids=held.ids, attention_mask=held.mask), R)
        full, _ = cpu(lambda: m(input_ids=held.ids, attention_mask=held.mask).logits, R)
    ref_s, ref = cpu(lambda: kb.reference_side(m, held), R)
    coded, P1 = cpu(lambda: compress.next_token_logprobs(kb.use_codec(smol.model, codec), held, 2), R)
    kb.use_codec(smol.model, None)
    loss, _ = cpu(lambda: kb._per_sequence(ref, P1, held), R)
    with torch.no_grad():
        lsm, _ = cpu(lambda: torch.log_softmax(torch.randn(1, held.ids.shape[1] - 1, P1.shape[-1]), -1), R)
    report["split"] = dict(tokens=int(held.mask.sum()), plain_forward_without_head_s=round(floor, 3), plain_forward_with_head_s=round(full, 3),
                           coded_forward_with_log_softmax_s=round(coded, 3), codec_overhead_s=round(coded - full - lsm, 3),
                           log_softmax_s=round(lsm, 3), loss_sums_s=round(loss, 3), reference_side_s=round(ref_s, 3))
    print("one row on one sequence:", json.dumps(report["split"]), flush=True)

    # Where one fold of Table 6 on SmolLM2 spends its time (decoder preset: 2 sequences of 128 tokens per text, split 0's fit half).
    s = table6.TABLE6.settings("decoder", model="smollm2")
    adapter, lines = table6._adapter(s), table6._lines(s)
    fit6, held6 = split_lines(lines, 0)
    t = time.process_time()
    cal6 = compress.calibrate_split(adapter, fit6, 0, (table6.SUBJECT, "uniform"), s.seq_len, s.fit_limit)
    cal_s = time.process_time() - t
    meter_input = getattr(compress, "meter_input", None) or compress._evaluated     # its name before it was public (an earlier commit under test)
    batch = meter_input(adapter, held6, s.seq_len, s.eval_limit)
    meter = compress.fidelity_meter(adapter, held6, s.seq_len, s.eval_limit)
    ranks = compress.allocate(cal6, 0.5, table6.SUBJECT)
    work = copy.deepcopy(adapter.model)
    fold_s, net = cpu(lambda: compress.fold(adapter, cal6, ranks, "whitened", model=work), R)
    with torch.no_grad():
        body, _ = cpu(lambda: net.base_model(input_ids=batch.ids, attention_mask=batch.mask), R)
        head, logits = cpu(lambda: net(input_ids=batch.ids, attention_mask=batch.mask).logits, R)
        lsm6, P = cpu(lambda: torch.log_softmax(logits[:, :-1].float(), -1), R)
    ref6 = compress._reference_side(compress.next_token_logprobs(adapter.model, batch, 4))
    sums6, _ = cpu(lambda: compress._next_token_sums(None, P, batch.ids, batch.mask, ref6), R)
    whole, _ = cpu(lambda: meter(net), R)
    report["table6_fold"] = dict(tokens=int(batch.mask.sum()), calibration_without_sensitivity_s=round(cal_s, 3), fold_s=round(fold_s, 3),
                                 forward_without_head_s=round(body, 3), forward_with_head_s=round(head, 3), log_softmax_s=round(lsm6, 3),
                                 sums_s=round(sums6, 3), one_text_measured_s=round(whole, 3))
    print("one fold of Table 6 (one text):", json.dumps(report["table6_fold"]), flush=True)
    del work

    cuts = report["cuts"]
    cuts["key_statistics (1 fit sequence, both flags)"] = side_by_side(
        lambda: old["key_bits"].key_statistics(smol, fit, pre=(True, False)), lambda: kb.key_statistics(smol, fit, pre=(True, False)), R, equal)
    cuts["attention_inputs (1 sequence of 512)"] = side_by_side(
        lambda: old["checkpoints"].attention_inputs(smol, fit), lambda: checkpoints.attention_inputs(smol, fit), R, equal)
    g = torch.Generator().manual_seed(0)
    P0 = torch.log_softmax(torch.randn(1, 511, 49152, generator=g) * 3, -1)
    Q = torch.log_softmax(P0 + 0.3 * torch.randn(P0.shape, generator=g), -1)
    ids, mask = torch.randint(0, 49152, (1, 512), generator=g), torch.ones(1, 512, dtype=torch.long)
    side = compress._reference_side(P0)
    cuts["_next_token_sums (511 positions x 49,152 tokens)"] = side_by_side(
        lambda: old["compress"]._next_token_sums(None, Q, ids, mask, side), lambda: compress._next_token_sums(None, Q, ids, mask, side), R, equal)
    from entropic_bound.modeling_lowrank_keys import BitsKeyCache
    model16 = copy.deepcopy(smol.model).to(torch.bfloat16).eval()
    long = torch.cat(list(encode_text(smol, python_docs_text(max_lines=400), kb.SEQ_LEN).ids))[None, :512]
    prefills = lambda mod: [mod.cache_bytes_after(model16, long), mod.cache_bytes_after(model16, long, lambda: BitsKeyCache(model16, codec))]
    cuts["cache_bytes_after (2 prefills of 512, bfloat16)"] = side_by_side(lambda: prefills(old["key_bits"]), lambda: prefills(kb), R, equal)
    del model16

    if args.table6:
        s = table6.TABLE6.settings("decoder", model="smollm2")
        lines, other = table6._lines(s), table6._other_lines(s)
        adapter = table6._adapter(s)
        cal = compress.calibrate_split(adapter, split_lines(lines, 0)[0], 0, (table6.SUBJECT, "uniform"), s.seq_len, s.fit_limit)
        meter = compress.fidelity_meter(adapter, other, s.seq_len, s.eval_limit)
        ranks = {(a, b): compress.allocate(cal, b, a) for a in ("uniform", table6.SUBJECT) for b in s.budgets}
        oth = {(a, "whitened", b): meter(compress.fold(adapter, cal, r, "whitened")) for (a, b), r in ranks.items()}
        units = {0: compress.SplitResult(cal, ranks, {}, "decoder", "kl", oth)}
        cuts["calibration_source (SmolLM2, 1 split)"] = side_by_side(
            lambda: old["table6"].calibration_source(s, units), lambda: table6.calibration_source(s, units), 1, equal)

    if args.gguf:
        d = tmp / "gguf"; (d / "m").mkdir(parents=True)
        f = d / "m" / checkpoints.SMOLLM2_FILE
        shutil.copyfile(checkpoints.smollm2_path(), f)
        before_env = os.environ.get("ENTROPIC_BOUND_CACHE")
        os.environ["ENTROPIC_BOUND_CACHE"] = str(d / "cache")
        try:
            for name, mod in (("before", old["checkpoints"]), ("after", checkpoints)):
                mod.load_adapter(f, causal_lm=True)                                  # the first load: de-quantised into the cache
                os.utime(f, ns=(time.time_ns(), time.time_ns()))                      # a reinstall: the same bytes, a new time
                t = time.perf_counter(); mod.load_adapter(f, causal_lm=True)
                cuts.setdefault("load of SmolLM2 after a reinstall (wall s)", {})[f"{name}_s"] = round(time.perf_counter() - t, 2)
        finally:
            if before_env is None: os.environ.pop("ENTROPIC_BOUND_CACHE", None)
            else: os.environ["ENTROPIC_BOUND_CACHE"] = before_env
    shutil.rmtree(tmp, ignore_errors=True)
    for k, v in cuts.items(): print(f"{k}: {json.dumps(v)}")
    (HERE / "smollm2_ci.json").write_text(json.dumps(report, indent=1) + "\n")


def codec_cuts(args, old, kb, smol, pre, post, R):
    "--codec: the coded attention's one score matrix and page 11e's two-row `codecs_at`, each against --before; added to the record as it stands."
    from entropic_bound.text import encode_text, python_docs_text
    record = json.loads((HERE / "smollm2_ci.json").read_text())
    held = encode_text(smol, python_docs_text(max_lines=400), kb.SEQ_LEN).head(kb.EVAL_SEQUENCES)      # the page's graded sequences
    ref = kb.reference_side(kb.use_codec(smol.model, None), held)
    at2 = kb.codecs_at(pre, post, 2)
    cuts = {}
    for name in ("native", "kivi"):
        row = lambda mod: mod._measured_row(smol, name, 2, at2[name], held, ref)                       # each module's use_codec: its attention
        cuts[f"one row of keys in bits ({name}, 2-bit bytes, {int(held.mask.sum())} tokens): one score matrix"] = dict(
            side_by_side(lambda: row(old["key_bits"]), lambda: row(kb), R, equal), before=args.before)
        kb.use_codec(smol.model, None)
    two = lambda: kb.codecs_at(pre, post, 2, names=("kivi", "native"))
    cuts["page 11e's codecs_at at 2-bit bytes: the two rows its caches hold, not all eight"] = dict(
        side_by_side(lambda: {k: v.bits for k, v in kb.codecs_at(pre, post, 2).items() if k in ("kivi", "native")},
                     lambda: {k: v.bits for k, v in two().items()}, R, equal), before="all eight rows, this checkout")
    for k, v in cuts.items(): print(f"{k}: {json.dumps(v)}", flush=True)
    record["cuts"].update(cuts)
    (HERE / "smollm2_ci.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
