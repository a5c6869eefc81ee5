"""Each cluster a sweep's points name, loaded once as the points are expanded.

Two readers need a point's cluster before anything runs: its Megatron job, parsed on the
cluster's GPU and nodes (:mod:`~simpy_astra.sweep.point_job`), and the test of points that run
one step (:mod:`~simpy_astra.sweep.same_run`). Each loaded it with a cache of its own, the second
once per rank grid, and a cluster the loader refuses was loaded again for every point (its
refusal was not kept): a sweep's points share a few clusters, so one load each serves both, its
refusal kept too. An edited preset is read as edited at the next expansion (a cache lives for
one).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from simpy_astra.errors import InputError

if TYPE_CHECKING:
    from simpy_astra.config.cluster import Cluster

#: how a cluster's load names it in its errors (``cluster.nccl_algo: ...``): a reader that names
#: the point puts its own words before it
WHERE = "cluster"


class ClusterLoads:
    """The loads of one sweep expansion: each cluster mapping -> as the loader reads it, or
    the loader's refusal."""

    def __init__(self) -> None:
        self._loaded: dict[str, Cluster | InputError] = {}

    def load(self, cluster: dict[str, Any]) -> Cluster | InputError:
        """``cluster`` as :func:`~simpy_astra.config.cluster.load_cluster` reads it (its errors
        naming it :data:`WHERE`), or the error it refuses it with (not raised: a refused point
        fails on its own, saying why)."""
        # deferred, as the loader's readers deferred it: a sweep without a cluster never imports it
        from simpy_astra.config.cluster import load_cluster

        text = json.dumps(cluster, sort_keys=True, default=str)
        if text not in self._loaded:
            try:
                self._loaded[text] = load_cluster(cluster, WHERE)
            except InputError as exc:
                self._loaded[text] = exc.with_traceback(None)  # not the loader's frames, kept a sweep long
        return self._loaded[text]
