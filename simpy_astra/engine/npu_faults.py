"""What can go wrong with an NPU's compute: stragglers (slowed down, paused) and failures.

:class:`NpuFaults` is the part of :class:`~simpy_astra.engine.npu.Npu` that the co-simulation API
(``sim.npu(i).slow_down(...)``, ``pause``, ``fail``) drives; it re-times the compute nodes in
the NPU's clock buckets and, on a failure, leaves the NPU a network that does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from simpy_astra.infra.horizon import api_number
from simpy_astra.workloads.chakra.types import COMP_NODE


class _Silent:
    """The network and clock a failed NPU is left with: what it asks of them never happens."""

    __slots__ = ()

    def send(self, *_args: Any) -> None:
        pass

    def recv(self, *_args: Any) -> None:
        pass


def _nothing(_arg: Any) -> None:
    """A bucket item moved elsewhere (a straggler's compute re-timed)."""


class NpuFaults:
    """Stragglers and failures of one NPU (mixed into :class:`~simpy_astra.engine.npu.Npu`)."""

    #: a straggler (:meth:`slow_down`, :meth:`pause`): compute nodes are re-timed on issue
    straggling = False
    compute_factor = 1.0
    paused_until_ns: float = 0
    #: when it failed (:meth:`fail`), or None
    failed_ns: float | None = None

    def slow_down(self, factor: float, at_ns: float | None = None) -> None:
        """From ``at_ns`` (now if None) on, this NPU computes ``factor`` times slower: a
        compute node issued then takes ``trunc(runtime * factor)``; one in progress does the
        rest of its work at the new speed (ends at ``t + trunc(left * factor)``). Compute
        only: communication is the network's (slow a link with ``set_bandwidth``)."""
        factor = api_number(factor, f"NPU {self.npu_id}: slow-down factor", positive=True)
        self._at(at_ns, self._slow_now, factor)

    def pause(self, duration_ns: float, at_ns: float | None = None) -> None:
        """From ``at_ns`` (now if None), this NPU's compute stops for ``duration_ns``: a
        compute node in progress ends ``duration_ns`` later, one issued during the pause
        starts when it ends. Communication goes on (the network and collectives' endpoint
        work are not the NPU's compute units)."""
        duration_ns = api_number(duration_ns, f"NPU {self.npu_id}: pause duration_ns")
        self._at(at_ns, self._pause_now, duration_ns)

    def fail(self, at_ns: float | None = None) -> None:
        """From ``at_ns`` (now if None) on, this NPU is dead: nothing of it happens any more
        (its pending events, nodes, collective phases, sends and receives); messages it sent
        before still arrive. It never finishes, so the run ends in a stall report that names
        it as failed."""
        self._at(at_ns, self._fail_now, None)

    def _at(self, at_ns: float | None, fn: Callable[[Any], None], arg: Any) -> None:
        if self.stands_for is not None and len(self.stands_for) > 1:
            raise ValueError(f"NPU {self.npu_id} stands for NPUs {self.stands_for} in this folded run: "
                             f"a straggler or failure needs its own NPU (fold_symmetry: false)")
        env = self.clock.env
        if at_ns is not None:
            at_ns = api_number(at_ns, f"NPU {self.npu_id}: at_ns")
        if at_ns is None or at_ns <= env.now:
            fn(arg)
        else:
            env.timeout(at_ns - env.now).callbacks.append(lambda _event: fn(arg))

    def _straggled(self, runtime: int) -> tuple[int, int]:
        """(compute time, delay to completion) of a compute node issued now."""
        runtime = int(runtime * self.compute_factor)
        return runtime, runtime + max(0, self.paused_until_ns - self.clock.env.now)

    def _computing(self) -> list[tuple[float, list, int]]:
        """(tick, bucket, index) of every compute node in progress (its completion item)."""
        found = []
        complete_soon = self.complete_soon
        for tick, items in self.clock.buckets.items():
            for i, (fn, arg) in enumerate(items):
                if fn == complete_soon and self.nodes[arg].type == COMP_NODE:
                    found.append((tick, items, i))
        return found

    def _move(self, items: list, i: int, delay_ns: int) -> None:
        fn, arg = items[i]
        items[i] = (_nothing, None)
        self.clock.register(delay_ns, fn, arg)

    def on_cpu(self, node_id: int) -> bool:
        """Node ``node_id`` runs on the CPU slot (its time is not GPU time); the NPU says."""
        raise NotImplementedError

    def _slow_now(self, factor: float) -> None:
        now = self.clock.env.now
        old = self.compute_factor
        self.straggling = True
        self.compute_factor = factor
        for tick, items, i in self._computing():
            start = max(now, self.paused_until_ns)
            left = tick - start  # compute time still to do, at the old speed
            if left <= 0:
                continue
            new_left = int(left / old * factor)
            if not self.on_cpu(items[i][1]):
                self.gpu_ops_ns += new_left - int(left)
            self._move(items, i, int(start - now) + new_left)

    def _pause_now(self, duration_ns: float) -> None:
        now = self.clock.env.now
        self.straggling = True
        for tick, items, i in self._computing():
            self._move(items, i, int(tick - now + duration_ns))
        self.paused_until_ns = max(self.paused_until_ns, now + duration_ns)

    def _fail_now(self, _arg: Any) -> None:
        if self.failed_ns is not None or self.finished:
            return
        self.failed_ns = self.clock.env.now
        for items in self.clock.buckets.values():
            items.clear()
        self.clock.stop()  # rings and registrations of this NPU do nothing now
        silent = _Silent()
        self.services = replace(self.services, network=silent)
        self.system.network = silent
        for queue in self.system.active:
            for stream in queue:
                for phase in stream.phases:
                    phase.network = silent
