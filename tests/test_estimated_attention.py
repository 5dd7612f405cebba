"""The least-squares attention of §6 (`estimated_attention`) and the log route on inputs the paper does not draw: fewer tokens than
features (exact), rank-deficient and layer-normalised inputs (minimum norm, the kernel on the inputs' span), heavy tails (runs)."""
import math

import numpy as np
import pytest
import torch

from entropic_bound.predict import (estimated_attention, input_span, log_attention_fit, fit_rank, _min_norm_attention,
                                    observation_noise_edge)
from entropic_bound.spectral import InsufficientDataError
from entropic_bound.tasks import attention_task, attention_mixing
from entropic_bound.estimate import estimate


def _layer_norm(X):
    return (X - X.mean(-1, keepdims=True)) / X.std(-1, keepdims=True)


def _teacher(X, r_star, seed, sigma=0.05):
    "Softmax teacher of Table 5's kind (kernel and value map of `attention_task`) on inputs X -> (Y, Y_clean, V, K, A)."
    t = attention_task(1, T=X.shape[1], d=X.shape[2], r_star=r_star, kind="softmax", seed=seed)
    A = attention_mixing(torch.from_numpy(X), t.K, "softmax").numpy()
    clean = A @ X @ t.V.numpy()
    return clean + sigma * np.random.default_rng(10_000 + seed).standard_normal(clean.shape), clean, t.V.numpy(), t.K.numpy(), A


@pytest.mark.parametrize("T,d,d_v", [(6, 8, 8), (4, 12, 12), (5, 8, 6)])
def test_fewer_tokens_than_features_is_exact(T, d, d_v):
    t = attention_task(30, T=T, d=d, d_v=d_v, r_star=2, kind="softmax", seed=1)
    A = attention_mixing(t.X, t.K, "softmax").numpy()
    A_hat = estimated_attention(t.X.numpy(), t.Y_clean.numpy(), t.V.numpy())
    np.testing.assert_allclose(A_hat, A, atol=1e-10)
    fit = log_attention_fit(t.X.numpy(), A_hat)
    np.testing.assert_allclose(fit.kernel * math.sqrt(d), t.K.numpy(), atol=1e-7)
    assert fit_rank(fit) == 2


def test_more_tokens_than_the_value_map_sees_is_a_projection():
    # T <= d but d_v < T: X_n V has rank d_v < T, so the estimate is A_n projected onto its column space, not A_n
    t = attention_task(20, T=6, d=8, d_v=4, r_star=2, kind="softmax", seed=0)
    X, V = t.X.numpy(), t.V.numpy()
    A = attention_mixing(t.X, t.K, "softmax").numpy()
    W = X @ V
    A_hat = estimated_attention(X, t.Y_clean.numpy(), V)
    np.testing.assert_allclose(A_hat, A @ W @ np.linalg.pinv(W), atol=1e-10)
    assert np.abs(A_hat - A).max() > 1e-2


def test_full_rank_matches_the_normal_equations():
    t = attention_task(200, r_star=3, kind="softmax", seed=2)
    X, Y, V = t.X.numpy(), t.Y.numpy(), t.V.numpy()
    normal = Y @ np.linalg.pinv(V) @ np.linalg.solve(X.transpose(0, 2, 1) @ X, X.transpose(0, 2, 1))
    A_hat = estimated_attention(X, Y, V)
    assert np.abs(A_hat - normal).max() <= 1e-12 * np.abs(normal).max()
    np.testing.assert_allclose(_min_norm_attention(X @ V, Y, 16 * np.finfo(float).eps), A_hat, atol=1e-12)   # the SVD path agrees


@pytest.mark.parametrize("T", [16, 6])
def test_rank_deficient_samples_get_the_minimum_norm_solution(T):
    t = attention_task(20, T=T, d=8, r_star=2, kind="softmax", seed=3)
    X, Y, V = t.X.numpy().copy(), t.Y.numpy(), t.V.numpy()
    X[::2] = _layer_norm(X[::2])                     # every other sample confined to the complement of the all-ones direction
    X[1, :, 3:] = 0                                  # one sample confined to three features
    A_hat = estimated_attention(X, Y, V)
    ref = Y @ np.linalg.pinv(X @ V, rcond=max(T, 8) * np.finfo(float).eps)
    np.testing.assert_allclose(A_hat, ref, atol=1e-10)


def test_layer_normalised_inputs_recover_the_visible_kernel():
    X = _layer_norm(np.random.default_rng(0).standard_normal((60, 16, 12)))
    Y, _, V, K, A = _teacher(X, 3, seed=0)
    Q = input_span(X)
    assert Q.shape == (12, 11) and np.abs(Q.T @ np.ones(12)).max() < 1e-10
    P = np.eye(12) - 1 / 12
    control = log_attention_fit(X, A)
    np.testing.assert_allclose(control.kernel * math.sqrt(12), P @ K @ P, atol=1e-8)
    assert fit_rank(control) == 3
    for r in (1, 2, 3, 4):                           # a small task: the data-only rank is r*
        X = _layer_norm(np.random.default_rng(r).standard_normal((100, 16, 12)))
        Y, _, V, _, _ = _teacher(X, r, seed=r)
        assert fit_rank(log_attention_fit(X, estimated_attention(X, Y, V))) == r


def test_layer_normalised_inputs_through_estimate():
    X = _layer_norm(np.random.default_rng(5).standard_normal((100, 16, 12)))
    Y, _, V, _, _ = _teacher(X, 3, seed=5)
    est = estimate(X, Y, kind="softmax-qk", V=V, bootstrap=0)
    assert est.rank == 3, est


def test_heavy_tailed_inputs_run():
    for r in (3, 4):
        X = np.random.default_rng(10 + r).standard_t(3, (100, 16, 12)) / math.sqrt(3)
        Y, _, V, _, _ = _teacher(X, r, seed=r)
        route = lambda Y_, s=None: log_attention_fit(X, estimated_attention(X, Y_, V), s)
        fit = route(Y)
        assert np.isfinite(fit.white).all() and 0 <= fit_rank(fit) <= 12
        edge = observation_noise_edge(lambda Y_: route(Y_, 1.0), Y, 0.05, draws=4)
        assert math.isfinite(edge) and edge > 0 and 0 <= fit_rank(fit, edge) <= 12


def test_where_the_route_is_undefined():
    t = attention_task(10, T=8, d=6, r_star=2, kind="softmax", seed=0)
    X, Y, V = t.X.numpy().copy(), t.Y.numpy(), t.V.numpy()
    X[3] = 0
    with pytest.raises(InsufficientDataError, match="no information"): estimated_attention(X, Y, V)
    with pytest.raises(InsufficientDataError, match="no information"): estimated_attention(t.X.numpy(), Y, np.zeros_like(V))
    with pytest.raises(InsufficientDataError, match="all zero"): input_span(np.zeros((3, 8, 6)))
    with pytest.raises(InsufficientDataError, match="singular"):   # one sample of T = 4 < d = 6 tokens cannot identify the kernel
        s = attention_task(1, T=4, d=6, r_star=2, kind="softmax", seed=0)
        log_attention_fit(s.X.numpy(), attention_mixing(s.X, s.K, "softmax").numpy())
    with pytest.raises(ValueError, match="V must have shape"): estimated_attention(t.X.numpy(), Y, V[:, :4])
    with pytest.raises(ValueError, match="X and Y must share"): estimated_attention(t.X.numpy()[:, :5], Y, V)
    with pytest.raises(ValueError, match="non-finite"): estimated_attention(np.full_like(X, np.nan), Y, V)
