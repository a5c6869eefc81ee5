"""Which ``cluster:`` keys a run reads: one it never reads is refused rather than run as if set
(NCCL's fitted terms off the analytical backend or beside a network of the scenario's own, the
spine beside that network); an NCCL algorithm's fitted term where that algorithm never runs
(another forced, no NVLS, one GPU a node) is said, and so is a route's latency where the job
sends no message the network plays."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from simpy_astra.engine.nccl_names import COLLECTIVE_ALGORITHMS, FORCEABLE
from simpy_astra.errors import InputError
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND

if TYPE_CHECKING:
    from simpy_astra.config.cluster import Cluster

#: cluster keys only NCCL's all-reduce model reads (the analytical backend on the preset's machine)
NCCL_FIT_KEYS = ("nccl_latency_scale", "nccl_latency_scale_algo", "nccl_launch_us", "nccl_ring_efficiency",
                 "nccl_tree_efficiency", "nccl_nvls_efficiency", "nccl_node_ll_bandwidth_scale", "nccl_node_ll128_bandwidth_scale",
                 "nccl_node_ll128_latency_scale", "nvls")
#: cluster keys only a message played on the preset's routes reads (NCCL's model has its own)
LATENCY_KEYS = ("nvlink_latency_ns", "inter_node_latency_ns")
#: cluster keys only the preset's routes read (its leaves and spine)
SPINE_KEYS = ("nodes_per_leaf", "oversubscription")


def refuse_unread_cluster_keys(path: str, written: dict, users: tuple[bool, bool], backend: str, how: str,
                               reads_gpu: bool) -> None:
    """A ``cluster:`` key this run never reads, refused rather than run as if set: NCCL's fitted
    all-reduce terms time the all-reduce only on the preset's own network with a backend that
    times it so, the leaves and spine exist only on the preset's own network, and the GPU's
    figures time only a generator's kernels that it times on the cluster's GPU (Megatron's); and
    ``nccl_algo: ring`` shapes only the preset's system and NCCL's model (tree and nvls, which
    only the model reads, are refused where it does not run, after this)."""
    nccl = f"read only by NCCL's all-reduce model on the preset's own machine ({DEFAULT_BACKEND} backend)"
    user_network, user_system = users
    unread: dict[str, str] = {}
    if written.get("nccl_algo") == "ring" and user_system and (user_network or not BACKENDS[backend].times_nccl):
        unread["nccl_algo"] = (f"read by the preset's system (rings on every dimension) and by NCCL's all-reduce "
                               f"model on the preset's own machine ({DEFAULT_BACKEND} backend); the scenario's "
                               f"system replaces the first, and its "
                               + ("network" if user_network else f"{backend} backend ({how})") + " the second")
    if user_network:
        unread.update(dict.fromkeys(SPINE_KEYS, "read only on the preset's own machine; the scenario's network "
                                                "replaces its leaves and spine"))
        # (the links' bandwidths still size a Megatron trace's tensor-parallel window; no latency does)
        unread.update(dict.fromkeys(LATENCY_KEYS,
                                    "read only on the preset's own machine; the scenario's network replaces its "
                                    "NVLink and rails, latencies too"))
        unread.update(dict.fromkeys(NCCL_FIT_KEYS, f"{nccl}; the scenario's network replaces it"))
    elif not BACKENDS[backend].times_nccl:
        unread.update(dict.fromkeys(NCCL_FIT_KEYS, f"{nccl}; the {backend} backend ({how}) plays the all-reduce "
                                                   f"as messages"))
    if not reads_gpu:
        unread["gpu"] = ("read only by generate megatron, which times its kernels on the cluster's GPU; this "
                         "workload's compute is timed by its own trace, or it has none")
    given = sorted(key for key in written if key in unread)
    if given:
        key = given[0]
        raise InputError(f"{path}: cluster.{key}: {unread[key]}, so it would change nothing; remove {key}")


def _pat_absent(cluster: Cluster, gathers: bool, on_every_rank: bool) -> str | None:
    """Why NCCL never runs PAT here, None where it may: PAT runs where forced, and NCCL may
    choose it for a job's all-gather or reduce-scatter (``gathers``) on a group of one GPU a
    node (``nccl_tuning.available``: several nodes; a group of every rank, ``on_every_rank``,
    holds one only at ``gpus_per_node`` 1)."""
    forced, per_node = cluster.nccl_algo, cluster.gpus_per_node
    if forced in FORCEABLE:
        return None if forced == "pat" else f"nccl_algo forces {forced}"
    if not gathers:
        return "the job issues no all-gather or reduce-scatter (PAT's collectives)"
    if cluster.nodes == 1:
        return "the job runs on one node (PAT runs across nodes)"
    if on_every_rank and per_node > 1:
        return (f"its all-gathers and reduce-scatters run over every GPU, {per_node} a node (PAT runs at "
                f"one GPU a node)")
    return None


def _algorithm_absent(cluster: Cluster, algo: str) -> str | None:
    """Why NCCL never runs ``algo`` (tree, nvls) here, None where it may: another forced, no
    NVLS on the nodes (``nvls: false``, or the preset's) or one GPU each (NCCL runs NVLS only
    where a node holds several of a group's GPUs: ``nccl_tuning.available``)."""
    forced = cluster.nccl_algo
    return (f"nccl_algo forces {forced}" if forced in FORCEABLE and forced != algo else
            "nvls is false (no NVLink SHARP)" if algo == "nvls" and not cluster.nvls else
            "each node holds one GPU (gpus_per_node 1)" if algo == "nvls" and cluster.gpus_per_node == 1
            else None)


def _runs(algo: str) -> str:
    """``nvls (for an all-reduce, reduce-scatter or all-gather)``: ``algo`` and the collectives
    NCCL may run it for (``nccl_names.COLLECTIVE_ALGORITHMS``)."""
    kinds = [kind.replace("_", "-") for kind, algos in COLLECTIVE_ALGORITHMS.items() if algo in algos]
    listed = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
    return f"{algo} (for a{'n' if listed[0] in 'aeiou' else ''} {listed})"


def _unused_shares(cluster: Cluster, written: Iterable[str], gathers: bool,
                   on_every_rank: bool) -> dict[str, tuple[str, str]]:
    """Each key ``written`` of a fitted NCCL algorithm's term that this cluster never reads ->
    (what reads it, why that never runs here). An algorithm's share (``nccl_tree_efficiency``,
    ``nccl_nvls_efficiency``) is read where that algorithm runs and where PAT does: having no
    fit of its own, PAT runs at the mean of the machine's shares (``Links.scaled``).
    ``nccl_latency_scale`` is read only by the algorithm it was fitted on
    (``nccl_latency_scale_algo``, written or the preset's; PAT keeps its own at 1 then)."""
    keys, scaled = set(written), cluster.node.get("nccl_latency_scale_algo")
    pat = _pat_absent(cluster, gathers, on_every_rank)
    out = {}
    for algo in ("tree", "nvls"):
        why = _algorithm_absent(cluster, algo)
        if why is None:
            continue
        if f"nccl_{algo}_efficiency" in keys and pat is not None:
            out[f"nccl_{algo}_efficiency"] = (
                f"NCCL runs {_runs(algo)} or PAT (at the mean of every share)",
                why if pat == why else f"{why}, and {pat}")
        if "nccl_latency_scale" in keys and scaled == algo:
            out["nccl_latency_scale"] = (f"NCCL runs {_runs(algo)}, the algorithm it was fitted on", why)
    return out


def unused_share_keys(cluster: Cluster, written: Iterable[str], gathers: bool = True,
                      on_every_rank: bool = False) -> dict[str, str]:
    """Each key of :func:`_unused_shares` -> why: the step is the same without it (a sweep runs
    such points once)."""
    return {key: why for key, (_, why) in _unused_shares(cluster, written, gathers, on_every_rank).items()}


def unused_algorithm_shares(cluster: Cluster, written: Iterable[str], gathers: bool = True,
                            on_every_rank: bool = False) -> list[str]:
    """A line for each of :func:`unused_share_keys`, saying what reads it and why that never
    runs (one rule makes both). Said, not refused: a calibrated cluster keeps every share, and
    a sweep over ``nccl_algo`` (what if NCCL ran the ring here) gives them to every point."""
    return [f"{cluster.where}.{key} changes nothing here: it is read only where {reads}, and {why}"
            for key, (reads, why) in _unused_shares(cluster, written, gathers, on_every_rank).items()]


#: the kind of link each latency is of (:meth:`Rails.links_crossed`)
LATENCY_LINKS = {"nvlink_latency_ns": "nvlink", "inter_node_latency_ns": "rail"}


def _played(cluster: Cluster, written: Iterable[str], backend: str, plays_messages: bool,
            pairs: Iterable[tuple[int, int]] | None) -> dict[str, str]:
    """Each route latency ``written`` that no message the network plays reads -> why."""
    if not BACKENDS[backend].times_nccl:
        return {}
    idle = set(cluster.idle_key_names(written))
    keys = [key for key in LATENCY_KEYS if key in written and key not in idle]
    if not plays_messages:
        return dict.fromkeys(keys, "this job sends none (NCCL's model times its all-reduces, reduce-scatters "
                                   "and all-gathers)")
    if pairs is None:
        return {}
    crossed = cluster.rails().links_crossed(pairs)
    return {key: ("none of this job's crosses NVLink (each leaves its node on its own rail)"
                  if LATENCY_LINKS[key] == "nvlink" else "none of this job's leaves its node")
            for key in keys if LATENCY_LINKS[key] not in crossed}


def unplayed_latency_keys(cluster: Cluster, written: Iterable[str], backend: str, plays_messages: bool,
                          pairs: Iterable[tuple[int, int]] | None = None) -> list[str]:
    """Each route latency ``written`` that a job on the preset's own machine never reads: only a
    message the network plays (a pipeline send, an all-to-all) reads it, and on a backend that
    times collectives by NCCL's model (whose latencies are its own) a job that sends none
    (``WorkloadLayout.plays_messages``) runs the same step without it (on the preset's system:
    a scenario's own may play a collective by its own algorithm). The keys a size already
    leaves idle (:meth:`Cluster.idle_key_names`) are not named twice. ``pairs``: the
    (sender, receiver) ranks of the messages it plays, where known: a latency of links none of
    them crosses is not read either (an NVLink latency where every pipeline send leaves its node
    on its own rail)."""
    return list(_played(cluster, written, backend, plays_messages, pairs))


def unplayed_latencies(cluster: Cluster, written: Iterable[str], backend: str, plays_messages: bool,
                       pairs: Iterable[tuple[int, int]] | None = None) -> list[str]:
    """A line for each of :func:`unplayed_latency_keys`. Said, not refused: a calibrated cluster
    keeps its latencies, and a sweep over ``pp`` gives them to every point."""
    return [f"{cluster.where}.{key} changes nothing here: it is read only by messages the network plays one "
            f"by one (pipeline sends, all-to-alls), and {why}"
            for key, why in _played(cluster, written, backend, plays_messages, pairs).items()]
