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
