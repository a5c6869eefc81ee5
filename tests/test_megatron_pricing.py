"""Arguments priced as Megatron-LM's source runs them, against figures derived by hand.

- ``--optimizer sgd`` (``megatron/core/optimizer/__init__.py``): torch's (or Transformer
  Engine's / apex's fused) SGD keeps one fp32 momentum buffer a parameter, none at
  ``--sgd-momentum 0``; Adam keeps two moments. Memory: 4 B a parameter less per moment not
  kept; the optimizer step: each moment not kept is 8 B a parameter not read and written.
- ``--swiglu`` without ``--ffn-hidden-size``: ``int((4 h 2 / 3) / 64) * 64`` (validate_args),
  8h/3 rounded *down* to a multiple of 64.
- ``--num-query-groups`` is read only with ``--group-query-attention`` (argparse default 1),
  ``core_transformer_config_from_args``.
- ``--bf16 --main-grads-dtype bf16``: validate_args sets ``accumulate_allreduce_grads_in_fp32``
  only while the main gradients are fp32, so the gradient buffer and its reduction are bf16.
"""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.memory import parts_bytes
from simpy_astra.workloads.megatron.schedule import build_stage

L, H, S, V = 8, 1024, 1024, 128
BASE = (f"--num-layers {L} --hidden-size {H} --num-attention-heads 16 --seq-length {S} --micro-batch-size 1 "
        f"--vocab-size {V} --make-vocab-size-divisible-by 1")
#: QKV, projection, two MLP matrices, their biases, two layer norms a layer; the tied word
#: embedding, the learned positions and the final norm
PARAMS = L * (12 * H * H + 13 * H) + V * H + S * H + 2 * H


@pytest.mark.parametrize("precision,optimizer,per_param", [
    # Adam: fp32 master 4 (+ fp32 main gradient 4 with fp16) + two moments 8 (the guide's 16 and 12)
    ("--fp16", "", 16), ("--bf16", "", 12),
    ("--fp16", " --optimizer sgd", 12), ("--bf16", " --optimizer sgd", 8),
    ("--fp16", " --optimizer sgd --sgd-momentum 0", 8), ("--bf16", " --optimizer sgd --sgd-momentum 0", 4),
    ("", " --optimizer sgd", 4), ("", " --optimizer sgd --sgd-momentum 0", 0),  # fp32: no master copy
])
def test_sgd_keeps_one_momentum_buffer_and_none_without_momentum(precision, optimizer, per_param):
    parts = parts_bytes(parse(f"{BASE} {precision}{optimizer}", 1))
    assert parts["optimizer"] == pytest.approx(per_param * PARAMS, rel=1e-6)


#: the optimizer step moves each parameter's bytes through HBM: at the A100's 2,039 GB/s and
#: 65% efficiency, 8 B of each of the 102M parameters take 615 us
PER_8_BYTES_US = 8 * PARAMS / (2039e9 * 0.65) * 1e6


def _step_us(extra: str) -> int:
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    ops = [op for op in build_stage(parse(f"{BASE} {extra}", 8), gpu, 0).ops if op.name.endswith("optimizer.step")]
    return ops[0].duration_us


def test_the_optimizer_step_moves_eight_bytes_less_a_parameter_for_each_moment_not_kept():
    """Each moment Adam keeps and SGD does not is read and written: 8 B a parameter."""
    assert PER_8_BYTES_US == pytest.approx(615.4, abs=0.1)
    adam, sgd = _step_us("--bf16"), _step_us("--bf16 --optimizer sgd")
    assert adam - sgd == pytest.approx(PER_8_BYTES_US, abs=1.5)
    assert sgd - _step_us("--bf16 --optimizer sgd --sgd-momentum 0") == pytest.approx(PER_8_BYTES_US, abs=1.5)


def test_the_gradient_norm_and_the_inf_check_are_a_pass_each_when_megatron_runs_them():
    """``MixedPrecisionOptimizer.step``: the global norm only with ``--clip-grad`` above 0, the
    unscale-and-check only with a grad scaler (fp16's dynamic one, or ``--loss-scale``'s): a
    4 B read of each fp32 gradient each, half of 8 B."""
    bf16 = _step_us("--bf16")
    assert bf16 - _step_us("--bf16 --clip-grad 0") == pytest.approx(PER_8_BYTES_US / 2, abs=1.5)
    assert _step_us("--bf16 --loss-scale 1024") - bf16 == pytest.approx(PER_8_BYTES_US / 2, abs=1.5)


@pytest.mark.parametrize("hidden,ffn", [(1024, 2688), (4096, 10880), (5120, 13632), (8192, 21824)])
def test_swiglu_width_is_8h_over_3_rounded_down_to_64(hidden, ffn):
    # 8h/3 = 2730.7, 10922.7, 13653.3, 21845.3: the multiples of 64 at or below
    args = f"--num-layers 2 --hidden-size {hidden} --num-attention-heads 16 --seq-length 128 --micro-batch-size 1 "
    assert parse(args + "--swiglu", 1).ffn_hidden == ffn
    assert parse(args + "--swiglu --ffn-hidden-size 100", 1).ffn_hidden == 100


@pytest.mark.parametrize("extra,kv_heads", [
    (" --num-query-groups 4", 16),  # no --group-query-attention: Megatron ignores the groups
    (" --group-query-attention", 1),  # argparse's default, one group
    (" --group-query-attention --num-query-groups 4", 4),
])
def test_query_groups_count_only_with_group_query_attention(extra, kv_heads):
    assert parse(BASE + " --bf16" + extra, 1).kv_heads == kv_heads


PRECISION_AWARE = " --bf16 --use-distributed-optimizer --use-precision-aware-optimizer"


def test_bf16_main_gradients_make_a_bf16_gradient_buffer():
    """With the precision-aware optimizer, ``--main-grads-dtype bf16`` leaves
    ``accumulate_allreduce_grads_in_fp32`` off: a bf16 gradient buffer, 2 B a parameter, as
    with --grad-reduce-in-bf16."""
    parts = parts_bytes(parse(BASE + PRECISION_AWARE + " --main-grads-dtype bf16", 1))
    assert parts["gradients"] == pytest.approx(2 * PARAMS, rel=1e-6)
    assert parse(BASE + PRECISION_AWARE, 1).grad_bytes == 4


@pytest.mark.parametrize("extra,per_param", [
    ("", 2 + 4 + 4),  # the master's 16-bit remainder (store_param_remainders), fp32 moments
    (" --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16", 2 + 2 + 2),
    (" --exp-avg-dtype fp8 --exp-avg-sq-dtype fp8", 2 + 1 + 1),
    (" --main-params-dtype fp16 --exp-avg-dtype fp16", 2 + 2 + 4),
    (" --fp8-format hybrid --fp8-recipe tensorwise", 4 + 4 + 4),  # Megatron-Core keeps the fp32 master
])
def test_the_precision_aware_optimizer_keeps_its_states_in_their_dtypes(extra, per_param):
    """Transformer Engine's FusedAdam (``--use-precision-aware-optimizer``, one data-parallel
    rank here): the master copy and both moments a parameter in the bytes of their dtypes."""
    job = parse(BASE + PRECISION_AWARE + extra, 1)
    assert parts_bytes(job)["optimizer"] == pytest.approx(per_param * PARAMS, rel=1e-6)


@pytest.mark.parametrize("bucket,expected", [
    ("", "a bucket a layer"), (" --ddp-bucket-size 100000000", "two layers, then the embedding"),
    (" --ddp-bucket-size 1000000000", "one bucket"),
])
def test_ddp_bucket_size_sets_the_first_stages_gradient_buckets(bucket, expected):
    """Buckets fill in the backward's order and close once they hold ``--ddp-bucket-size``
    parameters (default max(40M, 1M x dp)): here each layer holds 4h^2 + 2hf = 83.9M weights
    and 4h of norms (as the model counts them), the embedding 128 + 1,024 rows
    of h; fp32 gradients, 4 B each."""
    from simpy_astra.workloads.transformer.graph import COLL

    h, f = 2048, 16384
    args = (f"--num-layers 4 --hidden-size {h} --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            f"--global-batch-size 8 --pipeline-model-parallel-size 2 --bf16 --vocab-size 128 --ffn-hidden-size {f} "
            "--use-distributed-optimizer --overlap-grad-reduce")
    layer, embedding = 4 * (4 * h * h + 2 * h * f + 4 * h), 4 * h * (128 + 1024)
    buckets = {"a bucket a layer": [layer, layer, embedding], "two layers, then the embedding": [2 * layer, embedding],
               "one bucket": [2 * layer + embedding]}[expected]
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    syncs = [op.comm_size for op in build_stage(parse(args + bucket, 4), gpu, 0).ops
             if op.kind == COLL and op.dim == "dp" and op.name.endswith(".sync")]
    assert syncs == buckets


@pytest.mark.parametrize("unit", [1, 2])
def test_distributed_saved_activations_keep_half_the_checkpoints_and_gather_them_back(unit):
    """``--distribute-saved-activations`` at tp 2 (Megatron's ``CheckpointFunction``): each
    recompute unit's input, s b h bf16 values (2 s b h bytes), is kept as one half per rank,
    and all-gathered (s b h / 2 values of 2 B from each rank) before the unit is recomputed:
    L s h bytes less memory at micro-batch 1, and L / unit gathers in each backward."""
    from simpy_astra.workloads.megatron.memory import activation_bytes

    args = (f"{BASE} --bf16 --tensor-model-parallel-size 2 --recompute-granularity full --recompute-method uniform "
            f"--recompute-num-layers {unit}")
    plain, split = parse(args, 2), parse(args + " --distribute-saved-activations", 2)
    assert activation_bytes(plain) - activation_bytes(split) == pytest.approx(L / unit * S * H)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 2}, "c").gpu_model()
    for job, gathers in ((plain, []), (split, [S * H] * (L // unit))):
        ops = [op.comm_size for op in build_stage(job, gpu, 0).ops if op.name.endswith("recompute.input.allgather")]
        assert ops == gathers


def test_unfused_swiglu_runs_silu_and_the_product_apart_and_keeps_silus_output():
    """``--no-bias-swiglu-fusion`` (Megatron-Core's MLP without ``bias_activation_fusion``:
    ``silu(x1) * x2``): the forward moves 10 B an element of ffn instead of 6 (SiLU 2 + 2,
    the product 4 + 2), 18 with the bias added to both halves first, the backward 24 instead
    of 10; and SiLU's output, f values of 2 B a token, is kept for the product's backward.
    One micro-batch of 1,024 tokens through 8 layers, each layer's task a sum of kernels."""
    from simpy_astra.workloads.megatron.memory import activation_bytes

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    swiglu = f"{BASE} --bf16 --swiglu"
    ffn = 2688  # 8h/3 rounded down to 64
    per_byte_us = L * S * ffn / (2039e9 * 0.65) * 1e6  # 1 B an element of ffn, every token and layer

    def task_us(extra: str) -> list[int]:  # the forward, the backward, the optimizer step
        return [op.duration_us for op in build_stage(parse(swiglu + extra, 1), gpu, 0).ops]

    for bias, forward in ((" --disable-bias-linear", 10 - 6), ("", 18 - 6)):
        fused, unfused = task_us(bias), task_us(bias + " --no-bias-swiglu-fusion")
        assert [b - a for a, b in zip(fused, unfused, strict=True)] == [
            pytest.approx(forward * per_byte_us, abs=2), pytest.approx((24 - 10) * per_byte_us, abs=2), 0]
    fused, unfused = parse(swiglu, 1), parse(swiglu + " --no-bias-swiglu-fusion", 1)
    assert activation_bytes(unfused) - activation_bytes(fused) == pytest.approx(L * S * ffn * 2)


def test_no_hidden_dropout_writes_and_keeps_no_masks():
    """``--hidden-dropout 0``: PyTorch's dropout returns its input at p = 0, so neither
    bias-dropout-add of a layer nor the embedding writes its 1-byte mask and none is kept:
    Korthikanti's 34 s b h a layer become 32 (2 L s h fewer bytes at micro-batch 1, s h fewer
    for the embedding's mask), the forward writes (2 L + 1) s h bytes fewer and the backward's
    bias-dropout-adds read 2 L s h fewer."""
    from simpy_astra.workloads.megatron.memory import activation_bytes

    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    per_byte_us = S * H / (2039e9 * 0.65) * 1e6  # 1 B a value of the micro-batch's activations
    dropout, none = parse(f"{BASE} --bf16", 1), parse(f"{BASE} --bf16 --hidden-dropout 0", 1)
    assert activation_bytes(dropout) - activation_bytes(none) == pytest.approx((2 * L + 1) * S * H)
    with_masks, without = ([op.duration_us for op in build_stage(job, gpu, 0).ops] for job in (dropout, none))
    assert [a - b for a, b in zip(with_masks, without, strict=True)] == [
        pytest.approx((2 * L + 1) * per_byte_us, abs=2), pytest.approx(2 * L * per_byte_us, abs=2), 0]


def test_no_position_embedding_of_2023_keeps_no_position_table():
    """``--no-position-embedding`` (Megatron-LM 2023-02 to 07, beside ``--DDP-impl``): no
    learned position table, S x h weights fewer on the first stage (2 B each in bf16)."""
    legacy = f"{BASE} --bf16 --DDP-impl local"
    table, none = (parts_bytes(parse(legacy + extra, 1))["weights"] for extra in ("", " --no-position-embedding"))
    assert table - none == pytest.approx(2 * S * H)


@pytest.mark.parametrize("dispatcher", ["", " --moe-token-dispatcher-type allgather",
                                        " --moe-token-dispatcher-type alltoall"])
def test_moe_tokens_reach_their_experts_as_the_dispatcher_sends_them(dispatcher):
    """Megatron-Core's default dispatcher (``TransformerConfig.moe_token_dispatcher_type =
    "allgather"``) gathers every rank's T = 1,024 tokens over the 8 expert-parallel ranks
    before the experts and reduce-scatters the 8 T outputs back after them (the backward the
    reverse); ``alltoall`` sends each of the top-2 copies to its expert's rank and back (the
    gather moves 7 T h x 2 B a GPU each way, the all-to-all 2 T h x 7/8 x 2 B: a quarter)."""
    from simpy_astra.workloads.megatron.layers import ChunkModel
    from simpy_astra.workloads.megatron.linear_kernels import ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER
    from simpy_astra.workloads.megatron.steps import Collective

    gpu = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()
    job = parse(BASE + " --bf16 --num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2" + dispatcher, 8)
    model, layer = ChunkModel(job, gpu), job.chunk_kinds(0, 0)[:1]
    def moe(steps: list) -> list:
        return [(s.label, s.comm_type, s.size_bytes) for s in steps if isinstance(s, Collective) and s.dim == "ep"]

    shard = S * H * 2  # a rank's tokens, bf16
    if "alltoall" in dispatcher:
        assert moe(model.forward(layer, False, False)) == [("moe.dispatch.alltoall", ALL_TO_ALL, 2 * shard),
                                                              ("moe.combine.alltoall", ALL_TO_ALL, 2 * shard)]
    else:
        assert moe(model.forward(layer, False, False)) == [("moe.dispatch.allgather", ALL_GATHER, shard),
                                                              ("moe.combine.reducescatter", REDUCE_SCATTER, 8 * shard)]
        assert moe(model.backward(layer, False, False)) == [
            ("moe.combine.bwd.allgather", ALL_GATHER, shard), ("moe.dispatch.bwd.reducescatter", REDUCE_SCATTER,
                                                               8 * shard)]


def test_grouped_gemm_runs_a_ranks_experts_in_one_kernel_whose_tiles_share_the_waves():
    """64 experts of width 256 over 8 expert-parallel ranks (8 local), top-8 routing: a rank's
    experts see 1,024 copies each. Megatron's default SequentialMLP runs expert after expert,
    each GEMM its own kernel (on an H100's 132 SMs a 1,024 x 256 output is one part-filled
    wave); ``--moe-grouped-gemm`` runs the 8 as one kernel whose tiles fill the waves together.
    The forward's GEMMs: 8 x (FC1 + FC2) against one grouped FC1 and FC2, by hand from the
    single-GEMM pricing; the grouped forward launches 2 x 7 fewer GEMM kernels."""
    from simpy_astra.workloads.megatron.kernels import gemm_seconds
    from simpy_astra.workloads.megatron.layers import ChunkModel
    from simpy_astra.workloads.megatron.steps import Compute

    gpu = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()
    moe = (BASE + " --bf16 --num-experts 64 --expert-model-parallel-size 8 --moe-router-topk 8 "
           "--moe-ffn-hidden-size 256 --moe-token-dispatcher-type alltoall --disable-bias-linear")
    def forward(extra: str) -> tuple[float, int]:
        job = parse(moe + extra, 8)
        steps = [s for s in ChunkModel(job, gpu).forward(job.chunk_kinds(0, 0)[:1], False, False)
                 if isinstance(s, Compute)]
        return sum(s.seconds.get("gemm", 0.0) for s in steps), sum(s.kernels for s in steps)

    (sequential, seq_kernels), (grouped, grouped_kernels) = forward(""), forward(" --moe-grouped-gemm")
    copies, width = S * 8 // 8, 256  # T x top-8 copies over 8 local experts
    fc1, fc2 = gemm_seconds(gpu, copies, width, H), gemm_seconds(gpu, copies, H, width)
    group_fc1, group_fc2 = gemm_seconds(gpu, copies, width, H, 8), gemm_seconds(gpu, copies, H, width, 8)
    assert sequential - grouped == pytest.approx(8 * (fc1 + fc2) - (group_fc1 + group_fc2), rel=1e-9)
    assert grouped < 0.6 * sequential  # mostly experts here: one wave each, against a few shared
    assert seq_kernels - grouped_kernels == 7 * (2 + 1)  # two GEMMs and the activation an expert


@pytest.mark.parametrize("extra,forward_bytes,backward_bytes", [
    (" --position-embedding-type rope", [4], [4]),  # one fused kernel each way: read and write
    (" --position-embedding-type rope --no-rope-fusion", [24], [16]),
    (" --use-rotary-position-embeddings --qk-layernorm", [4, 4], [6, 4]),  # and a norm over each head
    (" --qk-layernorm", [4], [6]),
])
def test_rotary_embeddings_and_query_key_norms_stream_the_queries_and_keys(extra, forward_bytes, backward_bytes):
    """Rotary embeddings rotate every layer's queries and keys (S tokens x (16 + 4) heads of 64
    here, 2 B each) before attention. Megatron-Core's fused kernel reads and writes them once
    each way; ``--no-rope-fusion``'s PyTorch version runs ``t * cos`` (4 B an element),
    ``_rotate_half``'s negated half (2) and concatenation (4), ``* sin`` (4), the sum (6) and a
    final concatenation (4): 24 B, and backward the products' gradients (4 + 4), the
    negation's (2) and the two paths summed (6): 16 B. A query-key layer norm is a layer
    norm's 4 / 6 B. Learned positions rotate nothing."""
    from simpy_astra.workloads.megatron.kernels import streaming_seconds
    from simpy_astra.workloads.megatron.layers import ChunkModel
    from simpy_astra.workloads.megatron.steps import Compute

    gpu = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()
    gqa = BASE + " --bf16 --group-query-attention --num-query-groups 4"
    def elementwise(extra: str) -> tuple[float, float]:
        job = parse(gqa + extra, 8)
        model, layer = ChunkModel(job, gpu), job.chunk_kinds(0, 0)[:1]
        def total(steps: list) -> float:
            return sum(s.seconds.get("elementwise", 0.0) for s in steps if isinstance(s, Compute))
        return total(model.forward(layer, False, False)), total(model.backward(layer, False, False))

    (fwd, bwd), (plain_fwd, plain_bwd) = elementwise(extra), elementwise("")
    qk = S * (16 + 4) * 64  # elements of q and k of the one layer given
    assert fwd - plain_fwd == pytest.approx(sum(streaming_seconds(gpu, qk * n) for n in forward_bytes))
    assert bwd - plain_bwd == pytest.approx(sum(streaming_seconds(gpu, qk * n) for n in backward_bytes))


def test_the_grouped_gemm_figures_page_gives_the_benchmarks_arguments():
    """docs/megatron.md quoted a Qwen3-30B-A3B-like MoE's step grouped and not (3.20 and 2.98 s)
    without its arguments, so no one could rerun it. The page now prints them, and
    ``benchmarks/megatron_one_model.py --tables moe`` runs them (two 64-GPU steps, about a
    minute: too slow for a test). Here the page's block is the benchmark's line, word for
    word, and the shape is the one the prose names."""
    import importlib
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))  # not a package; it imports megatron_sc21 beside it
    try:
        bench = importlib.import_module("megatron_one_model")
    finally:
        sys.path.pop(0)
    page = (root / "docs" / "megatron.md").read_text()
    block = page.split("That model is Qwen3-30B-A3B's", 1)[1].split("```", 2)[1]
    assert block.split() == bench.MOE_QWEN3.split()
    args = parse(bench.MOE_QWEN3, 64)
    assert (args.experts, args.moe_ffn, args.topk, args.ep, args.num_layers) == (128, 768, 8, 8, 48)
