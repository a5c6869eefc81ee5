"""Megatron-LM arguments this simulator does not model: which cannot change a step, which can,
and the values Megatron's argparse takes for them.

Today's Megatron-LM (``megatron/training/arguments.py``, 2026-08) generates many arguments from
its config dataclasses (``TransformerConfig`` with ``ModelParallelConfig``, ``TrainingConfig``,
``CheckpointConfig``, ``LoggerConfig``, ``ProfilingConfig``, ``DistributedInitConfig``,
``ValidationConfig``, ``TokenizerConfig``, ``FaultInjectorConfig``) through
``ArgumentGroupFactory``: a field ``x`` becomes ``--x``, a ``bool`` field that defaults to True
becomes ``--no-x`` and ``--disable-x``, an ``argparse.BooleanOptionalAction`` adds ``--no-x``. Those
that cannot change a training step's time (logging, profiling, checkpointing, data, tokenizer,
evaluation, inference, fault injection, and the scalars of a feature refused below) are accepted
as :data:`NO_TIMING_EFFECT`; those that can are refused naming what they do, never read
silently. A value outside the ``choices`` any Megatron-LM release offered is refused as
Megatron's argparse refuses it, though the flag itself is not priced.
"""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.errors import InputError, non_ascii
from simpy_astra.workloads.megatron import command_line
from simpy_astra.workloads.megatron.argparser import int_text_fix

#: arguments that cannot change a training step's time (in :data:`NO_TIMING_EFFECT`): today's
#: config-generated ones, then older releases' logging, tokenizer, data, learning-rate and
#: checkpoint-path ones
UNTIMED = frozenset("""
--no-inference-dynamic-batching-prefix-caching --no-inference-text-gen-server-logging
--no-inference-wandb-logging --no-inference-use-synchronous-zmq-collectives --no-inference-disable-ep-consensus
--cuda-graph-impl --inference-cuda-graph-scope --inference-fuse-tp-communication --inference-disable-triton-nvls-kernels
--inference-grouped-gemm-backend --inference-moe-disable-fused-quant-kernels --inference-moe-token-dispatcher-type
--no-rl-persist-cuda-graphs --no-rl-partial-rollouts --no-rl-inference-logprobs-is-correction
--no-rl-use-sequence-packing --no-rl-training-cuda-graphs --no-rl-offload-inference-model-weights-when-idle
--no-rl-verify-model-weights-swap --no-rl-skip-bos-token
--mup-width-mult --mup-base-hidden-size --mup-embedding-mult --mup-output-mult --mup-base-head-dim
--mup-attn-scale-power --dsa-indexer-loss-coeff --dsa-indexer-k-norm-epsilon --mhc-init-gating-factor
--no-log-loss-scale-to-tensorboard --disable-log-loss-scale-to-tensorboard --log-device-memory-used
--moe-routing-trace-path --moe-routing-trace-max-training-iters --moe-routing-trace-capture-logits
--moe-routing-trace-capture-hidden-states --moe-routing-trace-dump-weights
--pytorch-profiler-collect-shapes --pytorch-profiler-collect-callstack --pytorch-profiler-collect-chakra
--record-shapes --nvtx-ranges
--gpu-sniff-test-interval --exit-signal-handler-for-dataloader --exit-signal-handler-for-training
--no-manual-gc-eval --disable-manual-gc-eval
--save-activations-interval --save-tokens-per-expert-interval --save-wgrads-interval --save-dgrads-interval
--no-use-tokenizer-model-from-checkpoint-args --disable-use-tokenizer-model-from-checkpoint-args
--async-strategy --async-ckpt-cpu-priority --async-ckpt-io-priority --async-ckpt-use-cpu-shm
--ckpt-fully-parallel-load-exchange-algo --ckpt-fully-parallel-load-per-rank-objects
--ckpt-fully-parallel-save-process-group --ckpt-fully-parallel-load-process-group
--ckpt-pg-tensors-cache-path --ckpt-pg-tensors-cache-create
--no-ckpt-load-validate-sharding-integrity --disable-ckpt-load-validate-sharding-integrity
--no-strict-fsdp-dtensor-load --disable-strict-fsdp-dtensor-load
--no-save-tokenizer-assets --disable-save-tokenizer-assets --verify-integrity
--flight-recorder-dump-path --flight-recorder-trace-buffer-size --no-flight-recorder-dump-on-timeout
--disable-flight-recorder-dump-on-timeout --flight-recorder-include-stack-trace
--no-flight-recorder-include-only-active --disable-flight-recorder-include-only-active
--no-flight-recorder-extra-dump-on-exec --disable-flight-recorder-extra-dump-on-exec
--start-eval-at-iter --validation-set-names
--no-tokenizer-sentencepiece-ignore-extra-whitespaces --disable-tokenizer-sentencepiece-ignore-extra-whitespaces
--tokenizer-hf-no-use-fast --tokenizer-hf-no-include-special-tokens --null-tokenizer-eod-id
--null-tokenizer-pad-id --chat-template --use-gigatoken
--fault-injector-ranks --fault-injector-num-ranks --fault-injector-fault-types
--fault-injector-fault-probabilities --fault-injector-fault-delay --fault-injector-delay-start-iteration
--fault-injector-mtti-seconds --fault-injector-offset-seconds --fault-injector-seed
--logging-level --config-logger-dir --otel-enabled --otel-service-name --otel-span-groups
--no-barrier-with-level-1-timing --no-log-learnig-rate-to-tensorboard --no-one-logger --memory-snapshot-path
--trust-remote-code --tiktoken-pattern --tiktoken-num-special-tokens --tiktoken-special-tokens
--decoupled-lr --decoupled-min-lr --head-lr-mult
--override-lr-scheduler --override-opt-param-scheduler --override-ckpt-iteration
--adlr-autoresume --adlr-autoresume-interval --persistent-save-interval --use-persistent-ckpt-worker
--no-ckpt-fully-parallel-save --full-validation --multiple-validation-sets
--dataloader-defer-npy-index-mmap --dataloader-fast-cache-load --mmap-warmup --num-dataset-builder-threads
--mid-level-dataset-surplus --per-dataset-sequences-path --per-split-data-args-path
--fim-data --fim-rate --fim-spm-rate --fim-split-sample --fim-fragment-rate --fim-no-prefix
--fim-prefix-token --fim-middle-token --fim-suffix-token --fim-pad-token --fim-eod-token
""".split())

#: arguments (or prefixes) that cannot change a training step's time
NO_TIMING_EFFECT = (*sorted(UNTIMED),
    "--data-path", "--vocab-file", "--merge-file", "--tokenizer-", "--split", "--data-",
    "--train-data-path", "--valid-data-path", "--test-data-path", "--mock-data", "--num-workers",
    "--log", "--tensorboard", "--wandb", "--timing-log", "--save", "--load", "--no-load",
    "--finetune", "--pretrained-checkpoint", "--use-checkpoint", "--ckpt-", "--async-save",
    "--exit-", "--eval-", "--train-iters", "--train-samples", "--lr", "--min-lr", "--warmup",
    "--weight-decay", "--start-weight-decay", "--end-weight-decay", "--adam-",
    "--loss-scale-window", "--initial-loss-scale", "--min-loss-scale",
    "--hysteresis", "--seed", "--init-method",
    "--distributed-backend", "--distributed-timeout", "--local-rank", "--local_rank",
    "--use-cpu-initialization", "--no-async-tensor-model-parallel-allreduce-check",
    "--dataloader-type", "--reset-", "--eod-mask-loss", "--override-opt_param-scheduler", "--rampup-batch-size", "--fp16-lm-cross-entropy",
    "--rotary-", "--norm-epsilon", "--layernorm-epsilon",
    "--apply-layernorm-1p", "--init-method-std", "--use-mcore-models",
    "--num-layers-per-stage", "--manual-gc", "--no-mmap-bin-files",
    "--profile", "--record-memory-history",
    "--check-for-nan-in-loss-and-grad",
    "--DDP-bucket", "--kv-lora",
    "--fp8-margin", "--fp8-interval", "--fp8-amax-", "--dist-ckpt-", "--auto-detect-ckpt-format", "--non-persistent-",
    "--no-save-", "--no-initialization", "--vocab-extra-ids",
    "--no-mask-", "--object-storage-", "--enable-one-logger", "--one-logger-", "--app-tag-run-",
    "--use-dist-ckpt", "--retro-", "--trace-",
    "--structured-logs", "--straggler-", "--result-rejected-", "--inprocess-", "--rerun-",
    "--error-injection-", "--enable-ft-package", "--calc-ft-timeouts", "--legacy-tokenizer",
)

#: timing arguments whose effect on a step is under about 1% of it, accepted and not modelled
#: (``generate megatron --help`` lists them)
SMALL_EFFECT = (
    "--defer-embedding-wgrad-compute", "--wgrad-deferral-limit",
    "--align-param-gather", "--no-align-param-gather", "--manual-gc-interval",
    "--nccl-communicator-config-path",
    "--no-create-attention-mask-in-dataloader", "--tp-comm-overlap-cfg", "--tp-comm-bootstrap-backend",
    "--batch-p2p-communication", "--no-persist-layer-norm",
    "--check-weight-hash-across-dp-replicas-interval", "--log-num-zeros-in-grad", "--bias-gelu-fusion",
    "--masked-softmax-fusion", "--bias-dropout-fusion", "--squared-relu",
    "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-z-loss-coeff", "--moe-router-dtype",
    "--moe-permute-fusion", "--moe-router-pre-softmax", "--moe-input-jitter-eps", "--moe-router-score-function",
    "--moe-router-enable-expert-bias", "--moe-router-bias-update-rate", "--moe-router-topk-scaling-factor",
    "--moe-router-fusion", "--moe-per-layer-logging",
    "--moe-use-legacy-grouped-gemm", "--moe-shared-expert-overlap", "--empty-unused-memory-level",
)

#: what each family of today's arguments that can change a step does (refused by name)
#: why CUDA graphs are refused (docs/megatron.md, "The host")
CUDA_GRAPHS = "CUDA graphs: their memory pools are not priced; the host time they save binds on no public row"

_TIMED = {
    "generalized tensor parallelism (weights sharded further and all-gathered on every pass)":
        "--tensor-parallel-num-weight-shards --expert-tensor-parallel-num-weight-shards --gtp-remat-opt-in-modules",
    "hybrid context parallelism (samples of uneven length balanced over dp x cp)":
        "--hybrid-context-parallel --max-seqlen-per-dp-cp-rank",
    "a tuning of --tp-comm-overlap's overlaps": "--no-tp-comm-bulk-wgrad --no-tp-comm-bulk-dgrad "
        "--no-tp-comm-overlap-ag --no-tp-comm-overlap-rs --no-tp-comm-split-ag --no-tp-comm-split-rs",
    "expert-parallel communication overlapped with compute": "--overlap-dispatch-backward-with-experts-wgrad "
        "--ep-overlap-early-attn-memory-release --high-priority-a2a-comm-stream",
    "multi-token prediction": "--mtp-standalone --mtp-use-repeated-layer --mtp-detach-heads --mtp-hsm "
        "--mtp-hybrid-override-pattern",
    "activation offloading to the host": "--cpu-offloading-retain-pinned-cpu-buffers "
        "--fine-grained-activation-offloading --offload-modules --min-offloaded-tensor-size "
        "--delay-offload-until-cuda-graph --delta-offload-bytes-across-pp-ranks --activation-offload-fraction "
        "--fine-grained-offloading-max-inflight-offloads",
    "a chosen FlashAttention version's kernels": "--flash-attention-version",
    "a gate on the attention output (one more projection)": "--attention-output-gate",
    "experimental attention variants (gated delta net, DeepSeek sparse attention)":
        "--experimental-attention-variant --dsa-indexer-n-heads --dsa-indexer-head-dim --dsa-indexer-topk "
        "--dsa-indexer-topk-freq --dsa-indexer-skip-topk-offset --dsa-indexer-use-sparse-loss --dsa-kernel-backend "
        "--dsa-indexer-rope-interleaved --no-dsa-indexer-rotate-activation --disable-dsa-indexer-rotate-activation "
        "--no-dsa-indexer-scoring-relu --disable-dsa-indexer-scoring-relu --dsa-indexer-k-norm-fp32",
    "linear attention layers (gated delta net / product)": "--linear-conv-kernel-dim --linear-key-head-dim "
        "--linear-value-head-dim --linear-num-key-heads --linear-num-value-heads --gdp-num-householder "
        "--gdp-cutedsl-kernel --gdp-num-chunk-states-to-recompute",
    "muP (multipliers on the embeddings and the logits)": "--use-mup",
    "fused kernels other than the modelled ones": "--fused-residual-rmsnorm --use-transformer-engine-op-fuser",
    "FP8 weight gradients or output projections": "--disable-fp8-wgrad --fp8-output-proj",
    "Kitchen's quantized attention": "--use-kitchen-attention --kitchen-attention-backend",
    "variants of the mixture of experts' kernels, routing and dispatch": "--moe-shared-expert-gate "
        "--use-grouped-gemm-for-shared-expert --moe-shared-expert-glu-interleave-size --moe-enable-routing-replay "
        "--moe-router-quantile-balancing-ema --moe-router-force-biased --use-grouped-gemm-for-dense-mlp "
        "--moe-use-grouped-tensor --moe-single-grouped-weight --moe-single-grouped-bias "
        "--moe-permute-fusion-into-hybridep --moe-hybridep-pad-uneven-dispatch-inputs --moe-flex-dispatcher-num-sms "
        "--moe-hybridep-num-blocks-permute --moe-hybridep-num-blocks-unpermute --moe-hybridep-num-sms-preprocessing "
        "--moe-ncclep-zero-copy --moe-dispatch-fwd-dtype --moe-combine-bwd-dtype --moe-mlp-glu-interleave-size "
        "--moe-expert-rank-capacity-factor --moe-paged-stash --moe-paged-stash-page-size "
        "--moe-paged-stash-buffer-size-factor-cuda --moe-paged-stash-buffer-size-factor-cpu",
    "manifold-constrained hyper-connections": "--enable-mhc-connections --mhc-num-residual-streams "
        "--mhc-sinkhorn-iterations --mhc-recompute-layer-num",
    "the embedding's output not cloned": "--disable-clone-scatter-output-in-embedding",
    "batch-invariant kernels": "--batch-invariant-mode --batch-invariant-backend",
    "the MLP run in chunks": "--mlp-chunks-for-training",
    "a batch size that changes during training (Megatron then ignores --global-batch-size); give "
    "--global-batch-size": "--step-batch-size-schedule",
    "PyTorch's JIT fusions turned off (bias-GeLU, bias-dropout run unfused)": "--disable-jit-fuser",
    "a vocabulary not padded to --make-vocab-size-divisible-by x tp": "--no-pad-vocab-size --disable-pad-vocab-size",
    CUDA_GRAPHS: "--enable-cuda-graph --external-cuda-graph",
}

#: today's arguments that can change a step's time and are not modelled -> what they are
NOT_MODELLED = {flag: what for what, flags in _TIMED.items() for flag in flags.split()}

#: the values Megatron's argparse takes for an accepted, unpriced argument: (type, choices), the
#: union of every release's choices (e.g. --lr-decay-style exponential, 2020; --ckpt-format zarr, to 2025)
CHOICES: dict[str, tuple[type, tuple]] = {
    "--ckpt-convert-format": (str, ("torch", "torch_dist", "zarr")),
    "--ckpt-format": (str, ("torch", "torch_dist", "zarr", "torch_dcp", "fsdp_dtensor")),
    "--data-parallel-sharding-strategy": (str, ("no_shard", "optim", "optim_grads", "optim_grads_params")),
    "--dataloader-type": (str, ("single", "cyclic", "external")),
    "--dist-ckpt-strictness": (str, ("assume_ok_unexpected", "log_unexpected", "log_all", "raise_unexpected",
                                     "raise_all", "return_unexpected", "return_all", "ignore_all")),
    "--distributed-backend": (str, ("nccl", "gloo")),
    "--empty-unused-memory-level": (int, (0, 1, 2)),
    "--error-injection-type": (str, ("correct_result", "transient_error", "persistent_error")),
    "--fp8-amax-compute-algo": (str, ("most_recent", "max")),
    "--inprocess-granularity": (str, ("node", "rank")),
    "--lr-decay-style": (str, ("constant", "linear", "cosine", "exponential", "inverse-square-root", "WSD")),
    "--lr-wsd-decay-style": (str, ("exponential", "linear", "cosine", "minus_sqrt")),
    "--moe-router-dtype": (str, ("fp32", "fp64")),
    "--moe-router-load-balancing-type": (str, ("aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn",
                                               "quantile_balancing", "none")),
    "--moe-router-score-function": (str, ("softmax", "sigmoid", "sqrtsoftplus")),
    "--non-persistent-ckpt-type": (str, ("global", "local", "in_memory")),
    "--non-persistent-local-ckpt-algo": (str, ("fully_parallel", "atomic")),
    "--rerun-mode": (str, ("disabled", "validate_results", "report_stats")),
    "--timing-log-level": (int, (0, 1, 2)),
    "--timing-log-option": (str, ("max", "minmax", "all")),
    "--tokenizer-type": (str, ("BertWordPieceLowerCase", "BertWordPieceCase", "GPT2BPETokenizer",
                               "SentencePieceTokenizer", "GPTSentencePieceTokenizer", "NullTokenizer",
                               "Llama2Tokenizer", "Llama3Tokenizer", "MistralTokenizer", "HuggingFaceTokenizer",
                               "TikTokenizer", "MultimodalTokenizer", "NullMultimodalTokenizer", "SFTTokenizer")),
    "--tp-comm-bootstrap-backend": (str, ("nccl", "mpi", "gloo")),
    "--weight-decay-incr-style": (str, ("constant", "linear", "cosine")),
    "--async-strategy": (str, ("nvrx", "mcore")),
    "--ckpt-fully-parallel-load-exchange-algo": (str, ("broadcast", "gather_rounds", "gather_object")),
    "--ckpt-fully-parallel-save-process-group": (str, ("dp", "ep_dp")),
    "--ckpt-fully-parallel-load-process-group": (str, ("dp", "ep_dp")),
    "--inference-cuda-graph-scope": (str, ("none", "layer", "block")),
    "--cuda-graph-impl": (str, ("none", "local", "transformer_engine", "full_iteration")),
    "--inference-grouped-gemm-backend": (str, ("auto", "torch", "te", "flashinfer", "vllm")),
    "--inference-moe-token-dispatcher-type": (str, ("nccl", "nvls")),
}

#: the numbers among :data:`UNTIMED` (``int`` / ``float`` fields of today's config classes)
_NUMBERS = {flag: kind for kind, flags in ((int, """--async-ckpt-cpu-priority --async-ckpt-io-priority
--fault-injector-delay-start-iteration --fault-injector-num-ranks --fault-injector-seed
--flight-recorder-trace-buffer-size --gpu-sniff-test-interval --moe-routing-trace-max-training-iters
--mup-base-hidden-size --null-tokenizer-eod-id --null-tokenizer-pad-id --save-activations-interval
--save-dgrads-interval --save-tokens-per-expert-interval --save-wgrads-interval --start-eval-at-iter"""),
    (float, """--dsa-indexer-k-norm-epsilon --dsa-indexer-loss-coeff --fault-injector-fault-delay
--fault-injector-mtti-seconds --fault-injector-offset-seconds --mhc-init-gating-factor --mup-attn-scale-power
--mup-base-head-dim --mup-embedding-mult --mup-output-mult --mup-width-mult""")) for flag in flags.split()}


def number(text: str, flag: str, kind: Callable[[str], int | float], where: str):
    """``text``, a value of the unmodelled ``flag``, read by ``kind`` (``int`` or ``float``) as
    Megatron's argparse reads it."""
    try:
        return kind(text)
    except ValueError:
        command_line.unexpanded(text, f"{flag} {text}", where)
        fix = (int_text_fix(text) if kind is int else "") or non_ascii(text)  # 1e-4 pasted with a minus sign (U+2212)
        raise InputError(f"{where}: argument {flag}: invalid {kind.__name__} value: {text!r}{fix}") from None


#: a value of an accepted argument that does change a step's time, and what it is: the rest of
#: the argument's values do not (``--distributed-backend gloo`` ran timed as NCCL's collectives)
TIMED_VALUES = {("--distributed-backend", "gloo"): "gloo's collectives, staged through the hosts; this simulator "
                                                    "times NCCL's, the default nccl",
                **{("--cuda-graph-impl", impl): CUDA_GRAPHS for impl in ("local", "transformer_engine", "full_iteration")}}


def check_values(others: dict[str, list[str]], where: str) -> None:
    """Refuse a value of an accepted, unpriced argument (``others``: flag -> its values) that
    Megatron's argparse refuses: not of the argument's type, or outside its :data:`CHOICES`;
    or one that would change the step's time (:data:`TIMED_VALUES`)."""
    for flag, values in others.items():
        for text in values[-1:]:  # argparse keeps the later
            if (flag, text) in TIMED_VALUES:
                raise InputError(f"{where}: {flag} {text} is not modelled ({TIMED_VALUES[flag, text]}); remove it "
                                 f"(see simpy-astra generate megatron --help)")
        if flag not in CHOICES and flag not in _NUMBERS:
            continue
        kind, choices = CHOICES.get(flag) or (_NUMBERS[flag], None)
        for text in values:
            value = number(text, flag, kind, where)
            if choices is not None and value not in choices:
                command_line.unexpanded(text, f"{flag} {text}", where)
                raise InputError(f"{where}: argument {flag}: invalid choice {text!r} (Megatron-LM takes "
                                 f"{', '.join(map(str, choices))})")
