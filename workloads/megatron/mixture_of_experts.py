"""A mixture-of-experts layer's MLP on one GPU: the router, the token dispatcher's
collectives (all-gather and reduce-scatter, or all-to-all over the expert-parallel ranks),
each local expert's kernels and the shared expert; routing is taken as balanced.
"""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.workloads.megatron.kernels import streaming_seconds
from simpy_astra.workloads.megatron.linear_kernels import (
    ALL_GATHER,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    LinearKernels,
)
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder

#: a rank's experts run one by one (SequentialMLP) summed kernel by kernel up to this many; past
#: it, as copies of one (real models hold at most a few hundred: DeepSeek-V3's 256)
SUMMED_EXPERTS = 1024


class MixtureOfExperts(LinearKernels):
    """A mixture of experts' kernels and collectives (mixed into
    :class:`~simpy_astra.workloads.megatron.layers.ChunkModel`)."""

    def _routed(self) -> tuple[int, int, int]:
        """(token copies this GPU's experts process, local experts, an expert's width here):
        routing is taken as balanced, so each of the ep ranks gets its experts' share of
        ``T x topk`` copies; with expert tp = 1 the tp ranks split the tokens instead."""
        job = self.job
        copies = self.tokens * job.topk // (job.tp if job.etp == 1 else 1)
        return max(1, copies), job.experts // job.ep, job.moe_ffn // job.etp

    def _dispatch(self, b: _Builder, gathered: bool, label: str) -> None:
        """Megatron's default token dispatcher (``MoEAllGatherTokenDispatcher``) with ep > 1:
        every rank's tokens all-gathered over the expert-parallel ranks before the experts
        (each then picks the copies routed to its own), their outputs reduce-scattered back
        after; a backward runs the reverse (the reduce-scatter's is an all-gather). The
        gathered set is ep x the tokens a rank routes (``copies / topk``): ep - 1 of those
        arrive and leave, against the all-to-all's ``topk (ep - 1) / ep``. ``gathered``: the
        ranks hold the gathered set and reduce-scatter it back (else they gather it)."""
        job = self.job
        if job.ep == 1 or job.moe_alltoall:
            return
        shard = max(1, self._routed()[0] // job.topk) * job.hidden * self.e
        if gathered:
            b.comm(label, REDUCE_SCATTER, shard * job.ep, dim="ep")
        else:
            b.comm(label, ALL_GATHER, shard, dim="ep")

    def _moe_forward(self, b: _Builder) -> None:
        job, h, e = self.job, self.job.hidden, self.e
        copies, local, ffn = self._routed()
        b.add("gemm", self._gemm(self.tokens, job.experts, h))  # router
        b.add("elementwise", streaming_seconds(self.gpu, self.tokens * job.experts * 12))  # softmax, top-k
        self._dispatch(b, False, "moe.dispatch.allgather")
        b.add("elementwise", self._stream(copies * h, 4))  # permute
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.dispatch.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        self._each_expert(b, local, lambda into, groups: self._mlp_forward(into, ffn, max(1, copies // local), groups))
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.combine.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        b.add("elementwise", self._stream(copies * h, 6))  # unpermute and weigh
        self._dispatch(b, True, "moe.combine.reducescatter")
        if job.shared_ffn:
            self._mlp_forward(b, job.shared_ffn // job.tp)

    def _each_expert(self, b: _Builder, local: int, kernels: Callable[[_Builder, int], object]) -> None:
        """``kernels(builder, groups)`` for each MLP kernel of the rank's experts. Past
        :data:`SUMMED_EXPERTS` one by one they are alike: the first runs in place (a wait it
        closes), the rest are charged as copies of the second (10^7 experts took minutes)."""
        groups = self._expert_kernels(local)
        if len(groups) <= SUMMED_EXPERTS:
            for n in groups:
                kernels(b, n)
            return
        kernels(b, 1)
        one = _Builder(_Builder() if b.weights is not None else None)
        kernels(one, 1)
        b.add_copies(one, len(groups) - 1)

    def _expert_kernels(self, local: int) -> list[int]:
        """The experts each MLP kernel of a rank runs: all ``local`` in one grouped GEMM with
        ``--moe-grouped-gemm`` (GroupedMLP; Transformer Engine's GroupedLinear runs them on
        concurrent streams, which shares the SMs' waves the same way), else one after another
        (SequentialMLP, Megatron's default): each expert's few tiles fill a wave on their own."""
        return [local] if self.job.moe_grouped_gemm else [1] * local

    def _moe_backward(self, b: _Builder) -> None:
        job, h, e = self.job, self.job.hidden, self.e
        copies, local, ffn = self._routed()
        if job.shared_ffn:
            self._mlp_backward_gemms(b, job.shared_ffn // job.tp, self.tokens)
        self._dispatch(b, False, "moe.combine.bwd.allgather")
        b.add("elementwise", self._stream(copies * h, 6))  # unpermute's backward
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.combine.bwd.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        self._each_expert(b, local, lambda into, groups: self._mlp_backward_gemms(into, ffn, max(1, copies // local),
                                                                                  groups))
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.dispatch.bwd.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        b.add("elementwise", self._stream(copies * h, 4))  # permute's backward
        self._dispatch(b, True, "moe.dispatch.bwd.reducescatter")
        router = self._gemm(self.tokens, job.experts, h)  # each priced as the forward's product
        b.add("gemm", router)  # router dgrad
        b.wgrad("gemm", router)  # router wgrad

    def moe_parameters(self) -> tuple[int, int]:
        """(dense, expert) parameters an MoE layer adds over a dense one's attention, per GPU."""
        job, h = self.job, self.job.hidden
        _, local, ffn = self._routed()
        w = 3 if job.swiglu else 2
        return h * job.experts + w * h * job.shared_ffn // job.tp, local * w * h * ffn
