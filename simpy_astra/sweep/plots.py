"""DIR/time.png, split.png, breakdown.png and memory.png: one bar per finished point, in sweep
order (breakdown.png: the last NPU's time stacked by part, as ``run --plots`` draws an NPU);
and, when points know their memory, time_memory.png: the question a researcher brings ("which
layout is fastest, and does it fit?") as one picture, iteration time against memory per GPU.

matplotlib draws on an Agg canvas (files only, no display needed) without pyplot, its text by
Pillow where it can, and the PNGs are encoded by the run's own writer, as ``run --plots`` does
(report/plots.py): pyplot's import, matplotlib's text layout and Pillow's filter search took
2.3 to 2.6 s at the end of a 16-point sweep.
"""

from __future__ import annotations

import os
import re

from simpy_astra.report.breakdown_columns import SWEEP_COLUMNS
from simpy_astra.report.plots import COLOURS
from simpy_astra.sweep.axes import shown
from simpy_astra.sweep.best import Outcome
from simpy_astra.sweep.spec import SweepSpec

TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))


def time_unit(largest_ns: float) -> tuple[str, float]:
    """The largest unit in which the biggest bar is at least 1 (ms for training steps)."""
    return next(((name, scale) for name, scale in TIME_UNITS if largest_ns >= scale), TIME_UNITS[-1])


#: the most characters of a point's label: a longer one, rotated under its bar, is taller than
#: the picture (matplotlib then cuts it, and warns on stderr in the middle of the summary)
LABEL_CHARS = 36


def _label(o: Outcome) -> str:
    """A bar's label: the point's values in the x axis' order of names, ``2 2 off`` (a flag
    turned off read ``False``, as the console's lines did)."""
    text = " ".join(shown(v) for v in o.point.coordinates.values())
    if len(text) <= LABEL_CHARS:
        return text
    keep = LABEL_CHARS - 3  # its start and its end, where points differ most often
    return f"{text[:keep // 2]}...{text[len(text) - (keep - keep // 2):]}"


def memory_cap_gb(spec: SweepSpec) -> float | None:
    """The cap to draw: ``memory_cap_gb`` or a constraint ``peak_memory_gb <= N``."""
    if spec.goals.memory_cap_gb is not None:
        return spec.goals.memory_cap_gb
    for c in spec.goals.result_constraints:
        m = re.fullmatch(r"\s*peak_memory_gb\s*<=?\s*([0-9.eE+]+)\s*", c.text)
        if m:
            return float(m.group(1))
    return None


#: the sweep pictures' resolution (matplotlib's default, which their sizes were chosen for)
DPI = 100


#: a bar's label (rotated under it) in points, and how many pixels it takes across the picture
LABEL_PT = 7
LABEL_PX = LABEL_PT * DPI / 72


def _bars(title: str, ylabel: str, labels: list[str]):
    """A bar chart's figure, a label under each bar, or under every k-th one where more bars
    than labels fit across the picture (at most 40 in: 2,000 points made 2,000 ticks, drawn
    on top of each other, and most of a minute's work)."""
    # deferred: matplotlib is heavy/optional; only writing a plot needs it
    from simpy_astra.report.plots import agg_figure

    width = min(max(6.0, 0.25 * len(labels) + 2), 40.0)
    fig, ax = agg_figure(width, 4.8, DPI)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    every = -(-len(labels) // max(1, int(width * DPI / LABEL_PX)))
    ax.set_xticks(range(0, len(labels), every or 1))
    ax.set_xticklabels(labels[::every or 1], rotation=90, fontsize=LABEL_PT)
    return fig, ax


def _columns(ax, heights: list[float], color, bottoms: list[float] | None = None, label: str | None = None) -> None:
    """One bar per point as ``ax.bar`` draws them (0.8 wide, centred on their index, from their
    bottom, sticking to 0), as one artist however many points there are (a patch a bar took
    a third of the pictures' time at 2,000 points)."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    x = np.arange(len(heights), dtype=float)
    low = np.zeros(len(heights)) if bottoms is None else np.asarray(bottoms, dtype=float)
    high = low + np.asarray(heights, dtype=float)
    corners = np.stack([np.column_stack(c) for c in ((x - 0.4, low), (x - 0.4, high), (x + 0.4, high),
                                                      (x + 0.4, low))], axis=1)
    bars = PolyCollection(corners, facecolors=color, edgecolors="none", label=label)
    bars.sticky_edges.y.append(0.0)
    ax.add_collection(bars, autolim=True)
    ax.autoscale_view()


def write_plots(spec: SweepSpec, done: list[Outcome], out_dir: str, best: set[str]) -> list[str]:
    """``best``: the best points' keys (one per network backend), drawn green."""
    ok = [o for o in done if o.ok]
    labels = [_label(o) for o in ok]
    axes_text = ", ".join(a.name for a in spec.axes)  # short names: the dotted paths ran off the picture
    paths = []

    unit, scale = time_unit(max((o.figures["finish_ns"] for o in ok), default=0))
    fig, ax = _bars(f"{spec.name}: time per point", f"finish ({unit}, max over NPUs)", labels)
    colors = ["tab:green" if o.point.key in best else "tab:blue" for o in ok]
    _columns(ax, [o.figures["finish_ns"] / scale for o in ok], colors)
    ax.set_xlabel(axes_text + " (green: best)")
    paths.append(_save(fig, out_dir, "time.png"))

    fig, ax = _bars(f"{spec.name}: compute vs exposed communication", f"{unit} (max over NPUs)", labels)
    compute = [(o.figures["compute_ns"] or 0) / scale for o in ok]  # empty in a hand-made row
    exposed = [(o.figures["exposed_comm_ns"] or 0) / scale for o in ok]
    _columns(ax, compute, "tab:blue", label="compute (GPU time)")
    _columns(ax, exposed, "tab:orange", compute, label="exposed communication")
    ax.set_xlabel(axes_text)
    ax.legend()
    paths.append(_save(fig, out_dir, "split.png"))

    paths.append(breakdown_plot(spec, ok, labels, out_dir, unit, scale))

    fig, ax = _bars(f"{spec.name}: peak memory per NPU", "peak memory (GB = 2^30 B)", labels)
    memory = [o.figures["peak_memory_gb"] for o in ok]
    cap = memory_cap_gb(spec)
    if any(m is not None for m in memory):
        # over the sweep's cap, or too large for the point's own GPU (a Megatron point's fits)
        colors = ["tab:red" if not o.fits or cap is not None and m is not None and m > cap else "tab:blue"
                  for o, m in zip(ok, memory, strict=True)]
        _columns(ax, [m or 0 for m in memory], colors)
        lines = [(cap, f"cap {cap:g} GB")] if cap is not None else []
        lines += [(c, f"capacity {c:g} GiB") for c in _capacities_gib(ok) if c != cap]
        for at, label in lines:
            ax.axhline(at, color="tab:red", linestyle="--", label=label)
        if lines:
            ax.legend()
    else:
        ax.text(0.5, 0.5, "memory not tracked (set system.track-local-mem: true)",
                ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(axes_text)
    paths.append(_save(fig, out_dir, "memory.png"))
    if any(_memory_gib(o) is not None for o in ok):
        paths.append(time_memory_plot(spec, ok, out_dir, best))
    return paths


def _memory_gib(o: Outcome) -> float | None:
    value = o.figures.get("memory_per_gpu_gib")
    return o.figures.get("peak_memory_gb") if value is None else value


def _capacities_gib(ok: list[Outcome]) -> list[float]:
    """The memory of the points' GPUs (a Megatron point's cluster preset), each once."""
    return sorted({o.figures["memory_capacity_gib"] for o in ok if o.figures.get("memory_capacity_gib")})


def _time_ns(o: Outcome) -> float:
    value = o.figures.get("iteration_time_ns")
    return o.figures["finish_ns"] if value is None else value


def time_memory_plot(spec: SweepSpec, ok: list[Outcome], out_dir: str, best: set[str]) -> str:
    """time_memory.png: one dot per finished point (iteration time against memory per GPU),
    the GPU's capacity as a vertical line, points that do not fit as red crosses, the best
    point (which always fits, best.py) as a green star."""
    # deferred: matplotlib is heavy/optional; only writing a plot needs it
    from simpy_astra.report.plots import agg_figure

    shown = [o for o in ok if _memory_gib(o) is not None]
    unit, scale = time_unit(max(_time_ns(o) for o in shown))
    fig, ax = agg_figure(7.0, 5.0, DPI)
    ax.set_title(f"{spec.name}: time and memory per point")
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_ylabel(f"iteration time ({unit})")
    for fits, style in ((True, {"color": "tab:blue", "marker": "o", "label": "fits"}),
                        (False, {"color": "tab:red", "marker": "x", "label": "does not fit"})):
        group = [o for o in shown if o.fits == fits and o.point.key not in best]
        if group:
            ax.scatter([_memory_gib(o) for o in group], [_time_ns(o) / scale for o in group], **style)
    winners = [o for o in shown if o.point.key in best]
    if winners:
        ax.scatter([_memory_gib(o) for o in winners], [_time_ns(o) / scale for o in winners], marker="*", s=250,
                   color="tab:green", edgecolor="black", zorder=3, label="best (fits)")
        for o in winners:
            ax.annotate(" " + _label(o), (_memory_gib(o), _time_ns(o) / scale), fontsize=8)
    caps = _capacities_gib(shown)
    if not caps and memory_cap_gb(spec) is not None:
        caps = [memory_cap_gb(spec)]
    for cap in caps:
        ax.axvline(cap, color="tab:red", linestyle="--", label=f"capacity {cap:g} GiB")
    ax.legend()
    return _save(fig, out_dir, "time_memory.png")


def breakdown_plot(spec: SweepSpec, ok: list[Outcome], labels: list[str], out_dir: str, unit: str,
                   scale: float) -> str:
    """breakdown.png: per point, the ``breakdown_*_ns`` columns stacked (parts no point has are
    left out of the legend); a row written before these columns existed draws no bar."""
    fig, ax = _bars(f"{spec.name}: where the last NPU's time went", f"{unit} (the last NPU to finish)",
                         labels)
    used = [c for c in SWEEP_COLUMNS if any(o.figures.get(c) for o in ok)]
    bottoms = [0.0] * len(ok)
    for column in used:
        part = column.removeprefix("breakdown_").removesuffix("_ns")
        key = ("compute.gemm" if part == "compute" else "comm.all" if part == "comm_other"
               else part.replace("comm_", "comm.", 1))
        heights = [(o.figures.get(column) or 0) / scale for o in ok]
        _columns(ax, heights, COLOURS.get(key) or "tab:gray", bottoms,
                 label=key if part != "comm_other" else "comm (other)")
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xlabel(", ".join(a.name for a in spec.axes))
    if used:
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    return _save(fig, out_dir, "breakdown.png")


def _save(fig, out_dir: str, name: str) -> str:
    """The PNG, its title also as text (``tEXt``), written whole or not at all."""
    import numpy as np

    from simpy_astra.infra import files
    from simpy_astra.report.png_file import png_bytes

    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.canvas.draw()
    png = png_bytes(np.asarray(fig.canvas.buffer_rgba()), {"Title": fig.axes[0].get_title()}, DPI)
    with files.open_output(path, "--out", "wb") as f:
        f.write(png)
    return path
