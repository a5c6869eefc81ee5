"""Run sweep points in parallel: a local process pool, or a Dask cluster with ``--cluster``.

Both engines hand each finished point to ``on_result`` in the main process (which appends it
to results.csv) as soon as it finishes. Ctrl-C (SIGINT) stops the sweep: queued points are
cancelled, running ones are abandoned (workers are terminated locally, futures cancelled on
a cluster), and everything that finished before stays saved. Local workers ignore SIGINT
themselves so a terminal's Ctrl-C reaches only the main process's clean stop.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simpy_astra.errors import InputError
from simpy_astra.sweep.point import run_point
from simpy_astra.sweep.spec import Point

ResultCallback = Callable[[Point, dict[str, Any]], None]


@dataclass
class RunOutcome:
    finished: int
    interrupted: bool


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("points"),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                    TextColumn("{task.fields[last]}"), console=console)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Stop running points now (Python 3.14 has ``terminate_workers``; older ones do not)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _worker_context():
    """fork where the platform has it: workers start fast and inherit the parent's registered
    workload generators; the pool forks every worker before it starts its own thread."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def run_local(points: list[Point], jobs: int, on_result: ResultCallback, console: Console) -> RunOutcome:
    finished = 0
    completed = False
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_worker_context(), initializer=_ignore_sigint)
    try:
        pending = {pool.submit(run_point, p.scenario): p for p in points}
        with _progress(console) as progress:
            task = progress.add_task("sweep", total=len(points), last="")
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                # results before failures: a dead worker must not lose points finished beside it
                for future in sorted(done, key=lambda f: f.exception() is not None):
                    point = pending.pop(future)
                    try:
                        figures = future.result()
                    except BrokenProcessPool:
                        raise InputError(
                            "a worker process died (killed, or out of memory) while running points; the "
                            "finished points are saved: start the same command again to run the rest, "
                            "perhaps with fewer --jobs") from None
                    on_result(point, figures)
                    finished += 1
                    progress.update(task, advance=1, last=_label(point, figures))
        completed = True
    except KeyboardInterrupt:
        return RunOutcome(finished, interrupted=True)
    finally:
        if completed:
            pool.shutdown(wait=True)
        else:  # interrupted or failed: queued points are dropped, running ones stopped now
            pool.shutdown(wait=False, cancel_futures=True)
            _terminate_workers(pool)
    return RunOutcome(finished, interrupted=False)


def run_cluster(points: list[Point], address: str, on_result: ResultCallback, console: Console) -> RunOutcome:
    """The same points on a Dask cluster; workers need simpy-astra installed and the base
    scenario's files (ET traces, configs) at the same paths (a shared file system)."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError("--cluster needs Dask: pip install 'simpy-astra[sweep]'") from None
    try:
        client = Client(address, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"--cluster {address}: cannot connect to a Dask scheduler ({exc}); start one "
                         f"with 'dask scheduler' and workers with 'dask worker ADDRESS'") from None
    finished = 0
    futures: dict[Any, Point] = {}
    try:
        futures = {client.submit(run_point, p.scenario, key=f"simpy-astra-point-{p.key}", pure=False): p
                   for p in points}
        with _progress(console) as progress:
            task = progress.add_task("sweep", total=len(points), last="")
            for future in as_completed(futures):
                point = futures[future]
                try:
                    figures = future.result()
                except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: recorded with the point
                    figures = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
                on_result(point, figures)
                finished += 1
                progress.update(task, advance=1, last=_label(point, figures))
    except KeyboardInterrupt:
        client.cancel(list(futures))
        return RunOutcome(finished, interrupted=True)
    finally:
        client.close()
    return RunOutcome(finished, interrupted=False)


def _label(point: Point, figures: dict[str, Any]) -> str:
    coords = " ".join(f"{v}" for v in point.coordinates.values())
    if figures.get("status") != "ok":
        return f"[red]{coords}: error[/red]"
    return f"{coords}: {figures['finish_ns']:,} ns"
