"""The Megatron-LM arguments this simulator models: their parser (``simpy-astra generate megatron
--help`` prints it), built once for reading, and the values each can take."""

from __future__ import annotations

import argparse
import functools
import math

from simpy_astra.errors import non_ascii
from simpy_astra.workloads.megatron.argparser import Parser, int_text_fix
from simpy_astra.workloads.megatron.layer_pattern import moe_layer_freq

#: GPT-2's BPE vocabulary, the size Megatron reads from a ``--vocab-file`` of that tokenizer
GPT2_VOCAB = 50257

#: bytes an element of the optimizer state dtypes Megatron offers
STATE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

def _bool(parser: argparse.ArgumentParser, *names: str, help: str) -> None:  # noqa: A002
    parser.add_argument(*names, action="store_true", default=False, help=help)


def parser() -> Parser:
    """The modelled arguments (``simpy-astra generate megatron --help`` prints them)."""
    p = Parser(prog="simpy-astra generate megatron", allow_abbrev=False, add_help=False,
                usage=argparse.SUPPRESS, description="Megatron-LM pretrain_gpt.py arguments that change a "
                                                     "step's time.")
    i = p.add_argument
    i("--num-layers", type=int, required=True, help="transformer layers")
    i("--hidden-size", type=int, required=True, help="model width h")
    i("--num-attention-heads", type=int, required=True, help="attention heads")
    i("--kv-channels", type=int, default=None, help="width of one head (default h / heads)")
    i("--num-query-groups", type=int, default=None,
      help="key/value heads with --group-query-attention (default 1 with it; ignored without it, as in Megatron)")
    i("--ffn-hidden-size", type=int, default=None,
      help="MLP width (default 4h; with --swiglu 8h/3 cut to a multiple of 64)")
    _bool(p, "--swiglu", help="SwiGLU MLP (three weight matrices)")
    i("--seq-length", "--encoder-seq-length", dest="seq_length", type=int, required=True,
      help="tokens per sample")
    i("--max-position-embeddings", type=int, default=None,
      help="rows of the learned position table; at least --seq-length (Megatron checks it)")
    i("--position-embedding-type", default="learned_absolute",
      choices=["learned_absolute", "rope", "yarn", "mrope", "relative", "none"],
      help="learned_absolute (default) keeps a position table of --max-position-embeddings rows; "
           "the others none")
    _bool(p, "--use-rotary-position-embeddings", help="rope (its 2023 name)")
    _bool(p, "--no-rope-fusion", help="rotary embeddings applied by PyTorch's separate kernels (a copy of the "
                                      "rotated half, two products, a sum, a concatenation), not one fused kernel")
    _bool(p, "--qk-layernorm", help="a layer norm over each head of the queries and of the keys")
    i("--normalization", default="LayerNorm", choices=("LayerNorm", "RMSNorm"),
      help="LayerNorm (default: a scale and a bias a channel) or RMSNorm (a scale only)")
    _bool(p, "--no-position-embedding", help="no position table (2023-02 to 07; since, refused unless rope)")
    i("--vocab-size", type=int, default=None, help=f"vocabulary (default GPT-2's {GPT2_VOCAB})")
    i("--attention-dropout", type=float, default=0.1,
      help="dropout on the attention probabilities (default 0.1; at 0 PyTorch runs no dropout "
           "kernel in the unfused attention and keeps no mask)")
    i("--hidden-dropout", type=float, default=0.1,
      help="dropout after attention, the MLP and the embedding (default 0.1; at 0 no 1-byte masks are written "
           "or kept)")
    i("--make-vocab-size-divisible-by", type=int, default=128,
      help="vocabulary padded to a multiple of this x tp (default 128)")
    i("--micro-batch-size", "--batch-size", dest="micro_batch_size", type=int, required=True,
      help="samples per micro-batch per data-parallel replica")
    i("--global-batch-size", type=int, default=None, help="samples per step (default micro-batch x dp)")
    i("--tensor-model-parallel-size", type=int, default=1, help="tensor parallelism tp")
    i("--pipeline-model-parallel-size", type=int, default=1, help="pipeline stages pp")
    i("--context-parallel-size", type=int, default=1, help="context parallelism cp")
    i("--num-layers-per-virtual-pipeline-stage", type=int, default=None,
      help="interleaved 1F1B: layers per model chunk (2021 name)")
    i("--virtual-pipeline-model-parallel-size", "--num-virtual-stages-per-pipeline-rank",
      dest="virtual_pipeline_model_parallel_size", type=int, default=None,
      help="interleaved 1F1B: model chunks per stage")
    i("--decoder-first-pipeline-num-layers", type=int, default=None,
      help="uneven pipeline: layers of the first stage (the other stages share the rest evenly)")
    i("--decoder-last-pipeline-num-layers", type=int, default=None,
      help="uneven pipeline: layers of the last stage")
    _bool(p, "--account-for-embedding-in-pipeline-split",
          help="the embedding counts as a layer of the split (the first chunk builds one layer fewer)")
    _bool(p, "--account-for-loss-in-pipeline-split",
          help="the loss counts as a layer of the split (the last chunk builds one layer fewer)")
    i("--pipeline-model-parallel-layout", default=None,
      help='layers of each chunk in model order, e.g. "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL" (E embedding, '
           't layer, L loss, | between chunks, *N repeats, commas cosmetic)')
    _bool(p, "--fp16", help="fp16 weights, activations and messages")
    _bool(p, "--bf16", help="bf16 (gradients reduced in fp32)")
    i("--fp8-format", default=None, choices=("e4m3", "hybrid"), help="fp8 GEMMs (Transformer Engine)")
    i("--fp8-recipe", default="delayed", choices=("delayed", "tensorwise", "mxfp8", "blockwise", "custom"),
      help="fp8 scaling: delayed (default; scale from the amax history) or tensorwise (current "
           "scaling: each cast first reads its tensor for the amax); mxfp8, blockwise, custom are not "
           "modelled")
    _bool(p, "--checkpoint-activations", help="full recomputation of every layer (2021 name)")
    i("--checkpoint-num-layers", type=int, default=1, help="layers per checkpoint (2021 name)")
    i("--activations-checkpoint-method", choices=("uniform", "block"), default=None,
      help="full recomputation: which layers (Megatron-LM of 2021-08 to 2022-05)")
    i("--activations-checkpoint-num-layers", type=int, default=1,
      help="layers per recompute unit / block with --activations-checkpoint-method")
    i("--recompute-granularity", choices=("full", "selective"), default=None,
      help="full: recompute whole layers; selective: the attention core only")
    i("--recompute-method", choices=("uniform", "block"), default=None,
      help="which layers full recomputation covers")
    i("--recompute-num-layers", type=int, default=None, help="layers per recompute unit / block")
    _bool(p, "--recompute-activations", help="selective recomputation (older name)")
    _bool(p, "--distribute-saved-activations",
          help="full recomputation: each unit's input kept as 1/tp, all-gathered over tp to recompute it")
    _bool(p, "--distribute-checkpointed-activations", help="--distribute-saved-activations (2021 name)")
    _bool(p, "--sequence-parallel", help="layer norm and dropout split over tp (reduce-scatter + all-gather)")
    i("--DDP-impl", dest="ddp_impl", choices=("local", "torch"), default=None,
      help="2021: local syncs after the backward, torch overlaps buckets with it")
    _bool(p, "--use-distributed-optimizer", help="gradients reduce-scattered, parameters all-gathered")
    i("--num-distributed-optimizer-instances", type=int, default=1,
      help="with --use-distributed-optimizer: copies of the optimizer, each sharded over dp x cp / N ranks")
    _bool(p, "--fp8-param-gather", help="with --fp8-format and the distributed optimizer: the linear layers' "
                                         "weights kept and all-gathered in FP8 (one byte a weight, no bf16 copy)")
    _bool(p, "--grad-reduce-in-bf16", help="with --bf16: the gradient buffer and its data-parallel reduction "
                                           "in bf16, not fp32 (half the bytes)")
    _bool(p, "--use-precision-aware-optimizer", help="Transformer Engine's FusedAdam with the dtypes below "
                                                       "(with bf16, 2 B a master weight: the 16 bits bf16 lacks)")
    i("--main-grads-dtype", choices=("fp32", "bf16"), default="fp32",
      help="with the precision-aware optimizer and --bf16: bf16 gradient buffer and reduction")
    i("--main-params-dtype", choices=("fp32", "fp16"), default="fp32", help="the precision-aware optimizer's master")
    i("--exp-avg-dtype", choices=tuple(STATE_BYTES), default="fp32", help="the precision-aware Adam's first moment")
    i("--exp-avg-sq-dtype", choices=tuple(STATE_BYTES), default="fp32", help="its second moment")
    _bool(p, "--accumulate-allreduce-grads-in-fp32", help="with --fp16: gradients accumulated and reduced in fp32 "
                                                          "(4 B each, not 2; bf16 always is, unless --grad-reduce-in-bf16)")
    _bool(p, "--overlap-grad-reduce", help="gradient sync overlapped with the backward")
    i("--ddp-bucket-size", type=int, default=None,
      help="with --overlap-grad-reduce: parameters a gradient bucket (default max(40M, 1M x dp x cp))")
    _bool(p, "--overlap-param-gather", help="parameter all-gather overlapped with the forward")
    _bool(p, "--no-check-for-nan-in-loss-and-grad", help="Megatron-Core's DDP skips each gradient bucket's norm "
                                                          "(its NaN check before the bucket's sync)")
    _bool(p, "--ddp-average-in-collective", help="the sync averages (NCCL's AVG): no in-place 1/(dp x cp) scaling "
                                                 "of each gradient bucket before it")
    _bool(p, "--calculate-per-token-loss", help="gradients summed, not averaged: no in-place scaling of the buckets")
    _bool(p, "--no-align-grad-reduce", "--disable-align-grad-reduce", "--no-delay-grad-reduce",
          help="1F1B: a later pipeline stage starts its gradient sync in its last backward, before its last "
               "gradient send (by default after it; r0.8: --no-delay-grad-reduce)")
    _bool(p, "--align-grad-reduce", help="(the default)")
    _bool(p, "--tp-comm-overlap", help="tensor-parallel communication overlapped with GEMMs")
    _bool(p, "--disable-bias-linear", help="linear layers without biases (Llama): no bias-gradient kernels")
    _bool(p, "--cross-entropy-loss-fusion", help="the vocabulary-parallel cross entropy as Megatron-Core's fused "
                                                 "kernels (--cross-entropy-fusion-impl native)")
    i("--cross-entropy-fusion-impl", choices=("native", "te"), default="native",
      help="which fused cross entropy (Megatron-LM refuses te with --cross-entropy-loss-fusion)")
    _bool(p, "--no-async-tensor-model-parallel-allreduce",
          help="input-gradient all-reduce not overlapped with the weight-gradient GEMM")
    _bool(p, "--no-gradient-accumulation-fusion", help="weight gradients added to main_grad by a kernel")
    _bool(p, "--use-flash-attn", help="fused attention kernel (FlashAttention)")
    i("--transformer-impl", choices=("local", "transformer_engine"), default=None,
      help="transformer_engine: fused attention (flash / cuDNN) unless --attention-backend unfused")
    _bool(p, "--use-legacy-models", help="the GPT model from before Megatron-Core (2024-05 to 2026-05), its layers "
          "by --transformer-impl")
    i("--cp-comm-type", nargs="+", choices=("p2p", "allgather", "a2a", "a2a+p2p"), default=["p2p"],
      help="context parallelism: K/V ring beside each chunk's attention (p2p), exposed allgather / a2a, "
           "or a2a inside groups and the ring across them (a2a+p2p)")
    i("--hierarchical-context-parallel-sizes", nargs="+", type=int, default=None,
      help="a2a+p2p: the all-to-all group's size, then the ring's (their product is cp)")
    i("--attention-backend", choices=("flash", "fused", "unfused", "local", "auto"), default=None,
      help="Megatron-Core's attention kernel choice")
    _bool(p, "--no-masked-softmax-fusion", help="scale, mask and softmax as separate kernels")
    _bool(p, "--attention-softmax-in-fp32", help="unfused softmax: mask and softmax in fp32 (a copy each way)")
    _bool(p, "--apply-query-key-layer-scaling", help="unfused softmax: scores scaled by the layer number, in fp32 "
                                                     "(the default of 2021 names)")
    _bool(p, "--no-query-key-layer-scaling", help="2021: no layer-number scaling (softmax in fp16 unless "
                                                  "--attention-softmax-in-fp32)")
    _bool(p, "--no-bias-gelu-fusion", help="bias and GeLU as separate kernels")
    _bool(p, "--no-bias-swiglu-fusion", help="with --swiglu: bias, SiLU and the product as separate kernels "
                                             "(the SiLU's output kept for the backward)")
    _bool(p, "--no-bias-dropout-fusion", help="bias, dropout and residual add as separate kernels")
    _bool(p, "--no-scatter-gather-tensors-in-pipeline", help="pipeline sends carry the whole activation")
    _bool(p, "--no-overlap-p2p-communication", help="interleaved 1F1B: each gradient send waited at once (by "
                                                    "default the next backward runs beside it)")
    _bool(p, "--overlap-p2p-communication", help="(default since Megatron-LM 2023-10; the older opt-in name)")
    _bool(p, "--use-tp-pp-dp-mapping", help="ranks in the order tp, cp, pp, dp (Megatron's tp-cp-ep-pp-dp): a stage's neighbours tp x cp ranks away, data-parallel replicas tp x cp x pp apart")
    _bool(p, "--untie-embeddings-and-output-weights", help="separate output layer (no embedding all-reduce)")
    _bool(p, "--group-query-attention", help="grouped-query attention (with --num-query-groups)")
    i("--num-experts", type=int, default=None, help="mixture of experts: experts per MoE layer")
    i("--expert-model-parallel-size", type=int, default=1, help="experts split over this many data-parallel ranks")
    i("--expert-tensor-parallel-size", type=int, default=None, help="tp of each expert: tp (default) or 1")
    i("--moe-router-topk", type=int, default=2, help="experts per token (default 2)")
    i("--moe-token-dispatcher-type", default="allgather", choices=("allgather", "alltoall", "alltoall_seq", "flex"),
      help="how tokens reach their experts over ep: allgather (Megatron's default: every token gathered over "
           "the tp x ep ranks, the outputs reduce-scattered back), alltoall (each copy sent to its expert's "
           "rank; alltoall_seq and flex alike)")
    _bool(p, "--moe-grouped-gemm", help="a rank's local experts as one grouped GEMM (GroupedMLP) rather than one "
                                         "expert after another (SequentialMLP, Megatron's default)")
    i("--moe-ffn-hidden-size", type=int, default=None, help="an expert's MLP width (default --ffn-hidden-size)")
    i("--moe-shared-expert-intermediate-size", type=int, default=None, help="a shared expert's MLP width")
    i("--moe-layer-freq", type=moe_layer_freq, default=1,
      help="every N-th layer is a mixture of experts (default 1), or a pattern of 0s and 1s, one a layer "
           "(e.g. '([0]*3+[1]*5)')")
    i("--optimizer", default="adam", choices=("adam", "sgd", "muon", "dist_muon", "lion", "soap", "adaptive_muon"),
      help="adam (default: two fp32 moments a parameter) or sgd (one momentum buffer); the others are not modelled")
    i("--sgd-momentum", type=float, default=0.9, help="with --optimizer sgd: 0 keeps no momentum buffer (default 0.9)")
    i("--clip-grad", type=float, default=1.0,
      help="gradient clipping by the global norm (default 1.0); 0: the optimizer step computes no norm")
    i("--loss-scale", type=float, default=None,
      help="a constant loss scale: with --bf16 (or the distributed optimizer) gradients are then unscaled and "
           "checked for inf/nan each step, as fp16's always are")
    return p


@functools.cache
def reading_parser() -> Parser:
    """:func:`parser`, built once for :func:`~simpy_astra.workloads.megatron.arguments.parse`
    (reading never changes it): building it costs 3 ms, as much as the rest of a parse, which a
    sweep makes for each of its points."""
    return parser()


@functools.cache
def modelled_actions() -> dict[str, argparse.Action]:
    """Every option string of the modelled arguments -> its argparse action (built once)."""
    return {s: a for a in parser().options for s in a.option_strings}


def value_problem(flag: str, text: str) -> str | None:
    """Why the modelled ``flag`` can never take ``text`` as its value (argparse's type or
    choices, or under the flag's least value), else None."""
    action = modelled_actions().get(flag)
    if action is None or action.nargs == 0:
        return None
    try:
        value = action.type(text) if action.type is not None else text
    except argparse.ArgumentTypeError as exc:
        return str(exc)
    except (TypeError, ValueError):
        fix = (int_text_fix(text) if action.type is int else "") or non_ascii(text)  # '4k', '1e-4' with U+2212
        return f"invalid {getattr(action.type, '__name__', 'value')} value{fix}"
    if action.choices is not None and value not in action.choices:
        return f"invalid choice {text!r} (choose from {', '.join(map(str, action.choices))})"
    return range_problem(action, value)


def range_problem(action: argparse.Action, value) -> str | None:
    """Why a parsed value is out of its argument's range: a count under its least value, a
    dropout probability outside [0, 1] (or nan), else None."""
    if action.dest in ("sgd_momentum", "clip_grad", "loss_scale"):  # 1e400 reads as inf: every step overflows
        return None if 0.0 <= value < math.inf else "must be a finite number, at least 0"
    if action.type is float and not 0.0 <= value <= 1.0:
        return "must be a probability from 0 to 1, as PyTorch's Dropout requires"
    if action.dest == "num_experts" and value < 0:  # 0 is a dense model: validate_args makes it None
        return "must be an integer >= 0 (Megatron: num_moe_experts must be non-negative; 0 is a dense model)"
    if action.type is int and value < 1 and action.dest != "num_experts":
        return "must be an integer >= 1"
    if action.type is int and value > 2**63 - 1:  # past torch's int64; as a float, past any double
        return f"must be at most {2**63 - 1:,} (torch's int64 holds no larger count)"
    return None
