"""The paper preset's claims, as stored by benchmarks/bench_reproduce.py, reach the same verdicts as the quick preset's reference:
no claim may hold only at quick sizes, none may have a strawman control, and none may be uninformative unless the quick reference
documents it so (a finding its page discusses: the one-change control passes too)."""
import pytest

from _stored import stored_record
from entropic_bound.cli import reference_verdicts as quick_verdicts      # claim id -> verdict of the stored quick-preset reference (the one reader)


@pytest.fixture(scope="module")
def paper(): return stored_record("paper_claims.json", "python benchmarks/bench_reproduce.py (paper preset, 5 seeds)")


def test_paper_claims_are_the_quick_claims(paper):
    assert paper["preset"] == "paper" and len(paper["seeds"]) == 5
    assert {c["id"] for c in paper["claims"]} == set(quick_verdicts()), "the stored paper-preset run is stale: rerun benchmarks/bench_reproduce.py"


def test_paper_verdicts_match_quick(paper):
    quick = quick_verdicts()
    differ = {c["id"]: (c["verdict"], quick[c["id"]]) for c in paper["claims"] if c["verdict"] != quick.get(c["id"])}
    assert not differ, f"claims whose verdict at the paper preset (first) differs from the quick preset's (second): {differ}"


def test_paper_controls_are_near_misses(paper):
    documented = {i for i, v in quick_verdicts().items() if v == "uninformative"}
    bad = [c["id"] for c in paper["claims"] if c["kind"] == "empirical" and (c["verdict"] == "strawman" or (c["verdict"] == "uninformative" and c["id"] not in documented))]
    assert not bad, f"paper-preset claims whose control passes (undocumented) or is a strawman: {bad}"
    assert all(c["control"]["removes"] for c in paper["claims"] if c["kind"] == "empirical")
