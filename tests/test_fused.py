"""The fused steps (nbs/21b_fused.ipynb) against the autograd reference, on random inputs in float64: every fused class's loss and
gradients equal autograd's to 1e-6 relative, one optimiser step (Adam and plain gradient descent, frozen models included) moves
the weights as the engine's optimiser does, and whole training runs through `train_batched` — stopping and shedding included —
give the same models both ways."""
import pytest
import torch

from entropic_bound.attention import student_outputs
import entropic_bound.fused as fused_module
from entropic_bound.fused import attention_student_grads, attention_student_step
from entropic_bound.spectral import InputError
from entropic_bound.train import _Optimizer, train_batched

TOL = 1e-6


def rel(a, b) -> float:
    "Relative error of `a` against `b` in the Frobenius norm."
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def students(seed, B=5, n=4, T=16, d=12, dv=12, R=None, scale=0.5, dtype=torch.float64):
    "Random attention students (both kinds, random rank masks) and their data."
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)
    R = d if R is None else R
    ranks = torch.randint(0, R + 1, (B,), generator=g)
    mask = (torch.arange(R) < ranks.view(-1, 1)).to(dtype)[:, None, :]
    params = dict(WQ=r(B, d, R) * scale, WK=r(B, d, R) * scale, V=r(B, d, dv) * scale)
    return params, dict(X=r(B, n, T, d), Y=r(B, n, T, dv), mask=mask, softmax=torch.randint(0, 2, (B,), generator=g).bool())


def loss_fn(p, d):
    "The students' training loss as `fit_students` defines it: autograd's reference."
    return ((student_outputs(p, d["mask"], d["softmax"], d["X"]) - d["Y"]) ** 2).sum((-1, -2)).mean(-1)


def autograd(p, d):
    leaf = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    loss = loss_fn(leaf, d)
    return loss.detach(), dict(zip(leaf, torch.autograd.grad(loss.sum(), list(leaf.values()))))


SHAPES = [dict(), dict(T=7, d=5, dv=3), dict(n=1, T=16, d=12, dv=4, R=12), dict(B=3, T=4, d=6, dv=6, scale=2.0)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", SHAPES)
def test_attention_gradients_equal_autograd(seed, shape):
    params, data = students(seed, **shape)
    ref_loss, ref_grads = autograd(params, data)
    loss, grads = attention_student_grads(params, data)
    assert rel(loss, ref_loss) < TOL
    for k in ref_grads:
        if ref_grads[k].norm() > 0: assert rel(grads[k], ref_grads[k]) < TOL, k
        else: assert grads[k].norm() == 0, k                      # rank-0 students: no kernel gradient


@pytest.mark.parametrize("threads_from", [0, 10 ** 9])       # the models spread over threads, and one after another
@pytest.mark.parametrize("optimizer", ["adam", "gd"])
@pytest.mark.parametrize("seed", range(3))
def test_attention_step_equals_engine_optimizer(optimizer, seed, threads_from, monkeypatch):
    monkeypatch.setattr(fused_module, "THREADS_FROM", threads_from)
    params, data = students(seed)
    frozen = torch.arange(params["V"].shape[0]) % 3 == 1
    ours, theirs = ({k: v.clone() for k, v in params.items()} for _ in range(2))
    lr = 1e-2 if optimizer == "adam" else 1e-4                  # plain gradient descent at Adam's step diverges on these weights
    opt_ours, opt_theirs = _Optimizer(optimizer, ours, lr), _Optimizer(optimizer, theirs, lr)
    for _ in range(4):
        loss = attention_student_step(ours, data, opt_ours, frozen)
        ref_loss, grads = autograd(theirs, data)
        opt_theirs.step(theirs, grads, frozen)
        assert rel(loss, ref_loss) < TOL
    for k in ours:
        assert rel(ours[k], theirs[k]) < TOL, k
        assert torch.equal(ours[k][frozen], params[k][frozen]), k
    if optimizer == "adam":
        for k in ours: assert rel(opt_ours.m[k], opt_theirs.m[k]) < TOL and rel(opt_ours.v[k], opt_theirs.v[k]) < TOL, k


def test_training_run_equals_autograd_run():
    "A whole run through the engine, with its stopping rule and shedding: the same steps and the same students both ways."
    params, data = students(7, B=8, n=6, scale=0.1)
    kw = dict(steps=300, lr=1e-2, rtol=1e-4, check_every=20, progress=False, data=data)
    ref = train_batched(loss_fn, params, **kw)
    fused = train_batched(loss_fn, params, fused=attention_student_step, **kw)
    assert len(set(ref.steps.tolist())) > 1                       # models stopped at different checks: shedding was exercised
    assert torch.equal(fused.steps, ref.steps)
    for k in params: assert rel(fused.params[k], ref.params[k]) < TOL, k
    assert rel(fused.loss, ref.loss) < TOL


def test_bad_inputs():
    params, data = students(0)
    with pytest.raises(InputError, match="one floating dtype"):
        attention_student_grads({k: v.float() for k, v in params.items()}, data)
    with pytest.raises(InputError, match="contiguous"):
        attention_student_grads(params, data | dict(X=data["X"].transpose(-1, -2).contiguous().transpose(-1, -2)))
    with pytest.raises(InputError, match="per-model data"):
        train_batched(lambda p: p["V"].sum((-1, -2)), params, fused=attention_student_step)
