"""Megatron-LM's ``pretrain_gpt.py`` arguments, as users write them in launch scripts.

Both the 2021 names (``--checkpoint-activations``, ``--DDP-impl``,
``--num-layers-per-virtual-pipeline-stage``, ``--batch-size``) and today's
(``--recompute-granularity``, ``--use-distributed-optimizer``, ...) are read. Arguments that
cannot change the time of a step (paths, logging, learning rate, initialisation, data) are
accepted without a word; a timing argument this simulator does not model is refused naming it,
never ignored. The data-parallel size is not an argument: it follows from the GPU count as
in Megatron (``gpus / (tp x pp x cp)``).
"""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import replace

from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron import (
    bounds,
    command_line,
    legacy_models,
    module_rules,
    pipeline_layout,
    pipeline_rules,
    rules,
)
from simpy_astra.workloads.megatron import unmodelled_flags as today
from simpy_astra.workloads.megatron.argparser import ArgparseError, Parser
from simpy_astra.workloads.megatron.batch_sizes import data_parallel, global_batch
from simpy_astra.workloads.megatron.job import MegatronJob, pipeline_split
from simpy_astra.workloads.megatron.layer_pattern import moe_layer_freq
from simpy_astra.workloads.megatron.megatron_flags import ONE_VALUE, SEVERAL_VALUES, SWITCHES
from simpy_astra.workloads.megatron.notes import changed, notes
from simpy_astra.workloads.megatron.unmodelled_flags import NO_TIMING_EFFECT, SMALL_EFFECT

#: every argument Megatron-LM's pretrain_gpt.py has had
MEGATRON_FLAGS = SWITCHES | ONE_VALUE | SEVERAL_VALUES

#: GPT-2's BPE vocabulary, the size Megatron reads from a ``--vocab-file`` of that tokenizer
GPT2_VOCAB = 50257

#: timing arguments this simulator knows exist and does not model yet (refused by name)
NOT_MODELLED = {**today.NOT_MODELLED,
    "--multi-latent-attention": "multi-latent attention",
    "--moe-expert-capacity-factor": "dropped tokens (an expert capacity)",
    "--encoder-num-layers": "encoder-decoder models",
    "--decoder-num-layers": "encoder-decoder models",
    "--pipeline-model-parallel-split-rank": "encoder-decoder pipelines",
    "--cpu-offloading": "activation offloading to the host",
    "--sequence-parallel-size": "DeepSpeed-Ulysses sequence parallelism",
    "--yaml-cfg": "arguments read from a YAML file; give them on the command line",
    "--use-checkpoint-args": "the model's arguments read from the checkpoint --load names; give them on the "
                             "command line",
    "--deterministic-mode": "deterministic kernels (Megatron: 'usually means slower execution': deterministic "
                            "attention backward, NCCL_ALGO pinned)",
}


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
def _reading_parser() -> Parser:
    """:func:`parser`, built once for :func:`parse` (reading never changes it): building it
    costs 3 ms, as much as the rest of a parse, which a sweep makes for each of its points."""
    return parser()


def _ignorable(flag: str) -> bool:
    """``flag`` is one of :data:`NO_TIMING_EFFECT`, or a Megatron-LM argument
    (:mod:`~simpy_astra.workloads.megatron.megatron_flags`) that extends one by ``-...`` (an
    entry ending in ``-`` is a prefix only): a word under such a prefix that no Megatron-LM has
    (``--data-parallel-size``) is refused as Megatron's argparse refuses it, not read as a path."""
    if flag in NO_TIMING_EFFECT and not flag.endswith("-"):
        return True
    return flag in MEGATRON_FLAGS and any(flag.startswith(name if name.endswith("-") else name + "-")
                                          for name in NO_TIMING_EFFECT)


@functools.cache
def modelled_actions() -> dict[str, argparse.Action]:
    """Every option string of the modelled arguments -> its argparse action (built once)."""
    return {s: a for a in parser().options for s in a.option_strings}


def accepted(flag: str) -> bool:
    """``flag`` is read by the front end: modelled, accepted for its small effect, or one that
    cannot change a step's time (what ``parse`` takes without an error)."""
    return flag in modelled_actions() or flag in SMALL_EFFECT or _ignorable(flag)


def cannot_change_time(flag: str) -> bool:
    """``flag`` is one of :data:`NO_TIMING_EFFECT` (a path, the learning rate, a seed...): read
    and ignored, whatever its value."""
    return flag not in modelled_actions() and _ignorable(flag)


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
        return f"invalid {getattr(action.type, '__name__', 'value')} value"
    if action.choices is not None and value not in action.choices:
        return f"invalid choice {text!r} (choose from {', '.join(map(str, action.choices))})"
    return _range_problem(action, value)


def _range_problem(action: argparse.Action, value) -> str | None:
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


def known(flag: str) -> bool:
    """``flag`` is one the front end knows: :func:`accepted`, or refused by name as not
    modelled."""
    return accepted(flag) or flag in NOT_MODELLED


#: bytes an element of the optimizer state dtypes Megatron offers
STATE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


def parse(args: str | list[str], gpus: int, where: str = "megatron args",
          gpus_where: str | None = None) -> MegatronJob:
    """The job that ``args`` launch on ``gpus`` GPUs. Errors name ``where`` (the file and
    field the arguments came from; ``gpus_where`` the GPU count's) and the argument. A job
    Megatron-LM would refuse raises :class:`~simpy_astra.errors.InvalidConfigurationError`
    (:mod:`~simpy_astra.workloads.megatron.rules`); one past the simulator's bounds an
    :class:`InputError` with the estimate (:mod:`~simpy_astra.workloads.megatron.bounds`)."""
    tokens = command_line.words(args, where)
    command_line.one_name_each(tokens, where)
    p = _reading_parser()
    reading = command_line.read(tokens, p.options, lambda f: _ignorable(f) or f in SMALL_EFFECT, NOT_MODELLED, where,
                                also_known=[*SMALL_EFFECT, *NOT_MODELLED])
    today.check_values(reading.others, where)
    try:
        known = p.parse_args(reading.modelled)
    except ArgparseError as exc:
        raise InputError(f"{where}: {exc}") from None
    _check_ranges(p, known, where)
    if known.num_experts == 0:  # validate_args (since 2024-07): 'if args.num_experts == 0: args.num_experts = None'
        known.num_experts = None
    _check_vocabulary(known, reading.others, where)
    bounds.check_gpus(gpus, gpus_where or where)
    rules.check(known, gpus, reading.others, where)
    module_rules.check(known, gpus, reading.others, where)
    job = _job(known, gpus, where, " ".join(tokens))
    named = changed(p.options, reading.modelled, known)
    job = replace(job, warnings=(*command_line.given_twice(reading.modelled, p.options, where), *reading.others_twice,
                                 *notes(known, gpus, reading.others, where, job.transformer_engine, named)))
    job = legacy_models.priced(job, known, where)
    bounds.check_job(job, where)
    return job


#: the tokenizer whose vocabulary is GPT-2's (its ``--vocab-file``), the one assumed without ``--vocab-size``
GPT2_TOKENIZER = "GPT2BPETokenizer"


def _check_vocabulary(a: argparse.Namespace, others: dict[str, list[str]], where: str) -> None:
    """Megatron sizes the embedding and the output layer by its tokenizer's vocabulary
    (``build_tokenizer``: ``vocab_size_with_padding(tokenizer.vocab_size)``), which for any
    tokenizer but GPT-2's BPE sits in a file this simulator does not open: ``--vocab-size``
    must say it, else it would be priced as GPT-2's."""
    tokenizer = (others.get("--tokenizer-type") or [GPT2_TOKENIZER])[-1]
    if a.vocab_size is None and tokenizer != GPT2_TOKENIZER:
        raise InputError(f"{where}: --tokenizer-type {tokenizer}: Megatron reads the vocabulary from the tokenizer, "
                         f"which this simulator does not open; give --vocab-size (e.g. 32000 for Llama 2, 128256 "
                         f"for Llama 3)")


def _check_ranges(p: Parser, a: argparse.Namespace, where: str) -> None:
    for action in p.options:
        value = getattr(a, action.dest, None)
        values = value if isinstance(value, list) else [] if value is None else [value]
        problem = next((found for v in values if (found := _range_problem(action, v))), None)
        if problem is not None:
            got = str(value) if len(str(value)) <= 40 else f"{str(value)[:20]}..., {len(str(value))} digits"
            raise InputError(f"{where}: argument {action.option_strings[0]}: {problem} (got {got})")


def _context_parallel_exchange(a: argparse.Namespace) -> tuple[tuple[str, ...], int]:
    """(each layer's ``--cp-comm-type``, the all-to-all group's size) as Transformer Engine
    runs them: one type is every layer's (so is any list at cp 1, where none is exchanged);
    ``a2a+p2p`` with an all-to-all group of 1 is the ring alone, with a ring of 1 the
    all-to-all alone (``attn_forward_func_with_cp``)."""
    cp, given = a.context_parallel_size, tuple(a.cp_comm_type)
    kinds = given if cp > 1 and len(given) > 1 else given[:1] * a.num_layers  # lengths: rules
    if cp == 1 or "a2a+p2p" not in kinds:
        return kinds, 1
    a2a, ring = a.hierarchical_context_parallel_sizes  # two sizes (module_rules)
    alone = "p2p" if a2a == 1 else "a2a" if ring == 1 else None
    if alone is None:
        return kinds, a2a
    return tuple(alone if kind == "a2a+p2p" else kind for kind in kinds), 1


def _legacy(a: argparse.Namespace) -> bool:
    """A 2021-2022 Megatron-LM (:func:`~simpy_astra.workloads.megatron.rules.legacy_names`)."""
    return rules.legacy_names(a)


def _kernels_2021(a: argparse.Namespace) -> bool:
    """2021's layers (``6985e589``): synchronous tensor-parallel collectives, no gradient-
    accumulation fusion, the fused softmax to 2,048 keys; not a 2022 release's (``rules.names_of_2022``)."""
    return _legacy(a) and not rules.names_of_2022(a)


def _transformer_engine(a: argparse.Namespace) -> bool:
    """Transformer Engine layers: today's Megatron-LM default (``--transformer-impl
    transformer_engine`` since Megatron-Core 0.5), absent from a 2021 one."""
    if a.transformer_impl is not None:
        return a.transformer_impl == "transformer_engine"
    return not _legacy(a)


def _fused_attention(a: argparse.Namespace) -> bool:
    """FlashAttention (``--use-flash-attn``), or Transformer Engine's attention, which picks
    a fused kernel unless told to run the unfused one. ``--attention-backend`` chooses among
    Transformer Engine's kernels only (``LanguageModule`` sets ``NVTE_FLASH_ATTN``,
    ``NVTE_FUSED_ATTN``, ``NVTE_UNFUSED_ATTN``): Megatron's own layers ignore it (notes)."""
    te = _transformer_engine(a)
    if a.attention_backend is not None and te:
        return a.attention_backend in ("flash", "fused", "auto")
    return a.use_flash_attn or te


def _job(a: argparse.Namespace, gpus: int, where: str, text: str) -> MegatronJob:
    """The job of arguments that passed :func:`~simpy_astra.workloads.megatron.rules.check`;
    refuses what Megatron runs and this simulator does not model."""
    tp, pp, cp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size, a.context_parallel_size
    dp = data_parallel(a, gpus)
    h, heads = a.hidden_size, a.num_attention_heads
    head_dim = a.kv_channels or h // heads
    kv_heads = rules.query_groups(a) or heads
    ffn = _ffn_hidden(a, where)
    vocab = a.vocab_size or GPT2_VOCAB
    multiple = a.make_vocab_size_divisible_by * tp
    vocab = math.ceil(vocab / multiple) * multiple
    virtual = pipeline_rules.virtual_stages(a)
    if a.pipeline_model_parallel_layout is not None:
        split = tuple(c.count("t") for c in pipeline_layout.chunks(a.pipeline_model_parallel_layout))
    else:
        split = pipeline_split(a.num_layers, pp, virtual, a.decoder_first_pipeline_num_layers,
                               a.decoder_last_pipeline_num_layers, a.account_for_embedding_in_pipeline_split,
                               a.account_for_loss_in_pipeline_split)
    precision = "fp16" if a.fp16 else "bf16" if a.bf16 else "fp32"
    if a.checkpoint_activations:
        recompute, method, layers = "full", "uniform", a.checkpoint_num_layers
    elif a.activations_checkpoint_method:
        recompute, method, layers = "full", a.activations_checkpoint_method, a.activations_checkpoint_num_layers
    elif a.recompute_activations:  # Megatron sets the granularity selective, whatever it was
        recompute, method, layers = "selective", "uniform", 1
    elif a.recompute_granularity:
        recompute = a.recompute_granularity
        method, layers = a.recompute_method or "uniform", a.recompute_num_layers or 1
    else:
        recompute, method, layers = "none", "uniform", 0
    legacy, te = _legacy(a), _transformer_engine(a)
    rules.check_layers(cp, te, _fused_attention(a), where,
                       "rope" if a.use_rotary_position_embeddings else a.position_embedding_type)
    rules.check_widths(a, ffn, where)
    rules.check_sequence_split(a, where)
    # query-key layer scaling: on by default until Megatron-Core made it opt-in (2023), and it
    # puts the softmax in fp32; Transformer Engine scales fp16 scores only, and its unfused
    # softmax is always in fp32
    qk_scaling = a.apply_query_key_layer_scaling or (legacy and not a.no_query_key_layer_scaling)
    qk_scaling = qk_scaling and (a.fp16 or not te)
    cp_comm, cp_a2a = _context_parallel_exchange(a)
    if a.fp8_recipe not in ("delayed", "tensorwise") and a.fp8_format is not None:  # else never read (notes)
        raise InputError(f"{where}: --fp8-recipe {a.fp8_recipe}: only delayed and tensorwise (per-tensor "
                         f"current) scaling are modelled")
    if a.optimizer not in ("adam", "sgd"):
        raise InputError(f"{where}: --optimizer {a.optimizer}: only adam and sgd are modelled")
    experts = a.num_experts or 0
    ep = a.expert_model_parallel_size
    etp = a.expert_tensor_parallel_size or tp
    if experts and dp % ep:
        raise InputError(f"{where}: --expert-model-parallel-size {ep}: experts spread over ranks other than the "
                         f"data-parallel ones (dp {dp}) are not modelled; use an ep that divides dp")
    if experts and etp not in (1, tp):
        raise InputError(f"{where}: --expert-tensor-parallel-size {etp}: only 1 or tp ({tp}) is modelled")
    if a.use_tp_pp_dp_mapping and pp > 1 and (etp * (ep if experts else 1) != tp * cp or (experts and ep > 1)):
        if etp * (ep if experts else 1) != tp * cp:  # Megatron's own check (parallel_state.py)
            raise InputError(f"{where}: --use-tp-pp-dp-mapping with --pipeline-model-parallel-size {pp}: Megatron "
                             f"needs the experts' data-parallel size equal to the layers' (expert tp x ep = tp x cp; "
                             f"here {etp} x {ep if experts else 1} and {tp} x {cp}: 'When not using pp-last rank "
                             f"ordering, the data parallel size of the attention and moe layers must be the same'); "
                             f"leave the flag out")
        raise InputError(f"{where}: --use-tp-pp-dp-mapping with --expert-model-parallel-size {ep} and a pipeline: "
                         f"expert groups in that order are not modelled; leave the flag out")
    return MegatronJob(
        experts=experts, ep=ep if experts else 1, etp=etp if experts else tp, topk=a.moe_router_topk,
        moe_alltoall=a.moe_token_dispatcher_type != "allgather", moe_grouped_gemm=a.moe_grouped_gemm,
        moe_ffn=a.moe_ffn_hidden_size or ffn, shared_ffn=a.moe_shared_expert_intermediate_size or 0,
        moe_every=a.moe_layer_freq if isinstance(a.moe_layer_freq, int) else 1,
        moe_pattern=a.moe_layer_freq if isinstance(a.moe_layer_freq, tuple) else (),
        gpus=gpus, num_layers=a.num_layers, hidden=h, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        ffn_hidden=ffn, swiglu=a.swiglu, seq=a.seq_length, vocab=vocab,
        tied_embeddings=not a.untie_embeddings_and_output_weights, micro_batch=a.micro_batch_size,
        global_batch=global_batch(a, gpus), tp=tp, pp=pp, cp=cp, dp=dp, virtual_stages=virtual, layer_split=split,
        precision=precision, fp8=a.fp8_format is not None and te, fp8_requested=a.fp8_format is not None,
        fp8_current_scaling=a.fp8_format is not None and te and a.fp8_recipe == "tensorwise",
        recompute=recompute, recompute_method=method,
        recompute_layers=layers, sequence_parallel=a.sequence_parallel and tp > 1,
        distributed_optimizer=a.use_distributed_optimizer, optimizer_instances=a.num_distributed_optimizer_instances,
        # Megatron accumulates bf16 gradients in fp32 only while --main-grads-dtype is fp32
        grads_in_bf16=(a.grad_reduce_in_bf16 or a.main_grads_dtype == "bf16") and precision == "bf16",
        grads_in_fp32=a.accumulate_allreduce_grads_in_fp32 and precision == "fp16",
        fp8_param_gather=a.fp8_param_gather and te,
        ddp_bucket_params=(a.ddp_bucket_size or 0) if a.overlap_grad_reduce else 0,  # else one bucket (notes)
        distribute_saved_activations=(a.distribute_saved_activations or a.distribute_checkpointed_activations)
        and tp > 1 and recompute == "full",
        ddp=a.ddp_impl or "local", overlap_grad_reduce=a.overlap_grad_reduce or a.ddp_impl == "torch",
        overlap_param_gather=a.overlap_param_gather, tp_comm_overlap=a.tp_comm_overlap and tp > 1 and te,
        async_tp_allreduce=not _kernels_2021(a) and not a.no_async_tensor_model_parallel_allreduce,
        # 2022's only into fp32 main gradients (arguments.py at d898a8991d; fp16's from 2022-09)
        gradient_accumulation_fusion=not _kernels_2021(a) and not a.no_gradient_accumulation_fusion
        and (not legacy or precision != "fp16" or a.accumulate_allreduce_grads_in_fp32),
        flash_attention=_fused_attention(a), transformer_engine=te, attention_backend=(a.attention_backend or "auto") if te else "auto",
        cp_comm_types=cp_comm, cp_a2a=cp_a2a, masked_softmax_fusion=not a.no_masked_softmax_fusion,
        bias_gelu_fusion=not (a.no_bias_swiglu_fusion if a.swiglu else a.no_bias_gelu_fusion), bias_dropout_fusion=not a.no_bias_dropout_fusion,
        scatter_gather=not a.no_scatter_gather_tensors_in_pipeline, legacy=legacy, kernels_2021=_kernels_2021(a),
        args=text,
        overlap_p2p_comm=virtual > 1 and not legacy and not a.no_overlap_p2p_communication,
        pp_before_dp=a.use_tp_pp_dp_mapping and pp > 1,
        bias_linear=not a.disable_bias_linear, cross_entropy_fusion=a.cross_entropy_loss_fusion,
        query_key_layer_scaling=qk_scaling, softmax_in_fp32=te or qk_scaling or a.attention_softmax_in_fp32,
        attention_dropout=a.attention_dropout, hidden_dropout=a.hidden_dropout,
        position_embeddings=_position_rows(a),
        rope=("fused" if _rope_fusion(a) else "unfused") if _rotary(a) else "", qk_layernorm=a.qk_layernorm,
        norm_params_per_channel=1 if a.normalization == "RMSNorm" else 2,
        moment_bytes=_moment_bytes(a), master_bytes=_master_bytes(a, precision),
        grad_norm=a.clip_grad > 0,
        # Megatron's optimizer unscales and checks the gradients only with a grad scaler: fp16's
        # dynamic one, or --loss-scale's constant one (with bf16, fp16 or the distributed optimizer)
        gradient_check=a.fp16 or (bool(a.loss_scale) and (a.bf16 or a.use_distributed_optimizer)),
    )


def _moment_bytes(a: argparse.Namespace) -> tuple[int, ...]:
    """Bytes a parameter of each optimizer state (``megatron/core/optimizer/__init__.py``): Adam's
    two moments in their dtypes, SGD's momentum buffer in fp32 (none without momentum)."""
    if a.optimizer == "adam":
        return STATE_BYTES[a.exp_avg_dtype], STATE_BYTES[a.exp_avg_sq_dtype]
    return (4,) if a.sgd_momentum else ()


def _master_bytes(a: argparse.Namespace, precision: str) -> int:
    """Bytes a parameter of the master copy: fp32, or with the precision-aware optimizer fp16
    (``--main-params-dtype``) or, for bf16 weights whose master Transformer Engine's FusedAdam
    keeps (not FP8 past delayed scaling), the 16-bit remainder (``store_param_remainders``)."""
    if not a.use_precision_aware_optimizer:
        return 4
    if a.main_params_dtype == "fp16":
        return 2
    te_master = a.fp8_format is None or a.fp8_recipe == "delayed"
    return 2 if precision == "bf16" and te_master else 4


def _ffn_hidden(a: argparse.Namespace, where: str) -> int:
    """The MLP's width: ``--ffn-hidden-size``, else Megatron's default, 4h, or with
    ``--swiglu`` 8h/3 cut down to a multiple of 64 (arguments.py: ``int((4 * args.hidden_size
    * 2 / 3) / 64) * 64``), which is 0 under a width of 24."""
    if a.ffn_hidden_size:
        return a.ffn_hidden_size
    if not a.swiglu:
        return 4 * a.hidden_size
    ffn = int((4 * a.hidden_size * 2 / 3) / 64) * 64
    if ffn == 0:
        raise InputError(f"{where}: --swiglu with --hidden-size {a.hidden_size} gives Megatron's default MLP width "
                         f"int(8h/3 / 64) x 64 = 0; give --ffn-hidden-size")
    return ffn


def _rotary(a: argparse.Namespace) -> bool:
    """Rotary embeddings rotate the queries and keys of every layer (rope, and YaRN's and
    multimodal rope's variants of it)."""
    return a.use_rotary_position_embeddings or a.position_embedding_type in ("rope", "yarn", "mrope")


def _rope_fusion(a: argparse.Namespace) -> bool:
    """The rotary embedding runs as one fused kernel each way: Megatron fuses plain rope only
    (``validate_args``: ``if args.position_embedding_type != 'rope': args.apply_rope_fusion =
    False``), so YaRN and multimodal rope run PyTorch's separate kernels, ``--no-rope-fusion`` or not."""
    return not a.no_rope_fusion and (a.use_rotary_position_embeddings or a.position_embedding_type == "rope")


def _position_rows(a: argparse.Namespace) -> int:
    """Rows of the learned position-embedding table (``LanguageModelEmbedding``: one per
    position up to ``--max-position-embeddings``), none with rotary or no position embeddings."""
    if a.use_rotary_position_embeddings or a.no_position_embedding or a.position_embedding_type != "learned_absolute":
        return 0
    return a.max_position_embeddings or a.seq_length
