"""``--cp-comm-type`` with one type a layer: Megatron-Core's ``TransformerLayer`` gives layer
``layer_number`` (1-based, across the pipeline) ``cp_comm_type[layer_number - 1]``, and
``validate_args`` wants the list as long as ``--num-layers``. Each layer's exchange and
attention shape are its own type's (sizes derived here by hand, as in
tests/test_hierarchical_context_parallel.py); Megatron's and Transformer Engine's rules for a
type apply if any layer runs it; a list of one type is that type."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.context_parallel import attention_shape
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.rank_layout import Layout
from simpy_astra.workloads.megatron.schedule import build_stage
from simpy_astra.workloads.megatron.steps import Collective
from tests.test_hierarchical_context_parallel import run_two_nodes
from tests.test_megatron import TOY

#: two layers, h 1024 (16 heads of 64), sequence 2,048
BASE = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
        "--bf16 --vocab-size 128")
MIB = 1024 * 1024
ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 2, 6, 7


def _chunk(args: str, gpus: int, backward: bool = False) -> list[tuple]:
    """The context-parallel collectives (label, kind, bytes, overlap, group) of the model's one
    chunk (both layers: no embedding, no loss)."""
    job = parse(args, gpus)
    model = ChunkModel(job, TOY)
    layers = job.chunk_kinds(0, 0)
    steps = model.backward(layers, False, False) if backward else model.forward(layers, False, False)
    return [(s.label, s.comm_type, s.size_bytes, s.overlap, s.dim) for s in steps
            if isinstance(s, Collective) and s.label.startswith("attn.cp")]


def test_each_layer_runs_its_own_type():
    """cp 4, a rank's 512 tokens: Q 512 x 1024 x 2 B = 1 MiB, K and V 2 MiB. Layer 0 (p2p): the
    ring's K/V gather beside the kernels; backward also dK/dV, a reduce-scatter of 4 x 2 MiB.
    Layer 1 (a2a): Q, K, V's all-to-all (3 MiB) before, the output's (1 MiB) after; backward
    the output gradient's (1 MiB) before and Q, K, V's gradients' (3 MiB) after. The backward
    runs the layers last first. Each layer's attention is its type's: p2p 16 heads of 512
    queries, a2a 16 / 4 = 4 heads of all 2,048, both against the 2,048 keys."""
    cp = BASE + " --context-parallel-size 4 --cp-comm-type "
    q, kv = MIB, 2 * MIB
    p2p_fwd = [("attn.cp.allgather", ALL_GATHER, kv, True, "cp")]
    a2a_fwd = [("attn.cp.alltoall", ALL_TO_ALL, q + kv, False, "cp"), ("attn.cp.alltoall.after", ALL_TO_ALL, q, False, "cp")]
    p2p_bwd = p2p_fwd + [("attn.cp.reducescatter", REDUCE_SCATTER, 4 * kv, True, "cp")]
    a2a_bwd = [("attn.cp.alltoall", ALL_TO_ALL, q, False, "cp"), ("attn.cp.alltoall.after", ALL_TO_ALL, q + kv, False, "cp")]
    for backward, expected in ((False, p2p_fwd + a2a_fwd), (True, a2a_bwd + p2p_bwd)):
        assert _chunk(cp + "p2p a2a", 4, backward) == expected
        p2p, a2a = (_chunk(cp + kind, 4, backward) for kind in ("p2p", "a2a"))
        assert p2p == (p2p_bwd if backward else p2p_fwd) * 2 and a2a == (a2a_bwd if backward else a2a_fwd) * 2
    job = parse(cp + "p2p a2a", 4)
    assert [tuple(vars(attention_shape(job, kind.cp_comm, 16)).values()) for kind in job.chunk_kinds(0, 0)] == [
        (16, 512, 2048), (4, 2048, 2048)]


def test_a2a_plus_p2p_in_one_layer_builds_the_hierarchy_and_needs_its_sizes():
    """cp 8 = [2, 4]: a p2p layer and an a2a+p2p one. The hierarchical groups exist (Megatron-
    Core builds them from the sizes); a rank's 256 tokens: Q 0.5 MiB, K and V 1 MiB. Layer 0's
    ring runs over all 8 cp ranks (dK/dV: 8 x 1 MiB), layer 1's all-to-all in its pair and its
    ring over the 4 ranks 2 apart (4 x 1 MiB). Their attention: p2p 16 heads of 256 queries,
    a2a+p2p 16 / 2 = 8 heads of 2,048 / 4 = 512. Without the sizes Megatron refuses the list."""
    mixed = BASE + " --context-parallel-size 8 --cp-comm-type p2p a2a+p2p"
    args = mixed + " --hierarchical-context-parallel-sizes 2 4"
    dims = {dim for dim, _rank in Layout.build(parse(args, 8)).group_of}
    assert {"cp", "cp_a2a", "cp_p2p"} <= dims
    q, kv = MIB // 2, MIB
    assert _chunk(args, 8, backward=True) == [
        ("attn.cp.alltoall", ALL_TO_ALL, q, False, "cp_a2a"),
        ("attn.cp.allgather", ALL_GATHER, kv, True, "cp_p2p"),
        ("attn.cp.reducescatter", REDUCE_SCATTER, 4 * kv, True, "cp_p2p"),
        ("attn.cp.alltoall.after", ALL_TO_ALL, q + kv, False, "cp_a2a"),
        ("attn.cp.allgather", ALL_GATHER, kv, True, "cp"),
        ("attn.cp.reducescatter", REDUCE_SCATTER, 8 * kv, True, "cp")]
    job = parse(args, 8)
    assert [tuple(vars(attention_shape(job, kind.cp_comm, 16)).values()) for kind in job.chunk_kinds(0, 0)] == [
        (16, 256, 2048), (8, 512, 2048)]
    with pytest.raises(InvalidConfigurationError, match="a2a\\+p2p needs --hierarchical-context-parallel-sizes"):
        parse(mixed, 8)


def test_a2a_heads_rule_applies_when_one_layer_is_a2a():
    """12 heads over cp 8 do not split: Transformer Engine's all-to-all refuses the a2a layer,
    though the other is p2p (which needs no split: 12 heads run)."""
    args = BASE.replace("--hidden-size 1024 --num-attention-heads 16", "--hidden-size 768 --num-attention-heads 12") \
        + " --context-parallel-size 8"
    assert parse(args + " --cp-comm-type p2p p2p", 8).cp_comm_type == "p2p"
    with pytest.raises(InvalidConfigurationError, match="12 query and 12 key/value heads a tp rank, not multiples"):
        parse(args + " --cp-comm-type p2p a2a", 8)
    with pytest.raises(InvalidConfigurationError, match="should equal to the total number of transformer layers"):
        parse(args + " --cp-comm-type p2p p2p p2p", 8)


@pytest.mark.parametrize("kind, extra", [("p2p", ""), ("a2a", ""), ("allgather", ""),
                                         ("a2a+p2p", " --hierarchical-context-parallel-sizes 2 2"),
                                         ("a2a+p2p", " --hierarchical-context-parallel-sizes 1 4")])
def test_a_list_of_one_type_is_that_type(kind, extra):
    """The same stages' graphs (steps, sizes, groups) and layout, over two pipeline stages with
    full recomputation (the recompute path reads each layer's type too)."""
    args = (BASE.replace("--num-layers 2", "--num-layers 4") + " --context-parallel-size 4 --pipeline-model-parallel-size 2 "
            "--global-batch-size 4 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1" + extra)
    one, listed = parse(args + f" --cp-comm-type {kind}", 8), parse(args + f" --cp-comm-type {' '.join([kind] * 4)}", 8)
    assert listed == replace(one, args=listed.args)
    assert Layout.build(listed) == Layout.build(one)
    for stage in range(2):
        assert build_stage(listed, TOY, stage).ops == build_stage(one, TOY, stage).ops


def _step_ns(tmp_path, kinds: str) -> int:
    """A step's simulated time on two DGX H100 nodes, cp 16 over both."""
    return run_two_nodes(tmp_path, f" --cp-comm-type {kinds}")["iteration_time_ns"]


def test_a_mixed_list_runs_end_to_end_between_its_types(tmp_path):
    """One stage, two layers: the step is what both layers share (optimizer, gradient sync)
    plus each layer's forward and backward, one after the other (a layer's exchange ends
    before the next layer starts). So all-p2p is shared + 2 p2p layers, all-a2a shared + 2 a2a
    layers, and p2p a2a shared + one of each: the midpoint, strictly between as the two layers
    differ (the a2a layer's four all-to-alls cross the nodes exposed, at least 32 MiB / 50 GB/s
    = 0.67 ms a layer, where the p2p ring hides behind the attention kernels; its kernels run
    1 head on the whole sequence, not 16 on a rank's share: tests/test_hierarchical_context_parallel.py)."""
    p2p, a2a, mixed = (_step_ns(tmp_path, kinds) for kinds in ("p2p p2p", "a2a a2a", "p2p a2a"))
    assert p2p < mixed < a2a
    assert abs(mixed - (p2p + a2a) / 2) <= 0.01 * (a2a - p2p)
