"""No legend covers data, and no value label covers another: Figure 1's ladder panel and the estimate's spectrum. The check reads
the drawn figure — the legend's box from the renderer, every plotted point, line segment, bar and value label in display
coordinates — and is shown to fail on a legend placed over the data."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
import numpy as np
import pytest

from entropic_bound.estimate import estimate
from entropic_bound.reproduce import figure1
from entropic_bound.tasks import linear_task

CLASSES = ("B0", "B1", "B1c", "B2", "B3", "B1+pos", "B2+pos", "B0s", "B3+pos")    # the ladder and its position-aware rungs


def _draw(fig):
    "Draw `fig` (a pyplot figure or a bare Figure) and return its renderer."
    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"): FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _data_boxes(ax, renderer, samples: int = 20) -> list:
    """What `ax` plots, as (what, box) in display coordinates: each point of a data line (markers padded by their size; the segments
    between points sampled `samples` times), each bar, each value label; reference lines drawn across the axes (axhline, axvline) are
    not data. Only what lies inside the axes counts (the rest is clipped)."""
    from matplotlib.transforms import Bbox
    inside = ax.get_window_extent(renderer)
    out = []
    for line in ax.lines:
        if line.get_transform() != ax.transData or not line.get_visible(): continue   # axhline/axvline: blended transforms
        xy = ax.transData.transform(np.column_stack(line.get_data()).astype(float))
        xy = xy[np.isfinite(xy).all(1)]
        pad = line.get_markersize() / 2 * renderer.points_to_pixels(1) if line.get_marker() not in (None, "None", "", " ") else 1.0
        if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
            t = np.linspace(0, 1, samples)[:, None, None]
            xy = np.concatenate([xy, (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)])
        out += [(f"{line.get_label()} at ({p[0]:.0f}, {p[1]:.0f}) px", Bbox([p - pad, p + pad])) for p in xy]
    out += [(f"bar {i}", p.get_window_extent(renderer)) for i, p in enumerate(ax.patches)]
    out += [(f"label {t.get_text()!r}", t.get_window_extent(renderer)) for t in ax.texts if t.get_text()]
    return [(w, b) for w, b in out if b.overlaps(inside)]


def legend_over_data(ax, renderer) -> list:
    "What the legend of `ax` (if it has one, wherever it is drawn) covers of the data of `ax`: [what, ...]; [] where it covers nothing."
    legend = ax.get_legend()
    if legend is None: return []
    box = legend.get_window_extent(renderer)
    return [w for w, b in _data_boxes(ax, renderer) if box.overlaps(b)]


def labels_overlapping(ax, renderer) -> list:
    "Pairs of value labels (texts placed on the axes) of `ax` whose boxes overlap."
    texts = [t for t in ax.texts if t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in texts]
    return [(texts[i].get_text(), texts[j].get_text()) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def _extras(excess):
    r = np.arange(1, 13)
    t1 = dict(sweep=dict(noise_floor=0.48, r=r.tolist(), excess=np.maximum(4.0 - r, 0.1).tolist(), bound=np.maximum(3.5 - r, 0.05).tolist(), r_star=3))
    t2 = dict(relative_excess=dict(zip(CLASSES, excess)), permutation_bound=0.9)
    sweep = dict(r=list(range(0, 7)), excess_over_floor=[30.0, 9.0, 1.2, 1.0, 1.0, 1.0, 1.0], r_star=2)
    return t1, t2, dict(sweep={"linear": sweep, "softmax": sweep})


LADDERS = {"mixed": (0.0001, 1.0066, 1.009, 1.0021, 1.0172, 0.0001, 0.5925, 0.0117, 0.8405),   # the pattern of a run: some rungs near 0, some near 1
           "all near 1": (0.97, 0.99, 0.98, 0.96, 1.0, 0.99, 0.97, 1.0, 0.98),
           "all near 0": (0.0012, 0.0031, 0.0009, 0.0044, 0.0021, 0.0017, 0.0026, 0.0008, 0.0035)}


@pytest.mark.parametrize("ladder", list(LADDERS))
def test_figure1_ladder_legend_and_labels_clear(ladder):
    fig = figure1(*_extras(LADDERS[ladder]))
    renderer = _draw(fig)
    for ax in fig.axes:
        assert not legend_over_data(ax, renderer), (ax.get_title(), legend_over_data(ax, renderer))
    ladder_ax = fig.axes[1]
    assert len([t for t in ladder_ax.texts if t.get_text()]) == len(CLASSES)
    assert not labels_overlapping(ladder_ax, renderer), labels_overlapping(ladder_ax, renderer)
    plt.close(fig)


@pytest.mark.parametrize("n,T,d,r_star,seed", [(1000, 16, 12, 3, 0), (120, 8, 6, 1, 0), (120, 8, 6, 3, 1), (120, 8, 6, 5, 2)])   # the first: page 10's
def test_estimate_legend_covers_no_point(n, T, d, r_star, seed):
    task = linear_task(n, T=T, d=d, r_star=r_star, noise_std=0.05, seed=seed)
    fig = estimate(Y=task.Y.numpy(), kind="token-mixing", bootstrap=20).plot()   # a bare matplotlib Figure
    renderer = _draw(fig)
    for ax in fig.axes: assert not legend_over_data(ax, renderer), legend_over_data(ax, renderer)


def test_the_check_sees_a_legend_over_data():
    "The check can fail: Figure 1's ladder legend where it was (over the bars), labels set on one spot, the estimate's legend where it was (over the spectrum)."
    fig = figure1(*_extras(LADDERS["mixed"]))
    ax = fig.axes[1]
    ax.legend(handles=[Line2D([], [], color="k", ls="--", label="permutation bound")], fontsize=7, loc="center right")
    renderer = _draw(fig)
    assert any(w.startswith("bar ") for w in legend_over_data(ax, renderer))
    for t in ax.texts: t.set_position((0.0, 0.5))
    assert labels_overlapping(ax, _draw(fig))
    plt.close(fig)
    task = linear_task(1000, T=16, d=12, r_star=3, noise_std=0.05, seed=0)      # page 10's data, the legend where matplotlib puts it ('best')
    fig = estimate(Y=task.Y.numpy(), kind="token-mixing", bootstrap=20).plot()
    a = fig.axes[0]
    a.legend(fontsize=7)
    assert any(w.startswith("spectrum at") for w in legend_over_data(a, _draw(fig)))


def same_style_series(ax) -> list:
    "Pairs of series of `ax` (its legend's entries, error bars or lines) drawn in the same colour or with the same marker."
    from matplotlib.colors import to_rgb
    handles, labels = ax.get_legend_handles_labels()
    line = lambda h: h.lines[0] if hasattr(h, "lines") else h
    st = [(l, to_rgb(line(h).get_color()), line(h).get_marker()) for h, l in zip(handles, labels)]
    return [(a[0], b[0]) for i, a in enumerate(st) for b in st[i + 1:] if a[1] == b[1] or a[2] == b[2]]


def series_on_one_spot(ax, renderer) -> list:
    "Pairs of points of different series of `ax` whose markers overlap in display coordinates (a budget drawn with every series on it)."
    from matplotlib.transforms import Bbox
    handles, labels = ax.get_legend_handles_labels()
    pts = []
    for h, l in zip(handles, labels):
        ln = h.lines[0] if hasattr(h, "lines") else h
        pad = ln.get_markersize() / 2 * renderer.points_to_pixels(1)
        pts += [(l, Bbox([p - pad, p + pad])) for p in ax.transData.transform(np.column_stack(ln.get_data()).astype(float))]
    return [(a[0], b[0]) for i, a in enumerate(pts) for b in pts[i + 1:] if a[0] != b[0] and a[1].overlaps(b[1])]


def _table6_units(budgets, kind):
    "Made-up Table 6 splits (no model): every rule's loss falls with the budget; native and static also in the kernel's SVD order (an encoder)."
    from types import SimpleNamespace
    from entropic_bound.compress import METRICS, SplitResult
    rng, rules = np.random.default_rng(0), dict(native=2.0, static=3.0, uniform=4.0, native_loss=1.0, shuffled=5.0)
    read = lambda l: dict(zip(METRICS[kind], (1 - l, 1 - 2 * l, 1 - 3 * l) if kind == "encoder" else (l, 1 + l, 1 - l)))
    units = {}
    for x in range(3):
        fid = {(a, o, b): read(0.01 * w * (1 - b) * (1 + 0.1 * rng.random()) * (1.5 if o == "svd" else 1.0)) for b in budgets for a, w in rules.items()
               for o in ("whitened", "svd") if o == "whitened" or (a in ("native", "static") and kind == "encoder")}
        units[x] = SplitResult(SimpleNamespace(d_head=4, group_size=1), {(a, b): np.full((2, 3), 2) for a in rules for b in budgets}, fid, kind,
                               METRICS[kind][0], dict(fid), dict(held=10, other=10))
    return units


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
@pytest.mark.parametrize("budgets", [(0.25, 0.5, 0.75), (0.5,)])
def test_table6_series_each_their_own_style_and_spot(budgets, kind):
    "Table 6's fidelity figure: every series its own colour and marker (a rule and the same rule in SVD order too), none on another's spot, one budget readable."
    from entropic_bound.table6 import Table6Settings, _fidelity_figure, _rows
    s = Table6Settings(budgets=budgets, allocations=("native", "static", "uniform", "native_loss", "shuffled"))
    units = _table6_units(budgets, kind)
    fig = _fidelity_figure(s, _rows(s, units), units)
    renderer = _draw(fig)
    for ax in fig.axes:
        assert len(ax.get_legend_handles_labels()[1]) == (7 if kind == "encoder" else 5)
        assert not same_style_series(ax), same_style_series(ax)
        assert not series_on_one_spot(ax, renderer), series_on_one_spot(ax, renderer)[:5]
        assert not legend_over_data(ax, renderer), legend_over_data(ax, renderer)
        lo, hi = ax.get_xlim()
        assert hi - lo > 0.19 and all(lo < b < hi for b in budgets), (lo, hi)      # one budget: not an axis of 0.48-0.52
    plt.close(fig)


def test_the_check_sees_series_drawn_alike():
    "The checks can fail: a rule and its SVD order in one colour and marker (as Table 6's figure drew them), both at one budget."
    fig, ax = plt.subplots()
    for ls, label in (("-", "native"), ("--", "native, SVD order")):
        ax.errorbar([0.5], [0.1], yerr=[[0.01], [0.01]], color="C0", marker="o", ls=ls, label=label)
    assert same_style_series(ax) == [("native", "native, SVD order")]
    assert series_on_one_spot(ax, _draw(fig)) == [("native", "native, SVD order")]
    plt.close(fig)
