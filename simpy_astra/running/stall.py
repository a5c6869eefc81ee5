"""Saying why a run cannot progress: which NPU waits on which node, which messages nobody
received, and the handler a waiting message belongs to."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import simpy

from simpy_astra.engine.npu import Npu
from simpy_astra.engine.phase_process import PhaseProcess
from simpy_astra.infra.horizon import HORIZON_NS
from simpy_astra.network.messages import MISMATCH
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE


def describe_handler(fn, arg) -> str | None:
    """Which workload node (or collective phase) a send/receive callback belongs to."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, Npu):
        return f"NPU {owner.device_id} {owner.describe(arg)}"
    if owner is not None and hasattr(owner, "describe"):
        return owner.describe()
    return None


def held_messages(network: Any) -> list[tuple[Any, Any]]:
    """(board key or None for background bytes, link) of every message held by a link that
    is down: it cannot move until the link comes up, so it is not "in flight" for the
    watchdog (each link says what it holds: ``link.held()``). Backends without links have
    none (``links()`` is empty)."""
    held: dict[int, tuple[Any, Any]] = {}
    for link in network.links():
        if not link.up:
            for message, key in link.held():
                held.setdefault(id(message), (key, link))
    return list(held.values())


def describe_held(key: Any, link: Any) -> str:
    """``NPU 0 all_reduce phase ... sent 1024 B to NPU 1 (tag 5): held by link 0->1, which is
    down; NPU 1 node 3 (...) waits for it``."""
    state = "failed" if link.failed else "down"
    where = f"held by link {link.src}->{link.dst}, which is {state}"
    if key is None:
        return f"background bytes {where}"
    tag, src, dst, size = key.ident
    sender = describe_handler(key.send_fn, key.send_arg) if key.send_fn is not None else None
    text = f"{sender or f'NPU {src}'} sent {size} B to NPU {dst} (tag {tag}): {where}"
    if key.recv_fn is not None:
        receiver = describe_handler(key.recv_fn, key.recv_arg)
        text += f"; {receiver or f'NPU {dst}'} waits for it"
    return text


def last_progress_ns(npus: list) -> int:
    """When the model last moved: the latest time any NPU started or ended a node (its
    statistics record both). The watchdog notices a stall later, at one of its wakes."""
    return max((max(npu.stats.wall_ns, max(npu.stats.starts.values(), default=0)) for npu in npus), default=0)


def stall_report(now: float, total_npus: int, stuck: list, unmatched: list[str], limit: int = 8,
                 held: list[str] | None = None, last_ns: float | None = None, spinning: str | None = None,
                 unheld: int = 0, waiting: list[str] | None = None, unposted: str | None = None) -> str:
    """One line: when it stopped (``last_ns``, the last progress, when given; else ``now``),
    what each unfinished NPU waits on (or that it failed), messages held by links that are
    down, how many other messages never arrived (``unheld``: kept where no link that is down
    holds them, e.g. in a switch model's own queue), unmatched messages; ``spinning``: the
    watchdog's words for phases that never end; ``waiting``: the user's phases still waiting
    (:func:`waiting_phases`), named when nothing else explains the stall; ``unposted``: a
    backend's sends never posted (:meth:`~simpy_astra.network.messages.MessageBoard.unposted`)."""

    def capped(items: list[str], what: str) -> str:
        # alike items once, with their count: a collective's chunks held on one link read the
        # same (one sender, receiver, size and tag), and four copies of a line say no more
        counts = dict.fromkeys(items, 0)
        for item in items:
            counts[item] += 1
        alike = [item if n == 1 else f"{item} (x{n})" for item, n in counts.items()]
        more = f"; ... and {len(alike) - limit} more {what}" if len(alike) > limit else ""
        return "; ".join(alike[:limit]) + more

    if stuck:
        when = f"{now} ns" if last_ns is None or last_ns >= now else \
            f"{int(last_ns)} ns (its last progress; noticed at {now} ns)"
        mismatch = any(item.startswith(MISMATCH) for item in unmatched)
        why = spinning or (f"{MISMATCH}, so the receive waits for ever" if mismatch else
                           "no event left that could make progress")
        if waiting and not (spinning or held or unheld or unmatched):
            why += ("; collective phases of your own wait on an event nothing will fire ("
                    + capped(waiting, "phases") + "): fire a ctx.signal() with .fire(value), "
                    "or yield events of ctx.env that something triggers")
        head = f"simulation stalled at {when} with {len(stuck)} of {total_npus} NPU(s) unfinished ({why}): "
        text = head + capped([f"NPU {n.device_id} {n.waiting_on()}" for n in stuck], "NPUs") + sizes_differ(stuck)
        if held:
            text += ". Messages that cannot move: " + capped(held, "messages")
        if unheld:
            text += (f". {unheld} {'more ' if held else ''}message{'s were' if unheld > 1 else ' was'} sent and "
                     f"never arrived, and no link that is down holds {'them' if unheld > 1 else 'it'} "
                     f"(a link or switch model of your own may keep {'them' if unheld > 1 else 'it'}, or a "
                     f"backend's send() post {'them' if unheld > 1 else 'it'} without board.arrive_after)")
        if unmatched:
            text += ". Unmatched messages: " + capped(unmatched, "messages")
        if unposted:
            text += f". The sends were given to the network, but {unposted}"
        return text
    return (f"simulation ended at {now} ns with unmatched messages (a send whose receive is "
            f"never posted): " + capped(unmatched, "messages"))


def sizes_differ(stuck: list) -> str:
    """'. Their ... differ in size: ...' when the stuck NPUs each wait on one collective of a
    kind and group and give it different comm_size: members that disagree never match, and the
    messages they leave unmatched do not say why; else ''."""
    sizes: dict[tuple[str, str], dict[int, list[int]]] = {}
    for npu in stuck:
        waits = npu.waiting_collectives()
        for key in {(kind, pg) for kind, pg, _ in waits}:
            mine = [size for kind, pg, size in waits if (kind, pg) == key]
            if len(mine) == 1:
                sizes.setdefault(key, {}).setdefault(mine[0], []).append(npu.device_id)
    for (kind, pg), by_size in sorted(sizes.items()):
        if len(by_size) > 1:
            where = f"communicator group {pg}" if pg not in ("", "0") else "all NPUs"
            shown = "; ".join(f"{size:,} B on NPU{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids[:4]))}"
                              f"{' ...' if len(ids) > 4 else ''}" for size, ids in sorted(by_size.items()))
            return (f". Their {kind} on {where} differs in size ({shown}): every member must give a "
                    f"collective the same comm_size")
    return ""


#: the watchdog's first wake-up; its interval doubles up to MAX_WATCH_INTERVAL_NS
FIRST_WATCH_INTERVAL_NS = 1_000
#: the watchdog's longest interval while the clock is below it (1 s of simulated time); past
#: it, an interval may be as long as the clock reads, so a run whose events lie 1e17 ns apart
#: costs the watchdog about one wake per doubling of the clock, not one per simulated second,
#: and a run the watchdog alone keeps alive only doubles its clock per wake, up to the horizon
MAX_WATCH_INTERVAL_NS = 1_000_000_000


def watch_for_stall(env: simpy.Environment, finished: simpy.Event, stalled: simpy.Event,
                    quiet_state: Callable[[], tuple | None],
                    patience_ns: Callable[[], float] = lambda: 0,
                    spin_state: Callable[[], tuple | None] = lambda: None) -> Generator[simpy.Event, None, None]:
    """A process that triggers ``stalled`` when the model can no longer progress.

    It wakes at 1, 3, 7, 15, ... us (then every second at most until the clock reads a second,
    then at most as far ahead as the clock reads: its cost does not depend on how far apart the
    model's events are, and it never looks past the horizon, :data:`~simpy_astra.infra.horizon.HORIZON_NS`). The model is quiet when ``quiet_state`` is not
    None: no NPU event pending, every message delivered or held by a link that is down. Nothing
    else on SimPy's queue is a stall, quiet or not (a model of the user's may keep messages
    with no event to move them). With user processes on the
    queue, it has stalled when two wakes in a row find it quiet with the same progress
    counters, at least ``patience_ns()`` after the first of them: a link kept down for that
    long (and for as long as the run had lasted), with nothing else of the model moving,
    counts as down for good.

    The model spins when only collective phases run and, from one wake to the next, they
    waited on new events while no message moved and no node completed (``spin_state``: the
    progress counters and the phases' targets); spinning for ``patience_ns()`` and for as long
    as the run had lasted before it, a phase is taken to never end (a loop of ``ctx.wait``
    without an exit): ``stalled`` succeeds with the spinning phases described. A phase that
    waits on one long timer keeps its target, and is left alone."""
    interval_ns = FIRST_WATCH_INTERVAL_NS
    seen = None
    quiet_since = 0.0
    spun: tuple | None = None
    spin_since = 0.0
    while not finished.triggered:
        interval_ns = min(interval_ns, HORIZON_NS - int(env.now))
        if interval_ns <= 0:  # at the horizon: no later time to look at
            yield finished
            return
        yield env.timeout(interval_ns)
        if finished.triggered:
            return
        if env.peek() == math.inf:  # nothing but this watchdog was left: nothing can move again
            break  # (messages a model of the user's keeps, say a switch's own queue, included)
        spin = spin_state()
        if spin is None or spun is None or spin[0] != spun[0]:
            spin_since = env.now  # progress, or more than collectives running: look again
        elif (len(spin[1]) != len(spun[1]) or any(a is not b for a, b in zip(spin[1], spun[1], strict=True))) \
                and env.now - spin_since >= max(patience_ns(), spin_since):
            stalled.succeed(f"collective phases kept waiting on new events without a message moving "
                            f"or a node completing from {int(spin_since)} ns on ({'; '.join(spin[2])}); "
                            f"a collective algorithm must end: is a loop's exit missing?")
            return
        spun = spin
        now_state = quiet_state()
        if now_state is not None:  # (an empty queue already stopped it above)
            if now_state == seen and env.now - quiet_since >= patience_ns():
                break
            if now_state != seen:
                quiet_since = env.now
        seen = now_state
        interval_ns = min(2 * interval_ns, max(MAX_WATCH_INTERVAL_NS, int(env.now)))
        if now_state is not None:  # do not oversleep the patience
            left_ns = quiet_since + patience_ns() - env.now
            if 0 < left_ns < interval_ns:
                interval_ns = left_ns
    else:
        return
    stalled.succeed()


def quiet_state(network: Any, npus: list) -> tuple[int, int, int] | None:
    """(messages sent, delivered, nodes completed) when nothing of the model is pending
    (no NPU event, no collective phase waiting on a timeout; every message delivered or
    held by a link that is down), else None."""
    if any(npu.clock.buckets for npu in npus):
        return None
    for npu in npus:  # a phase waiting on a SimPy event already triggered (a timeout)
        for phase in npu.system.running_phases():
            target = phase.target
            if target is not None and target.triggered and not target.processed:
                return None
    board = network.board  # a message queued behind a working link is in flight too
    in_flight = board.in_flight()
    if in_flight and in_flight > sum(1 for key, _link in held_messages(network) if key is not None):
        return None
    return board.messages_sent(), board.delivered, sum(npu.completed for npu in npus)


def spin_state(network: Any, npus: list, limit: int = 4) -> tuple | None:
    """(progress counters, the events the running phases wait on, the phases in words) when
    only collective phases of the user's own algorithms run: every node in flight is a
    collective, every running phase runs the user's code (ours always end: a custom ET
    collective may wait through compute nodes without a message), and every message is
    delivered or held by a link that is down; else None. A phase waiting on a sub-phase
    (``ctx.spawn``) is followed to what that waits on."""
    targets, described = [], []
    for npu in npus:
        if npu.finished:
            continue
        if any(npu.nodes[nid].type != COMM_COLL_NODE for nid in npu.stats.starts):
            return None
        for phase in npu.system.running_phases():
            if not phase.runs_users_code():
                return None
            target = phase.target
            while isinstance(target, PhaseProcess):
                target = target.target
            targets.append(target)
            if len(described) < limit:
                described.append(f"NPU {npu.device_id} runs {phase.algorithm()}")
    if not targets:
        return None
    board = network.board
    in_flight = board.in_flight()
    if in_flight and in_flight > sum(1 for key, _link in held_messages(network) if key is not None):
        return None
    return (board.messages_sent(), board.delivered, sum(npu.completed for npu in npus)), tuple(targets), described


def waiting_phases(npus: list) -> list[str]:
    """The phases of the user's own algorithms still running on unfinished NPUs, in words
    (``NPU 0 runs 'never' (my_algos.py:3)``): with no event left, each waits on one that
    nothing fires (a ``ctx.signal()`` never fired, an event of its own never triggered)."""
    return [f"NPU {npu.device_id} runs {phase.algorithm()}" for npu in npus if not npu.finished
            for phase in npu.system.running_phases() if phase.runs_users_code()]
