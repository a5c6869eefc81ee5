"""Context parallelism's exchanges around the attention core, as Transformer Engine runs them.

Each rank holds ``s / cp`` tokens of every sequence (two load-balanced causal chunks).
``--cp-comm-type`` says how a rank's queries meet the other ranks' keys and values
(``transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py``):

- ``p2p``: the keys and values travel round the ``cp`` ring, one hop beside each chunk's
  attention; in the backward the keys and values travel again, and their gradients with them
  (a hop carries both but the first, which carries K/V only, and the last, dK/dV only);
- ``allgather``: the keys and values gathered first (their gradients reduce-scattered after);
- ``a2a`` (Ulysses): an all-to-all trades sequence for heads (Q, K, V before, the output
  after; the backward the output's gradient before and Q, K, V's after), and each rank runs
  the whole sequence on ``heads / cp``;
- ``a2a+p2p`` (``--hierarchical-context-parallel-sizes a p``): the all-to-all inside groups of
  ``a`` consecutive context-parallel ranks, then the ``p2p`` ring over the ``p`` ranks ``a``
  apart, on ``heads / a`` and ``s / p`` tokens (Megatron-Core's ``create_hierarchical_groups``
  builds the groups: ``cp_a2a`` and ``cp_p2p`` here).

Collective kinds are Chakra's; an all-gather's size is what each rank contributes, a
reduce-scatter's and an all-to-all's the whole buffer on a rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.steps import StepBuilder

ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 2, 6, 7


@dataclass(frozen=True)
class AttentionShape:
    """What one rank's attention kernels compute: ``batch_heads`` (micro-batch x heads)
    products of ``q_len`` queries against ``kv_len`` keys."""

    batch_heads: int
    q_len: int
    kv_len: int


def groups(job: MegatronJob) -> tuple[str, str]:
    """The communicators of the all-to-all and of the K/V ring (``cp`` for a plain type)."""
    return ("cp_a2a", "cp_p2p") if job.cp_comm_type == "a2a+p2p" else ("cp", "cp")


def attention_shape(job: MegatronJob, heads: int) -> AttentionShape:
    """The shape of the attention on one rank of ``heads`` query heads (its tensor-parallel
    share): an all-to-all spreads the heads over its group and gathers the sequence."""
    bh, a2a = job.micro_batch * heads, job.cp if job.cp_comm_type == "a2a" else job.cp_a2a
    ring = job.cp // a2a
    return AttentionShape(max(1, bh // a2a), job.seq // ring, job.seq)


def before(b: StepBuilder, job: MegatronJob, q_bytes: int, kv_bytes: int, backward: bool) -> None:
    """The exchange before the attention kernels of a rank whose queries take ``q_bytes`` and
    keys and values ``kv_bytes``; a ring's collectives run beside the kernels (``overlap``)."""
    if job.cp == 1:
        return
    a2a_dim, ring_dim = groups(job)
    kind = job.cp_comm_type
    if kind in ("a2a", "a2a+p2p"):
        b.comm("attn.cp.alltoall", ALL_TO_ALL, q_bytes if backward else q_bytes + kv_bytes, dim=a2a_dim)
    if kind == "allgather":
        b.comm("attn.cp.allgather", ALL_GATHER, kv_bytes, dim="cp")
    elif kind in ("p2p", "a2a+p2p"):  # the ring's hops: a2a leaves a rank's K/V bytes as they were
        b.comm("attn.cp.allgather", ALL_GATHER, kv_bytes, overlap=True, dim=ring_dim)
        if backward:
            ring = job.cp // job.cp_a2a
            b.comm("attn.cp.reducescatter", REDUCE_SCATTER, kv_bytes * ring, overlap=True, dim=ring_dim)


def after(b: StepBuilder, job: MegatronJob, q_bytes: int, kv_bytes: int, backward: bool) -> None:
    """The exchange after the attention kernels: the ring's hops waited for, the all-to-all
    back, the gathered keys' gradients reduce-scattered."""
    b.wait("attn.cp.wait")
    if job.cp == 1:
        return
    a2a_dim, _ = groups(job)
    if job.cp_comm_type in ("a2a", "a2a+p2p"):
        b.comm("attn.cp.alltoall.after", ALL_TO_ALL, q_bytes + kv_bytes if backward else q_bytes, dim=a2a_dim)
    elif job.cp_comm_type == "allgather" and backward:
        b.comm("attn.cp.reducescatter", REDUCE_SCATTER, kv_bytes * job.cp, dim="cp")
