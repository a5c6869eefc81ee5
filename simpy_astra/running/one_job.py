"""One workload on every NPU, at build time (ranks are NPU ids): the reference's run. Its
communicator groups are read, symmetric NPUs folded where the run allows, the network built
(one link per orbit when folded) and the simulated NPUs made with their system layers; all
file reading happens here, before time starts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from simpy_astra.engine.collective_plans import CollectivePlanner
from simpy_astra.engine.npu import Npu, NpuServices
from simpy_astra.folding import fold_run, trusted_claims
from simpy_astra.network.checked_models import system_side
from simpy_astra.running.input_checks import check_et_count

if TYPE_CHECKING:
    from simpy_astra.config.inputs import SimulationInputs
    from simpy_astra.network import Network


def build_one_job(sim: Any, inputs: SimulationInputs, dims: list, backend: Any,
                  build_network: Callable[[], Network], npu_done: Callable[[Npu], None]) -> None:
    """Build the run's one workload into ``sim`` (its planner, folding, network, NPUs and system
    layers): ``build_network`` makes the network, which ``backend`` folds where the run folds;
    ``npu_done`` is called as each NPU's graph finishes."""
    cfg, source = inputs.system, inputs.network.source
    check_et_count(inputs.workload_prefix, sim.total_npus, source)
    # all file reading happens here, before time starts (custom collectives included)
    sim.planner = CollectivePlanner(cfg, sim.total_npus)
    sim.planner.add_file_groups(inputs.comm_groups, "SimulationInputs.comm_groups")
    groups = sim.planner.file_group_members()
    if cfg.npu_groups:  # NPUs that differ are not symmetric
        inputs = replace(inputs, fold_symmetry=False)
    traces, sim.folding, sim.fold_note = fold_run(inputs, dims, groups, sim.planner.parse_process_groups)
    if sim.folding is not None:
        sim.warnings += trusted_claims(cfg, inputs.network.link_model if backend.folds == "links" else None)
    simulated = range(sim.total_npus) if sim.folding is None else sim.folding.representatives
    sim.network = build_network() if sim.folding is None else backend.folded(build_network, sim.folding)
    # the simulated NPUs (every NPU unless folded), with their clocks and system layers
    nccl = inputs.network.nccl
    sim.system_side = system_side(sim.network)
    services = NpuServices(cfg, sim.total_npus, sim.system_side, sim.remote_memory, sim.planner,
                           sim.local_mem_bytes_per_s, sim.peak_flops, npu_done, sim.failed,
                           None if nccl is None else nccl.rendezvous(simulated))
    for i in simulated:  # an orbit's members have the representative's graph
        npu = services.build_npu(i, i, traces[i], sim.network_dims, inputs.queues_per_dim, sim.env)
        sim.systems.append(npu.system)
        sim.npus.append(npu)
