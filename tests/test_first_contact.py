"""First contact (issue 59): `reproduce` and `compress` claim their output folder first (`outputs.OutputFolder`: a second run into
it is refused at once, a failure before the first result leaves nothing, Ctrl-C keeps every finished record, a results folder
written before the manifest existed is resumed), and the cheap checks — text length, scheduler reachability, seed bounds,
`--seq-len` against the model — run before any model loads or experiment runs: one line on stderr naming the option, exit
status 2, no traceback, nothing left in `--out`."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from entropic_bound import checkpoints, cli, reproduce as rp, text
from entropic_bound.outputs import LOCK_FILE, MANIFEST_FILE

WAIT = 120                                                     # seconds a subprocess may take to start (a loaded machine)


def _run(argv, capsys):
    "Exit status and stderr of `entropic-bound argv`, run in this process."
    code = cli.main(argv)
    return code, capsys.readouterr().err


def _one_line(code, err, option):
    "Exit status 2 and one line on stderr that names `option`, without a traceback."
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and option in err, err


@pytest.fixture
def no_model(monkeypatch):
    "Loading a model, or running an experiment, fails the test: the checks must come first."
    def loaded(*a, **k): raise AssertionError("the model was loaded before the cheap checks")
    monkeypatch.setattr(checkpoints, "loaded_adapter", loaded)
    monkeypatch.setattr(checkpoints, "load_adapter", loaded)
    monkeypatch.setattr(rp, "run_experiments", loaded)


def _text(tmp_path, n: int) -> Path:
    p = tmp_path / f"{n}-lines.txt"
    p.write_text("".join(f"Line {i} of a short text about attention heads.\n" for i in range(n)))
    return p


# ---- cheap checks -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lines", [1, 2, 10])
def test_audit_text_of_one_sequence_is_refused_before_the_model_loads(lines, tmp_path, capsys, no_model):
    "Lines that pack into one sequence of --seq-len tokens (one line always does) cannot be split into a fit half and a held-out half."
    out = tmp_path / "out"
    code, err = _run(["audit", "--text", str(_text(tmp_path, lines)), "--out", str(out), "--no-progress"], capsys)
    _one_line(code, err, "--text")
    assert "packs into 1 sequence of --seq-len 128 tokens; the audit needs at least 2" in err and not out.exists()


def test_audit_text_of_two_sequences_goes_through(tmp_path, capsys, monkeypatch):
    "The same ten lines in sequences of 16 tokens: more than one, so the check lets the audit start (and the audit measures them)."
    import entropic_bound.audit_run as ar
    seen = []
    monkeypatch.setattr(ar, "run_audit", lambda *a, **k: seen.append(a[6]))
    code, err = _run(["audit", "--text", str(_text(tmp_path, 10)), "--seq-len", "16", "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert code == 0 and seen == [16], err


@pytest.mark.parametrize("lines", [1, 10, 29])
def test_compress_text_below_30_lines_is_refused_before_the_model_loads(lines, tmp_path, capsys, no_model):
    out = tmp_path / "out"
    code, err = _run(["compress", "--text", str(_text(tmp_path, lines)), "--out", str(out), "--no-progress"], capsys)
    _one_line(code, err, "--text")
    assert f"need at least 30 lines for a fit half and a held-out half; got {lines}" in err and not out.exists()


def test_compress_help_states_the_minimum_the_code_checks(capsys):
    "The help's minimum is the one `text.split_lines` enforces (29 lines refused above; 30 split)."
    from entropic_bound.text import split_lines
    assert cli.main(["compress", "--help"]) == 0
    assert "at least 30 lines" in " ".join(capsys.readouterr().out.split())
    fit, held = split_lines([f"line {i}" for i in range(30)], 0)
    assert fit and held


def _closed_port() -> int:
    "A local TCP port nothing listens on (bound, then released)."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def test_unreachable_scheduler_is_refused_before_anything_is_written(tmp_path, capsys, no_model, monkeypatch):
    pytest.importorskip("distributed")
    def reached(*a, **k): raise AssertionError("reproduce started before the scheduler was checked")
    monkeypatch.setattr(rp, "reproduce", reached)
    out = tmp_path / "out"
    address = f"tcp://127.0.0.1:{_closed_port()}"
    code, err = _run(["reproduce", "--preset", "smoke", "--out", str(out), "--scheduler", address, "--scheduler-timeout", "2"], capsys)
    _one_line(code, err, "--scheduler")
    assert address in err and "2 s" in err and not out.exists()


@pytest.mark.parametrize("argv, option", [
    (["reproduce", "--seeds", "1000000000"], "--seeds"), (["reproduce", "--seeds", str(cli.MAX_SEEDS + 1)], "--seeds"),
    (["reproduce", "--seeds", "0"], "--seeds"), (["compress", "--splits", "1000000000"], "--splits"),
    (["audit", "--seed", str(2**32)], "--seed"), (["audit", "--seed", "-1"], "--seed"),
    (["estimate", "data.npz", "--seed", str(2**32)], "--seed"), (["estimate", "data.npz", "--seed", "-1"], "--seed"),
])
def test_seed_bounds(argv, option, tmp_path, capsys, no_model, monkeypatch):
    import entropic_bound.estimate as est
    def reached(*a, **k): raise AssertionError("the command started its work before checking its seeds")
    monkeypatch.setattr(est, "load_samples", reached)
    out = tmp_path / "out"
    code, err = _run([*argv, "--out", str(out)], capsys)
    _one_line(code, err, option)
    assert not out.exists()


@pytest.mark.parametrize("seq_len", [100000, 511, 7])
def test_seq_len_beyond_the_model_is_refused_before_it_loads(seq_len, tmp_path, capsys, no_model):
    "The shipped MiniLM takes 512 positions, 2 of them [CLS] and [SEP]: 510 tokens a sequence; more is refused, not cut in silence."
    out = tmp_path / "out"
    code, err = _run(["audit", "--seq-len", str(seq_len), "--out", str(out), "--no-progress"], capsys)
    _one_line(code, err, "--seq-len")
    assert ("at most 510 tokens (512 positions less 2 special tokens" in err) == (seq_len > 510) and not out.exists()


def test_seq_len_the_model_takes_goes_through(tmp_path, capsys, monkeypatch):
    import entropic_bound.audit_run as ar
    seen = {}
    def run_audit(model, text, out, device, tol, tol_out, seq_len, *a, **k): seen["seq_len"] = seq_len
    monkeypatch.setattr(ar, "run_audit", run_audit)
    code, err = _run(["audit", "--seq-len", "510", "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert code == 0 and seen == {"seq_len": 510}, err
    assert cli.main(["audit", "--help"]) == 0
    assert "at most the model's positions less the special tokens around each sequence (510 for the shipped MiniLM" in " ".join(capsys.readouterr().out.split())


# ---- the folder claimed first: reproduce ---------------------------------------------------------------------------------------

def _reproduce_script(fake_experiments, out) -> str:
    "A `reproduce` of the two stand-in experiments into `out` in one process, as the command runs it."
    return textwrap.dedent(f'''
        import sys; sys.path.insert(0, {str(Path(fake_experiments.__file__).parent)!r})
        from entropic_bound import cli, reproduce as rp
        for n in ("fake1", "fake2"): rp.EXPERIMENTS[n] = f"fake_experiments:{{n}}"
        sys.exit(cli.main(["reproduce", "--out", {str(out)!r}, "--only", "fake1,fake2", "--jobs", "1", "--no-progress"]))
    ''')


def hears_ctrl_c():
    "In a child about to start: Ctrl-C back to its default (a suite started in the background inherits SIGINT ignored, and so would the child)."
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(script, **env):
    "A subprocess running `script` with `env` added, once it prints READY."
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=hears_ctrl_c)
    line = proc.stdout.readline()
    assert line.strip() == "READY", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _interrupt(proc):
    "Ctrl-C to `proc`; its exit status and stderr."
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT)
    return proc.returncode, err


def test_two_reproduce_runs_into_one_folder(fake_experiments, tmp_path, capsys):
    "The second is refused at once in one line naming the first; the first, interrupted before any record, leaves nothing."
    out = tmp_path / "out"
    first = _start(_reproduce_script(fake_experiments, out), FAKE_HANG_IN="fake1")
    try:
        code, err = _run(["reproduce", "--out", str(out), "--only", "fake1,fake2", "--jobs", "1", "--no-progress"], capsys)
        _one_line(code, err, "--out")
        assert f"is in use by another run (process {first.pid})" in err and fake_experiments.CALLS == []
    finally:
        code, err = _interrupt(first)
    assert code == 130 and err.strip().splitlines()[-1].startswith("entropic-bound: interrupted before any table was finished"), err
    assert not out.exists()                                                  # nothing left: no empty .records/, no lock, no manifest


def test_ctrl_c_keeps_the_finished_records_and_a_rerun_resumes(fake_experiments, tmp_path):
    out = tmp_path / "out"
    first = _start(_reproduce_script(fake_experiments, out), FAKE_HANG_IN="fake2")
    code, err = _interrupt(first)
    assert code == 130 and "kept in" in err and "fake1.csv" in err, err
    assert (out / "fake1.csv").is_file() and (out / ".records" / "fake1.json").is_file() and not (out / LOCK_FILE).exists()
    kept = os.stat(out / ".records" / "fake1.json")
    again = subprocess.run([sys.executable, "-c", _reproduce_script(fake_experiments, out)], capture_output=True, text=True, timeout=WAIT)
    assert again.returncode == 3, again.stderr[-2000:]                        # done; the stand-ins' claims have no reference: nothing compared
    now = os.stat(out / ".records" / "fake1.json")
    assert (now.st_ino, now.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)   # fake1 reused, not measured and written again
    assert (out / "fake2.csv").is_file() and (out / "claims.json").is_file()


def test_a_failure_before_the_first_record_leaves_nothing(fake_experiments, tmp_path, monkeypatch):
    out = tmp_path / "out"
    def broken(*a, **k): raise RuntimeError("the measurement failed")
    monkeypatch.setattr(fake_experiments.fake1, "measure", broken)
    with pytest.raises(RuntimeError): rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert not out.exists()
    out.mkdir(); (out / "notes.txt").write_text("mine")                     # a folder that was there: only what the run added goes
    with pytest.raises(RuntimeError): rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert os.listdir(out) == ["notes.txt"]


def test_a_users_file_in_the_way_is_refused_before_any_experiment(fake_experiments, tmp_path, capsys):
    out = tmp_path / "out"; out.mkdir(); (out / "fake2.csv").write_text("my table")
    code, err = _run(["reproduce", "--out", str(out), "--only", "fake1,fake2", "--jobs", "1", "--no-progress"], capsys)
    _one_line(code, err, "--out")
    assert "fake2.csv was not written by entropic-bound" in err and fake_experiments.CALLS == []
    assert os.listdir(out) == ["fake2.csv"] and (out / "fake2.csv").read_text() == "my table"


def test_a_results_folder_written_before_the_manifest_is_resumed(fake_experiments, tmp_path):
    "A folder of an earlier version (records, tables, claims.json, no manifest) is the command's own: resumed, not refused."
    out = tmp_path / "out"
    rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    (out / MANIFEST_FILE).unlink()                                            # as an earlier version left it
    assert {"fake1.csv", "fake2.csv", "claims.json", "summary.md", ".records"} <= set(os.listdir(out))
    claims = rp.reproduce(out, "quick", seeds=[0, 1], only=["fake1", "fake2"], progress=False)
    assert fake_experiments.CALLS == ["fake1", "fake2"]                       # reused, not measured again
    assert [c["id"] for c in claims] == ["fake1.c", "fake2.c"]
    written = set(json.loads((out / MANIFEST_FILE).read_text())["written"])
    assert {"fake1.csv", "fake2.csv", "claims.json", "summary.md"} <= written


# ---- the folder claimed first: compress ----------------------------------------------------------------------------------------

COMPRESS_HELD = textwrap.dedent('''
    import sys, time
    import entropic_bound.table6 as t6
    def loading(*a, **k): print("READY", flush=True); time.sleep(60)
    t6._adapter = loading                                                       # the first run is loading its model
    from entropic_bound import cli
    sys.exit(cli.main(["compress", "--out", sys.argv[1], "--no-progress"]))
''')


def test_two_compress_runs_into_one_folder(tmp_path, capsys, no_model):
    "The second is refused at once, before it loads a model; the first, interrupted while loading, leaves nothing."
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-c", COMPRESS_HELD, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=hears_ctrl_c)
    try:
        line = first.stdout.readline()
        assert line.strip() == "READY", first.stderr.read() if first.poll() is not None else line
        code, err = _run(["compress", "--out", str(out), "--no-progress"], capsys)
        _one_line(code, err, "--out")
        assert f"is in use by another run (process {first.pid})" in err
    finally:
        code, err = _interrupt(first)
    assert code == 130 and err.strip().splitlines()[-1] == "entropic-bound compress: interrupted", err
    assert not out.exists()


def test_compress_refuses_a_users_file_before_the_model_loads(tmp_path, capsys, no_model):
    out = tmp_path / "out"; (out / "model").mkdir(parents=True); (out / "model" / "weights.bin").write_text("mine")
    code, err = _run(["compress", "--out", str(out), "--no-progress"], capsys)
    _one_line(code, err, "--out")
    assert sorted(os.listdir(out)) == ["model"] and (out / "model" / "weights.bin").read_text() == "mine"


@pytest.mark.parametrize("command", ["reproduce", "compress"])
def test_an_out_nobody_can_write_is_refused_before_any_work(command, capsys, no_model):
    "Under /proc, where root's permission bits say writable: the claim's probe refuses it, before the model loads or an experiment runs."
    out = Path("/proc/entropic-bound-first-contact")
    code, err = _run([command, "--out", str(out), "--no-progress"], capsys)
    _one_line(code, err, "--out")
    assert not out.exists()


# ---- first contact, second look: counts, bounds and names a user meets --------------------------------------------------------

def test_encode_text_refuses_a_seq_len_beyond_the_model_naming_its_limit():
    "A --seq-len the model cannot take is refused with its limit (text.MAX_POSITIONS the one cap), never cut in silence."
    from types import SimpleNamespace
    from entropic_bound.spectral import InputError
    tok = lambda lines, add_special_tokens=False: {"input_ids": [[5] * 40 for _ in lines]}
    bert = SimpleNamespace(tokenizer=tok, prefix_ids=(101,), suffix_ids=(102,), max_positions=512, name="a BERT")
    with pytest.raises(InputError, match=r"seq-len: 100000 is more than a BERT takes: at most 510 tokens \(512 positions less 2") as e:
        text.encode_text(bert, ["a line"] * 4, seq_len=100000)
    assert e.value.arg == "seq-len"
    assert text.encode_text(bert, ["a line"] * 4, seq_len=510).ids.shape[1] <= 512
    long = SimpleNamespace(tokenizer=tok, prefix_ids=(1,), suffix_ids=(), max_positions=131072, name="a long decoder")
    with pytest.raises(InputError, match=rf"at most {text.MAX_POSITIONS - 1} tokens \({text.MAX_POSITIONS} positions \(of 131072"):
        text.encode_text(long, ["a line"], seq_len=text.MAX_POSITIONS)


def test_cli_seq_len_check_reads_the_one_limit(tmp_path, monkeypatch):
    "The command line's --seq-len check caps the declared positions at text.MAX_POSITIONS, not at a copy of it."
    model = tmp_path / "m"; model.mkdir(); (model / "config.json").write_text(json.dumps(dict(max_position_embeddings=10**6)))
    monkeypatch.setattr(text, "MAX_POSITIONS", 777)
    assert cli._model_positions(str(model)) == 777


def test_nothing_compared_is_not_exit_0(tmp_path, capsys, monkeypatch):
    "Claims the reference does not hold (here: none it holds, as for --shelf beyond) are written, said plainly, and exit 3 as --help documents."
    monkeypatch.setattr(cli, "reference_verdicts", lambda field="verdict": {})
    code = cli.main(["reproduce", "--preset", "smoke", "--seeds", "1", "--only", "table4", "--out", str(tmp_path / "out"), "--no-progress", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 3, out
    last = out.strip().splitlines()[-1]
    assert "no verdict compared: the stored reference holds no claim of table4" in last and "as the reference documents" not in out, last
    assert (tmp_path / "out" / "claims.json").is_file()
    assert cli.main(["reproduce", "--help"]) == 0
    assert "3 nothing compared" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("bootstrap", ["1000000000", "-1"])
def test_estimate_bootstrap_is_bounded(bootstrap, tmp_path, capsys, monkeypatch):
    import entropic_bound.estimate as est
    def reached(*a, **k): raise AssertionError("the data were read before --bootstrap was checked")
    monkeypatch.setattr(est, "load_samples", reached)
    code, err = _run(["estimate", "data.npz", "--bootstrap", bootstrap], capsys)
    _one_line(code, err, "--bootstrap")
    assert f"0..{cli.MAX_BOOTSTRAP}" in err


def test_settings_errors_name_the_option(tmp_path, capsys, no_model, monkeypatch):
    "A settings rule that fails reaches a user as the option (--budgets, --max-sequences), not as an internal field; a library caller keeps the field."
    from entropic_bound.experiment import SettingsError, experiment
    code, err = _run(["compress", "--budgets", "0.5,2", "--out", str(tmp_path / "c"), "--no-progress"], capsys)
    _one_line(code, err, "--budgets must be comma-separated fractions in (0, 1]")
    assert "Settings" not in err and not (tmp_path / "c").exists()
    import entropic_bound.audit_run as ar
    monkeypatch.setattr(ar, "run_audit", lambda *a, **k: experiment("audit").settings("quick", max_sequences=1))
    code, err = _run(["audit", "--out", str(tmp_path / "a"), "--no-progress"], capsys)
    _one_line(code, err, "--max-sequences must be None or an integer >= 2; got 1")
    assert "AuditSettings" not in err and not (tmp_path / "a").exists()
    with pytest.raises(SettingsError, match=r"AuditSettings\.max_sequences must be"): experiment("audit").settings("quick", max_sequences=1)
