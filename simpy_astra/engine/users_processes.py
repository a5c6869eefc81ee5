"""The user's own processes on a run's environment (docs/cosimulation.md), each held to letting
simulated time pass: one that loops within an instant (``yield env.timeout(0)`` in a ``while``
without an exit) held the clock there, and ``sim.run()`` never returned, since the stall
watchdog wakes at later instants only. It is stopped in one line naming its function and the
line it loops at.

Held: the processes that have not started when ``run()`` is called
(:meth:`UsersProcesses.hold_queued`), and those that a held process, an ``on()`` callback or a
user's watcher of an element's probe point (``link.watch("link_start", fn)``) starts while the
run runs (:meth:`~UsersProcesses.hold_started_now`, after each step of one, after each call of
the others). Only those whose generator is the user's code; ours run as they are, and a run with
none of these pays nothing per event. Not held: a process started from a callback the user
appends to a SimPy event itself (SimPy calls it from ``Environment.step``, which nothing here
wraps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from simpy_astra.engine.events import rewrap_processes_starting_now, rewrap_starting_processes
from simpy_astra.plugins import instants_pass, is_users_file


class UsersProcesses:
    """The holding of the user's processes on ``env`` (the module docstring)."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self._users: dict[Any, bool] = {}  # by code object: a run starts thousands of processes of a few functions

    def hold_queued(self) -> None:
        """Hold every process queued to start."""
        rewrap_starting_processes(self.env, self._held)

    def hold_started_now(self) -> None:
        """Hold the processes started in this instant (read from the top of SimPy's queue)."""
        rewrap_processes_starting_now(self.env, self._held)

    def calling(self, callback: Callable[..., None]) -> HeldCall:
        """``callback`` (an ``on()`` callback, a watcher of the user's), followed by
        :meth:`hold_started_now`."""
        return HeldCall(callback, self.env, self._held)

    def _held(self, _process: simpy.Process, generator: Any) -> Any:
        code = getattr(generator, "gi_code", None)
        if code is None:
            return None
        users = self._users.get(code)
        if users is None:
            users = self._users[code] = is_users_file(code.co_filename)
        if not users:
            return None  # ours, and a generator already held (its code is ours)
        return instants_pass(self.env, generator, f"process '{code.co_name}'", "wait for what it polls (yield "
                             "env.timeout(t) with t > 0, or an event)", after_step=self.hold_started_now)


class HeldCall:
    """A user's callback, then the holding of the processes it started in the instant; equal to
    the callback, so an element's ``probe_<point>`` list reads as the watchers given and
    ``unwatch(point, fn)`` finds it."""

    __slots__ = ("callback", "_env", "_held")

    def __init__(self, callback: Callable[..., None], env: simpy.Environment,
                 held: Callable[[simpy.Process, Any], Any]) -> None:
        self.callback, self._env, self._held = callback, env, held

    def __call__(self, *args: Any) -> None:
        self.callback(*args)
        rewrap_processes_starting_now(self._env, self._held)

    def __eq__(self, other: object) -> bool:
        return self.callback == (other.callback if isinstance(other, HeldCall) else other)

    def __hash__(self) -> int:
        return hash(self.callback)

    def __repr__(self) -> str:
        return repr(self.callback)
