"""Saying why a run cannot progress: which NPU waits on which node, which messages nobody
received, and the handler a waiting message belongs to."""

from __future__ import annotations

from collections.abc import Callable, Generator

import simpy

from simpy_astra.npu import Npu


def describe_handler(fn, arg) -> str | None:
    """Which workload node (or collective phase) a send/receive callback belongs to."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, Npu):
        return f"NPU {owner.npu_id} {owner.describe(arg)}"
    if owner is not None and hasattr(owner, "describe"):
        return owner.describe()
    return None


def stall_report(now: float, total_npus: int, stuck: list, unmatched: list[str], limit: int = 8) -> str:
    """One line: when it stopped, what each unfinished NPU waits on, unmatched messages."""

    def capped(items: list[str], what: str) -> str:
        more = f"; ... and {len(items) - limit} more {what}" if len(items) > limit else ""
        return "; ".join(items[:limit]) + more

    if stuck:
        head = (f"simulation stalled at {now} ns with {len(stuck)} of {total_npus} NPU(s) "
                f"unfinished (no event left that could make progress): ")
        text = head + capped([f"NPU {n.npu_id} {n.waiting_on()}" for n in stuck], "NPUs")
        if unmatched:
            text += ". Unmatched messages: " + capped(unmatched, "messages")
        return text
    return (f"simulation ended at {now} ns with unmatched messages (a send whose receive is "
            f"never posted): " + capped(unmatched, "messages"))


def watch_for_stall(env: simpy.Environment, finished: simpy.Event, stalled: simpy.Event,
                    quiet_state: Callable[[], tuple | None]) -> Generator[simpy.Event, None, None]:
    """A process that triggers ``stalled`` when the model can no longer progress.

    It wakes at 1, 3, 7, 15, ... us; when two wakes in a row find nothing of the model
    pending (``quiet_state`` not None) and the same progress counters, nothing will happen
    any more, whatever user processes keep SimPy's queue busy."""
    interval_ns = 1_000
    seen = None
    while not finished.triggered:
        yield env.timeout(interval_ns)
        now_state = quiet_state()
        if now_state is not None and now_state == seen and not finished.triggered:
            stalled.succeed()
            return
        seen = now_state
        interval_ns *= 2
