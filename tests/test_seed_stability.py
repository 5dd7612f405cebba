"""The quick preset on seeds the reference never saw, as stored by benchmarks/seed_stability.py: it covers every claim of the
current reference, compares against the reference's own verdicts, and every claim whose verdict differs between the two seed
sets is named on the front page (seed-fragile), never silently."""
import json

import pytest

from _stored import ROOT, stored_record
from entropic_bound.cli import reference_verdicts


@pytest.fixture(scope="module")
def stored(): return stored_record("seed_claims.json", "python benchmarks/seed_stability.py")


def test_new_seeds_are_new(stored):
    assert stored["preset"] == "quick" and len(stored["seeds"]) >= 3
    assert not set(stored["seeds"]) & set(stored["reference_seeds"]), "the seed sets overlap"


def test_stored_run_is_the_current_reference(stored):
    ref = reference_verdicts()
    assert {c["id"] for c in stored["claims"]} == set(ref), "the stored run is stale: rerun benchmarks/seed_stability.py"
    assert {i: r["verdict"] for i, r in stored["reference"].items()} == ref, "the reference moved since the run: rerun benchmarks/seed_stability.py"


def test_seed_fragile_claims_are_named_on_the_front_page(stored):
    front = "".join("".join(c["source"]) for c in json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"] if c["cell_type"] == "markdown")
    differ = [c["id"] for c in stored["claims"] if c["verdict"] != stored["reference"][c["id"]]["verdict"]]
    unnamed = [i for i in differ if f"`{i}`" not in front]
    assert not unnamed, f"claims whose verdict differs on seeds {stored['seeds']} but which the front page does not name: {unnamed}"
    assert "<!-- fig:seed_fragile -->" in front
