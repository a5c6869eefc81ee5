"""Probe points: the one way to watch a run without changing it.

An element of the model (an NPU, a system layer, the message board, a link, a port, a
switch) names its probe points in ``PROBES`` and emits to them where the milestone
happens. Until someone calls :meth:`Probed.watch`, a point is ``None`` on the class and
emitting costs one attribute test::

    watchers = self.probe_node_end
    if watchers is not None:
        for watcher in watchers:
            watcher(node_id, now)

Observers (:mod:`simpy_astra.running.observe`, the trace recorder in
:mod:`simpy_astra.report.recorder`, per-job link bytes in :mod:`simpy_astra.running.jobs`) subscribe;
nobody rebinds an element's methods. A watcher runs inside the model's event: it must not
change the model (do that from a process, e.g. one reading a ``sim.stream``).

What each point passes, by element:

* ``Npu``: ``node_start(node_id, now_ns)``, ``node_end(node_id, now_ns)``;
* ``SystemLayer``: ``collective_start(kind, size_bytes)``, ``collective_end(kind,
  size_bytes)``, ``phase_started(stream, now_ns)``, ``stream_moved(stream, now_ns)``;
* ``MessageBoard``: ``message_sent(src, dst, tag, size_bytes)``,
  ``message_delivered(src, dst, tag, size_bytes)``;
* a link or port (:class:`~simpy_astra.network.link_resource.LinkResource`): ``link_start(link,
  key, size_bytes)`` when a network message's bytes start on it, ``link_end(link, key,
  size_bytes)`` when they leave it (``key``: the message board's entry, whose
  ``ident`` is (tag, src, dst, bytes); None for background traffic). A user's own
  ``put()`` is not a network message and is not emitted;
* a switch (:class:`~simpy_astra.network.switch.SwitchElement`): ``switch_forward(switch,
  key, size_bytes)`` when it hands a message on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import simpy

from simpy_astra.engine.users_processes import UsersProcesses
from simpy_astra.plugins import call_makes, class_call, is_ours, shown, unfit_call

#: what each probe point passes its watchers (the list above)
ARGUMENTS = {"node_start": ("node_id", "now_ns"), "node_end": ("node_id", "now_ns"),
             "collective_start": ("kind", "size_bytes"), "collective_end": ("kind", "size_bytes"),
             "phase_started": ("stream", "now_ns"), "stream_moved": ("stream", "now_ns"),
             "message_sent": ("src", "dst", "tag", "size_bytes"),
             "message_delivered": ("src", "dst", "tag", "size_bytes"),
             "link_start": ("link", "key", "size_bytes"), "link_end": ("link", "key", "size_bytes"),
             "switch_forward": ("switch", "key", "size_bytes")}


def check_watcher(fn: Any, called: str, args: tuple[str, ...], where: str) -> None:
    """Refuse, as ``where`` (``watch('link_start', fn)``), a watcher the point cannot call as
    ``called(args)``: one that is not callable, takes other parameters (it failed in the run's
    first milestone, inside the element's code) or is a generator or async function (called, it
    returns a generator or coroutine and runs none of its lines: every milestone dropped in
    silence)."""
    if not callable(fn):
        raise TypeError(f"{where}: {called} must be callable, taking ({', '.join(args)}) (got {shown(fn)})")
    made = call_makes(fn)
    if made:
        returned = {"a generator function": "a generator", "an async function": "a coroutine"}.get(made, "an async generator")
        name = getattr(fn, "__qualname__", None) or (f"{type(fn).__qualname__}.__call__" if class_call(fn) else shown(fn))
        raise TypeError(f"{where}: {name} is {made}: called, it returns {returned} "
                        f"and runs none of its lines; give a plain function, or read sim.stream(kind) "
                        f"from a process of yours (yield store.get())")
    unfit = unfit_call(fn, *args)
    if unfit:
        raise TypeError(f"{where}: {unfit} cannot be called as {called}({', '.join(args)})")


class Probed:
    """An element with probe points ``PROBES``; each is the attribute ``probe_<point>``: None
    on the class while nobody watches, a list of callables once someone does."""

    PROBES: ClassVar[tuple[str, ...]] = ()

    def watch(self, point: str, fn: Callable[..., Any]) -> None:
        """Call ``fn(...)`` at every emission of ``point`` on this element (see the module
        docstring for what each point passes)."""
        if point not in self.PROBES:
            raise ValueError(f"{type(self).__name__} has no probe point '{point}' "
                             f"(it has: {', '.join(self.PROBES) or 'none'})")
        if not is_ours(fn):  # ours watch every element: held by tests
            check_watcher(fn, "fn", ARGUMENTS[point], f"watch({point!r}, fn)")
            # a process it starts is held to letting time pass, as one an on() callback starts
            fn = UsersProcesses(self.probe_environment()).calling(fn)
        name = "probe_" + point
        setattr(self, name, [*(getattr(self, name) or ()), fn])  # a new list: see unwatch

    def unwatch(self, point: str, fn: Callable[..., Any]) -> None:
        """Stop calling ``fn`` at ``point``; the point costs one test again once nobody watches.
        The list is replaced, not changed, so a watcher that unwatches itself (or another)
        during an emission leaves that emission's loop whole: every other watcher still runs."""
        name = "probe_" + point
        watchers = getattr(self, name, None)
        if watchers and fn in watchers:  # a user's watcher is kept held (watch), equal to fn
            rest = list(watchers)
            rest.remove(fn)
            setattr(self, name, rest or None)

    def probe_environment(self) -> simpy.Environment:
        """The environment the element runs on (where a user's watcher may start a process)."""
        return self.env

