"""Each micro-batch's own work outside the layers (``workloads/megatron/batch_fetch.py``):
``get_batch``'s copies, broadcasts and masks, the loss report, and the host's waits for the
GPU that they and Megatron's timers make. Every figure is derived by hand from the source
lines the module cites (Megatron-LM ``6985e58`` and r0.8 ``f2e5db40``)."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.job import LayerKind
from simpy_astra.workloads.megatron.kernels import Gpu, streaming_seconds
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.linear_kernels import ALL_REDUCE, BROADCAST
from simpy_astra.workloads.megatron.schedule import StageSchedule
from simpy_astra.workloads.megatron.steps import Collective, Compute, HostSync

GPT = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
       "--max-position-embeddings 1024 --micro-batch-size 2 --global-batch-size 16 --vocab-size 1024 ")
OF_2021 = GPT + "--fp16 --DDP-impl local "
TODAY = GPT + "--bf16 "
DENSE = LayerKind(moe=False, cp_comm="p2p")


def _a100() -> Gpu:
    return load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "test").gpu_model()


def _forward(args: str, gpus: int, first: bool, last: bool) -> list:
    return ChunkModel(parse(args, gpus), _a100()).forward([DENSE], first, last)


def _launch_s(gpu: Gpu, kernels: int = 1) -> float:
    return kernels * gpu.launch_us * 1e-6


def test_2021_get_batch_broadcasts_syncs_and_builds_the_mask_on_every_chunk():
    """2021's ``get_batch`` on a middle chunk at tp 2, micro-batch 2, sequence 1,024: the
    sizes copied up (a launch), broadcast (5 int64 = 40 B, Chakra's BROADCAST of them),
    read back (the host waits), the tokens copied up and broadcast (2 x 1,025 x 8 = 16,400 B),
    then seven kernels: the mask's ones, tril and < 0.5 over 1,024^2
    fp32 elements (4 + 8 + 5 B), the contiguous labels and tokens (16 B a token each), the
    loss mask (4 B a token) and the positions (8 B a position)."""
    gpu = _a100()
    steps = _forward(OF_2021 + "--tensor-model-parallel-size 2", 2, first=False, last=False)
    head = steps[:6]
    assert [type(s) for s in head] == [Compute, Collective, HostSync, Compute, Collective, Compute]
    assert head[0].kernels == 1 and head[0].total_s == pytest.approx(_launch_s(gpu))
    assert (head[1].comm_type, head[1].size_bytes, head[1].dim) == (BROADCAST, 40, "tp")
    assert (head[4].comm_type, head[4].size_bytes) == (BROADCAST, 2 * 1025 * 8)
    moved = 1024 * 1024 * 17 + 2048 * 36 + 1024 * 8
    assert head[5].kernels >= 7  # the layer's first kernels join the same compute step
    mask_s = streaming_seconds(gpu, moved, launch=False) + _launch_s(gpu, 7)
    assert head[5].seconds["elementwise"] >= mask_s
    # at tp 1 nothing is broadcast, but the sizes are still read back
    alone = _forward(OF_2021, 1, first=False, last=False)
    assert not [s for s in alone if isinstance(s, Collective) and s.label.startswith("batch.")]
    assert isinstance(alone[1], HostSync)


def test_today_get_batch_broadcasts_on_the_embedding_and_loss_chunks_only():
    """r0.8's ``get_batch_on_this_tp_rank`` at tp 2: a middle chunk fetches nothing; the
    first broadcasts tokens and positions (2 x 1,024 x 8 = 16,384 B each), the last labels
    (16,384) and the loss mask (2 x 1,024 x 4 = 8,192); each a broadcast of its bytes. No host
    wait there. (The dataset's attention mask is left out: the module says why.)"""
    args = TODAY + "--tensor-model-parallel-size 2"

    def sizes(first: bool, last: bool) -> list[int]:
        casts = [s for s in _forward(args, 2, first, last) if isinstance(s, Collective) and s.label.startswith("batch.")]
        assert {s.comm_type for s in casts} <= {BROADCAST}
        return [s.size_bytes for s in casts]

    assert sizes(False, False) == []
    assert sizes(True, False) == [16_384, 16_384]
    assert sizes(False, True) == [16_384, 8_192]
    assert sizes(True, True) == [16_384, 16_384, 16_384, 8_192]
    assert not [s for s in _forward(args, 2, True, False) if isinstance(s, HostSync)]


def test_the_loss_is_reported_as_each_era_reports_it():
    """The last chunk's forward ends with 2021's all-reduce of the loss over the data-parallel
    group (4 B, at dp 2 only) or with today's NaN check, a host wait (not with
    ``--no-check-for-nan-in-loss-and-grad``)."""
    old = _forward(OF_2021, 2, first=False, last=True)
    assert [(s.comm_type, s.size_bytes, s.dim) for s in old if isinstance(s, Collective)
            and s.label == "loss.report.allreduce"] == [(ALL_REDUCE, 4, "dp")]
    assert not [s for s in _forward(OF_2021, 1, False, True) if isinstance(s, Collective) and s.dim == "dp"]
    assert isinstance(_forward(TODAY, 1, False, True)[-1], HostSync)
    assert not isinstance(_forward(TODAY + "--no-check-for-nan-in-loss-and-grad", 1, False, True)[-1], HostSync)


def _host_nodes(args: str, gpus: int, steps: list) -> list[tuple[str, int]]:
    schedule = StageSchedule(parse(args, gpus), _a100(), 0)
    schedule.steps("t", steps, sync_grads=False)
    return [(op.name, op.duration_us) for op in schedule.g.ops if op.cpu]


def test_the_first_launch_after_a_synchronisation_is_charged():
    """A long kernel, a host wait, a short one (10 us a launch): after the wait the GPU is
    idle until the host has launched the second kernel, a host node of 10 us that the second
    kernel waits for. Without the wait the host had enqueued it long before. A task of
    2021's (its timers synchronise at each task's start) waits 10 us for its first launch
    too; today's at pp 1 (no synchronisation between tasks) does not."""
    long_, short = Compute("a", {"gemm": 1e-3}, 1), Compute("b", {"gemm": 5e-6}, 1)
    synced = _host_nodes(TODAY, 1, [long_, HostSync("s"), short])
    assert synced == [("t.1.s.host", 10)]
    assert _host_nodes(TODAY, 1, [long_, short]) == []
    assert _host_nodes(OF_2021, 1, [short]) == [("t.host", 10)]
    assert _host_nodes(TODAY, 1, [short]) == []
    # today's 1F1B at pp 2 synchronises after each batched exchange (batch_p2p_sync)
    assert _host_nodes(TODAY + "--pipeline-model-parallel-size 2", 2, [short]) == [("t.host", 10)]


def test_a_broadcasts_replayed_duration_is_its_bytes_over_the_tp_link_and_refused_on_another_dim():
    """A tp broadcast records its bytes once over the tp link: 16 KiB at 16.384 GB/s is 1 us,
    1 MiB at it 64 us. Only the tp link's rate is known: a broadcast on another dimension was
    given the tp link's time, and is refused instead, naming the dimension."""
    schedule = StageSchedule(parse(TODAY + "--tensor-model-parallel-size 2", 8), _a100(), 0, 16.384)
    assert schedule.g.ops[schedule.collective("b", BROADCAST, "tp", 16_384)].duration_us == 1
    assert schedule.g.ops[schedule.collective("b", BROADCAST, "tp", 1_048_576)].duration_us == 64
    with pytest.raises(ValueError, match="^broadcast 'b' over dp: a broadcast's replayed time is known on tp's link "
                                         "alone"):
        schedule.collective("b", BROADCAST, "dp", 16_384)
