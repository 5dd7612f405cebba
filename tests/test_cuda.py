"""The library's GPU paths against its CPU path, on the same inputs.

Skipped where torch sees no CUDA device (the CI machine has none); `benchmarks/gpu_check.sh` runs them on a GPU
machine. `EB_TEST_DEVICE=cpu pytest tests/test_cuda.py` runs the same code with the CPU in the GPU's place, which checks
the tests' own code where no GPU is at hand (every comparison is then of the CPU with itself, so it proves nothing about
a GPU).

What is compared, and how closely:

* float64 work (seeded initialisations, the §4 engine on moments, Table 1, the rank bundle, the softmax routes of §6)
  must agree to rounding: the device sums in another order, nothing more;
* Tables 4 and 5 run their estimators (least squares) on the CPU whatever the device, so for them the test checks that
  asking for the device changes nothing;
* float32 training (the ladder of Table 2, the students of Table 3) drifts at the level of float32 rounding over its
  steps, so there every claim's verdict must be the same and every value, claim or table cell, must agree within
  `FLOAT32_RTOL` (these runs take ten steps).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from entropic_bound.experiment import run
from entropic_bound.linear import excess_risk, task_moments, train_rank_sweep
from entropic_bound.predict import softmax_route_ranks
from entropic_bound.experiment import shelf, experiment
from entropic_bound.spectral import rank_profile
from entropic_bound.tasks import attention_task, linear_task
from entropic_bound.train import seeded_normal
from test_experiments import TINY          # the experiments at tiny sizes: seconds each

DEVICE = os.environ.get("EB_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(), reason="torch sees no CUDA device")

FLOAT64_RTOL = 1e-7        # float64 work: the same up to summation order
FLOAT32_RTOL = 1e-3        # float32 training, device against CPU, after ten steps
FLOAT32_TABLES = {"table2", "table3"}


def test_seeded_initialisations_are_the_same_numbers():
    ids = [1, 2, 1003]
    on_device = seeded_normal(ids, (16, 3), 0.1, device=DEVICE, stream=2)
    assert on_device.device.type == torch.device(DEVICE).type
    torch.testing.assert_close(on_device.cpu(), seeded_normal(ids, (16, 3), 0.1, stream=2), rtol=0, atol=0)


def test_engine_on_moments_matches_cpu():
    "The §4 rank sweep (float64 GD on moments, 300 steps, 2 tasks x 3 ranks) gives the CPU's models on the device."
    tasks = [linear_task(256, 16, 12, 3, seed=s) for s in (0, 1)]
    m = task_moments(tasks)
    A_star = torch.stack([t.A for t in tasks])[:, None]; V_star = torch.stack([t.V for t in tasks])[:, None]
    out = {}
    for dev in ("cpu", DEVICE):
        A, V, res = train_rank_sweep(m.to(dev), [2, 3, 4], [0, 1], steps=300, rtol=0.0, progress=False)
        assert A.device.type == torch.device(dev).type
        out[dev] = (excess_risk(A.cpu(), V.cpu(), A_star, V_star), res.loss.cpu())
    for a, b in zip(out["cpu"], out[DEVICE]):
        torch.testing.assert_close(b, a, rtol=FLOAT64_RTOL, atol=1e-12)


def test_rank_bundle_of_device_tensors():
    M = torch.randn(4, 12, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    here, there = rank_profile(M.numpy()), rank_profile(M.to(DEVICE))
    for k in ("shannon", "energy", "stable"):
        assert torch.is_tensor(there[k]) and there[k].device.type == torch.device(DEVICE).type, k   # device in, device out
        np.testing.assert_allclose(there[k].cpu().numpy(), np.asarray(here[k]), rtol=FLOAT64_RTOL)


def test_softmax_routes_of_a_device_task():
    "§6's data-only routes on a task held on the device give what they give on the CPU (the fits themselves are CPU least squares)."
    make = lambda dev: attention_task(120, 16, 12, 2, "softmax", 0.05, seed=3, device=dev)
    here, there = softmax_route_ranks(make("cpu"), draws=4), softmax_route_ranks(make(DEVICE), draws=4)
    assert here.keys() == there.keys()
    for route in here:
        for k in ("noise_rank", "misfit_rank"): assert there[route][k] == here[route][k], (route, k)
        np.testing.assert_allclose(there[route]["energy"], here[route]["energy"], rtol=FLOAT64_RTOL, err_msg=route)


def _flat(rows) -> dict:
    "Numeric cells of table rows, keyed (row, column)."
    return {(i, k): float(v) for i, r in enumerate(rows) for k, v in r.items() if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)}


@pytest.mark.parametrize("name", list(shelf("paper")))
def test_table_on_device_matches_cpu(name):
    exp = experiment(name)
    s = exp.settings("quick", **TINY[name])
    cpu, dev = run(exp, s, seeds=(0, 1), progress=False), run(exp, s, seeds=(0, 1), device=DEVICE, progress=False)
    a, b = [c.record() for c in cpu.claims], [c.record() for c in dev.claims]
    assert [(c["id"], c["kind"]) for c in b] == [(c["id"], c["kind"]) for c in a]
    assert [list(r) for r in dev.rows] == [list(r) for r in cpu.rows]
    cells_a, cells_b = _flat(cpu.rows), _flat(dev.rows)
    assert cells_a.keys() == cells_b.keys()
    assert all(np.isfinite(v) == np.isfinite(cells_a[k]) for k, v in cells_b.items()), "a value is finite on one device only"
    rtol, atol = (FLOAT32_RTOL, 1e-6) if name in FLOAT32_TABLES else (FLOAT64_RTOL, 1e-9)
    for x, y in zip(a, b):
        assert y["verdict"] == x["verdict"], x["id"]
        np.testing.assert_allclose(y["measured"], x["measured"], rtol=rtol, atol=atol, err_msg=x["id"])
    for k in cells_a:
        np.testing.assert_allclose(cells_b[k], cells_a[k], rtol=rtol, atol=atol, err_msg=str(k))


def test_command_line_on_device(tmp_path):
    "`reproduce --device cuda` (here: the device under test) writes every output of a table and ends 0 or 1 (1: a claim fails)."
    if not DEVICE.startswith("cuda"): pytest.skip("the command line's --device takes 'cuda' or 'cpu' only; the CPU path is tested elsewhere")
    args = ["reproduce", "--preset", "smoke", "--device", "cuda", "--only", "table1,table4", "--out", str(tmp_path), "--no-progress"]
    r = subprocess.run([sys.executable, "-c", f"import sys; from entropic_bound.cli import main; sys.exit(main({args!r}))"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    for f in ("table1.csv", "table4.csv", "claims.json", "summary.md"):
        assert (tmp_path / f).exists(), f
