"""Is each criterion reachable by an oracle that knows the answer? A criterion no right answer can meet makes a failing verdict
say nothing about the method graded. Checked here where an oracle is computable in closed form."""
import numpy as np
import torch

from entropic_bound import table1, table3
from entropic_bound.attention import kernel_ranks
from entropic_bound.linear import excess_risk, reduced_rank_fit, task_moments


def test_t1_achievability_is_reachable_by_the_exact_rank_r_star_fit():
    s = table1.TABLE1.settings("quick")
    tasks = [table1._teacher_task(s, "paper", x, "cpu") for x in (0, 1, 2)]
    A, V = reduced_rank_fit(task_moments(tasks), [s.r_star])                    # the empirical-risk minimiser of rank r*: no training
    A_star, V_star = torch.stack([t.A for t in tasks]).unsqueeze(1), torch.stack([t.V for t in tasks]).unsqueeze(1)
    excess = excess_risk(A, V, A_star, V_star).squeeze(1)
    assert (excess <= s.achievability_criterion).all(), (excess / s.achievability_criterion).tolist()


def test_t3_underdetermined_recovery_is_out_of_an_oracles_reach():
    "At n = 1 even the least-squares kernel with V* handed in (linear attention: Y = X K (XᵀXV*/T), so K̂ = X⁺ Y (XᵀXV*/T)⁺) misses r* by more than the tolerance: `t3.linear.recovery_underdetermined`'s FAILS is not evidence against implicit bias."
    s = table3.TABLE3.settings("quick")
    n_u, errors, tolerances = table3.underdetermined_n(s), [], []
    for r_star in s.r_stars:
        for seed in (0, 1, 2):
            teacher = table3.Teacher("linear", r_star, seed)
            task = teacher.task(s)
            X, Y, V = (t.to(torch.float64) for t in (task.X[0], task.Y[0], task.V))
            M = X.T @ X @ V / X.shape[0]
            K_hat = torch.linalg.pinv(X) @ Y @ torch.linalg.pinv(M)
            errors.append(abs(float(kernel_ranks(K_hat)["energy"]) - r_star))
            tolerances.append(table3._tolerance(s, teacher, task, n_u))
    assert n_u == 1
    assert np.mean(errors) > 2 * np.mean(tolerances), (np.mean(errors), np.mean(tolerances))
