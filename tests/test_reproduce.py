"""The reproduce command's bookkeeping: resumable, atomic, skip-when-done, --force, claims file.

Uses two tiny stand-in experiments (registered in place of the paper's tables) so the logic is tested
in seconds; the real experiments are exercised by their notebooks and by the README's main job.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from entropic_bound import reproduce as rp

FAKE = textwrap.dedent('''
    import os
    from dataclasses import dataclass
    import numpy as np
    from entropic_bound.experiment import Experiment
    from entropic_bound.report import ExperimentResult, claim_over_seeds
    CALLS = []

    @dataclass(frozen=True)
    class FakeSettings:
        scale: float = 1.0

    class Fake(Experiment):
        Settings, presets = FakeSettings, {"quick": {}, "paper": dict(scale=2.0)}
        def __init__(self, name): self.name, self.section, self.title = name, "§0", f"{name} stand-in"
        def measure(self, s, part, seeds, device="cpu", progress=None):
            CALLS.append(self.name)
            if os.environ.get("FAKE_DIE_IN") == self.name: os._exit(9)      # a kill in the middle of the run
            return {x: s.scale * (x + 1) for x in seeds}
        def summarise(self, s, units):
            vals = list(units["main"].values())
            return ExperimentResult(self.name, [dict(seed=x, value=v) for x, v in units["main"].items()],
                                    [claim_over_seeds(f"{self.name}.c", "§0", "value is positive", vals, 0.0, ">=",
                                                     control=("the same value negated", [-v for v in vals]))])
    fake1, fake2 = Fake("fake1"), Fake("fake2")
''')



@pytest.fixture
def fake_experiments(tmp_path, monkeypatch):
    (tmp_path / "fake_experiments.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fake1", "fake2"):
        monkeypatch.setitem(rp.EXPERIMENTS, name, f"fake_experiments:{name}")
    import fake_experiments
    fake_experiments.CALLS.clear()
    return fake_experiments


def test_outputs_skip_and_force(tmp_path, fake_experiments):
    out = tmp_path / "out"
    claims = rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert [c["id"] for c in claims] == ["fake1.c", "fake2.c"] and all(c["holds"] for c in claims)
    assert (out / "fake1.csv").read_text().splitlines() == ["seed,value", "0,1", "1,2"]
    assert json.loads((out / "claims.json").read_text()) == claims
    assert "fake2 stand-in" in (out / "summary.md").read_text()
    assert fake_experiments.CALLS == ["fake1", "fake2"]
    rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert fake_experiments.CALLS == ["fake1", "fake2"]                       # same configuration: nothing rerun
    rp.reproduce(out, "paper", seeds=[0, 1], only=["fake1"], progress=False)
    assert fake_experiments.CALLS == ["fake1", "fake2", "fake1"]              # changed configuration: rerun
    rp.reproduce(out, "paper", seeds=[0, 1], only=["fake1"], force=True, progress=False)
    assert fake_experiments.CALLS[-1] == "fake1" and len(fake_experiments.CALLS) == 4
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]


def test_killed_run_resumes_to_identical_outputs(tmp_path, fake_experiments):
    out = tmp_path / "out"
    script = textwrap.dedent(f'''
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        from entropic_bound import reproduce as rp
        for n in ("fake1", "fake2"):
            rp.EXPERIMENTS[n] = f"fake_experiments:{{n}}"
        rp.reproduce({str(out)!r}, "quick", seeds=[0, 1, 2], only=["fake1", "fake2"], progress=False)
    ''')
    killed = subprocess.run([sys.executable, "-c", script], env={**os.environ, "FAKE_DIE_IN": "fake2"})
    assert killed.returncode == 9
    assert (out / "fake1.csv").exists() and not (out / "fake2.csv").exists() and not (out / "claims.json").exists()
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]
    first = (out / "fake1.csv").read_bytes()
    resumed = subprocess.run([sys.executable, "-c", script], env={k: v for k, v in os.environ.items() if k != "FAKE_DIE_IN"})
    assert resumed.returncode == 0
    assert (out / "fake1.csv").read_bytes() == first
    records = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in records] == ["fake1.c", "fake2.c"]


def test_bad_arguments_exit_2(tmp_path, capsys):
    f = tmp_path / "file"; f.write_text("x")
    for argv in (["reproduce", "--out", str(f)], ["reproduce", "--out", str(tmp_path), "--seeds", "0"],
                 ["reproduce", "--out", str(tmp_path), "--only", "table1,nope"], ["reproduce", "--out", str(tmp_path), "--preset", "x"]):
        with pytest.raises(SystemExit) as e:
            rp.main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("entropic-bound: error:") and "\n" not in err
    assert sorted(os.listdir(tmp_path)) == ["file"]
