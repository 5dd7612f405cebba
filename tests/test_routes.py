"""`entropic-bound compress --route`: the export is smaller than its input — sliced encoder heads (fewer parameters) or a
low-rank key cache (fewer numbers per token) — loads offline from its folder with transformers (`trust_remote_code=True`), and
keeps the fidelity its manifest states."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from entropic_bound import checkpoints, cli, compress, text  # noqa: E402
from conftest import reuse_run  # noqa: E402

RELOAD = """
import json, sys, transformers
folder, kind = sys.argv[1], sys.argv[2]
auto = transformers.AutoModel if kind == "encoder" else transformers.AutoModelForCausalLM
m = auto.from_pretrained(folder, trust_remote_code=True)
print(json.dumps(dict(cls=type(m).__name__, params=sum(p.numel() for p in m.parameters()))))
"""


def _reload(folder, kind):
    "Load the export in a fresh interpreter, offline, with transformers alone."
    r = subprocess.run([sys.executable, "-c", RELOAD, str(folder), kind], capture_output=True, text=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_slice_route_exports_fewer_parameters(tmp_path, capsys, kept_runs):
    out = tmp_path / "c"
    reuse_run(kept_runs, "minilm smoke, 2 splits", out)
    rc = cli.main(["compress", "--out", str(out), "--budget", "0.5", "--splits", "2", "--preset", "smoke", "--route", "slice", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "model" / "manifest.json").read_text())
    assert manifest["route"] == "slice" and (out / "model" / "modeling_sliced_bert.py").is_file()
    got = _reload(out / "model", "encoder")
    original = sum(p.numel() for p in checkpoints.load_adapter().model.parameters())
    sav = manifest["savings"]
    assert got["cls"] == "SlicedBertModel" and got["params"] == original - (sav["qk_params_full"] - sav["qk_params_sliced"])
    assert sav["qk_params_sliced"] < sav["qk_params_full"]
    # the reloaded slice keeps the fold's fidelity, measured on split 0's held-out lines
    net = transformers.AutoModel.from_pretrained(out / "model", trust_remote_code=True).eval()
    ad = checkpoints.load_adapter()
    _, held = text.split_lines(text.read_text(text.default_text_path()), 0)
    again = compress.fidelity(compress.sentence_embeddings(ad.model, ad.tokenizer, held), compress.sentence_embeddings(net, ad.tokenizer, held))
    for k, v in again.items(): assert v == pytest.approx(manifest["fidelity"][k], abs=1e-6), k


def _llama_folder(tmp_path):
    "A random small Llama (grouped keys) with SmolLM2's tokenizer."
    torch.manual_seed(0)
    tok = checkpoints.load_adapter("smollm2").tokenizer
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   vocab_size=len(tok), initializer_range=0.05, max_position_embeddings=256)
    folder = tmp_path / "llama"
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    "One random Llama for both key-cache routes (the second reuses the first's Table 6)."
    return _llama_folder(tmp_path_factory.mktemp("routes"))


@pytest.mark.parametrize("route", ["latent", "cache"])
def test_key_cache_routes_export_a_smaller_cache(tmp_path, capsys, llama, kept_runs, route):
    out = tmp_path / route
    reuse_run(kept_runs, f"llama {llama}", out)
    rc = cli.main(["compress", "--model", str(llama), "--out", str(out), "--budget", "0.5", "--splits", "2", "--route", route, "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "model" / "manifest.json").read_text())
    sav = manifest["savings"]
    assert manifest["route"] == route and sav["key_bytes_per_token_16bit"] == 2 * manifest["total_directions"] < sav["key_bytes_per_token_16bit_full"]   # 16-bit numbers
    assert _reload(out / "model", "decoder")["cls"] == "LlamaWithLowRankKeys"
    net = transformers.AutoModelForCausalLM.from_pretrained(out / "model", trust_remote_code=True).eval()
    ids = torch.tensor([[1, 5, 9, 17, 33, 65, 129]])
    with torch.no_grad():
        out_ids = net.generate(ids, max_new_tokens=6, do_sample=False)
        cache = net.new_key_cache(); net(input_ids=ids, past_key_values=cache, use_cache=True)
    assert out_ids.shape == (1, 13)
    assert sum(layer.keys.shape[-1] for layer in cache.layers) == manifest["total_directions"]       # sum_g r_g numbers per token
    if route == "latent":                                                                             # the latent cache is the fold
        plain = transformers.LlamaForCausalLM.from_pretrained(out / "model").eval()                 # the folded weights, plain cache
        with torch.no_grad(): assert plain.generate(ids, max_new_tokens=6, do_sample=False).tolist() == out_ids.tolist()


def test_bits_route_is_a_decoders_default_and_stores_the_bytes_it_counts(tmp_path, capsys, llama):
    "No --route on a rotary decoder: keys in bits; the export reloads, generates through its cache, and the cache holds the bytes the manifest counts."
    out = tmp_path / "bits"
    rc = cli.main(["compress", "--model", str(llama), "--out", str(out), "--bits", "3", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "model" / "manifest.json").read_text())
    assert manifest["route"] == "bits" and manifest["bits"] == 3 and manifest["fidelity"]["kl"] >= 0 and manifest["kivi_same_bytes"]["tokens"] > 0
    assert _reload(out / "model", "decoder")["cls"] == "LlamaWithLowRankKeys"
    net = transformers.AutoModelForCausalLM.from_pretrained(out / "model", trust_remote_code=True).eval().to(torch.bfloat16)
    spec, T = net.key_maps(), 1 + 32 + 6 * 32                                       # the sink, six whole runs, the window
    ids = torch.randint(1, net.config.vocab_size, (1, T))
    with torch.no_grad():
        out_ids = net.generate(ids[:, :8], max_new_tokens=40, do_sample=False)        # past the sink and the window: later tokens read coded keys
        cache = net.new_key_cache(); net(input_ids=ids, past_key_values=cache, use_cache=True)
    assert out_ids.shape == (1, 48)
    c = net.config
    assert cache.key_bytes() == pytest.approx(spec.key_bytes_per_token(T) * T, rel=1e-12)
    assert cache.key_bytes() < T * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 2                    # 16-bit keys


def test_route_refused_for_the_wrong_kind(tmp_path, capsys):
    rc = cli.main(["compress", "--out", str(tmp_path / "c"), "--route", "latent", "--splits", "2", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--route" in err[0] and not (tmp_path / "c").exists()
