"""Keys in bits (nbs/11e_key_bits.ipynb): the export keeps its source's precision, and its basis is float32 and exact."""
import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from entropic_bound.checkpoints import LlamaHeads, adapter_from_model
from entropic_bound.text import pack_token_ids
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


def test_as_stored_rounds_a_copy_to_the_exports_precision(tmp_path):
    "The bits route measures the weights the export stores: every weight rounded to the source's precision, on a copy."
    from entropic_bound.key_bits import as_stored
    llama = _source(tmp_path / "source", torch.float32)
    with torch.no_grad():
        for w in llama.model.parameters(): w.add_(1e-5 * torch.randn_like(w))           # weights that a 16-bit checkpoint cannot hold exactly
    before = {n: w.clone() for n, w in llama.model.named_parameters()}
    stored = as_stored(llama, torch.float16)
    moved = 0
    for n, w in stored.model.named_parameters():
        assert w.dtype == torch.float32 and torch.equal(w, before[n].half().float()), n
        moved += int(not torch.equal(w, before[n]))
    assert moved > 0                                                                    # the rounding changed weights ...
    for n, w in llama.model.named_parameters(): assert torch.equal(w, before[n]), n     # ... of the copy only
    assert stored.n_layers == llama.n_layers and stored.family == llama.family


def test_bits_route_measures_a_16_bit_source_as_its_export_stores_it(tmp_path):
    "A float16 source: the manifest's fidelity is measured on the float16 weights the folder holds (and says so)."
    from entropic_bound.checkpoints import load_adapter
    from entropic_bound.key_bits import run_key_bits
    torch.manual_seed(0)
    tok = load_adapter("smollm2").tokenizer
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   vocab_size=len(tok), initializer_range=0.05, max_position_embeddings=256)
    transformers.LlamaForCausalLM(cfg).to(torch.float16).save_pretrained(tmp_path / "src"); tok.save_pretrained(tmp_path / "src")
    manifest = run_key_bits(tmp_path / "out", model=str(tmp_path / "src"), bits=2, progress=False, log=lambda *a: None)
    assert manifest["measured_on"].startswith("the weights as the export stores them (float16), computed in ")
    shipped = json.loads((tmp_path / "out" / "model" / "manifest.json").read_text())
    assert shipped["weights_dtype"] == "float16" and shipped["fidelity"] == manifest["fidelity"] and manifest["fidelity"]["tokens"] > 0


def test_codecs_at_builds_the_rows_asked_for_as_the_full_table_does(tmp_path):
    llama = _source(tmp_path / "source", torch.float32)
    rng = np.random.default_rng(1)
    toks = pack_token_ids([list(rng.integers(1, 60, size=int(rng.integers(20, 40)))) for _ in range(12)], seq_len=64, limit=16)
    stats = key_statistics(llama, toks, pre=(True, False))
    every, some = codecs_at(*stats, 2), codecs_at(*stats, 2, names=("native", "kivi", "shuffled"))
    assert list(some) == ["kivi", "native", "shuffled"] and len(every) == 8
    for name, spec in some.items():
        assert np.array_equal(np.asarray(spec.bits), np.asarray(every[name].bits)), name
    with pytest.raises(Exception, match="names"): codecs_at(*stats, 2, names=("nativ",))


def test_the_commands_rows_need_no_statistics_after_the_rotation(tmp_path):
    "run_key_bits computes the pre-rotary statistics alone: its two rows are the same with post=None, and a row that reads post refuses None."
    llama = _source(tmp_path / "source", torch.float32)
    rng = np.random.default_rng(2)
    toks = pack_token_ids([list(rng.integers(1, 60, size=int(rng.integers(20, 40)))) for _ in range(12)], seq_len=64, limit=16)
    pre, post = key_statistics(llama, toks, pre=(True, False))
    alone = key_statistics(llama, toks, pre=True)
    both, without = codecs_at(pre, post, 2, names=("native", "kivi")), codecs_at(alone, None, 2, names=("native", "kivi"))
    assert list(both) == list(without) == ["kivi", "native"]
    for name in both:
        a, b = both[name], without[name]
        assert np.array_equal(np.asarray(a.bits), np.asarray(b.bits)) and a.pre == b.pre, name
        assert (a.encode is None) == (b.encode is None), name
        for kind in ("encode", "decode"):
            for ra, rb in zip(getattr(a, kind) or (), getattr(b, kind) or ()):
                assert all(torch.equal(x, y) for x, y in zip(ra, rb)), (name, kind)
    for row in ("native_post", "rank_cut"):
        with pytest.raises(Exception, match="post"): codecs_at(alone, None, 2, names=("native", row))


def test_distortion_is_quantise_at_every_width_to_the_last_bit():
    "`_distortion` codes every width in one call: its error curves equal those of `quantise` at each width, one at a time, exactly."
    from entropic_bound.key_bits import _distortion, quantise, MAX_BITS
    g = torch.Generator().manual_seed(0)
    C = torch.randn(3, 77, 5, generator=g, dtype=torch.float64) * torch.tensor([1.0, 0.1, 3.0, 0.0, 1e-3], dtype=torch.float64)
    mask = torch.ones(3, 77, dtype=torch.long); mask[1, 60:] = 0; mask[2, :3] = 0          # padding and a run cut short (77 = 2 * 32 + 13)
    m = mask.to(C.dtype)[..., None]
    want = np.stack([((quantise(C, [b] * 5, 32) - C) ** 2 * m).sum((0, 1)).numpy() for b in range(MAX_BITS + 1)], -1)
    got = _distortion(C, mask, 32)
    assert got.shape == (5, MAX_BITS + 1) and np.array_equal(got, want)
    assert np.array_equal(got[:, 0], (C ** 2 * m).sum((0, 1)).numpy()) and (np.diff(got[:, 1:], axis=-1) <= 1e-12).all()   # a wider code never errs more


def test_coded_attention_is_the_two_score_matrices():
    """`coded_keys_attention` scores every query against the coded keys once and puts the plain keys' scores in their place, run by run
    of queries: its definition, both score matrices chosen pair by pair (`quantised_pairs`), with a causal mask and padding, without a
    mask, and for the last queries of a sequence; to rounding (a run of one query is a matrix-vector product, which may round otherwise;
    on SmolLM2's pages every run is 31 or 32 queries and the rows are equal to the last bit: benchmarks/bench_smollm2_ci.py --codec)."""
    from types import SimpleNamespace
    from transformers.models.llama.modeling_llama import repeat_kv
    from entropic_bound.key_bits import coded_keys_attention, quantised_pairs

    class Rounded:                                                     # a codec: keys read back on a grid of 1/4
        group, window, sink = 8, 4, 1
        def read_back(self, layer, key, rotary): return (key * 4).round() / 4

    g = torch.Generator().manual_seed(0)
    n, H, G, T, dh = 2, 4, 2, 45, 16
    q, k, v = (torch.randn(n, h, T, dh, generator=g) for h in (H, G, G))
    low = torch.finfo(torch.float32).min
    causal = torch.full((T, T), low).triu(1)[None, None].repeat(n, 1, 1, 1)
    causal[1, ..., :5] = low                                           # the second sequence padded at its start
    moved = 0
    for Tq, mask, is_causal in ((T, causal, True), (T, None, False), (7, causal[..., -7:, :], True)):
        module = SimpleNamespace(_key_codec=Rounded(), num_key_value_groups=H // G, layer_idx=0, _key_rotary=None, is_causal=is_causal)
        out, w = coded_keys_attention(module, q[..., -Tq:, :], k, v, mask, 0.25)
        Q, coded = q[..., -Tq:, :], Rounded().read_back(0, k, None)
        S = torch.where(quantised_pairs(T, 8, 4, 1)[T - Tq:], Q @ repeat_kv(coded, 2).transpose(-1, -2), Q @ repeat_kv(k, 2).transpose(-1, -2)) * 0.25
        want = torch.softmax(S if mask is None else S + mask, -1, dtype=torch.float32)
        close = lambda a, b: float((a - b).abs().max()) <= 1e-6
        assert close(w, want) and close(out, (want @ repeat_kv(v, 2)).transpose(1, 2).contiguous()), (Tq, is_causal)
        plain = torch.softmax(Q @ repeat_kv(k, 2).transpose(-1, -2) * 0.25 + (0 if mask is None else mask), -1)
        moved += int(float((w - plain).abs().max()) > 1e-3)
    assert moved == 3                                                  # the coded keys are read: not the plain attention
