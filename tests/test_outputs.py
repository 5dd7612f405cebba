"""The output folder claimed first (`entropic_bound.outputs.OutputFolder`): a second process is refused while a first holds the
folder, and gets it once the first ends (also when it was killed); a folder nobody can write is refused, as root (under /proc) and
as a normal user (a read-only folder; root writes there), with nothing created; a user's own file is never overwritten; a command that fails before
its results are written leaves nothing behind, and one that fails after them keeps them."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from entropic_bound.outputs import LOCK_FILE, MANIFEST_FILE, OutputFolder, atomic_write
from entropic_bound.spectral import InputError

HOLD = textwrap.dedent('''
    import sys, time
    from entropic_bound.outputs import OutputFolder
    with OutputFolder(sys.argv[1]) as out:
        print("HELD", flush=True); sys.stdin.readline(); out.done()
''')


def _holder(folder):
    "A second process that claims `folder` and holds it until a line arrives on its stdin."
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "HELD", proc.stderr.read()
    return proc


def test_a_second_process_is_refused_while_the_first_holds_the_folder(tmp_path):
    out = tmp_path / "out"
    first = _holder(out)
    try:
        with pytest.raises(InputError) as e:
            with OutputFolder(out): pass
        assert str(e.value) == f"out: {out} is in use by another run (process {first.pid}); wait for it to end or choose another folder"
        assert out.is_dir()                                              # the refusal removes nothing of the first run's
    finally:
        first.communicate("go\n", timeout=60)
    assert first.returncode == 0 and not (out / LOCK_FILE).exists()
    with OutputFolder(out) as claim: claim.done()                         # free again


def test_a_killed_holder_leaves_the_folder_free(tmp_path):
    out = tmp_path / "out"
    first = _holder(out)
    first.send_signal(signal.SIGKILL); first.wait(timeout=60)
    assert (out / LOCK_FILE).exists()                                     # a stale lock file: the lock itself died with its process
    with OutputFolder(out) as claim: claim.done()
    assert not (out / LOCK_FILE).exists()


RACE = textwrap.dedent('''
    import os, sys, time
    from entropic_bound.outputs import OutputFolder
    from entropic_bound.spectral import InputError
    while not os.path.exists(sys.argv[2]): time.sleep(0.001)             # start together
    try:
        with OutputFolder(sys.argv[1]) as out: time.sleep(3); out.done()
    except InputError: sys.exit(3)
''')


def test_processes_started_together_get_the_folder_one_at_a_time(tmp_path):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(tmp_path / "new" / "out"), str(go)]) for _ in range(4)]
    time.sleep(3); go.write_text("")                                     # every interpreter is up
    codes = sorted(p.wait(timeout=120) for p in procs)
    assert codes == [0, 3, 3, 3], codes
    assert os.listdir(tmp_path / "new" / "out") == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder (mode 0555); as root, the /proc test is the refusal")
def test_a_read_only_folder_is_refused_with_nothing_created(tmp_path):
    ro = tmp_path / "ro"; ro.mkdir(); ro.chmod(0o555)
    try:
        for target in (ro, ro / "sub" / "deeper"):
            with pytest.raises(InputError) as e:
                with OutputFolder(target): pass
            assert str(e.value) == f"out: {target} cannot be written: Permission denied"
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
@pytest.mark.parametrize("target", ["/proc", "/proc/entropic-bound-out", "/proc/self/entropic-bound-out"])
def test_proc_is_refused_even_as_root(target):
    with pytest.raises(InputError, match=r"cannot be written"):
        with OutputFolder(target): pass
    assert target == "/proc" or not Path(target).exists()


def test_a_file_the_library_did_not_write_is_never_overwritten(tmp_path):
    out = tmp_path / "out"; out.mkdir()
    (out / "summary.md").write_text("my own notes")
    with pytest.raises(InputError, match="summary.md was not written by entropic-bound"):
        with OutputFolder(out) as claim:
            claim.file("summary.md")
            pytest.fail("the claim let a foreign file be overwritten")
    assert sorted(os.listdir(out)) == ["summary.md"] and (out / "summary.md").read_text() == "my own notes"
    (out / "summary.md").unlink()
    with OutputFolder(out) as claim: atomic_write(claim.file("summary.md"), "ours\n"); claim.done()
    with OutputFolder(out) as claim: atomic_write(claim.file("summary.md"), "ours again\n"); claim.done()   # its own: overwritten
    assert (out / "summary.md").read_text() == "ours again\n"
    assert json.loads((out / MANIFEST_FILE).read_text()) == {"written": ["summary.md"]}


@pytest.mark.parametrize("error", [RuntimeError("the model failed to load"), KeyboardInterrupt()])
def test_a_failure_before_the_results_leaves_nothing(error, tmp_path):
    new = tmp_path / "a" / "b" / "out"
    with pytest.raises(type(error)):
        with OutputFolder(new) as claim:
            (new / ".records").mkdir(); atomic_write(claim.file("heads.csv"), "h\n"); raise error
    assert os.listdir(tmp_path) == []                                     # the parents it made are gone too
    old = tmp_path / "old"; old.mkdir(); (old / "notes.txt").write_text("mine")
    with OutputFolder(old) as claim: atomic_write(claim.file("table1.csv"), "t\n"); claim.done()
    with pytest.raises(type(error)):
        with OutputFolder(old) as claim:
            (old / ".records").mkdir(); atomic_write(claim.file("table2.csv"), "t\n"); atomic_write(claim.file("table1.csv"), "u\n"); raise error
    assert sorted(os.listdir(old)) == sorted([MANIFEST_FILE, "notes.txt", "table1.csv"])   # only what the failed run added is gone
    assert json.loads((old / MANIFEST_FILE).read_text()) == {"written": ["table1.csv"]}


def test_a_failure_after_the_results_keeps_them(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with OutputFolder(out) as claim:
            atomic_write(claim.file("table1.csv"), "t\n"); claim.done(); raise RuntimeError("a later step failed")
    assert sorted(os.listdir(out)) == [MANIFEST_FILE, "table1.csv"]
