"""The host side of a Megatron step: the kernels it launches and Transformer Engine's Python
around its linear modules, against the GPU time of the same work. Every figure here is derived
by hand from the constants' sources (TransformerEngine PR #3523 and issue #2053, see
``kernels.TE_MODULE_HOST_US``), never read back from a run."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.host_time import host_idle_seconds, task_host_seconds
from simpy_astra.workloads.megatron.job import LayerKind
from simpy_astra.workloads.megatron.kernels import Gpu
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.schedule import StageSchedule
from simpy_astra.workloads.megatron.steps import Collective, Compute

#: one layer of a Megatron-Core job on one GPU; the local implementation has no TE modules
LAYER = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
         "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 1 --bf16 "
         "--vocab-size 1024")
DENSE = LayerKind(moe=False, cp_comm="p2p")


def _host_us(job_args: str, gpu: Gpu) -> tuple[float, float]:
    """Host work beyond launches in one layer's forward and backward steps, in us."""
    model = ChunkModel(parse(job_args, 1), gpu)
    forward = model.forward([DENSE], first=False, last=False)
    backward = model.backward([DENSE], first=False, last=False)
    return tuple(sum(s.host_s for s in steps if isinstance(s, Compute)) * 1e6
                 for steps in (forward, backward))  # type: ignore[return-value]


def _h100() -> Gpu:
    return load_cluster({"preset": "dgx-h100", "gpus": 8}, "test").gpu_model()


def test_transformer_engine_layers_pay_their_modules_python():
    """A TE layer runs four linear modules (QKV and FC1 ``TELayerNormColumnParallelLinear``,
    the projection and FC2 ``TERowParallelLinear``). PR #3523's GB200 CPU times a call scaled
    by #2053's torch.nn.Linear ratio (13.48 / 37.08): Linear forward 51.19 x 0.3635 = 18.6 us
    for one kernel, LayerNormLinear 65.25 x 0.3635 = 23.7 us for two, so (8.6 + 3.7) / 2 = 6 us
    beyond the 10 us a launch; backward (276.50 - 51.19) x 0.3635 = 81.9 us for two kernels and
    (349.00 - 65.25) x 0.3635 = 103.1 us for three, (61.9 + 73.1) / 2 = 67 us beyond. A layer:
    4 x 6 = 24 us forward, 4 x 67 = 268 us backward; Megatron's own layers pay none."""
    gpu = _h100()
    forward, backward = _host_us(LAYER, gpu)
    assert forward == pytest.approx(24.0, abs=0.5)
    assert backward == pytest.approx(268.0, abs=1.0)
    assert _host_us(LAYER + " --transformer-impl local", gpu) == (0.0, 0.0)


def _host_nodes(job_args: str, tp: int, gpu: Gpu, steps: list) -> list[tuple[str, int]]:
    """The ``host`` nodes a stage's schedule adds for one task of ``steps``, (name, us)."""
    schedule = StageSchedule(parse(job_args, tp), gpu, 0)
    schedule.steps("t", steps, sync_grads=False)
    return [(op.name, op.duration_us) for op in schedule.g.ops if op.name.endswith(".host")]


def test_a_task_waits_for_the_modules_python_only_when_the_gpu_is_faster():
    """A backward of 18 kernels and one all-reduce with 268 us of TE Python: the host needs
    (18 + 1) x 10 + 268 = 458 us. Against 100 us of kernels the GPU idles 358 us; against
    1 ms of kernels the host runs ahead and nothing is added."""
    job = LAYER + " --tensor-model-parallel-size 2"
    gpu = _h100()
    fast = [Compute("a", {"gemm": 60e-6}, 10, 268e-6), Collective("ar", 0, 1024), Compute("b", {"gemm": 40e-6}, 8)]
    assert task_host_seconds(fast) * 1e6 == pytest.approx(458.0)
    assert host_idle_seconds(fast) * 1e6 == pytest.approx(358.0)
    assert _host_nodes(job, 2, gpu, fast) == [("t.host", 358)]
    slow = [Compute("a", {"gemm": 1e-3}, 18, 268e-6), Collective("ar", 0, 1024)]
    assert host_idle_seconds(slow) == 0.0
    assert _host_nodes(job, 2, gpu, slow) == []


def test_the_smallest_public_h100_row_is_not_host_bound():
    """Megatron-Core's 1.7B row (h 2048, 4,096 tokens, tp 1) has the shortest layer of the
    public H100 tables: its backward's host needs 18 x 10 + 268 = 448 us, a fifth or less of
    what its kernels take, so the host adds nothing there. The same layer at tp 8 with
    sequence parallelism runs an eighth of its GEMMs and adds six NCCL calls, each one more
    launch (each of the attention and MLP blocks: its input's all-gather for the weight
    gradient, the input gradient's reduce-scatter, the output gradient's all-gather):
    (18 + 6) x 10 + 268 = 508 us, and its backward waits for the host."""
    gpu = _h100()
    row = LAYER.replace("--hidden-size 1024", "--hidden-size 2048").replace("1024 ", "4096 ", 2)
    for tp, host_us, bound in ((1, 448.0, False), (8, 508.0, True)):
        args = row + (f" --tensor-model-parallel-size {tp} --sequence-parallel" if tp > 1 else "")
        steps = ChunkModel(parse(args, tp), gpu).backward([DENSE], first=False, last=False)
        assert task_host_seconds(steps) * 1e6 == pytest.approx(host_us, abs=1.0)
        assert bool(_host_nodes(args, tp, gpu, steps)) == bound


@pytest.mark.parametrize("extra, accepted", [
    (" --cuda-graph-impl none", True),  # Megatron's default: no graphs
    (" --cuda-graph-impl local", False),
    (" --cuda-graph-impl transformer_engine", False),
    (" --enable-cuda-graph", False),
    (" --external-cuda-graph", False),
])
def test_cuda_graphs_are_refused_saying_why_and_their_default_taken(extra, accepted):
    """``--cuda-graph-impl none`` is Megatron's default and runs eagerly; graphs are refused
    naming what is not priced (their memory pools), not as an unknown argument."""
    from simpy_astra.errors import InputError

    if accepted:
        assert parse(LAYER + extra, 1).transformer_engine
        return
    with pytest.raises(InputError, match="CUDA graphs: their memory pools are not priced"):
        parse(LAYER + extra, 1)
