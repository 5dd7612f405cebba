"""Negative controls change one thing: the claim's own experiment with one named ingredient taken away.

Tables 4 and 5 hand `claim_over_seeds` the protocols of each claim and its control (`report.one_change` refuses a pair
that differs in anything but the named field); here the teachers themselves are drawn and compared: a control's teacher
has the claim teacher's inputs, value map, kernel (directions *and* scale) and noise, and differs in its attention alone.
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
    expected = {"table4": {"t4.linear_known_v", "t4.linear_unknown_v"},
                "table5": {"t5.softmax_numerical", "t5.softmax_v_unknown", "t5.softmax_wrong_model", "t5.softmax_energy"}}[name]
    assert set(checked) == expected and set(checked.values()) == {("kind",)}
    assert all(c.record()["control"]["changes"] == ["kind"] for c in res.claims if c.id in expected)


def test_one_change_refuses_a_second_difference():
    arm = dict(kind="linear", kernel_scale=1.0, n=100)
    assert one_change(arm, dict(arm, kind="softmax"), "kind") == ("kind",)
    with pytest.raises(InputError, match="kernel_scale"): one_change(arm, dict(arm, kind="softmax", kernel_scale=3.0), "kind")
