"""Property tests of the §3 measures on many random matrices (the notebook checks the known values)."""
import numpy as np
import pytest
import torch

from entropic_bound.spectral import (corrected_effective_rank, effective_rank, energy_effective_rank,
                                     numerical_rank, stable_rank)


@pytest.mark.parametrize("seed", range(20))
def test_chain_and_invariances(seed):
    rng = np.random.default_rng(seed)
    m, n = rng.integers(1, 20, size=2)
    k = rng.integers(1, min(m, n) + 1)
    M = rng.normal(size=(m, k)) @ rng.normal(size=(k, n)) * 10.0 ** rng.uniform(-50, 50)
    chain = [1.0, stable_rank(M), energy_effective_rank(M), effective_rank(M), float(numerical_rank(M))]
    assert all(b >= a - 1e-9 * chain[-1] for a, b in zip(chain, chain[1:])), chain
    Q1, _ = np.linalg.qr(rng.normal(size=(m, m)))
    Q2, _ = np.linalg.qr(rng.normal(size=(n, n)))
    for f in (effective_rank, energy_effective_rank, stable_rank):
        assert f(M) == pytest.approx(f(-3.7 * Q1 @ M @ Q2), rel=1e-9)       # scale and rotation invariant
        assert f(M) == pytest.approx(f(M.T), rel=1e-12)                     # transpose invariant
    assert numerical_rank(M) == k


def test_torch_and_numpy_agree_batched():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 2, 7, 4))
    for f in (effective_rank, energy_effective_rank, stable_rank, numerical_rank):
        out = f(torch.from_numpy(A))
        assert isinstance(out, torch.Tensor) and out.shape == (3, 2)
        np.testing.assert_allclose(out.numpy(), f(A), rtol=1e-12)


def test_corrected_rank_empty_remainder_is_zero():
    assert corrected_effective_rank(np.eye(4) * 1e-3, noise_std=1.0) == 0.0
    out = corrected_effective_rank(np.stack([np.eye(4) * 1e-3, np.eye(4)]), noise_std=0.01)
    np.testing.assert_allclose(out, [0.0, 4.0])


@pytest.mark.parametrize("bad", [np.full((2, 2), np.nan), np.ones(3), np.ones((2, 0)), "abc"])
def test_bad_input_raises(bad):
    for f in (effective_rank, energy_effective_rank, stable_rank, numerical_rank):
        with pytest.raises(ValueError):
            f(bad)
