"""What a user meets at the command line: every command checks `--out` before any work (one line, exit status 2, nothing written,
nothing loaded), Ctrl-C is one line and exit status 130 in every command, the exit status of `reproduce` compares verdicts with the
stored reference, and `--help` imports no torch."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from entropic_bound import cli, reproduce as rp
import entropic_bound.estimate as est
import entropic_bound.table6 as t6
import entropic_bound.compress_run as cr

COMMANDS = {"reproduce": [], "estimate": ["data.npz"], "audit": [], "compress": []}


def _run(argv, capsys):
    "Exit status, stdout and stderr of `entropic-bound argv`, run in this process."
    code = cli.main(argv)
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture
def no_work(monkeypatch):
    "Every command's work (loading data or a model, running experiments) fails the test if it is reached."
    def reached(*a, **k): raise AssertionError("the command started its work before checking --out")
    import entropic_bound.audit_run as ar
    for module, name in ((rp, "reproduce"), (est, "load_samples"), (ar, "run_audit"), (cr, "run_compress")):
        monkeypatch.setattr(module, name, reached)


def _unwritable(monkeypatch, place: Path):
    "Make `place` unwritable: mode 0o555, and (as root, whom modes do not stop) `os.access` answering as for a user."
    place.chmod(0o555)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if Path(p) == place and mode & os.W_OK else real(p, mode, *a, **k))


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("where", ["file", "under a file", "deep under a file", "unwritable", "under an unwritable folder"])
def test_every_command_checks_out_first(command, where, tmp_path, capsys, monkeypatch, no_work):
    f = tmp_path / "afile"; f.write_text("x")
    ro = tmp_path / "ro"; ro.mkdir()
    out = {"file": f, "under a file": f / "sub", "deep under a file": f / "a" / "b", "unwritable": ro, "under an unwritable folder": ro / "new"}[where]
    if "unwritable" in where: _unwritable(monkeypatch, ro)
    try: code, _, err = _run([command, *COMMANDS[command], "--out", str(out)], capsys)
    finally: ro.chmod(0o755)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and f"--out {out}" in err, err
    assert sorted(os.listdir(tmp_path)) == ["afile", "ro"] and not os.listdir(ro) and f.read_text() == "x"


@pytest.mark.parametrize("command", ["estimate", "audit", "compress"])
def test_ctrl_c_is_one_line_and_130(command, tmp_path, capsys, monkeypatch):
    def interrupted(*a, **k): raise KeyboardInterrupt
    import entropic_bound.audit_run as ar
    monkeypatch.setattr(*{"estimate": (est, "load_samples"), "audit": (ar, "run_audit"), "compress": (cr, "run_compress")}[command], interrupted)
    code, _, err = _run([command, *COMMANDS[command], "--out", str(tmp_path / "o")], capsys)
    assert (code, err) == (130, f"entropic-bound {command}: interrupted\n")


def _claims(verdicts: dict) -> list:
    "Claim records with the given verdicts (the fields reproduce prints)."
    return [dict(id=k, verdict=v, kind="empirical", measured=1.0, criterion=">= 0", statement="a claim", holds=v == "holds") for k, v in verdicts.items()]


def test_reproduce_exit_0_when_the_verdicts_are_the_reference(tmp_path, capsys, monkeypatch):
    ref = cli.reference_verdicts()
    assert ref and "fails" in ref.values() and "holds" in ref.values()     # the reference documents claims that fail by design
    monkeypatch.setattr(rp, "reproduce", lambda *a, **k: _claims(ref))
    code, out, _ = _run(["reproduce", "--out", str(tmp_path / "r"), "--preset", "smoke"], capsys)
    assert code == 0, out
    assert f"all {len(ref)} verdicts as the reference documents them" in out and "DIFFERS" not in out


def test_reproduce_exit_1_when_a_verdict_differs(tmp_path, capsys, monkeypatch):
    ref = cli.reference_verdicts()
    failing = next(k for k, v in ref.items() if v == "fails")
    measured = {**ref, failing: "holds", "new.claim": "holds"}              # a documented failure that now holds, and a claim the reference lacks
    monkeypatch.setattr(rp, "reproduce", lambda *a, **k: _claims(measured))
    code, out, _ = _run(["reproduce", "--out", str(tmp_path / "r")], capsys)
    assert code == 1, out
    assert f"DIFFERS FROM THE REFERENCE {failing}: reference fails, measured holds" in out
    assert f"1 of {len(ref)} verdicts differ from the reference" in out and "not compared: new.claim" in out


def test_reproduce_smoke_run_compares_with_the_reference(tmp_path, capsys):
    "A real (smoke-sized) run of Table 1: the exit status is 0 exactly when no verdict differs from the reference's."
    code, out, err = _run(["reproduce", "--preset", "smoke", "--only", "table1", "--out", str(tmp_path / "r"), "--no-progress", "--jobs", "1"], capsys)
    assert code in (0, 1), err
    assert (code == 1) == ("DIFFERS FROM THE REFERENCE" in out), out


def test_the_reader_is_the_one_the_paper_claims_test_uses():
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import test_paper_claims
    finally: sys.path.pop(0)
    assert test_paper_claims.quick_verdicts is cli.reference_verdicts


def test_help_imports_no_torch():
    "The commands' own options are built only for the command named, so `entropic-bound --help` reads no registry and imports no torch."
    probe = ("import sys, contextlib, io\nfrom entropic_bound.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()) as o: code = main(sys.argv[1:])\n"
             "print(code, 'torch' in sys.modules, 'usage: entropic-bound' in o.getvalue())")
    got = subprocess.run([sys.executable, "-c", probe, "--help"], capture_output=True, text=True, check=True)
    assert got.stdout.split() == ["0", "False", "True"], got.stderr


def test_reproduce_help_states_the_exit_status(capsys):
    assert cli.main(["reproduce", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 every claim's verdict is the one the stored reference documents" in text and "1 some verdict differs" in text


@pytest.mark.parametrize("command", ["reproduce", "estimate", "audit", "compress"])
def test_each_commands_help_lists_the_librarys_registries(command, capsys):
    "No name is mirrored in the command line: each command's help lists what the library's registries hold now."
    from entropic_bound.experiment import EXPERIMENTS, PRESETS, SHELVES
    from entropic_bound.checkpoints import SUPPORTED_FAMILIES
    from entropic_bound.compress import ALLOCATIONS, BUDGETS
    from entropic_bound.compress_run import ROUTES
    assert cli.main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    names = {"reproduce": (*EXPERIMENTS, *PRESETS, *SHELVES), "estimate": est.KINDS, "audit": SUPPORTED_FAMILIES,
             "compress": (*ALLOCATIONS, *ROUTES, *t6.TABLE6_PRESETS, *SUPPORTED_FAMILIES, ",".join(f"{b:g}" for b in BUDGETS))}[command]
    assert all(n in text for n in names), [n for n in names if n not in text]
    assert not hasattr(cli, "MODEL_FAMILIES") and not hasattr(cli, "ALLOCATION_NAMES") and not hasattr(cli, "TABLE6_BUDGETS")


@pytest.mark.parametrize("budget, budgets, expected", [(None, None, (0.5, (0.25, 0.5, 0.75))), ("0.3", None, (0.3, (0.3,))),
                                                       ("0.3", "0.2,0.6", (0.3, (0.2, 0.6))), (None, "0.4", (0.5, (0.4,)))])
def test_compress_budgets(budget, budgets, expected, tmp_path, capsys, monkeypatch):
    "One `--budget` computes the table at that budget only; `--budgets` sets the table; neither: Table 6's budgets."
    seen = {}
    def run_compress(out, model, text, budget, allocation, order, budgets, *a, **k):
        seen.update(budget=budget, budgets=tuple(budgets)); raise KeyboardInterrupt
    monkeypatch.setattr(cr, "run_compress", run_compress)
    argv = ["compress", "--out", str(tmp_path / "c")] + (["--budget", budget] if budget else []) + (["--budgets", budgets] if budgets else [])
    assert _run(argv, capsys)[0] == 130
    assert (seen["budget"], seen["budgets"]) == expected


def test_compress_help_says_splits_at_least_2(capsys):
    assert cli.main(["compress", "--help"]) == 0
    assert ">= 2" in " ".join(capsys.readouterr().out.split())


def test_audit_refuses_a_users_own_file_before_loading(tmp_path, capsys, no_work):
    "The output folder is claimed first (entropic_bound.outputs.OutputFolder): a summary.md the library did not write is never overwritten."
    out = tmp_path / "audit"; out.mkdir(); (out / "summary.md").write_text("my notes")
    code, _, err = _run(["audit", "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and "summary.md was not written by entropic-bound" in err, err
    assert sorted(os.listdir(out)) == ["summary.md"] and (out / "summary.md").read_text() == "my notes"


def test_estimate_into_a_folder_another_run_holds(tmp_path, capsys):
    "A second run into a folder another process holds is refused in one line, before the data are read; the folder is left as it was."
    out = tmp_path / "est"
    holder = subprocess.Popen([sys.executable, "-c", f"import time; from entropic_bound.outputs import OutputFolder\n"
                               f"with OutputFolder({str(out)!r}): print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = _run(["estimate", str(tmp_path / "missing.npz"), "--out", str(out)], capsys)
        assert code == 2 and err.count("\n") == 1 and "in use by another run" in err, err
    finally: holder.kill(); holder.wait()
    assert not (out / "estimate.json").exists()
