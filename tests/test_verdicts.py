"""Three verdicts: a claim or a control holds or fails only when its margin clears the two-sided 95 % critical value of Student's t
at its degrees of freedom, and is undecided inside it (nbs/22_report.ipynb, "Three verdicts"). Claims are placed at a chosen margin
(three seeds of each, pooled: 4 degrees of freedom, decided beyond ±2.78 standard errors); every count line counts the undecided apart."""
import math

import numpy as np
import pytest

from entropic_bound.cli import verdict_differences
from entropic_bound.report import assert_claims, claim_over_seeds, count_claims, fraction_resolution, t_critical
from entropic_bound.reproduce import claims_count_line, claims_markdown


def at_margin(margin: float, control_margin: float, direction: str = "<=", spread: float = 0.1, id: str = "x.claim"):
    "A claim whose margin and whose control's margin are the given numbers of pooled standard errors (three seeds each, sd `spread`)."
    se, sign = spread / math.sqrt(3), 1.0 if direction == "<=" else -1.0
    threshold = 1.0 + sign * margin * se
    centre = threshold - sign * control_margin * se
    return claim_over_seeds(id, "§0", "a claim", [1 - spread, 1.0, 1 + spread], threshold, direction,
                            control=("its control", [centre - spread, centre, centre + spread]), removes="the cause")


@pytest.mark.parametrize("direction", ["<=", ">="])
@pytest.mark.parametrize("margin, control_margin, verdict, control_verdict", [
    (-0.01, -5.0, "undecided", "fails"),        # on its criterion: not failed
    (-5.0, -5.0, "fails", "fails"),             # decided against
    (+0.01, -5.0, "undecided", "fails"),        # on its criterion: not held either
    (+5.0, -5.0, "holds", "fails"),             # decided, beside a control that fails, decided
    (+5.0, -0.01, "uninformative", "undecided"),  # a control on its criterion has not been shown to fail
    (+5.0, +5.0, "uninformative", "holds"),     # a control that passes
])
def test_three_way_verdicts_for_claims_and_controls(direction, margin, control_margin, verdict, control_verdict):
    c = at_margin(margin, control_margin, direction)
    assert c.df == 4 and c.critical == pytest.approx(2.7764, abs=1e-4)
    assert c.margin == pytest.approx(margin) and c.control.margin == pytest.approx(control_margin)
    assert c.verdict == verdict and c.control.verdict == control_verdict
    record = c.record()
    assert record["verdict"] == verdict and record["control"]["verdict"] == control_verdict
    assert record["holds"] == (verdict in ("holds", "uninformative")) and record["critical"] == pytest.approx(t_critical(4))
    assert record["control"]["holds"] == (control_verdict == "holds")


def test_critical_value_by_degrees_of_freedom():
    assert t_critical(2) == pytest.approx(4.3027, abs=1e-4) and t_critical(16) == pytest.approx(2.1199, abs=1e-4)
    assert math.isinf(t_critical(0))
    one = claim_over_seeds("x.one", "§0", "s", [0.02], 0.05, "<=", control=("c", [3.0]), removes="x")
    assert one.df == 0 and one.verdict == "undecided" and one.record()["critical"] is None     # one value each: no estimate of the noise


def test_exact_counts_are_decided_as_they_stand():
    "All seeds agree (se 0 on df >= 1): a fraction of 1 against '>= 1' holds, its control at 0 fails; one seed of six off is undecided."
    every = claim_over_seeds("x.all", "§0", "s", [1, 1, 1], 1.0, ">=", control=("c", [0, 0, 0]), removes="x", resolution=fraction_resolution([1, 1, 1]))
    assert every.critical == 0 and every.verdict == "holds" and every.control.verdict == "fails"
    one_off = claim_over_seeds("x.one_off", "§0", "s", [1, 1, 1, 1, 1, 0], 1.0, ">=", control=("c", [0] * 6), removes="x", resolution=1 / 6)
    assert one_off.margin == pytest.approx(-1.0) and one_off.verdict == "undecided"


def test_assert_claims_lists_undecided_like_failing():
    undecided, failing = at_margin(-0.01, -5.0, id="x.undecided"), at_margin(-5.0, -5.0, id="x.failing")
    assert_claims([undecided, failing], expect_fail=["x.failing"], expect_undecided=["x.undecided"])
    with pytest.raises(AssertionError, match="does not decide"): assert_claims([undecided])
    with pytest.raises(AssertionError, match="claims that fail"): assert_claims([failing], expect_undecided=["x.failing"])
    with pytest.raises(AssertionError, match="expected to be undecided"): assert_claims([at_margin(5, -5, id="x.h")], expect_undecided=["x.h"])
    with pytest.raises(AssertionError, match="expected to be failing"): assert_claims([undecided], expect_fail=["x.undecided"])


def test_counts_and_count_line_keep_undecided_apart():
    claims = [at_margin(m, cm, id=f"x.{i}").record() for i, (m, cm) in enumerate([(5, -5), (-5, -5), (-0.01, -5), (0.01, -5), (5, -0.01)])]
    k = count_claims(claims)
    assert (k["empirical"], k["empirical_hold"], k["empirical_fail"], k["undecided"], k["uninformative"]) == (5, 1, 1, 2, 1)
    line = claims_count_line(claims)
    assert line.startswith("1 of 5 empirical claims hold") and "1 fail" in line and "2 undecided" in line and "1 uninformative" in line
    table = claims_markdown(claims)
    assert table.count("**UNDECIDED**") == 2 and "**undecided**" in table and "(±2.8)" in table


def test_reference_comparison_exact_on_its_own_seeds_and_decided_elsewhere():
    reference = {"a": "undecided", "b": "holds", "c": "fails"}
    measured = [dict(id="a", verdict="fails"), dict(id="b", verdict="undecided"), dict(id="c", verdict="holds")]
    assert verdict_differences(measured, reference)[0] == [("a", "undecided", "fails"), ("b", "holds", "undecided"), ("c", "fails", "holds")]
    assert verdict_differences(measured, reference, exact=False)[0] == [("c", "fails", "holds")]    # only decided against decided
