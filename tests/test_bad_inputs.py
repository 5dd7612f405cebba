"""Bad input to the library: every family raises `ValueError` or `TypeError` from our code, with a message that starts with
the argument's name; nothing returns a number it cannot stand behind, and nothing prints (LAPACK included). Property tests
(hypothesis) cover the two validators and the §3 invariants: the chain 1 <= stable <= energy <= Shannon <= rank, scale
invariance, and batching equals looping."""
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from entropic_bound.spectral import (InputTypeError, as_float64_array, checked_number, effective_rank, energy_effective_rank,
                                     stable_rank, numerical_rank, rank_profile, corrected_effective_rank, wishart_edge, noise_edge,
                                     spike_count, mp_softrank, singular_values)
from entropic_bound.tasks import linear_task, attention_task, linear_attention, softmax_attention, attention_mixing
from entropic_bound.linear import predict_linear_rank
from entropic_bound.predict import predict_qk_rank
from entropic_bound.estimate import estimate

QK = attention_task(60, T=8, d=4, r_star=2, kind="linear", seed=1)
X, Y, V = QK.X.numpy(), QK.Y.numpy(), QK.V.numpy()
LIN = linear_task(50, T=8, d=6, r_star=2, seed=1).Y.numpy()
M = np.random.default_rng(0).normal(size=(8, 6))
FEW = settings(max_examples=40, deadline=None)


def refused(f, exc, name):
    "`f()` raises `exc` whose message starts with the argument `name`; a type fault is also a TypeError, a value fault a ValueError."
    with pytest.raises(exc) as e:
        f()
    assert re.match(rf"{re.escape(name)}\b", str(e.value)), str(e.value)
    assert isinstance(e.value, (TypeError, ValueError))
    return str(e.value)


# ---- arrays: one validator behind every public function -------------------------------------------------------------

BAD_ARRAYS = [  # (value, error, what the message says after the name)
    (None, InputTypeError, "is missing"),
    ("abc", InputTypeError, "must be a real numeric array"),
    (M + 1j * M, InputTypeError, "is complex"),
    (torch.tensor(M + 1j * M), InputTypeError, "is complex"),
    (M.astype(object), InputTypeError, "dtype object"),
    ([[1.0, 2.0], [3.0]], ValueError, "must be a real numeric array"),
    (np.where(np.arange(48).reshape(8, 6) == 5, np.nan, M), ValueError, "contains NaN or inf"),
    (np.where(np.arange(48).reshape(8, 6) == 5, -np.inf, M), ValueError, "contains NaN or inf"),
]


@pytest.mark.parametrize("bad, exc, says", BAD_ARRAYS)
@pytest.mark.parametrize("f", [effective_rank, energy_effective_rank, stable_rank, numerical_rank, singular_values,
                               lambda a: rank_profile(a), lambda a: spike_count(a), lambda a: mp_softrank(a)])
def test_spectral_arrays(f, bad, exc, says):
    assert says in refused(lambda: f(bad), exc, "M")


def _as3(bad):
    "A bad 2-D case lifted to the (n, T, d) layout of the predictors (None, text and ragged lists stay as they are)."
    if isinstance(bad, torch.Tensor): return bad[None].expand(3, -1, -1)
    if isinstance(bad, np.ndarray): return np.broadcast_to(bad, (3, *bad.shape))
    return bad


@pytest.mark.parametrize("bad, exc, says", BAD_ARRAYS)
def test_predictor_arrays(bad, exc, says):
    bad = _as3(bad)
    assert says in refused(lambda: predict_linear_rank(bad), exc, "Y")
    assert says in refused(lambda: predict_qk_rank(bad, Y), exc, "X")
    assert says in refused(lambda: predict_qk_rank(X, bad), exc, "Y")
    if bad is None: refused(lambda: estimate(Y=bad, bootstrap=0), ValueError, "Y")      # "Y is required"
    else: assert says in refused(lambda: estimate(Y=bad, bootstrap=0), exc, "Y")


def test_shapes_name_the_argument():
    assert "3 dimensions, shape (n, T, d)" in refused(lambda: predict_linear_rank(LIN[0]), ValueError, "Y")
    assert "needs n >= 1" in refused(lambda: predict_linear_rank(LIN[:0]), ValueError, "Y")
    assert "at least 2 dimensions" in refused(lambda: effective_rank(np.ones(4)), ValueError, "M")
    refused(lambda: predict_qk_rank(X, Y, V[:2]), ValueError, "V")
    refused(lambda: predict_qk_rank(X, Y, V + 1j), InputTypeError, "V")
    refused(lambda: predict_qk_rank(X[0], Y[0]), ValueError, "X")


# ---- scalars: one number check, one noise_std check ---------------------------------------------------------------

@pytest.mark.parametrize("call, exc, name", [
    (lambda: numerical_rank(M, tol=float("nan")), ValueError, "tol"),
    (lambda: numerical_rank(M, tol=-1), ValueError, "tol"),
    (lambda: numerical_rank(M, tol="1e-3"), InputTypeError, "tol"),
    (lambda: numerical_rank(M, "mp", tol=1e-3), ValueError, "tol"),
    (lambda: numerical_rank(M, noise_std=5.0), ValueError, "noise_std"),          # method='tol' would ignore it: refused
    (lambda: numerical_rank(M, "mp", noise_std="0.1"), InputTypeError, "noise_std"),
    (lambda: numerical_rank(M, "mp", noise_std=-0.1), ValueError, "noise_std"),
    (lambda: numerical_rank(M, "mp", noise_std=math.inf), ValueError, "noise_std"),
    (lambda: numerical_rank(M, "gavish_donoho", noise_std=True), InputTypeError, "noise_std"),
    (lambda: numerical_rank(M, "magic"), ValueError, "unknown method"),
    (lambda: corrected_effective_rank(M, noise_std=None), ValueError, "method='mp' needs noise_std"),
    (lambda: corrected_effective_rank(M, 0.1, kind="renyi"), ValueError, "kind"),
    (lambda: rank_profile(M, noise_std=[0.1, 0.2]), ValueError, "noise_std"),
    (lambda: rank_profile(M, noise_std=np.nan), ValueError, "noise_std"),
    (lambda: rank_profile(M, rel_tol="0.1"), InputTypeError, "rel_tol"),
    (lambda: rank_profile(M, rel_tol=1.0), ValueError, "rel_tol"),
    (lambda: spike_count(M, noise_std="x"), InputTypeError, "noise_std"),
    (lambda: spike_count(M, level=0.5), ValueError, "level"),
    (lambda: wishart_edge(16, 400, noise_var=-1), ValueError, "noise_var"),
    (lambda: wishart_edge(16, 400, noise_var=math.nan), ValueError, "noise_var"),
    (lambda: wishart_edge(2.5, 400), InputTypeError, "p"),
    (lambda: noise_edge(0, 4, 1.0), ValueError, "m"),
    (lambda: noise_edge(4, 4, None), InputTypeError, "noise_std"),
    (lambda: predict_linear_rank(LIN, noise_std="0.05"), InputTypeError, "noise_std"),
    (lambda: predict_linear_rank(LIN, noise_std=-1.0), ValueError, "noise_std"),
    (lambda: predict_qk_rank(X, Y, noise_std="0.05"), InputTypeError, "noise_std"),
    (lambda: predict_qk_rank(X, Y, noise_std=math.nan), ValueError, "noise_std"),
    (lambda: estimate(Y=LIN, noise_std="0.05"), InputTypeError, "noise_std"),
    (lambda: estimate(Y=LIN, bootstrap=2.5), InputTypeError, "bootstrap"),
    (lambda: estimate(Y=LIN, fraction=0), ValueError, "fraction"),
    (lambda: estimate(Y=LIN, min_agreement="half"), InputTypeError, "min_agreement"),
])
def test_scalars(call, exc, name):
    with pytest.raises(exc) as e:
        call()
    assert name in str(e.value) and isinstance(e.value, (TypeError, ValueError)), str(e.value)


# ---- task generators ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gen, kw, exc, name", [
    (attention_task, dict(d_v=-2), ValueError, "d_v"), (attention_task, dict(d_v=0), ValueError, "d_v"),
    (attention_task, dict(T=0), ValueError, "T"), (attention_task, dict(T=-3), ValueError, "T"),
    (linear_task, dict(T=-3), ValueError, "T"), (linear_task, dict(d=0), ValueError, "d"),
    (attention_task, dict(kernel_scale=0), ValueError, "kernel_scale"),
    (attention_task, dict(kernel_scale=math.nan), ValueError, "kernel_scale"),
    (attention_task, dict(kernel_scale=math.inf), ValueError, "kernel_scale"),
    (attention_task, dict(kernel_scale="3"), InputTypeError, "kernel_scale"),
    (linear_task, dict(spectrum=[1.0, math.nan, 0.5]), ValueError, "spectrum"),
    (linear_task, dict(spectrum=[1.0, math.inf, 0.5]), ValueError, "spectrum"),
    (linear_task, dict(spectrum=[1.0, 0.0, 0.5]), ValueError, "spectrum"),
    (linear_task, dict(spectrum=[1.0, 0.5]), ValueError, "spectrum"),
    (attention_task, dict(seed=1.7), InputTypeError, "seed"), (linear_task, dict(seed=1.7), InputTypeError, "seed"),
    (attention_task, dict(n=2.5), InputTypeError, "n"), (linear_task, dict(n=2.5), InputTypeError, "n"),
    (linear_task, dict(n=0), ValueError, "n"), (attention_task, dict(r_star=13), ValueError, "r_star"),
    (linear_task, dict(noise_std=-0.1), ValueError, "noise_std"), (attention_task, dict(noise_std="0.1"), InputTypeError, "noise_std"),
    (attention_task, dict(kind="relu"), ValueError, "kind"), (linear_task, dict(device="tpu"), ValueError, "device"),
    (linear_task, dict(device=3.5), InputTypeError, "device"),
])
def test_task_generators(gen, kw, exc, name):
    refused(lambda: gen(**{"n": 4, **kw}), exc, name)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has CUDA")
@pytest.mark.parametrize("gen", [linear_task, attention_task])
def test_cuda_without_cuda(gen):
    assert "no CUDA device" in refused(lambda: gen(4, device="cuda"), ValueError, "device")


def test_attention_forward_takes_numpy():
    t = attention_task(3, T=6, d=5, r_star=2, kind="softmax", seed=3)
    for attn in (linear_attention, softmax_attention):
        np.testing.assert_allclose(attn(t.X.numpy(), t.K.numpy(), t.V.numpy()), attn(t.X, t.K, t.V), rtol=1e-12)
    np.testing.assert_allclose(attention_mixing(t.X.numpy(), t.K.numpy(), "linear"), attention_mixing(t.X, t.K, "linear"), rtol=1e-12)
    refused(lambda: attention_mixing(t.X, t.K, "relu"), ValueError, "kind")


# ---- nothing prints, whatever the scale ---------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [5e-324, 1e-300, 1e-150, 1e150, 1e300, 1.7e308 / 8])
def test_extreme_scales_print_nothing(scale, capfd):
    outcomes = []
    for call in (lambda: predict_linear_rank(LIN * scale), lambda: predict_qk_rank(X * scale, Y),
                 lambda: predict_qk_rank(X, Y * scale), lambda: predict_qk_rank(X * scale, Y, V),
                 lambda: predict_linear_rank(LIN * scale, noise_std=0.05), lambda: effective_rank(M * scale),
                 lambda: predict_qk_rank(np.concatenate([X[:1] * scale, X[1:]]), Y)):
        try: outcomes.append(call())
        except ValueError as e: outcomes.append(str(e))          # a clear refusal is fine; a crash or a print is not
    out, err = capfd.readouterr()
    assert out == "" and "On entry to" not in err, (out[:200], err[:200])
    assert all(isinstance(o, (str, int, np.integer, float, np.floating)) for o in outcomes)


# ---- property tests: the validators ---------------------------------------------------------------------------------

real_dtypes = st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int64, np.uint8, np.bool_])


@FEW
@given(a=hnp.arrays(real_dtypes, hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
                    elements=dict(allow_nan=False, allow_infinity=False)), torch_in=st.booleans())
def test_validator_accepts_every_real_array(a, torch_in):
    src = torch.from_numpy(a.copy()) if torch_in and a.dtype != np.uint16 else a
    out = as_float64_array(src, "A")
    assert out.dtype == np.float64 and out.shape == a.shape
    np.testing.assert_array_equal(out, a.astype(np.float64))


@FEW
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), data=st.data(),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]), name=st.sampled_from(["X", "Y", "V", "M"]))
def test_validator_refuses_any_non_finite_entry(shape, data, bad, name):
    a = np.ones(shape)
    a[tuple(data.draw(st.integers(0, s - 1)) for s in shape)] = bad
    refused(lambda: as_float64_array(a, name), ValueError, name)


@FEW
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), ndim=st.integers(1, 4))
def test_validator_refuses_wrong_dimensions_and_empty(shape, ndim):
    a = np.zeros(shape)
    if a.ndim == ndim and a.size > 0:
        assert as_float64_array(a, "A", ndim=ndim).shape == shape
    else:
        refused(lambda: as_float64_array(a, "A", ndim=ndim), ValueError, "A")


@FEW
@given(x=st.one_of(st.text(max_size=5), st.none(), st.booleans(), st.complex_numbers(allow_nan=False, allow_infinity=False).filter(lambda z: z.imag != 0),
                   st.lists(st.floats(), max_size=2)))
def test_number_check_refuses_non_numbers(x):
    refused(lambda: checked_number(x, "noise_std", low=0), InputTypeError, "noise_std")


@FEW
@given(x=st.floats(allow_nan=True, allow_infinity=True), integer=st.booleans())
def test_number_check_range(x, integer):
    if integer:
        refused(lambda: checked_number(x, "seed", integer=True), InputTypeError, "seed")       # a float is never an integer
        return
    if math.isfinite(x) and x >= 0: assert checked_number(x, "tol", low=0) == x
    else: refused(lambda: checked_number(x, "tol", low=0), ValueError, "tol")


# ---- property tests: the §3 invariants ------------------------------------------------------------------------------

@st.composite
def matrices(draw):
    "A batch (b, m, n) of matrices of rank k, with a spread spectrum and any overall scale from 1e-100 to 1e100."
    b, m, n = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    k = draw(st.integers(1, min(m, n)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = draw(st.floats(0.0, 6.0))                                    # singular values over up to 6 decades
    s = 10.0 ** -np.sort(rng.uniform(0, spread, size=k))
    U = np.linalg.qr(rng.normal(size=(b, m, k)))[0]
    W = np.linalg.qr(rng.normal(size=(b, n, k)))[0]
    return (U * s) @ W.transpose(0, 2, 1) * 10.0 ** draw(st.integers(-100, 100)), k


@settings(max_examples=60, deadline=None)
@given(mk=matrices())
def test_chain(mk):
    A, k = mk
    chain = np.stack([np.ones(A.shape[0]), stable_rank(A), energy_effective_rank(A), effective_rank(A), numerical_rank(A)])
    assert (np.diff(chain, axis=0) >= -1e-9 * chain[-1]).all(), chain
    assert (numerical_rank(A) <= k).all()


@settings(max_examples=40, deadline=None)
@given(mk=matrices(), c=st.floats(1e-50, 1e50), flip=st.booleans())
def test_scale_invariance(mk, c, flip):
    A, _ = mk
    c = -c if flip else c
    for f in (effective_rank, energy_effective_rank, stable_rank):
        np.testing.assert_allclose(f(c * A), f(A), rtol=1e-9)
    np.testing.assert_array_equal(numerical_rank(c * A, tol=None), numerical_rank(A))


@settings(max_examples=40, deadline=None)
@given(mk=matrices(), torch_in=st.booleans())
def test_batching_equals_looping(mk, torch_in):
    A, _ = mk
    B = torch.from_numpy(A) if torch_in else A
    for f in (effective_rank, energy_effective_rank, stable_rank, numerical_rank):
        batched = np.asarray(f(B))
        looped = np.array([np.asarray(f(B[i])) for i in range(A.shape[0])])
        np.testing.assert_allclose(batched, looped, rtol=1e-12)
    assert isinstance(effective_rank(B), torch.Tensor) == torch_in


# ---- the command line: misuse is one line, never a traceback -------------------------------------------------------

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from entropic_bound import cli, reproduce as rp


def _run_main(argv, capsys):
    "Exit status and stderr of `entropic-bound argv`, run in this process."
    try: code = cli.main(argv)
    except SystemExit as e: code = e.code
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("out", ["", "   ", "{file}/sub", "{file}/sub/deeper", "{file}"])
def test_cli_bad_out(out, tmp_path, capsys):
    f = tmp_path / "afile"; f.write_text("x")
    code, err = _run_main(["reproduce", "--out", out.format(file=f)], capsys)
    assert code == 2 and err.startswith("entropic-bound: error: --out") and "\n" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["afile"]


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied", "/ro/results/table1.csv"),
                                   OSError(28, "No space left on device", "/full/results/claims.json"),
                                   NotADirectoryError(20, "Not a directory", "/x/results")])
def test_cli_unwritable_during_the_run(error, tmp_path, capsys, monkeypatch):
    def fail(*a, **k): raise error
    monkeypatch.setattr(rp, "reproduce", fail)
    code, err = _run_main(["reproduce", "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and err.startswith("entropic-bound: error: cannot write the results under --out") and "\n" not in err, err
    assert error.strerror in err and error.filename in err


def test_cli_ctrl_c_in_process(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r"
    def interrupted(out_, *a, **k):
        Path(out_).mkdir(parents=True, exist_ok=True); (Path(out_) / "table1.csv").write_text("a\n1\n")
        raise KeyboardInterrupt
    monkeypatch.setattr(rp, "reproduce", interrupted)
    code, err = _run_main(["reproduce", "--out", str(out)], capsys)
    assert code == 130 and "\n" not in err and "table1.csv" in err and "interrupted" in err, err


SLOW_RUN = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[3])                 # the folder of the fake_experiments module
    from entropic_bound import cli, reproduce as rp
    rp.EXPERIMENTS.clear(); rp.EXPERIMENTS.update(table1="fake_experiments:fake1", table2="fake_experiments:fake2")
    if __name__ == "__main__":                    # worker processes (--jobs) import this file again
        sys.exit(cli.main(["reproduce", "--out", sys.argv[1], "--no-progress", "--seeds", "1", "--jobs", sys.argv[2]]))
''')


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_ctrl_c_is_one_line_and_130(tmp_path, jobs, fake_experiments):
    (tmp_path / "slow.py").write_text(SLOW_RUN)
    out = tmp_path / "r"
    folder = str(Path(fake_experiments.__file__).parent)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "slow.py"), str(out), jobs, folder], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "FAKE_HANG_IN": "fake2"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # a suite started in the background inherits SIGINT ignored
    assert proc.stdout.readline().strip() == "READY"                             # table2 (fake2) running
    deadline = time.monotonic() + 60
    while not (out / ".records" / "table1.json").is_file():                      # table1 written (with --jobs, alongside)
        assert time.monotonic() < deadline and proc.poll() is None, "table1 was not written"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [f"entropic-bound: interrupted; kept in {out}: table1.csv (rerun the same command to continue)"], err
    assert (out / "table1.csv").is_file() and not (out / "table2.csv").exists()
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]


def test_outputs_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        rp.atomic_write(tmp_path / "a.csv", "x\n")
        assert os.stat(tmp_path / "a.csv").st_mode & 0o777 == 0o644                # readable by colleagues
        os.umask(0o077)
        rp.atomic_write(tmp_path / "b.csv", b"x\n")
        assert os.stat(tmp_path / "b.csv").st_mode & 0o777 == 0o600                # a private umask is obeyed too
    finally:
        os.umask(old)


# ---- a damaged checkpoint or record: one line and exit 2, or measured again, never a traceback --------------------------

@pytest.fixture(scope="module")
def damaged_models(tmp_path_factory):
    """Damaged copies of a tiny random BERT folder, by the case they stand for: its weights cut in half, a configuration whose
    hidden size (30) the heads (4) do not divide, a configuration whose feed-forward width (48) the weights (64) contradict, and a
    text file named `.gguf`."""
    import json, shutil
    transformers = pytest.importorskip("transformers")
    transformers.utils.logging.disable_progress_bar()
    root = tmp_path_factory.mktemp("damaged")
    whole = root / "whole"
    cfg = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, vocab_size=60)
    transformers.BertModel(cfg).save_pretrained(whole)
    cut = shutil.copytree(whole, root / "cut")
    data = (cut / "model.safetensors").read_bytes(); (cut / "model.safetensors").write_bytes(data[:len(data) // 2])
    sizes = shutil.copytree(whole, root / "sizes")
    (sizes / "config.json").write_text(json.dumps(json.loads((whole / "config.json").read_text()) | dict(hidden_size=30)))
    (root / "notes.gguf").write_text("not a model\n")
    shapes = shutil.copytree(whole, root / "shapes")
    (shapes / "config.json").write_text(json.dumps(json.loads((whole / "config.json").read_text()) | dict(intermediate_size=48)))
    return {"shapes": (shapes, f"the weights in {shapes} do not fit its configuration: 3 tensors differ in shape"),
            "cut": (cut, f"{cut / 'model.safetensors'} is truncated"),
            "sizes": (sizes, f"{sizes / 'config.json'}: hidden_size 30 is not a multiple of num_attention_heads 4"),
            "gguf": (root / "notes.gguf", f"{root / 'notes.gguf'} is not a GGUF file")}


@pytest.mark.parametrize("command", ["audit", "compress"])
@pytest.mark.parametrize("case", ["cut", "sizes", "shapes", "gguf"])
def test_cli_damaged_model_is_one_line(command, case, damaged_models, tmp_path, capsys):
    model, says = damaged_models[case]
    out = tmp_path / "out"
    code, err = _run_main([command, "--model", str(model), "--out", str(out), "--no-progress"], capsys)
    assert code == 2 and "\n" not in err and err.startswith(f"entropic-bound {command}: error: --model: ") and says in err, err
    assert not out.exists()                                                         # nothing left behind


@pytest.mark.parametrize("content", [b'{"key": "3f2a', b"[]", b"\xff\xfe"])
def test_cli_corrupt_record_is_measured_again(content, tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["reproduce", "--only", "table4", "--preset", "smoke", "--seeds", "1", "--out", str(out), "--no-progress"]
    first, _ = _run_main(argv, capsys)
    record = out / ".records" / "table4.json"
    record.write_bytes(content)
    code, err = _run_main(argv, capsys)
    assert code == first and code in (0, 1), err                               # a verdict, not a traceback (smoke may differ from the reference)
    assert err.splitlines() == [f"table4: its record {record} is unreadable ({'not a record of an experiment' if content == b'[]' else 'cut short or not JSON'}); "
                                "the experiment is measured again"], err
    assert isinstance(json.loads(record.read_text()), dict)                   # rewritten whole
    code, err = _run_main(argv, capsys)
    assert code == first and "unreadable" not in err                            # and reused after that
