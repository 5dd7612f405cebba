"""Exports keep what their source had: the sliced MiniLM, written by `compress.export` (the `slice` route), carries the
sentence-transformers files of the shipped checkpoint, loads the way the source loads (`SentenceTransformer(folder)`: mean pooling,
then unit norm) to the in-memory sliced model's embeddings, and reloads by the lines its manifest documents without a prompt."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from entropic_bound import checkpoints, compress, text  # noqa: E402

SENTENCES = ["The cat sat on the mat.", "A function returns a value to its caller.", "Rain is expected tomorrow afternoon.",
             "Attention weighs every token by its relevance to the query."]


@pytest.fixture(scope="module")
def sliced_export(tmp_path_factory):
    "The shipped MiniLM cut by native allocation at half its query-key directions (calibrated on 12 sentences), sliced and exported."
    from entropic_bound.modeling_sliced_bert import SlicedBertModel
    ad = checkpoints.load_adapter()
    fit, _ = text.split_lines(text.read_text(text.default_text_path()), 0)
    cal = compress.calibrate(ad, text.encode_text(ad, fit[:12]))
    ranks = compress.allocate(cal, 0.5, "native")
    sliced = SlicedBertModel.from_folded(compress.fold(ad, cal, ranks), ranks)
    folder = tmp_path_factory.mktemp("export") / "model"
    compress.export(sliced, ad.tokenizer, cal, ranks, "whitened", folder, dict(route="slice"), progress=False)
    return ad, sliced, folder


def test_export_carries_the_source_files(sliced_export):
    ad, _, folder = sliced_export
    source = checkpoints.default_model_dir()
    assert compress.source_folder(ad.model) == source
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling/config.json"):
        assert (folder / name).read_bytes() == (source / name).read_bytes(), name
    assert {"modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling/"} <= set(manifest["source_files"])
    # every top-level entry of the source is in the export: copied, or replaced by the export's own file (the weights, the config)
    assert {p.name for p in source.iterdir() if not p.name.startswith(".")} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "config.json").read_text())["model_type"] == "sliced_bert"          # the export's own, not the source's
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]


def test_export_loads_as_its_source_loads(sliced_export):
    st = pytest.importorskip("sentence_transformers")
    ad, sliced, folder = sliced_export
    model = st.SentenceTransformer(str(folder), device="cpu", trust_remote_code=True, local_files_only=True)
    source = st.SentenceTransformer(str(checkpoints.default_model_dir()), device="cpu", local_files_only=True)
    assert [type(m).__name__ for m in model] == [type(m).__name__ for m in source] == ["Transformer", "Pooling", "Normalize"]
    got = model.encode(SENTENCES, convert_to_tensor=True).double().cpu()
    want = compress.sentence_embeddings(sliced, ad.tokenizer, SENTENCES)                # the sliced model in memory: mean pooled, unit norm
    assert torch.linalg.norm(got, dim=-1).sub(1).abs().max() < 1e-6
    assert (got - want).abs().max() < 1e-5
    assert model.max_seq_length == source.max_seq_length == 256                            # sentence_bert_config.json, kept


def test_documented_reload_lines_need_no_prompt(sliced_export):
    "The manifest's transformers line, run as written with stdin closed: no trust_remote_code prompt, the sliced model's embeddings."
    ad, sliced, folder = sliced_export
    line = json.loads((folder / "manifest.json").read_text())["load"]["transformers"]
    assert line.count("trust_remote_code=True") == 2, line
    code = (f"import json, sys, torch\nfrom transformers import AutoModel, AutoTokenizer\nfrom entropic_bound.compress import sentence_embeddings\n"
            f"folder = {str(folder)!r}\nmodel, tokenizer = {line.replace('; ', ', ')}\n"
            f"print(json.dumps(sentence_embeddings(model.eval(), tokenizer, {SENTENCES!r}).tolist()))\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    run = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    assert "[y/N]" not in run.stdout + run.stderr and "trust_remote_code" not in run.stderr, run.stderr
    got = torch.tensor(json.loads(run.stdout.strip().splitlines()[-1]), dtype=torch.float64)
    assert (got - compress.sentence_embeddings(sliced, ad.tokenizer, SENTENCES)).abs().max() < 1e-5
