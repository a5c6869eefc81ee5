"""Which sweep points run the same step though their scenarios differ.

Two points whose scenarios read alike (``ring`` and ``[ring]``) are one run; so are two whose
Megatron-LM arguments launch one job (``--sequence-parallel`` at tp 1, which Megatron turns
off; ``--recompute-granularity full`` beside ``--recompute-activations``, which Megatron makes
selective), and two whose clusters differ only in a key that changes nothing at their size
(``oversubscription`` under one leaf switch) or that it never reads (the tree's fitted share
beside ``nccl_algo: nvls``). Running both gave two rows of one step, the
first crowned best of a tie, and read as a finding that the axis changes nothing. The job is
Megatron's own reading of the arguments (:func:`~simpy_astra.workloads.megatron.arguments.parse`,
half a millisecond), so a point is compared by what runs, not by how it was written.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.axis_paths import megatron_args_of


class AlikePoints:
    """A sweep's points as they are expanded, each step run once: a point that runs the step of
    one before it is left out (that ran two rows of one run and crowned one of them), and of
    two alike the one whose run warns less stands for both (``sp=off`` at tp 1: what Megatron
    runs), where the first of them stood."""

    def __init__(self) -> None:
        self.points: list[Any] = []  # the sweep Points kept, in sweep order
        self._at: dict[str, tuple[int, int]] = {}  # run key -> (place in the points, warnings)
        # why -> (the point left out, the place of the one run: named when all are in)
        self._pairs: dict[str, list[tuple[str, int]]] = {}

    def add(self, point: Any) -> None:
        """``point`` (a sweep Point) joins the points unless one of them runs its step."""
        key = run_key(point.scenario)
        if key.text not in self._at:
            self._at[key.text] = (len(self.points), key.warnings)
            self.points.append(point)
            return
        at, warned = self._at[key.text]
        kept, dropped = self.points[at], point
        if key.warnings < warned:  # the earlier point's place, the later one's writing
            kept, dropped = point, self.points[at]
            self.points[at], self._at[key.text] = point, (at, key.warnings)
        self._pairs.setdefault(why_alike(kept.scenario, dropped.scenario), []).append((dropped.label, at))

    def warnings(self) -> list[str]:
        """A warning per reason points ran alike (a cluster key that changes nothing at the size
        made one per point pair: twelve warnings of four lines); the pair itself when one."""
        out = []
        for why, pairs in self._pairs.items():
            dropped, kept = pairs[0][0], self.points[pairs[0][1]].label
            if len(pairs) == 1:
                out.append((f"axes: {dropped} sets the scenario as {kept} does" if not why else
                            f"axes: {dropped} runs the step {kept} runs ({why})") + f"; it runs once, as {kept}")
            else:
                why = why or "their scenarios read alike"
                out.append(f"axes: {len(pairs)} points run the step another point runs ({why}), e.g. {dropped} "
                           f"as {kept}; each runs once")
        return out


@dataclasses.dataclass(frozen=True)
class RunKey:
    """``text`` is equal for two points exactly when they run the same step."""

    text: str
    #: the warnings of the point's own writing (its job's, the cluster's keys that change
    #: nothing): of two points alike, the one with fewer is named, as it says what runs
    warnings: int


def run_key(scenario: dict[str, Any]) -> RunKey:
    """The point of ``scenario`` compared by what it runs (by its scenario where that cannot be
    read: such a point is refused or fails on its own, saying why)."""
    doc, warnings = dict(scenario), 0  # the parts it replaces are copied, never edited in place
    job = _job(scenario)
    if job is not None:
        doc["workload"] = {**scenario["workload"], "args": repr(
            [(f.name, getattr(job, f.name)) for f in dataclasses.fields(job) if f.compare and f.name != "args"])}
        warnings += len(job.warnings)  # not in the text: a job's warnings name where it was written
    idle = _idle_keys(doc.get("cluster"))
    if idle:
        doc["cluster"] = {k: v for k, v in scenario["cluster"].items() if k not in idle}
    return RunKey(json.dumps(doc, sort_keys=True, default=str), warnings + len(idle))


def why_alike(one: dict[str, Any], other: dict[str, Any]) -> str:
    """Why the scenarios ``one`` and ``other``, which :func:`run_key` finds alike, run alike
    ('' when they read alike)."""
    if json.dumps(one, sort_keys=True, default=str) == json.dumps(other, sort_keys=True, default=str):
        return ""
    why = []
    if megatron_args_of(one) != megatron_args_of(other):
        why.append("Megatron-LM runs their arguments alike")
    from simpy_astra.config.unread_cluster_keys import unused_share_keys

    clusters = [c if isinstance(c, dict) else {} for c in (one.get("cluster"), other.get("cluster"))]
    for key in sorted(set(clusters[0]) | set(clusters[1])):
        if clusters[0].get(key) != clusters[1].get(key):
            share = unused_share_keys(clusters[0]).get(key) or unused_share_keys(clusters[1]).get(key)
            why.append(f"cluster.{key} changes nothing where {share}" if share else
                       f"cluster.{key} changes nothing at {clusters[0].get('gpus')} GPUs")
    return "; ".join(why)


def _job(scenario: dict[str, Any]) -> Any:
    """The Megatron job a scenario launches, or None (no Megatron workload, or arguments that
    a point's own run refuses)."""
    args = megatron_args_of(scenario)
    cluster = scenario.get("cluster")
    gpus = cluster.get("gpus") if isinstance(cluster, dict) else None
    if args is None or not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        return None
    from simpy_astra.workloads.megatron.arguments import parse

    try:
        return parse(args, gpus, "workload")
    except InputError:  # an invalid layout too (InvalidConfigurationError is one)
        return None


def _idle_keys(cluster: Any) -> list[str]:
    """The keys of ``cluster`` as written that change nothing at its size (Cluster.idle_keys);
    a sweep's points share a few clusters, each read once (a preset's YAML: 5 ms)."""
    if not isinstance(cluster, dict):
        return []
    text = json.dumps(cluster, sort_keys=True, default=str)
    if text not in _IDLE:
        _IDLE[text] = _read_idle_keys(cluster)
    return _IDLE[text]


#: a cluster mapping's text -> its keys that change nothing
_IDLE: dict[str, list[str]] = {}


def _read_idle_keys(cluster: dict[str, Any]) -> list[str]:
    from simpy_astra.config.cluster import OLD_KEYS, load_cluster
    from simpy_astra.config.unread_cluster_keys import unused_share_keys

    try:
        idle = set(load_cluster(cluster, "cluster").idle_key_names(cluster)) | set(unused_share_keys(cluster))
    except InputError:
        return []
    return [key for key in cluster if OLD_KEYS.get(key, key) in idle]
