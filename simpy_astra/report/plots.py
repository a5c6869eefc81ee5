"""``--plots DIR``: breakdown.png (where each NPU's time went, stacked) and timeline.png (a Gantt
chart of one iteration, each part in its own colour).

breakdown.png has a bar per NPU; past :data:`MAX_BARS` NPUs, a bar per pipeline stage and tensor
rank where the generator named the groups (the cell's last NPU to finish), else a bar per
distinct breakdown (labelled by its first NPU and how many share it: symmetric NPUs, e.g. a
pipeline stage's ranks, have one). timeline.png is one iteration as a Gantt chart: a row per
pipeline stage of one data-parallel replica (NPU 0's; tensor rank 0 of each stage) where the
generator named the groups, else a row per distinct breakdown (at most :data:`MAX_ROWS`, the
slowest kept); each row is the NPU's node intervals charged by the breakdown's precedence, a
colour per part (bubbles included), time in ms. matplotlib runs on the Agg backend (files
only, no display needed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from simpy_astra.errors import InputError
from simpy_astra.report.breakdown import Breakdown, part_rank

MAX_BARS = 64
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
    groups: dict[tuple, list[int]] = {}
    for npu in sorted(breakdowns):
        b = breakdowns[npu]
        groups.setdefault((b.finish_ns, tuple(sorted(b.parts.items()))), []).append(npu)
    return [(npus[0], len(npus), breakdowns[npus[0]]) for npus in groups.values()]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _by_role(breakdowns: dict[int, Breakdown], roles: dict[int, tuple[int, int]]) -> list[tuple[str, Breakdown]]:
    """A bar per (pipeline stage, tensor rank): that cell's NPU that finished last."""
    cells: dict[tuple[int, int], int] = {}
    for npu in sorted(breakdowns):
        role = roles.get(npu)
        if role is not None and (role not in cells or breakdowns[npu].finish_ns > breakdowns[cells[role]].finish_ns):
            cells[role] = npu
    return [(f"s{s} t{t} ({cells[(s, t)]})", breakdowns[cells[(s, t)]]) for s, t in sorted(cells)]


def breakdown_figure(breakdowns: dict[int, Breakdown], title: str = "",
                     roles: dict[int, tuple[int, int]] | None = None):
    """The stacked bars of breakdown.png (a matplotlib Figure); ``roles``: NPU -> (pipeline
    stage, tensor rank) (:func:`~simpy_astra.report.breakdown.pipeline_roles`), used past
    :data:`MAX_BARS` NPUs."""
    plt = _pyplot()

    if len(breakdowns) <= MAX_BARS:
        bars = [(str(npu), breakdowns[npu]) for npu in sorted(breakdowns)]
        xlabel = "NPU"
    elif roles:
        bars = _by_role(breakdowns, roles)
        xlabel = "pipeline stage s, tensor rank t (the cell's last NPU to finish)"
    else:
        bars = [(f"{npu}" + (f" (x{n})" if n > 1 else ""), b) for npu, n, b in _distinct(breakdowns)]
        xlabel = "NPU (xN: N NPUs with this breakdown)"
    names = sorted({p for _l, b in bars for p in b.parts}, key=part_rank)
    colours = _colours(names)
    unit, scale = _unit(max(b.finish_ns for _l, b in bars))
    fig, ax = plt.subplots(figsize=(min(max(6.0, 0.3 * len(bars) + 3), 30.0), 5.0))
    bottoms = [0.0] * len(bars)
    for name in names:
        heights = [b.parts.get(name, 0) / scale for _l, b in bars]
        ax.bar(range(len(bars)), heights, bottom=bottoms, color=colours[name], label=name, width=0.8)
        bottoms = [lo + h for lo, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([label for label, _b in bars], rotation=90 if len(bars) > 16 else 0, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"time ({unit})")
    ax.set_title(title or "where each NPU's time went")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


@dataclass
class GanttRow:
    """One row of timeline.png: an NPU's [0, finish] as (start ns, end ns, part) stretches, in
    time order, each charged to one part by the breakdown's precedence."""

    label: str
    npu: int
    segments: list[tuple[int, int, str]]


def gantt_rows(breakdowns: dict[int, Breakdown], replica: list[int] | None = None) -> list[GanttRow]:
    """The rows of timeline.png; ``breakdowns`` made with ``segments=True``. ``replica``: one
    data-parallel replica's NPU of each pipeline stage, tensor rank 0, in stage order
    (:func:`~simpy_astra.report.breakdown.replica_stages`): a row per stage. Without it (no
    named groups), a row per distinct breakdown, at most :data:`MAX_ROWS` (the slowest kept)."""
    if replica:
        return [GanttRow(f"stage {s}: NPU {npu}", npu, list(breakdowns[npu].segments or []))
                for s, npu in enumerate(replica)]
    rows = _distinct(breakdowns)
    if len(rows) > MAX_ROWS:  # keep the slowest
        rows = sorted(sorted(rows, key=lambda r: -r[2].finish_ns)[:MAX_ROWS])
    return [GanttRow(f"NPU {npu}" + (f" (x{n})" if n > 1 else ""), npu, list(b.segments or []))
            for npu, n, b in rows]


def timeline_figure(breakdowns: dict[int, Breakdown], title: str = "", replica: list[int] | None = None):
    """The Gantt chart of timeline.png (time in ms): the rows of :func:`gantt_rows`."""
    plt = _pyplot()
    from matplotlib.patches import Patch

    rows = gantt_rows(breakdowns, replica)
    names = sorted({p for row in rows for _s, _e, p in row.segments}, key=part_rank)
    colours = _colours(names)
    scale = 10**6  # ns per ms
    fig, ax = plt.subplots(figsize=(12.0, 1.2 + 0.45 * len(rows)))
    for y, row in enumerate(rows):
        ax.broken_barh([(s / scale, (e - s) / scale) for s, e, _n in row.segments], (y - 0.4, 0.8),
                       facecolors=[colours[n] for _s, _e, n in row.segments], linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([row.label for row in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    if replica:
        ax.set_ylabel("pipeline stage")
        default = "one iteration of one data-parallel replica: a row per pipeline stage (tensor rank 0)"
    else:
        ax.set_ylabel("NPU (xN: N NPUs alike)")
        default = "one iteration: each NPU's time by part (xN: N NPUs alike)"
    ax.set_title(title or default, fontsize=10)
    ax.legend(handles=[Patch(color=colours[n], label=n) for n in names], loc="center left",
              bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    return fig


def _save(fig, path: str) -> None:
    """The PNG, with its title, axis labels and legend also as text (PNG ``tEXt`` chunks
    ``Title`` and ``Description``) for whoever reads the file rather than looks at it."""
    ax = fig.axes[0]
    legend = ax.get_legend()
    names = [t.get_text() for t in legend.get_texts()] if legend is not None else []
    description = f"x: {ax.get_xlabel()}; y: {ax.get_ylabel() or '-'}; legend: {', '.join(names)}"
    from simpy_astra import files

    try:
        with files.open_output(path, "--plots", "wb") as f:  # whole or not at all, never over an input
            fig.savefig(f, format="png", dpi=110, metadata={"Title": ax.get_title(), "Description": description})
    finally:
        _pyplot().close(fig)


#: the files ``--plots DIR`` writes into DIR
PLOT_NAMES = ("breakdown.png", "timeline.png")


def require_matplotlib() -> None:
    """``--plots`` asks for what only matplotlib draws: refused before the run, not after it."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("--plots: needs matplotlib, which is not installed (pip install "
                         "'simpy-astra[plots]'); or run without --plots")


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
