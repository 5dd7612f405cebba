"""Negative controls change one thing: the claim's own experiment with one named ingredient taken away.

Tables 4 and 5 hand `claim_over_seeds` the protocols of each claim and its control (`report.one_change` refuses a pair
that differs in anything but the named field); here the teachers themselves are drawn and compared: a control's teacher
has the claim teacher's inputs, value map, kernel (directions *and* scale) and noise, and differs in its attention alone.
Table 5's controls of `t5.softmax_numerical_beyond` and `t5.softmax_v_unknown` are near misses on the softmax draws themselves
(small logits; fewer samples): tests/test_table5_controls.py checks those draws.
"""
import pytest
import torch

from entropic_bound import table4, table5
from entropic_bound.report import one_change
from entropic_bound.spectral import InputError

TABLES = {"table4": (table4, table4.Table4Settings(), ("linear", "softmax")),
          "table5": (table5, table5.Table5Settings(), ("softmax", "linear"))}


def _teachers(name, r_star=2, seed=1):
    module, s, (claim_kind, control_kind) = TABLES[name]
    if name == "table4": draw = lambda kind: module._teacher(s, kind, s.noise_stds[0], r_star, seed)
    else: draw = lambda kind: module._teacher(s, kind, r_star, seed, s.noise_std, 50)
    return draw(claim_kind), draw(control_kind)


@pytest.mark.parametrize("name", TABLES)
def test_control_teacher_differs_in_the_attention_alone(name):
    claim, control = _teachers(name)
    assert claim.kind != control.kind
    for field in ("X", "K", "V"):
        torch.testing.assert_close(getattr(claim, field), getattr(control, field), rtol=0, atol=0, msg=f"{name}: {field} differs")
    assert claim.noise_std == control.noise_std
    assert not torch.equal(claim.Y_clean, control.Y_clean)            # the attention does change what the teacher outputs


def test_table4_kernel_scale_is_the_linear_teachers_and_table5_the_softmax_teachers():
    from entropic_bound.tasks import attention_task
    for name, kind in (("table4", "linear"), ("table5", "softmax")):
        claim, _ = _teachers(name)
        default = attention_task(claim.X.shape[0], T=claim.X.shape[1], d=claim.X.shape[2], r_star=2, kind=kind, noise_std=claim.noise_std, seed=1)
        torch.testing.assert_close(claim.K, default.K, rtol=0, atol=0)   # the claim's teacher is the library's default one of its kind


@pytest.mark.parametrize("name", TABLES)
def test_empirical_claims_on_the_main_tasks_record_their_one_change(name):
    from entropic_bound.experiment import experiment, run
    exp = experiment(name)
    res = run(exp, exp.settings("smoke"), seeds=(0,), progress=False)
    checked = {c.id: c.changes for c in res.claims if c.changes is not None}
    kind = ("kind",)        # the attention alone; t4.linear_unknown_v's control also reads each softmax teacher at its own misfit frontier n₁
    expected = {"table4": {"t4.linear_known_v": kind, "t4.linear_unknown_v": ("kind", "ns")},
                "table5": {"t5.softmax_numerical_below": kind, "t5.softmax_energy": kind,
                           "t5.softmax_numerical_beyond": ("kernel_scale", "noise_std"),   # the same softmax draws at small logits, σ scaled with the kernel
                           "t5.softmax_v_unknown": ("n",)}}[name]                          # the same teachers' first n_near samples
    assert checked == expected
    assert all(c.record()["control"]["changes"] == list(expected[c.id]) for c in res.claims if c.id in expected)


def test_one_change_refuses_a_second_difference():
    arm = dict(kind="linear", kernel_scale=1.0, n=100)
    assert one_change(arm, dict(arm, kind="softmax"), "kind") == ("kind",)
    with pytest.raises(InputError, match="kernel_scale"): one_change(arm, dict(arm, kind="softmax", kernel_scale=3.0), "kind")


def _same_draw_plus_one_direction(claim, control, operator: str, r_star: int):
    "The control's teacher is the claim's draw (inputs, value map, noise, its r* directions) with one more direction in its operator."
    for field in ("X", "V"):
        torch.testing.assert_close(getattr(claim, field), getattr(control, field), rtol=0, atol=0, msg=f"{field} differs")
    torch.testing.assert_close(control.Y - control.Y_clean, claim.Y - claim.Y_clean, rtol=0, atol=1e-12)      # the same noise
    diff = (getattr(control, operator) - getattr(claim, operator)).double()
    s = torch.linalg.svdvals(diff)
    assert s[0] > 0 and s[1] < 1e-12 * s[0]                                                                  # exactly one direction added
    U, _, Vh = torch.linalg.svd(getattr(claim, operator).double())
    assert (U[:, :r_star].T @ diff).abs().max() < 1e-12 and (diff @ Vh[:r_star].T).abs().max() < 1e-12    # outside the claim teacher's spaces


def test_near_miss_teachers_are_the_claims_draw_plus_one_direction():
    from entropic_bound import table1, table2, table3
    from entropic_bound.ladder import ladder_data
    s1 = table1.Table1Settings()
    _same_draw_plus_one_direction(table1._teacher_task(s1, "paper", 1, "cpu"), table1._teacher_task(s1, "near_miss", 1, "cpu"), "A", s1.r_star)
    s2 = table2.Table2Settings(**table2.TABLE2_PRESETS["smoke"])
    kw = dict(seeds=[1], r_stars=list(s2.r_stars), n=s2.n, n_test=s2.n_test, dtype=torch.float64)
    plain, near = ladder_data(**kw), ladder_data(**kw, extra=[sp[-1] for sp in table2.near_miss_spectra(s2)])
    assert near.r_stars == plain.r_stars
    for i, r in enumerate(plain.r_stars):
        torch.testing.assert_close(near.X[i], plain.X[i], rtol=0, atol=0); torch.testing.assert_close(near.V[i], plain.V[i], rtol=0, atol=0)
        diff = near.A[i] - plain.A[i]
        assert torch.linalg.matrix_rank(diff) == 1 and torch.linalg.matrix_rank(near.A[i]) == r + 1
    s3 = table3.Table3Settings(**table3.TABLE3_PRESETS["smoke"])
    for kind in ("linear", "softmax"):
        near_teacher = table3.near_miss_teacher(s3, kind, 2, 1)
        assert near_teacher.draw_seed == table3.Teacher(kind, 2, 1).draw_seed                                # the same initialisation of the students
        _same_draw_plus_one_direction(table3.Teacher(kind, 2, 1).task(s3), near_teacher.task(s3), "K", 2)


@pytest.mark.parametrize("name, expected", [("table1", {"t1.achievability": ("extra_direction",), "t1.data_only": ("weakest_value",),
                                                        "t1.implicit_bias": ("init_scale",)}),
                                            ("table2", {"t2.B0": ("extra_direction",), "t2.positions.B3": ("positions",)}),     # positions.B1, .B2: consistency (containment)
                                            ("table3", {"t3.linear.achievability": ("extra_direction_cost",), "t3.softmax.achievability": ("extra_direction_cost",),
                                                        "t3.softmax.deficiency": ("rank",), "t3.linear.recovery_underdetermined": ("init",),
                                                        "t3.softmax.recovery_underdetermined": ("init",)})])
def test_tables_1_to_3_record_their_one_change(name, expected):
    from entropic_bound.experiment import experiment, run
    exp = experiment(name)
    res = run(exp, exp.settings("smoke"), seeds=(0,), progress=False)
    assert {c.id: c.changes for c in res.claims if c.changes is not None} == expected


def test_table3_underdetermined_control_trains_the_claims_students_from_another_scale():
    "`t3.<kind>.recovery_underdetermined`: the control's students are the claim's — the same teachers, sample and `ud_draws` initialisation draws (each its own seed, `init_seed`) — from `large_init_scale`; a seed's share is over r* x draws students, so its resolution is 1/(seeds x r* x draws)."
    from entropic_bound import table3
    s = table3.Table3Settings(**table3.TABLE3_PRESETS["smoke"])
    seeds = (0, 1)
    near = {(kind, rs, x): table3.near_miss_teacher(s, kind, rs, x) for kind in s.kinds for rs in s.r_stars for x in seeds}
    (n, inits, students, how), = [b for b in table3._training_batches(s, seeds, near) if b[3] == "gd"]
    assert n == table3.underdetermined_n(s) and s.ud_draws > 1
    small = [st for st, i in zip(students, inits) if i == "small"]
    large = [st for st, i in zip(students, inits) if i == "large"]
    assert small == large and len(small) == len(s.kinds) * len(s.r_stars) * len(seeds) * s.ud_draws      # the same students, both scales, one call
    for teacher in dict.fromkeys(t for t, _, _ in small):
        draws = [j for t, _, j in small if t == teacher]
        assert draws == list(range(s.ud_draws))
        assert len({table3.init_seed(teacher, j) for j in draws}) == s.ud_draws and table3.init_seed(teacher, 0) == teacher.draw_seed
    c = table3._count_claim(s, "linear", [1.0, 1.0], [0.25, 0.5], 0.1, s.init_scale)
    assert c.resolution == c.control.resolution == 1 / (len(seeds) * len(s.r_stars) * s.ud_draws)
