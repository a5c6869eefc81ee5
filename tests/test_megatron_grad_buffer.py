"""Megatron-Core's gradient buffer each step, against Megatron-LM's source (r0.8 ``f2e5db40``,
the Megatron-Core H100 table's commit, and today's), derived by hand.

- ``train_step`` zeroes each model chunk's whole gradient buffer before the forward
  (``zero_grad_buffer`` -> ``ParamAndGradBuffer.reset``: ``grad_data.zero_()``): one write of
  the buffer, 4 B a parameter in fp32.
- ``start_grad_sync``, before each bucket's reduce-scatter or all-reduce, reads the bucket for
  its norm (``grad_data.norm(p=2)``, then ``assert not norm.isnan()``) while
  ``check_for_nan_in_grad`` (``--check-for-nan-in-loss-and-grad``, on unless ``--no-...``, and
  off for fp16's dynamic loss scale in ``validate_args``), and scales it in place
  (``grad_data *= gradient_scaling_factor``, 1/(dp x cp)) unless the collective averages
  (``--ddp-average-in-collective``) or the loss is per token (``--calculate-per-token-loss``,
  factor 1): one read, then a read and a write.
- ``forward_backward_pipelining_without_interleaving`` with ``config.grad_sync_func`` (set
  by ``--delay-grad-reduce`` in r0.8, ``--align-grad-reduce`` today, both on by default):
  only the first pipeline stage enables the sync in its last backward; the others "do grad
  reduction during pipeline bubble", after their last ``send_backward``.

2021/2022's DDP (``--DDP-impl``) is another code and is not priced here.
"""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.schedule import build_stage

L, H, S, V = 8, 1024, 1024, 128
BASE = (f"--num-layers {L} --hidden-size {H} --num-attention-heads 16 --seq-length {S} --micro-batch-size 1 "
        f"--vocab-size {V} --make-vocab-size-divisible-by 1 --max-position-embeddings {S}")
DDP = " --bf16 --use-distributed-optimizer --overlap-grad-reduce"
#: an H100's datasheet HBM rate, the preset's memory efficiency and kernel launch
GPU = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()


def pass_us(moved_bytes: float) -> float:
    """One memory-bound kernel moving ``moved_bytes`` of HBM, with its launch."""
    return (moved_bytes / (GPU.hbm_gb_s * 1e9 * GPU.memory_efficiency) + GPU.launch_us * 1e-6) * 1e6


def ops_of(args: str, gpus: int, stage: int = 0) -> dict:
    return {op.name: op for op in build_stage(parse(args, gpus), GPU, stage).ops}


@pytest.mark.parametrize("extra,per_bucket", [
    ("", lambda b: pass_us(4 * b) + pass_us(8 * b)),  # the norm's read; the scaling's read and write
    (" --no-check-for-nan-in-loss-and-grad", lambda b: pass_us(8 * b)),
    (" --ddp-average-in-collective", lambda b: pass_us(4 * b)),
    (" --calculate-per-token-loss", lambda b: pass_us(4 * b)),
])
def test_each_bucket_is_read_for_its_norm_and_scaled_before_its_sync(extra, per_bucket):
    """dp 2, bf16 (fp32 gradients, 4 B): every bucket's sync waits for its preparation, whose
    time is the passes above over the bucket's bytes; the step starts by zeroing them all."""
    ops = build_stage(parse(BASE + DDP + extra, 2), GPU, 0).ops
    syncs = [i for i, op in enumerate(ops) if op.name.endswith(".dp.sync")]
    assert syncs
    synced = 0
    for i in syncs:
        params = ops[i].comm_size // 4
        prepare = ops.index(next(op for op in ops if op.name == ops[i].name.replace(".sync", ".prepare")))
        assert prepare in ops[i].deps
        assert ops[prepare].duration_us == pytest.approx(per_bucket(params), abs=1)
        synced += params
    assert ops[0].name == "grads.zero" and ops[0].duration_us == pytest.approx(pass_us(4 * synced), abs=1)


@pytest.mark.parametrize("args,gpus", [
    (BASE + DDP + " --no-check-for-nan-in-loss-and-grad --ddp-average-in-collective", 2),  # nothing to do
    (BASE + " --fp16 --use-distributed-optimizer --overlap-grad-reduce --ddp-average-in-collective", 2),  # no check
    (BASE + " --fp16 --DDP-impl local", 2),  # 2021's DDP: another code
])
def test_no_bucket_preparation_where_megatron_runs_none(args, gpus):
    assert not [name for name in ops_of(args, gpus) if name.endswith(".prepare")]


def test_fp16_with_a_constant_loss_scale_checks_its_buckets():
    """validate_args turns the NaN check off only for fp16's dynamic loss scale."""
    args = BASE + " --fp16 --use-distributed-optimizer --overlap-grad-reduce --ddp-average-in-collective"
    prepared = [op for name, op in ops_of(args + " --loss-scale 4096", 2).items() if name.endswith(".prepare")]
    assert prepared and all(op.duration_us > 0 for op in prepared)


def test_without_overlap_the_whole_buffer_is_prepared_once_before_its_sync():
    ops = ops_of(BASE + " --bf16 --use-distributed-optimizer", 2)
    prepare, sync = ops["grads.dp.prepare"], ops["grads.dp.sync"]
    params = sync.comm_size // 4
    assert params > 12 * H * H * L
    assert prepare.duration_us == pytest.approx(pass_us(4 * params) + pass_us(8 * params), abs=1)


def _last_send_and_prepare(extra: str) -> tuple[int, int, list]:
    """Stage 1 of a pp 2, dp 2 job: the ids of its last gradient send and its bucket's preparation."""
    ops = build_stage(parse(BASE + DDP + " --pipeline-model-parallel-size 2 --global-batch-size 8" + extra, 4),
                      GPU, 1).ops
    send = max(i for i, op in enumerate(ops) if op.name.endswith("send_gradient"))
    prepare = next(i for i, op in enumerate(ops) if op.name.endswith(".prepare"))
    return send, prepare, ops


def test_a_later_stage_syncs_its_gradients_after_its_last_send():
    """By default stage 1 sends its last input gradient first, then prepares and syncs its one
    bucket in the bubble; with ``--no-align-grad-reduce`` (r0.8: ``--no-delay-grad-reduce``) it
    prepares the bucket in its last backward, and the send waits for that."""
    send, prepare, ops = _last_send_and_prepare("")
    assert send in ops[prepare].deps and prepare > send
    for flag in (" --no-align-grad-reduce", " --no-delay-grad-reduce"):
        send, prepare, ops = _last_send_and_prepare(flag)
        assert prepare in ops[send].deps


@pytest.mark.parametrize("extra,warned", [
    ("", True),  # pp 1: no later stage
    (" --pipeline-model-parallel-size 2 --global-batch-size 8", False),
])
def test_no_align_grad_reduce_without_a_later_stage_is_told_it_changes_nothing(extra, warned):
    job = parse(BASE + DDP + " --no-align-grad-reduce" + extra, 4)
    said = [w for w in job.warnings if "--no-align-grad-reduce changes nothing" in w]
    assert bool(said) == warned
