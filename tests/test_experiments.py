"""The experiment contract on the paper's five tables, at tiny sizes: measuring seed by seed (what a cluster does)
gives what measuring the seeds together gives — every word and integer exactly, every float to float32 rounding
(`report.ROUNDOFF`: bit for bit on the default BLAS path, a few last bits apart where the BLAS sums a batch of another
size in another order, as MKL_CBWR=COMPATIBLE does) — and settings are validated once, with the field named."""
import numpy as np
import pytest

from entropic_bound.experiment import run, units
from entropic_bound.experiment import shelf, experiment
from entropic_bound.report import ROUNDOFF

TINY = {
    "table1": dict(n=32, ranks=(1, 2, 3), sweep_steps=40, gd_steps=40, implicit_steps=40, implicit_max_steps=40),
    "table2": dict(r_stars=(1, 3), n=32, n_test=64, steps=10, pos_steps=10),
    "table3": dict(r_stars=(1, 2), n=16, n_test=16, steps=10, full_sweep=(2,), estimator_n=(16,), estimator_noise=(0.05,), estimator_seeds=2),
    "table4": dict(r_stars=(1, 2), noise_stds=(0.05,), ns_known=(1, 2), ns_unknown=(80,)),
    "table5": dict(n=90, n_beyond=200, r_stars=(1, 2), draws=2),
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


@pytest.mark.parametrize("name", list(shelf("paper")))
def test_per_seed_units_equal_batched(name):
    exp = experiment(name)
    s = exp.settings("quick", **TINY[name])
    together, apart = run(exp, s, seeds=(0, 1), progress=False), run(exp, s, seeds=(0, 1), progress=False, per_seed=True)
    assert len(units(exp, s, (0, 1), per_seed=True)) > len(units(exp, s, (0, 1)))
    _same(together.rows, apart.rows, "rows")
    _same([c.record() for c in together.claims], [c.record() for c in apart.claims], "claims")


@pytest.mark.parametrize("name", list(shelf("paper")))
def test_settings_are_validated(name):
    exp = experiment(name)
    with pytest.raises(ValueError, match="unknown settings"):
        exp.settings("quick", no_such_setting=1)
    with pytest.raises(ValueError, match="unknown preset"):
        exp.settings("huge")
    field = {"table1": "n", "table2": "n", "table3": "n", "table4": "r_stars", "table5": "n"}[name]
    with pytest.raises(ValueError, match=f"Settings.{field} must be"):
        exp.settings("quick", **{field: 0 if field == "n" else ()})


def test_one_registry_two_shelves():
    from entropic_bound.experiment import EXPERIMENTS
    from entropic_bound.spectral import InputError
    assert shelf("paper") == [f"table{i}" for i in range(1, 6)]
    assert shelf("beyond") == ["audit", "table6"]
    assert shelf("all") == list(EXPERIMENTS) and set(shelf("all")) == set(shelf("paper")) | set(shelf("beyond"))
    for name in shelf("beyond"): assert experiment(name).name == name        # importable without transformers: loading is lazy
    with pytest.raises(InputError, match="shelf"): shelf("nowhere")


def test_settings_overrides_name_the_run(tmp_path):
    from entropic_bound.experiment import config_key, experiment_config, run_experiments
    from entropic_bound.spectral import InputError
    base = experiment_config("table1", "quick", (0,), "cpu")
    other = experiment_config("table1", "quick", (0,), "cpu", dict(n=32))
    assert base["settings"]["n"] != 32 and other["settings"]["n"] == 32 and config_key(base) != config_key(other)
    assert config_key(base) == config_key(base | dict(preset=None))           # the key is the settings', not the preset's name
    with pytest.raises(InputError, match="not run"):
        run_experiments(["table1"], tmp_path, overrides=dict(table2=dict(n=32)))


def test_run_reuses_the_units_a_run_kept(tmp_path, monkeypatch):
    import entropic_bound.experiment as ex
    exp = experiment("table1"); s = exp.settings("quick", **TINY["table1"])
    first = run(exp, s, seeds=(0,), progress=False, records=tmp_path)
    assert (tmp_path / ".records" / "table1.units.pkl").is_file()
    calls = []
    real = ex.measure_unit
    monkeypatch.setattr(ex, "measure_unit", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = run(exp, s, seeds=(0,), progress=False, records=tmp_path)
    assert calls == [] and again.rows == first.rows                           # summarised from the kept units: nothing measured
    run(exp, exp.settings("quick", **{**TINY["table1"], "n": 40}), seeds=(0,), progress=False, records=tmp_path)
    assert len(calls) == 1                                                     # other settings: measured again
    (tmp_path / ".records" / "table1.units.pkl").write_bytes(b"not a pickle")
    run(exp, s, seeds=(0,), progress=False, records=tmp_path)
    assert len(calls) == 2                                                     # an unreadable file is measured again, not an error


def test_a_failing_summary_keeps_the_measurement(tmp_path, monkeypatch):
    import entropic_bound.experiment as ex
    from entropic_bound.experiment import run_experiments
    over = dict(table1=TINY["table1"])
    real_summary, real_measure = ex.summarise_units, ex.measure_unit
    def broken(*a, **k): raise RuntimeError("a bug in the summary")
    monkeypatch.setattr(ex, "summarise_units", broken)
    with pytest.raises(RuntimeError, match="bug in the summary"):
        run_experiments(["table1"], tmp_path, seeds=(0,), progress=False, overrides=over)
    assert (tmp_path / ".records" / "table1.units.pkl").is_file() and not (tmp_path / ".records" / "table1.json").exists()
    calls = []
    monkeypatch.setattr(ex, "summarise_units", real_summary)
    monkeypatch.setattr(ex, "measure_unit", lambda *a, **k: calls.append(a) or real_measure(*a, **k))
    record, = run_experiments(["table1"], tmp_path, seeds=(0,), progress=False, overrides=over)
    assert calls == [] and not record["reused"] and record["rows"]              # the kept units summarised, nothing measured again
    again, = run_experiments(["table1"], tmp_path, seeds=(0,), progress=False, overrides=over)
    assert again["reused"] and again["rows"] == record["rows"]

def test_records_folder_reads_the_environment(monkeypatch, tmp_path):
    from entropic_bound.experiment import RECORDS_VARIABLE, records_folder
    monkeypatch.delenv(RECORDS_VARIABLE, raising=False)
    assert records_folder() is None
    monkeypatch.setenv(RECORDS_VARIABLE, str(tmp_path))
    assert records_folder() == tmp_path


def test_units_go_out_heaviest_first(tmp_path):
    "The runner hands a backend its units in the order of the experiments' rough costs for the preset, heaviest first, so light units fill the end."
    from entropic_bound.experiment import InProcess, run_experiments

    class Stop(Exception): pass
    seen = {}

    class Capture(InProcess):
        def measure(self, jobs):
            seen["jobs"] = [(j.name, j.unit.part) for j in jobs]
            raise Stop

    for preset in ("quick", "paper"):
        with pytest.raises(Stop): run_experiments(shelf("paper"), tmp_path / preset, preset, (0, 1), backend=Capture(), force=True, progress=False)
        costs = [experiment(n).costs[preset][p] for n, p in seen["jobs"]]
        assert costs == sorted(costs, reverse=True) and len(seen["jobs"]) == 8, (preset, seen["jobs"])
        assert seen["jobs"][0] == ("table3", "students")                 # the longest unit starts first at both presets
