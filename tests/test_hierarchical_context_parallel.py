"""Context parallelism's exchanges as Transformer Engine runs them: the ``p2p`` ring's
backward, and ``a2a+p2p`` (``--hierarchical-context-parallel-sizes``): its groups as
Megatron-Core builds them, its collectives, its attention shape, the degenerate sizes that
Transformer Engine runs as ``p2p`` or ``a2a``, Megatron's and Transformer Engine's refusals, and
a two-node step where it keeps the all-to-all on NVLink (numbers derived here by hand)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.context_parallel import attention_shape
from simpy_astra.workloads.megatron.rank_layout import Layout
from tests.test_megatron import ROOT, _comms

#: one layer, h 1024 (16 heads of 64), sequence 2,048
BASE = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
        "--bf16 --vocab-size 128")
MIB = 1024 * 1024
ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 2, 6, 7


def _cp(comms: list[tuple]) -> list[tuple]:
    return [c for c in comms if c[0].startswith("attn.cp")]


def test_p2p_backward_ring_carries_kv_and_their_gradients():
    """cp 4: a rank holds 512 tokens, K and V 2 x 512 x 1024 x 2 B = 2 MiB. The forward ring
    brings the other 3 ranks' K/V (3 x 2 MiB). Transformer Engine's backward sends K/V again on
    every hop but the last and dK/dV on every hop but the first: 2 x 3 x 2 MiB a rank. As a
    gather of 2 MiB a rank and a reduce-scatter of 4 x 2 MiB, both beside the kernels."""
    args = BASE + " --context-parallel-size 4"
    kv = 2 * 512 * 1024 * 2
    assert _cp(_comms(args, 4)) == [("attn.cp.allgather", ALL_GATHER, kv, True)]
    back = _cp(_comms(args, 4, backward=True))
    assert back == [("attn.cp.allgather", ALL_GATHER, kv, True), ("attn.cp.reducescatter", REDUCE_SCATTER, 4 * kv, True)]
    moved = (4 - 1) * kv + (4 - 1) * (4 * kv) // 4  # a gather's and a reduce-scatter's ring bytes
    assert moved == 2 * (4 - 1) * kv


def test_hierarchical_groups_are_megatron_cores():
    """Megatron-Core's ``create_hierarchical_groups`` over a cp group of 8 with sizes [2, 4]:
    level 1 the consecutive pairs [g0, g1], [g2, g3], ...; level 2 the ranks 2 apart [g0, g2,
    g4, g6], [g1, g3, g5, g7]. With tp 2 the cp group of tensor rank 0 is the even ranks 0-14."""
    job = parse(BASE.replace("--num-attention-heads 16", "--num-attention-heads 32")
                + " --tensor-model-parallel-size 2 --context-parallel-size 8 --cp-comm-type a2a+p2p "
                  "--hierarchical-context-parallel-sizes 2 4", 16)
    layout = Layout.build(job)
    groups = {dim: sorted({tuple(layout.groups[gid]) for (d, _r), gid in layout.group_of.items() if d == dim})
              for dim in ("cp", "cp_a2a", "cp_p2p")}
    g = [2 * i for i in range(8)]  # tensor rank 0's cp group
    assert tuple(g) in groups["cp"]
    assert [grp for grp in groups["cp_a2a"] if grp[0] % 2 == 0] == [(g[0], g[1]), (g[2], g[3]), (g[4], g[5]), (g[6], g[7])]
    assert [grp for grp in groups["cp_p2p"] if grp[0] % 2 == 0] == [(g[0], g[2], g[4], g[6]), (g[1], g[3], g[5], g[7])]
    assert len(groups["cp_a2a"]) == 8 and len(groups["cp_p2p"]) == 4  # two tensor ranks


def test_a2a_plus_p2p_collectives_and_attention_shape():
    """cp 8 = 2 x 4, a rank's 256 tokens: Q 256 x 1024 x 2 B = 0.5 MiB, K and V 1 MiB. Forward:
    the all-to-all of Q, K, V (1.5 MiB) in the pair, the ring's K/V (1 MiB: the all-to-all trades
    tokens for heads, so the bytes stay) beside the kernels, the output's all-to-all (0.5 MiB)
    after. Backward: the output gradient's all-to-all, the ring's K/V and dK/dV (a reduce-
    scatter of 4 x 1 MiB over the ring of 4), Q, K, V's gradients' all-to-all. The kernels run
    16 / 2 = 8 heads over 2,048 / 4 = 512 queries against the whole 2,048 keys."""
    args = BASE + " --context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4"
    q, kv = MIB // 2, MIB
    assert _cp(_comms(args, 8)) == [("attn.cp.alltoall", ALL_TO_ALL, q + kv, False),
                                    ("attn.cp.allgather", ALL_GATHER, kv, True),
                                    ("attn.cp.alltoall.after", ALL_TO_ALL, q, False)]
    assert _cp(_comms(args, 8, backward=True)) == [("attn.cp.alltoall", ALL_TO_ALL, q, False),
                                                   ("attn.cp.allgather", ALL_GATHER, kv, True),
                                                   ("attn.cp.reducescatter", REDUCE_SCATTER, 4 * kv, True),
                                                   ("attn.cp.alltoall.after", ALL_TO_ALL, q + kv, False)]
    shape = attention_shape(parse(args, 8), "a2a+p2p", heads=16)
    assert (shape.batch_heads, shape.q_len, shape.kv_len) == (8, 512, 2048)


@pytest.mark.parametrize("sizes, same_as", [("1 8", "p2p"), ("8 1", "a2a")])
def test_degenerate_sizes_run_as_transformer_engine_runs_them(sizes, same_as):
    """``attn_forward_func_with_cp``: an all-to-all group of 1 is the ring alone, a ring of 1 the
    all-to-all alone."""
    cp = BASE + " --context-parallel-size 8"
    hier = cp + f" --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes {sizes}"
    for backward in (False, True):
        assert _comms(hier, 8, backward) == _comms(cp + f" --cp-comm-type {same_as}", 8, backward)
    assert parse(hier, 8).cp_comm_type == same_as


@pytest.mark.parametrize("extra, reason", [
    (" --cp-comm-type a2a+p2p", "needs --hierarchical-context-parallel-sizes"),
    (" --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2", "multiply to 4, not --context-parallel-size 8"),
    (" --hierarchical-context-parallel-sizes 2 2", "multiply to 4"),  # Megatron checks the product for any type
    (" --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2 2", "give two"),
    (" --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 8 1 --num-query-groups 4 --group-query-attention",
     "4 key/value heads a tp rank, not multiples of the all-to-all group's 8"),
])
def test_megatrons_and_transformer_engines_refusals(extra, reason):
    with pytest.raises(InvalidConfigurationError, match=reason):
        parse(BASE + " --context-parallel-size 8" + extra, 8)


#: two layers (h 2048, 16 heads) of a 32K-token sequence, cp 16 over two DGX H100 nodes
TWO_NODES = ("--num-layers 2 --hidden-size 2048 --num-attention-heads 16 --seq-length 32768 "
             "--max-position-embeddings 32768 --micro-batch-size 1 --global-batch-size 1 --bf16 --vocab-size 128 "
             "--context-parallel-size 16")


def run_two_nodes(tmp_path, extra: str) -> dict:
    """``run --json-out`` of :data:`TWO_NODES` plus ``extra`` on 16 DGX H100 GPUs."""
    scenario, out = tmp_path / "s.yaml", tmp_path / "out.json"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": TWO_NODES + extra},
                                    "cluster": {"preset": "dgx-h100", "gpus": 16}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--json-out", str(out),
                           "--quiet"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _comm_cp_ns(tmp_path, extra: str) -> int:
    """A step's exposed context-parallel time on two DGX H100 nodes (NPU 0)."""
    return run_two_nodes(tmp_path, extra)["npus"]["0"]["breakdown_ns"].get("comm.cp", 0)


def test_a2a_plus_p2p_keeps_the_all_to_all_on_nvlink(tmp_path):
    """cp 16 over two 8-GPU nodes, 2,048 tokens a rank, h 2048: Q 8 MiB, K and V 16 MiB a rank.
    Each layer's four all-to-alls move 24 + 8 (forward) + 8 + 24 (backward) = 64 MiB a rank,
    none beside compute. Plain a2a over 16 ranks sends 8/16 of it to the other node through the
    rank's own 400 Gb/s NIC: at least 2 layers x 32 MiB / 50 GB/s = 1.34 ms exposed. a2a+p2p
    [8, 2] sends 7/8 inside the node over NVLink (at most 450 GB/s a direction): at least
    2 x 56 MiB / 450 GB/s = 0.26 ms; its ring (16 MiB a hop) crosses the nodes beside the
    attention kernels, so it stays under plain a2a's floor."""
    a2a = _comm_cp_ns(tmp_path, " --cp-comm-type a2a")
    hier = _comm_cp_ns(tmp_path, " --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 8 2")
    a2a_floor_ns = 2 * 32 * MIB / 50e9 * 1e9
    nvlink_floor_ns = 2 * 56 * MIB / 450e9 * 1e9
    assert a2a >= a2a_floor_ns
    assert nvlink_floor_ns <= hier < a2a_floor_ns


def test_a_sweep_sets_a_flag_of_several_values_from_a_list_or_words():
    """A study sweeps the hierarchy: ``workload.args.hierarchical-context-parallel-sizes: [[8, 2],
    "4 4"]`` writes the flag's words as Megatron's argparse reads them (``nargs='+'``); a flag of
    one value still refuses a list, and a bad word is refused before any point runs."""
    from simpy_astra.errors import InputError
    from simpy_astra.sweep.megatron_args import check_values, set_flag

    path = "workload.args.hierarchical-context-parallel-sizes"
    base = "--context-parallel-size 16 --hierarchical-context-parallel-sizes 2 8 --bf16"
    assert set_flag(base, path, [8, 2], "s") == "--context-parallel-size 16 --hierarchical-context-parallel-sizes 8 2 --bf16"
    assert set_flag(base, path, "4 4", "s").endswith("--hierarchical-context-parallel-sizes 4 4 --bf16")
    assert set_flag("--bf16", "workload.args.cp-comm-type", "a2a+p2p", "s") == "--bf16 --cp-comm-type a2a+p2p"
    check_values(path, ([8, 2], "4 4"), "s")
    with pytest.raises(InputError, match="--hierarchical-context-parallel-sizes 8 two: invalid int value"):
        check_values(path, ([8, "two"],), "s")
    with pytest.raises(InputError, match="give one value \\(a number or a word\\), not \\[2, 4\\]"):
        set_flag(base, "workload.args.tensor-model-parallel-size", [2, 4], "s")


def test_a_list_and_its_words_are_one_point_of_a_sweep(tmp_path):
    """``[8, 2]`` and ``"8 2"`` write the same flag: one point, labelled by its words."""
    from simpy_astra.sweep.spec import load_sweep

    sweep = tmp_path / "s.yaml"
    sweep.write_text(json.dumps({
        "base": {"workload": {"generate": "megatron", "args": BASE + " --context-parallel-size 8 --cp-comm-type "
                                                                     "a2a+p2p --hierarchical-context-parallel-sizes 2 4"},
                 "cluster": {"preset": "dgx-h100", "gpus": 8}},
        "axes": {"workload.args.hierarchical-context-parallel-sizes": [[8, 1], "8 1", [4, 2]]}}))
    axis = load_sweep(str(sweep)).axes[0]
    assert axis.values == ("8 1", "4 2")


@pytest.mark.parametrize("kind", ["p2p", "a2a"])
def test_sizes_beside_a_type_that_ignores_them_are_said_not_dropped_in_silence(kind):
    """Megatron takes ``--hierarchical-context-parallel-sizes`` with ``p2p`` or ``a2a`` without a
    word and builds no groups from them: the step is the plain type's, and the job says so."""
    cp = BASE + f" --context-parallel-size 8 --cp-comm-type {kind}"
    sized = cp + " --hierarchical-context-parallel-sizes 2 4"
    assert _comms(sized, 8) == _comms(cp, 8) and _comms(sized, 8, True) == _comms(cp, 8, True)
    assert parse(cp, 8, "s.yaml: workload.args").warnings == ()
    (warning,) = parse(sized, 8, "s.yaml: workload.args").warnings
    assert warning == (f"s.yaml: workload.args: --hierarchical-context-parallel-sizes changes nothing with "
                       f"--cp-comm-type {kind}: only a2a+p2p layers use the two levels; give --cp-comm-type "
                       f"a2a+p2p, or remove the sizes")
    assert parse(BASE + " --context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes "
                 "2 4", 8).warnings == ()
