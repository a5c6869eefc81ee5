"""Matching sends with receives, as ASTRA-sim's analytical front end does.

A message is identified by (tag, src, dst, bytes) and its sequence number among messages
with the same identity: the k-th send matches the k-th receive. When a message arrives the
sender's callback runs first, then the receiver's if the receive was already posted;
otherwise the arrival is remembered and a later receive completes 0 ns after it is posted.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable
from typing import Any

import simpy

from simpy_astra.engine.events import call_after, call_later
from simpy_astra.engine.probes import Probed
from simpy_astra.infra.horizon import whole_ns

Handler = Callable[[Any], None] | None

#: how :meth:`MessageBoard.unmatched` begins a send and a receive left between the same NPUs
MISMATCH = "a send and a receive did not match"


class _Entry:
    """One message: who posted its send and its receive so far, and whether it arrived.

    The entry object itself is the key the backend hands back to :meth:`MessageBoard.arrived`;
    it is also a SimPy callback (``entry(event)`` = it arrived), so a backend may hang it on
    the arrival event directly."""

    # ``due``: set by :meth:`MessageBoard.arrive_after` alone (left unset, not read, on our backends' path)
    __slots__ = ("board", "ident", "order", "send_fn", "send_arg", "recv_fn", "recv_arg", "arrived", "due")

    def __init__(self, board: MessageBoard, ident: tuple, order: int) -> None:
        self.board = board
        self.ident = ident
        self.order = order
        self.send_fn: Handler = None
        self.send_arg: Any = None
        self.recv_fn: Handler = None
        self.recv_arg: Any = None
        self.arrived = False

    def __call__(self, _event: simpy.Event | None = None) -> None:
        """This message reached its destination: the sender's callback first, then the
        receiver's if its receive was posted, else the arrival is remembered."""
        board = self.board
        board.delivered += 1
        watchers = board.probe_message_delivered
        if watchers is not None:
            tag, src, dst, size = self.ident
            for watcher in watchers:
                watcher(src, dst, tag, size)
        if self.send_fn is not None:
            self.send_fn(self.send_arg)
        if self.recv_fn is not None:
            self.recv_fn(self.recv_arg)
        else:
            self.arrived = True


def _misuse(problem: str) -> Exception:
    """The one-line error for a backend of one's own that misused the board, naming its class
    (the caller two frames up: its ``send``) when it has one."""
    from simpy_astra.plugins import PluginError, class_name

    caller = inspect.currentframe().f_back.f_back
    owner = caller.f_locals.get("self") if caller is not None else None
    who = f"network backend '{class_name(type(owner))}', {caller.f_code.co_name}(): " if owner is not None else ""
    return PluginError(f"{who}{problem}")


class MessageBoard(Probed):
    """Pending sends and receives of every NPU of one run.

    The k-th send of an identity matches its k-th receive, so per identity one FIFO of
    entries posted by one side waits for the other side; at most one of the two FIFOs of an
    identity is non-empty. No sequence numbers, no lookups on arrival. A FIFO of one entry
    (almost every one: a message's first side waits for its other) is the entry itself, a
    deque only from the second on: a deque made and freed per message cost ~2% of a run. Every backend posts
    its messages here, so its probe points (:mod:`simpy_astra.engine.probes`) see every message:
    ``message_sent`` and ``message_delivered`` (in a folded run, as the representatives
    exchange them)."""

    PROBES = ("message_sent", "message_delivered")
    probe_message_sent: list | None = None
    probe_message_delivered: list | None = None

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self._sends_waiting: dict[tuple, _Waiting] = {}  # sends without a receive yet
        self._recvs_waiting: dict[tuple, _Waiting] = {}  # receives without a send yet
        self._posted = 0  # sends
        self.delivered = 0  # sends that reached their destination
        self._created = 0  # entries, to list unmatched ones in the order they were posted

    def post_send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> _Entry:
        """Register a send; returns the key the backend hands back to :meth:`arrived`."""
        watchers = self.probe_message_sent
        if watchers is not None:
            for watcher in watchers:
                watcher(src, dst, tag, size)
        ident = (tag, src, dst, size)
        waiting = self._recvs_waiting
        entry = waiting.get(ident)
        if entry is None:  # the first side of the message: it waits (inlined: once per message)
            entry = _Entry(self, ident, self._created)
            self._created += 1
            waiting = self._sends_waiting
            if (first := waiting.get(ident)) is None:
                waiting[ident] = entry
            else:
                _queue_behind(waiting, ident, first, entry)
        elif type(entry) is _Entry:
            del waiting[ident]
        else:
            entry = _take_first(waiting, ident, entry)
        self._posted += 1
        entry.send_fn = fn
        entry.send_arg = arg
        return entry

    def post_recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        ident = (tag, src, dst, size)
        waiting = self._sends_waiting
        entry = waiting.get(ident)
        if entry is None:  # (as in post_send)
            entry = _Entry(self, ident, self._created)
            self._created += 1
            waiting = self._recvs_waiting
            if (first := waiting.get(ident)) is None:
                waiting[ident] = entry
            else:
                _queue_behind(waiting, ident, first, entry)
        else:
            if type(entry) is _Entry:
                del waiting[ident]
            else:
                entry = _take_first(waiting, ident, entry)
            if entry.arrived:
                call_later(self.env, 0, fn, arg)
                return
        entry.recv_fn = fn
        entry.recv_arg = arg

    def arrived(self, entry: _Entry) -> None:
        """The message ``entry`` (from :meth:`post_send`) reached its destination."""
        entry()

    def schedule_arrival(self, delay_ns: int, entry: _Entry) -> None:
        """Schedule the arrival of ``entry`` (from :meth:`post_send`) ``delay_ns`` (whole ns >= 0,
        checked by the caller: our backends) from now."""
        call_after(self.env, delay_ns, entry)

    def arrive_after(self, delay_ns: float, entry: _Entry) -> None:
        """:meth:`schedule_arrival` for a backend of one's own (docs/backends.md): ``delay_ns`` a
        finite number >= 0 within the horizon, a fraction cut to whole ns; ``entry`` what this
        board's :meth:`post_send` returned. Anything else is one line naming the caller."""
        if whole_ns(delay_ns) is None:  # numpy's, a Fraction's and a Decimal's taken as Python's
            raise _misuse(f"board.arrive_after({delay_ns!r}, entry): the delay must be a finite number of ns "
                          f">= 0 (whole ns from now; a fraction is cut)")
        if type(entry) is not _Entry or entry.board is not self:
            raise _misuse(f"board.arrive_after(delay, {entry!r}): the entry must be what "
                          f"entry = self.board.post_send(src, dst, tag, size, fn, arg) returned")
        if getattr(entry, "due", None) is not None:
            tag, src, dst, size = entry.ident
            raise _misuse(f"board.arrive_after({delay_ns!r}, entry): the message of {size} B from NPU {src} to NPU "
                          f"{dst} (tag {tag}) was already given its arrival, at {entry.due:,} ns: "
                          f"call arrive_after once per entry")
        entry.due = self.env.now + int(delay_ns)
        call_after(self.env, int(delay_ns), entry)

    def messages_sent(self) -> int:
        """How many sends were posted."""
        return self._posted

    def in_flight(self) -> int:
        """Sends posted that have not reached their destination yet."""
        return self._posted - self.delivered

    def unmatched(self, describe: Callable[[Handler, Any], str | None] | None = None) -> list[str]:
        """Human-readable list of sends without receives and receives without sends.

        ``describe(handler, arg)`` may name who posted a send or receive (e.g. "NPU 0 node 3
        (COMM_SEND 'x')"); it returns None when it cannot tell. Only called after a run.
        """

        def who(fn: Handler, arg: Any) -> str | None:
            return describe(fn, arg) if describe is not None and fn is not None else None

        left = sorted((e for waiting in (*self._sends_waiting.values(), *self._recvs_waiting.values())
                       for e in ((waiting,) if type(waiting) is _Entry else waiting)), key=lambda e: e.order)
        partner = _mismatched_pairs(left)
        out = []
        for e in left:
            tag, src, dst, size = e.ident
            other = partner.get(id(e))
            if other is not None and e.recv_fn is not None:
                continue  # said with its send
            if e.recv_fn is None:
                sender = who(e.send_fn, e.send_arg) or f"NPU {src}"
                if other is None:
                    out.append(f"{sender} sent {size} B to NPU {dst} with tag {tag}, for which NPU {dst} "
                               f"never posted a matching receive")
                    continue
                rtag, _, _, rsize = other.ident
                receiver = who(other.recv_fn, other.recv_arg) or f"NPU {dst}"
                differ = [f"sizes {size} B and {rsize} B" if size != rsize else "",
                          f"tags {tag} and {rtag}" if tag != rtag else ""]
                out.append(f"{MISMATCH} ({' and '.join(d for d in differ if d)}): "
                           f"{sender} sent {size} B to NPU {dst} with tag {tag}; {receiver} waits for {rsize} B "
                           f"from NPU {src} with tag {rtag} (a receive takes a send of its size and tag)")
            else:
                receiver = who(e.recv_fn, e.recv_arg) or f"NPU {dst}"
                out.append(f"{receiver} waits for {size} B from NPU {src} with tag {tag}, which NPU "
                           f"{src} never sent")
        return out


#: the entries of one identity waiting for their other side, first posted first: one entry
#: alone, or a deque of two or more
_Waiting = _Entry | deque[_Entry]


def _take_first(waiting: dict[tuple, _Waiting], ident: tuple, queued: deque[_Entry]) -> _Entry:
    """The first of ``ident``'s two or more entries ``queued`` in ``waiting``, taken out."""
    entry = queued.popleft()
    if not queued:
        del waiting[ident]
    return entry


def _queue_behind(waiting: dict[tuple, _Waiting], ident: tuple, first: _Waiting, entry: _Entry) -> None:
    """Queue ``entry`` behind ``ident``'s entries already in ``waiting`` (``first``)."""
    if type(first) is _Entry:
        waiting[ident] = deque((first, entry))
    else:
        first.append(entry)


def _mismatched_pairs(left: list[_Entry]) -> dict[int, _Entry]:
    """Unmatched sends and receives between the same two NPUs, paired in the order they were
    posted (the k-th send left with the k-th receive left): each names the other (by ``id``).
    Their sizes or tags differ (else the board would have matched them): the likeliest bug of
    a user's collective, said as one mismatch rather than two messages nobody took."""
    receives: dict[tuple[int, int], deque[_Entry]] = {}
    for e in left:
        if e.recv_fn is not None:
            receives.setdefault((e.ident[1], e.ident[2]), deque()).append(e)
    partner: dict[int, _Entry] = {}
    for e in left:
        waiting = receives.get((e.ident[1], e.ident[2])) if e.recv_fn is None else None
        if waiting:
            other = waiting.popleft()
            partner[id(e)], partner[id(other)] = other, e
    return partner
