"""One handler for Ctrl-C (SIGINT) and SIGTERM: every command stops within a second, with one
line and a documented exit status (130 for SIGINT, 143 for SIGTERM, as a shell reports a
process killed by them), and no traceback.

Outside a simulation the handler raises :class:`Stopped` where the program is. Inside one it
raises nothing in place: SimPy's ``Process._resume`` catches ``BaseException``, so an exception
raised in a process's code would fail that one process (and a user collective that loops could
catch it); instead the handler puts a stop event on the running environment's queue, in this
instant ahead of every other (:data:`STOP_PRIORITY`), whose callback raises
:class:`Stopped`: SimPy's loop (the one ``Simulation.run`` drives) processes it before its
next event, and an exception from an event's callback (not a process's) leaves ``env.run``. No per-event check costs anything. Code stuck
inside one event (a user generator that never yields) is interrupted in place a second later;
a third signal ends the process at once.

Outputs are written whole or not at all (:func:`simpy_astra.infra.files.open_output`), and
generators remove the traces they had written (:class:`~simpy_astra.workloads.trace_output.TraceFiles`),
so a stopped command leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from simpy.events import Event

EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
#: how long code stuck inside one event may go on after the first signal
GRACE_S = 1.0


class Stopped(KeyboardInterrupt):
    """The user stopped the command (a ``KeyboardInterrupt``, so ``except Exception`` in user
    code cannot swallow it)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.signum == signal.SIGTERM else EXIT_INTERRUPTED

    def line(self) -> str:
        name = "SIGTERM" if self.signum == signal.SIGTERM else "SIGINT (Ctrl-C)"
        return (f"interrupted: stopped by {name}; files not yet written were not written "
                f"(exit status {self.exit_code})")


class Terminated(KeyboardInterrupt):
    """SIGTERM in a sweep's process, taken down the same path as Ctrl-C. Defined here, in a
    module loaded before any handler is installed: a handler that imported it could be run
    while that import was half done (a signal in the first second), and failed with an
    ImportError instead of stopping."""


_signals: list[int] = []  # signals received since install()
_engines: list[Any] = []  # SimPy environments running now (innermost last)
_timer: list[threading.Timer] = []


def requested() -> int | None:
    """The first signal received, or None."""
    return _signals[0] if _signals else None


#: the stop event's priority on SimPy's queue: before every other event of the instant
#: (SimPy's own are URGENT = 0 and NORMAL = 1), so no further model code runs first
STOP_PRIORITY = -1


def _stop_soon(env: Any, make: Callable[[], BaseException]) -> None:
    """Have ``env``'s loop raise ``make()`` before its next event: a stop event scheduled
    now, ahead of the instant's others, whose callback raises (a callback's exception is
    not caught by SimPy, so it leaves ``env.run``)."""
    def stop(_event: Any) -> None:
        raise make()

    event = Event(env)
    event.callbacks.append(stop)
    env.schedule(event, STOP_PRIORITY)


def stop_engines(make: Callable[[], BaseException]) -> bool:
    """Make every running engine raise ``make()`` from its loop before its next event (for a
    handler of its own, e.g. a sweep worker's SIGTERM); False when no engine runs."""
    if not _engines:
        return False
    for env in _engines:
        _stop_soon(env, make)
    return True


def _handler(signum: int, _frame: Any) -> None:
    _signals.append(signum)
    if len(_signals) >= 3:  # stuck where not even an exception reaches: leave now
        stopped = Stopped(_signals[0])
        with contextlib.suppress(OSError):
            os.write(2, (stopped.line() + "\n").encode())
        os._exit(stopped.exit_code)
    if len(_signals) == 1:  # code that catches the stop (a builder's except BaseException) gets more
        _resend_later(signum, 2)
    if _engines and len(_signals) == 1:
        first = _signals[0]
        for env in _engines:  # the engine's loop raises before its next event
            _stop_soon(env, lambda: Stopped(first))
        return
    raise Stopped(_signals[0])


def _resend_later(signum: int, times: int) -> None:
    timer = threading.Timer(GRACE_S, _resend, (signum, times))
    timer.daemon = True
    _timer.append(timer)
    timer.start()


def _resend(signum: int, times: int) -> None:
    """Still running a second after the signal (one event never ends, or the user's code
    caught the stop): signal again, ``times`` times a second apart; the third signal ends
    the process at once."""
    _timer.clear()
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), signum)
    if times > 1:
        _resend_later(signum, times - 1)


#: the command is the process's (``python -m simpy_astra``): it leaves once the command ends
_process_ends: list[bool] = []


def process_ends_after() -> None:
    """This process ends when its command does (not a test or a script calling the CLI's main)."""
    _process_ends.append(True)


def install() -> Callable[[], None]:
    """Handle SIGINT and SIGTERM (those not ignored, e.g. by nohup) until the returned function
    is called; only the main thread can. Forgets signals received before."""
    _signals.clear()
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old = signal.getsignal(sig)
        if old is not signal.SIG_IGN:
            previous[sig] = old
            signal.signal(sig, _handler)

    def restore() -> None:
        """Hand the signals back; in a process that ends with the command (:func:`process_ends_after`),
        after a stop ignore them instead: a Ctrl-C held down would otherwise raise
        KeyboardInterrupt (a traceback, exit -2) in the last flush on its way out."""
        _cancel_timer()
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_IGN if _signals and _process_ends else old)

    return restore


def _cancel_timer() -> None:
    while _timer:
        _timer.pop().cancel()


@contextlib.contextmanager
def engine(env: Any) -> Iterator[None]:
    """Around ``env.run``: a signal stops the run from the engine's loop, whatever the
    processes' code catches."""
    if _signals:
        raise Stopped(_signals[0])
    _engines.append(env)
    try:
        yield
    finally:
        _engines.remove(env)
        if not _engines:
            _cancel_timer()


_holding: list[bool] = []  # signals_held() entered and not yet left
_held_stop: list[BaseException] = []  # the stop a handler raised meanwhile


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """A stop a signal handler raises (:func:`raise_stop`) held back, and raised as this ends,
    around a few lines that must not be cut between: a sweep's row written to its file and
    counted as saved (a stop between the two said one point fewer was saved than the file
    held). Held in Python, not by the signal mask: the interpreter runs handlers in the main
    thread whichever thread the signal reached."""
    _holding.append(True)
    try:
        yield
    finally:
        _holding.pop()
        if not _holding and _held_stop:
            raise _held_stop.pop()


def raise_stop(stop: BaseException) -> None:
    """Raise ``stop`` from a signal handler, or hold it until :func:`signals_held` ends."""
    if _holding:
        _held_stop[:] = [stop]
        return
    raise stop
