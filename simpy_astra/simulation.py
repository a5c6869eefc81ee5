"""One simulation run: inputs -> topology + network + per-NPU system layer + workloads -> figures.

This is the only module that knows every layer; each layer below it sees just the narrow
interface it needs (a collective sees a PhaseContext, an NPU sees its NpuServices and system
layer, the system layer sees ``network.send/recv``). Building a :class:`Simulation` reads
every input (traces, custom collectives) and folds symmetric NPUs; :meth:`Simulation.run`
then only simulates, on a plain ``simpy.Environment`` (the user's own, if given) that user
processes may share.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import simpy
from simpy.core import StopSimulation

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.config.python_overrides import with_python_overrides
from simpy_astra.config.scenario import load_scenario
from simpy_astra.engine.bandwidth_floor import FloorCheck
from simpy_astra.engine.events import fast_collection, process_in_place_or_raise, stop_at_end_of_instant
from simpy_astra.engine.npu import Npu
from simpy_astra.engine.remote_memory import RemoteMemory
from simpy_astra.engine.statistics import NpuReport
from simpy_astra.engine.system_layer import SystemLayer
from simpy_astra.errors import InputError, StalledError
from simpy_astra.folding import Folding, OrbitReports
from simpy_astra.infra import horizon, stopping
from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, tflops_to_flops
from simpy_astra.network import BACKENDS, DEFAULT_BACKEND, Network
from simpy_astra.network.checked_models import never_posted
from simpy_astra.running import stall
from simpy_astra.running.cosim import CoSimulation
from simpy_astra.running.input_checks import check_paths, checked_path, start_warnings
from simpy_astra.running.one_job import build_one_job
from simpy_astra.topologies import build as build_topology
from simpy_astra.workloads.chakra.dimensions import group_names


class Simulation(CoSimulation):
    """A run, built and ready: ``sim.env`` is its SimPy environment, ``sim.run()`` runs it."""

    def __init__(self, inputs: SimulationInputs, on_report: Callable[[NpuReport], None] | None = None,
                 memory_traces: bool = True, env: simpy.Environment | None = None,
                 stall_patience_ns: float = 0, topology: Any = None, routes: Any = None,
                 link_model: Any = None, link_params: dict | None = None, switch_model: Any = None,
                 switch_params: dict | None = None) -> None:
        """``memory_traces=False``: track memory as the system config asks, but write no
        ``local_mem_trace.{npu}.json`` (sweep points do not). ``env``: run on your SimPy
        environment (with your processes), the NPUs starting at its current time.
        ``stall_patience_ns``: how long the model must stay quiet and unchanged before the
        watchdog calls it a stall while user processes run (:mod:`simpy_astra.running.stall`).
        ``topology``/``routes``: a ``networkx.DiGraph`` (same NPU count) and paths it pins, routed
        as ``topology: {networkx: ...}`` is. ``link_model``/``switch_model`` and their params: the
        congestion-aware backend's element models, as the YAML's ``link-model``/``switch-model``
        (:func:`~simpy_astra.config.python_overrides.with_models`)."""
        self._take_arguments(inputs, on_report, memory_traces, env)
        inputs = with_python_overrides(inputs, topology, routes, link_model, link_params, switch_model, switch_params)
        self.inputs = inputs
        self.system_config = inputs.system
        net = inputs.network
        self.network_dims = list(net.npus_count)
        self.total_npus = math.prod(self.network_dims)
        self.stall_patience_ns = stall_patience_ns
        specs = net.graph_specs or (None,) * net.num_dims
        dims = [build_topology(t, n, bw, lat, spec, net.topology_field(i)) for i, (t, n, bw, lat, spec) in
                enumerate(zip(net.topology, net.npus_count, net.bandwidth_gbps, net.latency_ns, specs, strict=True))]
        if inputs.backend not in BACKENDS:
            raise InputError(f"--network-backend: '{inputs.backend}' is not available "
                             f"(choose one of: {', '.join(BACKENDS)})")
        self._backend = BACKENDS[inputs.backend]
        # built once the folding is known (a folded aware run makes one link per orbit only)
        self._build_network = partial(self._backend.build, self._env, dims, net.source, net)
        self.network: Network
        #: what the system layers send through (network.checked_models.system_side): the
        #: network, or the view that holds a backend of the user's to posting each send once
        self.system_side: Any = None
        self.remote_memory = RemoteMemory(inputs.remote_memory)
        cfg = inputs.system
        self.local_mem_bytes_per_s = local_mem_gbps_to_bytes_per_s(cfg.local_mem_bw_gbps)
        self.peak_flops = tflops_to_flops(cfg.peak_perf_tflops)
        self.local_mem_trace_prefix = (cfg.local_mem_trace_filename
                                       if cfg.track_local_mem and memory_traces else None)
        #: the jobs of a multi-job run (:mod:`simpy_astra.running.jobs`), None for one workload
        self.jobs = inputs.jobs
        #: communicator group id -> parallel dimension, where the generator said (breakdowns)
        self.group_names, self.p2p_name, group_notes = group_names(inputs)
        self.link_bytes_by_job = None
        self.folding: Folding | None = None
        #: why the run folds less than it might, in one line (None: fully folded, or not asked)
        self.fold_note: str | None = None
        self.npus: list[Npu] = []
        self.systems: list[SystemLayer] = []
        self.reports: list[NpuReport] = []
        self.warnings: list[str] = [*inputs.warnings, *inputs.system.ignored, *group_notes]
        starts: dict[int, int] = {}  # NPU -> when its job starts, if later than now
        if self.jobs is not None:
            # deferred: only scenario jobs need running.jobs; an ASTRA-sim run does not load it
            from simpy_astra.running.jobs import build_jobs, job_warnings, start_later

            self.network = self._build_network()
            starts = build_jobs(self, inputs, self._npu_done)
            self.warnings += job_warnings(inputs, self.network)
        else:
            build_one_job(self, inputs, dims, self._backend, self._build_network, self._npu_done)
        self._npu_by_id = {npu.device_id: npu for npu in self.npus}
        #: the bound check of the congestion-unaware backend (one job's collectives), else None
        self.floor_check = FloorCheck.for_run(self._backend, self.jobs, dims, cfg, self.npus, net.rails)
        # a job on part of the NPUs sees one dimension of its ranks: its system lists are read so
        seen_dims = self.systems[0].network_dims if self.jobs and self.systems else self.network_dims
        self.warnings += start_warnings(self.npus, cfg, seen_dims, inputs, dims)
        # folded runs: a representative's report is every orbit member's (held, see OrbitReports)
        hold = self.folding is not None and self.network.may_break_symmetry
        # a cluster preset's (not ASTRA-sim's inputs, whose order within a tick is kept): NPU order
        # folded or not, so that --fold-symmetry off prints what on does
        in_npu_order = self.folding is not None or net.rails is not None
        self._orbits = OrbitReports(self.folding, self._emit, hold) if in_npu_order else None
        self.unfolded_rerun = False  # a folded run that stalled (or lost its symmetry) ran again unfolded
        #: called with the unfolded Simulation such a run hands over to, before it runs (recorders follow)
        self.rerun_watchers: list[Callable[[Simulation], None]] = []
        self.written_files: list[str] = []  # files the run wrote itself (local-memory traces)
        self._concluded = False
        self._failure: Exception | None = None
        # every NPU is a SimPy process executing its graph; the run stops when all have
        # finished, whatever other processes a user added to ``env``
        for npu in self.npus:
            late = starts.get(npu.device_id) if starts else None
            npu.process = self._env.process(start_later(self._env, npu, late) if late else npu.execute())
            if self.folding is not None:
                npu.stands_for = self.orbit_of(npu.npu_id)
        #: fires (value: the time) when every NPU has finished; processed in that instant, so
        #: a process that waits on it goes on before ``run()`` returns
        self.finished = self._env.event()
        self._running = False  # run() is running the environment (it stops at ``finished``)
        self._finished_all = self._env.all_of([npu.process for npu in self.npus])
        self._finished_all.callbacks.append(self._all_finished)
        self._stalled = self._env.event()  # the watchdog found the model stuck
        self._stalled.callbacks.append(StopSimulation.callback)
        # the watchdog always runs: user processes may share the environment however it was
        # obtained, and it costs a handful of wake-ups per run
        self._env.process(stall.watch_for_stall(self._env, self._finished_all, self._stalled,
                                                lambda: stall.quiet_state(self.network, self.npus),
                                                lambda: self.stall_patience_ns,
                                                lambda: stall.spin_state(self.network, self.npus)))

    def npu_for(self, npu_id: int) -> Npu:
        """The simulated NPU whose figures NPU ``npu_id`` has (itself unless folded)."""
        if isinstance(npu_id, bool) or not isinstance(npu_id, int) or not 0 <= npu_id < self.total_npus:
            raise ValueError(f"NPU {npu_id!r} does not exist (the run has NPUs 0..{self.total_npus - 1})")
        if self.folding is None:
            return self._npu_by_id[npu_id]
        return self._npu_by_id[self.folding.rep_of[npu_id]]

    def orbit_of(self, npu_id: int) -> list[int]:
        """The NPUs a simulated NPU stands for (just itself unless folded)."""
        return [npu_id] if self.folding is None else self.folding.orbit(npu_id)

    # ------------------------------------------------------------------ running
    def _all_finished(self, event: simpy.Event) -> None:
        """Every NPU's process ended: ``finished`` fires now; ``run()`` stops here."""
        if not event.ok:
            return  # an NPU failed: SimPy raises it, and run() reports it
        process_in_place_or_raise(self.finished, self._env.now)
        if self._running:  # stop once what is queued for this instant has run (its errors too)
            stop_at_end_of_instant(self._env)

    def _npu_done(self, npu: Npu) -> None:
        """An NPU's graph finished: give out its report (its whole orbit's, if folded)."""
        if self._env.now > horizon.HORIZON_NS:  # sizes over bandwidths add up past what time can hold
            late = next((job for job in self.jobs or () if npu.device_id in job.npus), None)
            if late is not None and late.start_ns and not all(self._npu_by_id[d].finished for d in late.npus):
                return  # the latest start must fit the job's last NPU: its finish raises
            raise horizon.finish_past_horizon(self.inputs.network, npu.npu_id, self._env.now, npu.gpu_ops_ns, npu.config,
                                              late)
        if self.jobs is not None:  # reports name physical NPUs
            self._emit(npu.report.for_npu(npu.device_id))
        elif self._orbits is None:
            self._emit(npu.report)
        else:
            self._orbits.finished(npu.report)

    def failed(self, exc: Exception) -> None:
        """An NPU's process raised ``exc``: the first one is what the run reports."""
        self._failure = self._failure or exc

    def _emit(self, report: NpuReport) -> None:
        self.reports.append(report)
        if self.on_report is not None:
            self.on_report(report)

    # ------------------------------------------------------------------ building from files
    @classmethod
    def from_scenario(cls, path: str, backend: str | None = None, **kwargs) -> Simulation:
        """A simulation of a scenario YAML (see :mod:`simpy_astra.config.scenario`), not yet run."""
        return cls(load_scenario(checked_path("from_scenario", path), backend,
                                 backend_flag="Simulation.from_scenario(backend=...)"), **kwargs)

    @classmethod
    def from_astra_files(cls, workload: str, system: str, network: str, remote_memory: str,
                         comm_groups: str = "empty", backend: str = DEFAULT_BACKEND, **kwargs) -> Simulation:
        """A simulation of ASTRA-sim's input files (the reference binary's four flags)."""
        check_paths("from_astra_files", workload=workload, system=system, network=network, remote_memory=remote_memory,
                    comm_groups=comm_groups)
        return cls(inputs_from_astra_flags(workload, system, network, remote_memory, comm_groups, backend), **kwargs)

    def run(self, until: float | None = None) -> list[NpuReport]:
        """Run until every NPU has finished (user processes that never end do not keep it
        going) or, with ``until``, until that time at the latest; call again to go on. Returns
        the reports of the NPUs that finished so far."""
        if until is not None:
            until = horizon.api_number(until, "run(until=...)")
        if not self.finished.processed and not self._stalled.triggered:
            self.users_processes.hold_queued()
            self._running = True
            try:
                with fast_collection(), stopping.engine(self._env):
                    self._env.run(until=until)
            except Exception:
                if self._failure is not None:  # SimPy re-raises a copy, maybe another NPU's
                    raise self._failure from None
                raise
            finally:
                self._running = False
        if (until is not None and not self.finished.processed and not self._stalled.processed
                and self._env.peek() != float("inf")):
            if self._orbits is not None:  # what finished before ``until``, out now
                self._orbits.settle()
            return self.reports  # stopped at ``until``: more to come
        return self._conclude()

    def _run_unfolded(self, broken: str | None) -> list[NpuReport]:
        """A folded run names NPUs by their representatives: diagnose (or, with its symmetry
        broken, redo) it unfolded, which raises for a stall; reports given out are not given again."""
        given = {r.npu_id for r in self.reports}
        on_report = self.on_report
        full = Simulation(replace(self.inputs, fold_symmetry=False), None if on_report is None else
                          lambda r: None if r.npu_id in given else on_report(r), stall_patience_ns=self.stall_patience_ns,
                          memory_traces=self.local_mem_trace_prefix is not None)  # a sweep point's writes none
        self.unfolded_rerun = True
        for watch in self.rerun_watchers:
            watch(full)
        self.reports = full.run()
        self.network = full.network  # its link statistics are every link's own
        self.warnings = full.warnings + [f"symmetry folding undone: {broken}; ran again unfolded"] * bool(broken)
        self.written_files = full.written_files
        return self.reports

    def _conclude(self) -> list[NpuReport]:
        """After the last event: hand out held reports, then diagnose what did not finish."""
        if self._concluded:
            return self.reports
        self._concluded = True
        # links that met two NPUs' messages in one instant (folding.links): run unfolded
        broken = self.network.broken_symmetry if self.folding is not None else None
        if self._orbits is not None and broken is None:
            self._orbits.flush()
        stuck = [n for n in self.npus if not n.finished]
        unmatched = self.network.board.unmatched(stall.describe_handler)
        held_keys = stall.held_messages(self.network) if stuck else []
        held = [stall.describe_held(key, link) for key, link in held_keys]
        if self.folding is not None and (stuck or unmatched or broken):
            return self._run_unfolded(broken)
        if self.inputs.system.npu_groups or self.jobs:  # the tracker is imported only when asked
            from simpy_astra.engine.memory_tracker import capacity_warnings

            configs = {None: self.inputs.system} if self.jobs is None else {j.name: j.system for j in self.jobs}
            self.warnings += capacity_warnings(self.npus, configs)
        if self.local_mem_trace_prefix:  # the tracker is imported only by runs that track memory
            from simpy_astra.engine.memory_tracker import write_memory_traces

            self.written_files += write_memory_traces(self.npus, self.local_mem_trace_prefix, self.orbit_of)
        if stuck:
            spinning = self._stalled.value if self._stalled.triggered else None
            unheld = self.network.board.in_flight() - sum(1 for key, _link in held_keys if key is not None)
            raise StalledError(stall.stall_report(self._env.now, self.total_npus, stuck, unmatched, held=held,
                                                  last_ns=stall.last_progress_ns(self.npus), spinning=spinning,
                                                  unheld=unheld, waiting=stall.waiting_phases(stuck),
                                                  unposted=never_posted(self.system_side)))
        if self.floor_check is not None:
            self.warnings += self.floor_check.warnings(self.npus)
        if unmatched:
            # every NPU finished (sends complete on arrival, as in the reference): the figures
            # stand, but a message nobody received is almost always a workload bug
            self.warnings.append(stall.stall_report(self._env.now, self.total_npus, stuck, unmatched))
        return self.reports
