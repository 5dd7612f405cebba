"""The fused steps (nbs/21b_fused.ipynb) against the autograd reference, on random inputs in float64: every fused class's loss and
gradients equal autograd's to 1e-6 relative, a few optimiser steps (Adam and plain gradient descent, frozen models included) move
the weights as the engine's optimiser does, and whole training runs through `train_batched` — stopping and shedding included —
give the same models both ways. Table 3's attention students here, and the classes of Table 2's ladder that train on a fused step
(B0 on Table 1's token-mixing step, B1, B1c and B2 on the attention step); Table 1's students in tests/test_fused_linear.py, which
shares `assert_steps_match`."""
import pytest
import torch

from entropic_bound.attention import student_outputs
import entropic_bound.fused as fused_module
from entropic_bound.fused import attention_student_grads, attention_student_step, surrogate_student_grads, surrogate_student_step
from entropic_bound.ladder import _fused_data, fit_ladder_class, ladder_data, ladder_forward, ladder_fused_step, ladder_params
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


def autograd(p, d, loss=loss_fn):
    "The reference's loss and gradients: autograd on `loss(p, d)`."
    leaf = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    out = loss(leaf, d)
    return out.detach(), dict(zip(leaf, torch.autograd.grad(out.sum(), list(leaf.values()))))


def assert_steps_match(step, reference, params, data, optimizer, lr, frozen, steps=4, **kw):
    "`steps` steps of a fused `step(params, data, opt, frozen, **kw)` and of the engine's optimiser on `reference(params)` -> (loss, gradients), from the same `params`: the same losses, weights and Adam moments to `TOL`; frozen models keep their weights."
    ours, theirs = ({k: v.clone() for k, v in params.items()} for _ in range(2))
    opt_ours, opt_theirs = _Optimizer(optimizer, ours, lr), _Optimizer(optimizer, theirs, lr)
    for _ in range(steps):
        loss = step(ours, data, opt_ours, frozen, **kw)
        ref_loss, grads = reference(theirs)
        opt_theirs.step(theirs, grads, frozen)
        assert rel(loss, ref_loss) < TOL
    for k in ours:
        assert rel(ours[k], theirs[k]) < TOL, k
        assert torch.equal(ours[k][frozen], params[k][frozen]), k
    if optimizer == "adam":
        for k in ours: assert rel(opt_ours.m[k], opt_theirs.m[k]) < TOL and rel(opt_ours.v[k], opt_theirs.v[k]) < TOL, k


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
    lr = 1e-2 if optimizer == "adam" else 1e-4                  # plain gradient descent at Adam's step diverges on these weights
    assert_steps_match(attention_student_step, lambda p: autograd(p, data), params, data, optimizer, lr, frozen)


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


# ---- Table 2's ladder: the classes that train on a fused step ----

FUSED_CLASSES = ("B0", "B1", "B1c", "B2")
GRADS = {surrogate_student_step: surrogate_student_grads, attention_student_step: attention_student_grads}


def ladder_models(cls, seed, B=6, n=4, T=16, d=12, scale=0.5):
    "Random models of class `cls` (ranks 0 to full width), their data as `fit_ladder_class` hands it to the fused step, and the ladder's own loss."
    g = torch.Generator().manual_seed(seed)
    R = T if cls == "B0" else d
    rk = torch.randint(0, R + 1, (B,), generator=g)
    params = ladder_params(cls, [100 * seed + b for b in range(B)], R, T, d, init_scale=scale, dtype=torch.float64)
    data = dict(X=torch.randn(B, n, T, d, generator=g, dtype=torch.float64), Y=torch.randn(B, n, T, d, generator=g, dtype=torch.float64), rk=rk)
    loss = lambda p, dd: (ladder_forward(cls, p, dd["X"], dd["rk"]) - dd["Y"]).pow(2).sum((-1, -2)).mean(-1)   # as `fit_ladder_class` trains
    return params, data | _fused_data(cls, rk, R, torch.float64), loss


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [dict(), dict(n=1), dict(T=7, d=5, B=3, scale=2.0)])
@pytest.mark.parametrize("cls", FUSED_CLASSES)
def test_ladder_gradients_equal_autograd(cls, shape, seed):
    params, data, loss = ladder_models(cls, seed, **shape)
    ref_loss, ref_grads = autograd(params, data, loss)
    step = ladder_fused_step(cls, 1)
    fused_loss, grads = GRADS[step](params, data)
    assert set(grads) == set(ref_grads)
    assert rel(fused_loss, ref_loss) < TOL
    for k in ref_grads:
        for b in range(len(fused_loss)):                          # every model on its own: a rank-0 model has no kernel gradient
            if ref_grads[k][b].norm() > 0: assert rel(grads[k][b], ref_grads[k][b]) < TOL, (k, b)
            else: assert grads[k][b].norm() == 0, (k, b)


@pytest.mark.parametrize("optimizer", ["adam", "gd"])
@pytest.mark.parametrize("cls", FUSED_CLASSES)
def test_ladder_step_equals_engine_optimizer(cls, optimizer):
    params, data, loss = ladder_models(cls, 1, scale=0.3)
    frozen = torch.arange(6) % 3 == 1
    assert_steps_match(ladder_fused_step(cls, 1), lambda p: autograd(p, data, loss), params, data, optimizer, 1e-2 if optimizer == "adam" else 1e-4, frozen)


@pytest.mark.parametrize("cls", FUSED_CLASSES)
def test_ladder_training_equals_reference_path(cls):
    "`fit_ladder_class` both ways at one sample per model (where each of these classes takes its fused step), both runs of a class in one batch, models stopping at different checks: the same steps, the same models."
    data = ladder_data([0, 1], [1, 3], n=1, n_test=4, dtype=torch.float64)
    full = 16 if cls == "B0" else 12
    kw = dict(ranks=[data.r_stars, [full] * 4], init_scales=[0.1, 1e-3], steps=300, rtol=3e-2)
    fused, rk = fit_ladder_class(cls, data, fused=True, **kw)
    ref, _ = fit_ladder_class(cls, data, fused=False, **kw)
    assert len(set(ref.steps.tolist())) > 1                       # shedding was exercised
    assert torch.equal(fused.steps, ref.steps)
    for k in ref.params: assert rel(fused.params[k], ref.params[k]) < TOL, k
    assert rel(fused.loss, ref.loss) < TOL


def test_ladder_routing():
    "B0 always takes its fused step on the CPU; B1, B1c and B2 at most FUSED_UP_TO samples each; B3 and every +pos variant never."
    assert ladder_fused_step("B0", 256) is surrogate_student_step
    for cls in ("B1", "B1c", "B2"):
        assert ladder_fused_step(cls, fused_module.FUSED_UP_TO) is attention_student_step
        assert ladder_fused_step(cls, fused_module.FUSED_UP_TO + 1) is None
    assert ladder_fused_step("B3", 1) is None
    for cls in ("B1", "B2", "B3"): assert ladder_fused_step(cls, 1, positional=True) is None
