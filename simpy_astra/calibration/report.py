"""Measured against simulated: per-size errors, the summary figures, the table and the plot."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.calibration.geomean_solver import geomean_error
from simpy_astra.calibration.local_copy import memory_gbps, own_chunk_copy_ns
from simpy_astra.calibration.model import MIB
from simpy_astra.calibration.network_dims import span, sub_network, sub_system
from simpy_astra.calibration.simulator_adapter import comm_size, simulate_collective
from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.network.backends import DEFAULT_BACKEND

#: errors below this count as this much in the geometric mean (docs/calibration.md: "Error figures")
ERROR_FLOOR = 0.01


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw (its doc/PERFORMANCE.md)."""
    if collective == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if collective == "sendrecv":
        return 1.0
    return (ranks - 1) / ranks


@dataclass
class Point:
    line: int
    size_bytes: int
    measured_us: float
    simulated_us: float | None  # None: the simulator cannot run this size (see ``note``)
    note: str = ""
    held_out: bool | None = None  # None: no calibration record given; True: not fitted on

    @property
    def error(self) -> float | None:
        if self.simulated_us is None:
            return None
        return self.simulated_us / self.measured_us - 1


@dataclass
class LogResult:
    path: str
    collective: str
    ranks: int
    points: list[Point] = field(default_factory=list)

    def busbw(self, time_us: float, size: int) -> float:
        return size / (time_us * 1e3) * bus_factor(self.collective, self.ranks)


def gm_abs_error(errors: list[float]) -> float:
    """Geometric mean of |error|, each floored at 1% (the run-to-run spread of nccl-tests), so
    that one size matched exactly cannot pull the figure to zero. ASTRA-sim's validation
    pages report this kind of figure ("geomean error rate")."""
    if not errors:
        return float("nan")
    return math.exp(sum(math.log(max(abs(e), ERROR_FLOOR)) for e in errors) / len(errors))


@dataclass
class Summary:
    collective: str
    ranks: int
    logs: list[str]
    geomean_large: float  # sizes >= 1 MiB
    geomean_all: float
    mean_large: float  # arithmetic mean of |error|, sizes >= 1 MiB
    max_large: float
    factor_large: float  # exp(mean ln(1 + |e|)) - 1, sizes >= 1 MiB
    points_large: int
    points_all: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def simulate_logs(logs: list, network: dict[str, Any], system: dict[str, Any],
                  in_place: bool = False, backend: str = DEFAULT_BACKEND,
                  network_for: Callable[[int], dict[str, Any]] | None = None,
                  gpu_memory_gbps: float | None = None) -> list[LogResult]:
    """Every logged size simulated; ``network_for`` (size -> network) overrides ``network``
    per size, for the protocol regimes ``calibrate --protocol-regimes`` fits. The local copy
    of each rank's own chunk an out-of-place run makes is added as calibrate fits it
    (``local_copy``; ``gpu_memory_gbps`` overrides the datasheet bandwidth)."""
    results = []
    for log in logs:
        mem_gbps = memory_gbps(log.devices, gpu_memory_gbps)
        counts = span(network, log.ranks, log.path, log.per_host)
        net, sys_ = sub_network(network, counts), sub_system(system, len(counts))
        res = LogResult(log.path, log.collective, log.ranks)
        # a size's simulated time (or why it has none) is the same on every row of it: a log
        # that repeats its table (runs appended to one file) simulates each size once
        simulated: dict[int, float | str] = {}
        for row in log.rows:
            measured = row.inplace_time_us if in_place else row.time_us
            if measured is None:
                raise InputError(f"{log.path}:{row.line}: no in-place time; drop --in-place")
            size = comm_size(log.collective, row.size_bytes, log.ranks)
            if size < 1:
                res.points.append(Point(row.line, row.size_bytes, measured, None,
                                        "fewer bytes than GPUs: not simulated"))
                continue
            if row.size_bytes not in simulated:
                if network_for is not None:
                    net = sub_network(network_for(row.size_bytes), counts)
                try:
                    simulated[row.size_bytes] = simulate_collective(net, sys_, log.collective, size, log.ranks,
                                                                    backend)
                except InputError as exc:  # e.g. an all-gather smaller than the dataset splits
                    simulated[row.size_bytes] = str(exc)
            t_ns = simulated[row.size_bytes]
            if isinstance(t_ns, str):
                res.points.append(Point(row.line, row.size_bytes, measured, None, t_ns))
                continue
            t_ns += own_chunk_copy_ns(log.collective, row.size_bytes, log.ranks, mem_gbps, in_place)
            res.points.append(Point(row.line, row.size_bytes, measured, t_ns / 1e3))
        results.append(res)
    return results


def summarise(results: list[LogResult], min_size: int = MIB) -> list[Summary]:
    keyed: dict[tuple[str, int], list[LogResult]] = {}
    for r in results:
        keyed.setdefault((r.collective, r.ranks), []).append(r)
    out = []
    for (coll, ranks), rs in keyed.items():
        all_errors = [p.error for r in rs for p in r.points if p.error is not None]
        large = [p.error for r in rs for p in r.points if p.error is not None and p.size_bytes >= min_size]
        out.append(Summary(
            coll, ranks, [r.path for r in rs],
            gm_abs_error(large), gm_abs_error(all_errors),
            sum(abs(e) for e in large) / len(large) if large else float("nan"),
            max((abs(e) for e in large), default=float("nan")),
            geomean_error(large), len(large), len(all_errors),
        ))
    return out


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}%"


def summary_line(s: Summary) -> str:
    return (f"{s.collective} on {s.ranks} GPUs: geomean error (>= 1 MiB): {_pct(s.geomean_large)}, "
            f"all sizes: {_pct(s.geomean_all)} (>= 1 MiB: mean |error| {_pct(s.mean_large)}, "
            f"max {_pct(s.max_large)}, {s.points_large} sizes)")


def human_size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def print_table(results: list[LogResult], out) -> None:
    """Measured against simulated, one row per size (``out``: a report Output; errors in colour
    on a colour terminal)."""
    # short headers: a plain table of times under 100 ms fits 80 columns in one block
    columns = ("collective", "GPUs", "size", "meas. us", "sim. us", "error", "busbw meas", "busbw sim")
    rows, sections = [], []
    for r in results:
        sections.append(len(rows))
        for p in r.points:
            err = p.error
            if err is None:
                cells = ["-", "-", p.note[:40]]
            else:
                text = f"{100 * err:+.1f}%"
                style = "green" if abs(err) < 0.1 else "yellow" if abs(err) < 0.25 else "red"
                cells = [f"{p.simulated_us:,.2f}", f"[{style}]{text}[/{style}]" if out.colour else text,
                         f"{r.busbw(p.measured_us, p.size_bytes):.2f}"]
            sim_bw = "" if p.simulated_us is None else f"{r.busbw(p.simulated_us, p.size_bytes):.2f}"
            rows.append([r.collective, str(r.ranks), human_size(p.size_bytes), f"{p.measured_us:,.2f}",
                         *cells, sim_bw])
    out.table("measured (nccl-tests) against simulated", columns, rows,
              align=("left", *["right"] * (len(columns) - 1)), sections=sections[1:], key=3)


def write_csv(results: list[LogResult], path: str) -> None:
    with files.open_output(path, "--out", newline="") as f:
        w = csv.writer(f)
        w.writerow(["log", "line", "collective", "gpus", "size_bytes", "measured_us", "simulated_us",
                    "error", "measured_busbw", "simulated_busbw", "role"])
        for r in results:
            for p in r.points:
                sim = "" if p.simulated_us is None else f"{p.simulated_us:.3f}"
                err = "" if p.error is None else f"{p.error:.5f}"
                sbw = "" if p.simulated_us is None else f"{r.busbw(p.simulated_us, p.size_bytes):.3f}"
                w.writerow([r.path, p.line, r.collective, r.ranks, p.size_bytes, p.measured_us, sim, err,
                            f"{r.busbw(p.measured_us, p.size_bytes):.3f}", sbw, _role(p)])


def _role(p: Point) -> str:
    return "" if p.held_out is None else "held out" if p.held_out else "fitted"


def write_plot(results: list[LogResult], path: str, title: str) -> None:
    """busbw against size (log axis), one panel per log: measured as markers (hollow where the
    calibration never saw the size, filled where it was fitted on), simulated as a line, so a
    figure shows at a glance what was predicted and what was only reproduced."""
    # deferred: matplotlib is heavy/optional; only writing a plot needs it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after matplotlib.use("Agg"): the backend is chosen first
    import matplotlib.ticker  # noqa: F401 - the formatter below

    cols = min(len(results), 2)
    rows = (len(results) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.2 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marked = any(p.held_out is not None for r in results for p in r.points)
    for i, r in enumerate(results):
        ax = axes[i // cols][i % cols]
        color = colors[i % len(colors)]
        fitted = [(p.size_bytes, r.busbw(p.measured_us, p.size_bytes)) for p in r.points if not p.held_out]
        held = [(p.size_bytes, r.busbw(p.measured_us, p.size_bytes)) for p in r.points if p.held_out]
        sim = [(p.size_bytes, r.busbw(p.simulated_us, p.size_bytes)) for p in r.points
               if p.simulated_us is not None]
        if fitted:
            ax.plot(*zip(*fitted, strict=True), "o", color=color, markersize=4,
                    label="measured, fitted on" if marked else "measured")
        if held:
            ax.plot(*zip(*held, strict=True), "o", markerfacecolor="white", markeredgecolor=color,
                    markersize=5, label="measured, held out")
        if sim:
            ax.plot(*zip(*sim, strict=True), "-", color=color, linewidth=1.5, label="simulated")
        large = [p for p in r.points if p.error is not None and p.size_bytes >= MIB]
        pred = [p.error for p in large if p.held_out]
        name = os.path.basename(r.path)
        note = f"held out: geomean {_pct(gm_abs_error(pred))}" if pred else \
            f"geomean {_pct(gm_abs_error([p.error for p in large]))}"
        state = "HELD OUT" if marked and all(p.held_out for p in r.points) else \
            "partly held out" if pred else ""
        ax.set_title(f"{r.collective}, {r.ranks} GPUs ({name}) {state}\n{note} from 1 MiB", fontsize=8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _pos: human_size(int(v)).replace(" ", "") if v >= 1 else ""))
        ax.set_xlabel("size (bytes, as nccl-tests prints it)", fontsize=8)
        ax.set_ylabel("bus bandwidth (GB/s)", fontsize=8)
        ax.axvline(MIB, color="grey", linestyle=":", linewidth=1)
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="upper left")
    for j in range(len(results), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with files.open_output(path, "--out", "wb") as f:
        fig.savefig(f, dpi=110, format="png")
    plt.close(fig)


def output_dir(path: str, names: tuple[str, ...] = ()) -> None:
    """``--out``, made if missing, and the files ``names`` in it checked before any work
    (a FIFO, a device or one of the inputs in their place is refused, not written at the end)."""
    if path == "-":  # stdout to many tools; a folder named '-' here, as run's outputs refuse it
        raise InputError("--out: '-' would be a folder named '-' here, not stdout (stdout carries the answer); "
                         "give a folder path")
    if os.path.exists(path) and not os.path.isdir(path):  # makedirs said only 'File exists'
        raise InputError(f"--out: {path} is a file, not a folder; choose a folder")
    files.make_folder(path, "--out")  # a symlink to nothing said only 'File exists'
    for name in names:
        files.check_output(os.path.join(path, name), "--out")
