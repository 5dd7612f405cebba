"""Is each criterion reachable by an oracle that knows the answer? A criterion no right answer can meet makes a failing verdict
say nothing about the method graded. Checked here where an oracle is computable in closed form or by a fit of a second.

Not checked: `t4.*` and `t5.*` (fractions of tasks whose data-only rank equals r*). An oracle that knows r* scores 1: `t4.*` and
`t5.oracle_frontier_below`, `t5.frontier_oos_below` (>= criteria) are met by the estimators themselves, and the `<= 0.5` claims of `t5` grade a failure, which a
right answer does not meet by design."""
import functools
import math

import numpy as np
import pytest
import torch

from entropic_bound import table1, table2, table3
from entropic_bound.attention import kernel_ranks, student_outputs
from entropic_bound.ladder import heldout_excess, ladder_data, permutation_bound, rowstochastic_bound
from entropic_bound.linear import excess_risk, reduced_rank_fit, second_moments, task_moments
from entropic_bound.policy import set_engine_threads
from entropic_bound.train import rank_mask, train_batched


def test_t1_achievability_is_reachable_by_the_exact_rank_r_star_fit():
    s = table1.TABLE1.settings("quick")
    tasks = [table1._teacher_task(s, "paper", x, "cpu") for x in (0, 1, 2)]
    A, V = reduced_rank_fit(task_moments(tasks), [s.r_star])                    # the empirical-risk minimiser of rank r*: no training
    A_star, V_star = torch.stack([t.A for t in tasks]).unsqueeze(1), torch.stack([t.V for t in tasks]).unsqueeze(1)
    excess = excess_risk(A, V, A_star, V_star).squeeze(1)
    assert (excess <= s.achievability_criterion).all(), (excess / s.achievability_criterion).tolist()


def test_linear_oracle_kernel_recovers_the_teacher_where_the_data_determine_it():
    s = table3.TABLE3.settings("quick")
    task = table3.Teacher("linear", 2, 0).task(s)
    clean = type(task)(task.X, task.Y_clean, task.Y_clean, task.K, task.V, 0.0, task.r_star, task.kind)
    torch.testing.assert_close(table3.linear_oracle_kernel(clean, 4), task.K.to(torch.float64), rtol=0, atol=1e-9)


def test_t3_underdetermined_recovery_is_out_of_an_interpolants_reach():
    "At n = 1 even the least-squares kernel with V* handed in has exactly r* directions above the cut for fewer teachers than `t3.*.recovery_underdetermined`'s bar asks, and misses r* by more than the tolerance in its energy-rank reading: no student trained to interpolation could meet either, which is why the claim stops gradient descent at the noise floor."
    oracle = table3.underdetermined_oracle(table3.TABLE3.settings("quick"), (0, 1, 2))
    assert oracle["n"] == 1 and oracle["exact"] < table3.RECOVERY_SHARE and oracle["error"] > 2 * oracle["tolerance"], oracle


def test_t3_underdetermined_criterion_is_reachable_by_the_teacher():
    """Where the claim stops gradient descent — its training loss at the noise floor — the teacher is: its loss on its one sample is the
    noise's energy, σ²χ²_{T·d_v}, one floor within a few of its standard deviations sqrt(2 / (T·d_v)), and its flat kernel's energy rank is
    r* exactly, well within the claim's tolerance. So the criterion is reachable by the right answer, stopped by the claim's rule."""
    s = table3.TABLE3.settings("quick")
    n, spread = table3.underdetermined_n(s), math.sqrt(2 / (s.T * s.d))
    for kind in s.kinds:
        for r_star in s.r_stars:
            for x in (0, 1, 2):
                teacher = table3.Teacher(kind, r_star, x)
                task = teacher.task(s)
                loss = float((task.Y[:n] - task.Y_clean[:n]).pow(2).sum((-1, -2)).mean()) / table3._noise_floor(s)
                error = abs(float(kernel_ranks(task.K)["energy"]) - r_star)
                assert abs(loss - 1) <= 4 * spread, (kind, r_star, x, loss)
                assert error <= 1e-9 < table3._tolerance(s, teacher, task, n), (kind, r_star, x, error)
                sv = torch.linalg.svdvals(task.K.cpu().to(torch.float64)).numpy()
                assert table3.learned_directions(sv / sv[0], table3._cut(s, teacher, task, n)) == r_star, (kind, r_star, x)   # the count's right answer


def test_t3_direction_cut_leaves_the_estimation_noise_below_it():
    """`t3.*.recovery_underdetermined` counts a learned kernel's directions above `direction_cut`, the spectral edge of the estimation error its
    tolerance models (i.i.d. entries at twice the parametric variance) over the teacher's scale. The teacher's kernel plus such an error must keep
    exactly r* directions above the cut — the error's own directions below it — in nearly every draw, for every flat teacher of the quick preset;
    a cut below the error's edge would count its directions too."""
    s = table3.TABLE3.settings("quick")
    n = table3.underdetermined_n(s)
    for kind in s.kinds:
        for r_star in s.r_stars:
            for x in (0, 1, 2):
                teacher = table3.Teacher(kind, r_star, x)
                task = teacher.task(s)
                sens, K = table3.kernel_sensitivity(task, task.X[s.n:], seed=teacher.draw_seed), task.K.cpu().to(torch.float64)
                E = torch.randn((256, *K.shape), generator=torch.Generator().manual_seed(x), dtype=torch.float64) * table3.estimation_std(sens, s.noise_std, n)
                sv = torch.linalg.svdvals(K + E).numpy()
                cut = table3.direction_cut(K, sens, s.noise_std, n)
                exact = np.mean([table3.learned_directions(v / v[0], cut) == r_star for v in sv])
                assert exact >= 0.9 and cut < 0.5, (kind, r_star, x, exact, cut)


# Table 2 (§5): B0 = A X V on the ladder's tasks, and the position claims.

@functools.lru_cache(maxsize=None)
def _table2_oracle():
    "Table 2's quick tasks (seeds 0, 1, 2), the exact rank-r* empirical-risk minimiser A X V of each on its training sample, graded as B0 is (held-out excess on clean targets / signal) -> settings, data, relative excess (tasks,), its standard error (tasks,)."
    s = table2.TABLE2.settings("quick")
    data = ladder_data((0, 1, 2), s.r_stars, s.n, s.n_test, s.T, s.d, s.noise_std, getattr(torch, s.dtype))
    A, V = reduced_rank_fit(second_moments(data.X, data.Y), list(s.r_stars))          # every rank of r_stars on every task: (tasks, ranks, ...)
    task, own = torch.arange(len(data.r_stars)), torch.as_tensor([s.r_stars.index(r) for r in data.r_stars])
    A, V, M = A[task, own], V[task, own], len(data.r_stars)                          # each task's own r*: no training
    params = dict(P=A.to(data.X.dtype), Q=torch.eye(s.T, dtype=data.X.dtype).expand(M, s.T, s.T), V=V.to(data.X.dtype))   # B0's A = P Qᵀ
    exc = heldout_excess("B0", params, data.X_test, data.Y_test, torch.full((M,), s.T))
    return s, data, (exc.mean(1) / data.signal).numpy(), (exc.std(1) / math.sqrt(exc.shape[1]) / data.signal).numpy()


def test_t2_b0_achievability_is_reachable_by_the_exact_rank_r_star_fit():
    "The oracle: the rank-r* empirical-risk minimiser of B0's model A X V (`reduced_rank_fit`) on each task's training sample; its relative held-out excess must meet `b0_criterion` on every task."
    s, data, rel, _ = _table2_oracle()
    criterion = table2.b0_criterion(s)
    assert (rel <= criterion).all(), (rel / criterion).tolist()


@pytest.mark.parametrize("cls", ["B1", "B2", "B3"])
def test_t2_positions_criterion_is_reachable_with_positions(cls):
    """The oracle: B0's rank-r* empirical-risk minimiser, a fixed positional mixing A X V (inside B1+pos's class, at K = 0; for B2+pos and B3+pos
    a predictor that uses positions, not a member of their class). Graded as `t2.positions.<cls>` is — relative held-out excess against the mean
    relative permutation bound less three standard errors, on the claim's tasks (B3: those at r* = pos_r_star) — it must get below by a wide
    margin (under 1% of the criterion). B2+pos's own position-only members (K = 0: softmax(L) X V) reach the row-stochastic bound (5.4),
    computed in closed form: it must be below the criterion too."""
    s, data, rel, se = _table2_oracle()
    at = np.asarray(data.r_stars) == s.pos_r_star if cls == "B3" else np.ones(len(rel), dtype=bool)
    bound = (permutation_bound(data.A, data.V) / data.signal).numpy()[at]
    criterion = float(bound.mean() - 3 * table2._se_of_mean(se[at]))
    assert rel[at].mean() <= 0.01 * criterion, rel[at].mean() / criterion
    if cls == "B2":
        stoch = (rowstochastic_bound(data.A, data.V) / data.signal).numpy()
        assert stoch.mean() <= criterion, stoch.mean() / criterion


# Table 3 (§6): heads of kernel rank r graded on their teachers' clean held-out outputs.

def _as_students(tasks, ranks):
    "The teachers' kernels K* truncated to `ranks` (their top singular directions) and their V*, written as the students' parameters (W_Q = U√S, W_K = W√S, columns beyond the rank masked) -> (params, mask), float64."
    U, S, Wh = torch.linalg.svd(torch.stack([t.K for t in tasks]).to(torch.float64))
    mask = rank_mask(ranks, S.shape[-1])[:, None, :]
    return dict(WQ=U * S.sqrt()[:, None, :] * mask, WK=Wh.mT * S.sqrt()[:, None, :] * mask, V=torch.stack([t.V for t in tasks]).to(torch.float64)), mask


def _graded(s, tasks, params, mask):
    "What `fit_students` grades (clean excess on the samples after the first n, float64, in noise floors) of the students `params` and of the empirical-risk minimiser near them (Adam on the students' training loss from `params`) -> (excess at params, excess of the fit), per student."
    softmax = torch.tensor([t.kind == "softmax" for t in tasks])
    X, Y, Y_clean = (torch.stack([getattr(t, k) for t in tasks]).to(torch.float64) for k in ("X", "Y", "Y_clean"))
    grade = lambda p: ((student_outputs(p, mask, softmax, X[:, s.n:]) - Y_clean[:, s.n:]) ** 2).sum((-1, -2)).mean(-1) / table3._noise_floor(s)
    loss = lambda p, d: ((student_outputs(p, d["mask"], d["softmax"], d["X"]) - d["Y"]) ** 2).sum((-1, -2)).mean(-1)     # fit_students' loss
    before = set_engine_threads(1)                                                 # a few small steps: one thread, whatever else runs here
    try: fit = train_batched(loss, params, steps=300, lr=1e-3, rtol=1e-7, data=dict(X=X[:, :s.n], Y=Y[:, :s.n], mask=mask, softmax=softmax), progress=False)
    finally: set_engine_threads(before)
    with torch.no_grad(): return grade(params), grade(fit.params)


@pytest.mark.parametrize("kind", ["linear", "softmax"])
def test_t3_achievability_is_reachable_by_the_teacher_and_by_its_rank_r_star_fit(kind):
    """Two oracles, graded exactly as the students are (rank r*, clean held-out excess / noise floor, per seed the largest over r*):
    the teacher's own K*, V* written as a rank-r* student (excess 0: the grading's conventions are the teacher's), and the rank-r*
    empirical-risk minimiser started there (Adam on the students' training loss). Both must meet `t3.<kind>.achievability`'s criterion."""
    s = table3.TABLE3.settings("quick")
    tasks = [table3.Teacher(kind, r, x).task(s) for x in (0, 1, 2) for r in s.r_stars]
    truth, fit = _graded(s, tasks, *_as_students(tasks, [t.r_star for t in tasks]))
    criterion = table3._criterion(s, kind)
    assert truth.max() <= 1e-9 * criterion, (truth / criterion).tolist()
    per_seed = fit.view(3, -1).max(1).values
    assert (per_seed <= criterion).all(), (per_seed / criterion).tolist()


def test_t3_softmax_deficiency_criterion_is_met_by_a_fit_started_from_the_answer():
    """The oracle: for every head of rank r < r* the claim grades (r* = 3: ranks 0, 1, 2), the teacher's kernel truncated to rank r with V*, and
    the rank-r empirical-risk minimiser started there; per seed the smallest clean held-out excess / floor must stay at or above
    `t3.softmax.deficiency`'s criterion. (A fit near the answer bounds the best rank-r head from above only: this is consistency, not proof.)"""
    s = table3.TABLE3.settings("quick")
    heads = [(r_star, x, r) for x in (0, 1, 2) for r_star in s.r_stars for r in table3._student_ranks(r_star, s.d, r_star in s.full_sweep) if r < r_star]
    tasks = [table3.Teacher("softmax", r_star, x).task(s) for r_star, x, _ in heads]
    truncation, fit = _graded(s, tasks, *_as_students(tasks, [r for *_, r in heads]))
    criterion = table3._criterion(s, "softmax")
    per_seed = torch.minimum(truncation, fit).view(3, -1).min(1).values
    assert (per_seed >= criterion).all(), (per_seed / criterion).tolist()
