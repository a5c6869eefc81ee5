"""Packet trains: the records the packet backend's sharing works on (each rides a path,
:mod:`.train_path`), their pending events, and the constants that bound them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import Timeout

from simpy_astra.network.packet.solver import NO_SHARE, TOLERANCE, Share
from simpy_astra.network.packet.train_path import TrainPath

DEFAULT_PACKET_SIZE_BYTES = 4096


DEFAULT_SWITCH_BUFFER_BYTES = 1 << 20


#: a backlog of at most this many bytes is empty (floating-point dust)
EMPTY_BYTES = 1e-3


#: how often one re-share may re-solve after trains opened, joined or froze buffers
MAX_ROUNDS = 6


class PacketMessage:
    """One message: its board key (None for background traffic, then ``done`` succeeds),
    how many of its trains are still draining, and the latest delivery among those done."""

    __slots__ = ("key", "done", "parts", "deliver_ns")
    #: a user's own ``put()`` (:class:`UsersPut`), announced to no probe
    users_put = False

    def __init__(self, key: Any, done: simpy.Event | None, parts: int) -> None:
        self.key = key
        self.done = done
        self.parts = parts
        self.deliver_ns = 0.0


class UsersPut(PacketMessage):
    """A user's ``put(n)`` on one port: ``done`` is its Transmission."""

    __slots__ = ()
    users_put = True


class TrainTimer:
    """One kind of pending event of a train (a queue of it running out, its head reaching a
    hop; its source's drain is kept in the train's own slots, :meth:`Train.arm_drain`):
    arming it again or cancelling it makes the pending one harmless, so a train keeps at
    most one live event of each kind.

    The train rides in the event's value, not in the timer: a timer holding its train
    would make a reference cycle of every train (left to the garbage collector)."""

    __slots__ = ("at_ns", "_event", "_fire")

    def __init__(self) -> None:
        self.at_ns: int | None = None  # when the live event fires (None: none is live)
        self._event: Timeout | None = None  # the live event (an older one that fires is void)
        self._fire: Callable[[Train], None] | None = None

    def arm(self, env: simpy.Environment, at_ns: int, fire: Callable[[Train], None], train: Train) -> None:
        """Call ``fire(train)`` at ``at_ns`` (a whole ns, not before now) unless re-armed or
        cancelled first."""
        self.at_ns = at_ns
        self._fire = fire
        event = self._event = Timeout(env, max(0, at_ns - env.now), train)
        event.callbacks.append(self._ring)  # (a bound method, not a closure: called per event)

    def cancel(self) -> None:
        self.at_ns = None
        self._event = None

    def _ring(self, event: Timeout) -> None:
        if event is self._event:
            self.at_ns = None
            self._event = None
            self._fire(event.value)


def instant_after(now: int, delay_ns: float) -> int:
    """The whole ns at which an event ``delay_ns`` after ``now`` fires (a delay within rounding
    of 0 fires now). Past 2^53 ns a float cannot hold ``now`` plus a fraction, and a positive
    delay rounded to ``now`` re-fired in the same instant with nothing changed, for ever (a
    link of 1e-12 GB/s hung the run): such a delay fires 1 ns later."""
    at_ns = math.ceil(now + delay_ns - 1e-9)
    return now + 1 if at_ns <= now and delay_ns > 1e-9 else at_ns


#: the timer of a train that never armed one of that kind (never armed: shared, read-only)
NO_TIMER = TrainTimer()


class Train:
    """A train: one message's bytes (or its share on one sprayed path) on one path.

    Where its bytes are: ``left_bytes`` had not left the source at ``since_ns``;
    ``buffer_hop`` is the hop whose port's buffer holds its ``backlog_bytes`` (0: none);
    ``crossed_bytes`` (while buffered) the bytes that crossed each hop from ``buffer_hop`` on,
    so that what waits at each hop is known (:meth:`queue`); ``first_hop`` the first hop it
    still holds (``buffer_hop`` once its source is drained, later ones as its bytes cross
    them); ``reach_hops`` the hops its head has reached (``start_ns`` + :meth:`offsets_ns`),
    which it shares (the hops after it has yet to reach hold it as a resource already, so that
    re-shares there find it, but give it no share).

    How fast they move: ``in_bytes_per_ns`` on the hops before ``buffer_hop`` (on every hop
    when it has none), ``out_bytes_per_ns`` from ``buffer_hop`` on (on the last hop, what is
    delivered, where the hops from ``buffer_hop`` on have shares of their own:
    ``hop_shares``, set where FIFO inputs cut it at several hops); ``credit_held``: its
    buffer is full, so credits hold ``in_bytes_per_ns`` to its rate downstream;
    ``drain_arrivals_bytes_per_ns`` once its source is drained, the rate its bytes came in at
    on each hop from ``buffer_hop`` on (their weights in the FIFOs that hold them: a FIFO
    holds a flow's bytes in the proportion they arrived in). ``solved_in`` / ``solved_out``
    are the last solve's shares before / from its buffer (rate and limit), which the
    network takes as its rates (:meth:`take_rates`); ``cut_hop`` the first hop at which FIFO
    inputs would cut it (0: none).

    Its pending events: ``drain_ns`` when its last byte leaves the source at the current
    rate, and ``drain_at_ns`` when its live drain event fires (None: none is live;
    :meth:`arm_drain`); ``hop_timer`` and ``join_timer`` its live hop and join events
    (:class:`TrainTimer`). Every train arms a drain, so that event is kept in the train's
    own slots: a timer object of its own would cost an allocation and a call per train."""

    __slots__ = ("message", "path", "ports", "size_bytes", "left_bytes", "backlog_bytes", "since_ns",
                 "in_bytes_per_ns", "out_bytes_per_ns", "buffer_hop", "credit_held", "first_hop",
                 "drain_arrivals_bytes_per_ns", "cut_hop", "hop_shares", "crossed_bytes", "solved_in",
                 "solved_out", "drain_ns", "drain_at_ns", "_drain_event", "_on_drain", "hop_timer", "join_timer",
                 "arrivals_bytes_per_ns", "route", "start_ns", "reach_hops", "opened_buffer", "reached_before", "packet_bytes",
                 "arrivals_from_hop", "route_solve", "route_memo", "units_memo")

    def __init__(self, message: PacketMessage, path: TrainPath, size_bytes: float, now: float) -> None:
        self.message = message
        self.path = path
        self.ports = path.ports
        self.size_bytes = size_bytes
        self.left_bytes = size_bytes
        self.backlog_bytes = 0.0
        self.since_ns = now
        self.in_bytes_per_ns = self.out_bytes_per_ns = 0.0
        self.buffer_hop = 0
        self.credit_held = False
        self.first_hop = 0
        self.drain_arrivals_bytes_per_ns: tuple[float, ...] = ()
        self.cut_hop = 0
        self.hop_shares: list[Share] | None = None  # per hop, from ``buffer_hop`` on
        self.crossed_bytes: list[float] | None = None
        self.solved_in = self.solved_out = NO_SHARE
        # the last FIFO arrival rates per hop from ``arrivals_from_hop`` on (a warm start) and
        # the solver.Route they were for
        self.arrivals_bytes_per_ns: tuple[float, ...] | None = None
        self.arrivals_from_hop = 0
        self.route_solve = 0  # the solve (:attr:`.rates.Solutions.solves`) that gave it ``route``
        self.route: Any = None
        # the last solve's FIFO route, and the last two units, with what they were made from
        # (a re-share re-solves every train of its component, most unchanged: :mod:`.rates`)
        self.route_memo: tuple | None = None
        self.units_memo: tuple | None = None
        self.drain_ns: float = 0
        self.drain_at_ns: int | None = None
        self._drain_event: Timeout | None = None  # the live drain event (an older one that fires is void)
        self._on_drain: Callable[[Train], None] | None = None
        self.hop_timer = NO_TIMER  # (their own timers once they need them: most never do)
        self.join_timer = NO_TIMER
        self.start_ns = now
        self.reach_hops = len(path.ports) if size_bytes >= path.start_up_bytes else 1
        self.opened_buffer = False  # it opened its buffer in the re-share under way
        self.reached_before = 0  # the hops it had reached before the re-share under way, if it reached more
        # its packets: the path's, or its own size if smaller (a conditional: cheaper than min())
        self.packet_bytes = path.packet_bytes if path.packet_bytes <= size_bytes else size_bytes

    def take_solution(self, solved_in: Share, solved_out: Share, hop_shares: list[Share] | None,
                      cut_hop: int) -> None:
        """A solve's shares for it (:func:`~.rates.train_rates`): before its buffer (or on
        its whole path), from the buffer on, per hop from the buffer on (or None), and the
        first hop at which FIFO inputs would cut it (0: none). Its rates change only when
        the network takes them (:meth:`take_rates`)."""
        self.solved_in = solved_in
        self.solved_out = solved_out
        self.hop_shares = hop_shares
        self.cut_hop = cut_hop

    def remember_arrivals(self, route: Any, arrivals_bytes_per_ns: tuple[float, ...], solve: int) -> None:
        """The FIFO arrival rates solved for its ``route`` in ``solve`` (a warm start for the
        next solve), per hop from its first (kept as they are: most solves only read them back)."""
        self.arrivals_bytes_per_ns = arrivals_bytes_per_ns
        self.arrivals_from_hop = self.first_hop
        self.route = route
        self.route_solve = solve

    def keep_arrivals(self, solve: int) -> tuple[float, ...]:
        """Its route and arrival rates hold for ``solve`` too (the solve before gave them, on
        the same set of routes: :meth:`~.rates.Solutions.arrivals_as_last`); returns the rates."""
        self.route_solve = solve
        return self.arrivals_bytes_per_ns

    def warm_start(self) -> tuple[float, ...] | None:
        """The last FIFO arrival rates per hop from its first hop now (0 on a hop it did not
        hold then), or None if none were solved."""
        got = self.arrivals_bytes_per_ns
        if got is None:
            return None
        shift = self.first_hop - self.arrivals_from_hop
        return got[shift:] if shift >= 0 else (0.0,) * -shift + got

    def take_rates(self) -> None:
        """Move at the last solve's rates from now (its state must be accounted to now)."""
        if self.left_bytes > 0:
            self.in_bytes_per_ns = self.solved_in.bytes_per_ns
            self.out_bytes_per_ns = self.solved_out.bytes_per_ns if self.buffer_hop else self.in_bytes_per_ns
        else:
            self.in_bytes_per_ns = 0.0
            self.out_bytes_per_ns = self.solved_out.bytes_per_ns

    def offsets_ns(self) -> tuple[float, ...]:
        """When its head reaches each hop, from its start (its packets are at most its size)."""
        path = self.path
        if self.size_bytes >= path.packet_bytes:
            return path.head_offsets_ns
        return path.head_offsets_for(self.size_bytes)

    def join(self, now: float) -> None:
        """Take the hops its head has reached by ``now`` into its sharing. From its buffer
        on, hops move together (their packets' way between them is charged in its delivery,
        :meth:`~simpy_astra.network.packet.train_path.TrainPath.tail_ns`): a reached hop is
        credited with what crossed the one before."""
        k = self.reach_hops
        h = len(self.ports)
        if k >= h:
            return
        offsets = self.offsets_ns()
        age = now - self.start_ns + 1e-6
        while k < h and offsets[k] <= age:
            k += 1
        crossed = self.crossed_bytes
        if crossed is not None:
            for i in range(self.reach_hops, k):
                crossed[i] = crossed[i - 1]
        if k > self.reach_hops:
            self.reached_before = self.reached_before or self.reach_hops
            self.reach_hops = k

    def credited(self, hop: int) -> float:
        """The bytes a hop it reached in this re-share counts as crossed already."""
        if self.crossed_bytes is None or hop < self.buffer_hop:
            return self.size_bytes - self.left_bytes
        return self.crossed_bytes[hop]

    def join_at(self, hop: int) -> int:
        """The whole nanosecond its head reaches hop ``hop``."""
        return math.ceil(self.start_ns + self.offsets_ns()[hop] - 1e-9)


    def buffer_bytes_per_ns(self) -> float:
        """What the port of its buffer passes on of it (bytes per ns): its own rate at that
        hop where FIFO inputs cut it hop by hop, else its rate from the buffer on."""
        shares = self.hop_shares
        return shares[self.buffer_hop].bytes_per_ns if shares is not None else self.out_bytes_per_ns

    def solved_buffer_bytes_per_ns(self) -> float:
        """:meth:`buffer_bytes_per_ns` as the last solve has it (before :meth:`take_rates`)."""
        shares = self.hop_shares
        return shares[self.buffer_hop].bytes_per_ns if shares is not None else self.solved_out.bytes_per_ns

    def void_events(self) -> None:
        """Its pending drain, hop and join events do nothing when they fire (it ended)."""
        self.drain_at_ns = self._drain_event = None
        if self.hop_timer.at_ns is not None:
            self.hop_timer.cancel()
        if self.join_timer.at_ns is not None:
            self.join_timer.cancel()

    def own_hop_timer(self) -> TrainTimer:
        """Its hop timer (its own from the first time it needs one)."""
        if self.hop_timer is NO_TIMER:
            self.hop_timer = TrainTimer()
        return self.hop_timer

    def own_join_timer(self) -> TrainTimer:
        """Its join timer (its own from the first time it needs one)."""
        if self.join_timer is NO_TIMER:
            self.join_timer = TrainTimer()
        return self.join_timer

    def hold_by_credits(self, held: bool) -> None:
        """Its buffer is full (credits hold its source to its rate downstream), or no more."""
        self.credit_held = held

    def arm_drain(self, env: simpy.Environment, fire: Callable[[Train], None]) -> None:
        """Plan when its last byte leaves the source at its current rate (``drain_ns``; inf
        while a link on its path is down: then no event), rounded up to a whole ns (events
        fall on whole ns, so the clock the NPUs read stays an integer as with the other
        backends: at most 1 ns late), and have an event call ``fire(self)`` then.

        An event is armed only if the drain comes earlier than the pending one: a later drain
        (the train slowed down) lets the pending event fire, and ``fire`` arms again (it finds
        ``drain_ns`` still ahead), so a train that only slows down keeps one event."""
        rate = self.in_bytes_per_ns
        if rate <= 0:
            self.drain_ns = math.inf
            return
        drain_ns = self.drain_ns = math.ceil(self.since_ns + self.left_bytes / rate - 1e-9)
        at_ns = self.drain_at_ns
        if at_ns is None or drain_ns < at_ns:
            self.drain_at_ns = drain_ns
            self._on_drain = fire
            event = self._drain_event = Timeout(env, max(0, drain_ns - env.now))
            event.callbacks.append(self._drain_rang)  # (a bound method, not a closure: called per event)

    def _drain_rang(self, event: Timeout) -> None:
        if event is self._drain_event:
            self.drain_at_ns = self._drain_event = None
            self._on_drain(self)

    def source_drained(self) -> None:
        """Its last byte left the source now (accounted to now)."""
        self.left_bytes = 0.0

    def drain_from_buffer(self) -> None:
        """Its source is drained and its rest waits from its buffer on: it holds the links
        from there, and its bytes weigh in their FIFOs what they came in at (at the last
        rates; a hop its head has yet to reach gets what the last one passes on)."""
        b = self.buffer_hop
        self.first_hop = b
        shares = self.hop_shares
        last = self.reach_hops - 1
        self.drain_arrivals_bytes_per_ns = (self.in_bytes_per_ns,) + tuple(
            shares[min(k, last)].bytes_per_ns if shares is not None else self.out_bytes_per_ns
            for k in range(b, len(self.ports) - 1))
        self.in_bytes_per_ns = 0.0

    def leave_crossed_hop(self) -> bool:
        """Let go of its first hop if its source is drained, every byte crossed it and it is
        not the last it has reached; whether it did."""
        crossed = self.crossed_bytes
        if crossed is None or self.left_bytes > 0:
            return False
        if self.first_hop < self.reach_hops - 1 and crossed[self.first_hop] >= self.size_bytes - EMPTY_BYTES:
            self.first_hop += 1
            return True
        return False

    def newly_reached(self) -> range:
        """The hops its head reached in the re-share under way (then none: asked once)."""
        got = range(self.reached_before, self.reach_hops) if self.reached_before else range(0)
        self.reached_before = 0
        return got

    def fills_buffer(self) -> bool:
        """Its source sends into its buffer faster than the buffer's port passes it on, and
        credits do not hold it yet."""
        return (not self.credit_held and self.left_bytes > 0
                and self.in_bytes_per_ns > self.buffer_bytes_per_ns() * (1 + TOLERANCE))

    def in_buffer(self, now: float) -> tuple[float, float]:
        """At ``now``: its backlog (its bytes from its buffer on), and its bytes in its
        buffer's port (not those waiting further on, which that buffer no longer holds): the
        backlog, or where it is tracked per hop, what crossed the hop before and not this one.
        (One call for both: a switch asks for them of every train it buffers, every look.)"""
        b = self.buffer_hop
        if not b:
            return 0.0, 0.0
        dt = now - self.since_ns
        left = self.left_bytes
        sent = min(left, self.in_bytes_per_ns * dt) if left > 0 else 0.0
        backlog = max(0.0, self.backlog_bytes + sent - self.out_bytes_per_ns * dt)
        shares, crossed = self.hop_shares, self.crossed_bytes
        if shares is None or crossed is None:
            return backlog, backlog
        sent += self.size_bytes - left
        upstream = sent if b <= self.first_hop or left > 0 else crossed[b - 1]
        through = min(upstream, crossed[b] + shares[b].bytes_per_ns * dt)
        return backlog, max(0.0, upstream - through)

    def queue(self, hop: int) -> float:
        """Its bytes waiting in the buffer of hop ``hop`` (at ``since``): crossed the hop before,
        not this one."""
        crossed = self.crossed_bytes
        upstream = self.size_bytes - self.left_bytes if hop == self.buffer_hop else crossed[hop - 1]
        return max(0.0, upstream - crossed[hop])

    def waiting_bytes(self, hop: int) -> float:
        """Its bytes waiting in the buffer of hop ``hop`` (:meth:`queue`) above the floor under
        which that hop no longer counts as waiting: nothing at its first hop (nothing more
        arrives there), one packet further on, where bytes still arrive (without that margin
        a hop would flip between draining its queue and passing on what arrives, one re-share
        each, ever faster). Negative: none waits."""
        crossed = self.crossed_bytes
        upstream = self.size_bytes - self.left_bytes if hop == self.buffer_hop else crossed[hop - 1]
        floor = EMPTY_BYTES if hop <= self.first_hop else self.packet_bytes
        return upstream - crossed[hop] - floor

    def advance(self, now: float) -> None:
        """Account what moved since ``since`` at the current rates."""
        dt = now - self.since_ns
        if dt <= 0:
            return
        left = self.left_bytes
        sent = min(left, self.in_bytes_per_ns * dt) if left > 0 else 0.0
        self.left_bytes = left - sent
        if self.buffer_hop:
            self.backlog_bytes = max(0.0, self.backlog_bytes + sent - self.out_bytes_per_ns * dt)
            crossed = self.crossed_bytes
            if crossed is not None:
                shares = self.hop_shares
                upstream = self.size_bytes - self.left_bytes
                for k in range(max(self.buffer_hop, self.first_hop), self.reach_hops):
                    rate = shares[k].bytes_per_ns if shares is not None else self.out_bytes_per_ns
                    crossed[k] = upstream = min(upstream, crossed[k] + rate * dt)
        self.since_ns = now

    def open_buffer(self, hop: int) -> None:
        """Its buffer is now at hop ``hop``, empty: every hop from there has carried what left
        (but see :meth:`place_backlog`)."""
        self.buffer_hop = hop
        self.backlog_bytes = 0.0
        self.crossed_bytes = [self.size_bytes - self.left_bytes] * len(self.ports)
        self.opened_buffer = True

    def place_backlog(self, now: float) -> None:
        """A buffer just opened at a hop the train's head reached in this instant (its join
        event): what it sent faster before waits there, but for what that hop passes on
        (``out_bytes_per_ns``) in the train's time so far (the bytes in flight in its head's time to
        the hop, which its delivery charges, and the part of a nanosecond since the head got
        there: events fall on whole ns)."""
        self.opened_buffer = False
        b = self.buffer_hop
        if not b or self.left_bytes <= 0 or self.start_ns + self.offsets_ns()[b] <= now - 1:
            return
        sent = self.size_bytes - self.left_bytes
        crossed = min(sent, self.out_bytes_per_ns * (now - self.start_ns))
        if crossed < sent - EMPTY_BYTES:
            self.backlog_bytes = sent - crossed
            self.crossed_bytes = [crossed] * len(self.ports)

    def close_buffer(self) -> None:
        """Its backlog is empty and it arrives no faster than it leaves: whole again."""
        self.credit_held = False
        self.buffer_hop = 0
        self.backlog_bytes = 0.0
        self.crossed_bytes = None
        self.hop_shares = None
