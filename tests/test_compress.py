"""The `entropic-bound compress` command: what it writes, that the exported checkpoint reloads with transformers alone to the
fidelity its manifest states, and one-line errors on bad input."""
import csv
import json
import os

import pytest

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
from entropic_bound import checkpoints, cli, compress, text  # noqa: E402
from entropic_bound.spectral import InputError  # noqa: E402
from conftest import reuse_run  # noqa: E402


def test_compress_writes_table_claims_and_a_checkpoint(tmp_path, capsys, kept_runs):
    out = tmp_path / "c"
    reuse_run(kept_runs, "minilm smoke, 2 splits", out)                  # the same Table 6 as tests/test_routes.py's slice export (smoke budgets: 0.5)
    rc = cli.main(["compress", "--out", str(out), "--preset", "smoke", "--splits", "2", "--budget", "0.25", "--allocation", "static",
                   "--budgets", "0.5", "--route", "fold", "--no-progress"])                # the fold: it reloads with transformers alone
    assert rc == 0, capsys.readouterr().err
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))      # .records: the runner's record and measured units
    assert names == ["claims.json", "model", "table6.csv", "table6.md", "table6_fidelity_vs_budget.png", "table6_margins.png", "table6_ranks.png"]
    rows = list(csv.DictReader(open(out / "table6.csv")))
    smoke = ("native", "static", "uniform", "native_loss", "shuffled")                 # the smoke preset's rules, whitened directions
    assert len(rows) == 5 and [r["allocation"] for r in rows] == list(smoke) and all(r["other_cosine"] for r in rows)
    claims = json.load(open(out / "claims.json"))
    assert [c["id"] for c in claims] == [f"t6.native_loss_vs_{b}@0.5" for b in ("native", "static", "uniform")]
    assert all(c["kind"] == "empirical" and c["control"]["removes"] for c in claims)
    manifest = json.loads((out / "model" / "manifest.json").read_text())
    assert (manifest["allocation"], manifest["budget"], manifest["order"]) == ("static", 0.25, "whitened")
    assert manifest["total_directions"] == round(0.25 * 6 * 12 * 32) == sum(map(sum, manifest["ranks"]))
    # transformers alone reloads it, and the fidelity on split 0's held-out lines is the manifest's
    net = transformers.AutoModel.from_pretrained(out / "model").eval()
    tok = transformers.AutoTokenizer.from_pretrained(out / "model")
    ad = checkpoints.load_adapter()
    _, held = text.split_lines(text.read_text(text.default_text_path()), 0)
    again = compress.fidelity(compress.sentence_embeddings(ad.model, ad.tokenizer, held), compress.sentence_embeddings(net, tok, held))
    for k, v in again.items(): assert v == pytest.approx(manifest["fidelity"][k], abs=1e-6), k
    assert again["cosine"] < 0.999                                            # the reloaded model is compressed, not the original


@pytest.mark.parametrize("argv, arg", [
    (["--budget", "1.5"], "--budget"), (["--budget", "0"], "--budget"), (["--allocation", "random"], "--allocation"),
    (["--order", "pca"], "--order"), (["--splits", "1"], "--splits"), (["--budgets", "0.5,x"], "--budgets"),
    (["--budgets", "0.5,2"], "--budgets"), (["--text", "{tmp}/none.txt"], "--text"), (["--model", "{tmp}/nowhere"], "--model"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, argv, arg):
    out = tmp_path / "out"
    rc = cli.main(["compress"] + [a.format(tmp=tmp_path) for a in argv] + ["--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and arg in err[0], err
    assert not out.exists()


def test_a_settings_error_passes_as_itself(tmp_path, capsys, monkeypatch):
    """A settings error `run_compress` meets is raised as it is (`SettingsError`, naming its field), not re-worded as another option's;
    the CLI names the option: one line, exit 2, nothing written."""
    from entropic_bound import compress_run
    from entropic_bound.experiment import SettingsError
    with pytest.raises(SettingsError) as e: compress_run.run_compress(tmp_path / "lib", budgets=(0.5, 2.0))
    assert (e.value.field, str(e.value)) == ("budgets", "Table6Settings.budgets must be fractions in (0, 1]; got (0.5, 2.0)")
    monkeypatch.setattr(cli, "compress_budgets", lambda budget, budgets: (0.5, (0.5, 2.0)))     # past the command line's own check
    out = tmp_path / "out"
    rc = cli.main(["compress", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["entropic-bound compress: error: --budgets must be fractions in (0, 1]; got (0.5, 2.0)"], err
    assert not out.exists() and not (tmp_path / "lib").exists()


def test_decoder_refused_in_one_line(tmp_path, capsys):
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=64, vocab_size=50)
    folder = tmp_path / "gpt2"
    transformers.GPT2Model(cfg).save_pretrained(folder)
    capsys.readouterr()                                                       # the writer's own progress bar, if any
    rc = cli.main(["compress", "--model", str(folder), "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "BERT-family" in err[0] and "gpt2" in err[0]
    assert not (tmp_path / "o").exists()


def test_allocations_spend_the_budget_exactly():
    """Every allocation spends exactly the budget at every budget from 0 to all directions, on curves with ties and flat stretches
    (several heads flat at one shared level, one head flat until its last rank)."""
    import numpy as np
    rng = np.random.default_rng(0)
    L, H, dh = 3, 4, 8
    out = np.sort(rng.random((L, H, dh + 1)), -1)[..., ::-1].copy(); out[..., -1] = 0
    out[0, :3, 1:-1] = 0.5                                                       # three heads flat at one shared level
    out[1, 0, :-1] = 1.0                                                         # one head flat until its last rank
    tail = np.sort(rng.random((L, H, dh + 1)), -1)[..., ::-1].copy(); tail[..., 0] = 1; tail[..., -1] = 0
    tail[2, :, 2:-1] = 0.25
    sens = np.sort(rng.random((L, dh + 1)), -1)[:, ::-1].copy(); sens[:, -1] = 0; sens[1, 2:-1] = 0.3   # ASVD's step curves, one flat
    cal = compress.Calibration(out, out, rng.random((L, H)) + 0.1, tail, {}, fisher_k=rng.random((L, H)), out_weight=rng.random((L, H)) + 0.5,
                               sensitivity=sens)
    cal_zero = compress.Calibration(out, out, rng.random((L, H)) + 0.1, tail, {}, fisher_k=np.zeros((L, H)), out_weight=np.ones((L, H)), sensitivity=sens)
    for B in range(0, L * H * dh + 1):
        for a in compress.ALLOCATIONS:
            for c in (cal, cal_zero):                                                # Fisher all zero: an even split
                r = compress.allocate(c, B / (L * H * dh), a) if B else np.zeros((L, H), int)
                assert r.sum() == B and r.min() >= 0 and r.max() <= dh, (B, a, r.sum())


def _random_decoder(cfg):
    import torch
    torch.manual_seed(0)
    return checkpoints.adapter_from_model(transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval())


_SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, vocab_size=60, initializer_range=0.1)
FOLD_FAMILIES = {
    "llama": lambda: transformers.LlamaConfig(num_key_value_heads=2, **_SMALL),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(rotary_pct=0.25, max_position_embeddings=64, **_SMALL),
    "phi3": lambda: transformers.Phi3Config(num_key_value_heads=2, partial_rotary_factor=0.5, sliding_window=7, pad_token_id=0, bos_token_id=0,
                                            eos_token_id=0, **_SMALL),
    "gemma2": lambda: transformers.Gemma2Config(num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, attn_logit_softcapping=2.0,
                                                sliding_window=5, **_SMALL),
}


@pytest.mark.parametrize("family", list(FOLD_FAMILIES))
def test_fold_writes_the_cut_back_per_family(family):
    """Each foldable decoder family's adapter writes a cut back: at full rank the folded model is the model itself (same weights,
    same logits); cut to ranks in one layer, the attention transformers computes in the folded model is the cut measured in head
    coordinates (before the rotation, one key basis per group), and it differs from the uncut attention."""
    import numpy as np
    import torch
    from entropic_bound import heads
    ad = _random_decoder(FOLD_FAMILIES[family]())
    assert ad.family == family and ad.check_foldable() == "decoder"
    rng = np.random.default_rng(0)
    toks = text.pack_token_ids([list(rng.integers(1, 60, size=int(rng.integers(4, 14)))) for _ in range(40)], seq_len=24, limit=60)
    cal = compress.calibrate(ad, toks)
    G, H, dh = ad.n_kv_heads, ad.n_heads, ad.d_head
    assert cal.shape == (2, G) and cal.group_size == H // G
    run = lambda net: net(input_ids=toks.ids, attention_mask=toks.mask, output_attentions=True)
    same = compress.fold(ad, cal, np.full((2, G), dh))
    assert all(torch.equal(p, q) for p, q in zip(same.parameters(), ad.model.parameters()))
    with torch.no_grad(): ref, out = run(ad.model), run(same)
    assert torch.equal(ref.logits, out.logits)
    ranks = np.full((2, G), dh); ranks[1] = np.linspace(2, dh - 3, G).round()
    X = checkpoints.attention_inputs(ad, toks)
    lay = ad.layer(1, toks.ids.shape[1])
    st = heads.head_states(lay, X[1], toks.mask)
    order = tuple(t[lay.group] for t in cal.orders["whitened"][1])
    cut = heads.truncated_attention(st, heads.project_order(st, order, pre=True), torch.as_tensor(np.repeat(ranks[1], H // G)))
    with torch.no_grad(): A = run(compress.fold(ad, cal, ranks)).attentions[1]
    valid = toks.mask.bool()[:, None, :, None]
    gap = float((A - cut).masked_fill(~valid, 0).abs().max())
    moved = float((ref.attentions[1] - cut).masked_fill(~valid, 0).abs().max())
    assert gap < 1e-5 and moved > 1e-2, (family, gap, moved)


def test_fold_refused_with_a_query_key_norm():
    """Gemma 3 normalises queries and keys per head after W_Q and W_K, so a cut does not fold exactly: one line says so."""
    cfg = transformers.Gemma3TextConfig(num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, sliding_window=5, **_SMALL)
    ad = _random_decoder(cfg)
    with pytest.raises(InputError, match="^model: compress folds .*; gemma3_text normalises queries and keys") as e:
        compress.calibrate(ad, None)
    assert "\n" not in str(e.value)
