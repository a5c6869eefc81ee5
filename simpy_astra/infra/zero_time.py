"""The one rule that holds a user's generator to letting simulated time pass: a collective's
phase and a link or switch model's serving loop are each stopped, in one line, once resumed
too often in one instant. A loop over events that take no time (``ctx.wait(0)``,
``env.timeout(0)``, an event already waited on) would otherwise hold the clock for ever, and
the stall watchdog, which wakes at later instants, would never run."""

from __future__ import annotations

#: resumes of one user's generator allowed in one instant: a phase resumes once per event it
#: waits on, and no algorithm waits on this many in one instant (a direct all-to-all on 16,384
#: NPUs: 16,383)
ZERO_TIME_RESUMES = 100_000


class ZeroTimeGuard:
    """The one rule that holds a user's generator (a collective's phase, a model's serving
    loop) to letting simulated time pass: at most :data:`ZERO_TIME_RESUMES` resumes in one
    instant. Each such generator keeps one; ours keep none (they always let time pass)."""

    __slots__ = ("instant", "resumes")

    def __init__(self) -> None:
        self.instant: float = -1.0
        self.resumes = 0

    def resumed(self, now: float, counts: bool = True) -> bool:
        """Count one resume at ``now`` (unless it ``counts`` for nothing: a wait for what came,
        however many a burst brings); True when it is one too many for this instant."""
        if now != self.instant:
            self.instant, self.resumes = now, 0
        self.resumes += counts
        return self.resumes > ZERO_TIME_RESUMES

    def problem(self, who: str, loop: str, fix: str, at: str = "") -> str:
        """The one line for ``who`` (what was resumed, ``at`` where it yields), whose ``loop``
        never ends; ``fix``."""
        return (f"{who} was resumed {ZERO_TIME_RESUMES:,} times at {self.instant:,} ns without simulated time "
                f"passing{at}: {loop} never ends; {fix}, or end the loop")
