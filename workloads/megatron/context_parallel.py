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

A list of types names one a layer (``TransformerLayer`` runs ``cp_comm_type[layer_number - 1]``),
so each function here takes the layer's ``kind``.

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


def groups(kind: str) -> tuple[str, str]:
    """The communicators of the all-to-all and of the K/V ring of a layer exchanging by
    ``kind`` (``cp`` for a plain type)."""
    return ("cp_a2a", "cp_p2p") if kind == "a2a+p2p" else ("cp", "cp")


def all_to_all_size(job: MegatronJob, kind: str) -> int:
    """The ranks ``kind``'s all-to-all spreads the heads over (1: none); the K/V ring runs
    over the other ``cp`` / this."""
    return job.cp if kind == "a2a" else job.cp_a2a if kind == "a2a+p2p" else 1


def attention_shape(job: MegatronJob, kind: str, heads: int) -> AttentionShape:
    """The shape of the attention on one rank of ``heads`` query heads (its tensor-parallel
    share) in a layer exchanging by ``kind``: an all-to-all spreads the heads over its group
    and gathers the sequence."""
    a2a = all_to_all_size(job, kind)
    return AttentionShape(max(1, job.micro_batch * heads // a2a), job.seq // (job.cp // a2a), job.seq)


def before(b: StepBuilder, job: MegatronJob, kind: str, q_bytes: int, kv_bytes: int, backward: bool) -> None:
    """The exchange by ``kind`` before the attention kernels of a rank whose queries take
    ``q_bytes`` and keys and values ``kv_bytes``; a ring's collectives run beside the kernels
    (``overlap``)."""
    if job.cp == 1:
        return
    a2a_dim, ring_dim = groups(kind)
    if kind in ("a2a", "a2a+p2p"):
        b.comm("attn.cp.alltoall", ALL_TO_ALL, q_bytes if backward else q_bytes + kv_bytes, dim=a2a_dim)
    if kind == "allgather":
        b.comm("attn.cp.allgather", ALL_GATHER, kv_bytes, dim="cp")
    elif kind in ("p2p", "a2a+p2p"):  # the ring's hops: a2a leaves a rank's K/V bytes as they were
        b.comm("attn.cp.allgather", ALL_GATHER, kv_bytes, overlap=True, dim=ring_dim)
        if backward:
            ring = job.cp // all_to_all_size(job, kind)
            b.comm("attn.cp.reducescatter", REDUCE_SCATTER, kv_bytes * ring, overlap=True, dim=ring_dim)


def after(b: StepBuilder, job: MegatronJob, kind: str, q_bytes: int, kv_bytes: int, backward: bool) -> None:
    """The exchange by ``kind`` after the attention kernels: the ring's hops waited for, the
    all-to-all back, the gathered keys' gradients reduce-scattered."""
    b.wait("attn.cp.wait")
    if job.cp == 1:
        return
    a2a_dim, _ = groups(kind)
    if kind in ("a2a", "a2a+p2p"):
        b.comm("attn.cp.alltoall.after", ALL_TO_ALL, q_bytes + kv_bytes if backward else q_bytes, dim=a2a_dim)
    elif kind == "allgather" and backward:
        b.comm("attn.cp.reducescatter", REDUCE_SCATTER, kv_bytes * job.cp, dim="cp")
