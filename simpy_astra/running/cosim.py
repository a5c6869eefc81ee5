"""What a co-simulation user may ask of a built run, beyond running it: its NPUs and their
SimPy processes and events, observation hooks and streams, the collective phases running
now, and faults. :class:`~simpy_astra.simulation.Simulation` has these; they are apart
from its wiring so that the public surface reads in one place."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from numbers import Number
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.engine.events import process_in_place
from simpy_astra.engine.users_processes import UsersProcesses
from simpy_astra.infra.horizon import api_number
from simpy_astra.plugins import shown
from simpy_astra.running.observe import Observation, Observer

if TYPE_CHECKING:
    from simpy_astra.engine.npu import Npu


class CoSimulation:
    """The co-simulation API of a run (mixed into ``Simulation``, which provides ``npu_for``
    and ``network``)."""

    network: Any
    inputs: Any
    reports: list
    total_npus: int
    _env: simpy.Environment
    _stall_patience_ns: float = 0
    _concluded: bool = False

    def training(self) -> Any:
        """What a generated training job reports of the step that ran (Megatron's TFLOP/s, MFU
        and memory by part: ``as_dict()`` is ``--json-out``'s ``training``), or None for a
        workload without such figures: a script compares layouts by them as ``run`` prints them."""
        if not self._concluded:  # a folded run's broken symmetry reruns it: its own event is not the end
            raise ValueError("Simulation.training(): asked before every NPU has finished; call run() first")
        workload = self.inputs.workload
        if not workload.reports_figures:
            return None
        return workload.figures(max(map(attrgetter("finished_cycles"), self.reports)))

    @property
    def stall_patience_ns(self) -> float:
        """How long a quiet model waits before the watchdog calls it a stall while user
        processes run (:func:`~simpy_astra.running.stall.watch_for_stall`)."""
        return self._stall_patience_ns

    @stall_patience_ns.setter
    def stall_patience_ns(self, value: float) -> None:
        # checked here: the watchdog compares it at every wake, where nan or inf never
        # stalls (a user process that loops forever then runs to the horizon) and a str
        # fails as a TypeError deep inside run()
        self._stall_patience_ns = api_number(value, "stall_patience_ns")

    @property
    def env(self) -> simpy.Environment:
        """The run's SimPy environment, to add your own processes to.

        A stall watchdog always runs beside the NPUs (:func:`~simpy_astra.running.stall.watch_for_stall`):
        a user process that loops forever keeps SimPy's queue busy, yet a run whose NPUs wait
        for something that never comes (a receive nobody sends, a message behind a link that
        stays down, a failed NPU) stops and reports the stall: the time of the model's last
        progress, and the watchdog's time when later."""
        return self._env

    @property
    def now_ns(self) -> float:
        """The simulated time (reading it arms nothing; safe from a display thread)."""
        return self._env.now

    def npu_for(self, npu_id: int) -> Npu:
        raise NotImplementedError

    def _take_arguments(self, inputs: object, on_report: Callable | None, memory_traces: object,
                        env: object) -> None:
        """``Simulation(...)``'s arguments that its inputs do not check, each refused in one
        line naming it: a scenario's path as ``inputs`` or a str as ``env`` failed as an
        AttributeError inside the build, ``memory_traces="no"`` (truthy) wrote the traces it
        was to skip, and a non-callable ``on_report`` failed at the first NPU's end."""
        if not isinstance(inputs, SimulationInputs):
            raise TypeError(f"Simulation(inputs): expected SimulationInputs (got {shown(inputs)}); for a scenario "
                            f"file use Simulation.from_scenario(path), for ASTRA-sim's files "
                            f"Simulation.from_astra_files(...)")
        if env is not None and not isinstance(env, simpy.Environment):
            raise TypeError(f"Simulation(env=...): expected a simpy.Environment to run on, or None "
                            f"for a new one (got {shown(env)})")
        if on_report is not None and not callable(on_report):
            raise TypeError(f"Simulation(on_report=...): expected a function taking one NpuReport, "
                            f"or None (got {shown(on_report)})")
        if not isinstance(memory_traces, bool):
            raise TypeError(f"Simulation(memory_traces=...): expected True or False (got {shown(memory_traces)})")
        self.on_report = on_report
        self._env = simpy.Environment() if env is None else env

    def npu(self, npu_id: int) -> Npu:
        """The simulated NPU ``npu_id`` (its representative's, in a folded run)."""
        return self.npu_for(npu_id)

    def npu_finished(self, npu_id: int) -> simpy.Event:
        """The NPU's SimPy process: an event that fires when its graph has finished, with its
        report. An NPU simulated as another (folded onto its orbit's representative, or a job's
        rank) gets an event of its own, fired in that instant with its own report: the
        process's would name the other NPU."""
        npu = self.npu_for(npu_id)
        process = npu.process
        if npu.npu_id == npu_id:
            return process
        own = simpy.Event(self._env)

        def hand_on(done: simpy.Event) -> None:
            if done.ok:
                process_in_place(own, done.value.for_npu(npu_id))

        if process.callbacks is None:  # processed already
            hand_on(process)
        else:
            process.callbacks.append(hand_on)
        return own

    def node_finished(self, npu_id: int, node_id: int) -> simpy.Event:
        """An event that fires (value: the time) when node ``node_id`` of NPU ``npu_id``
        completes; already triggered if it has. A folded run simulates NPU ``npu_id``'s
        representative: its nodes are the representative's."""
        npu = self.npu_for(npu_id)
        try:
            return npu.node_finished(node_id)
        except KeyError as missing:
            if npu.device_id == npu_id:
                raise
            raise KeyError(f"node_finished({npu_id}, {node_id}): NPU {npu_id} is not simulated in this folded run "
                           f"(NPU {npu.device_id} stands for it, by symmetry, and its nodes are NPU "
                           f"{npu.device_id}'s: {missing.args[0]}); ask node_finished({npu.device_id}, ...) for "
                           f"its figures, or build the run with fold_symmetry: false") from None

    def on(self, kind: str, callback: Callable[[Observation], None]) -> None:
        """Call ``callback(observation)`` at every milestone of ``kind`` (message_sent,
        message_delivered, link_start, link_end, collective_start, collective_end, node_end;
        see :mod:`simpy_astra.running.observe`). Nothing is watched until someone subscribes.
        A process the callback starts is held to letting time pass as the user's own are."""
        self.observer.on(kind, callback, self.users_processes.calling)

    def stream(self, kind: str) -> simpy.Store:
        """A :class:`simpy.Store` of the :class:`~simpy_astra.running.observe.Observation` s of
        ``kind``, for a process to read with ``yield store.get()``."""
        return self.observer.stream(kind)

    @cached_property
    def users_processes(self) -> UsersProcesses:
        """The user's processes on :attr:`env`, held to letting simulated time pass."""
        return UsersProcesses(self._env)

    @cached_property
    def observer(self) -> Observer:
        """Made on first use: a run nobody observes watches no probe point."""
        return Observer(self)

    def running_phases(self, npu_id: int) -> list[simpy.Process]:
        """The collective phases running on NPU ``npu_id`` now (SimPy processes: e.g. to
        ``interrupt()`` one)."""
        return self.npu_for(npu_id).system.running_phases()

    def fail_device(self, device: Any) -> None:
        """Fail switch (or NPU) ``device`` for good, now: every link into or out of it goes
        down and stays down (``network.fail_device``; link-level backends)."""
        self.network.fail_device(device)

    def fail_switch(self, device: Any) -> None:
        """Fail switch ``device`` for good, now (:meth:`fail_device`). An NPU's id is refused:
        switches are numbered from the NPU count on (or named, a graph's ``"sw"``), and
        ``fail_switch(0)`` failed NPU 0's links in silence where a switch was meant."""
        # any number equal to an NPU's id (numpy's 0, 0.0): the links match it as they match 0
        if isinstance(device, Number) and not isinstance(device, bool) and device in range(self.total_npus):
            raise ValueError(f"fail_switch({device}): device {device} is an NPU (NPUs 0..{self.total_npus - 1}), "
                             f"not a switch: switches are numbered from {self.total_npus} on or named by their "
                             f"label; fail_device({device}) fails an NPU's links")
        self.fail_device(device)
