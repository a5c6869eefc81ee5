"""Megatron-LM command lines a researcher writes that Megatron reads differently from what
they look like: each is simulated as Megatron-LM runs it (its ``arguments.py`` quoted), or
refused in one line naming the argument and the fix."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


@pytest.mark.parametrize("hidden, ffn", [
    # Megatron: args.ffn_hidden_size = int((4 * args.hidden_size * 2 / 3) / 64) * 64
    (4096, 10880),  # 10922.7 -> 170 x 64, not 171 x 64 = 10944
    (1024, 2688),  # 2730.7 -> 42 x 64
    (5120, 13632),  # 13653.3 -> 213 x 64
    (768, 2048),  # exactly 32 x 64
])
def test_swiglu_mlp_width_is_megatrons_truncation(hidden, ffn):
    job = parse(BASE.replace("4096", str(hidden)) + " --swiglu", 8, WHERE)
    assert job.ffn_hidden == ffn


def test_swiglu_on_a_width_that_leaves_no_mlp_is_refused():
    # int(4 x 16 x 2/3 / 64) x 64 = 0: an MLP zero wide
    with pytest.raises(InputError) as info:
        parse(BASE.replace("4096", "16").replace("32 ", "4 ") + " --swiglu", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "--ffn-hidden-size" in message and "--swiglu" in message


def test_group_query_attention_alone_is_one_query_group():
    # Megatron: --num-query-groups defaults to 1 (multi-query attention)
    assert parse(BASE + " --group-query-attention", 8, WHERE).kv_heads == 1
    assert parse(BASE + " --group-query-attention --num-query-groups 8", 8, WHERE).kv_heads == 8
    assert parse(BASE, 8, WHERE).kv_heads == 32


def test_query_groups_without_group_query_attention_are_ignored_as_megatron_ignores_them():
    # Megatron passes num_query_groups=None without --group-query-attention: every head keeps
    # its own keys and values, whatever --num-query-groups says (priced so, as it runs)
    assert parse(BASE + " --num-query-groups 8", 8, WHERE).kv_heads == parse(BASE, 8, WHERE).kv_heads == 32


def _refusal(args: str, gpus: int = 8) -> InvalidConfigurationError:
    with pytest.raises(InvalidConfigurationError) as info:
        parse(args, gpus, WHERE)
    assert str(info.value).startswith(WHERE + ": ") and "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize("extra", [
    # the embedding's output is scattered over tp along the sequence (mappings.py
    # _split_along_first_dim: First dimension of the tensor should be divisible by tensor parallel size)
    " --tensor-model-parallel-size 2 --sequence-parallel --seq-length 1023 --max-position-embeddings 1024",
    # with cp each rank holds seq / cp tokens, which sequence parallelism splits over tp
    " --tensor-model-parallel-size 4 --context-parallel-size 2 --sequence-parallel --seq-length 1020 "
    "--max-position-embeddings 1024",
])
def test_sequence_parallelism_over_a_sequence_tp_does_not_divide_is_refused(extra):
    error = _refusal(BASE + extra)
    assert error.rule == "sequence parallelism splits the sequence over tp"
    assert "--seq-length" in str(error) and "--tensor-model-parallel-size" in str(error)


@pytest.mark.parametrize("extra,gpus,rule", [
    # 64 heads over tp 3 on a sequence tp 3 does not divide either: Megatron's TransformerConfig
    # refuses the heads when the model is built, before any forward scatters the sequence
    (" --tensor-model-parallel-size 3 --sequence-parallel --seq-length 1024", 6, "heads divisible by tp"),
    # an MLP width tp does not divide: the parallel linear layers refuse it when built
    (" --tensor-model-parallel-size 4 --sequence-parallel --seq-length 1022 --max-position-embeddings 1024 "
     "--ffn-hidden-size 4098", 8, "linear layers split over tp"),
])
def test_a_layout_megatron_refuses_when_built_is_refused_for_that_before_the_sequence_split(extra, gpus, rule):
    # a sweep reports the first rule: one that sends the user to --sequence-parallel when turning it
    # off would only meet the next refusal misleads
    assert _refusal(BASE + extra, gpus).rule == rule


def test_sequence_parallelism_at_tp_1_takes_any_sequence():
    # Megatron turns sequence parallelism off at tp 1: nothing is split
    assert parse(BASE + " --sequence-parallel --seq-length 1023", 8, WHERE).seq == 1023


def test_squared_relu_with_swiglu_is_refused():
    # Megatron (argument_utils): if args.squared_relu: assert not args.swiglu
    error = _refusal(BASE + " --swiglu --squared-relu")
    assert "--squared-relu" in str(error) and "--swiglu" in str(error)


def test_recompute_activations_makes_the_granularity_selective_whatever_else_says():
    # Megatron: if args.recompute_activations: args.recompute_granularity = 'selective'
    assert parse(BASE + " --recompute-activations --recompute-granularity full", 8, WHERE).recompute == "selective"
    # ... and then refuses the full recomputation's method and count that came with it
    error = _refusal(BASE + " --recompute-activations --recompute-granularity full --recompute-method uniform "
                            "--recompute-num-layers 1")
    assert error.rule == "selective recomputation takes no method"


@pytest.mark.parametrize("extra, rule", [
    # Megatron-LM 2022-2023: if args.use_distributed_optimizer: assert args.DDP_impl == 'local'
    (" --fp16 --use-distributed-optimizer --DDP-impl torch", "distributed optimizer needs local DDP"),
    # TransformerConfig: moe_ffn_hidden_size is set but num_moe_experts is None (every layer dense)
    (" --moe-ffn-hidden-size 128", "expert width needs experts"),
    # --checkpoint-activations exits in every Megatron-LM that has the names that replaced it
    # (2021-08 on): it was priced as full recomputation, the newer flags unread
    (" --checkpoint-activations --recompute-granularity selective", "one release's recomputation names"),
    (" --checkpoint-activations --activations-checkpoint-method block", "one release's recomputation names"),
    (" --checkpoint-activations --recompute-activations", "one release's recomputation names"),
])
def test_what_no_megatron_runs_is_refused(extra, rule):
    base = BASE.replace(" --bf16", "") if "--fp16" in extra else BASE
    assert _refusal(base + extra).rule == rule


PRECISION_AWARE = " --use-distributed-optimizer --use-precision-aware-optimizer"


def test_bf16_main_gradients_are_reduced_in_bf16():
    # Megatron (2024-12 on): with --bf16, gradients are accumulated and reduced in fp32 only
    # "elif not args.accumulate_allreduce_grads_in_fp32 and args.main_grads_dtype == torch.float32";
    # --main-grads-dtype bf16 leaves them bf16, as --grad-reduce-in-bf16 does (half the bytes)
    assert parse(BASE + PRECISION_AWARE + " --main-grads-dtype bf16", 8, WHERE).grads_in_bf16
    assert parse(BASE + " --grad-reduce-in-bf16", 8, WHERE).grads_in_bf16
    assert not parse(BASE + " --main-grads-dtype fp32", 8, WHERE).grads_in_bf16
    assert not parse(BASE, 8, WHERE).grads_in_bf16


@pytest.mark.parametrize("extra, rule, words", [
    # Megatron: --main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set
    (PRECISION_AWARE + " --main-grads-dtype bf16 --accumulate-allreduce-grads-in-fp32",
     "fp32 gradient accumulation needs fp32 main gradients", "--main-grads-dtype"),
    # OptimizerConfig: main_grads_dtype can only be fp32 when not using precision-aware optimizer
    (" --main-grads-dtype bf16", "optimizer dtypes need the precision-aware optimizer", "--main-grads-dtype"),
    (" --use-distributed-optimizer --exp-avg-dtype bf16", "optimizer dtypes need the precision-aware optimizer",
     "--exp-avg-dtype"),
    # get_megatron_optimizer: --use-precision-aware-optimizer only supported with distributed optimizer
    (" --use-precision-aware-optimizer", "precision-aware optimizer needs the distributed optimizer",
     "--use-distributed-optimizer"),
])
def test_optimizer_precision_megatron_refuses(extra, rule, words):
    error = _refusal(BASE + extra)
    assert error.rule == rule and words in str(error)


@pytest.mark.parametrize("extra", [
    # 32 heads / tp 1 over cp 3: Transformer Engine's all-to-all (Ulysses) context parallelism
    # asserts "The number of attention heads needs to be divisible by CP size!"
    " --context-parallel-size 3 --cp-comm-type a2a --seq-length 1026 --max-position-embeddings 1026",
    # 32 heads / tp 4 = 8 a rank, over cp 2: fine; but 4 key/value groups / tp 4 = 1 a rank is not
    " --context-parallel-size 2 --cp-comm-type a2a --tensor-model-parallel-size 4 --group-query-attention "
    "--num-query-groups 4",
])
def test_ulysses_over_heads_cp_does_not_divide_is_refused(extra):
    gpus = 3 if "size 3" in extra else 8
    error = _refusal(BASE + extra, gpus)
    assert error.rule == "a2a context parallelism splits heads"
    assert "--context-parallel-size" in str(error) and "heads" in str(error)


def test_ulysses_over_heads_cp_divides_runs():
    job = parse(BASE + " --context-parallel-size 2 --cp-comm-type a2a --tensor-model-parallel-size 4", 8, WHERE)
    assert job.cp == 2 and job.cp_comm_type == "a2a"


@pytest.mark.parametrize("extra, words", [
    # Megatron's column- and row-parallel linear layers (and Transformer Engine's) split their
    # widths with divide(): "100 is not divisible by 8"
    (" --tensor-model-parallel-size 8 --ffn-hidden-size 100", "--ffn-hidden-size 100"),
    (" --tensor-model-parallel-size 8 --ffn-hidden-size 100 --swiglu", "--ffn-hidden-size 100"),
    # (experts without biases and with sequence parallelism: Megatron refuses biases in experts
    # split over tp, and MoE at tp > 1 without sequence parallelism, first)
    (" --tensor-model-parallel-size 8 --num-experts 8 --disable-bias-linear --sequence-parallel "
     "--moe-ffn-hidden-size 100", "--moe-ffn-hidden-size 100"),
    (" --tensor-model-parallel-size 8 --num-experts 8 --disable-bias-linear --sequence-parallel "
     "--moe-shared-expert-intermediate-size 100", "--moe-shared-expert-intermediate-size 100"),
])
def test_an_mlp_width_tp_does_not_divide_is_refused(extra, words):
    error = _refusal(BASE + extra)
    assert error.rule == "linear layers split over tp" and words in str(error)


def test_an_expert_width_that_only_the_expert_tp_must_divide_runs():
    # experts with their own tp 1: 100 need not divide by the dense layers' 8
    job = parse(BASE + " --tensor-model-parallel-size 8 --num-experts 8 --moe-ffn-hidden-size 100 "
                       "--expert-tensor-parallel-size 1 --sequence-parallel", 8, WHERE)
    assert job.moe_ffn == 100 and job.etp == 1


def test_distributed_optimizer_instances_shard_the_optimizer_over_fewer_ranks():
    # --num-distributed-optimizer-instances N: each copy of the optimizer is sharded over
    # dp x cp / N ranks (parallel_state: intra_partial_data_parallel_size), so a GPU holds N
    # times the optimizer state; it was accepted as a flag of small effect and priced at N = 1
    from simpy_astra.workloads.megatron.memory import parts_bytes

    args = BASE + " --use-distributed-optimizer"
    one = parts_bytes(parse(args, 8, WHERE))["optimizer"]
    two = parts_bytes(parse(args + " --num-distributed-optimizer-instances 2", 8, WHERE))["optimizer"]
    assert two == pytest.approx(2 * one)


def test_distributed_optimizer_instances_that_do_not_divide_dp_are_refused():
    # Megatron: Data parallel size should be divisible by partial DistOpt shard factor
    error = _refusal(BASE + " --use-distributed-optimizer --num-distributed-optimizer-instances 3")
    assert "--num-distributed-optimizer-instances 3" in str(error)


@pytest.mark.parametrize("words", ["--batch-size 4", "--batch-size=4"])
def test_batch_size_beside_micro_batch_size_is_refused(words):
    # --batch-size is the micro-batch of the Megatron-LM before micro-batches (no
    # --micro-batch-size there); every later one asserts args.batch_size is None
    error = _refusal(BASE + " " + words)
    assert error.rule == "one micro-batch name" and "--micro-batch-size alone" in str(error)
    assert parse(BASE.replace("--micro-batch-size", "--batch-size"), 8, WHERE).micro_batch == \
        parse(BASE, 8, WHERE).micro_batch
