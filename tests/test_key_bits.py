"""Keys in bits (nbs/11e_key_bits.ipynb): the export keeps its source's precision, and its basis is float32 and exact."""
import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from entropic_bound.checkpoints import LlamaHeads, adapter_from_model, pack_token_ids
from entropic_bound.compress import export
from entropic_bound.key_bits import key_statistics, codecs_at, key_bits_model


class _NoTokenizer:
    def save_pretrained(self, folder): pass


def _source(folder, dtype):
    "A random example Llama saved in `dtype` to `folder`, loaded back in float32 from there (as a user's checkpoint is)."
    torch.manual_seed(0)
    cfg = LlamaHeads.example_config("llama"); cfg.initializer_range = 0.1
    transformers.LlamaForCausalLM(cfg).to(dtype).save_pretrained(folder)
    return adapter_from_model(transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_bits_export_keeps_the_sources_precision_and_an_exact_float32_basis(tmp_path, dtype):
    llama = _source(tmp_path / "source", dtype)
    rng = np.random.default_rng(0)
    toks = pack_token_ids([list(rng.integers(1, 60, size=int(rng.integers(20, 40)))) for _ in range(12)], seq_len=64, limit=16)
    spec = codecs_at(*key_statistics(llama, toks, pre=(True, False)), 2)["native"]
    net = key_bits_model(llama.model, spec)
    out = export(net, _NoTokenizer(), None, None, None, tmp_path / "model", {})
    assert json.loads((out / "manifest.json").read_text())["weights_dtype"] == str(dtype).removeprefix("torch.")
    again = transformers.AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()     # as the source is loaded
    assert type(again).__name__ == "LlamaWithLowRankKeys"
    assert again.model.layers[0].self_attn.q_proj.weight.dtype == dtype
    theirs = dict(again.key_cache_maps.named_buffers())
    for name, m in net.key_cache_maps.named_buffers():
        assert theirs[name].dtype == torch.float32 and torch.equal(theirs[name], m), name               # the basis is not rounded
    with torch.no_grad():                                                                                # it generates through its cache
        assert again.generate(toks.ids[:1, :8], max_new_tokens=4, do_sample=False).shape == (1, 12)
