"""Near misses in fact (nbs/22_report.ipynb, "Near misses in fact"): a claim that holds is counted apart when its control is a near miss,
i.e. not every value of the control sits at the same end of a fraction's range (spread [0, 0] or [1, 1]), where no item on any seed came
out on the claim's side and the control's margin is the resolution floor, not a measured distance."""
import pytest

from entropic_bound.experiment import EXPERIMENTS, load_reference
from entropic_bound.report import claim_over_seeds, count_claims, fraction_resolution, near_miss


def fraction_claim(control_values, direction: str = ">=", id: str = "x.fraction"):
    "A fraction claim on three seeds of 12 tasks each that holds, beside a control with the given per-seed fractions."
    claim_values = [1.0, 1.0, 1.0] if direction == ">=" else [0.0, 0.0, 0.0]
    return claim_over_seeds(id, "§0", "a fraction", claim_values, 0.5, direction, control=("its control", control_values), removes="the cause",
                            resolution=fraction_resolution(range(36)))


@pytest.mark.parametrize("values, direction", [([0.0, 0.0, 0.0], ">="), ([1.0, 1.0, 1.0], "<=")])
def test_a_control_at_a_fractions_extreme_is_not_a_near_miss(values, direction):
    c = fraction_claim(values, direction)
    assert c.verdict == "holds" and c.control.fails
    assert c.control.margin == pytest.approx(-0.5 * 36)          # the gap in units of the resolution: set by the design, not measured
    assert not near_miss(c.record())
    assert count_claims([c.record()])["empirical_hold_near_miss"] == 0


@pytest.mark.parametrize("values, direction", [([0.0, 0.25, 0.0], ">="), ([0.25, 0.25, 0.25], ">="), ([0.75, 1.0, 1.0], "<=")])
def test_a_control_with_items_on_the_claims_side_is_a_near_miss(values, direction):
    c = fraction_claim(values, direction)
    assert c.verdict == "holds" and c.control.fails
    assert near_miss(c.record())
    assert count_claims([c.record()])["empirical_hold_near_miss"] == 1


def test_a_continuous_control_is_a_near_miss_and_only_holding_claims_are_counted():
    held = claim_over_seeds("x.held", "§0", "s", [0.01, 0.02, 0.03], 0.05, "<=", control=("c", [0.06, 0.07, 0.08]), removes="x")
    failed = claim_over_seeds("x.failed", "§0", "s", [2.9, 3.0, 3.1], 1.0, "<=", control=("c", [4.9, 5.0, 5.1]), removes="x")
    theorem = claim_over_seeds("x.theorem", "§0", "s", [1.0, 1.0, 1.0], 2.0, "<=", kind="consistency")
    assert near_miss(held.record()) and near_miss(failed.record()) and not near_miss(theorem.record())
    k = count_claims([r.record() for r in (held, failed, theorem, fraction_claim([0.0, 0.0, 0.0]))])
    assert (k["empirical"], k["empirical_hold"], k["empirical_hold_near_miss"], k["empirical_fail"]) == (3, 2, 1, 1)


def test_on_the_stored_reference_a_control_that_is_not_a_near_miss_has_no_spread():
    "On the stored reference (quick preset, seeds 0-2), every control the rule puts at a fraction's extreme has standard error 0: its margin is the resolution floor."
    records = {}
    for name in EXPERIMENTS:
        try: cells = load_reference(name)["values"]
        except ValueError: continue
        for path, v in cells.items():
            parts = path.split("/")
            if parts[0] != "claims" or len(parts) < 3: continue
            r = records.setdefault(parts[1], dict(id=parts[1], control={}))
            if len(parts) == 3: r[parts[2]] = v
            elif parts[2] == "control" and parts[3] == "spread": r["control"].setdefault("spread", [None, None])[int(parts[4])] = v
            elif parts[2] == "control" and len(parts) == 4: r["control"][parts[3]] = v
    held = [r for r in records.values() if r.get("kind") == "empirical" and r.get("verdict") == "holds"]
    assert held and all(r["control"].get("spread") is not None for r in held)
    assert count_claims(held)["empirical_hold_near_miss"] == sum(near_miss(r) for r in held)
    assert all(r["control"]["se"] == 0 for r in held if not near_miss(r))
