"""Build tiny runs in a temporary folder: per-rank node lists plus config mappings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.engine.statistics import NpuReport
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import write_et

BASE_SYSTEM = {
    "scheduling-policy": "LIFO",
    "collective-optimization": "baseline",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "local-mem-bw": 50,
    "all-reduce-implementation": ["ring"],
    "all-gather-implementation": ["ring"],
    "reduce-scatter-implementation": ["ring"],
    "all-to-all-implementation": ["direct"],
}


def run(tmp: Path, ranks: list[list], network: dict, system: dict | None = None,
        memory: dict | None = None, groups: dict | None = None,
        backend: str = "congestion_unaware") -> dict[int, NpuReport]:
    """Write the inputs under ``tmp`` and simulate; returns reports by NPU id."""
    return run_sim(tmp, ranks, network, system, memory, groups, backend)[0]


def run_sim(tmp: Path, ranks: list[list], network: dict, system: dict | None = None,
            memory: dict | None = None, groups: dict | None = None,
            backend: str = "congestion_unaware",
            fold: bool | None = None, run: bool = True, **sim_kwargs) -> tuple[dict[int, NpuReport], Simulation]:
    """:func:`run`, also returning the finished :class:`Simulation` (for link statistics);
    ``run=False`` returns it unstarted (and no reports). A ``system`` value of None removes
    that key of :data:`BASE_SYSTEM`; ``sim_kwargs`` go to :class:`Simulation` (``env=``, ...)."""
    sysconf = {k: v for k, v in dict(BASE_SYSTEM, **(system or {})).items() if v is not None}
    (tmp / "sys.json").write_text(json.dumps(sysconf))
    (tmp / "net.yml").write_text(yaml.safe_dump(network))
    (tmp / "mem.json").write_text(json.dumps(memory or {"memory-type": "NO_MEMORY_EXPANSION"}))
    groups_path = "none-given"
    if groups is not None:
        groups_path = str(tmp / "groups.json")
        Path(groups_path).write_text(json.dumps(groups))
    (tmp / "wl").mkdir(exist_ok=True)
    for rank, nodes in enumerate(ranks):
        write_et(str(tmp / "wl" / f"w.{rank}.et"), nodes)
    inputs = inputs_from_astra_flags(
        workload=str(tmp / "wl" / "w"), system=str(tmp / "sys.json"), network=str(tmp / "net.yml"),
        remote_memory=str(tmp / "mem.json"),
        comm_groups=groups_path if groups is not None else "empty", backend=backend,
    )
    inputs = dataclasses.replace(inputs, fold_symmetry=fold)
    sim = Simulation(inputs, **sim_kwargs)
    if not run:
        return {}, sim
    return {r.npu_id: r for r in sim.run()}, sim


def net(topology: str, npus: int, bandwidth_gbps: float = 50.0, latency_ns: float = 500.0) -> dict:
    return {"topology": [topology], "npus_count": [npus], "bandwidth": [bandwidth_gbps], "latency": [latency_ns]}
