"""Which sweep points run the same step though their scenarios differ.

Two points whose scenarios read alike (``ring`` and ``[ring]``) are one run; so are two whose
Megatron-LM arguments launch one job (``--sequence-parallel`` at tp 1, which Megatron turns
off; ``--recompute-granularity full`` beside ``--recompute-activations``, which Megatron makes
selective), and two whose clusters load alike: the preset's, default or GPU's own value left
out or written (``nvls: [null, true]`` on an H100 preset), or a key that changes nothing at
their size (``oversubscription`` under one leaf switch) or that their algorithm never reads (the
tree's fitted share beside ``nccl_algo: nvls``). Running both gave two rows of one step, the
first crowned best of a tie, and read as a finding that the axis changes nothing. The job is
Megatron's own reading of the arguments (:func:`~simpy_astra.workloads.megatron.arguments.parse`,
made once as the point is expanded, :mod:`~simpy_astra.sweep.point_job`) and the cluster the
loader's (:func:`~simpy_astra.config.cluster.load_cluster`), so a point is compared by what
runs, not by how it was written.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from simpy_astra.config.field_values import show_value
from simpy_astra.config.jobs import JOB_DEFAULTS, without_defaults
from simpy_astra.errors import InputError
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.sweep.cluster_loads import ClusterLoads


class AlikePoints:
    """A sweep's points as they are expanded, each step run once: a point that runs the step of
    one before it is left out (that ran two rows of one run and crowned one of them), and of
    two alike the one whose run warns less stands for both (``sp=off`` at tp 1: what Megatron
    runs), where the first of them stood."""

    def __init__(self, clusters: ClusterLoads | None = None) -> None:
        #: each cluster loaded, shared with the points' Megatron jobs (:mod:`~simpy_astra.sweep.point_job`)
        self._clusters = ClusterLoads() if clusters is None else clusters
        self.points: list[Any] = []  # the sweep Points kept, in sweep order
        #: run key -> (place in the points, warnings, its cluster as read)
        self._at: dict[str, tuple[int, int, ClusterRead | None]] = {}
        # why -> (the point left out, the place of the one run: named when all are in)
        self._pairs: dict[str, list[tuple[Any, int]]] = {}
        #: every key added, in sweep order (the points left out too: each has its row)
        self.order: list[str] = []
        #: each cluster (and its scenario's context) -> what its run reads: a sweep's points
        #: share a few, each read once per expansion (an edited preset is read as edited next time)
        self._reads: dict[str, ClusterRead | None] = {}
        #: each inline system or network (and its injection scale) -> as its loader reads it:
        #: the points of a sweep share a few, each loaded once per expansion
        self._blocks: dict[str, tuple[str, int] | None] = {}

    def add(self, point: Any, job: Any = None) -> bool:
        """``point`` (a sweep Point) joins the points unless one of them runs its step; ``job``:
        its Megatron job as it was expanded (None: none, or refused), read here and not kept.
        Whether it joined (in its own place, or in that of one alike that it stands for)."""
        key = run_key(point.scenario, self._reads, self._blocks, job, self._clusters)
        self.order.append(point.key)
        if key.text not in self._at:
            self._at[key.text] = (len(self.points), key.warnings, key.cluster)
            self.points.append(point)
            return True
        at, warned, read = self._at[key.text]
        (kept, kept_read), (dropped, dropped_read) = (self.points[at], read), (point, key.cluster)
        if key.warnings < warned:  # the earlier point's place, the later one's writing
            (kept, kept_read), (dropped, dropped_read) = (dropped, dropped_read), (kept, kept_read)
            self.points[at], self._at[key.text] = point, (at, key.warnings, key.cluster)
        why = why_alike(kept.scenario, dropped.scenario, (kept_read, dropped_read))
        self._pairs.setdefault(why, []).append((dropped, at))
        return kept is point

    def warnings(self) -> list[str]:
        """A warning per reason points ran alike (a cluster key that changes nothing at the size
        made one per point pair: twelve warnings of four lines); the pair itself when one."""
        out = []
        for why, pairs in self._pairs.items():
            dropped, kept = pairs[0][0].label, self.points[pairs[0][1]].label
            if len(pairs) == 1:
                out.append((f"axes: {dropped} sets the scenario as {kept} does" if not why else
                            f"axes: {dropped} runs the step {kept} runs ({why})") + f"; it runs once, as {kept}")
            else:
                why = why or "their scenarios read alike"
                out.append(f"axes: {len(pairs)} points run the step another point runs ({why}), e.g. {dropped} "
                           f"as {kept}; each runs once")
        return out

    def same_runs(self) -> list[SameRun]:
        """Each point left out, with the point whose run it shares (once all are in: a later
        point may have taken the place of the one first run) and why, in one line."""
        out = []
        for why, pairs in self._pairs.items():
            for dropped, at in pairs:
                kept = self.points[at]
                said = f"runs the step {kept.label} runs ({why})" if why else f"sets the scenario as {kept.label} does"
                out.append(SameRun(dropped, kept.key, f"{dropped.label} {said}; it ran once, as {kept.label}"))
        return out


@dataclasses.dataclass(frozen=True)
class SameRun:
    """A sweep point left out as one that runs the step of another: results.csv gives it a row
    pointing at that point's (``same_run_as``), its own figures empty."""

    point: Any  # the sweep Point
    #: the key of the point whose run (and row) it shares
    runs_as: str
    #: why, in one line (its row's warnings)
    why: str


@dataclasses.dataclass(frozen=True)
class RunKey:
    """``text`` is equal for two points exactly when they run the same step."""

    text: str
    #: the warnings of the point's own writing (its job's, the cluster's keys that change
    #: nothing): of two points alike, the one with fewer is named, as it says what runs
    warnings: int
    #: its cluster as its run reads it (None: not so read)
    cluster: ClusterRead | None = None


def run_key(scenario: dict[str, Any], reads: dict[str, ClusterRead | None] | None = None,
            blocks: dict[str, tuple[str, int] | None] | None = None, job: Any = None,
            clusters: ClusterLoads | None = None) -> RunKey:
    """The point of ``scenario`` compared by what it runs (by its scenario where that cannot be
    read: such a point is refused or fails on its own, saying why); ``reads`` and ``blocks``
    keep each cluster and each inline system or network read, for the next point, and
    ``clusters`` each cluster loaded; ``job``: its Megatron job as the point was expanded with
    it (None: none, or refused)."""
    doc, warnings = dict(scenario), 0  # the parts it replaces are copied, never edited in place
    if isinstance(scenario.get("jobs"), list):  # a job's key written at its value when left out
        doc["jobs"] = [without_defaults(job) if isinstance(job, dict) else job for job in scenario["jobs"]]
    read = _cluster_read(scenario, {} if reads is None else reads, job, ClusterLoads() if clusters is None else clusters)
    if job is not None:
        # --fp8-format on Megatron's own layers runs them in bf16: on a GPU with FP8 units (which
        # it needs) the step is the one without it
        fp8_unread = not job.fp8 and read is not None and bool(read.inputs["gpu"].get("fp8_tflops"))
        doc["workload"] = {**scenario["workload"], "args": repr(
            [(f.name, getattr(job, f.name)) for f in dataclasses.fields(job)
             if f.compare and f.name != "args" and not (fp8_unread and f.name == "fp8_requested")])}
        warnings += len(job.warnings)  # not in the text: a job's warnings name where it was written
    if read is not None:
        doc["cluster"] = read.inputs
        warnings += read.warnings
    for key in ("system", "network"):
        loaded = _astra_block(scenario, key, {} if blocks is None else blocks)
        if loaded is not None:
            doc[key], ignored = loaded
            warnings += ignored
    return RunKey(json.dumps(doc, sort_keys=True, default=str), warnings, read)


def _astra_block(scenario: dict[str, Any], key: str, blocks: dict[str, tuple[str, int] | None]) -> tuple[str, int] | None:
    """An inline ``system`` or ``network`` mapping as its loader reads it (``bandwidth: 50`` as
    ``[50.0]``, a key left out as its ASTRA-sim default), and how many of its keys it warns
    change nothing; None where it is a file, names a plug-in or graph (their code is loaded at
    the run), or is refused (the point fails on its own, saying why). ``blocks`` keeps each
    one loaded: the points of a sweep that share a block load it once."""
    block = scenario.get(key)
    if not isinstance(block, dict) or {"graph", "link-model", "switch-model"} & set(block):
        return None
    scale = scenario.get("injection_scale", 1.0)
    scale = scale if isinstance(scale, int | float) and key == "system" else 1.0
    text = json.dumps([key, block, scale], sort_keys=True, default=str)
    if text not in blocks:
        blocks[text] = _load_block(key, block, scale)
    return blocks[text]


def _load_block(key: str, block: dict[str, Any], scale: float) -> tuple[str, int] | None:
    from simpy_astra.config import network_from_mapping, system_from_mapping

    try:
        if key == "system":
            config = system_from_mapping(block, key, scale)
            warned = len(config.ignored)
        else:
            config = network_from_mapping(block, key)
            warned = len(config.warnings)
    except InputError:
        return None
    fields = [(f.name, getattr(config, f.name)) for f in dataclasses.fields(config)
              if f.compare and f.name not in ("source", "ignored")]
    return repr(fields), warned


def why_alike(one: dict[str, Any], other: dict[str, Any],
              read: tuple[ClusterRead | None, ClusterRead | None] = (None, None)) -> str:
    """Why the scenarios ``one`` and ``other``, which :func:`run_key` finds alike, run alike
    ('' when they read alike); ``read``: their clusters as :func:`run_key` read them."""
    if json.dumps(one, sort_keys=True, default=str) == json.dumps(other, sort_keys=True, default=str):
        return ""
    why = []
    if megatron_args_of(one) != megatron_args_of(other):
        why.append("Megatron-LM runs their arguments alike")
    jobs = [s.get("jobs") if isinstance(s.get("jobs"), list) else [] for s in (one, other)]
    for i, (mine, theirs) in enumerate(zip(*jobs, strict=False)):
        for key, a, b in _differences(mine if isinstance(mine, dict) else {}, theirs if isinstance(theirs, dict) else {},
                                      f"jobs.{i}"):
            if key.rpartition(".")[2] in JOB_DEFAULTS and _ABSENT in (a, b):
                why.append(f"{key} {show_value(b if a is _ABSENT else a)} is what the job has without it")
    for where in ("cluster", "system", "network"):
        blocks = [s.get(where) if isinstance(s.get(where), dict) else {} for s in (one, other)]
        for key, mine, theirs in _differences(blocks[0], blocks[1], where):
            unread = next((r.unread[key.removeprefix("cluster.")] for r in read
                           if r is not None and key.removeprefix("cluster.") in r.unread), None) \
                if where == "cluster" else None
            if unread is not None:
                why.append(f"{key} changes nothing {unread}")
            elif mine is not _ABSENT and theirs is not _ABSENT:
                why.append(f"{key} {show_value(mine)} and {show_value(theirs)} read alike")
            else:  # a null on a cluster axis (the preset's value, a default, what the GPU implies), a default
                why.append(f"{key} {show_value(theirs if mine is _ABSENT else mine)} is what the {where} has "
                           f"without it")
    return "; ".join(why)


#: a key one of two mappings lacks
_ABSENT = object()


def _differences(one: dict[str, Any], other: dict[str, Any], where: str) -> list[tuple[str, Any, Any]]:
    """(``where.key``, its value in ``one``, in ``other``) for each key whose values differ, a
    mapping's keys by their own (``cluster.gpu.hbm_gib``, not two mappings of the GPU)."""
    out = []
    for key in sorted(set(one) | set(other), key=str):
        mine, theirs = one.get(key, _ABSENT), other.get(key, _ABSENT)
        if mine == theirs:
            continue
        if isinstance(mine, dict | type(None)) and isinstance(theirs, dict | type(None)) or (
                _ABSENT in (mine, theirs) and isinstance(theirs if mine is _ABSENT else mine, dict)):
            out += _differences(mine if isinstance(mine, dict) else {}, theirs if isinstance(theirs, dict) else {},
                                f"{where}.{key}")
        else:
            out.append((f"{where}.{key}", mine, theirs))
    return out


def _played_pairs(scenario: dict[str, Any], job: Any) -> tuple[tuple[int, int], ...] | None:
    """The (sender, receiver) ranks of the messages the Megatron ``job`` plays (None: not
    listed, or a system of the scenario's own, which may play a collective as messages)."""
    if job is None or "system" in scenario or not job.plays_messages:
        return None
    from simpy_astra.workloads.megatron.rank_layout import Layout

    return Layout.played_pairs(job)


def _job_reads(scenario: dict[str, Any], job: Any) -> tuple[bool, bool, bool]:
    """Whether the run of ``scenario`` plays a message one by one (its job's, or a custom
    collective of its own system), whether its job gathers (an all-gather or reduce-scatter),
    and whether only over every rank at once: its Megatron ``job``'s, else its generator's
    layout, as the scenario loader reads them; (True, True, False) where that cannot be read
    (its latencies and shares are kept)."""
    from simpy_astra.config import load_system_json, system_from_mapping
    from simpy_astra.config.cluster_system import plays_custom_collectives
    from simpy_astra.workloads.generated import GENERATORS, prepare

    workload, system = scenario.get("workload"), scenario.get("system")
    name = workload.get("generate") if isinstance(workload, dict) else None
    try:
        if job is not None:
            plays, gathers, every = job.plays_messages, job.gathers, False
        elif megatron_args_of(scenario) is not None or not isinstance(name, str) or name not in GENERATORS:
            return True, True, False  # (a generator of the user's is not imported here)
        else:
            layout = prepare(workload).layout()
            plays, gathers, every = layout.plays_messages, layout.gathers, layout.gathers_on_every_rank
        if plays or system is None:
            return plays, gathers, every
        scale = scenario.get("injection_scale", 1.0)
        config = (system_from_mapping(system, "system", scale if isinstance(scale, int | float) else 1.0)
                  if isinstance(system, dict) else load_system_json(system) if isinstance(system, str) else None)
    except InputError:  # the point fails on its own, saying why
        return True, True, False
    return config is None or plays_custom_collectives(config), gathers, every


@dataclasses.dataclass(frozen=True)
class ClusterRead:
    """What a run reads of a scenario's ``cluster:``."""

    #: the cluster as loaded (the preset's values, defaults, what the GPU implies, written
    #: values over them), less the values the run never reads: two written alike run alike
    inputs: dict[str, Any]
    #: how many of its written keys the run says change nothing (its warnings about them)
    warnings: int
    #: each written key whose value changes nothing here -> why (``at 8 GPUs``, ``where nccl_algo
    #: forces nvls``)
    unread: dict[str, str]


def _cluster_read(scenario: dict[str, Any], reads: dict[str, ClusterRead | None],
                  job: Any, clusters: ClusterLoads) -> ClusterRead | None:
    """What the run of ``scenario`` reads of its cluster, None where it is not read so (no
    cluster, one the loader refuses, a key written that the run refuses beside the rest: such
    a point is compared as written, and fails on its own); ``reads`` keeps each one read;
    ``job``: the scenario's Megatron job as the point was expanded with it (None: another workload's
    layout is read, :func:`_job_reads`); ``clusters``: each cluster loaded."""
    cluster = scenario.get("cluster")
    if not isinstance(cluster, dict):
        return None
    context = ("network" in scenario, "system" in scenario, scenario.get("backend"),
               megatron_args_of(scenario) is not None, *_job_reads(scenario, job))
    # (the played pairs are set by the rank grid and whether an all-to-all plays every pair:
    # these key them, listed only when first read)
    grid = None if job is None else (job.tp, job.cp, job.dp, job.pp, job.pp_before_dp, job.plays_all_to_all)
    text = json.dumps([cluster, context, grid], sort_keys=True, default=str)
    if text not in reads:
        reads[text] = _read_cluster(cluster, clusters, context, _played_pairs(scenario, job))
    return reads[text]


def _read_cluster(cluster: dict[str, Any], clusters: ClusterLoads,
                  context: tuple[bool, bool, Any, bool, bool, bool, bool],
                  pairs: tuple[tuple[int, int], ...] | None = None) -> ClusterRead | None:
    from simpy_astra.config.cluster_fields import OLD_KEYS
    from simpy_astra.config.unread_cluster_keys import (
        SPINE_KEYS,
        refuse_unread_cluster_keys,
        unplayed_latency_keys,
        unused_share_keys,
    )
    from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND

    user_network, user_system, backend, megatron, plays_messages, *gathers = context
    backend = DEFAULT_BACKEND if backend is None else backend
    try:
        if not isinstance(backend, str) or backend not in BACKENDS:  # a plug-in's, or a typo: as written
            return None
        loaded = clusters.load(cluster)
        if isinstance(loaded, InputError):
            return None
        # a key refused beside this network, system or backend, refused as written (where
        # leaving it out runs)
        refuse_unread_cluster_keys("cluster", cluster, (user_network, user_system), backend, "backend", megatron)
    except InputError:
        return None
    one_to_one = loaded.rails().oversubscription == 1 and loaded.gpus > loaded.rails().gpus_per_node
    why = {key: "at oversubscription 1" if key == "nodes_per_leaf" and one_to_one else f"at {loaded.gpus} GPUs"
           for key in loaded.idle_key_names(loaded.node)}
    shares = unused_share_keys(loaded, loaded.node, *gathers)
    why.update({key: f"where {said}" for key, said in shares.items()})
    if not user_network:  # (a network's own: its latencies are refused above)
        why.update(dict.fromkeys(unplayed_latency_keys(loaded, loaded.node, backend, plays_messages, pairs),
                                 "where no message the network plays crosses its links" if plays_messages
                                 else "where the job sends no message the network plays"))
    # a spine at the leaves' rate (1:1, or every node under one leaf): any such spine is one run
    uniform = SPINE_KEYS if loaded.rails().symmetric else ()
    inputs = {"preset": loaded.preset, "gpus": loaded.gpus, "gpu": _numbers(loaded.gpu),
              "node": _numbers({k: v for k, v in loaded.node.items() if k not in why and k not in uniform}),
              "nccl_algo": loaded.nccl_algo, "nvls": loaded.nvls}
    unread = {key: why[OLD_KEYS.get(key, key)] for key in cluster if OLD_KEYS.get(key, key) in why}
    return ClusterRead(inputs, len(unread) + (loaded.nvls_note is not None), unread)


def _numbers(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with a whole float as its integer (``oversubscription: 1.0``, the preset's 1)."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in values.items()}
