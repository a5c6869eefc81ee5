"""ET traces decoded before a run's build, handed to the build so none is decoded twice.

The size checks of ``--csv-out`` and ``--trace-out`` (:mod:`simpy_astra.report.trace_size`)
decode one trace per kind of rank before the run is built; the build
(:mod:`simpy_astra.folding.run`) takes those nodes instead of decoding the files again (0.3 s
of a 1,536-GPU step's 8 traces). The two meet only here: the checks :meth:`keep` what they
decode, the build :meth:`take` s each trace it simulates and then :meth:`release` s the rest, so
no trace is held past the build.
"""

from __future__ import annotations


class DecodedTraces:
    """ET path -> its decoded nodes, each handed over at most once."""

    def __init__(self) -> None:
        self._nodes: dict[str, list] = {}

    def held(self, path: str) -> list | None:
        """The nodes of the trace at ``path`` if decoded already (kept for the build), else None."""
        return self._nodes.get(path)

    def keep(self, path: str, nodes: list) -> None:
        """Hold the nodes decoded from ``path`` for the build."""
        self._nodes[path] = nodes

    def take(self, path: str) -> list | None:
        """The nodes of ``path`` if held, no longer held (the build owns them now), else None."""
        return self._nodes.pop(path, None)

    def release(self) -> None:
        """Drop every trace not taken: the run does not simulate those ranks."""
        self._nodes.clear()
