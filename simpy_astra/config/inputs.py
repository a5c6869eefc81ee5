"""The record of everything one run needs, parsed and validated: what the scenario YAML and
the reference's flags both produce, and what :class:`simpy_astra.simulation.Simulation` takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.config.memory import RemoteMemoryConfig
from simpy_astra.config.network import NetworkConfig
from simpy_astra.config.system import SystemConfig
from simpy_astra.network.backends import DEFAULT_BACKEND

if TYPE_CHECKING:
    from simpy_astra.config.jobs import JobInputs


@dataclass
class SimulationInputs:
    """Everything one run needs, already parsed and validated."""

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
    #: a generated training job that reports its own figures (``figures(iteration_time_ns)``
    #: -> an object with ``lines()`` and ``as_dict()``), e.g. Megatron's TFLOP/s and MFU
    training: Any = None
    #: communicator group id -> the parallel dimension it belongs to (``tp``, ``dp``...), where
    #: the workload's generator says (transformer, Megatron); read by time breakdowns only
    group_names: dict[int, str] = field(default_factory=dict)
    #: the dimension of sends and receives that name no ``comm_stream`` (the generators': ``pp``)
    p2p_name: str = "p2p"
