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


def test_a_new_key_drops_the_same_files_older_copies_and_nothing_else(tmp_path):
    from entropic_bound.checkpoints import _drop_stale
    new = tmp_path / "m.Q4-0123456789abcdef-0123456789ab"
    names = ["m.Q4-fedcba9876543210-ba9876543210",                         # the same file name, another key
             ".m.Q4-fedcba9876543210-ba9876543210.lock",                    # ... and its lock
             "m.Q4-98362432-1796522999903674252-transformers5.24.0",       # the earlier key by size and time
             "m.Q4-large-0123456789abcdef-0123456789ab",                    # another file whose name begins the same
             "other-fedcba9876543210-ba9876543210", ".m.Q4-0123456789abcdef-0123456789ab.lock"]
    new.mkdir(); (new / "config.json").write_text("{}")
    for n in names: (tmp_path / n).mkdir() if not n.endswith(".lock") else (tmp_path / n).touch()
    _drop_stale(new)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new.name, "m.Q4-large-0123456789abcdef-0123456789ab",
                                                                 "other-fedcba9876543210-ba9876543210", ".m.Q4-0123456789abcdef-0123456789ab.lock"])
