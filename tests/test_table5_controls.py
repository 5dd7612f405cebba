"""Table 5's near-miss controls change one ingredient of their claim's experiment.

`t5.softmax_numerical_beyond`'s control is the claim's softmax draw at small logits: the same inputs, value map, kernel directions and
noise draw, the kernel and the noise scaled by the same factor (`table5.small_logit_args`); `t5.softmax_v_unknown`'s control is the
same teachers' first `n_near` samples. The frontier claims' controls are the cells on the other side of n₁: inside the ladder step below it,
and each task's extra size just beyond the oracle's n₁, n = ⌊(1+δ)·n₁⌋, a prefix of the same stream.
"""
import math

import torch

from entropic_bound import table5


def test_small_logit_teacher_is_the_claims_draw_scaled():
    s = table5.Table5Settings()
    claim = table5._teacher(s, "softmax", 2, 1, s.noise_std, 40)
    control = table5._teacher(s, "softmax", 2, 1, s.noise_std, 40, small_logits=True)
    c = s.small_logit_scale / s.kernel_scale
    assert control.kind == claim.kind == "softmax"
    for field in ("X", "V"): torch.testing.assert_close(getattr(control, field), getattr(claim, field), rtol=0, atol=0)
    torch.testing.assert_close(control.K, c * claim.K, rtol=1e-12, atol=0)                                     # the same directions, smaller logits
    torch.testing.assert_close(control.Y - control.Y_clean, c * (claim.Y - claim.Y_clean), rtol=1e-12, atol=1e-15)   # the same noise draw, scaled alike
    assert math.isclose(control.noise_std, c * claim.noise_std)


def test_small_logits_bring_softmax_near_its_first_order_expansion():
    "At the control's kernel scale the softmax output's departure from its first-order expansion, relative to the first-order term, is far smaller than at the table's."
    s = table5.Table5Settings()
    def second_order_share(small):
        t = table5._teacher(s, "softmax", 3, 0, s.noise_std, 64, small_logits=small)
        X, V, T, d = t.X, t.V, t.X.shape[1], t.X.shape[2]
        L = X @ t.K @ X.transpose(1, 2) / math.sqrt(d)
        A1 = (1 + L - L.mean(-1, keepdim=True)) / T                                                                # softmax to first order in the logits
        first = (A1 - 1 / T) @ X @ V
        return float((t.Y_clean - A1 @ X @ V).norm() / first.norm())
    assert second_order_share(True) < 0.1 * second_order_share(False)


def test_settings_refuse_a_control_outside_the_claims_range():
    import pytest
    from entropic_bound.experiment import SettingsError
    with pytest.raises(SettingsError, match="small_logit_scale"): table5.Table5Settings(small_logit_scale=3.0)
    with pytest.raises(SettingsError, match="n_near"): table5.Table5Settings(n_near=1000)
    with pytest.raises(SettingsError, match="frontier_delta"): table5.Table5Settings(frontier_delta=3.0)     # not a fraction of n₁


def test_band_cells_lie_inside_the_step_on_each_side():
    ft = table5.FrontierTask(T=24, kernel_scale=2.0, r_star=1, ns=(20, 40, 80, 160, 320, 640), ranks={table5.LOG_INVERSION: (1,) * 6},
                             n1=100.0, misfit=0.0, n1_oracle=100.0, misfit_oracle=0.0, control_ranks=None)
    ns = lambda side, band: [ft.ns[i] for _, i in table5._graded([ft], 12, 2.0, side, True, band)]
    assert ns("below", False) == [20, 40] and ns("below", True) == [80]
    assert ns("beyond", True) == [160] and ns("beyond", False) == [320, 640]


def test_just_beyond_cell_is_a_prefix_of_the_same_stream_just_past_the_oracle_frontier():
    "`t5.oracle_frontier_below`'s control cell: n in (n₁, (1+δ)·n₁] inside the ladder's range, the log route's rank on the first n samples of the task's own stream."
    from entropic_bound.tasks import attention_task
    from entropic_bound.predict import estimated_attention, log_attention_fit, fit_rank
    s = table5.Table5Settings()
    ft = table5._frontier_task(s, 32, 3.0, s.frontier_cost[0], 1, 0)
    n, rank = ft.just_beyond
    assert ft.n1_oracle < n <= (1 + s.frontier_delta) * ft.n1_oracle and min(ft.ns) <= n <= max(ft.ns) and n not in ft.ns
    task = attention_task(max(ft.ns), T=32, d=s.d, r_star=1, kind="softmax", noise_std=s.noise_std, kernel_scale=3.0, seed=0)
    X, Y, V = task.X.numpy(), task.Y.numpy(), task.V.numpy()
    assert rank == fit_rank(log_attention_fit(X[:n], estimated_attention(X, Y, V)[:n]))
    short = table5._frontier_task(s, 8, 3.0, s.frontier_cost[0], 1, 0)                        # T < d: no frontier claim, no cell
    assert short.just_beyond == ()
