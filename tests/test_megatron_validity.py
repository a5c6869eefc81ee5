"""Megatron-LM's validity rules that the front end lacked (issue 48, item 6), one test a
rule: a command line Megatron-LM refuses is refused with its reason, and where Megatron
takes an argument and changes or ignores it, the step runs as Megatron runs it and says so.
Each rule's source is named in its test; the valid neighbour of each refused line still runs."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.generator import job_and_gpu

BASE = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload"


def _gpu(name: str | None = None) -> dict:
    """The 80 GB A100 preset's GPU, renamed to ``name`` when given."""
    # the preset's figures under another GPU's name (the rules read only its name)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu
    return {**gpu, "name": name} if name else gpu


def test_grouped_gemm_needs_compute_capability_8():
    """``validate_args``: ``if args.moe_grouped_gemm: assert torch.cuda.get_device_capability()[0]
    >= 8, "Unsupported compute capability for GroupedGEMM kernels."``: a V100 (7.0) stops
    Megatron, an A100 (8.0) runs it, and a GPU of no known generation is not refused."""
    args = BASE + " --num-experts 4 --moe-grouped-gemm --disable-bias-linear"
    with pytest.raises(InvalidConfigurationError, match="compute capability") as info:
        job_and_gpu({"args": args, "gpus": 8, "gpu": _gpu("V100-SXM2-32GB")}, WHERE)
    assert info.value.rule == "grouped GEMM needs compute capability 8"
    assert str(info.value).startswith(f"{WHERE}.args: --moe-grouped-gemm on V100-SXM2-32GB")
    job, _ = job_and_gpu({"args": args, "gpus": 8, "gpu": _gpu()}, WHERE)
    assert job.moe_grouped_gemm
    job_and_gpu({"args": args, "gpus": 8, "gpu": _gpu("my-accelerator")}, WHERE)
    job_and_gpu({"args": BASE + " --num-experts 4 --disable-bias-linear", "gpus": 8,
                 "gpu": _gpu("V100-SXM2-32GB")}, WHERE)  # experts one after another: any GPU


def test_attention_backend_is_transformer_engines_and_megatrons_own_layers_ignore_it():
    """``--attention-backend`` sets Transformer Engine's kernel choice only (``LanguageModule``:
    ``NVTE_FLASH_ATTN``/``NVTE_FUSED_ATTN``/``NVTE_UNFUSED_ATTN``); with ``--transformer-impl
    local`` the layer spec's core attention is Megatron's own ``DotProductAttention``, unfused,
    whatever the flag says: Megatron takes it without a word, the step runs unfused and says so."""
    local = BASE + " --transformer-impl local"
    job = parse(local + " --attention-backend flash", 8, WHERE)
    assert not job.flash_attention and job.flash_attention == parse(local, 8, WHERE).flash_attention
    assert any("--attention-backend flash changes nothing with Megatron's own layers" in w for w in job.warnings)
    engine = parse(BASE + " --transformer-impl transformer_engine --attention-backend flash", 8, WHERE)
    assert engine.flash_attention and not engine.warnings
    assert not parse(BASE + " --attention-backend unfused", 8, WHERE).flash_attention


@pytest.mark.parametrize("extra,rule,said", [
    (" --context-parallel-size 2", "legacy models take no context parallelism",
     "Context parallelism is not supported in legacy models."),
    (" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather",
     "legacy models take no parameter-gather overlap", "--overlap-param-gather only supported with MCore models"),
    (" --position-embedding-type rope --rotary-interleaved", "legacy models take only their own arguments",
     "--rotary-interleaved is not supported in legacy models."),
    (" --decoupled-lr 1e-4", "legacy models take only their own arguments",
     "--decoupled-lr and --decoupled-min-lr is not supported in legacy models."),
])
def test_legacy_models_refuse_what_only_megatron_core_has(extra, rule, said):
    """``--use-legacy-models`` exists from 2024-05 (9ad1a56f82, Megatron-Core's model made the
    default) to 2026-05 (39ec5ebeb4, the legacy GPT removed), and every ``validate_args`` of
    those releases refuses context parallelism, the overlapped parameter gather, interleaved
    rotary embeddings and decoupled learning rates beside it. Without the flag each line runs."""
    with pytest.raises(InvalidConfigurationError) as info:
        parse(BASE + extra + " --use-legacy-models", 8, WHERE)
    assert info.value.rule == rule and said in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"{WHERE}: --use-legacy-models with ")
    parse(BASE + extra, 8, WHERE)
    parse(BASE + LEGACY_LOCAL, 8, WHERE)


#: a legacy model Megatron runs: Megatron's own layers, saved as torch checkpoints
LEGACY_LOCAL = " --use-legacy-models --ckpt-format torch --transformer-impl local"


@pytest.mark.parametrize("extra,rule,said", [
    (" --transformer-impl local", "legacy models save torch checkpoints", "--ckpt-format torch_dist (the default)"),
    (" --transformer-impl local --ckpt-format torch_dist", "legacy models save torch checkpoints",
     "legacy model format only supports the 'torch' checkpoint format."),
    (" --ckpt-format torch", "legacy Transformer Engine layers need an fp32 softmax",
     "TransformerEngine only supports softmax compute in FP32."),
    (" --ckpt-format torch --apply-query-key-layer-scaling", "legacy Transformer Engine layers need an fp32 softmax",
     "you must be using fp16."),
])
def test_legacy_models_save_torch_checkpoints_and_need_an_fp32_softmax_in_te_layers(extra, rule, said):
    """``validate_args`` (2025-01 on; from 2024-08 through the default ``torch_dist`` format's
    ``use_dist_ckpt``): ``assert args.ckpt_format == "torch"`` beside ``--use-legacy-models``.
    The legacy ``ParallelTransformer`` builds Transformer Engine's ``TransformerLayer`` unless
    ``--transformer-impl local`` and asserts ``config.attention_softmax_in_fp32`` for it, which
    is ``--attention-softmax-in-fp32`` (default off) or query-key layer scaling, which it
    then takes only in fp16 (``NVTE_APPLY_QK_LAYER_SCALING`` scales fp16 scores only)."""
    with pytest.raises(InvalidConfigurationError) as info:
        parse(BASE + " --use-legacy-models" + extra, 8, WHERE)
    assert info.value.rule == rule and said in str(info.value) and "\n" not in str(info.value)
    parse(BASE + extra, 8, WHERE)
    parse(BASE + " --use-legacy-models --ckpt-format torch --attention-softmax-in-fp32", 8, WHERE)


def test_legacy_model_experts_are_not_modelled():
    """The legacy model's experts are ``SwitchMLP`` (sinkhorn top-1) with its own layers and
    none at all in Transformer Engine's (``TransformerLayer`` takes no experts): refused by name."""
    with pytest.raises(InputError, match="SwitchMLP") as info:
        parse(BASE + LEGACY_LOCAL + " --num-experts 4", 8, WHERE)
    assert str(info.value).startswith(f"{WHERE}: --use-legacy-models with --num-experts 4")


def test_model_parallel_size_is_the_tensor_parallel_size_of_before_pipelines():
    """``--model-parallel-size`` was the tensor-parallel size until Megatron-LM added pipelines
    (2020-12); every release with ``--tensor-model-parallel-size`` stops on it (``validate_args``:
    ``assert args.model_parallel_size is None, '--model-parallel-size is no longer valid, use
    --tensor-model-parallel-size instead'``): both names are refused with that reason."""
    with pytest.raises(InvalidConfigurationError) as info:
        parse(BASE + " --model-parallel-size 2 --tensor-model-parallel-size 2", 8, WHERE)
    assert info.value.rule == "one tensor-parallel name"
    assert str(info.value) == (f"{WHERE}: --model-parallel-size with --tensor-model-parallel-size: no Megatron-LM "
                               f"takes both (Megatron, since 2020-12: --model-parallel-size is no longer valid, use "
                               f"--tensor-model-parallel-size instead); give --tensor-model-parallel-size alone")
