"""More seeds where the evidence is thin: the seeds an undecided claim would take (`report.seeds_to_decide`), and the sequential design
of `entropic-bound reproduce --seeds-up-to N` (`experiment.run_sequential`): looks on a fixed schedule, each at the Bonferroni-corrected
level, every seed measured once, the plain run unchanged."""
import contextlib
import io
import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from entropic_bound import cli
from entropic_bound import experiment as ex
from entropic_bound.experiment import InProcess, OnePartExperiment, experiment, result_cells, run, run_experiments, run_sequential
from entropic_bound.report import (CONFIDENCE, ExperimentResult, claim_over_seeds, decide_note, grade_on, looks_confidence, looks_schedule,
                                   seeds_to_decide, t_critical)


def at_margin(margin: float, control_margin: float = -5.0, per_seed: int = 1, seeds: int = 3, spread: float = 0.1):
    "A '<=' claim whose margin and whose control's margin are the given numbers of pooled standard errors: `seeds` seeds of `per_seed` values each, for both."
    values = 1.0 + spread * np.linspace(-1, 1, seeds * per_seed)
    se = values.std(ddof=1) / math.sqrt(values.size)
    threshold = 1.0 + margin * se; centre = threshold - control_margin * se
    c = claim_over_seeds("x.claim", "§0", "s", values, threshold, "<=", control=("c", values - 1.0 + centre), removes="x")
    return grade_on([c], seeds)[0]


def projected(c, n: int, seeds: int = 3) -> float:
    "The margin of claim `c` (graded on `seeds`) on n seeds, its mean gap and standard deviation as measured."
    return abs(c.margin) * math.sqrt(n / seeds)


@pytest.mark.parametrize("margin", [-0.01, -2.0, 0.5, -1.5])
def test_seeds_to_decide_is_the_first_crossing(margin):
    "Pooled, three seeds of each (df 4): the projected margin clears t_critical at 2n − 2 degrees of freedom at n = seeds_to_decide, and not at n − 1."
    c = at_margin(margin)
    assert c.verdict == "undecided" and c.df == 4 and c.pooled
    n = seeds_to_decide(c)
    assert projected(c, n) >= t_critical(2 * n - 2) and projected(c, n - 1) < t_critical(2 * n - 4)


def test_a_hair_off_needs_many_seeds_two_se_off_few():
    near, off = at_margin(-0.01), at_margin(-2.0)
    assert seeds_to_decide(near) > 100_000
    assert 3 < seeds_to_decide(off) <= 6
    assert decide_note(near.record()) == f"would take {seeds_to_decide(near):,} seeds" and near.record()["seeds_to_decide"] == seeds_to_decide(near)
    assert "would take" in str(near)


def test_on_the_criterion_no_finite_number_and_decided_none():
    on = at_margin(0.0)
    assert on.verdict == "undecided" and seeds_to_decide(on) is None and "no finite number" in decide_note(on.record())
    decided = at_margin(-5.0)
    assert decided.verdict == "fails" and seeds_to_decide(decided) is None and decide_note(decided.record()) == ""
    one = claim_over_seeds("x.one", "§0", "s", [1.0], 2.0, "<=", control=("c", [3.0]), removes="x")
    assert seeds_to_decide(one) is None and "no spread" in decide_note(one.record())


def test_values_per_seed_count_in_the_projection():
    "Two values a seed (tasks of every seed): the same margin needs about half the seeds of one value a seed."
    one, two = at_margin(-1.0, per_seed=1, seeds=6), at_margin(-1.0, per_seed=2, seeds=3)
    n1, n2 = seeds_to_decide(one), seeds_to_decide(two)
    assert two.items == 6 and two.seeds == 3
    assert abs(two.margin) * math.sqrt(n2 / 3) >= t_critical(round((two.df + 2) * n2 / 3) - 2)
    assert n2 < n1 and abs(n2 - 3 * n1 / 6) <= 2


def test_a_stricter_level_takes_more_seeds():
    c = at_margin(-2.0)
    strict = grade_on([at_margin(-2.0)], 3, confidence=looks_confidence(3), schedule=looks_schedule(3, 12))[0]
    assert strict.critical == pytest.approx(t_critical(4, 1 - 0.05 / 3)) and seeds_to_decide(strict) > seeds_to_decide(c)
    rec = strict.record()
    assert (rec["seeds"], rec["looks"], rec["schedule"], rec["confidence"]) == (3, 1, [3, 6, 12], pytest.approx(1 - 0.05 / 3))


def test_schedule_and_level():
    assert looks_schedule(3, 12) == (3, 6, 12) and looks_schedule(5, 20) == (5, 10, 20) and looks_schedule(3, 10) == (3, 6, 10)
    with pytest.raises(ValueError, match="must exceed"): looks_schedule(3, 3)
    assert looks_confidence(1) == CONFIDENCE and looks_confidence(3) == pytest.approx(1 - 0.05 / 3)


@dataclass(frozen=True)
class ToySettings:
    mean: float = 0.5             # each seed draws one value N(mean, 1); the claim says the mean is <= 0


def _measure_toy(s, seeds, device, progress): return {seed: float(np.random.default_rng([1, seed]).normal(s.mean, 1.0)) for seed in seeds}


def _summarise_toy(s, values):
    v = list(values.values())
    claim = claim_over_seeds("toy.mean", "§0", "the mean is <= 0", v, 0.0, "<=", control=("the same values shifted by 5", [x + 5 for x in v]), removes="x")
    return ExperimentResult("toy", [dict(seeds=len(v), mean=float(np.mean(v)))], [claim])


TOY = OnePartExperiment("toy", "§0", "a toy whose claim is undecided on 3 and 6 seeds (at 98.33 %) and fails on 12", ToySettings,
                        {"quick": {}, "smoke": {}}, _measure_toy, _summarise_toy)


@pytest.fixture
def toy(monkeypatch):
    "The toy registered as experiment 'toy' (its module is this file, whose source the record's code identity hashes)."
    monkeypatch.setitem(ex.EXPERIMENTS, "toy", f"{__name__}:TOY")
    return experiment("toy")


class _Counting(InProcess):
    "`InProcess` that lists the seeds of every unit it measures."
    def __init__(self): self.seen = []
    def measure(self, jobs):
        for job in jobs: self.seen.append(job.unit.seeds); yield job.measure()


def test_the_design_measures_each_seed_once_and_regrades_on_all(tmp_path, toy):
    "Looks at 3, 6 and 12 seeds while the claim is undecided: only the new seeds are measured at each look, the final claims are a plain summary's on all seeds, graded at the corrected level, and a rerun reuses the design."
    counting, said = _Counting(), []
    (record,) = run_sequential(["toy"], tmp_path, "smoke", (0, 1, 2), cap=12, backend=counting, progress=False, log=said.append)
    assert [k["seeds"] for k in record["looks"]] == [3, 6, 12] and [bool(k["undecided"]) for k in record["looks"]] == [True, True, False]
    assert counting.seen == [(0, 1, 2), (3, 4, 5), tuple(range(6, 12))] and len(said) == 3 and "look 3 of 3 at 12 seeds" in said[-1]
    (c,) = record["claims"]
    plain = run(toy, toy.settings("smoke"), seeds=range(12)).claims[0]
    assert c["margin"] == pytest.approx(plain.margin) and c["df"] == plain.df and c["verdict"] == "fails"
    assert (c["seeds"], c["looks"], c["schedule"], c["confidence"]) == (12, 3, [3, 6, 12], pytest.approx(1 - 0.05 / 3))
    assert c["critical"] == pytest.approx(t_critical(plain.df, 1 - 0.05 / 3))
    assert not (tmp_path / ".units").exists()
    again = _Counting()
    run_sequential(["toy"], tmp_path, "smoke", (0, 1, 2), cap=12, backend=again, progress=False, log=lambda s: None)
    assert again.seen == []
    forced = _Counting()                                                    # --force: every seed measured again, once
    (record,) = run_sequential(["toy"], tmp_path, "smoke", (0, 1, 2), cap=12, backend=forced, force=True, progress=False, log=lambda s: None)
    assert forced.seen == counting.seen and record["claims"][0]["margin"] == pytest.approx(c["margin"])


def test_a_stopped_design_resumes_without_measuring_again(tmp_path, toy):
    "Killed during its third look, the design keeps the first two looks' units; the rerun measures only the third look's seeds."
    class _StopAt(_Counting):
        def measure(self, jobs):
            for job in jobs:
                if 11 in job.unit.seeds: raise KeyboardInterrupt
                self.seen.append(job.unit.seeds); yield job.measure()
    with pytest.raises(KeyboardInterrupt): run_sequential(["toy"], tmp_path, "smoke", (0, 1, 2), cap=12, backend=_StopAt(), progress=False, log=lambda s: None)
    rerun = _Counting()
    (record,) = run_sequential(["toy"], tmp_path, "smoke", (0, 1, 2), cap=12, backend=rerun, progress=False, log=lambda s: None)
    assert rerun.seen == [tuple(range(6, 12))] and record["looks"][-1]["seeds"] == 12


def test_the_plain_run_is_one_look_at_95_and_compares_no_projection(tmp_path):
    (record,) = run_experiments(["table5"], tmp_path, "smoke", (0, 1, 2), progress=False)
    assert "grading" not in record["config"] and "looks" not in record
    assert all((c["seeds"], c["looks"], c["schedule"], c["confidence"]) == (3, 1, None, CONFIDENCE) for c in record["claims"])
    assert any(c["seeds_to_decide"] is not None for c in record["claims"])                  # two are undecided on 3 seeds
    assert not any(p.endswith("seeds_to_decide") for p in result_cells(record))             # a projection is not compared with the reference


def test_cli_seeds_up_to(tmp_path, toy):
    "The toy is not in the reference: exit status 3 (nothing compared), the looks printed, claims.json with the seeds and looks."
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["reproduce", "--preset", "smoke", "--only", "toy", "--seeds", "3", "--seeds-up-to", "12", "--out", str(tmp_path / "r"),
                         "--jobs", "1", "--no-progress"])
    text = out.getvalue()
    assert code == 3, text
    assert "toy: look 1 of 3 at 3 seeds" in text and "toy: look 3 of 3 at 12 seeds" in text
    (c,) = json.loads((tmp_path / "r" / "claims.json").read_text())
    assert (c["seeds"], c["looks"], c["schedule"]) == (12, 3, [3, 6, 12])
    assert "Graded on 12 seeds, look 3 of the schedule 3 → 6 → 12" in (tmp_path / "r" / "summary.md").read_text()
    for argv in (["--seeds-up-to", "3"], ["--seeds", "5", "--seeds-up-to", "5"], ["--seeds-up-to", "1001"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err): code = cli.main(["reproduce", "--out", str(tmp_path / "bad"), *argv])
        assert code == 2 and "--seeds-up-to must be more than" in err.getvalue()
    assert not (tmp_path / "bad").exists()
