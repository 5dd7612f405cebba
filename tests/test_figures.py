"""Every figure the prose quotes comes from one generated file, benchmarks/figures.json (scripts/make_figures.py), and agrees with it."""
import json
import subprocess
import sys
from pathlib import Path

from entropic_bound import cli

ROOT = Path(__file__).resolve().parents[1]


def test_the_prose_agrees_with_figures_json():
    got = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_figures.py"), "--check"], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr


def test_the_claim_count_is_the_claims_files():
    claims = json.loads((ROOT / "benchmarks" / "paper_claims.json").read_text())["claims"]
    quoted = json.loads((ROOT / "benchmarks" / "figures.json").read_text())["quoted"]
    assert quoted["paper_claims"] == f"{sum(c['verdict'] == 'holds' for c in claims)} of {len(claims)}"
    assert f"<!-- fig:paper_claims -->{quoted['paper_claims']}<!-- /fig -->" in (ROOT / "README.md").read_text()


def test_reproduce_help_quotes_the_quick_time(capsys):
    quick = json.loads((ROOT / "benchmarks" / "figures.json").read_text())["quoted"]["quick_time"]
    assert cli.main(["reproduce", "--help"]) == 0
    assert f"({quick} on the machine of benchmarks/README.md)" in " ".join(capsys.readouterr().out.split())


def test_a_changed_record_is_caught(tmp_path):
    "The check fails when the benchmark record and the prose disagree (a copy of the tree with the latest quick run changed)."
    import shutil
    for d in ("benchmarks", "scripts"): shutil.copytree(ROOT / d, tmp_path / d)
    (tmp_path / "nbs").mkdir(); shutil.copy(ROOT / "nbs" / "index.ipynb", tmp_path / "nbs"); shutil.copy(ROOT / "README.md", tmp_path)
    log = json.loads((tmp_path / "benchmarks" / "timings.json").read_text())
    log["runs"].append(dict(log["runs"][-1], total_s=log["runs"][-1]["total_s"] + 1.0))
    (tmp_path / "benchmarks" / "timings.json").write_text(json.dumps(log))
    got = subprocess.run([sys.executable, str(tmp_path / "scripts" / "make_figures.py"), "--check"], capture_output=True, text=True)
    assert got.returncode == 1 and "out of step" in got.stdout, got.stdout + got.stderr
