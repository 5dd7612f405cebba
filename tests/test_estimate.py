"""Property tests of `entropic_bound.estimate`: units never decide r̂, bad input is refused naming the argument, the command fails cleanly; the wrong model for the data is said to be wrong; the figure's legend covers no point."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from entropic_bound.cli import main
from entropic_bound.estimate import estimate, load_samples
from entropic_bound.linear import predict_linear_rank
from entropic_bound.predict import predict_qk_rank
from entropic_bound.tasks import linear_task, attention_task

LIN = linear_task(200, 16, 12, 3, seed=0).Y.numpy()
ATT = attention_task(60, T=10, d=6, r_star=2, kind="linear", seed=0)
X, Y, V = ATT.X.numpy(), ATT.Y.numpy(), ATT.V.numpy()
exponents = st.integers(min_value=-150, max_value=150)


@settings(max_examples=25, deadline=None)
@given(e=exponents, m=st.floats(1.0, 9.99))
def test_token_mixing_rank_does_not_depend_on_units(e, m):
    k = m * 10.0**e
    assert estimate(Y=LIN * k, bootstrap=5).rank == 3
    assert predict_linear_rank(LIN * k) == 3


@settings(max_examples=20, deadline=None)
@given(ex=exponents, ey=exponents, ev=st.integers(-100, 100))
def test_linear_qk_rank_does_not_depend_on_units(ex, ey, ev):
    a, b, v = 10.0**ex, 10.0**ey, 10.0**ev
    assert predict_qk_rank(a * X[:3], b * Y[:3], v * V) == 2
    assert estimate(a * X, b * Y, "linear-qk", v * V, bootstrap=3).rank == 2


def test_estimate_matches_the_section_predictors():
    assert estimate(Y=LIN, bootstrap=0).rank == predict_linear_rank(LIN)
    assert estimate(X, Y, "linear-qk", None, bootstrap=0).rank == predict_qk_rank(X, Y)


@pytest.mark.parametrize("kw, argument", [
    (dict(Y=LIN + 0j), "Y"), (dict(Y=LIN.astype(object)), "Y"), (dict(Y=LIN[0]), "Y"), (dict(Y=LIN[:0]), "Y"),
    (dict(Y=np.where(np.arange(LIN.size).reshape(LIN.shape) == 7, np.nan, LIN)), "Y"),
    (dict(X=X[:5], Y=Y, kind="linear-qk"), "samples n"), (dict(X=X[:, :4], Y=Y, kind="linear-qk"), "sequence lengths T"),
    (dict(X=X, Y=Y, V=V[:2], kind="linear-qk"), "V"), (dict(X=X + 1j, Y=Y, kind="linear-qk"), "X"),
    (dict(Y=LIN, kind="cubic"), "kind"), (dict(Y=LIN, noise_std=float("nan")), "noise_std"), (dict(Y=LIN, bootstrap=1.5), "bootstrap"),
])
def test_bad_input_names_the_argument(kw, argument):
    with pytest.raises(ValueError, match=argument):
        estimate(**kw)


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=5))
def test_wrong_shapes_are_refused(shape):
    a = np.ones(shape)
    if a.ndim == 3 and a.size > 0: return
    with pytest.raises(ValueError, match="Y"):
        estimate(Y=a)


def test_command_writes_record_and_figure(tmp_path):
    np.savez(tmp_path / "s.npz", X=X, Y=Y, V=V)
    assert main(["estimate", str(tmp_path / "s.npz"), "--kind", "linear-qk", "--bootstrap", "5", "--out", str(tmp_path / "out")]) == 0
    rec = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert rec["rank"] == 2 and rec["status"] == "ok" and (tmp_path / "out" / "estimate.png").exists()


@pytest.mark.parametrize("arrays", [dict(X=X), dict(Y=Y[..., None]), dict(Y=Y.astype(np.complex64)), dict(X=X[:3], Y=Y)])
def test_command_bad_files_exit_2_and_write_nothing(tmp_path, capsys, arrays):
    np.savez(tmp_path / "bad.npz", **arrays)
    code = main(["estimate", str(tmp_path / "bad.npz"), "--kind", "linear-qk", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("entropic-bound estimate: error:")
    assert not (tmp_path / "out").exists()


def test_pt_files_load_without_pickles(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"X": ATT.X, "Y": ATT.Y}, tmp_path / "s.pt")
    assert np.array_equal(load_samples(tmp_path / "s.pt")["Y"], Y)
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(ValueError, match="dict of tensors"):
        load_samples(tmp_path / "list.pt")


@pytest.mark.parametrize("suffix, says", [(".npz", "not a valid .npz file (a zip archive"), (".npy", "not a valid .npy file")])
def test_text_renamed_is_not_called_pickled(suffix, says, tmp_path, capsys):
    "A text file renamed .npz/.npy is named as not that format; no advice to allow pickles (unsafe, and untrue here)."
    f = tmp_path / f"notes{suffix}"; f.write_text("these are my notes, not arrays\n")
    assert main(["estimate", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "pickle" not in err.lower(), err


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_object_arrays_are_refused_without_pickle_advice(suffix, tmp_path, capsys):
    f = tmp_path / f"objects{suffix}"
    (np.savez(f, Y=np.array([object()], dtype=object)) if suffix == ".npz" else np.save(f, np.array([object()], dtype=object), allow_pickle=True))
    assert main(["estimate", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "object (pickled) arrays, which are never loaded" in err and "allow_pickle" not in err, err


def test_estimate_prints_the_report_and_writes_with_the_umask(tmp_path, capsys):
    import os
    np.save(tmp_path / "y.npy", LIN)
    old = os.umask(0o022)
    try: assert main(["estimate", str(tmp_path / "y.npy"), "--bootstrap", "5", "--out", str(tmp_path / "o")]) == 0
    finally: os.umask(old)
    assert "3" in capsys.readouterr().out
    assert json.loads((tmp_path / "o" / "estimate.json").read_text())["rank"] == 3
    assert {f: os.stat(tmp_path / "o" / f).st_mode & 0o777 for f in ("estimate.json", "estimate.png")} == {"estimate.json": 0o644, "estimate.png": 0o644}


SPECTRUM_CASES = {  # (X, Y, kind, V) whose spectra put points where a legend inside the panel would sit
    "token-mixing, T=16": lambda: (None, LIN, "token-mixing", None),
    "token-mixing, T=8": lambda: (None, linear_task(200, 8, 6, 2, seed=0).Y.numpy(), "token-mixing", None),   # 'best' covered a point here
    "linear-qk": lambda: (X, Y, "linear-qk", V),
    "linear-qk on token-mixing data": lambda: (lambda t: (t.X.numpy(), t.Y.numpy(), "linear-qk", None))(linear_task(200, 10, 6, 3, seed=1)),
}


@pytest.mark.parametrize("case", SPECTRUM_CASES)
def test_the_spectrum_legend_covers_no_point(case):
    "estimate.png: the left panel's legend covers no marker of the spectrum (each a disc of its marker size, in display coordinates), and every marker lies inside the panel."
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    Xc, Yc, kind, Vc = SPECTRUM_CASES[case]()
    est = estimate(Xc, Yc, kind, Vc, bootstrap=0)
    fig = est.plot(); canvas = FigureCanvasAgg(fig); canvas.draw()
    ax, spectrum = fig.axes[0], fig.axes[0].lines[0]
    box = ax.get_legend().get_window_extent(canvas.get_renderer())
    points = spectrum.get_transform().transform(spectrum.get_xydata())
    r = spectrum.get_markersize() / 2 * fig.dpi / 72                            # a marker's radius in pixels
    assert len(points) == est.decision.spectrum.size
    covered = [(x, y) for x, y in points if box.x0 - r < x < box.x1 + r and box.y0 - r < y < box.y1 + r]
    assert not covered, (case, box, covered)
    assert all(ax.bbox.x0 <= x <= ax.bbox.x1 and ax.bbox.y0 <= y <= ax.bbox.y1 for x, y in points)


def _misfit(est):
    return [w for w in est.warnings if w.startswith("the linear-QK model does not fit these data")]


@pytest.mark.parametrize("T, d, r", [(16, 12, 3), (10, 6, 3), (8, 6, 2)])
def test_linear_qk_on_token_mixing_data_warns_that_the_model_does_not_fit(T, d, r):
    task = linear_task(200, T, d, r, noise_std=0.05, seed=0)
    est = estimate(task.X.numpy(), task.Y.numpy(), "linear-qk", None, bootstrap=0)
    assert est.rank == 0 and est.decision.noise_std > 5 * 0.05                  # the case of the report: r̂ = 0, σ̂ far above the true 0.05
    assert len(_misfit(est)) == 1 and f"gives r̂ = {r}" in _misfit(est)[0], est.warnings
    assert f"warning: {_misfit(est)[0]}" in est.summary()


@pytest.mark.parametrize("noise", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("known_v", [True, False])
def test_a_well_specified_linear_qk_model_does_not_warn(noise, known_v):
    task = attention_task(100, T=8, d=4, r_star=1, kind="linear", noise_std=noise, seed=2)
    est = estimate(task.X.numpy(), task.Y.numpy(), "linear-qk", task.V.numpy() if known_v else None, bootstrap=0)
    assert not _misfit(est), est.warnings


def test_the_misfit_warning_reaches_the_command(tmp_path, capsys):
    task = linear_task(200, 10, 6, 3, noise_std=0.05, seed=0)
    np.savez(tmp_path / "tm.npz", X=task.X.numpy(), Y=task.Y.numpy())
    assert main(["estimate", str(tmp_path / "tm.npz"), "--kind", "linear-qk", "--bootstrap", "0", "--json"]) == 0
    assert any(w.startswith("the linear-QK model does not fit") for w in json.loads(capsys.readouterr().out)["warnings"])
