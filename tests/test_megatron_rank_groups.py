"""Megatron's communicator groups as Megatron-LM itself builds them: each group of the
generator's layout (:class:`Layout`) against the groups of Megatron-Core's ``RankGenerator``
(``megatron/core/parallel_state.py``, ``generate_masked_orthogonal_rank_groups``, restated here
from its source), for the decoder's grid ``tp-cp-ep-dp-pp`` (ep 1) and the experts' grid (tp =
the experts' tp, cp 1) that ``initialize_model_parallel`` builds beside it."""

from __future__ import annotations

import pytest

from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.rank_layout import Layout

BASE = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --global-batch-size 256 --bf16 --vocab-size 51200 --disable-bias-linear")
MOE = " --num-experts 16 --moe-router-topk 2 --moe-token-dispatcher-type alltoall"


def _megatron_groups(world: int, sizes: dict[str, int], order: str, token: str) -> list[list[int]]:
    """Megatron's ``RankGenerator(...).get_ranks(token)``: the order's dimensions, fastest
    first; a group varies the masked ones and fixes the others (generate_masked_orthogonal_rank_groups)."""
    names = order.split("-")
    shape = [sizes[n] for n in names]
    mask = [n in token.split("-") for n in names]
    stride = [1]
    for s in shape:
        stride.append(stride[-1] * s)
    masked = [(s, d) for s, d, m in zip(shape, stride, mask, strict=False) if m]
    unmasked = [(s, d) for s, d, m in zip(shape, stride, mask, strict=False) if not m]

    def ranks_of(index: int, dims: list[tuple[int, int]]) -> int:
        out = 0
        for s, d in dims:
            out += (index % s) * d
            index //= s
        return out

    group_size = 1
    for s, _ in masked:
        group_size *= s
    return [[ranks_of(i, masked) + ranks_of(g, unmasked) for i in range(group_size)]
            for g in range(world // group_size)]


def _layout_groups(layout: Layout, dim: str) -> set[frozenset[int]]:
    ids = {gid for (d, _), gid in layout.group_of.items() if d == dim}
    return {frozenset(layout.groups[g]) for g in ids}


def _sets(groups: list[list[int]]) -> set[frozenset[int]]:
    return {frozenset(g) for g in groups if len(g) > 1}


@pytest.mark.parametrize("gpus,tp,cp,pp,ep,etp,tp_pp_dp", [
    (16, 2, 1, 1, 0, 0, False),   # TP < 8: strided data-parallel groups {0, 2, ..., 14}
    (32, 16, 1, 2, 0, 0, False),  # TP 16 across two nodes
    (16, 4, 1, 2, 0, 0, True),    # --use-tp-pp-dp-mapping: 'tp-cp-ep-pp-dp'
    (16, 4, 1, 2, 1, 0, True),    # ... with experts (ep 1: Megatron's only choice there)
    (32, 2, 2, 1, 0, 0, True),    # ... beside cp (no pipeline: Megatron allows it)
    (32, 2, 2, 2, 0, 0, False),   # context parallelism: dp-cp is the gradients' group
    (64, 4, 1, 2, 4, 0, False),   # experts, their tp = tp
    (64, 4, 1, 1, 8, 1, False),   # experts with tp 1 under tp 4: consecutive ranks
    (32, 2, 2, 1, 2, 0, False),   # experts beside context parallelism: ep folds over cp
    (64, 8, 1, 2, 2, 1, False),   # experts of tp 1 under tp 8, two stages
])
def test_every_group_is_the_one_megatron_builds(gpus, tp, cp, pp, ep, etp, tp_pp_dp):
    """(ep 0: no experts.) Expert groups had been laid over the data-parallel ranks with tp and cp fixed (the
    Megatron-Core 0.9 rule): with --expert-tensor-parallel-size 1 under tp 4 on 64 GPUs, ep 8
    groups {0, 4, ..., 28} spanning four nodes, where Megatron builds {0, ..., 7} (its expert
    grid is etp, ep, then the rest), so their all-to-alls paid the NICs instead of NVLink; and
    beside cp 2, ep groups {t + 2c + 8e} where Megatron's fold over cp ({0, 2})."""
    args = (f"{BASE} --tensor-model-parallel-size {tp} --context-parallel-size {cp} "
            f"--pipeline-model-parallel-size {pp}")
    if ep:  # experts (ep 0: none)
        args += f"{MOE} --expert-model-parallel-size {ep}" + (" --sequence-parallel" if tp > 1 else "")
        args += f" --expert-tensor-parallel-size {etp}" if etp else ""
    if tp_pp_dp:
        args += " --use-tp-pp-dp-mapping"
    layout = Layout.build(parse(args, gpus))
    dp = gpus // (tp * cp * pp)
    sizes = {"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp}
    order = "tp-cp-ep-pp-dp" if tp_pp_dp else "tp-cp-ep-dp-pp"
    for dim, token in (("tp", "tp"), ("cp", "cp"), ("dp", "dp-cp")):
        assert _layout_groups(layout, dim) == _sets(_megatron_groups(gpus, sizes, order, token)), dim
    pipelines = _megatron_groups(gpus, sizes, order, "pp")  # a stage's neighbour is the next in its group
    stride = layout.stage_stride()
    assert all(g[i + 1] - g[i] == stride and layout.stage_of(g[i]) == i for g in pipelines for i in range(pp - 1))
    if ep:
        e_tp = etp or tp
        expert_sizes = {"tp": e_tp, "cp": 1, "ep": ep, "dp": gpus // (e_tp * ep * pp), "pp": pp}
        assert _layout_groups(layout, "ep") == _sets(_megatron_groups(gpus, expert_sizes, order, "ep"))
        assert _layout_groups(layout, "edp") == _sets(_megatron_groups(gpus, expert_sizes, order, "dp"))


def test_hierarchical_context_parallel_groups_are_megatrons():
    """--cp-comm-type a2a+p2p with --hierarchical-context-parallel-sizes 2 4 (cp 8): Megatron's
    create_hierarchical_groups rearranges each cp group '(l s u) -> (l u) s' per level, u the
    product of the sizes below: the all-to-all groups are runs of 2 of the cp group, the K/V
    rings every 2nd member from each of the first 2."""
    args = (f"{BASE} --tensor-model-parallel-size 2 --context-parallel-size 8 --cp-comm-type a2a+p2p "
            "--hierarchical-context-parallel-sizes 2 4")
    layout = Layout.build(parse(args, 32))
    sizes = {"tp": 2, "cp": 8, "ep": 1, "dp": 2, "pp": 1}
    a2a, p2p = set(), set()
    for ranks in _megatron_groups(32, sizes, "tp-cp-ep-dp-pp", "cp"):
        for level, (size, below) in enumerate(((2, 1), (4, 2))):
            chunks = len(ranks) // (size * below)
            for l_ in range(chunks):  # einops: index (l, s, u) = (l * size + s) * below + u
                for u in range(below):
                    group = frozenset(ranks[(l_ * size + s) * below + u] for s in range(size))
                    (a2a if level == 0 else p2p).add(group)
    assert _layout_groups(layout, "cp_a2a") == a2a and _layout_groups(layout, "cp_p2p") == p2p
