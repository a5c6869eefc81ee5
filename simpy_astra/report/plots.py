"""``--plots DIR``: breakdown.png (where each NPU's time went, stacked) and timeline.png (a Gantt
chart of one iteration, each part in its own colour).

breakdown.png has a bar per distinct breakdown, labelled by its first NPU and how many NPUs
share it (``32 x56``: symmetric NPUs, e.g. a pipeline stage's ranks, are one bar, so a 1,024-GPU
job draws a bar per stage, not 1,024); past :data:`MAX_BARS` distinct ones, a bar per pipeline
stage and tensor rank where the generator named the groups (the cell's last NPU to finish).
timeline.png is one iteration as a Gantt chart: a row per
pipeline stage of one data-parallel replica (NPU 0's; tensor rank 0 of each stage) where the
generator named the groups, else a row per distinct breakdown (at most :data:`MAX_ROWS`, the
slowest kept); each row is the NPU's node intervals charged by the breakdown's precedence, a
colour per part (bubbles included), time in ms, drawn as one image
(:mod:`~simpy_astra.report.gantt_image`) whose pixel columns each show the part that filled most
of them, the legend below the axes.

Both are drawn cheaply (issue 51: the reports must cost a few per cent of the simulation):
matplotlib's Agg canvas directly (files only, no display, no pyplot) with its text laid out and
drawn by Pillow (:mod:`~simpy_astra.report.quick_text`), the bars one collection per part, the
Gantt chart one image, a bar's or a row's label one text (:func:`category_labels`, not a
matplotlib tick each), no artist whose cost grows with the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from simpy_astra.errors import InputError
from simpy_astra.report.breakdown import Breakdown, part_rank
from simpy_astra.report.gantt_image import gantt_raster, picked_image

MAX_BARS = 64
#: the pictures' pixels per inch
DPI = 110
MAX_ROWS = 16
#: fixed colours for the parts the generators name (others take tab20's in turn)
COLOURS = {
    "compute.gemm": "#2ca02c", "compute.attention": "#98df8a", "compute.elementwise": "#bcbd22",
    "compute.optimizer": "#17becf", "compute.other": "#66c2a5", "compute.cpu": "#9edae5",
    "memory": "#9467bd",
    "comm.tp": "#d62728", "comm.sp": "#ff9896", "comm.cp": "#e377c2", "comm.ep": "#8c564b",
    "comm.dp": "#1f77b4", "comm.edp": "#aec7e8", "comm.pp": "#ff7f0e", "comm.all": "#c44e52",
    "comm.p2p": "#ffbb78",
    "bubble": "#7f7f7f", "idle": "#e5e5e5",
}
TIME_UNITS = (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1))


def _unit(largest_ns: float) -> tuple[str, int]:
    return next(((n, s) for n, s in TIME_UNITS if largest_ns >= s), TIME_UNITS[-1])


def _colours(names: list[str]) -> dict[str, str]:
    import matplotlib

    spare = iter(matplotlib.colormaps["tab20"].colors * 4)
    return {n: COLOURS.get(n) or matplotlib.colors.to_hex(next(spare)) for n in names}


def _distinct(breakdowns: dict[int, Breakdown]) -> list[tuple[int, int, Breakdown]]:
    """(first NPU, how many, breakdown) per distinct breakdown, in NPU order."""
    groups: dict[tuple, list[int]] = {}  # (finish, parts) -> [first NPU, how many]
    keys: dict[int, tuple] = {}  # id -> (finish, parts): a folded run's orbit members share one object
    npus = sorted(breakdowns)
    found = list(map(breakdowns.__getitem__, npus))
    for npu, b, ident in zip(npus, found, map(id, found), strict=True):
        if ident in keys:
            key = keys[ident]
        else:
            key = keys[ident] = (b.finish_ns, tuple(sorted(b.parts.items())))
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [npu, 1]
    return [(first, n, breakdowns[first]) for first, n in groups.values()]


def agg_figure(width_in: float, height_in: float, dpi: int = DPI):
    """A figure with one axes, drawn by Agg (files only: no display, and no pyplot, whose
    figure manager a file does not need), its text by Pillow where it can
    (:mod:`~simpy_astra.report.quick_text`: most of a picture's cost is matplotlib's text)."""
    from matplotlib.figure import Figure

    from simpy_astra.report.quick_text import QuickTextCanvas, pillow_draws_text

    fig = Figure(figsize=(width_in, height_in), dpi=dpi)
    if pillow_draws_text():
        QuickTextCanvas(fig)
    else:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _by_role(breakdowns: dict[int, Breakdown], roles: dict[int, tuple[int, int]]) -> list[tuple[str, Breakdown]]:
    """A bar per (pipeline stage, tensor rank): that cell's NPU that finished last."""
    cells: dict[tuple[int, int], int] = {}
    for npu in sorted(breakdowns):
        role = roles.get(npu)
        if role is not None and (role not in cells or breakdowns[npu].finish_ns > breakdowns[cells[role]].finish_ns):
            cells[role] = npu
    return [(f"s{s} t{t} ({cells[(s, t)]})", breakdowns[cells[(s, t)]]) for s, t in sorted(cells)]


def _bars(breakdowns: dict[int, Breakdown],
          roles: dict[int, tuple[int, int]] | None) -> tuple[list[tuple[str, Breakdown]], str]:
    """(label, breakdown) per bar, and the x axis' label: a bar per distinct breakdown, its
    first NPU and how many NPUs share it (``x56``: a pipeline stage's identical GPUs are one
    bar); past :data:`MAX_BARS` distinct ones, a bar per pipeline stage and tensor rank where
    ``roles`` says (the cell's last NPU to finish)."""
    distinct = _distinct(breakdowns)
    if len(distinct) > MAX_BARS and roles:
        return _by_role(breakdowns, roles), "pipeline stage s, tensor rank t (the cell's last NPU to finish)"
    grouped = any(n > 1 for _npu, n, _b in distinct)
    return ([(f"{npu}" + (f" x{n}" if n > 1 else ""), b) for npu, n, b in distinct],
            "NPU (xN: N NPUs with this breakdown)" if grouped else "NPU")


def _legend_columns(count: int) -> tuple[int, float]:
    """(columns, height in inches) of a legend of ``count`` entries below the axes (:func:`_legend`):
    known before the figure is made, which is made at its final height (a figure grown after a
    label was measured is drawn by a second renderer, issue 51)."""
    columns = min(count, 5) or 1
    return columns, 0.2 * -(-count // columns) + 0.1


def _legend(fig, names: list[str], colours: dict[str, str]) -> None:
    """The legend inside the figure, below the axes, in as many columns as fit (beside or above
    the axes a legend taller than a short figure sticks out), in the room
    :func:`_legend_columns` made for it. A :class:`~simpy_astra.report.quick_artists.QuickLegend`
    (matplotlib's own Legend is about a fifth of a picture's cost, issue 51)."""
    from simpy_astra.report.quick_artists import QuickLegend, attach

    attach(QuickLegend(fig, names, [colours[n] for n in names], (0.5, 0.0), "lower center",
                       ncols=_legend_columns(len(names))[0], fontsize=8, frame=False, box_edge=1.0))


#: inches per character of the 7-8 pt labels, and for an axis label with its tick labels
CHAR_IN, AXIS_IN = 0.07, 0.55


def _margins(fig, left_in: float, right_in: float, bottom_in: float, top_in: float) -> None:
    """The axes placed by margins measured in label characters (matplotlib's tight_layout
    measures every text's extent: a second or more of a report that should cost nothing)."""
    width, height = fig.get_figwidth(), fig.get_figheight()
    fig.subplots_adjust(left=min(left_in / width, 0.45), right=1 - min(right_in / width, 0.45),
                        bottom=min(bottom_in / height, 0.6), top=1 - min(top_in / height, 0.3))


def _axes_width(width_in: float, left_in: float, right_in: float) -> float:
    """The axes' width in inches once :func:`_margins` has placed them."""
    return width_in * (1 - min(left_in / width_in, 0.45) - min(right_in / width_in, 0.45))


#: room left between two bar labels laid flat (inches)
LABEL_GAP_IN = 0.1


def labels_overlap(labels: list[str], axes_width_in: float) -> bool:
    """Whether the bars' labels, laid flat under bars spread evenly over ``axes_width_in``,
    would overlap (the longest, at :data:`CHAR_IN` per character, wider than a bar's slot):
    then they stand upright."""
    if not labels:
        return False
    return bool(CHAR_IN * max(map(len, labels)) + LABEL_GAP_IN > axes_width_in / len(labels))


#: the gap between the axes and the labels of its bars or rows (a tick's length and its pad, as
#: matplotlib's), and between those and the axis label (points)
LABEL_PAD_PT = 7.0  # quick_artists' TICK_LEN_PT + TICK_PAD_PT (that module imports matplotlib)


def category_labels(ax, axis: str, at, labels: list[str], fontsize: float, upright: bool = False) -> None:
    """A label per bar (``axis`` "x": below it, ``upright`` or flat) or per Gantt row ("y": left
    of it) at ``at`` (data coordinates), each one text where matplotlib would make a tick (three
    lines and two texts, about a millisecond each to make and draw; issue 51: the reports must
    cost a few per cent of the simulation), a tick mark at each (one line of markers), and the
    axis label beyond the widest. They are the axes' ``texts``; the axis itself has no ticks."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.transforms import offset_copy

    from simpy_astra.report.quick_artists import tick_marks

    fig = ax.figure
    renderer, font = fig.canvas.get_renderer(), FontProperties(size=fontsize)
    widest = max((renderer.get_text_width_height_descent(text, font, False)[0] for text in labels),
                 default=0.0) * 72 / fig.dpi  # points
    if axis == "x":
        place = offset_copy(ax.get_xaxis_transform(), fig=fig, y=-LABEL_PAD_PT, units="points")
        for x, text in zip(at, labels, strict=True):
            ax.text(x, 0.0, text, transform=place, ha="center", va="top", rotation=90 if upright else 0,
                    fontsize=fontsize)
        ax.set_xticks([])
        ax.add_line(tick_marks(ax, "x", at))
        depth = widest if upright else 1.2 * fontsize
        ax.xaxis.set_label_coords(0.5, 0.0, transform=offset_copy(ax.transAxes, fig=fig, y=-2 * LABEL_PAD_PT - depth,
                                                                  units="points"))
    else:
        place = offset_copy(ax.get_yaxis_transform(), fig=fig, x=-LABEL_PAD_PT, units="points")
        for y, text in zip(at, labels, strict=True):
            ax.text(0.0, y, text, transform=place, ha="right", va="center", fontsize=fontsize)
        ax.set_yticks([])
        ax.add_line(tick_marks(ax, "y", at))
        ax.yaxis.set_label_coords(0.0, 0.5, transform=offset_copy(ax.transAxes, fig=fig, x=-2 * LABEL_PAD_PT - widest,
                                                                  units="points"))


def breakdown_figure(breakdowns: dict[int, Breakdown], title: str = "",
                     roles: dict[int, tuple[int, int]] | None = None):
    """The stacked bars of breakdown.png (a matplotlib Figure): :func:`_bars`; ``roles``: NPU ->
    (pipeline stage, tensor rank) (:func:`~simpy_astra.report.pipeline_roles.pipeline_layout`)."""
    from matplotlib.collections import PolyCollection

    from simpy_astra.report.quick_artists import QuickLegend, attach, numeric_ticks

    bars, xlabel = _bars(breakdowns, roles)
    labels = [label for label, _b in bars]
    names = sorted({p for _l, b in bars for p in b.parts}, key=part_rank)
    colours = _colours(names)
    unit, scale = _unit(max(b.finish_ns for _l, b in bars))
    width_in = min(max(6.0, 0.3 * len(bars) + 3), 30.0)
    left_in, right_in = 0.4 + AXIS_IN, 0.5 + CHAR_IN * max(map(len, names), default=1)
    rotated = labels_overlap(labels, _axes_width(width_in, left_in, right_in))
    fig, ax = agg_figure(width_in, 5.0)
    half = (0.8 if len(bars) > 1 else 0.5) / 2
    bottoms = [0.0] * len(bars)
    for name in names:  # one collection per part, not a rectangle per bar: a fraction of the drawing
        heights = [b.parts.get(name, 0) / scale for _l, b in bars]
        boxes = [((x - half, lo), (x - half, lo + h), (x + half, lo + h), (x + half, lo))
                 for x, (lo, h) in enumerate(zip(bottoms, heights, strict=True)) if h > 0]
        ax.add_collection(PolyCollection(boxes, facecolors=colours[name], edgecolors="none", linewidths=0,
                                         label=name), autolim=False)  # the limits are set below
        bottoms = [lo + h for lo, h in zip(bottoms, heights, strict=True)]
    ax.set_xlim(-0.5, len(bars) - 0.5)
    ax.set_ylim(0.0, 1.05 * max(bottoms, default=0.0) or 1.0)
    ax.set_xlabel(xlabel)
    category_labels(ax, "x", range(len(bars)), labels, 7, upright=rotated)
    ax.set_ylabel(f"time ({unit})")
    numeric_ticks(ax, "y")  # a text per tick, not matplotlib's two lines and two texts
    # y=1.0, where matplotlib puts it anyway: a title left to place itself is moved above any
    # tick labels on top of the axes (there are none), found by measuring every tick label
    ax.set_title(title or "where each NPU's time went", y=1.0)
    attach(QuickLegend(ax, names, [colours[n] for n in names], (1.0, 0.5), "center left", fontsize=8))
    longest = max(map(len, labels), default=1)
    _margins(fig, left_in, right_in, AXIS_IN + (CHAR_IN * longest if rotated else 0.15), 0.4)
    return fig


@dataclass
class GanttRow:
    """One row of timeline.png: an NPU's breakdown, whose ``segments`` are its [0, finish] as
    (start ns, end ns, part) stretches in time order, each charged to one part by the
    breakdown's precedence (drawing reads their arrays, never the list)."""

    label: str
    npu: int
    breakdown: Breakdown = field(repr=False)

    @property
    def segments(self) -> list[tuple[int, int, str]]:
        return self.breakdown.segments or []

    @property
    def arrays(self):
        """The segments as :func:`~simpy_astra.report.columns.as_arrays` gives them."""
        return self.breakdown.segment_arrays()


def gantt_rows(breakdowns: dict[int, Breakdown], replica: list[int] | None = None) -> list[GanttRow]:
    """The rows of timeline.png; ``breakdowns`` made with ``segments=True``. ``replica``: one
    data-parallel replica's NPU of each pipeline stage, tensor rank 0, in stage order
    (:func:`~simpy_astra.report.pipeline_roles.pipeline_layout`): a row per stage. Without it (no
    named groups), a row per distinct breakdown, at most :data:`MAX_ROWS` (the slowest kept)."""
    if replica:
        return [GanttRow(f"stage {s}: NPU {npu}", npu, breakdowns[npu]) for s, npu in enumerate(replica)]
    rows = _distinct(breakdowns)
    if len(rows) > MAX_ROWS:  # keep the slowest
        rows = sorted(sorted(rows, key=lambda r: -r[2].finish_ns)[:MAX_ROWS])
    return [GanttRow(f"NPU {npu}" + (f" (x{n})" if n > 1 else ""), npu, b) for npu, n, b in rows]


def timeline_figure(breakdowns: dict[int, Breakdown], title: str = "", replica: list[int] | None = None):
    """The Gantt chart of timeline.png (time in ms): the rows of :func:`gantt_rows`."""
    from simpy_astra.report.quick_artists import numeric_ticks

    rows = gantt_rows(breakdowns, replica)
    names = sorted({row.arrays[3][c] for row in rows for c in _codes(row.arrays[2])}, key=part_rank)
    colours = _colours(names)
    scale = 10**6  # ns per ms
    # at least MIN_AXES_IN high: the upright y label of a chart of a row or two fits beside it
    legend_in = _legend_columns(len(names))[1]
    fig, ax = agg_figure(12.0, 1.2 + max(_row_in(len(rows)) * len(rows), MIN_AXES_IN) + legend_in)
    end = max((int(row.arrays[1][-1]) for row in rows if len(row.arrays[1])), default=0)
    if end:
        # each of the axes' pixels takes the raster's pixel under its centre (picked_image)
        image = picked_image(ax, gantt_raster([row.arrays for row in rows], colours, end),
                             (0.0, end / scale, len(rows) - 0.5, -0.5))
        ax.add_image(image)
        ax.set_xlim(0.0, end / scale)
    labelled = range(0, len(rows), label_every(len(rows)))
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    numeric_ticks(ax, "x")  # a text per tick, not matplotlib's two lines and two texts
    if replica:
        ax.set_ylabel("pipeline stage")
        default = "one iteration of one data-parallel replica: a row per pipeline stage (tensor rank 0)"
    else:
        ax.set_ylabel("NPU (xN: N NPUs alike)")
        default = "one iteration: each NPU's time by part (xN: N NPUs alike)"
    category_labels(ax, "y", labelled, [rows[k].label for k in labelled], 8 if len(rows) <= MAX_ROWS else 7)
    ax.set_title(title or default, fontsize=10, y=1.0)  # placed, as breakdown_figure's
    _legend(fig, names, colours)
    _margins(fig, 0.4 + CHAR_IN * max((len(row.label) for row in rows), default=1), 0.25,
             legend_in + AXIS_IN, 0.35)
    return fig


#: inches per Gantt row up to :data:`MAX_ROWS` rows; past them the chart keeps the height of
#: that many and its rows get thinner, down to :data:`MIN_ROW_IN` (a 64-stage pipeline would
#: otherwise be a 30-inch picture, most of whose drawing is scaling the image up to it)
ROW_IN, MIN_ROW_IN = 0.3, 0.15
MIN_AXES_IN = 1.2


def label_every(rows: int) -> int:
    """Every how many Gantt rows one is labelled: each of up to :data:`MAX_ROWS` rows, past them
    about :data:`MAX_ROWS` labels spread evenly, from the first row on (a 64-stage pipeline's
    rows are labelled stage 0, 4, 8, ...: each label is a tick and a text to lay out and draw,
    most of the chart's cost, issue 51)."""
    return max(1, -(-rows // MAX_ROWS))


def _row_in(rows: int) -> float:
    return ROW_IN if rows <= MAX_ROWS else max(MIN_ROW_IN, ROW_IN * MAX_ROWS / rows)


def _codes(codes) -> list[int]:
    """The distinct part codes of a row's stretches."""
    import numpy as np

    return np.unique(codes).tolist()


def _save(fig, path: str) -> None:
    """The PNG, with its title, axis labels and legend also as text (PNG ``tEXt`` chunks
    ``Title`` and ``Description``) for whoever reads the file rather than looks at it."""
    ax = fig.axes[0]
    legend = ax.get_legend() or (fig.legends[0] if fig.legends else None)
    names = [t.get_text() for t in legend.get_texts()] if legend is not None else []
    description = f"x: {ax.get_xlabel()}; y: {ax.get_ylabel() or '-'}; legend: {', '.join(names)}"
    import numpy as np

    from simpy_astra.infra import files
    from simpy_astra.report.png_file import png_bytes

    canvas = fig.canvas
    canvas.draw()
    png = png_bytes(np.asarray(canvas.buffer_rgba()), {"Title": ax.get_title(), "Description": description}, DPI)
    with files.open_output(path, "--plots", "wb") as f:  # whole or not at all, never over an input
        f.write(png)


#: the files ``--plots DIR`` writes into DIR
PLOT_NAMES = ("breakdown.png", "timeline.png")


def require_matplotlib() -> None:
    """``--plots`` asks for what only matplotlib draws: imported before the run (a missing or
    broken install is refused then, not after it, and the import's second is start-up, not
    part of the report the run waits for)."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.collections  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import matplotlib.patches  # noqa: F401
        import matplotlib.ticker  # noqa: F401
        from PIL import Image, ImageDraw, ImageFont  # noqa: F401

        import simpy_astra.report.columns  # noqa: F401
        import simpy_astra.report.quick_artists  # noqa: F401
        import simpy_astra.report.quick_text  # noqa: F401
    except ImportError as exc:
        raise InputError(f"--plots: needs matplotlib, a dependency of simpy-astra that this environment "
                         f"lacks or cannot import ({exc}; pip install matplotlib); or run without --plots") from None


def write_plots(breakdowns: dict[int, Breakdown], folder: str,
                roles: dict[int, tuple[int, int]] | None = None,
                replica: list[int] | None = None) -> list[str]:
    """breakdown.png and timeline.png in ``folder``; returns their paths. ``roles``: see
    :func:`breakdown_figure`; ``replica``: see :func:`gantt_rows`."""
    require_matplotlib()
    try:
        os.makedirs(folder, exist_ok=True)
        paths = [os.path.join(folder, name) for name in PLOT_NAMES]
        _save(breakdown_figure(breakdowns, roles=roles), paths[0])
        _save(timeline_figure(breakdowns, replica=replica), paths[1])
    except OSError as exc:
        raise InputError(f"--plots: cannot write into {folder} ({exc.strerror or exc})") from None
    return paths
