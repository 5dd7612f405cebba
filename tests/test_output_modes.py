"""Every output gets the mode any new file gets (0666/0777 less the umask), the exported checkpoint included: colleagues can read it."""
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from entropic_bound import compress


class _Net:
    "Stands in for a model: `save_pretrained` writes its weights owner-only, as a temporary-file writer would."
    config, dtype = SimpleNamespace(architectures=None), "float32"                         # the precision it holds (a source of unknown precision: written as held)
    def save_pretrained(self, folder):
        fd = os.open(Path(folder) / "model.safetensors", os.O_CREAT | os.O_WRONLY, 0o600); os.write(fd, b"weights"); os.close(fd)
        (Path(folder) / "sub").mkdir(mode=0o700); (Path(folder) / "sub" / "part.bin").write_bytes(b"x")


class _Tokenizer:
    def save_pretrained(self, folder): (Path(folder) / "tokenizer.json").write_text("{}")


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_export_folder_and_weights_get_the_umask_modes(umask, file_mode, dir_mode, tmp_path):
    cal = SimpleNamespace(shape=(1, 2), d_head=4, group_size=1)
    old = os.umask(umask)
    try: model = compress.export(_Net(), _Tokenizer(), cal, np.array([[2, 1]]), "whitened", tmp_path / "model", dict(budget=0.375))
    finally: os.umask(old)
    modes = {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777 for p in [model, *model.rglob("*")]}
    assert set(modes) == {"model", "model/model.safetensors", "model/tokenizer.json", "model/manifest.json", "model/sub", "model/sub/part.bin"}
    assert modes == {k: dir_mode if (tmp_path / k).is_dir() else file_mode for k in modes}
    assert json.loads((model / "manifest.json").read_text())["total_directions"] == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".compress-")]
