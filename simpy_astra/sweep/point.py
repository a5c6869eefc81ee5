"""Run one sweep point in whatever process it lands in and reduce it to a row of figures.

This runs in pool workers and on Dask workers, so it takes and returns plain data: the
scenario mapping in, a dict of figures out. A failure of the point (bad input, stalled run, a
bug) comes back as ``status: error`` with a one-line message instead of an exception, so one
bad point never stops a sweep.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from simpy_astra.engine.memory_tracker import CATEGORIES
from simpy_astra.engine.statistics import COMM, GPU
from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.folding.run import resolve_fold
from simpy_astra.infra.units import bytes_to_gib
from simpy_astra.network.cost_model import network_cost
from simpy_astra.plugins import users_failure
from simpy_astra.report.answer import FOLD_UNDONE
from simpy_astra.report.breakdown import critical, npu_breakdowns
from simpy_astra.report.breakdown_columns import sweep_figures
from simpy_astra.report.recorder import attach
from simpy_astra.simulation import Simulation
from simpy_astra.sweep.point_inputs import load_point, relabel
from simpy_astra.sweep.result_names import TRAINING_NAMES
from simpy_astra.sweep.validity import invalid_figures


def run_point(scenario: dict[str, Any], where: str = "point") -> dict[str, Any]:
    """Figures of one point: max over NPUs of finish, exposed comm, compute, comm, peak memory;
    what the NPU with the largest peak holds at that instant (``peak_weights_gb``, ...); where
    the last NPU's time went (``breakdown_compute_ns``, ..., summing to ``finish_ns``); and the
    network's price (``cost_usd``, :mod:`simpy_astra.network.cost_model`; empty when the price table does
    not cover the network); and the warnings ``run`` would print (``warnings``, one cell). ``where``
    (the sweep file and the point's coordinates) replaces the temporary scenario file's name in an
    error or a warning."""
    t0 = time.perf_counter()
    warned: list[str] = []  # what the point warned of so far: a failed point keeps it too
    try:
        with collected_then_paused():
            inputs = resolve_fold(load_point(scenario))  # a point runs no script: congestion-aware links may fold too
            warned = inputs.warnings
            # no local-memory trace files: every point (in parallel) would write the same names
            # into the working folder; the rows keep each point's peak and its breakdown
            sim = Simulation(inputs, memory_traces=False)
        warned = sim.warnings
        record = attach(sim)
        reports = sim.run()
        warned = sim.warnings  # a folded run that ran again unfolded has a list of its own
        # the last NPU to finish (the lowest id on a tie) is the one whose parts a row keeps:
        # only its breakdown is worked out (a breakdown ends at its NPU's finish, the reports')
        last = min(reports, key=lambda r: (-r.finished_cycles, r.npu_id)).npu_id if reports else None
        breakdowns = npu_breakdowns(record, {r.npu_id: r.finished_cycles for r in reports}, shares=False,
                                    only=last)
        parts = sweep_figures(breakdowns[critical(breakdowns)]) if breakdowns else {}
        peaks = [npu.memory.peak_bytes() for npu in sim.npus if npu.memory is not None]
        cost = network_cost(inputs.network).total_usd
        training = _training(sim)
        held = max((r.memory_breakdown for r in reports if r.memory_breakdown is not None),
                    key=lambda b: sum(b.values()), default=None)
        breakdown = {f"peak_{c}_gb": round(bytes_to_gib(held[c]), 6) if held else None for c in CATEGORIES}
        return {
            "finish_ns": max(r.finished_cycles for r in reports),
            "exposed_comm_ns": max(r.exposed_comm_cycles for r in reports),
            "compute_ns": max(r.times.get(GPU, 0) for r in reports),
            "comm_ns": max(r.times.get(COMM, 0) for r in reports),
            # a Megatron job's memory is its model's (the traces track none): the same GiB
            "peak_memory_gb": round(bytes_to_gib(max(peaks)), 6) if peaks else training.get("memory_per_gpu_gib"),
            "cost_usd": cost,
            **breakdown,
            **parts,
            **training,
            "wall_s": round(time.perf_counter() - t0, 3),
            "status": "ok",
            "error": "",
            "warnings": warnings_cell(warned, where),
        }
    except InvalidConfigurationError as exc:  # a layout Megatron refuses: a result, not a failure
        exc = InvalidConfigurationError(relabel(exc.message, where), exc.rule)
        return {**invalid_figures(exc, where), "wall_s": round(time.perf_counter() - t0, 3),
                "warnings": warnings_cell(warned, where)}
    except BaseException as exc:  # noqa: BLE001 - recorded with the point, the sweep goes on
        theirs = users_failure(exc)  # a plug-in's method that raised mid-run: named as run names it
        if not isinstance(exc, Exception) and (theirs is None or isinstance(exc, KeyboardInterrupt | SystemExit)):
            raise  # a stop (the runner's own, Ctrl-C); a plug-in's GeneratorExit is the point's failure
        text = relabel(theirs or " ".join(str(exc).split()) or "no message", where)
        return {"wall_s": round(time.perf_counter() - t0, 3), "status": "error",
                "error": f"{'PluginError' if theirs else type(exc).__name__}: {text}",
                "warnings": warnings_cell(warned, where)}


def freeze_worker_heap() -> None:
    """Freeze what a sweep worker holds before its first point (the modules, the sweep's inputs
    its fork inherited): it lives as long as the worker, so no collection need scan it again.
    A point's run leaves it frozen (:func:`~simpy_astra.engine.events.fast_collection`) and
    each point's collection (:func:`collected_then_paused`) scans only what points made: the
    ~30,000 objects a worker holds took 13-16 ms a point to scan, 80% of a small Megatron point's
    CPU. Nothing of a point is frozen: a frozen object freed by its last reference is freed, but
    one left in a cycle would stay. Collected first: the fork's garbage is not kept."""
    gc.collect()
    gc.freeze()


class _WorkerHeap:
    """A Dask worker's points in flight and whether its heap is frozen (:func:`heap_frozen_first`):
    one per process, as the heap is."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.frozen = False


_WORKER_HEAP = _WorkerHeap()


@contextmanager
def heap_frozen_first() -> Iterator[None]:
    """One point's run in a worker that no initializer of ours started (a Dask worker; the
    local pool's initializer freezes, :func:`freeze_worker_heap`): its heap is frozen once, at
    the start of a point that no other point runs beside (``dask worker --nthreads N`` runs N:
    one being built would be frozen with it), so that each point's collection scans only what
    points made, as in the pool. What it holds then is the pool's own frozen heap: the modules,
    Dask's, the point's inputs (acyclic: freed when their last reference goes)."""
    heap = _WORKER_HEAP
    with heap.lock:
        if not heap.frozen and heap.running == 0:
            if gc.get_freeze_count() == 0:  # (a pool worker's heap is frozen already)
                freeze_worker_heap()
            heap.frozen = True
        heap.running += 1
    try:
        yield
    finally:
        with heap.lock:
            heap.running -= 1


@contextmanager
def collected_then_paused() -> Iterator[None]:
    """The garbage of the points before collected at once, then no collection while this one
    loads and builds (as ``run``'s start-up, ``__main__``); its run collects as every run does
    (:func:`~simpy_astra.engine.events.fast_collection`). A sweep worker built with the collector
    on: the objects a 16,384-GPU Megatron point makes, which live to its end, set off full
    collections that scanned the worker's heap again and again (0.19-0.44 CPU s of a point
    whose traces are generated; 0.13-0.26 s of one whose traces are cached, about what the one
    collection costs). Paused without the collection first, each point's cycles stayed: the
    worker grew 40 MB a point. The collection skips the worker's frozen heap
    (:func:`freeze_worker_heap`)."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def warnings_cell(warnings: list[str], where: str) -> str:
    """A point's warnings as one results.csv cell: each on one line, joined with `` | ``. A
    folded run that ran again unfolded is left out: ``run`` shows it as a note, not a warning (it
    changes no figure and asks nothing of the user)."""
    return " | ".join(relabel(" ".join(w.split()), where) for w in dict.fromkeys(warnings)
                      if not w.startswith(FOLD_UNDONE))


def _training(sim: Simulation) -> dict[str, Any]:
    """A generated Megatron job's figures (TrainingFigures.as_dict), its memory parts as
    ``memory_<part>_gib`` and ``fits`` as 1 or 0; empty for other workloads."""
    made = sim.training() if sim.reports else None
    if made is None:
        return {}
    figures = made.as_dict()
    parts = figures.pop("memory_gib", {}) or {}
    figures = {k: v for k, v in figures.items() if k in TRAINING_NAMES}
    figures["fits"] = int(figures["fits"])
    return {**figures, **{f"memory_{p}_gib": v for p, v in parts.items() if f"memory_{p}_gib" in TRAINING_NAMES}}
