"""The quick preset on the reference's seeds with the sequential design (`--seeds-up-to 12`), as stored by
benchmarks/sequential_design.py: it covers every claim of the current reference, adds seeds exactly to the experiments where the
reference leaves an empirical claim or its control undecided, never grades a claim on fewer seeds than the reference, and the front page
says what the added seeds decided."""
import json

import pytest

from _stored import ROOT, stored_record
from entropic_bound.cli import reference_verdicts


@pytest.fixture(scope="module")
def stored(): return stored_record("sequential_claims.json", "python benchmarks/sequential_design.py")


def test_stored_run_is_the_current_reference(stored):
    ref = reference_verdicts()
    assert {c["id"] for c in stored["claims"]} == set(ref), "the stored run is stale: rerun benchmarks/sequential_design.py"
    assert {i: r["verdict"] for i, r in stored["reference"].items()} == ref, "the reference moved since the run: rerun benchmarks/sequential_design.py"
    assert stored["seeds"] == [0, 1, 2] and stored["up_to"] > 3


def test_seeds_added_where_the_reference_is_undecided(stored):
    table = lambda i: i.split(".")[0]
    ref = {i: r["verdict"] for i, r in stored["reference"].items()}
    thin = {table(c["id"]) for c in stored["claims"] if c["kind"] == "empirical" and ref[c["id"]] == "undecided"}
    more = {table(c["id"]) for c in stored["claims"] if c["seeds"] > 3}
    assert thin <= more, f"experiments with an undecided empirical claim on seeds 0-2 that took no more seeds: {sorted(thin - more)}"
    assert all(c["seeds"] >= 3 and c["looks"] >= 1 for c in stored["claims"]), "a claim graded on fewer seeds than the reference"
    assert all((c["seeds"] > 3) == (c["looks"] > 1) for c in stored["claims"]), "seeds added without a look, or a look without seeds"


def test_front_page_quotes_the_design(stored):
    front = "".join("".join(c["source"]) for c in json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"] if c["cell_type"] == "markdown")
    assert "<!-- fig:sequential -->" in front
