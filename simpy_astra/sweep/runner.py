"""Run sweep points in parallel: a local process pool, or a Dask cluster with ``--cluster``.

Both engines hand each finished point to ``on_result`` in the main process (which appends it
to results.csv) as soon as it finishes, with the input files that had other contents when the
point ended (checked in the worker, :mod:`simpy_astra.sweep.inputs`). Ctrl-C (SIGINT) or
SIGTERM stops the sweep at once: running workers are terminated *before* the pool is shut
down (shutting down first forgets them on Python < 3.14, and they ran on), queued points are
cancelled, and everything that finished before stays saved. Local workers ignore SIGINT
themselves, so a terminal's Ctrl-C reaches only the main process's clean stop.

No worker outlives the sweep, and none leaves a temporary folder, even if the sweep is
killed with ``kill -9``: on Linux each worker asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``; elsewhere a thread watches the parent), and a worker turns SIGTERM into
an exception that unwinds the running point (its ``with`` blocks remove their folders) and then
exits. Workers make their temporary files in one scratch folder per sweep, removed at the end.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import stopping
from simpy_astra.infra.stopping import Terminated
from simpy_astra.plugins import search_also
from simpy_astra.report.console import Output, fit_wrapped, plain_width
from simpy_astra.sweep.inputs import InputSnapshot
from simpy_astra.sweep.point import freeze_worker_heap, heap_frozen_first, run_point
from simpy_astra.sweep.spec import Point

#: (point, its figures, the inputs that had changed when it ended: its row is suspect if any)
ResultCallback = Callable[[Point, dict[str, Any], list[str]], None]
EXIT_WORKER_STOPPED = 143  # 128 + SIGTERM
PR_SET_PDEATHSIG = 1


@dataclass
class RunOutcome:
    finished: int
    interrupted: bool
    terminated: bool = False  # interrupted by SIGTERM rather than Ctrl-C


#: a pipe or a log gets a line per finished point while a sweep has this many points at most;
#: a larger one (500 points would be 500 lines) gets a line at each tenth of its points and at
#: least every PLAIN_EVERY_S seconds: the counts, the time left and the best point so far.
#: Either way, PLAIN_EVERY_S without a line while points run prints one saying they still run.
PLAIN_POINT_LINES = 50
PLAIN_EVERY_S = 30.0
#: how often the sweep's process wakes while no point finishes, to say so in a pipe
WAKE_EVERY_S = 5.0


def _clock(seconds: float) -> str:
    """``0:01:05``, as the live bar's elapsed and eta columns show time."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _PlainProgress:
    """Progress in a pipe or a log file, nothing redrawn: a line per finished point in a small
    sweep, summary lines in a large one (``clock``: seconds, for the elapsed time and eta)."""

    def __init__(self, stream: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self.total = self.done = self.failed = self.next_tenth = 0
        self.start = self.last_line = 0.0
        self.best: Finished | None = None
        self.best_shown: Finished | None = None

    def __enter__(self) -> _PlainProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _lines(self, head: str, names: list[str], tail: str) -> None:
        """A point's line, broken between its coordinates where it does not fit, never cut."""
        lines = fit_wrapped(names, tail, plain_width(), plain_width() - len(head), indent=" " * 4)
        self._print(head + "\n".join(lines))

    def add_task(self, _name: str, total: int, last: Finished | None, best: Finished | None = None) -> int:
        """``best``: the best of the rows results.csv had before (a resumed sweep's best so
        far may be one of them)."""
        self.total, self.next_tenth = total, 1
        self.best = best
        self.start = self.last_line = self.clock()
        if total > PLAIN_POINT_LINES:
            self._print(_fitting(f"sweep: {total} points: a line at each tenth done and every {PLAIN_EVERY_S:.0f} s",
                                 f"sweep: {total} points: a line a tenth, every {PLAIN_EVERY_S:.0f} s",
                                 f"sweep: {total} points: a line a tenth"))
        return 0

    def update(self, _task: int, advance: int, last: Finished) -> None:
        self.done += advance
        self.failed += not last.ok
        if last.score is not None and (self.best is None or last.score[0] < self.best.score[0]):
            self.best = last
        if self.total <= PLAIN_POINT_LINES:
            head = f"sweep: {self.done}/{self.total} done; "
            self._lines(head, last.names, f": {last.result}")
            self.last_line = self.clock()
            return
        now = self.clock()
        tenth = self.done * 10 // self.total
        # the last point's line would repeat the sweep's summary, printed at once below it
        if self.done == self.total or tenth < self.next_tenth and now - self.last_line < PLAIN_EVERY_S:
            return
        self.next_tenth, self.last_line = tenth + 1, now
        elapsed = now - self.start
        eta = elapsed / self.done * (self.total - self.done)
        failed = f", {self.failed} failed" if self.failed else ""
        counts = f"sweep: {self.done}/{self.total} done{failed}"
        self._print(_fitting(f"{counts}; {_clock(elapsed)} elapsed, eta {_clock(eta)}", f"{counts}; eta {_clock(eta)}"))
        if self.best is not None and self.best is not self.best_shown:  # said again only when it changes
            self.best_shown = self.best
            self._lines("  best so far: ", self.best.names, f": {self.best.score[1]}")


    def waiting(self, running: int) -> None:
        """No point finished for a while: after PLAIN_EVERY_S without a line, say the sweep
        still runs, so a log of one long point is not silent until it ends."""
        now = self.clock()
        if now - self.last_line < PLAIN_EVERY_S:
            return
        self.last_line = now
        points = "point" if running == 1 else "points"
        counts = f"sweep: {self.done}/{self.total} done"
        self._print(_fitting(f"{counts}; {_clock(now - self.start)} elapsed; {running} {points} running",
                             f"{counts}; {running} running"))


def _fitting(*wordings: str) -> str:
    """The first wording within :func:`plain_width` (the longest first), else the last."""
    width = plain_width()
    return next((w for w in wordings if len(w) <= width), wordings[-1])


def _progress(out: Output) -> Any:
    """A live bar on a terminal; plain lines anywhere else (a line per point in a small sweep)."""
    if out.console is None:
        return _PlainProgress(out.stream)
    # deferred: sweep.live loads rich; only a sweep that shows live progress needs it
    from simpy_astra.sweep.live import live_progress

    return live_progress(out.console)


@dataclass(frozen=True)
class Finished:
    """A finished point as the progress shows it: its coordinates and its figure (or "error")."""

    coords: str
    result: str
    ok: bool
    terse: str = ""  # the coordinates in fewer columns
    score: tuple[float, str] | None = None  # its objective and how it reads; None: not ranked

    @property
    def names(self) -> list[str]:
        """The ways to name the point, the most telling first (:func:`fit_first`)."""
        return [self.coords, self.terse] if self.terse else [self.coords]


#: a finished point's objective and how it reads (``32,815,460 ns``, ``-mfu = -0.379``), None
#: where it has none; a point too large for its GPU is shown by it but never ranked
Scorer = Callable[[Point, dict[str, Any]], "tuple[float, str] | None"]


def best_before(rows: list[tuple[Point, dict[str, Any]]], score: Scorer | None) -> Finished | None:
    """The best of the points that have a row already (in sweep order; the first of a tie), as
    the progress names its best so far; None without one or without a ``score``."""
    scored = [(label.score[0], i, label) for i, (point, figures) in enumerate(rows)
              if (label := _label(point, figures, score)).score is not None]
    return min(scored, key=lambda s: s[:2])[2] if scored else None


def _label(point: Point, figures: dict[str, Any], score: Scorer | None = None) -> Finished:
    """The point as its lines name it (``tp=4 pp=2 vp=off``) and its figure, or its status."""
    coords = point.label
    if figures.get("status") != "ok":
        return Finished(coords, str(figures.get("status") or "error"), ok=False, terse=point.terse)
    scored = score(point, figures) if score else None
    figure = scored[1] if scored else f"{figures['finish_ns']:,} ns"  # what the sweep ranks by
    if figures.get("fits") == 0:  # never named best: said as it finishes
        return Finished(coords, f"{figure} (too large)", ok=True, terse=point.terse)
    return Finished(coords, figure, ok=True, terse=point.terse, score=scored)


# ------------------------------------------------------------------ inside a worker process
class _Stop(BaseException):
    """Raised in a worker by SIGTERM: unwinds the running point, then the worker exits."""


_busy = False
_scratch: str | None = None


def _exit_worker() -> None:
    if _scratch is not None:
        shutil.rmtree(_scratch, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(_scratch))  # the sweep's scratch root, once every worker left
        except OSError:
            pass
    os._exit(EXIT_WORKER_STOPPED)


def _on_sigterm(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one unwinding is enough
    if _busy:
        if stopping.stop_engines(_Stop):  # from the engine's loop: a user's process cannot catch it
            return
        raise _Stop()
    _exit_worker()


def _die_with_parent(parent: int) -> None:
    """SIGTERM this worker when the sweep's process dies, however it dies."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
        else:
            if os.getppid() != parent:  # it died before the request took effect
                _exit_worker()
            return

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


def _init_worker(parent: int, scratch_root: str, close_fds: tuple[int, ...]) -> None:
    global _scratch
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    for fd in close_fds:  # e.g. the output folder's lock: it must die with the sweep, not with us
        try:
            os.close(fd)
        except OSError:
            pass
    _scratch = tempfile.mkdtemp(prefix=f"worker-{os.getpid()}-", dir=scratch_root)
    tempfile.tempdir = _scratch
    _die_with_parent(parent)
    freeze_worker_heap()  # last: what the worker holds before its points, for its life


def run_point_checked(scenario: dict[str, Any], where: str,
                      inputs: InputSnapshot) -> tuple[dict[str, Any], list[str]]:
    """The point's figures, and which inputs differed from the sweep's start when it ended."""
    for folder in inputs.module_folders:  # the user's modules beside the base scenario, as run finds them
        search_also(folder)
    with heap_frozen_first():  # a Dask worker's, at its first point (the pool's initializer froze its own)
        figures = run_point(scenario, where)
    return figures, inputs.changed()


def _work(scenario: dict[str, Any], where: str, inputs: InputSnapshot) -> tuple[dict[str, Any], list[str]]:
    global _busy
    try:
        _busy = True
        try:
            return run_point_checked(scenario, where, inputs)
        finally:
            _busy = False
    except _Stop:  # wherever SIGTERM landed: the point's folders are gone, now leave
        _exit_worker()
        raise  # not reached


# ------------------------------------------------------------------ in the sweep's process
def _worker_context():
    """fork where the platform has it: workers start fast and inherit the parent's registered
    workload generators; the pool forks every worker before it starts its own thread."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the running workers, then shut the pool down, then wait until they and the
    pool's manager thread are gone.

    The manager thread must be joined here: on Python < 3.12 the interpreter's exit wakes every
    manager thread still registered without the pool's lock, and a thread that closes its wake-up
    pipe at that moment makes the exit print ``OSError: [Errno 9] Bad file descriptor``."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    for process in processes:
        if process.is_alive():
            process.terminate()  # SIGTERM: the worker unwinds its point and exits
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)
    if manager is not None:
        manager.join(timeout=30)  # its workers are gone: it notices, closes its pipes and ends


def run_local(points: list[Point], jobs: int, inputs: InputSnapshot, on_result: ResultCallback, out: Output,
              where: Callable[[Point], str] = lambda p: p.key, close_fds: tuple[int, ...] = (),
              score: Scorer | None = None, best: Finished | None = None) -> RunOutcome:
    """``best``: the best of the rows there before (:func:`best_before`), the first best so far."""
    if not points:  # every point has its row already: no workers, no progress of nothing
        return RunOutcome(0, interrupted=False)
    finished = 0
    completed = False
    pool: ProcessPoolExecutor | None = None
    scratch_root = tempfile.mkdtemp(prefix="simpy-astra-sweep-")
    try:
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_worker_context(), initializer=_init_worker,
                                   initargs=(os.getpid(), scratch_root, close_fds))
        pending = {pool.submit(_work, p.scenario, where(p), inputs): p for p in points}
        order = {future: i for i, future in enumerate(pending)}
        with _progress(out) as progress:
            task = progress.add_task("sweep", total=len(points), last=None, best=best)
            while pending:
                done, _ = wait(pending, timeout=WAKE_EVERY_S, return_when=FIRST_COMPLETED)
                if not done:
                    # the pool marks a point running once queued for a worker: one more than it runs
                    progress.waiting(min(jobs, sum(future.running() for future in pending)))
                # results before failures: a dead worker must not lose points finished beside it;
                # then in sweep order (several may finish between two wakes of a busy machine)
                for future in sorted(done, key=lambda f: (f.exception() is not None, order[f])):
                    point = pending.pop(future)
                    try:
                        figures, changed = future.result()
                    except BrokenProcessPool:
                        raise InputError(
                            "a worker process died (killed, or out of memory) while running points; the "
                            "finished points are saved: start the same command again to run the rest, "
                            "perhaps with fewer --jobs") from None
                    on_result(point, figures, changed)
                    finished += 1
                    progress.update(task, advance=1, last=_label(point, figures, score))
        completed = True
    except KeyboardInterrupt as exc:
        return RunOutcome(finished, interrupted=True, terminated=isinstance(exc, Terminated))
    finally:
        if pool is None:  # stopped before the pool existed
            pass
        elif completed:
            pool.shutdown(wait=True)
        else:  # interrupted or failed: running points stopped now, queued ones dropped
            _stop_workers(pool)
        shutil.rmtree(scratch_root, ignore_errors=True)
    return RunOutcome(finished, interrupted=False)


def connect_cluster(address: str) -> Any:
    """A client of the Dask scheduler at ``address``; the sweep connects before it writes a point
    or prints a line, so that a wrong address is one error line and nothing else."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--cluster needs Dask: pip install 'simpy-astra[sweep]'") from None
    client = Client.__new__(Client)  # held before it starts, so that a failed start can be closed
    try:
        client.__init__(address, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        # Dask leaves a client whose address it could not parse open; closed later by the garbage
        # collector on whatever thread, it can deadlock the next client's starting event loop
        client.close()
        raise InputError(f"--cluster {address}: cannot connect to a Dask scheduler ({exc}); start one "
                         f"with 'dask scheduler' and workers with 'dask worker ADDRESS'") from None
    # a lost scheduler is said in one line (run_cluster); Dask's client logged each failed
    # reconnect with its tracebacks
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    return client  # (none returned: the sweep said it ran on the cluster and ran every point here)


def run_cluster(points: list[Point], client: Any, inputs: InputSnapshot, on_result: ResultCallback, out: Output,
                where: Callable[[Point], str] = lambda p: p.key, score: Scorer | None = None,
                best: Finished | None = None) -> RunOutcome:
    """The same points on a Dask cluster (``client``, from connect_cluster; the caller closes
    it); workers need simpy-astra installed and the base scenario's files (ET traces, configs)
    at the same paths (a shared file system)."""
    if not points:  # as run_local
        return RunOutcome(0, interrupted=False)
    from distributed import as_completed

    finished = 0
    futures: dict[Any, Point] = {}
    try:
        futures = {client.submit(run_point_checked, p.scenario, where(p), inputs, key=f"simpy-astra-point-{p.key}",
                                 pure=False): p for p in points}
        with _progress(out) as progress:
            task = progress.add_task("sweep", total=len(points), last=None, best=best)
            for future in as_completed(futures):
                point = futures[future]
                try:
                    figures, changed = future.result()
                except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: recorded with the point
                    _scheduler_kept(exc, client, finished, len(points))
                    text = " ".join(str(exc).split()) or "no message"
                    figures, changed = {"status": "error", "error": f"{type(exc).__name__}: {text}"}, []
                on_result(point, figures, changed)
                finished += 1
                progress.update(task, advance=1, last=_label(point, figures, score))
    except KeyboardInterrupt as exc:
        client.cancel(list(futures))
        return RunOutcome(finished, interrupted=True, terminated=isinstance(exc, Terminated))
    return RunOutcome(finished, interrupted=False)


def _scheduler_kept(exc: Exception, client: Any, finished: int, total: int) -> None:
    """Nothing where ``exc`` is the point's own failure; an error where the sweep lost its
    scheduler: every point left was recorded as failed ('FutureCancelledError ... scheduler-
    connection-lost', exit 0), and a resumed sweep ran none of them again without
    --retry-failed. The points left keep no row, so running the sweep again runs them. A point
    whose result was being gathered as the scheduler went fails with the closed connection
    (CommClosedError) before the client sees it gone: the scheduler's loss too, not the point's."""
    from distributed.comm import CommClosedError

    lost = getattr(exc, "reason", None) == "scheduler-connection-lost" or isinstance(exc, CommClosedError)
    if not lost and client.status == "running":
        return
    raise InputError(f"--cluster: the sweep lost its Dask scheduler after {finished} of {total} points (their rows "
                     f"are kept); start the scheduler and its workers again, and run the same command to run the "
                     f"rest") from None
