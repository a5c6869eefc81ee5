"""The record of everything one run needs, parsed and validated: what the scenario YAML and
the reference's flags both produce, and what :class:`simpy_astra.simulation.Simulation` takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.config.memory import RemoteMemoryConfig
from simpy_astra.config.network import NetworkConfig
from simpy_astra.config.system import SystemConfig
from simpy_astra.infra.decoded_traces import DecodedTraces
from simpy_astra.network.backends import DEFAULT_BACKEND

if TYPE_CHECKING:
    from simpy_astra.config.jobs import JobInputs
    from simpy_astra.workloads.generated import Prepared


@dataclass(frozen=True)
class WorkloadInfo:
    """What a run knows of its workload beyond its traces: what its generator said."""

    #: the generated job (:class:`~simpy_astra.workloads.generator_registry.Prepared`), None for ET files
    prepared: Prepared | None = None
    #: communicator group id -> the parallel dimension it belongs to (``tp``, ``dp``...), where
    #: the workload's generator says (transformer, Megatron); read by time breakdowns only
    group_names: Mapping[int, str] = field(default_factory=dict)
    #: the dimension of sends and receives that name no ``comm_stream`` (the generators': ``pp``)
    p2p_name: str = "p2p"
    #: what the generator warns of the job and runs on (Megatron's own warnings)
    warnings: tuple[str, ...] = ()
    #: traces the size checks decoded before the build (--csv-out, --trace-out), which the
    #: build takes instead of decoding them again; emptied by the build
    decoded: DecodedTraces = field(default_factory=DecodedTraces, compare=False, repr=False)

    @property
    def reports_figures(self) -> bool:
        """The job reports its own figures (e.g. Megatron's TFLOP/s and MFU)."""
        return self.prepared is not None and self.prepared.entry.report is not None

    def figures(self, iteration_time_ns: int) -> Any:
        """The job's own figures from its simulated iteration time (``lines()``, ``as_dict()``)."""
        assert self.prepared is not None and self.prepared.entry.report is not None
        return self.prepared.entry.report(self.prepared.job, iteration_time_ns)


@dataclass(frozen=True)
class SimulationInputs:
    """Everything one run needs, already parsed and validated (frozen: a front end that
    changes a field makes a new one, ``dataclasses.replace``)."""

    workload_prefix: str
    system: SystemConfig
    network: NetworkConfig
    remote_memory: RemoteMemoryConfig
    comm_groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    backend: str = DEFAULT_BACKEND
    queues_per_dim: int = 1
    #: simulate each orbit of symmetric NPUs once (:mod:`simpy_astra.folding`); None = the
    #: default, which the environment variable SIMPY_ASTRA_FOLD (0/1) may set
    fold_symmetry: bool | None = None
    #: warnings about the inputs (e.g. a comm-group file ASTRA-sim would ignore)
    warnings: list[str] = field(default_factory=list)
    #: several jobs on the network (:mod:`simpy_astra.config.jobs`); None: one job, the
    #: workload above on every NPU
    jobs: list[JobInputs] | None = None
    #: what the workload's generator said of it
    workload: WorkloadInfo = field(default_factory=WorkloadInfo)
