"""Table 1's fused step (nbs/21b_fused.ipynb, `surrogate_student_step`) against the autograd reference, on random inputs in float64:
for every class of token-mixing student it fuses — A = P diag(m) Qᵀ with a rank mask and A unfactorised, trained on second
moments or on the samples themselves — the loss and gradients equal autograd's to 1e-6 relative; a few optimiser steps (Adam and
plain gradient descent, frozen models included) move the weights as the engine's optimiser does; and the library's training
functions (`train_rank_sweep`, `train_overparameterised`), run through the engine with its stopping rule and shedding, give the
same models on the fused path as on the reference path."""
import pytest
import torch

import entropic_bound.fused as fused_module
from entropic_bound.fused import FusedMoments, surrogate_student_grads, surrogate_student_step
from entropic_bound.linear import (SecondMoments, empirical_risk, second_moments, task_moments, train_overparameterised,
                                   train_rank_sweep)
from entropic_bound.spectral import InputError
from entropic_bound.tasks import linear_task

from test_fused import assert_steps_match

TOL = 1e-6


def rel(a, b) -> float:
    "Relative error of `a` against `b` in the Frobenius norm."
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def students(seed, factorised=True, B=5, n=3, T=16, d=12, S=2, r=None, scale=0.3):
    "Random students (factorised ones with random rank masks, rank 0 included), one sample set each, and the moments of S data sets."
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)
    r = T if r is None else r
    params = dict(P=rnd(B, T, r) * scale, Q=rnd(B, T, r) * scale, V=rnd(B, d, d) * scale) if factorised else dict(A=rnd(B, T, T) * scale, V=rnd(B, d, d) * scale)
    mask = (torch.arange(r) < torch.randint(0, r + 1, (B, 1), generator=g)).to(torch.float64)[:, None, :]
    m = second_moments(rnd(S, 3 * n + 5, T, d), rnd(S, 3 * n + 5, T, d))
    group = torch.randint(0, S, (B,), generator=g).sort().values             # runs of students sharing a data set, as the rank sweep's
    return params, dict(X=rnd(B, n, T, d), Y=rnd(B, n, T, d), mask=mask), m, group


def operator(p, mask):
    return (p["P"] * mask) @ p["Q"].mT if "P" in p else p["A"]


def reference(p, data, m=None, group=None):
    "Autograd's loss and gradients: `empirical_risk` on the moments of each student's group, or the mean squared error on its own samples."
    leaf = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    A = operator(leaf, data["mask"])
    if m is None:
        loss = (A.unsqueeze(1) @ data["X"] @ leaf["V"].unsqueeze(1) - data["Y"]).pow(2).sum((-1, -2)).mean(-1)
    else:
        mb = SecondMoments(m.R[group], m.H[group], m.yy[group], m.n, m.T, m.d)          # (B, ...): each student's own group
        loss = empirical_risk(A.unsqueeze(1), leaf["V"].unsqueeze(1), mb).squeeze(1)
    return loss.detach(), dict(zip(leaf, torch.autograd.grad(loss.sum(), list(leaf.values()))))


def fused_call(on, data, m, group):
    "The fused step's data and keyword for students `on` 'moments' or 'samples'."
    return (dict(group=group, mask=data["mask"]), dict(moments=FusedMoments.of(m))) if on == "moments" else (data, {})


SHAPES = [dict(), dict(T=7, d=5, r=3), dict(n=1), dict(B=3, T=4, d=6, n=2, scale=2.0), dict(T=16, d=12, r=8, S=3, B=7)]


@pytest.mark.parametrize("on", ["moments", "samples"])
@pytest.mark.parametrize("factorised", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(4))
def test_surrogate_gradients_equal_autograd(seed, shape, factorised, on):
    params, data, m, group = students(seed, factorised, **shape)
    ref_loss, ref_grads = reference(params, data, *((m, group) if on == "moments" else ()))
    fdata, kw = fused_call(on, data, m, group)
    loss, grads = surrogate_student_grads(params, fdata, **kw)
    assert rel(loss, ref_loss) < TOL
    for k in ref_grads:
        for b in range(len(loss)):                               # every student on its own: a rank-0 student has no factor gradient
            if ref_grads[k][b].norm() > 0: assert rel(grads[k][b], ref_grads[k][b]) < TOL, (k, b)
            else: assert grads[k][b].norm() == 0, (k, b)


@pytest.mark.parametrize("threads_from", [0, 10 ** 9])       # the students spread over threads, and one after another
@pytest.mark.parametrize("optimizer", ["adam", "gd"])
@pytest.mark.parametrize("on", ["moments", "samples"])
@pytest.mark.parametrize("factorised", [True, False])
def test_surrogate_step_equals_engine_optimizer(factorised, on, optimizer, threads_from, monkeypatch):
    monkeypatch.setattr(fused_module, "THREADS_FROM", threads_from)
    params, data, m, group = students(3, factorised)
    frozen = torch.arange(params["V"].shape[0]) % 3 == 1
    fdata, kw = fused_call(on, data, m, group)
    assert_steps_match(surrogate_student_step, lambda p: reference(p, data, *((m, group) if on == "moments" else ())), params, fdata, optimizer, 1e-3, frozen, **kw)


def tasks(n, seeds=(0, 1, 2)):
    return [linear_task(n, 16, 12, 3, seed=x) for x in seeds]


def test_rank_sweep_equals_reference_path():
    "Table 1's rank sweep (and the near miss's rank-r* model): the same steps and the same models both ways, models stopping at different checks."
    m = task_moments(tasks(64))
    kw = dict(ranks=[1, 2, 3, 5], seeds=[0, 1, 2], steps=400, rtol=1e-5, progress=False)
    A_f, V_f, res_f = train_rank_sweep(m, **kw)
    A_r, V_r, res_r = train_rank_sweep(m, fused=False, **kw)
    assert len(set(res_r.steps.tolist())) > 1                     # models stopped at different checks: shedding was exercised
    assert torch.equal(res_f.steps, res_r.steps)
    assert rel(A_f, A_r) < TOL and rel(V_f, V_r) < TOL
    assert rel(res_f.loss, res_r.loss) < TOL


@pytest.mark.parametrize("factorised", [True, False])
def test_overparameterised_on_moments_equals_reference_path(factorised):
    "Theorem 4's students on the moments (Table 1's recovery), a few hundred steps of small-init GD both ways."
    m = task_moments(tasks(64))
    kw = dict(seeds=[0, 1, 2], init_scale=1e-2, lr=0.02, steps=300, progress=False, factorised=factorised)
    A_f, V_f, res_f = train_overparameterised(m, **kw)
    A_r, V_r, res_r = train_overparameterised(m, fused=False, **kw)
    assert rel(A_f, A_r) < TOL and rel(V_f, V_r) < TOL and rel(res_f.loss, res_r.loss) < TOL


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
@pytest.mark.parametrize("factorised", [True, False])
def test_overparameterised_on_samples_equals_reference_path(factorised, optimizer):
    "The implicit-bias regime's students on one sample each, trained to the stopping rule both ways: the same stopping steps, the same models."
    few = tasks(1, (0, 1))
    samples = (torch.stack([t.X for t in few]), torch.stack([t.Y for t in few]))
    kw = dict(seeds=[0, 1], init_scale=[1e-2, 0.1], lr=0.01 if optimizer == "gd" else 1e-3, steps=3000, progress=False,
              stop_below=1e-2, optimizer=optimizer, factorised=factorised)
    A_f, V_f, res_f = train_overparameterised(samples, **kw)
    A_r, V_r, res_r = train_overparameterised(samples, fused=False, **kw)
    assert torch.equal(res_f.steps, res_r.steps)
    assert rel(A_f, A_r) < TOL and rel(V_f, V_r) < TOL and rel(res_f.loss, res_r.loss) < TOL



@pytest.mark.parametrize("on", ["moments", "samples"])
def test_a_student_does_not_depend_on_its_company(on):
    "Each student's loss and gradients are the same to the bit alone, in its batch, or with its run's neighbours shed."
    params, data, m, group = students(5, B=9, S=2, r=8)
    fdata, kw = fused_call(on, data, m, group)
    loss, grads = surrogate_student_grads(params, fdata, **kw)
    for rows in ([4], [0, 2, 7], list(range(1, 9))):
        sub = lambda t: t[rows].contiguous()
        l_, g_ = surrogate_student_grads({k: sub(v) for k, v in params.items()}, {k: sub(v) for k, v in fdata.items()}, **kw)
        assert torch.equal(l_, loss[rows])
        for k in grads: assert torch.equal(g_[k], grads[k][rows]), k


def test_bad_inputs():
    params, data, m, group = students(0)
    with pytest.raises(InputError, match="one floating dtype"):
        surrogate_student_grads({k: v.float() for k, v in params.items()}, data)
    with pytest.raises(InputError, match="one floating dtype"):
        surrogate_student_grads({k: v.float() for k, v in params.items()}, dict(group=group, mask=data["mask"].float()), FusedMoments.of(m))
    with pytest.raises(InputError, match="contiguous"):
        surrogate_student_grads(params | dict(V=params["V"].mT.contiguous().mT), data)
    with pytest.raises(InputError, match="a group in"):
        surrogate_student_grads(params, dict(group=group + 2, mask=data["mask"]), FusedMoments.of(m))
    with pytest.raises(InputError, match="one group dim"):
        FusedMoments.of(second_moments(data["X"][0], data["Y"][0]))
