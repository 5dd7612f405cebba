"""The reproduce command's bookkeeping: resumable, atomic, skip-when-done, --force, claims file.

Uses two tiny stand-in experiments (the `fake_experiments` fixture of conftest.py, registered in place of the
paper's tables) so the logic is tested in seconds; the real experiments are exercised by their notebooks and by
the README's main job.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from entropic_bound import cli, reproduce as rp

def test_outputs_skip_and_force(tmp_path, fake_experiments):
    out = tmp_path / "out"
    claims = rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert [c["id"] for c in claims] == ["fake1.c", "fake2.c"] and all(c["margin"] > 0 for c in claims)
    assert all(c["verdict"] == ("holds" if c["margin"] >= c["critical"] else "undecided") and c["holds"] == (c["verdict"] == "holds") for c in claims)
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


def test_changed_code_is_not_reused(tmp_path, fake_experiments):
    "A record made by other code is stale: the record key holds the code's identity, so a rerun recomputes."
    out, source = tmp_path / "out", Path(fake_experiments.__file__)
    rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1"], progress=False)
    key = json.loads((out / ".records" / "fake1.json").read_text())["key"]
    rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1"], progress=False)
    assert fake_experiments.CALLS == ["fake1"]                                  # same code: reused
    source.write_text(source.read_text() + "\n# a changed line\n")
    rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1"], progress=False)
    assert fake_experiments.CALLS == ["fake1", "fake1"]                         # changed code: recomputed
    assert json.loads((out / ".records" / "fake1.json").read_text())["key"] != key


def test_killed_run_resumes_to_identical_outputs(tmp_path, fake_experiments):
    out = tmp_path / "out"
    script = textwrap.dedent(f'''
        import json, sys; sys.path.insert(0, {str(Path(fake_experiments.__file__).parent)!r})
        import fake_experiments
        from entropic_bound import reproduce as rp
        for n in ("fake1", "fake2"):
            rp.EXPERIMENTS[n] = f"fake_experiments:{{n}}"
        rp.reproduce({str(out)!r}, "quick", seeds=[0, 1, 2], only=["fake1", "fake2"], progress=False)
        print(json.dumps(fake_experiments.CALLS))
    ''')
    killed = subprocess.run([sys.executable, "-c", script], env={**os.environ, "FAKE_DIE_IN": "fake2"})
    assert killed.returncode == 9
    assert (out / "fake1.csv").exists() and not (out / "fake2.csv").exists() and not (out / "claims.json").exists()
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]
    first = (out / "fake1.csv").read_bytes()
    written = {f: os.stat(out / f) for f in ("fake1.csv", ".records/fake1.json")}
    resumed = subprocess.run([sys.executable, "-c", script], env={k: v for k, v in os.environ.items() if k != "FAKE_DIE_IN"},
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout.splitlines()[-1]) == ["fake2"]           # the rerun measured fake2 only: fake1 was reused
    for f, st in written.items():                                             # and fake1's files were not rewritten (atomic
        now = os.stat(out / f)                                                # writes would give a new inode and time)
        assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), f
    assert (out / "fake1.csv").read_bytes() == first
    records = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in records] == ["fake1.c", "fake2.c"]


def test_bad_arguments_exit_2(tmp_path, capsys):
    f = tmp_path / "file"; f.write_text("x")
    for argv in (["reproduce", "--out", str(f)], ["reproduce", "--out", str(tmp_path), "--seeds", "0"],
                 ["reproduce", "--out", str(tmp_path), "--only", "table1,nope"], ["reproduce", "--out", str(tmp_path), "--preset", "x"]):
        code = cli.main(argv)
        assert code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("entropic-bound: error:") and "\n" not in err
    assert sorted(os.listdir(tmp_path)) == ["file"]
