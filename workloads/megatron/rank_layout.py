"""Megatron-LM's rank order and its communicator groups: which GPUs each tensor-, context-,
data-, pipeline- and expert-parallel group holds, as ``initialize_model_parallel`` builds them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from simpy_astra.workloads.megatron.job import MegatronJob


@dataclass(frozen=True)
class Layout:
    """Megatron's rank order (tp fastest, then cp, dp, pp; the experts' grid over a stage's
    ranks: their tp, ep, then the rest) and its communicator groups: ``tp``, ``cp``, ``dp`` (the gradient-sync
    group: data- and context-parallel ranks of one model shard), ``emb`` (first and last stage,
    for the tied embedding), ``ep`` (the experts' all-to-all), ``edp`` (the ranks that hold
    the same experts, which sync their gradients), and where any layer runs ``a2a+p2p`` context parallelism
    ``cp_a2a`` and ``cp_p2p`` (its all-to-all and its K/V ring)."""

    sizes: dict[str, int]
    groups: dict[int, list[int]]
    group_of: dict[tuple[str, int], int]
    #: ``--use-tp-pp-dp-mapping``: stages before data-parallel replicas in the rank order
    pp_before_dp: bool = False

    @classmethod
    def build(cls, job: MegatronJob) -> Layout:
        tp, cp, dp, pp = job.tp, job.cp, job.dp, job.pp
        groups: dict[int, list[int]] = {}
        group_of: dict[tuple[str, int], int] = {}

        def rank(t: int, c: int, d: int, p: int) -> int:
            if job.pp_before_dp:  # Megatron's tp-cp-ep-pp-dp (no experts' groups then: ep is 1)
                return t + tp * (c + cp * (p + pp * d))
            return t + tp * (c + cp * (d + dp * p))

        def add(dim: str, members: list[int]) -> None:
            if len(members) < 2:
                return
            gid = len(groups) + 1
            groups[gid] = members
            for r in members:
                group_of[(dim, r)] = gid

        for c, d, p in itertools.product(range(cp), range(dp), range(pp)):
            add("tp", [rank(t, c, d, p) for t in range(tp)])
        for t, d, p in itertools.product(range(tp), range(dp), range(pp)):
            add("cp", [rank(t, c, d, p) for c in range(cp)])
        a2a = job.cp_a2a
        if a2a > 1:  # a2a+p2p: Megatron-Core's create_hierarchical_groups over each cp group
            for t, d, p in itertools.product(range(tp), range(dp), range(pp)):
                members = [rank(t, c, d, p) for c in range(cp)]
                for first in range(0, cp, a2a):
                    add("cp_a2a", members[first:first + a2a])
                for offset in range(a2a):
                    add("cp_p2p", members[offset::a2a])
        for t, p in itertools.product(range(tp), range(pp)):
            add("dp", [rank(t, c, d, p) for d in range(dp) for c in range(cp)])
        if job.tied_embeddings and job.last_stage != 0:
            for t, c, d in itertools.product(range(tp), range(cp), range(dp)):
                add("emb", [rank(t, c, d, 0), rank(t, c, d, job.last_stage)])
        ep, etp, stage = job.ep, job.etp, tp * cp * dp
        if job.experts:  # Megatron-Core's expert grid over a stage's ranks: etp, ep, then the rest
            # (its expert RankGenerator: 'tp-cp-ep-dp-pp' with tp = etp and no cp), so an ep
            # group is etp apart whatever tp and cp are: with etp 1 it is consecutive ranks
            def expert(t: int, e: int, o: int, p: int) -> int:
                if job.pp_before_dp:  # 'tp-cp-ep-pp-dp' (ep is 1 there with a pipeline)
                    return t + etp * (e + ep * (p + pp * o))
                return t + etp * (e + ep * o) + stage * p

            for t, o, p in itertools.product(range(etp), range(stage // (etp * ep)), range(pp)):
                add("ep", [expert(t, e, o, p) for e in range(ep)])
            for t, e, p in itertools.product(range(etp), range(ep), range(pp)):
                add("edp", [expert(t, e, o, p) for o in range(stage // (etp * ep))])
        return cls({"tp": tp, "cp": cp, "dp": dp, "pp": pp}, groups, group_of, job.pp_before_dp)

    @staticmethod
    def blocks(job: MegatronJob) -> list[int]:
        """The parallel dimensions in rank order, fastest first."""
        if job.pp_before_dp:
            return [job.tp, job.cp, job.pp, job.dp]
        return [job.tp, job.cp, job.ep, job.dp // job.ep, job.pp]

    @staticmethod
    def played_pairs(job: MegatronJob) -> tuple[tuple[int, int], ...]:
        """The (sender, receiver) ranks of the messages the network plays one by one, enough to
        tell which links they cross: the pipeline's sends to the next stage (the last stage's to
        the first too, for a model chunk's next), one pair per rank (a send back crosses the same
        links, so it is not listed), and for each all-to-all group its first rank's pair with each
        other member: two members share a node, or sit on two at different local GPUs, exactly
        where one of them does so with the first, so these cross the kinds of link every pair
        of the group crosses."""
        pairs = []
        if job.pp > 1:
            stride = job.tp * job.cp * (1 if job.pp_before_dp else job.dp)
            period = stride * job.pp  # (tp-cp-pp-dp: a replica's ranks; else every rank)
            for rank in range(job.gpus):
                stage = rank % period // stride
                after = rank + stride if stage < job.pp - 1 else rank - stride * (job.pp - 1)
                if after != rank:
                    pairs.append((rank, after))
        if job.plays_all_to_all:
            layout = Layout.build(job)
            dims = {"ep"} if job.ep > 1 and job.moe_alltoall else set()
            dims.update({"a2a": "cp", "a2a+p2p": "cp_a2a"}.get(kind, "") for kind in job.cp_comm_types)
            firsts = {gid for (dim, _), gid in layout.group_of.items() if dim in dims}
            for gid in sorted(firsts):
                first, *rest = layout.groups[gid]
                pairs.extend((first, other) for other in rest)
        return tuple(pairs)

    def stage_stride(self) -> int:
        """How many ranks apart a GPU's neighbours in the next and the previous stage are."""
        return self.sizes["tp"] * self.sizes["cp"] * (1 if self.pp_before_dp else self.sizes["dp"])

    def stage_of(self, rank: int) -> int:
        return rank // self.stage_stride() % self.sizes["pp"]
