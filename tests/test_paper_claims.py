"""The paper preset's claims, as stored by benchmarks/bench_reproduce.py, reach the same decided verdicts as the quick preset's reference:
no claim may hold only at quick sizes (a verdict undecided on one side contradicts nothing: more seeds and larger sizes may decide
what three quick seeds do not), none may have a strawman control, and none may be uninformative unless the quick reference documents
it so (a finding its page discusses: the one-change control does not fail)."""
import pytest

from _stored import stored_record
from entropic_bound.cli import reference_verdicts as quick_verdicts      # claim id -> verdict of the stored quick-preset reference (the one reader)
from entropic_bound.cli import verdict_differences


@pytest.fixture(scope="module")
def paper(): return stored_record("paper_claims.json", "python benchmarks/bench_reproduce.py (paper preset, 5 seeds)")


def test_paper_claims_are_the_quick_claims(paper):
    assert paper["preset"] == "paper" and len(paper["seeds"]) == 5
    assert {c["id"] for c in paper["claims"]} == set(quick_verdicts()), "the stored paper-preset run is stale: rerun benchmarks/bench_reproduce.py"


def test_paper_verdicts_match_quick(paper):
    differ, unknown = verdict_differences(paper["claims"], quick_verdicts(), exact=False)
    assert not unknown and not differ, f"claims whose decided verdict at the quick preset (first) differs from the paper preset's (second): {differ}"


def test_paper_controls_are_near_misses(paper):
    documented = {i for i, v in quick_verdicts().items() if v in ("uninformative", "undecided")}
    bad = [c["id"] for c in paper["claims"] if c["kind"] == "empirical" and (c["verdict"] == "strawman" or (c["verdict"] == "uninformative" and c["id"] not in documented))]
    assert not bad, f"paper-preset claims whose control passes (undocumented) or is a strawman: {bad}"
    assert all(c["control"]["removes"] for c in paper["claims"] if c["kind"] == "empirical")
