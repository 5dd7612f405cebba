"The de-quantised GGUF cache (nbs/24_checkpoints.ipynb): keyed by the file's content and the conversion, not its time; `off` turns it off."
import os
from types import SimpleNamespace

from entropic_bound.checkpoints import ModelSource, _dequantised, _gguf_key, cache_dir

FAKE = SimpleNamespace(__version__="0.0-test")          # stands for the transformers module: only its version is read by the key


def test_the_key_follows_the_files_bytes_not_its_time(tmp_path):
    f = tmp_path / "m.Q4.gguf"
    f.write_bytes(b"GGUF" + bytes(100))
    key = _gguf_key(f, FAKE)
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))      # a reinstall: the same bytes, another time
    assert _gguf_key(f, FAKE) == key and key.startswith("m.Q4-")
    f.write_bytes(b"GGUF" + bytes(99) + b"\x01")          # other bytes, the same size
    assert _gguf_key(f, FAKE) != key
    assert _gguf_key(f, SimpleNamespace(__version__="0.1-test")) != _gguf_key(f, FAKE)   # another conversion


def test_off_keeps_nothing(tmp_path, monkeypatch):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + bytes(10))
    monkeypatch.setenv("ENTROPIC_BOUND_CACHE", "off")
    assert cache_dir() is None
    assert _dequantised(ModelSource(tmp_path, f.name, f.name), FAKE) is None          # nothing converted, nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf"]
    monkeypatch.setenv("ENTROPIC_BOUND_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
