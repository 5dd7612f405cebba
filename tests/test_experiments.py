"""The experiment contract on the paper's five tables, at tiny sizes: measuring seed by seed (what a cluster does)
gives what measuring the seeds together gives — every word and integer exactly, every float to float32 rounding
(`report.ROUNDOFF`: bit for bit on the default BLAS path, a few last bits apart where the BLAS sums a batch of another
size in another order, as MKL_CBWR=COMPATIBLE does) — and settings are validated once, with the field named."""
import numpy as np
import pytest

from entropic_bound.experiment import run, units
from entropic_bound.experiment import EXPERIMENTS, experiment
from entropic_bound.report import ROUNDOFF

TINY = {
    "table1": dict(n=32, ranks=(1, 2, 3), sweep_steps=40, gd_steps=40),
    "table2": dict(r_stars=(1, 3), n=32, n_test=64, steps=10, pos_steps=10),
    "table3": dict(r_stars=(1, 2), n=16, n_test=16, steps=10, full_sweep=(2,), estimator_n=(16,), estimator_noise=(0.05,), estimator_seeds=2),
    "table4": dict(r_stars=(1, 2), noise_stds=(0.05,), ns_known=(1, 2), ns_unknown=(80,)),
    "table5": dict(n=90, r_stars=(1, 2), draws=2),
}


def _same(a, b, path="result"):
    "Assert two plain results are equal, arrays elementwise (NaN equal to NaN)."
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a: _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and not (a and isinstance(a[0], (float, int, np.floating))):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)): _same(x, y, f"{path}[{i}]")
    elif isinstance(a, str) or isinstance(b, str) or a is None or isinstance(a, bool):
        assert a == b, f"{path}: {a!r} != {b!r}"
    else:
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.kind in "iub" and y.dtype.kind in "iub": np.testing.assert_array_equal(x, y, err_msg=path)
        else: np.testing.assert_allclose(x, y, rtol=ROUNDOFF, atol=0, equal_nan=True, err_msg=path)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_per_seed_units_equal_batched(name):
    exp = experiment(name)
    s = exp.settings("quick", **TINY[name])
    together, apart = run(exp, s, seeds=(0, 1), progress=False), run(exp, s, seeds=(0, 1), progress=False, per_seed=True)
    assert len(units(exp, s, (0, 1), per_seed=True)) > len(units(exp, s, (0, 1)))
    _same(together.rows, apart.rows, "rows")
    _same([c.record() for c in together.claims], [c.record() for c in apart.claims], "claims")


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_settings_are_validated(name):
    exp = experiment(name)
    with pytest.raises(ValueError, match="unknown settings"):
        exp.settings("quick", no_such_setting=1)
    with pytest.raises(ValueError, match="unknown preset"):
        exp.settings("huge")
    field = {"table1": "n", "table2": "n", "table3": "n", "table4": "r_stars", "table5": "n"}[name]
    with pytest.raises(ValueError, match=f"Settings.{field} must be"):
        exp.settings("quick", **{field: 0 if field == "n" else ()})
