"""The `entropic-bound compress` command: what it writes, that the exported checkpoint reloads with transformers alone to the
fidelity its manifest states, and one-line errors on bad input."""
import csv
import json
import os

import pytest

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
from entropic_bound import checkpoints, cli, compress  # noqa: E402


def test_compress_writes_table_claims_and_a_checkpoint(tmp_path, capsys):
    out = tmp_path / "c"
    rc = cli.main(["compress", "--out", str(out), "--budgets", "0.5", "--splits", "2", "--budget", "0.25", "--allocation", "static",
                   "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    names = sorted(p.name for p in out.iterdir())
    assert names == ["claims.json", "model", "table6.csv", "table6.md", "table6_fidelity_vs_budget.png", "table6_ranks.png"]
    rows = list(csv.DictReader(open(out / "table6.csv")))
    assert len(rows) == 5 * 2 and {r["allocation"] for r in rows} == set(compress.ALLOCATIONS)
    claims = json.load(open(out / "claims.json"))
    assert [c["id"] for c in claims] == ["t6.native_vs_uniform", "t6.native_vs_static"]
    assert all(c["kind"] == "empirical" and c["control"]["removes"] for c in claims)
    manifest = json.loads((out / "model" / "manifest.json").read_text())
    assert (manifest["allocation"], manifest["budget"], manifest["order"]) == ("static", 0.25, "whitened")
    assert manifest["total_directions"] == round(0.25 * 6 * 12 * 32) == sum(map(sum, manifest["ranks"]))
    # transformers alone reloads it, and the fidelity on split 0's held-out lines is the manifest's
    net = transformers.AutoModel.from_pretrained(out / "model").eval()
    tok = transformers.AutoTokenizer.from_pretrained(out / "model")
    ad = checkpoints.load_adapter()
    _, held = compress.split_lines(checkpoints.read_text(checkpoints.default_text_path()), 0)
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


def test_decoder_refused_in_one_line(tmp_path, capsys):
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, n_positions=64, vocab_size=50)
    folder = tmp_path / "gpt2"
    transformers.GPT2Model(cfg).save_pretrained(folder)
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
    cal = compress.Calibration(out, out, rng.random((L, H)) + 0.1, tail, {})
    for B in range(0, L * H * dh + 1):
        for a in compress.ALLOCATIONS:
            r = compress.allocate(cal, B / (L * H * dh), a) if B else np.zeros((L, H), int)
            assert r.sum() == B and r.min() >= 0 and r.max() <= dh, (B, a, r.sum())
