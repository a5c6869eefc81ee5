"""A scenario's ``cluster:`` beside its other fields: the preset's system and network laid out
as the generated job's layout says, and the scenario fields a cluster's job would not read (or
would read otherwise) refused rather than run as if set."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from simpy_astra.config.network import NetworkConfig
from simpy_astra.config.scenario_workload import generator_entry, prepare_workload
from simpy_astra.config.system import REQUIRED_KEYS
from simpy_astra.engine.nccl_names import MODEL_ONLY
from simpy_astra.errors import InputError
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND

if TYPE_CHECKING:
    from simpy_astra.config.cluster import Cluster
    from simpy_astra.workloads.generated import Prepared


def refuse_unread_beside_cluster(path: str, doc: dict, queues: int, injection_scale: float,
                                  user_network: bool) -> None:
    """ASTRA-sim's knobs that a cluster's job does not take, refused rather than run as if set:
    a generated job's own communicator groups (tp, dp, pp...; a user's traces bring none, so
    their ``pg_name`` groups are given as on any network), and, on the preset's machine, the system
    model's endpoint-delay scaling and dimension queues: the preset sets its system to run
    collectives as NCCL does (timed by NCCL's model, broadcasts too; all-to-alls played as
    messages), and on a dense step x 1000 and 16 changed nothing to the ns."""
    if "comm_groups" in doc and isinstance(doc.get("workload"), dict):  # generate: ...
        raise InputError(f"{path}: field 'comm_groups': a cluster's job brings its own communicator groups "
                         f"(tp, dp, pp...), which these would replace; remove comm_groups")
    models = sorted({"link-model", "switch-model"} & set(doc["network"])) if isinstance(doc.get("network"), dict) else []
    if models and "topology" not in doc["network"]:  # read as a network of its own, it lacked its topology
        kind = models[0].removesuffix("-model")  # Simulation's keywords: link_model=, switch_model=
        raise InputError(f"{path}: network: beside cluster: replaces the preset's whole network, so {models[0]} alone "
                         f"is not added to it; run the preset's network with your model from Python: "
                         f"Simulation.from_scenario(path, backend='congestion_aware', {kind}_model=..., {kind}_params=...)")
    if user_network:
        return
    if injection_scale != 1.0:
        raise InputError(f"{path}: field 'injection_scale': it scales ASTRA-sim's system endpoint-delay, which "
                         f"a cluster preset sets itself to run collectives as NCCL does; remove injection_scale")
    if queues != 1:
        raise InputError(f"{path}: field 'num_queues_per_dim': a cluster's machine runs its collectives "
                         f"side by side as NCCL's streams do, not in ASTRA-sim's queues; remove num_queues_per_dim")


def with_cluster(path: str, doc: dict) -> tuple[dict, Cluster | None, Prepared | None]:
    """``cluster:``: a preset builds system, network and backend (fields the scenario gives
    win), laid out as the generated job's layout says; the cluster and that job (None, None:
    no cluster)."""
    if "cluster" not in doc:  # an empty ``cluster:`` is the user's cluster, refused as such
        return doc, None, None
    # deferred: only a scenario with a cluster reads it; an ASTRA-sim run does not load it
    from simpy_astra.config.cluster import load_cluster

    if "jobs" in doc:
        raise InputError(f"{path}: cluster: give it with workload (one job), not with jobs")
    cluster = load_cluster(doc["cluster"], f"{path}: cluster", os.path.dirname(os.path.abspath(path)))
    system = doc.get("system")
    missing = [key for key in REQUIRED_KEYS if isinstance(system, dict) and key not in system]
    if missing:
        raise InputError(f"{path}: system: beside cluster: it replaces the preset's whole system rather than "
                         f"adding to it, and it has no {missing[0]}; leave system out to use the "
                         f"preset's, or give a whole system")
    prepared = prepare_workload(path, doc.get("workload"), cluster)
    blocks = None if prepared is None else prepared.layout().blocks
    return ({"system": cluster.system_mapping(blocks), "network": cluster.network_mapping(blocks),
             "backend": DEFAULT_BACKEND, **doc}, cluster, prepared)


def refuse_without_cluster(path: str, workload: Any) -> None:
    """A generator that runs beside a cluster (Megatron's) without one, nor the GPU count and
    GPU it would give: ask for the cluster (not for the system the preset would build)."""
    if not isinstance(workload, dict) or not isinstance(workload.get("generate"), str):
        return
    entry = generator_entry(workload["generate"])
    gpus = workload.get("gpus")
    given = isinstance(gpus, int) and not isinstance(gpus, bool) and isinstance(workload.get("gpu"), dict)
    if entry is not None and entry.needs_cluster and not given:
        raise InputError(f"{path}: workload: needs a cluster: beside it (cluster: {{preset: dgx-a100-80gb, gpus: "
                         f"N}}); it gives the GPU count and the GPU")


def reads_gpu(prepared: Prepared | None) -> bool:
    """The workload times its kernels on the cluster's GPU (a generator that runs only beside a
    cluster, which gives it the GPU: Megatron's)."""
    entry = None if prepared is None else generator_entry(prepared.generator)
    return entry is not None and entry.needs_cluster


def refuse_roofline_compute(path: str, generator: str) -> None:
    """A generator whose compute nodes carry FLOPs for a roofline (not durations) on a cluster
    whose system runs none: every kernel would take 1 ns, the step all communication."""
    entry = generator_entry(generator)
    if entry is not None and entry.roofline_compute:
        raise InputError(f"{path}: workload: generate {generator} writes compute nodes with FLOPs for a roofline "
                         f"to time, and the cluster's system times each node by its duration, so every kernel "
                         f"would take 1 ns; run generate megatron on a cluster, or give system: with "
                         f"roofline-enabled: 1, peak-perf and local-mem-bw")


def on_preset_routes(path: str, doc: dict, net: NetworkConfig, cluster: Cluster,
                     backend: str) -> tuple[NetworkConfig, list[str]]:
    """The preset's network with every pair on its route through NVSwitch and rails (and
    NCCL's all-reduce model where the backend times collectives as NCCL does), and what is
    said of it; what only NCCL's model or a spine-aware backend would read is refused."""
    routes = cluster.rails()
    # the analytical backend times an all-reduce as NCCL does; the others play its messages
    timed = BACKENDS[backend].times_nccl
    if not timed and cluster.nccl_algo in MODEL_ONLY:
        raise InputError(f"{path}: cluster.nccl_algo: {cluster.nccl_algo} is timed by the "
                         f"{DEFAULT_BACKEND} backend only; the {backend} backend plays collectives as "
                         f"messages (leave out nccl_algo, or the backend)")
    if not timed and not routes.symmetric:  # its links are the dimensions': no spine
        mine = "oversubscription" in doc["cluster"]  # else the preset's own: name its file, and the override
        raise InputError(f"{path}: cluster.{'' if mine else f'preset: {cluster.preset}: node.'}oversubscription: "
                         f"a spine of {routes.oversubscription:g}:1 over leaves of "
                         f"{routes.nodes_per_leaf} node(s) is charged by the {DEFAULT_BACKEND} backend only; "
                         f"the {backend} backend plays the rails as a full fat tree (" + (
                             "leave out oversubscription" if mine else "cluster: {oversubscription: 1} for this run")
                         + ", or the backend)")
    net = replace(net, rails=routes, nccl=cluster.nccl_all_reduce() if timed else None)
    return net, [cluster.nvls_note] if timed and cluster.nvls_note else []  # only NCCL's model reads NVLS
