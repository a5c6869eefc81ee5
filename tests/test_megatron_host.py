"""The host side of a Megatron step: the kernels it launches and Transformer Engine's Python
around its linear modules, against the GPU time of the same work. Every figure here is derived
by hand from the constants' sources (TransformerEngine PR #3523 and issue #2053, see
``kernels.TE_MODULE_HOST_US``), never read back from a run."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.host_time import task_host_seconds, task_issue
from simpy_astra.workloads.megatron.job import LayerKind
from simpy_astra.workloads.megatron.kernels import Gpu
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.linear_kernels import ALL_REDUCE
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


def _schedule(job_args: str, tp: int, gpu: Gpu, steps: list) -> StageSchedule:
    """A stage's schedule with one task of ``steps`` laid out."""
    schedule = StageSchedule(parse(job_args, tp), gpu, 0)
    schedule.steps("t", steps, sync_grads=False)
    return schedule


def _host_nodes(job_args: str, tp: int, gpu: Gpu, steps: list) -> list[tuple[str, int]]:
    """The host's nodes a stage's schedule adds for one task of ``steps``, (name, us)."""
    return [(op.name, op.duration_us) for op in _schedule(job_args, tp, gpu, steps).g.ops if op.cpu]


def test_a_task_waits_for_the_modules_python_only_when_the_gpu_is_faster():
    """A backward of 18 kernels and one all-reduce with 268 us of TE Python: the host needs
    (18 + 1) x 10 + 268 = 458 us. Its first step's 10 kernels and 268 us are spread evenly,
    36.8 us each; from the first kernel's enqueue the all-reduce is enqueued at 368 - 36.8 +
    10 = 341.2 us, the second step's first kernel 10 us later, and the host is done at
    458 - 36.8 = 421.2 us. Against 60 + 40 us of kernels the host paces the task: a node of
    the host's 341 us before the all-reduce, one of 10 us before the second step, one of
    70 us more after it; against 1 ms of kernels the host runs ahead and nothing is added."""
    job = LAYER + " --tensor-model-parallel-size 2"
    gpu = _h100()
    fast = [Compute("a", {"gemm": 60e-6}, 10, 268e-6), Collective("ar", 0, 1024), Compute("b", {"gemm": 40e-6}, 8)]
    assert task_host_seconds(fast) * 1e6 == pytest.approx(458.0)
    issue = task_issue(fast)
    assert [at * 1e6 for at in issue.enqueued_s] == pytest.approx([0.0, 341.2, 351.2])
    assert issue.done_s * 1e6 == pytest.approx(421.2)
    assert _host_nodes(job, 2, gpu, fast) == [("t.host", 341), ("t.host", 10), ("t.host", 70)]
    slow = [Compute("a", {"gemm": 1e-3}, 18, 268e-6), Collective("ar", 0, 1024)]
    assert _host_nodes(job, 2, gpu, slow) == []


#: a tensor-parallel pair on a ring whose all-reduce's time the test reads from a run of it alone
PAIR = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [50.0], "latency": [500.0]}
ALL_REDUCE_BYTES = 1 << 19


def _finish_ns(tmp_path, schedule: StageSchedule) -> int:
    """Both GPUs of a tensor-parallel pair run the schedule's graph on :data:`PAIR`."""
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.transformer.graph import COLL
    from tests.sim_helpers import run

    nodes = []
    for i, op in enumerate(schedule.g.ops):
        if op.kind == COLL:
            attrs = {"comm_type": op.comm_type, "comm_size": op.comm_size, "is_cpu_op": 0, "pg_name": "1",
                     "comm_stream": op.stream}
        else:
            attrs = {"op_type": op.op_type, "is_cpu_op": op.cpu}
        nodes.append(make_node(i, op.name, op.kind, deps=op.deps, duration_micros=op.duration_us, attrs=attrs))
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    reports = run(folder, [nodes, nodes], PAIR, groups={"1": [0, 1]})
    return max(r.finished_cycles for r in reports.values())


def test_a_host_bound_task_overlaps_its_blocking_collective_with_the_hosts_time(tmp_path):
    """PyTorch's NCCL calls return at once: the host goes on issuing while a blocking
    all-reduce runs, and only the kernels after it wait for it. Two steps of 4 kernels and
    20 us each around one all-reduce of ``c`` us, 10 us a launch: from the first kernel's
    enqueue the all-reduce is enqueued at 40 us, the second step's first kernel at 50 and the
    host is done at 80. The first step runs 0-20, the all-reduce 40-(40 + c), the second step
    from max(50, 40 + c) for 20 us: the task takes max(80, max(50, 40 + c) + 20) us, by hand
    (``c`` from a run of the all-reduce alone: the network's, not what is tested). Adding the
    host's idle before the task and the all-reduce after it took 50 + 20 + c + 20."""
    gpu = _h100()
    job = LAYER + " --tensor-model-parallel-size 2"
    alone = StageSchedule(parse(job, 2), gpu, 0)
    alone.collective("ar", ALL_REDUCE, "tp", ALL_REDUCE_BYTES)
    c_ns = _finish_ns(tmp_path, alone)
    assert c_ns > 10_000  # the second step waits for the all-reduce, not the host
    steps = [Compute("a", {"gemm": 20e-6}, 4), Collective("ar", ALL_REDUCE, ALL_REDUCE_BYTES),
             Compute("b", {"gemm": 20e-6}, 4)]
    expected_ns = max(80_000, max(50_000, 40_000 + c_ns) + 20_000)
    assert _finish_ns(tmp_path, _schedule(job, 2, gpu, steps)) == expected_ns
    assert expected_ns < 90_000 + c_ns


def test_a_gpu_bound_task_runs_as_if_the_host_were_free(tmp_path):
    """The same task with 1 ms steps: the host has enqueued each step long before the GPU
    reaches it (at 40, 50 and 80 us against 1,000 and 2,000 us of kernels before them), so the
    schedule has no host node and the task takes 1,000 + c + 1,000 us, by hand."""
    gpu = _h100()
    job = LAYER + " --tensor-model-parallel-size 2"
    alone = StageSchedule(parse(job, 2), gpu, 0)
    alone.collective("ar", ALL_REDUCE, "tp", ALL_REDUCE_BYTES)
    c_ns = _finish_ns(tmp_path, alone)
    steps = [Compute("a", {"gemm": 1e-3}, 4), Collective("ar", ALL_REDUCE, ALL_REDUCE_BYTES),
             Compute("b", {"gemm": 1e-3}, 4)]
    schedule = _schedule(job, 2, gpu, steps)
    assert not [op for op in schedule.g.ops if op.cpu]
    assert _finish_ns(tmp_path, schedule) == 2_000_000 + c_ns


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
