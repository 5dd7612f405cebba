"""Table 5's near-miss controls change one ingredient of their claim's experiment.

`t5.softmax_numerical_beyond`'s control is the claim's softmax draw at small logits: the same inputs, value map, kernel directions and
noise draw, the kernel and the noise scaled by the same factor (`table5.small_logit_args`); `t5.softmax_v_unknown`'s control is the
same teachers' first `n_near` samples (the table's teachers and `near_draws` - 1 further draws of each). The frontier claims' controls are the cells on the other side of n₁: inside the ladder step below it,
and on the map each task's extra size just beyond the oracle's n₁, n = ⌊(1+δ)·n₁⌋, a prefix of the same stream; out of sample (`oos_draws`
teachers per cell) the cells inside the step just beyond the pilot's n̂₁.
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


def test_out_of_sample_draws_are_further_teachers_of_the_same_cell():
    "`oos_draws`: draw 0 is each cell's first teacher (seed 7000 + seed) with its linear-QK twin; a further draw is another teacher of the same cell, no twin."
    s = table5.Table5Settings()
    assert table5.oos_seed(2) == 7002 and len({table5.oos_seed(x, j) for x in range(9) for j in range(s.oos_draws)}) == 9 * s.oos_draws
    first, second = (table5._oos_task(s, 24, 2.0, 2, 0, j) for j in (0, 1))
    assert (first.draw, second.draw) == (0, 1) and first.control_ranks is not None and second.control_ranks is None
    assert first.ns == second.ns == tuple(s.oos_n) and first.n1 != second.n1                        # the same ladder, another teacher
    units = {0: table5.Table5Seed({}, (), (first, second))}
    up = table5._graded([first, second], s.d, 2.0, "beyond", False)
    beyond, twin, _ = table5._side_fractions(s, units, "frontier_oos", 2.0, False)
    twins = [(ft, i) for ft, i in up if ft.control_ranks is not None]                              # the twin is counted where it was measured
    assert twin == ([float(sum(ft.control_ranks[i] == ft.r_star for ft, i in twins) / len(twins))] if twins else [])


def _flip_task(n1: float, draw: int = 0):
    "An out-of-sample task whose rank is r* = 2 below n1 and 3 beyond it."
    ns = (20, 40, 80, 160, 320, 640)
    return table5.FrontierTask(T=24, kernel_scale=2.0, r_star=2, ns=ns, ranks={table5.LOG_INVERSION: tuple(2 if n <= n1 else 3 for n in ns)},
                               n1=n1, misfit=0.0, n1_oracle=math.inf, misfit_oracle=0.0, control_ranks=None, pilot_n=80, draw=draw)


def test_out_of_sample_pair_is_graded_against_the_band_inside_the_step():
    "The out-of-sample claims' controls are the cells inside the step on the other side of the pilot's n̂₁: just below it for the claim beyond, just beyond it for the claim below."
    s = table5.Table5Settings()
    units = {x: table5.Table5Seed({}, (), tuple(_flip_task(n1, j) for j, n1 in enumerate((100.0, 150.0, 200.0 + 10 * x, 300.0)))) for x in range(3)}
    g = table5.ladder_step(s.oos_n)
    beyond, below = table5._frontier_pair(s, units, "frontier_oos", g, False, ("a", "b"), "where", "outcome ladder", "differs", band=True)
    just_beyond, just_below = table5._band_fractions(s, units, "frontier_oos", g, False)
    assert math.isclose(beyond.control.measured, sum(just_below) / len(just_below)) and "n1/g < n <= n1" in beyond.control.statement
    assert math.isclose(below.control.measured, sum(just_beyond) / len(just_beyond)) and "n1 < n < g·n1" in below.control.statement
    assert below.control.measured == 0.0 and beyond.control.measured == 1.0                     # these tasks flip exactly at n̂₁


def test_v_unknown_claim_pools_the_tables_teachers_with_their_further_draws():
    "`t5.softmax_v_unknown` and its control: per seed, the table's own softmax teachers and `near_draws` - 1 further draws of each (r*, seed), at n_scale and at n_near."
    from types import SimpleNamespace as NS
    from entropic_bound.predict import fit_qk_kernel, fit_rank
    s = table5.Table5Settings(near_draws=2, r_stars=(1, 2))
    draws = table5.measure_v_unknown(s, 0)
    assert [(d.r_star, d.draw) for d in draws] == [(1, 1), (2, 1)] and table5.near_seed(0, 0) == 0 and table5.near_seed(3, 1) == 50_003
    t = table5._teacher(s, "softmax", 2, table5.near_seed(0, 1), s.noise_std, max(s.n, s.n_scale))
    X, Y = t.X.numpy(), t.Y.numpy()
    assert (draws[1].at_scale, draws[1].near) == tuple(fit_rank(fit_qk_kernel(X[:n], Y[:n])) for n in (s.n_scale, s.n_near))
    own = lambda r, at, near: NS(r_star=r, softmax={table5.BLIND_AT_SCALE: NS(rank=at)}, near={table5.BLIND: NS(rank=near)})
    units = {0: NS(tasks={1: own(1, 1, 1), 2: own(2, 3, 2)}, v_unknown=(table5.VUnknownDraw(1, 1, 2, 1), table5.VUnknownDraw(2, 1, 2, 3)))}
    assert table5._v_unknown_fractions(s, units) == ([0.5], [0.75])                             # 2 of 4 at n_scale, 3 of 4 at n_near
    import pytest
    from entropic_bound.experiment import SettingsError
    for field in ("near_draws", "oos_draws"):
        with pytest.raises(SettingsError, match=field): table5.Table5Settings(**{field: 0})
