"""The Megatron-LM generator: arguments, kernel times, schedules, overlap, streams, presets.

Every figure is derived here by hand (closed forms from the mechanism's definition) or read
from Megatron-LM's published table; none is read back from the code under test."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.kernels import GEMM_PIPELINE_K, Gpu, gemm_seconds, streaming_seconds
from simpy_astra.workloads.megatron.linear_kernels import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER
from simpy_astra.workloads.megatron.steps import Collective, Compute
from simpy_astra.workloads.schedules.interleaved import interleaved
from simpy_astra.workloads.schedules.one_f_one_b import one_f_one_b

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "..", "shared", "realtables", "SC21_TABLE1.md")

SC21_145B = ("--num-layers 80 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
             "--max-position-embeddings 2048 --micro-batch-size 2 --global-batch-size 2304 "
             "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
             "--num-layers-per-virtual-pipeline-stage 5 --fp16 --checkpoint-activations --DDP-impl local "
             "--vocab-size 51200")

TOY = Gpu(name="toy", sms=2, tensor_tflops=1.0, fp8_tflops=0, hbm_gb_s=1e6, hbm_gib=1, l2_gb_s=1e9,
          tensor_efficiency=0.5, fp8_efficiency=0.5, memory_efficiency=0.5, attention_efficiency=0.25,
          launch_us=2.0)


# ---------------------------------------------------------------------------------- arguments
def test_sc21_row_parses_as_megatron_reads_it():
    job = parse(SC21_145B, 1536)
    assert (job.tp, job.pp, job.dp, job.virtual_stages, job.micro_batches) == (8, 8, 24, 2, 48)
    assert job.recompute == "full" and job.ddp == "local" and job.legacy and job.precision == "fp16"
    # the paper's formulas (SC21_TABLE1.md): F = 96 B s l h^2 (1 + s/6h + V/16lh), P = 12 l h^2 (...)
    b, s, l_, h, v = 2304, 2048, 80, 12288, 51200
    assert job.model_flops() == pytest.approx(96 * b * s * l_ * h * h * (1 + s / (6 * h) + v / (16 * l_ * h)))
    params = 12 * l_ * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l_ * h))
    assert job.parameters() == pytest.approx(params, rel=1e-4)
    assert job.parameters() / 1e9 == pytest.approx(145.6, abs=0.05)  # the table's Params column


@pytest.mark.parametrize("tp,padded", [(1, 50304), (2, 50432), (4, 50688), (8, 51200)])
def test_gpt2_vocabulary_is_padded_as_megatron_pads_it(tp, padded):
    # SC21_TABLE1.md: 50,257 padded to a multiple of 128 x tp
    job = parse(f"--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 "
                f"--micro-batch-size 1 --tensor-model-parallel-size {tp} --vocab-file gpt2-vocab.json", 8)
    assert job.vocab == padded


def test_arguments_without_timing_effect_are_accepted_and_unmodelled_ones_refused():
    base = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1"
    parse(base + " --lr 0.0001 --data-path /x/y --log-interval 5 --save ckpt --save-interval 1000 --split 969,30,1 "
                 "--seed 7", 2)  # (Megatron: --save needs --save-interval)
    with pytest.raises(InputError, match=r"--multi-latent-attention is not modelled \(multi-latent attention\)"):
        parse(base + " --multi-latent-attention", 2)
    with pytest.raises(InputError, match=r"--deterministic-mode is not modelled \(deterministic kernels"):
        parse(base + " --deterministic-mode", 2)  # Megatron's help: "usually means slower execution"
    # TransformerConfig: "num_moe_experts must be non-negative." (raised for 0 too, but validate_args
    # makes 0 None first: a dense model, tests/test_hostile_hunt19.py)
    with pytest.raises(InputError, match=r"--num-experts: must be an integer >= 0 \(Megatron: num_moe_experts"):
        parse(base + " --num-experts -1", 2)
    # Megatron replaces the model's arguments with the checkpoint's, which the simulator cannot read
    with pytest.raises(InputError, match=r"--use-checkpoint-args is not modelled \(the model's arguments read"):
        parse(base + " --use-checkpoint-args --load ckpt", 2)
    with pytest.raises(InputError, match=r"--frobnicate-kernels is not an argument"):
        parse(base + " --frobnicate-kernels 3", 2)
    with pytest.raises(InputError, match=r"not a multiple of tp x pp x cp"):
        parse(base + " --tensor-model-parallel-size 4", 6)


# ---------------------------------------------------------------------------------- kernels
def test_one_gemm_time_from_the_formula():
    """m = n = 256, k = 1024 on two SMs: a 256 x 128 tile per SM, one wave; each SM does
    2 x 256 x 128 x (k + pipeline fill) FLOPs at (peak x efficiency / SMs)."""
    per_sm = 1e12 * 0.5 / 2
    expected = 2 * 256 * 128 * (1024 + GEMM_PIPELINE_K) / per_sm + 2e-6
    assert gemm_seconds(TOY, 256, 256, 1024) == pytest.approx(expected, rel=1e-12)
    # m = 257 (wave quantisation): 256 x 128 tiles need 3 x 2 = 6 tiles, 3 waves (3x); the best
    # is 64 x 128: 5 x 2 = 10 tiles of a quarter the work, 5 waves (1.25x)
    assert gemm_seconds(TOY, 257, 256, 1024) - 2e-6 == pytest.approx(1.25 * (expected - 2e-6), rel=1e-12)


def test_a_skinny_gemm_is_memory_bound():
    """m = 65536, n = 8, k = 8: nearly no FLOPs; the time is moving A, B and C through HBM."""
    slow_memory = Gpu(**{**TOY.__dict__, "hbm_gb_s": 1.0, "tensor_tflops": 1e6})
    moved = (65536 * 8 + 8 * 8 + 65536 * 8) * 2
    assert gemm_seconds(slow_memory, 65536, 8, 8) == pytest.approx(moved / (1e9 * 0.5) + 2e-6, rel=1e-12)
    assert streaming_seconds(slow_memory, 1e9) == pytest.approx(1e9 / 0.5e9 + 2e-6)


# ---------------------------------------------------------------------------------- schedules
def test_one_f_one_b_order():
    assert one_f_one_b(0, 2, 3) == [("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("F", 2, 0), ("B", 1, 0),
                                    ("B", 2, 0)]
    assert one_f_one_b(1, 2, 3) == [("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0), ("F", 2, 0),
                                    ("B", 2, 0)]


def test_interleaved_order_is_megatrons():
    """pp = 2, 4 micro-batches, 2 chunks: stage 0 warms up with (2-0-1)*2 + (2-1)*2 = 4
    forwards; micro-batches go through the chunks in groups of pp."""
    order = interleaved(0, 2, 4, 2)
    assert order[:4] == [("F", 0, 0), ("F", 1, 0), ("F", 0, 1), ("F", 1, 1)]
    assert order[4:6] == [("F", 2, 0), ("B", 0, 1)]
    assert sorted(order) == sorted([(k, m, c) for k in "FB" for m in range(4) for c in range(2)])


def _run(tmp_path, args: str, gpus: int, cluster: dict | None = None) -> int:
    scenario = tmp_path / "s.yaml"
    cluster = {"preset": "dgx-a100-80gb", "gpus": gpus, **(cluster or {})}
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}))
    out = tmp_path / "out.json"
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--json-out", str(out),
                           "--quiet"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())["iteration_time_ns"]


def _stage_times(args: str, gpus: int) -> tuple[float, float]:
    """(forward, backward) compute of one micro-batch through one chunk, from the kernel model."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    job = parse(args, gpus)
    model = ChunkModel(job, load_cluster({"preset": "dgx-a100-80gb", "gpus": gpus}, "c").gpu_model())
    dense = job.chunk_kinds(0, 0)
    fwd = sum(s.total_s for s in model.forward(dense, False, False) if isinstance(s, Compute))
    bwd = sum(s.total_s for s in model.backward(dense, False, False) if isinstance(s, Compute))
    return fwd, bwd


PIPE = ("--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
        "--global-batch-size 8 --pipeline-model-parallel-size 4 --bf16 --vocab-size 128")


def _optimizer_s(gpus: int, layers: int, h: int) -> float:
    """Adam over a stage's weights: 38 B per parameter streamed (the accounting of
    gradient, fp32 master and two moments read and written, the bf16 copy, norm and check)."""
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": gpus}, "c").gpu_model()
    params = layers * (12 * h * h + 13 * h)
    return params * 38 / (gpu.hbm_gb_s * 1e9 * gpu.memory_efficiency)


def test_interleaved_schedule_bubble(tmp_path):
    """4 stages, 8 micro-batches, compute tf + tb per micro-batch and stage. 1F1B takes
    (m + p - 1)(tf + tb); interleaving with v chunks cuts the bubble to (p - 1)(tf + tb) / v
    (Narayanan et al., SC'21, section 2.2). The embedding, loss and sends are small here."""
    p, m = 4, 8
    plain = _run(tmp_path, PIPE, 4)
    fwd, bwd = _stage_times(PIPE, 4)
    optimizer = _optimizer_s(4, 4, 2048)
    assert plain / 1e9 == pytest.approx((m + p - 1) * (fwd + bwd) + optimizer, rel=0.03)
    chunked = PIPE + " --num-layers-per-virtual-pipeline-stage 2"
    two = _run(tmp_path, chunked, 4)
    fwd2, bwd2 = _stage_times(chunked, 4)  # one chunk of two: half the stage
    per_mb = 2 * (fwd2 + bwd2)
    assert two / 1e9 == pytest.approx((m + (p - 1) / 2) * per_mb + optimizer, rel=0.03)
    assert two < plain


# ---------------------------------------------------------------------------------- uneven stages
SMALL = ("--hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1 --global-batch-size 8 "
         "--bf16 --vocab-size 128")


def _counts(job) -> list[list[int]]:
    """Layers of each stage's chunks, stage by stage."""
    return [[len(r) for r in job.stage_layers(s)] for s in range(job.pp)]


def test_uneven_first_and_last_stages_split_as_megatron_core_builds_them():
    # 10 layers, first stage 1, last 3: the two middle stages share 6, 3 each, in order
    job = parse(SMALL + " --num-layers 10 --pipeline-model-parallel-size 4 "
                        "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 3", 4)
    assert _counts(job) == [[1], [3], [3], [3]]
    assert [job.chunk_layers(s, 0) for s in range(4)] == [range(0, 1), range(1, 4), range(4, 7), range(7, 10)]
    # 16 layers, 2 chunks a stage, first 2, last 6: middle stages 4 each; a stage's layers split
    # over its chunks, the chunks in model order (chunk c of stage s is the (c pp + s)-th), so
    # stage 3's second chunk starts after 1 + 2 + 2 + 3 + 1 + 2 + 2 = 13 layers (Megatron-Core's
    # offset vp_stage x 8 + first/vp + middle rank x middle/vp/middle stages = 8 + 1 + 2 x 2)
    job = parse(SMALL + " --num-layers 16 --pipeline-model-parallel-size 4 --virtual-pipeline-model-parallel-size 2 "
                        "--decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 6", 4)
    assert _counts(job) == [[1, 1], [2, 2], [2, 2], [3, 3]]
    assert job.chunk_layers(3, 1) == range(13, 16) and job.chunk_layers(0, 1) == range(8, 9)


def test_embedding_and_loss_counted_in_the_split():
    # 14 layers + embedding + loss = 16 slots over 4 stages x 2 chunks: 2 a chunk, the model's
    # first chunk (stage 0, chunk 0) and last (stage 3, chunk 1) one layer fewer; offsets
    # Megatron-Core's chunk x 8 + stage x 2 - 1 after the first chunk
    job = parse(SMALL + " --num-layers 14 --pipeline-model-parallel-size 4 --virtual-pipeline-model-parallel-size 2 "
                        "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split", 4)
    assert _counts(job) == [[1, 2], [2, 2], [2, 2], [2, 1]]
    assert job.chunk_layers(1, 0) == range(1, 3) and job.chunk_layers(1, 1) == range(9, 11)
    only_loss = parse(SMALL + " --num-layers 7 --pipeline-model-parallel-size 4 "
                              "--account-for-loss-in-pipeline-split", 4)
    assert _counts(only_loss) == [[2], [2], [2], [1]]
    assert job.model_flops() == parse(SMALL + " --num-layers 14 --pipeline-model-parallel-size 2", 2).model_flops()


def test_moe_layers_follow_the_uneven_split():
    # every 2nd layer an MoE (0, 2, 4, ...); 10 layers as 1, 3, 3, 3: stage 0 holds layer 0 (an
    # MoE), stage 1 layers 1-3 (one, 2), stage 2 layers 4-6 (two, 4 and 6), stage 3 7-9 (one, 8)
    from simpy_astra.workloads.megatron.schedule import StageSchedule

    job = parse(SMALL + " --num-layers 10 --pipeline-model-parallel-size 4 --num-experts 4 --moe-layer-freq 2 "
                        "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 3", 4)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    experts = [StageSchedule(job, gpu, s).chunk_grads(0)["edp"] for s in range(4)]
    assert experts[1] > 0 and experts == [experts[1], experts[1], 2 * experts[1], experts[1]]


def test_moe_layer_pattern_as_megatron_reads_it():
    """Megatron's ``moe_freq_type``: a list expression of 0s and 1s, one a layer (DeepSeek's
    first dense layers: '([0]*3+[1]*5)'); ``gpt_layer_specs`` asserts its length is the
    model's. 8 layers over 4 stages, 2 a stage: stage 0 holds two dense layers, stage 1 one of
    each, stages 2 and 3 two with experts each."""
    from simpy_astra.workloads.megatron.schedule import StageSchedule

    base = SMALL + " --num-layers 8 --pipeline-model-parallel-size 4 --num-experts 4"
    job = parse(base + " --moe-layer-freq '([0]*3+[1]*5)'", 4)
    assert [job.is_moe(i) for i in range(8)] == [False] * 3 + [True] * 5 and job.moe_layers == 5
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    experts = [StageSchedule(job, gpu, s).chunk_grads(0)["edp"] for s in range(4)]
    assert experts[1] > 0 and experts == [0, experts[1], 2 * experts[1], 2 * experts[1]]
    assert parse(base + " --moe-layer-freq '[1,0]*4'", 4).moe_layers == parse(base + " --moe-layer-freq 2", 4).moe_layers
    with pytest.raises(InvalidConfigurationError, match="a pattern of 7 layers for --num-layers 8"):
        parse(base + " --moe-layer-freq '[1]*7'", 4)
    for bad, why in (("'[2]*8'", "each layer is 0"), ("\"__import__('os')\"", "neither a number"), ("0", "at least 1")):
        with pytest.raises(InputError, match=why):
            parse(base + f" --moe-layer-freq {bad}", 4)


def test_pipeline_layout_string_as_megatron_parses_it():
    # ',' is cosmetic, (..)*N and x*N repeat; 8 chunks over 4 stages: 2 a stage, in model order
    job = parse(SMALL + " --num-layers 9 --pipeline-model-parallel-size 4 "
                        "--pipeline-model-parallel-layout 'Et|(t|)*2,t*2|(t|)*3,tL'", 4)
    assert job.virtual_stages == 2
    assert _counts(job) == [[1, 1], [1, 1], [1, 1], [2, 1]]
    assert job.chunk_layers(3, 0) == range(3, 5) and job.chunk_layers(3, 1) == range(8, 9)
    empty = parse(SMALL + " --num-layers 2 --pipeline-model-parallel-size 2 "
                          "--pipeline-model-parallel-layout 'E|t|t|L'", 2)  # chunks with no layer
    assert _counts(empty) == [[0, 1], [1, 0]]


@pytest.mark.parametrize("extra,reason", [
    ("--num-layers 10 --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 2",
     "number of layers at middle stage must be divisible by the middle pipeline model parallel size"),
    ("--num-layers 16 --virtual-pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 3",
     "number of layers at first stage must be divisible by virtual pipeline parallel degree"),
    ("--num-layers 13 --virtual-pipeline-model-parallel-size 2 --decoder-last-pipeline-num-layers 4",
     "number of layers on each middle pipeline rank must be divisible by virtual pipeline parallel degree"),
    ("--num-layers 4 --decoder-first-pipeline-num-layers 2 --decoder-last-pipeline-num-layers 2",
     "you either have middle pp stages and layers or none of them"),
    ("--num-layers 15 --decoder-first-pipeline-num-layers 3 --account-for-loss-in-pipeline-split",
     "cannot be set at the same time with account_for_embedding_in_pipeline_split"),
    ("--num-layers 16 --account-for-embedding-in-pipeline-split",
     "number of layers should be divisible by the pipeline-model-parallel size"),
    ("--num-layers 14 --virtual-pipeline-model-parallel-size 3 --account-for-embedding-in-pipeline-split "
     "--account-for-loss-in-pipeline-split", "should be divisible by vp_size"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et|t|t|L' --virtual-pipeline-model-parallel-size 1",
     "no more than one of them can be set"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et|t|tL' ", "must be divisible by pipeline_model_parallel_size"),
    ("--num-layers 4 --pipeline-model-parallel-layout 'Et|t|t|L'", "must match num_layers"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'tE|t|t|L'", "the first layer must be embedding"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et|t|t|x,L'", "invalid layer character"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et|t|t|mL'", "mtp layers in layout must match"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et|t|t|L' --account-for-loss-in-pipeline-split",
     "cannot be set with other pipeline layout arguments"),
    # a repeat that would fill the memory is refused before it is made (it used to raise an
    # OverflowError from str * int, or hang building the string)
    ("--num-layers 3 --pipeline-model-parallel-layout 'Et*99999999999999999999|t|t|L'", "expands past 1,000,000"),
    ("--num-layers 3 --pipeline-model-parallel-layout 'E(t|)*600000t|t|L'", "expands past 1,000,000"),
])
def test_uneven_splits_megatron_refuses(extra, reason):
    with pytest.raises(InvalidConfigurationError, match=reason):
        parse(SMALL + " --pipeline-model-parallel-size 4 " + extra, 4)


def test_the_stage_with_more_layers_paces_the_pipeline(tmp_path):
    """16 layers on 4 stages as 1, 4, 4, 7 (per-layer compute u a micro-batch, the embedding
    and loss small): the last stage, the slowest, runs its m forward-backward pairs back to
    back after the first micro-batch reaches it and before the last one's backward leaves, so
    a 1F1B step is sum(stages)(u) + (m - 1) 7u plus the last stage's optimizer, against
    (m + p - 1) 4u evenly."""
    m = 8
    uneven = PIPE + " --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 7"
    fwd, bwd = _stage_times(PIPE, 4)  # a chunk of 4 layers
    u = (fwd + bwd) / 4
    assert parse(uneven, 4).chunk_layers(3, 0) == range(9, 16)
    step = _run(tmp_path, uneven, 4) / 1e9
    assert step == pytest.approx((16 + (m - 1) * 7) * u + _optimizer_s(4, 7, 2048), rel=0.03)
    assert step > 1.4 * ((m + 3) * 4 * u)


DP = ("--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --seq-length 1024 --micro-batch-size 2 "
      "--global-batch-size 4 --fp16 --vocab-size 128")


def _all_reduce_s(cluster: dict, size_bytes: float) -> float:
    """Two GPUs on NVSwitch, halving-doubling: a reduce-scatter step and an all-gather step,
    each size/2 bytes one way over one switch (two hops of latency, plus the endpoint delay),
    at the share of NVLink the preset's NCCL ring sustains (``nccl_ring_efficiency``)."""
    c = load_cluster({"preset": "dgx-a100-80gb", "gpus": 2, **cluster}, "c")
    bw = c.node["nvlink_gib_s"] * 2**30 * c.node["nccl_ring_efficiency"]
    return 2 * (size_bytes / 2 / bw + 2 * c.node["nvlink_latency_ns"] * 1e-9 + 10e-9)


def test_grad_reduce_in_bf16_halves_the_exposed_sync(tmp_path):
    """bf16 on two data-parallel GPUs, ``--DDP-impl local`` (the all-reduce after the backward,
    exposed): the step grows by an all-reduce of the fp32 gradient buffer (4 B a parameter), and
    by one of half the bytes with ``--grad-reduce-in-bf16``; fp16 reduces its fp16 gradients,
    fp32 ones with ``--accumulate-allreduce-grads-in-fp32`` (2021's local DDP buffer type)."""
    base = DP.replace("--fp16", "--bf16") + " --DDP-impl local"
    params = parse(base, 2).parameters()
    instant = {"nvlink_gib_s": 1e9, "nvlink_latency_ns": 1e-6}
    fp16 = DP + " --DDP-impl local"
    for args, grad_bytes in ((base, 4), (base + " --grad-reduce-in-bf16", 2), (fp16, 2),
                             (fp16 + " --accumulate-allreduce-grads-in-fp32", 4)):
        grown = _run(tmp_path, args, 2) - _run(tmp_path, args, 2, instant)
        assert grown / 1e9 == pytest.approx(_all_reduce_s({}, params * grad_bytes), rel=0.05), args


@pytest.mark.parametrize("slow", [False, True])
def test_overlapped_gradient_sync(tmp_path, slow):
    """Two data-parallel GPUs. ``--DDP-impl local`` all-reduces every gradient after the
    backward: the step grows by one all-reduce of all of them. ``torch`` starts each 25 MB
    bucket as its gradients are ready: on NVLink all but the last bucket hides behind the
    backward; on a link 200x slower it cannot hide and the step grows by nearly the whole sync."""
    cluster = {"nvlink_gib_s": 1.0} if slow else {}
    job = parse(DP + " --DDP-impl local", 2)
    grads = job.parameters() * 2  # fp16 gradients
    sync = _all_reduce_s(cluster, grads)
    instant = {"nvlink_gib_s": 1e9, "nvlink_latency_ns": 1e-6}  # the same step with a free sync
    alone = _run(tmp_path, DP + " --DDP-impl local", 2, instant)
    local = _run(tmp_path, DP + " --DDP-impl local", 2, cluster)
    torch = _run(tmp_path, DP + " --DDP-impl torch", 2, cluster)
    assert (local - alone) / 1e9 == pytest.approx(sync, rel=0.05)
    _, backward = _stage_times(DP + " --DDP-impl torch", 2)
    if not slow:
        assert (torch - alone) / 1e9 < 0.25 * sync
    else:
        assert (torch - alone) / 1e9 > sync - backward
        assert torch < local


# ---------------------------------------------------------------------------------- presets
def test_cluster_preset_builds_the_network_and_refuses_bad_values():
    c = load_cluster({"preset": "dgx-a100-80gb", "gpus": 1536, "inter_node_gbps": 1600}, "s.yaml: cluster")
    net = c.network_mapping([8, 1, 1, 24, 8])  # tp, cp, ep, dp, pp
    assert net["npus_count"] == [8, 24, 8]
    assert c.network_mapping([4, 1, 1, 4, 96])["npus_count"] == [4, 2, 2, 96]  # dp straddles the node
    # one 200 Gb/s NIC per GPU, 94% of it sustained, in GiB/s
    assert net["bandwidth"][1] == pytest.approx(1600 / 8 / 8 * 1e9 * 0.94 / 2**30, rel=1e-6)
    assert c.network_mapping()["npus_count"] == [8, 192]
    with pytest.raises(InputError, match=r"cluster.inter_node_gbps: must be between"):
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbps": -1}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"cluster.preset: 'dgx-b300' is not a preset"):
        load_cluster({"preset": "dgx-b300", "gpus": 16}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"do not fill whole nodes"):
        load_cluster({"preset": "dgx-h100", "gpus": 12}, "s.yaml: cluster")


# ---------------------------------------------------------------------------------- the table
def _benchmark(name: str):
    """A script of ``benchmarks/`` as a module (the folder is not a package)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _table_rows():
    return _benchmark("megatron_sc21").read_table(TABLE)


@pytest.mark.skipif(not os.path.exists(TABLE), reason="../shared/realtables is not beside the checkout")
def test_sc21_table_rows_that_run_in_seconds(tmp_path):
    """Megatron-LM's published SC'21 table (rows 1-7, the three largest are in the benchmark):
    each row within 20% of the published seconds per iteration, mean |error| within 10%."""
    rows = _table_rows()[:7]
    errors = []
    for row in rows:
        t = _run(tmp_path, row["args"], row["gpus"], {"inter_node_gbps": 1600}) / 1e9
        errors.append(t / row["seconds"] - 1)
    assert max(abs(e) for e in errors) <= 0.20, errors
    assert sum(abs(e) for e in errors) / len(errors) <= 0.10, errors
    assert math.isfinite(sum(errors))


# ---------------------------------------------------------------------------------- experts
MOE = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
       "--tensor-model-parallel-size 2 --bf16 --vocab-size 128 --swiglu --ffn-hidden-size 2816 "
       "--disable-bias-linear --sequence-parallel")  # Megatron-Core refuses biases in experts split over tp
# (etp 2 here), and MoE at tp > 1 without sequence parallelism (MoELayer.forward)


def test_one_expert_top1_is_the_dense_model_plus_its_router():
    """With one expert and top-1 routing every token goes through one MLP of the dense width:
    the FLOPs are the dense model's plus the router's 2 h E per token and pass."""
    dense = parse(MOE, 8)
    moe = parse(MOE + " --num-experts 1 --moe-router-topk 1 --moe-router-pre-softmax", 8)
    tokens = dense.global_batch * dense.seq
    assert moe.model_flops() - dense.model_flops() == pytest.approx(tokens * 4 * 3 * 2 * 1024 * 1)
    assert moe.parameters() - dense.parameters() == 4 * 1024  # the routers' weights


def test_experts_split_over_consecutive_data_parallel_ranks():
    from simpy_astra.workloads.megatron.rank_layout import Layout

    job = parse(MOE + " --num-experts 4 --expert-model-parallel-size 2", 8)  # tp2 x dp4, rank = t + 2 d
    layout = Layout.build(job)
    ep = sorted(members for gid, members in layout.groups.items() if layout.group_of[("ep", members[0])] == gid)
    assert ep == [[0, 2], [1, 3], [4, 6], [5, 7]]  # d = e + 2 o: e varies within a group
    assert layout.groups[layout.group_of[("edp", 0)]] == [0, 4]  # same experts: o varies
    assert Layout.blocks(job) == [2, 1, 2, 2, 1]
    with pytest.raises(InputError, match="--num-experts 3 is not a multiple of --expert-model-parallel-size 2"):
        parse(MOE + " --num-experts 3 --expert-model-parallel-size 2", 8)


def test_a_mixture_of_experts_step_runs_and_costs_more_than_its_active_dense_model(tmp_path):
    """Top-2 of 4 experts of the dense width: twice the MLP work per token, plus the
    all-to-alls; more than the dense step, less than twice it."""
    dense = _run(tmp_path, MOE, 8)
    moe = _run(tmp_path, MOE + " --num-experts 4 --expert-model-parallel-size 2 --moe-router-topk 2", 8)
    assert dense < moe < 2 * dense


def test_the_last_chunk_adds_the_logit_layers_three_gemms():
    """The logit layer runs forward (T x V/tp by h), and in the backward its input gradient and
    its weight gradient: three GEMMs more in the last chunk than in a middle one (the paper's
    3 x 2 h V FLOPs per token)."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    job = parse(PIPE, 4)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    model = ChunkModel(job, gpu)
    dense = job.chunk_kinds(0, 0)

    def gemm_s(last: bool) -> float:
        steps = model.forward(dense, False, last) + model.backward(dense, False, last)
        return sum(s.seconds.get("gemm", 0.0) for s in steps if isinstance(s, Compute))

    t, v, h = job.micro_batch * job.seq, job.vocab, job.hidden
    logits = gemm_seconds(gpu, t, v, h) + gemm_seconds(gpu, t, h, v) + gemm_seconds(gpu, h, v, t)
    assert gemm_s(True) - gemm_s(False) == pytest.approx(logits, rel=1e-9)


# ---------------------------------------------------------------------------------- streams
#: 2 x 2 NPUs; groups 1, 2 along dimension 0, groups 3, 4 along dimension 1
GRID = {"topology": ["Ring", "Ring"], "npus_count": [2, 2], "bandwidth": [50.0, 50.0], "latency": [500.0, 500.0]}
GROUPS = {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}


def _two_all_reduces(rank: int, streams: tuple, across: bool) -> list:
    """A 1 MiB all-reduce on the rank's dimension-0 group, then one on its dimension-1 group
    (``across``) or on the dimension-0 group again; ``streams`` name their comm_stream."""
    from simpy_astra.workloads.chakra import make_node

    groups = [1 + rank // 2, 3 + rank % 2 if across else 1 + rank // 2]
    nodes = []
    for i, (stream, group) in enumerate(zip(streams, groups, strict=False)):
        attrs = {"comm_type": 0, "comm_size": 1 << 20, "is_cpu_op": 0, "pg_name": str(group)}
        if stream:
            attrs["comm_stream"] = stream
        nodes.append(make_node(i, f"ar{i}", 7, attrs=attrs))
    return nodes


def test_collectives_on_two_streams_run_side_by_side(tmp_path):
    """One 1 MiB all-reduce on a dimension-0 pair takes t1. Two, with the presets' system
    (8 collectives at once per dimension queue): on ASTRA-sim's one communication slot (no
    comm_stream) they run one after the other, 2 t1; on two streams at once, t1; on one stream
    in turn, 2 t1. ASTRA-sim's own setting (one at a time per queue) runs them in turn."""
    from simpy_astra.config.cluster import STREAMS_AT_ONCE
    from tests.sim_helpers import run

    def finish(streams: tuple, across: bool, at_once: int = STREAMS_AT_ONCE) -> int:
        folder = tmp_path / f"{streams}{across}{at_once}".replace("'", "").replace(" ", "")
        folder.mkdir()
        ranks = [_two_all_reduces(r, streams, across) for r in range(4)]
        system = {"active-chunks-per-dimension": at_once}
        return max(r.finished_cycles for r in run(folder, ranks, GRID, system, groups=GROUPS).values())

    one = finish((None,), False)
    assert finish((None, None), True) == 2 * one
    assert finish(("tp", "dp"), True) == one
    assert finish(("tp", "dp"), False) == one
    assert finish(("tp", "tp"), True) == 2 * one
    assert finish(("tp", "dp"), True, at_once=1) == 2 * one


def test_compute_beside_a_collective_runs_on_the_sms_left_to_it(tmp_path):
    """Two tensor-parallel GPUs on a free network: with --tp-comm-overlap every compute step
    after the first of a layer runs beside a collective, on 108 - 16 of the A100's 108 SMs;
    without it nothing runs beside compute. The GEMM-only share of the difference is bounded
    by 108/92 - 1 of the step."""
    from simpy_astra.workloads.megatron.kernels import COMM_SMS, sharing_sms

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 2}, "c").gpu_model()
    assert sharing_sms(gpu, 1.0) == pytest.approx(108 / (108 - COMM_SMS))
    free = {"nvlink_gib_s": 1e9, "nvlink_latency_ns": 1e-6}
    base = DP.replace("--vocab-size 128", "--vocab-size 128 --tensor-model-parallel-size 2 --sequence-parallel")
    plain = _run(tmp_path, base + " --no-async-tensor-model-parallel-allreduce", 2, free)
    overlapped = _run(tmp_path, base + " --tp-comm-overlap", 2, free)
    assert plain < overlapped < plain * 108 / (108 - COMM_SMS)


def test_an_async_collective_holds_sms_only_while_it_runs(tmp_path):
    """Megatron's column-parallel backward launches the input gradient's all-reduce, runs the
    weight-gradient GEMM beside it and then waits for it (``handle.wait()``,
    megatron/core/tensor_parallel/layers.py): NCCL's kernels hold 16 SMs while the all-reduce
    runs, so the GEMM runs on 92 of the A100's 108 for that window and on all of them after
    it, and the layer norm and attention backward after the wait have every SM. Two tp GPUs
    whose NVLink moves 100 GiB/s: the ring all-reduce of the 2 x 1,024 x 4,096 fp16 input
    gradient sends 2 (tp - 1)/tp of its bytes, a window w = 16.8 MB / 107.4 GB/s = 156 us
    (shorter than either GEMM), so each wgrad GEMM of time g takes g + w 16/108 (by hand); the
    async run is slower than the blocking one by those extras x 2 GEMMs x 4 layers x 2
    micro-batches, less the 16 backward all-reduces the blocking run waits for (each one's
    time ``c`` read from the trace: the network's, not what is tested here)."""
    import csv

    from simpy_astra.workloads.megatron.kernels import COMM_SMS
    from simpy_astra.workloads.megatron.layers import ChunkModel
    from simpy_astra.workloads.megatron.steps import Wait

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 2}, "c").gpu_model()
    nvlink = {"nvlink_gib_s": 100, "nvlink_latency_ns": 1e-6}
    base = DP + " --tensor-model-parallel-size 2 --transformer-impl local"
    blocking = _run(tmp_path, base + " --no-async-tensor-model-parallel-allreduce", 2, nvlink)
    async_ = _run(tmp_path, base, 2, nvlink)
    tokens, h = 2 * 1024, 4096
    window = 2 * (tokens * h * 2) * (2 - 1) / 2 / (100 * 2**30)
    qkv, fc1 = gemm_seconds(gpu, h, 3 * h // 2, tokens), gemm_seconds(gpu, h, 4 * h // 2, tokens)
    assert window * (108 - COMM_SMS) / 108 < min(qkv, fc1)
    extra = window * COMM_SMS / 108  # each GEMM's

    scenario = tmp_path / "s.yaml"  # _run's scenario, the async one; its trace as csv
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--csv-out", str(tmp_path / "csv"),
                    "--quiet"], check=True, capture_output=True, env=env, cwd=ROOT)
    with open(tmp_path / "csv" / "nodes.csv") as f:
        nodes = [r for r in csv.DictReader(f) if r["npu"] == "0" and r["name"].startswith("B")]
    beside = {r["name"].split(".", 3)[3]: int(r["duration_ns"]) for r in nodes if r["name"].endswith(".wait.before")}
    assert beside == {"mlp.bwd.allreduce.wait.before": round((fc1 + extra) * 1e6) * 1000,
                      "attn.bwd.allreduce.wait.before": round((qkv + extra) * 1e6) * 1000}
    c = next(int(r["duration_ns"]) for r in nodes if r["name"].endswith("mlp.bwd.allreduce"))
    assert async_ - blocking == pytest.approx(2 * 4 * 2 * extra * 1e9 - 16 * c, rel=0.01)
    job = parse(base, 2)
    backward = ChunkModel(job, gpu).backward(job.chunk_kinds(0, 0)[:1], False, False)
    i = next(k for k, s in enumerate(backward) if isinstance(s, Collective) and s.label == "mlp.bwd.allreduce")
    assert backward[i].overlap and isinstance(backward[i + 2], Wait)


def test_compute_beside_a_collective_shares_the_sms_for_the_collectives_window():
    """NCCL's kernels hold 16 of the A100's 108 SMs while a collective runs. Compute of g
    seconds (alone) that starts beside a collective of w seconds runs at 92/108 of its rate
    for the window and at full rate after: g + 16 w / 108 when it outlasts the window, else
    all of it on 92 SMs (g 108/92), by hand. A step beside a data-parallel collective (a
    bucket across nodes, longer than the compute beside it) or beside Transformer Engine's
    overlap (its GEMMs launched on fewer SMs throughout) pays for its whole length."""
    from simpy_astra.workloads.megatron.kernels import beside_seconds
    from simpy_astra.workloads.megatron.schedule import StageSchedule

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    assert beside_seconds(gpu, 1e-3, 1e-4) == pytest.approx(1e-3 + 16e-4 / 108)
    assert beside_seconds(gpu, 1e-4, 1e-3) == pytest.approx(1e-4 * 108 / 92)
    assert beside_seconds(gpu, 92e-6, 108e-6) == pytest.approx(108e-6)  # the two meet
    rate = 200.0  # 10^9 B/s
    size = 2 * 1024 * 4096 * 2
    for kind, moved in ((ALL_REDUCE, 2 * size * 7 / 8), (REDUCE_SCATTER, size * 7 / 8), (ALL_GATHER, size * 7)):
        schedule = StageSchedule(parse(DP + " --tensor-model-parallel-size 8", 8), gpu, 0, rate)
        schedule.beside = [schedule.collective("c", kind, "tp", size, block=False)]
        schedule.compute("g", {"gemm": 2e-3})
        window = moved / (rate * 1e9)
        assert schedule.g.ops[-1].duration_us == round((2e-3 + window * 16 / 108) * 1e6), kind
    te_overlap = (DP.replace(" --fp16", " --bf16") + " --tensor-model-parallel-size 8 --sequence-parallel "
                  "--tp-comm-overlap")
    for dim, args in (("dp", DP + " --tensor-model-parallel-size 8"), ("tp", te_overlap)):
        schedule = StageSchedule(parse(args, 8), gpu, 0, rate)
        schedule.beside = [schedule.collective("c", ALL_REDUCE, dim, size, block=False)]
        schedule.compute("g", {"gemm": 2e-3})
        assert schedule.g.ops[-1].duration_us == round(2e-3 * 108 / 92 * 1e6), dim


# ---------------------------------------------------------------------------------- issue 48
def test_todays_argument_names_imply_transformer_engine_and_2021_names_do_not():
    base = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1"
    today = parse(base + " --bf16", 1)
    assert today.transformer_engine and today.flash_attention and not today.legacy
    local = parse(base + " --bf16 --transformer-impl local", 1)
    assert not local.transformer_engine and not local.flash_attention
    for old in (" --checkpoint-activations", " --DDP-impl torch"):
        job = parse(base + " --fp16" + old, 1)
        assert job.legacy and not job.transformer_engine and not job.flash_attention
    assert parse(base + " --checkpoint-activations --use-flash-attn", 1).flash_attention


def test_the_2021_to_2022_recomputation_names_are_todays_full_recomputation():
    """Megatron-LM from 2021-08 to 2022-05 (the SC'21 scripts in today's repository use it)
    named full recomputation ``--activations-checkpoint-method uniform|block`` with
    ``--activations-checkpoint-num-layers`` (default 1), and read ``--checkpoint-activations``
    as the uniform method; each is today's ``--recompute-granularity full`` with that method
    and count, with the kernels of its era (no Transformer Engine)."""
    base = "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1 --fp16 "
    fields = ("recompute", "recompute_method", "recompute_layers")
    for old, new in [("--activations-checkpoint-method block --activations-checkpoint-num-layers 2",
                      "--recompute-granularity full --recompute-method block --recompute-num-layers 2"),
                     ("--activations-checkpoint-method uniform",
                      "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"),
                     ("--checkpoint-activations", "--recompute-granularity full --recompute-method uniform "
                                                  "--recompute-num-layers 1")]:
        then, today = parse(base + old, 1), parse(base + new + " --transformer-impl local", 1)
        assert [getattr(then, f) for f in fields] == [getattr(today, f) for f in fields]
        assert then.legacy and not then.transformer_engine
    assert parse(base + "--activations-checkpoint-method block", 1).recompute_layers == 1


def test_causal_fused_attention_kernel_time():
    """s = 256, head width 64 on the two-SM toy GPU (1 TFLOP/s, attention at 25% of it): two
    CTAs of 128 query rows, one each SM, one wave; each loops over the 256 keys, its products
    2 x 128 x 256 x 64 FLOPs each at 0.125 TFLOP/s an SM. With 128-row tiles the causal kernel
    runs the 3 of 4 tiles on or below the diagonal (1/2 + 128 / 2s = 3/4): the forward is two
    products (QK^T, PV), the backward five, each at 3/4. Each CTA also spends two tiles of
    keys (256) outside its loop: the query and first key/value tiles loaded before its first
    product, the output tile written after its last. The score matrix never reaches HBM:
    at 1 GB/s of HBM the floor is Q, K, V and O read and written once."""
    from simpy_astra.workloads.megatron.kernels import causal_fraction, flash_attention_seconds

    per_sm = 1e12 * 0.25 / 2
    one = 2 * 128 * 256 * 64 / per_sm  # one product of a CTA over 256 keys
    edges = 2 * 128 * 256 * 64 / per_sm  # a product's worth over the two tiles (256 keys) outside the loop
    assert causal_fraction(256) == 0.75
    assert causal_fraction(131072) == pytest.approx(0.5 + 128 / 262144)
    fwd = flash_attention_seconds(TOY, 1, 256, 256, 64, causal=True, backward=False)
    bwd = flash_attention_seconds(TOY, 1, 256, 256, 64, causal=True, backward=True)
    assert fwd == pytest.approx(2 * (one * 0.75 + edges) + 2e-6, rel=1e-12)
    assert bwd == pytest.approx(5 * (one * 0.75 + edges) + 2e-6, rel=1e-12)
    full = flash_attention_seconds(TOY, 1, 256, 256, 64, causal=False, backward=False)
    assert full == pytest.approx(2 * (one + edges) + 2e-6, rel=1e-12)
    # 3 CTAs on 2 SMs: two waves, each CTA over 384 keys and the 256 outside its loop
    three = flash_attention_seconds(TOY, 1, 384, 384, 64, causal=False, backward=False)
    assert three == pytest.approx(2 * 2 * (2 * 128 * (384 + 256) * 64 / per_sm) + 2e-6, rel=1e-12)
    slow = Gpu(**{**TOY.__dict__, "hbm_gb_s": 1.0})
    qkvo = 64 * 2 * (2 * 256 + 2 * 256)  # bytes: Q and O of 256 rows, K and V of 256 keys
    assert flash_attention_seconds(slow, 1, 256, 256, 64, causal=True, backward=False) == pytest.approx(
        qkvo / (1.0 * 1e9 * 0.5) + 2e-6, rel=1e-12)


def test_fp8_linear_gemm_runs_at_the_fp8_rate_on_one_byte_operands():
    """The same GEMM as test_one_gemm_time_from_the_formula on a toy GPU with twice the
    tensor rate in fp8: half the main loop's time; at an fp8 efficiency of 0.4 instead of the
    toy's 0.5, 5/4 of that (and the bf16 GEMM unchanged)."""
    toy8 = Gpu(**{**TOY.__dict__, "fp8_tflops": 2.0})
    per_sm = 2e12 * 0.5 / 2
    expected = 2 * 256 * 128 * (1024 + GEMM_PIPELINE_K) / per_sm + 2e-6
    assert gemm_seconds(toy8, 256, 256, 1024, element_bytes=1, fp8=True) == pytest.approx(expected, rel=1e-12)
    lossy = Gpu(**{**toy8.__dict__, "fp8_efficiency": 0.4})
    assert gemm_seconds(lossy, 256, 256, 1024, element_bytes=1, fp8=True) == pytest.approx(
        (expected - 2e-6) * 0.5 / 0.4 + 2e-6, rel=1e-12)
    assert gemm_seconds(lossy, 256, 256, 1024) == gemm_seconds(toy8, 256, 256, 1024)


FP8 = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 2 "
       "--bf16 --fp8-format hybrid --vocab-size 128")


def _layer_steps(args: str, backward: bool, gpu: Gpu = TOY, gpus: int = 1) -> list:
    """The steps of one dense layer's forward (or backward), not first nor last in the model."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    job = parse(args, gpus)
    model, layer = ChunkModel(job, gpu), job.chunk_kinds(0, 0)[:1]
    return model.backward(layer, False, False) if backward else model.forward(layer, False, False)


def _streaming_s(steps: list) -> float:
    return sum(s.seconds.get("elementwise", 0.0) for s in steps if isinstance(s, Compute))


def _elementwise_s(args: str, backward: bool, gpus: int = 1) -> float:
    """One layer's elementwise kernel time, forward or backward, on the toy GPU with fp8."""
    return _streaming_s(_layer_steps(args, backward, Gpu(**{**TOY.__dict__, "fp8_tflops": 2.0}), gpus))


def test_fp8_current_scaling_reads_each_cast_tensor_once_more_for_its_amax():
    """T = 2 x 512 tokens, h = 1024, 4h MLP, tp 1: a layer's fp8 GEMMs read five inputs forward
    (QKV's T x h after the layer norm, the projection's T x h, fc1's T x h after the layer norm,
    fc2's T x 4h after GeLU) and four output gradients backward (T x h, 3 T x h, T x h, 4 T x h).
    Delayed scaling: the unfused casts move 4 B an element, the three fused ones nothing.
    Current scaling (--fp8-recipe tensorwise): an unfused cast reads its tensor once more for
    the amax (6 B), a fused one becomes a cast kernel of its own (4 B, one more launch)."""
    th = 2 * 512 * 1024
    rate = 1e6 * 1e9 * 0.5  # the toy GPU's HBM x memory efficiency, B/s
    current = FP8 + " --fp8-recipe tensorwise"
    fwd = _elementwise_s(current, False) - _elementwise_s(FP8, False)
    assert fwd == pytest.approx((2 * th + 4 * (th + th + 4 * th)) / rate + 3 * 2e-6, rel=1e-9)
    bwd = _elementwise_s(current, True) - _elementwise_s(FP8, True)
    assert bwd == pytest.approx(2 * (th + 3 * th + th + 4 * th) / rate, rel=1e-9)
    assert _elementwise_s(FP8 + " --fp8-recipe delayed", True) == _elementwise_s(FP8, True)
    # tp 2 with sequence parallelism: the layer norms (and the casts fused into them) run on
    # each rank's T/2 tokens before the all-gather; the projection's input is T x h/2 and
    # fc2's T x 2h
    sp = FP8 + " --tensor-model-parallel-size 2 --sequence-parallel"
    fwd = _elementwise_s(sp + " --fp8-recipe tensorwise", False, 2) - _elementwise_s(sp, False, 2)
    assert fwd == pytest.approx((2 * th / 2 + 4 * (th / 2 + th / 2 + 2 * th)) / rate + 3 * 2e-6, rel=1e-9)
    with pytest.raises(InputError, match=r"--fp8-recipe mxfp8: only delayed and tensorwise"):
        parse(FP8 + " --fp8-recipe mxfp8", 1)


ZERO = ("--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --seq-length 1024 --micro-batch-size 2 "
        "--global-batch-size 4 --bf16 --vocab-size 128 --use-distributed-optimizer")


@pytest.mark.parametrize("slow", [False, True])
def test_parameter_gather_bucket_by_bucket_ahead_of_the_forward(tmp_path, slow):
    """Two data-parallel GPUs, distributed optimizer. Without --overlap-param-gather the bf16
    parameters are all-gathered after the optimizer step: the step grows by the whole gather.
    With it each bucket (one layer here) is gathered ahead of the forward that reads it: on
    NVLink only the first bucket shows; on a link 200x slower the forward waits for every
    bucket in turn and the step grows by nearly the whole gather less one forward."""
    cluster = {"nvlink_gib_s": 1.0} if slow else {}
    job = parse(ZERO, 2)
    gather = _all_reduce_s(cluster, job.parameters() * 2) / 2  # all-gather: half an all-reduce
    instant = {"nvlink_gib_s": 1e9, "nvlink_latency_ns": 1e-6}
    alone = _run(tmp_path, ZERO, 2, instant)
    # Megatron allows --overlap-param-gather only with --overlap-grad-reduce: both runs overlap
    # the gradients, so they differ in the gather alone
    after = _run(tmp_path, ZERO + " --overlap-grad-reduce", 2, cluster)
    ahead = _run(tmp_path, ZERO + " --overlap-grad-reduce --overlap-param-gather", 2, cluster)
    fwd, _ = _stage_times(ZERO, 2)
    assert ahead < after
    if not slow:
        assert (ahead - alone) / 1e9 < (after - alone) / 1e9 - 0.5 * gather
    else:
        assert (ahead - alone) / 1e9 > gather - 2 * fwd


def test_parameter_gathers_run_one_bucket_ahead_of_the_forward(tmp_path):
    """Megatron-Core's distributed optimizer launches the first bucket's all-gather when the
    step starts and each next one only when the forward reaches the bucket before it (the
    pre-hook waits, then dispatches: one gather in flight). Two data-parallel GPUs, one bucket
    per layer (filled in the backward's order, so the embedding, read first, has one of its
    own), NVLink (each gather far shorter than a layer's forward): gather k starts with the
    forward compute that reads bucket k - 1, not when gather k - 1 ends."""
    import csv

    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": ZERO + " --overlap-grad-reduce "
                                                 "--overlap-param-gather"},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--csv-out", str(tmp_path / "csv"),
                    "--quiet"], check=True, capture_output=True, env=env, cwd=ROOT)
    with open(tmp_path / "csv" / "nodes.csv") as f:
        nodes = [r for r in csv.DictReader(f) if r["npu"] == "0"]
    gathers = [r for r in nodes if r["name"].endswith(".params.allgather")]
    forward = [r for r in nodes if r["name"].startswith("F0.") and r["type"] == "COMP"]
    forward = [r for r in forward if not r["name"].endswith(".host")]  # the host's chain (host_time)
    assert len(gathers) == 5 and int(gathers[0]["start_ns"]) == 0  # the embedding's bucket, then a layer's each
    # the forward opens with the micro-batch's batch fetch (batch_fetch: its tokens copied up):
    # the first layer's gather goes as it ends, at the latest when the embedding's compute starts
    fetch, forward = forward[0], forward[1:]
    # Megatron-Core dispatches it from the embedding's forward pre-hook, on the host after
    # get_batch's launches (finish_param_sync): as the host's chain reaches it, past the fetch
    host = [r for r in nodes if r["name"].startswith("F0.") and r["name"].endswith(".host")]
    assert int(fetch["end_ns"]) < int(gathers[1]["start_ns"]) <= int(forward[0]["start_ns"])
    assert int(gathers[1]["start_ns"]) in {int(r["end_ns"]) for r in host}
    for k in range(2, 5):
        assert int(gathers[k]["start_ns"]) == int(forward[k - 1]["start_ns"])
        assert int(gathers[k]["start_ns"]) >= int(gathers[k - 1]["end_ns"])
    assert int(gathers[3]["start_ns"]) > int(gathers[2]["end_ns"])  # not back to back


def test_later_pipeline_stages_sync_their_gradients_in_one_bucket():
    """Megatron-Core turns bucketing off on pipeline stages after the first
    (``DistributedDataParallel``: ``pp_rank > 0``): there the whole stage's fp32 gradients
    are reduce-scattered in one call after its last backward and its bf16 parameters
    gathered in one call; the first stage keeps a bucket per layer (each layer here is over
    40M parameters; the model counts a layer's biases and norms as 4h)."""
    from simpy_astra.workloads.megatron.schedule import build_stage
    from simpy_astra.workloads.transformer.graph import COLL

    args = ("--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 8 --pipeline-model-parallel-size 2 --bf16 --vocab-size 128 --ffn-hidden-size 16384 "
            "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather")
    job = parse(args, 4)
    h, f = 2048, 16384
    layer = 4 * h * h + 2 * h * f  # the attention's and the MLP's weights
    assert layer > 40_000_000

    def dp_ops(stage: int) -> tuple[list[int], list[int]]:
        g = build_stage(job, TOY, stage)
        colls = [op for op in g.ops if op.kind == COLL and op.dim == "dp"]
        return ([op.comm_size for op in colls if op.name.endswith(".sync")],
                [op.comm_size for op in colls if op.name.endswith(".params.allgather")])

    syncs, gathers = dp_ops(1)
    assert len(syncs) == 1 and len(gathers) == 1
    # two layers, the final norm and the last stage's copy of the (tied) word embedding, 128 x h
    assert gathers[0] == pytest.approx(2 * layer + 2 * h + 128 * h, rel=1e-3)  # bf16, one of 2 shards: 1 B a parameter
    assert syncs[0] == 4 * gathers[0]  # fp32 gradients of the same parameters
    first_syncs, _ = dp_ops(0)  # the first stage: a bucket per layer, then the embedding's
    assert first_syncs == [4 * layer + 4 * 4 * h] * 2 + [4 * h * (128 + 1024)]


def test_fp8_param_gather_gathers_and_keeps_linear_weights_in_one_byte():
    """``--fp8-param-gather`` (Megatron-Core's ``fp8_param``): Transformer Engine's linear
    weights live only as FP8, so the parameter all-gather moves one byte for each of them and
    two for every other weight, and the memory's weights part has no bf16 copy of them. By
    hand, on the last of two stages (one bucket: two layers and the tied embedding's copy,
    over two data-parallel shards): the layers' 4h^2 + 2hf linear weights at 1 B, their 4h norm
    weights, the final norm's 2h and the 128 x h embedding at 2 B; in memory, 2 B less for each
    linear weight."""
    from simpy_astra.workloads.megatron.memory import parts_bytes
    from simpy_astra.workloads.megatron.schedule import build_stage
    from simpy_astra.workloads.transformer.graph import COLL

    args = ("--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 8 --pipeline-model-parallel-size 2 --bf16 --vocab-size 128 --ffn-hidden-size 16384 "
            "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --fp8-format hybrid")
    h, f = 2048, 16384
    linear, other = 2 * (4 * h * h + 2 * h * f), 2 * 4 * h + 2 * h + 128 * h  # the last stage's weights
    gpu = load_cluster({"preset": "dgx-h100", "gpus": 4}, "c").gpu_model()
    after_step = args.replace(" --overlap-grad-reduce --overlap-param-gather", "")  # one gather after the step
    for extra, gathered in (("", 2 * (linear + other)), (" --fp8-param-gather", linear + 2 * other)):
        for given in (args, after_step):
            ops = [op for op in build_stage(parse(given + extra, 4), gpu, 1).ops
                   if op.kind == COLL and "params" in op.name and op.name.endswith("allgather")]
            assert [op.comm_size for op in ops] == [pytest.approx(gathered / 2, rel=1e-6)], (given, extra)
    plain, kept = (parts_bytes(parse(args + extra, 4), 1) for extra in ("", " --fp8-param-gather"))
    assert plain["weights"] - kept["weights"] == pytest.approx(2 * linear, rel=1e-6)
    assert kept["fp8_buffers"] == plain["fp8_buffers"] == pytest.approx(2 * linear, rel=1e-6)  # FP8 weight + transpose
    with pytest.raises(InvalidConfigurationError, match="fp8_param must be used together with fp8 mode"):
        parse(args.replace(" --fp8-format hybrid", "") + " --fp8-param-gather", 4)
    with pytest.raises(InvalidConfigurationError, match="only supported with distributed optimizer"):
        parse(args.replace(" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather", "")
              + " --fp8-param-gather", 4)


def test_a_task_faster_than_the_host_waits_for_the_host():
    """The host issues each kernel in HOST_US_PER_KERNEL (10 us), each collective's NCCL call
    counting as one more: a task of two compute steps (3 and 2 kernels, 1 us of GPU time each)
    around one all-reduce. From its first kernel's enqueue the host enqueues the all-reduce at
    30 us, the second step's first kernel at 40 and is done at 50: the schedule's host nodes
    end there (30, 10 and 10 us), since the GPU's 1 and 2 us of kernels would be there sooner;
    a task whose kernels outlast the host has none."""
    from simpy_astra.workloads.megatron.schedule import StageSchedule

    steps = [Compute("a", {"gemm": 1e-6}, 3), Collective("ar", 0, 1024), Compute("b", {"gemm": 1e-6}, 2)]
    schedule = StageSchedule(parse(DP + " --tensor-model-parallel-size 2", 2), TOY, 0)
    schedule.steps("t", steps, sync_grads=False)
    assert [(op.name, op.duration_us) for op in schedule.g.ops if op.cpu] == [("t.host", 30), ("t.host", 10),
                                                                             ("t.host", 10)]
    schedule = StageSchedule(parse(DP + " --tensor-model-parallel-size 2", 2), TOY, 0)
    schedule.steps("t", [Compute("a", {"gemm": 1e-3}, 3), Collective("ar", 0, 1024)], sync_grads=False)
    assert not [op for op in schedule.g.ops if op.cpu]


KORTHIKANTI_22B = ("--num-layers 48 --hidden-size 6144 --num-attention-heads 64 --seq-length 2048 "
                   "--max-position-embeddings 2048 --micro-batch-size 4 --global-batch-size 4 "
                   "--tensor-model-parallel-size 8 --fp16 --transformer-impl local")


def test_recomputation_reruns_what_korthikanti_says():
    """Full recomputation reruns each layer's whole forward, its tensor-parallel all-reduces
    included (the 22B layer of Korthikanti et al.'s Table 4: backward 11.9 -> 19.5 ms, the
    forward's 7.7 ms again); selective reruns only the attention core: the score GEMM
    (b a/t GEMMs of s x s x h/a), the fused scale-mask-softmax (4 B an element) and dropout
    (5 B an element) over the b a/t s^2 scores, and the context GEMM; each by hand here."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    full_job = parse(KORTHIKANTI_22B + " --recompute-granularity full --recompute-method uniform "
                     "--recompute-num-layers 1", 8)
    full, layer = ChunkModel(full_job, gpu), full_job.chunk_kinds(0, 0)[:1]
    def kernels(steps: list) -> list:
        return [(getattr(x, "seconds", None), getattr(x, "size_bytes", None)) for x in steps
                if isinstance(x, Compute | Collective)]

    assert kernels(full.recompute(layer)) == kernels(full.forward(layer, False, False))
    sel = ChunkModel(parse(KORTHIKANTI_22B + " --recompute-activations", 8), gpu)
    b, heads, s, d = 4, 64 // 8, 2048, 6144 // 64
    scores = b * heads * s * s
    by_hand = (gemm_seconds(gpu, s, s, d, b * heads) + streaming_seconds(gpu, scores * 4)
               + streaming_seconds(gpu, scores * 5) + gemm_seconds(gpu, s, d, s, b * heads)
               + streaming_seconds(gpu, b * s * heads * d * 4))  # and the context's transpose
    recomputed = sel.recompute(layer)
    assert len(recomputed) == 1 and recomputed[0].total_s == pytest.approx(by_hand)


def test_full_recomputation_reruns_the_layers_and_not_the_embedding():
    """Megatron checkpoints inside the transformer block (Megatron-LM's ``ParallelTransformer
    ._checkpointed_forward`` since 2022-05, Megatron-Core's ``TransformerBlock``): the
    embedding before it runs once a micro-batch. On the first stage at tp 2 its all-reduce
    (the vocabulary-parallel gather summed) is in each forward and in no backward; it was
    rerun before each backward's layers."""
    from simpy_astra.workloads.megatron.schedule import StageSchedule

    job = parse(DP + " --tensor-model-parallel-size 2 --recompute-granularity full "
                "--recompute-method uniform --recompute-num-layers 1", 2)
    stage = StageSchedule(job, TOY, 0)
    stage.build()
    names = [op.name for op in stage.g.ops if op.name.endswith("embedding.allreduce")]
    assert [name.split(".")[0] for name in names] == ["F0", "F1"]  # forwards only, once each


def test_sequence_parallelism_saves_what_korthikanti_measured_a_layer(tmp_path):
    """Korthikanti et al., Table 4 (the 22B layer, tp 8, micro-batch 4): sequence parallelism
    takes a layer from 19.6 to 19.0 ms, forward and backward (0.6 ms: layer norms and dropouts
    on 1/tp of the tokens, against the backward's all-gather of the input again beside its
    input-gradient GEMM). The 48-layer step's difference a layer is within 0.2 ms of it. It was
    0.12 ms while compute beside an async collective paid for the SMs over its whole length
    rather than while the collective ran."""
    plain = _run(tmp_path, KORTHIKANTI_22B, 8)
    sequence = _run(tmp_path, KORTHIKANTI_22B + " --sequence-parallel", 8)
    assert (plain - sequence) / 48 / 1e6 == pytest.approx(0.6, abs=0.2)


def test_full_over_selective_recomputation_is_korthikantis(tmp_path):
    """Korthikanti et al., Table 5: the 22B model on 8 A100s (tp 8, micro-batch 4) takes 1.42 s
    a step with full recomputation and 1.10 s with selective recomputation and sequence
    parallelism, 1.29 times. The ratio here is within 5% of it."""
    full = _run(tmp_path, KORTHIKANTI_22B + " --recompute-granularity full --recompute-method uniform "
                "--recompute-num-layers 1", 8)
    selective = _run(tmp_path, KORTHIKANTI_22B + " --recompute-activations --sequence-parallel", 8)
    assert full / selective == pytest.approx(1.42 / 1.10, rel=0.05)


def test_korthikantis_pipelined_steps_run_interleaved_as_the_paper_ran_them(tmp_path):
    """Korthikanti et al., Section 6: "We use the interleaving schedule with three interleaving
    stages (m = 3) for the 175B and 530B models" (1T's two layers a stage are not interleaved).
    Run without it, the 175B selective step's bubble was (p - 1) = 7 stage passes where the
    paper's is 7/3: 14.42 s against Table 5's 13.75 (+4.8%). Its full step also sent each 50 MB
    activation whole from one GPU's NIC, where the paper's Megatron-LM sent 1/tp from each and
    all-gathered it (19.48 s, then 18.80 interleaved, against 18.13). The benchmark's rows
    carry the three chunks and that release's names, and both 175B steps come within 3%."""
    bench = _benchmark("megatron_one_model")
    chunks, steps = {}, {}
    for name, gpus, model, mbs, gbs, pp, _full, _sel in bench.K_MODELS:
        base = (f"{model} {bench.K_2022} --micro-batch-size {mbs} --global-batch-size {gbs} "
                f"--pipeline-model-parallel-size {pp}")
        chunks[name] = parse(f"{base} {bench.K_SELECTIVE}", gpus).virtual_stages
        if name == "175B":
            for mode in (bench.K_SELECTIVE, bench.K_FULL):
                steps[mode] = _run(tmp_path, f"{base} {mode}", gpus, {"inter_node_gbit_s": 1600}) / 1e9
    assert chunks == {"22B": 1, "175B": 3, "530B": 3, "1T": 1}
    assert steps[bench.K_SELECTIVE] == pytest.approx(13.75, rel=0.03)
    assert steps[bench.K_FULL] == pytest.approx(18.13, rel=0.03)


def test_a_2022_megatron_lm_scatters_its_pipeline_sends_and_overlaps_its_collectives():
    """``--DDP-impl`` beside sequence parallelism's names is a 2022-05 Megatron-LM
    (``d898a8991d``): its layers ran the async all-reduce, 2021's did not, and fused the weight
    gradients into fp32 main gradients only (bf16's, or fp16's with
    ``--accumulate-allreduce-grads-in-fp32``; today's also into fp16 ones), and
    ``p2p_communication._communicate`` split each pipeline tensor without
    sequence parallelism into tp 1-D chunks (``scatter_gather_tensors_in_pipeline``, on by
    default until ``39b83c7953``, 2023-01): each GPU of stage 0 sends s b h / tp = 512 x 2 x
    1024 / 4 elements, 2 B each, and stage 1 all-gathers them over tp after the receive, both
    ways. Today's Megatron-Core sends the whole s b h; with sequence parallelism both send the
    1/tp shard the layers hold, and nothing is gathered."""
    from simpy_astra.workloads.megatron.schedule import StageSchedule
    from simpy_astra.workloads.transformer.graph import COLL, SEND

    base = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 2 "
            "--global-batch-size 8 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --fp16 ")
    full = "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
    then = parse(f"{base} --DDP-impl local {full}", 8)
    old = parse(f"{base} --DDP-impl local --checkpoint-activations", 8)
    today = parse(f"{base} --transformer-impl local {full}", 8)
    assert then.async_tp_allreduce and not then.gradient_accumulation_fusion and not then.transformer_engine
    assert not old.async_tp_allreduce and not old.gradient_accumulation_fusion
    assert today.async_tp_allreduce and today.gradient_accumulation_fusion
    for fp32_grads in ("--fp16 --accumulate-allreduce-grads-in-fp32", "--bf16"):
        job = parse(f"{base.replace('--fp16', '')} {fp32_grads} --DDP-impl local {full}", 8)
        assert job.gradient_accumulation_fusion and job.grad_bytes == 4, fp32_grads
    whole = 512 * 2 * 1024 * 2

    def pipeline(job, stage: int) -> tuple[set, set]:
        ops = StageSchedule(job, TOY, stage).build().ops
        return ({op.comm_size for op in ops if op.kind == SEND},
                {op.comm_size for op in ops if op.kind == COLL and op.name.endswith("allgather")})

    assert pipeline(then, 0) == ({whole // 4}, {whole // 4}) == pipeline(then, 1)
    assert pipeline(old, 0) == pipeline(then, 0)
    assert pipeline(today, 0) == ({whole}, set()) == pipeline(today, 1)
    for names in ("--DDP-impl local", "--transformer-impl local"):
        assert pipeline(parse(f"{base} {names} --recompute-activations --sequence-parallel", 8), 1)[0] == {whole // 4}


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(TABLE), "MCORE_H100.md")),
                    reason="../shared/realtables is not beside the checkout")
def test_megatron_core_h100_table_within_ten_percent(tmp_path, monkeypatch):
    """Megatron-Core's H100 table, all nine rows, run by the benchmark as a user would: the
    mean |error| within 5% and every row within 6% (the preset's bf16 pair was fitted on these
    rows, run with the micro-batch and interleaving the runs show, with the attention fitted
    first on NeMo's long-sequence rows; with the table's arguments as given and the pair
    fitted on them, 6.2% and the 32B row +28.4%, docs/megatron.md)."""
    mcore = _benchmark("megatron_mcore_h100")
    predict = _benchmark("megatron_sc21").predict
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    errors = {}
    for row in mcore.read_table(mcore.DEFAULT_TABLE):
        data, _ = predict(row, str(tmp_path))
        errors[row["model"]] = data["iteration_time_ns"] / 1e9 / row["seconds"] - 1
    assert sum(abs(e) for e in errors.values()) / len(errors) <= 0.05
    assert all(abs(e) < 0.06 for e in errors.values()), errors


def test_long_sequence_rows_price_the_fused_attention_kernel(tmp_path, monkeypatch):
    """NeMo's long-sequence H100 table (Llama 2 7B, FP8): at 128K and 1M tokens attention is
    over 95% of the step, and the H100's attention efficiency was fitted on those rows (each
    within 4%); the 32K row (context parallelism 2, attention about 3/4 of the step) was not,
    and lands within 5%. Priced as before (a GEMM model whose HBM floor counted the score
    matrix) they read +43%, +50% and +29%. The 4K row (held out too) is within 5% with each
    CTA's fill and drain priced (-6.4% without: short rows run few keys a CTA)."""
    table = _benchmark("nemo_long_context")
    predict = _benchmark("megatron_sc21").predict
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    rows = {row["model"]: row for row in table.read_table()}
    for model, bound in (("LLAMA2-7B 128K", 0.04), ("LLAMA2-7B 1024K", 0.04), ("LLAMA2-7B 32K", 0.05),
                         ("LLAMA2-7B 4K", 0.05)):
        data, _ = predict(rows[model], str(tmp_path))
        assert abs(data["iteration_time_ns"] / 1e9 / rows[model]["seconds"] - 1) < bound, model


@pytest.mark.skipif(not os.path.exists(os.path.join(os.path.dirname(TABLE), "MCORE_H100.md")),
                    reason="../shared/realtables is not beside the checkout")
def test_strong_scaling_middle_point_is_the_tables_177b_row():
    """The strong-scaling benchmark's 2,304-GPU point is Megatron-Core's 177B table row: the
    same arguments, and the seconds its formula gives from 432.8 TFLOP/s are the table's 5.259."""
    mcore = _benchmark("megatron_mcore_h100")
    rows = _benchmark("megatron_mcore_strong_scaling").rows
    table = {r["model"]: r for r in mcore.read_table(mcore.DEFAULT_TABLE)}["177B"]
    point = {r["gpus"]: r for r in rows()}[2304]
    assert point["args"] == table["args"]
    assert point["seconds"] == pytest.approx(table["seconds"], abs=0.0005)
    assert "--num-layers-per-virtual-pipeline-stage 4 " in {r["gpus"]: r for r in rows(4)}[96]["args"] + " "
    assert "--num-layers-per-virtual-pipeline-stage" not in {r["gpus"]: r for r in rows(1)}[96]["args"]


def test_strong_scaling_figure_needs_interleaving_the_table_reads():
    """The strong-scaling figure's points (``FIGURE``, read off its pixels, and the text's)
    lose less from 576 micro-batches a pipeline (96 GPUs) to 48 (1,152) and 24 (2,304) than
    1F1B's bubble alone would, ``(m + p - 1) / m`` with p = 6, or two chunks a stage's
    ``1 + (p - 1) / (2 m)``: the runs were interleaved, as ``megatron_mcore_h100`` reads the
    table's pipelined rows (one layer a chunk), and its rows without a pipeline run one
    micro-batch of the replica's 4 sequences (unless ``as_given``)."""
    scaling = _benchmark("megatron_mcore_strong_scaling")
    mcore = _benchmark("megatron_mcore_h100")
    tflops = {**scaling.PUBLISHED, **scaling.FIGURE}
    for gpus in (1152, 2304):
        m, loss = 1152 // (gpus // 48), tflops[96] / tflops[gpus]
        assert loss < ((m + 5) / m) / ((576 + 5) / 576)
        assert loss < (1 + 5 / (2 * m)) / (1 + 5 / (2 * 576))
    args = mcore.row_args(96, 12288, 96, 8, 6, 1152)
    assert "--micro-batch-size 1 " in args and "--num-layers-per-virtual-pipeline-stage 1 " in args
    assert "--micro-batch-size 4 " in mcore.row_args(56, 7168, 48, 8, 1, 192)
    given = mcore.row_args(56, 7168, 48, 8, 1, 192, as_given=True)
    assert "--micro-batch-size 1 " in given and "virtual" not in mcore.row_args(96, 12288, 96, 8, 6, 1152, True)


def test_nemo_a100_gpt3_5b_on_one_node(tmp_path, monkeypatch):
    """NeMo 22.09's GPT-3 5B on one DGX A100 node (40,345 tokens/s published, 8 GPUs, tp 1,
    micro-batch 2, global batch 2,048): held out, within 5% of the published step, run as NeMo
    1.11.0 ran it: without a pipeline its ``_validate_config`` turns gradient-accumulation
    fusion off, so every micro-batch adds each weight gradient into the fp32 buffer by a kernel
    (with the fusion the row read -7.3%; the benchmark's table shows its 175B points a quarter
    faster than they ran)."""
    predict = _benchmark("megatron_sc21").predict
    read_table = _benchmark("nemo_a100").read_table
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    row = read_table("")[0]
    assert (row["model"], row["seconds"]) == ("5B-8", pytest.approx(2048 * 2048 / 40345))
    data, _ = predict(row, str(tmp_path))
    assert abs(data["iteration_time_ns"] / 1e9 / row["seconds"] - 1) < 0.05


def test_a_table_of_two_models_is_ranked_within_each_model_too():
    """The rho the issue asks for ranks one model's layouts: with two models in a table, the
    whole-table rho also ranks one model's points against the other's. By hand: model A in
    order (rho 1), model B reversed (rho -1), mean 0; a table without groups prints nothing."""
    within = _benchmark("megatron_sc21")._within_groups
    rows = [{"group": "A", "tflops": t, "predicted_tflops": t} for t in (1.0, 2.0, 3.0)]
    rows += [{"group": "B", "tflops": 1.0, "predicted_tflops": 2.0}, {"group": "B", "tflops": 2.0,
                                                                      "predicted_tflops": 1.0}]
    assert within(rows) == ", within each model 0.00"
    assert within([{"tflops": 1.0, "predicted_tflops": 1.0}]) == ""


def test_nemo_a100_gpt3_175b_of_the_release_before(tmp_path, monkeypatch):
    """The 175B layout NeMo 22.09's table runs a quarter slower than predicted (tp 8, pp 8,
    micro-batch 2, selective recomputation, sequence parallelism) as NeMo's 22.06 container
    published it two months earlier with fused Adam: 141,306 tokens/s on 128 nodes at global
    batch 1,536, predicted within 5% (the model is not a quarter fast on the layout itself)."""
    predict = _benchmark("megatron_sc21").predict
    read_table = _benchmark("nemo_a100").read_table
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    row = read_table("", release_22_06=True)[-1]
    assert (row["gpus"], row["seconds"]) == (1024, pytest.approx(1536 * 2048 / 141306))
    data, _ = predict(row, str(tmp_path))
    assert abs(data["iteration_time_ns"] / 1e9 / row["seconds"] - 1) < 0.05


def test_nemo_fp8_table_rows_on_a_few_gpus(tmp_path, monkeypatch):
    """NeMo 24.07's published FP8 pre-training table on DGX H100, the rows on at most 64 GPUs
    without a pipeline (GPT-3 5B and 20B, Llama 2 7B, Llama 3 8B with context parallelism),
    run by the benchmark as a user would. Nothing was fitted on this table (the H100 preset's
    efficiencies come from Megatron-Core's bf16 table): each row within 15% of the published
    seconds per step, their mean |error| within the issue's 10% for H100 tables."""
    predict = _benchmark("megatron_sc21").predict
    read_table = _benchmark("nemo_h100_fp8").read_table
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    rows = [r for r in read_table("") if "--pipeline-model-parallel-size 1 " in r["args"]]
    assert [r["model"] for r in rows] == ["GPT3-5B", "GPT3-20B", "LLAMA2-7B", "LLAMA3-8B"]
    errors = []
    for row in rows:
        data, _ = predict(row, str(tmp_path))
        errors.append(abs(data["iteration_time_ns"] / 1e9 / row["seconds"] - 1))
        assert errors[-1] < 0.15, (row["model"], errors[-1])
    assert sum(errors) / len(errors) <= 0.10


def test_bridge_h100_llama3_70b_row_on_64_gpus(tmp_path, monkeypatch):
    """Megatron-Bridge's published Llama 3 70B FP8 (current scaling) row on 64 DGX H100 GPUs
    (25.11: tp 4, pp 8, 5 virtual stages, the even split the row ran), the quickest row of
    benchmarks/bridge_h100.py; nothing was fitted on it. Measured +18.4% (not the pipeline
    layout: the recipe's layout came after the row and reads +11.2%), so the bound is 25%, a
    guard against regressions rather than the 15% of the NeMo rows."""
    read_table = _benchmark("bridge_h100").read_table
    predict = _benchmark("megatron_sc21").predict
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    row = read_table("")[0]
    assert row["model"] == "LLAMA3-70B FP8-CS 25.11" and row["gpus"] == 64
    data, _ = predict(row, str(tmp_path))
    error = data["iteration_time_ns"] / 1e9 / row["seconds"] - 1
    assert abs(error) < 0.25, error


def _comms(args: str, gpus: int, backward: bool = False) -> list[tuple[str, int, int, bool]]:
    """(label, kind, bytes, beside the next compute) of one layer's collectives."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    job = parse(args, gpus)
    model, layer = ChunkModel(job, TOY), job.chunk_kinds(0, 0)[:1]
    steps = model.backward(layer, False, False) if backward else model.forward(layer, False, False)
    return [(s.label, s.comm_type, s.size_bytes, s.overlap) for s in steps if isinstance(s, Collective)]


TP = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 2 "
      "--tensor-model-parallel-size 4 --bf16 --vocab-size 128 --sequence-parallel")


def test_tp_comm_overlap_reduces_a_row_parallel_gemm_chunk_by_chunk():
    """tp 4, sequence parallel: a row-parallel GEMM's output (b s h x 2 B = 2 MiB) is
    reduce-scattered after the GEMM. With --tp-comm-overlap TE reduces 3 of its 4 chunks beside
    the GEMM's later chunks and only the last chunk's quarter (512 KiB) waits."""
    size = 2 * 512 * 1024 * 2
    plain = [c for c in _comms(TP, 4) if c[0].startswith("mlp.allreduce")]
    assert plain == [("mlp.allreduce", 7, size, False)]
    over = [c for c in _comms(TP + " --tp-comm-overlap", 4) if c[0].startswith("mlp.allreduce")]
    assert over == [("mlp.allreduce", 7, size * 3 // 4, True), ("mlp.allreduce.last", 7, size // 4, False)]


def test_sequence_parallel_backward_gathers_column_parallel_inputs_again():
    """Korthikanti et al. 4.2.2: the QKV and first MLP GEMMs kept only their 1/tp input shard,
    so the backward all-gathers each again (b s h / tp x 2 B = 512 KiB per rank), beside the
    input-gradient GEMM."""
    gathers = [c for c in _comms(TP, 4, backward=True) if "input.allgather" in c[0]]
    assert gathers == [("mlp.bwd.input.allgather", 2, 512 * 1024, True),
                       ("attn.bwd.input.allgather", 2, 512 * 1024, True)]


def test_context_parallel_exchange_follows_cp_comm_type():
    """cp 2, tokens per rank b s / cp = 512: K and V of 1,024 wide (2 x 512 x 1024 x 2 B = 2 MiB)
    go round the ring beside the attention (p2p), or are gathered first (allgather); a2a
    exchanges Q, K, V (3 MiB) before and the output (1 MiB) after."""
    cp = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
          "--context-parallel-size 2 --bf16 --vocab-size 128")
    kv, mib = 2 * 512 * 1024 * 2, 1024 * 1024
    assert [c for c in _comms(cp, 2) if c[0].startswith("attn.cp")] == [("attn.cp.allgather", 2, kv, True)]
    gathered = _comms(cp + " --cp-comm-type allgather", 2)
    assert [c for c in gathered if c[0].startswith("attn.cp")] == [("attn.cp.allgather", 2, kv, False)]
    a2a = [c for c in _comms(cp + " --cp-comm-type a2a", 2) if c[0].startswith("attn.cp")]
    assert a2a == [("attn.cp.alltoall", 6, 3 * mib, False), ("attn.cp.alltoall.after", 6, mib, False)]


def test_cp_comm_type_a_layer_is_read_and_a2a_plus_p2p_needs_its_sizes():
    """A list of one type a layer is parsed layer by layer (tests/test_cp_comm_type_per_layer.py
    prices it); a uniform list is the one type."""
    cp = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
          "--context-parallel-size 2 --bf16")
    assert parse(cp + " --cp-comm-type a2a a2a", 2).cp_comm_type == "a2a"
    assert parse(cp + " --cp-comm-type p2p a2a", 2).cp_comm_types == ("p2p", "a2a")
    # Megatron itself refuses a2a+p2p without hierarchical context-parallel sizes
    with pytest.raises(InvalidConfigurationError, match="--cp-comm-type a2a\\+p2p needs --hierarchical"):
        parse(cp + " --cp-comm-type a2a+p2p", 2)


def test_layers_without_biases_run_no_bias_gradient_kernels():
    """A linear layer's bias gradient is a kernel reading its output gradient once (2 B an
    element); ``--disable-bias-linear`` (Llama) has none. On the TOY GPU (HBM 1e6 GB/s at 0.5,
    a 2 us launch each), tp 1, 1024 tokens, h 1024, 16 heads of 64 (QKV 3072 wide), SwiGLU
    FFN 2048: four kernels, over the QKV (3072), output projection (1024), FC1 (2 x 2048) and
    FC2 (1024) outputs."""
    args = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--bf16 --vocab-size 128 --swiglu --ffn-hidden-size 2048")
    with_bias = _streaming_s(_layer_steps(args, True))
    without = _streaming_s(_layer_steps(args + " --disable-bias-linear", True))
    bias_kernels = sum(1024 * width * 2 / (1e6 * 1e9 * 0.5) + 2e-6 for width in (3072, 1024, 4096, 1024))
    assert with_bias - without == pytest.approx(bias_kernels, rel=1e-9)


def test_layers_without_biases_hold_no_bias_parameters():
    """``--disable-bias-linear`` drops each layer's biases from the model and from a GPU's
    memory: QKV (3 x 1024), projection (1024), FC1 (4096) and FC2 (1024), 9,216 a layer of
    h 1024 with a 4h GeLU MLP; 4 layers, tp 2: 36,864 parameters. Each GPU holds half of the
    column-parallel ones (QKV, FC1: 3,584 a layer) and all of the row-parallel ones (projection,
    FC2: added after the reduction, 2,048 a layer), 22,528 in all."""
    from simpy_astra.workloads.megatron.memory import stage_parameters

    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 "
            "--max-position-embeddings 512 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 1000 "
            "--tensor-model-parallel-size 2")
    with_bias, without = parse(args, 2), parse(args + " --disable-bias-linear", 2)
    assert with_bias.parameters() - without.parameters() == 4 * 9216
    assert stage_parameters(with_bias)[0] - stage_parameters(without)[0] == pytest.approx(4 * (7168 / 2 + 2048))


def test_the_learned_position_table_has_max_position_embeddings_rows():
    """``LanguageModelEmbedding`` holds ``--max-position-embeddings`` x h learned positions (on
    every tp rank: the table is not split), none with rotary embeddings: sequence 512 with
    4,096 positions at h 1024 is 4,194,304 parameters, not 524,288, on each GPU of the first
    stage; with ``--position-embedding-type rope`` (or 2023's ``--use-rotary-position-embeddings``)
    none. A table of 10^12 rows (a typo) is refused as past any GPU, naming the argument."""
    from simpy_astra.workloads.megatron.memory import stage_parameters

    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 "
            "--global-batch-size 8 --bf16 --vocab-size 1000 --tensor-model-parallel-size 2")
    table = {extra: parse(args + extra, 2) for extra in (" --max-position-embeddings 512",
                                                          " --max-position-embeddings 4096",
                                                          " --max-position-embeddings 4096 --position-embedding-type rope",
                                                          " --max-position-embeddings 4096 --use-rotary-position-embeddings")}
    small, large, rope, rotary = table.values()
    assert large.parameters() - small.parameters() == (4096 - 512) * 1024
    assert stage_parameters(large)[0] - stage_parameters(small)[0] == pytest.approx((4096 - 512) * 1024)
    assert small.parameters() - rope.parameters() == 512 * 1024 and rope.parameters() == rotary.parameters()
    with pytest.raises(InputError, match="PiB per GPU.*--max-position-embeddings"):
        parse(args + f" --max-position-embeddings {10**12}", 2)


def _softmax_s(args: str, backward: bool) -> tuple[float, int]:
    """Streaming seconds and kernels of one layer's forward (or backward) on the TOY GPU."""
    steps = _layer_steps(args, backward)
    return _streaming_s(steps), sum(s.kernels for s in steps if isinstance(s, Compute))


def test_unfused_softmax_runs_pytorchs_kernels_on_an_fp32_copy():
    """Without Megatron's fused scale-mask-softmax kernel, ``FusedScaleMaskSoftmax`` runs
    PyTorch's kernels one by one. 2021's fp16 default (query-key layer scaling on, so the
    softmax in fp32): ``.float()`` (read 2, write 4), the layer-number multiply (4 + 4), the
    in-place mask (4 + 4), the softmax (4 + 4), ``.half()`` (4 + 2): 36 B a score in five
    kernels against the fused kernel's 4 in one; backward the copies (6 + 6), the multiply's
    and the mask's gradients (8 each) and the softmax's (gradient and output in, 12): 40 in
    five against 6. ``--no-query-key-layer-scaling`` leaves fp16 scores: mask and softmax,
    8 B in two (backward 4 + 6). Today's ``--attention-softmax-in-fp32`` without scaling:
    6 + 8 + 8 + 6 = 28. Here 16 heads x 1024^2 scores on the TOY GPU (2 us a launch)."""
    base = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--fp16 --vocab-size 128")
    per_byte = 16 * 1024 * 1024 / (1e6 * 1e9 * 0.5)
    for era, extra, fwd, bwd in (("--DDP-impl local", "", (36, 5), (40, 5)),
                                 ("--DDP-impl local", " --no-query-key-layer-scaling", (8, 2), (10, 2)),
                                 ("--transformer-impl local", " --attention-softmax-in-fp32", (28, 4), (32, 4)),
                                 ("--transformer-impl local", "", (8, 2), (10, 2))):
        for backward, (moved, kernels), fused_moved in ((False, fwd, 4), (True, bwd, 6)):
            fused_s, fused_kernels = _softmax_s(f"{base} {era}{extra}", backward)
            plain_s, plain_kernels = _softmax_s(f"{base} {era}{extra} --no-masked-softmax-fusion", backward)
            assert plain_kernels - fused_kernels == kernels - 1, (era, extra, backward)
            assert plain_s - fused_s == pytest.approx((moved - fused_moved) * per_byte + (kernels - 1) * 2e-6,
                                                      rel=1e-9), (era, extra, backward)


def test_fused_softmax_kernel_runs_only_on_the_shapes_it_takes():
    """Megatron falls back to PyTorch's softmax where its kernel does not take the shape: keys
    of 17 to 2,048 in 2021 (``6985e589``), to 4,096 from 2022-01, and ``micro-batch x heads per
    GPU`` a multiple of 4; Transformer Engine's own kernel keys under 16,384."""
    def fused(args: str, gpus: int = 1) -> bool:
        return parse("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --micro-batch-size 1 --fp16 "
                     f"--vocab-size 128 {args}", gpus).fused_softmax_runs()

    for seq, legacy, today, te in ((2048, True, True, True), (4096, False, True, True),
                                   (8192, False, False, True), (16384, False, False, False)):
        lengths = f"--seq-length {seq} --max-position-embeddings {seq}"
        assert fused(f"{lengths} --DDP-impl local") is legacy, seq
        assert fused(f"{lengths} --transformer-impl local") is today, seq
        assert fused(f"{lengths} --attention-backend unfused") is te, seq
    # 16 heads over tp 8: 2 a GPU, and 2 x micro-batch 1 is no multiple of 4
    assert not fused("--seq-length 1024 --tensor-model-parallel-size 8 --DDP-impl local", 8)
    assert fused("--seq-length 1024 --tensor-model-parallel-size 8 --micro-batch-size 2 --DDP-impl local", 8)


def test_unfused_fp32_softmax_saves_its_fp32_output():
    """Korthikanti's 5 B a score (softmax output 2, dropout mask 1, dropout output 2) becomes 7
    when PyTorch's softmax saves its fp32 output: 2 B more for each of 16 heads x 512^2 scores."""
    from simpy_astra.workloads.megatron.memory import layer_activation_bytes

    args = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 "
            "--max-position-embeddings 512 --micro-batch-size 1 --fp16 --vocab-size 128 --DDP-impl local")
    fused, plain = (layer_activation_bytes(parse(a, 1)) for a in (args, args + " --no-masked-softmax-fusion"))
    assert plain - fused == pytest.approx(2 * 16 * 512 * 512)


def test_sc21_fused_operators_and_table_2(tmp_path, monkeypatch):
    """SC'21, Section 5.8: fusing scale-mask-softmax, bias-GeLU and bias-dropout-add took GPT-3
    175B from 113 to 135 TFLOP/s per GPU (1.195x); the speed-up is within 5% here, on Table 2's
    175B layout (tp 8, pp 12, 1,536 GPUs, batch 1,536), whose published 141 TFLOP/s the fused
    step also meets within 5%. Before the unfused softmax ran on an fp32 copy, it was 1.05x."""
    bench = _benchmark("megatron_sc21_ptd")
    predict = _benchmark("megatron_sc21").predict
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    fused_row = bench.row("175B", 1536, 141)
    fused = predict(fused_row, str(tmp_path))[0]["iteration_time_ns"] / 1e9
    unfused = predict(bench.row("175B", 1536, 113, bench.UNFUSED), str(tmp_path))[0]["iteration_time_ns"] / 1e9
    assert fused_row["seconds"] == pytest.approx(20.83, abs=0.01)  # the paper's FLOPs / (141 TFLOP/s x 1,536)
    assert abs(fused / fused_row["seconds"] - 1) < 0.05
    assert abs((unfused / fused) / (135 / 113) - 1) < 0.05


def test_fused_cross_entropy_moves_fewer_bytes_a_logit():
    """Megatron-Core's fused vocabulary-parallel cross entropy (``--cross-entropy-loss-fusion``)
    runs three forward kernels, the fp32 copy with its max (2 + 4 B), the exp and its sum in
    place (4 + 4), the division by the sum (4 + 4), 22 B a logit against the unfused six kernels'
    38 (``VocabParallelCrossEntropy``: the cast 2 + 4, the max 4, its subtraction in place 4 + 4,
    the exp in place 4 + 4, the sum 4, the division 4 + 4); and one backward kernel, the softmax
    scaled in place and the bf16 gradient written (4 + 4 + 2), 10 B against 14 (the scaling in
    place 4 + 4, the cast back 4 + 2). Here 1024 tokens x 32,768 logits on the TOY GPU: 16 and 4
    B a logit fewer.
    TE's fused kernel is refused with it, as today's Megatron-LM refuses it."""
    from simpy_astra.workloads.megatron.layers import ChunkModel

    args = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--bf16 --vocab-size 32768")
    plain, fused = (ChunkModel(parse(a, 1), TOY) for a in (args, args + " --cross-entropy-loss-fusion"))
    logits_bw = 1024 * 32768 / (1e6 * 1e9 * 0.5)
    assert _streaming_s(plain.forward((), False, True)) - _streaming_s(fused.forward((), False, True)) == \
        pytest.approx(16 * logits_bw, rel=1e-9)
    assert _streaming_s(plain.backward((), False, True)) - _streaming_s(fused.backward((), False, True)) == \
        pytest.approx(4 * logits_bw, rel=1e-9)
    with pytest.raises(InvalidConfigurationError, match="Transformer Engine cross entropy loss fusion is disabled"):
        parse(args + " --cross-entropy-loss-fusion --cross-entropy-fusion-impl te", 1)


def test_the_cluster_gives_the_tensor_parallel_link_rate():
    """The window compute shares SMs with a tensor-parallel collective is sized by the link
    its ring runs on: a node's NVLink (the preset's 215.822 GiB/s) for tp 8 on a DGX A100, the
    GPU's rail (1,600 Gb/s over 8 NICs at 0.94: 23.5 GB/s) for tp 16 across two. Given beside a
    cluster it would be replaced without a word, so it is refused; without one it is checked."""
    from simpy_astra.workloads.megatron.generator import prepare

    cluster = load_cluster({"preset": "dgx-a100-80gb", "gpus": 16}, "c")
    args = DP.replace("--global-batch-size 4", "--global-batch-size 8")
    params, run = prepare({"args": args + " --tensor-model-parallel-size 8"}, cluster, "s.yaml: workload")
    assert run.tp_link_gb_s == params["tp_link_gb_s"] == pytest.approx(215.822 * 2**30 / 1e9)
    _, across = prepare({"args": args + " --tensor-model-parallel-size 16"}, cluster, "s.yaml: workload")
    assert across.tp_link_gb_s == pytest.approx(1600 / 8 / 8 * 0.94)
    with pytest.raises(InputError, match=r"workload\.tp_link_gb_s: the cluster: gives the tensor-parallel link"):
        prepare({"args": args + " --tensor-model-parallel-size 8", "tp_link_gb_s": 5}, cluster, "s.yaml: workload")
    alone = {"args": args + " --tensor-model-parallel-size 8", "gpus": 16, "gpu": cluster.gpu}
    assert prepare({**alone, "tp_link_gb_s": 100}, None, "s.yaml: workload")[1].tp_link_gb_s == 100
    assert prepare(alone, None, "s.yaml: workload")[1].tp_link_gb_s == 0
    for bad in ("fast", -1, float("nan"), True):
        with pytest.raises(InputError, match=r"workload\.tp_link_gb_s: .* is not a rate"):
            prepare({**alone, "tp_link_gb_s": bad}, None, "s.yaml: workload")


def test_a_2022_fp16_layer_without_fp32_main_gradients_adds_its_weight_gradients_unfused(tmp_path):
    """docs/megatron.md: a 22B layer of the 2022 release (full recomputation, Korthikanti's
    Table 4) runs 0.27 ms longer with fp16 main gradients than with
    ``--accumulate-allreduce-grads-in-fp32``, which that release's fused weight-gradient
    accumulation needed; the page said 0.26 ms from an older run. A layer is the 48-layer step
    less the 24-layer one, optimizer left out, / 24, as ``benchmarks/megatron_one_model.py
    --tables korthikanti-fp16`` measures it."""
    bench = _benchmark("megatron_one_model")
    fp16_line = bench.K_2022.replace(" --accumulate-allreduce-grads-in-fp32", "")

    def layer_ms(line: str) -> float:
        busy = []
        for layers in (48, 24):
            _run(tmp_path, f"{bench.model_22b(layers)} {line} --micro-batch-size 4 --global-batch-size 4 "
                 f"{bench.K_FULL}", 8)
            data = json.loads((tmp_path / "out.json").read_text())
            busy.append(data["iteration_time_ns"] / 1e6 - bench.last_npu(data).get("compute.optimizer", 0.0))
        return (busy[0] - busy[1]) / 24

    assert layer_ms(fp16_line) - layer_ms(bench.K_2022) == pytest.approx(0.27, abs=0.005)
