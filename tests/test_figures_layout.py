"""The figures read cleanly: Figure 1's class names do not overlap, integer axes carry integer ticks, and an audit with no
error curves draws no blank figure. Each check reads the drawn figure (tick values, text extents from its renderer)."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
import numpy as np
import pytest

from entropic_bound.audit import HeadsReport, heads_figures
from entropic_bound.estimate import estimate
from entropic_bound.reproduce import figure1
from entropic_bound.tasks import linear_task

CLASSES = ("B0", "B1", "B1c", "B2", "B3", "B1+pos", "B2+pos", "B0s", "B3+pos")    # the ladder and its position-aware rungs


def _extras():
    r = np.arange(1, 13)
    t1 = dict(sweep=dict(noise_floor=0.48, r=r.tolist(), excess=np.maximum(4.0 - r, 0.1).tolist(), bound=np.maximum(3.5 - r, 0.05).tolist(), r_star=3))
    t2 = dict(relative_excess={k: v for k, v in zip(CLASSES, np.linspace(0.02, 0.98, len(CLASSES)))}, permutation_bound=0.9)
    sweep = dict(r=list(range(0, 7)), excess_over_floor=[30.0, 9.0, 1.2, 1.0, 1.0, 1.0, 1.0], r_star=2)
    return t1, t2, dict(sweep={"linear": sweep, "softmax": sweep})


def _report(n_layers=3, n_heads=5, d_head=8, curves=2):
    rng = np.random.default_rng(0)
    rows = [dict(layer=l, head=h, static_energy=float(rng.uniform(2, d_head)), native_tv=int(rng.integers(0, d_head)),
                 native_out=int(rng.integers(0, d_head)), static_order_tv=int(rng.integers(0, d_head)))
            for l in range(n_layers) for h in range(n_heads)]
    ranks = np.arange(0, d_head + 1)
    err = np.exp(-ranks.astype(float))
    cur = {(l, 0): dict(ranks=ranks, native_tv=err, native_out=err, static_order_tv=err, static_order_out=err) for l in range(curves)}
    meta = dict(d_head=d_head, rotary=False, n_layers=n_layers, n_heads=n_heads, tol=0.05)
    return HeadsReport(rows, [], cur, meta)


def _integer_ticks(axis):
    "The tick values of `axis` that lie inside its view (the ones a reader sees) are whole numbers."
    lo, hi = sorted(axis.get_view_interval())
    ticks = [t for t in axis.get_ticklocs() if lo - 1e-9 <= t <= hi + 1e-9]
    assert ticks, "no ticks"
    bad = [t for t in ticks if abs(t - round(t)) > 1e-9]
    assert not bad, f"fractional ticks on an integer axis: {bad}"


def _overlaps(boxes):
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def test_figure1_class_labels_do_not_overlap():
    fig = figure1(*_extras())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[1]
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    assert [t.get_text() for t in labels] == list(CLASSES)
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not _overlaps(boxes), [(labels[i].get_text(), labels[j].get_text()) for i, j in _overlaps(boxes)]
    assert all(b.y0 >= 0 for b in boxes), "a class name is cut off below the figure"
    for a in (fig.axes[0], fig.axes[2]): _integer_ticks(a.xaxis)               # ranks
    plt.close(fig)


def test_the_labels_collided_before_rotation():
    "The check can fail: the same names set horizontally at Figure 1's width overlap."
    fig = figure1(*_extras())
    ax = fig.axes[1]
    for t in ax.get_xticklabels(): t.set_rotation(0); t.set_ha("center")
    fig.canvas.draw()
    boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in ax.get_xticklabels() if t.get_text()]
    assert _overlaps(boxes)
    plt.close(fig)


def test_audit_figures_have_integer_ticks():
    figs = heads_figures(_report())
    assert set(figs) == {"static_vs_native.png", "layer_head_map.png", "error_curves.png"}
    for f in figs.values(): f.canvas.draw()
    _integer_ticks(figs["static_vs_native.png"].axes[0].yaxis)                 # rank needed
    heat = figs["layer_head_map.png"].axes
    for a in heat[:3]: _integer_ticks(a.xaxis); _integer_ticks(a.yaxis)        # head, layer
    _integer_ticks(heat[3].yaxis)                                              # the colour bar: a rank
    for a in figs["error_curves.png"].axes: _integer_ticks(a.xaxis)            # rank r
    for f in figs.values(): plt.close(f)


def test_no_error_curves_no_blank_figure():
    "`entropic-bound audit --curves 0`: the figures leave out the error curves instead of drawing an empty one."
    figs = heads_figures(_report(curves=0))
    assert set(figs) == {"static_vs_native.png", "layer_head_map.png"}
    for f in figs.values():
        assert all(a.has_data() for a in f.axes if a.get_label() != "<colorbar>"), "an empty panel"
        plt.close(f)


@pytest.mark.parametrize("r_star", [1, 3])                                    # every resample agrees: one integer in view
def test_estimate_plot_has_integer_ticks(r_star):
    task = linear_task(n=120, T=8, d=6, r_star=r_star, seed=0)
    est = estimate(task.X, task.Y, bootstrap=20)
    fig = est.plot()                                                           # a bare matplotlib Figure
    FigureCanvasAgg(fig).draw()
    spectrum, boot = fig.axes
    _integer_ticks(spectrum.xaxis)                                             # index i
    _integer_ticks(boot.xaxis); _integer_ticks(boot.yaxis)                     # r̂ and the count of resamples
