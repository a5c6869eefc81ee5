"""What a transformer trace is generated from: model dimensions, parallelism, phase; presets.

The knobs and their defaults are STAGE's (the symbolic tensor graph generator) so that its
command lines carry over: ``--dp --tp --pp --sp --ep``, ``--weight-sharded``, ``--dmodel``...
Boolean knobs take 0/1. ``micro_batch`` is the global micro-batch (STAGE's meaning): each
data-parallel replica runs ``micro_batch / dp`` samples per micro-batch, and a step has
``batch / micro_batch`` micro-batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from simpy_astra.errors import InputError, InvalidConfigurationError, Param, Parts, integer_fix, spelt
from simpy_astra.workloads.trace_output import MAX_TRACE_NODES, MAX_TRACE_NPUS

MODELS = ("gpt", "llama", "moe")
PHASES = ("train", "prefill", "decode")
# how tensor lifetimes are written: "physical" (what a real framework keeps), "stage" (the
# STAGE the lab used: its template generator before commit 93cacd6), or "stage-3a7f49c" (STAGE's
# graph generator at 3a7f49c, the one the reference cases pin); see transformer.memory
MEMORY_ACCOUNTINGS = ("physical", "stage", "stage-3a7f49c")

# Public model shapes (papers / model cards); seq is the training context length.
PRESETS: dict[str, dict[str, Any]] = {
    "llama2-7b": dict(model="llama", dmodel=4096, dff=11008, head=32, kvhead=32, num_stacks=32,
                      dvocal=32000, seq=4096),
    "llama2-70b": dict(model="llama", dmodel=8192, dff=28672, head=64, kvhead=8, num_stacks=80,
                       dvocal=32000, seq=4096),
    "llama3-70b": dict(model="llama", dmodel=8192, dff=28672, head=64, kvhead=8, num_stacks=80,
                       dvocal=128256, seq=8192),
    "gpt3-175b": dict(model="gpt", dmodel=12288, dff=49152, head=96, kvhead=96, num_stacks=96,
                      dvocal=50257, seq=2048),
    "mixtral-8x7b": dict(model="moe", dmodel=4096, dff=14336, head=32, kvhead=8, num_stacks=32,
                         dvocal=32000, seq=4096, experts=8, kexperts=2),
}


@dataclass(frozen=True)
class TransformerConfig:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: int = 1
    ep: int = 1
    weight_sharded: bool = False
    activation_recompute: bool = False
    tpsp: bool = True
    dvocal: int = 32000
    dmodel: int = 8192
    dff: int = 28672
    head: int = 64
    kvhead: int = 8
    seq: int = 1024
    batch: int = 64
    micro_batch: int = -1  # -1: the whole batch is one micro-batch
    num_stacks: int = 80
    experts: int = 8
    kexperts: int = 2
    model: str = "gpt"
    mixed_precision: bool = False
    preset: str = ""
    phase: str = "train"
    memory_accounting: str = "physical"

    # ---- derived sizes (element counts) ----
    @property
    def npus(self) -> int:
        return self.dp * self.tp * self.pp * self.sp

    @property
    def plays_messages(self) -> bool:
        """The trace holds an exchange a network plays message by message, reading its routes'
        latencies: a pipeline send (pp > 1), or MoE's token dispatch and combine (all-to-alls,
        ep > 1). Every other exchange is an all-reduce, reduce-scatter or all-gather, which a
        cluster's analytical backend times by NCCL's model, blind to those latencies."""
        return self.pp > 1 or self.model == "moe" and self.ep > 1

    @property
    def micro_batches(self) -> int:
        return self.batch // self.micro_batch

    @property
    def samples_per_replica(self) -> int:
        """Samples one data-parallel replica runs per micro-batch."""
        return self.micro_batch // self.dp

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): GQA for llama/moe; gpt (STAGE's dense model) ignores kvhead."""
        if self.model == "gpt":
            return self.dmodel
        return self.dmodel // self.head * self.kvhead

    @property
    def attention_params(self) -> int:
        return 2 * self.dmodel * self.dmodel + 2 * self.dmodel * self.kv_dim

    @property
    def ffn_matrices(self) -> int:
        """gpt: up/down (STAGE's dense model); llama/moe: gate, up and down (SwiGLU)."""
        return 2 if self.model == "gpt" else 3

    @property
    def dense_ffn_params(self) -> int:
        return self.ffn_matrices * self.dmodel * self.dff

    def layer_params(self) -> int:
        """Parameters of one transformer block (norm weights are negligible and left out)."""
        ffn = self.dense_ffn_params * (self.experts if self.model == "moe" else 1)
        router = self.dmodel * self.experts if self.model == "moe" else 0
        return self.attention_params + ffn + router

    def total_params(self) -> int:
        """All parameters: blocks plus input and output embeddings (untied, as STAGE)."""
        return self.num_stacks * self.layer_params() + 2 * self.dvocal * self.dmodel


_BOOL_FIELDS = {f.name for f in fields(TransformerConfig) if f.type in ("bool", bool)}
_INT_FIELDS = {f.name for f in fields(TransformerConfig) if f.type in ("int", int)}
_STR_FIELDS = {"model", "preset", "phase", "memory_accounting"}
PARAM_NAMES = tuple(f.name for f in fields(TransformerConfig))


def _as_bool(name: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise _about(InputError, where, name, f"must be 0 or 1 (got {value!r})")


def _as_int(name: str, value: Any, where: str) -> int:
    try:
        if isinstance(value, bool | float):  # a flag's text ("8") is read; a YAML float is no integer
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise _about(InputError, where, name, f"must be an integer (got {value!r}){integer_fix(value)}") from None


_E = TypeVar("_E", bound=InputError)


def _about(kind: Callable[[str], _E], where: str, name: str, *problem: str | Param) -> _E:
    """The error ``kind`` of the parameter ``name``: ``<where>: '<name>' <problem>``, its parts
    kept for a scenario to name it as its field (:func:`~simpy_astra.workloads.generator_words.as_fields`)."""
    parts = (Param(name), ": ", *problem)
    return kind(worded(where, parts)).with_parts(*parts)


def worded(where: str, parts: Parts) -> str:
    """A line about a parameter, ``parts`` (``Param(name), ": ", ...``), as the transformer's command
    line words it: ``<where>: '<name>' <problem>``, each other parameter as its flag."""
    first, _colon, *problem = parts
    assert isinstance(first, Param)
    return f"{where}: '{first.name}' " + spelt(tuple(problem), lambda p: p.flag)


def config_from_params(params: dict[str, Any], where: str = "transformer") -> TransformerConfig:
    """Build and check a config: a preset fills the model shape, explicit values win."""
    unknown = sorted(set(params) - set(PARAM_NAMES))
    if unknown:
        problem = f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAM_NAMES)}"
        raise InputError(f"{where}: {problem}").with_parts(problem)
    values: dict[str, Any] = {}
    preset = str(params.get("preset") or "")
    if preset:
        if preset not in PRESETS:
            raise _about(InputError, where, "preset", f"{preset!r} is unknown; use one of {', '.join(PRESETS)}")
        values.update(PRESETS[preset])
    for name, value in params.items():
        if value is None:
            continue
        if name in _BOOL_FIELDS:
            values[name] = _as_bool(name, value, where)
        elif name in _INT_FIELDS:
            values[name] = _as_int(name, value, where)
        else:
            values[name] = str(value)
    if values.get("model") == "dense":  # STAGE's name for its default model
        values["model"] = "gpt"
    cfg = TransformerConfig(**values)
    if cfg.micro_batch == -1:
        cfg = replace(cfg, micro_batch=cfg.batch)
    check_config(cfg, where, {name for name, value in params.items() if value is not None} | set(PRESETS.get(preset, {})))
    _refuse_unread(cfg, params, where)
    return cfg


def _refuse_unread(cfg: TransformerConfig, params: dict[str, Any], where: str) -> None:
    """A knob given that this model or phase never reads (its traces are byte for byte those
    without it): refused, as ``ep`` beside a dense model is, rather than run as if it had been."""
    given = [name for name in ("experts", "kexperts") if params.get(name) is not None]
    if cfg.model != "moe" and given:
        raise _about(InputError, where, given[0], "is for ", Param("model"),
                     f" moe only (a {cfg.model} model has no experts)")
    if cfg.phase != "train" and cfg.activation_recompute:
        raise _about(InputError, where, "activation_recompute", "recomputes forwards in the backward, which a ",
                     Param("phase"), f" {cfg.phase} step does not run; remove it")


def unread_notes(params: dict[str, Any], where: str = "workload: generate: transformer") -> tuple[Parts, ...]:
    """Warnings for a knob given that the model does not read and STAGE takes in silence: a
    ``kvhead`` beside a gpt (STAGE's dense) model, whose attention keeps a key/value head per
    query head. STAGE's own command lines pass it so (the reference's llama-70B-sized dense
    cases), hence a warning, not an error; a sweep over it would otherwise read as a flat line.
    Each warning is parts (:func:`worded` for the command line; a scenario spells its fields);
    ``where`` names the config's errors."""
    cfg = config_from_params(params, where)
    if cfg.model == "gpt" and params.get("kvhead") is not None and cfg.kvhead != cfg.head:
        return ((Param("kvhead"), ": ", f"({cfg.kvhead}) changes nothing: a gpt model (STAGE's dense) has a "
                 f"key/value head per query head ({cfg.head}), as STAGE's has; use ", Param("model"),
                 " llama for grouped-query attention, or remove kvhead"),)
    return ()


#: the most trace nodes one layer adds for one micro-batch on its stage (measured: up to 76 for
#: a small model of 2 layers a stage, its embedding and loss counted in)
NODES_PER_LAYER_PASS = 80


def _default_note(field: str, given: set[str] | None) -> str:
    """'; it is the default, not given: set it', when ``field`` was left at its default."""
    return "" if given is None or field in given else f"; {field} is its default here, not given: set {field}"


def check_config(cfg: TransformerConfig, where: str, given: set[str] | None = None) -> None:
    """Refuse a layout or shape the generator cannot build; ``given``: the knobs the user (or
    a preset) set, so that a default blamed is called one (``model: llama, head: 4`` was told
    "'kvhead' (8) must divide head (4)" of a kvhead it never wrote)."""
    def bad(field: str, *why: str | Param) -> InputError:
        return _about(InputError, where, field, *why, _default_note(field, given))

    def layout(field: str, why: str, rule: str) -> InvalidConfigurationError:
        """A parallel layout the model cannot be split by (STAGE refuses it, as Megatron-LM does
        its like): a point of a sweep's design space that is invalid, not a failed run."""
        return _about(lambda message: InvalidConfigurationError(message, rule), where, field, why,
                      _default_note(field, given))

    for name in ("dp", "tp", "pp", "sp", "ep", "dvocal", "dmodel", "dff", "head", "kvhead", "seq",
                 "batch", "micro_batch", "num_stacks", "experts", "kexperts"):
        if getattr(cfg, name) < 1:
            raise bad(name, f"must be at least 1 (got {getattr(cfg, name)})")
    if cfg.npus > MAX_TRACE_NPUS:  # checked before any graph is built or file written
        raise bad("dp", f"* tp * pp * sp = {cfg.npus} NPUs; at most {MAX_TRACE_NPUS} trace files are "
                        f"written (lower the parallelism)")
    if cfg.model not in MODELS:
        raise bad("model", f"must be one of {', '.join(MODELS)} (got {cfg.model!r})")
    if cfg.memory_accounting not in MEMORY_ACCOUNTINGS:
        raise bad("memory_accounting", f"must be one of {', '.join(MEMORY_ACCOUNTINGS)} "
                                       f"(got {cfg.memory_accounting!r})")
    if cfg.memory_accounting.startswith("stage") and (cfg.phase != "train" or cfg.model == "moe"):
        raise bad("memory_accounting", f"'{cfg.memory_accounting}' follows STAGE's dense training traces: use it with ",
                  Param("phase"), " train and ", Param("model"), " gpt or llama")
    if cfg.phase not in PHASES:
        raise bad("phase", f"must be one of {', '.join(PHASES)} (got {cfg.phase!r})")
    if cfg.batch % cfg.micro_batch:
        raise bad("micro_batch", f"({cfg.micro_batch}) must divide batch ({cfg.batch})")
    if cfg.micro_batch % cfg.dp:  # micro_batch left out is the batch: named as the user wrote it
        micro = f"micro_batch ({cfg.micro_batch})" if given is None or "micro_batch" in given else \
            f"batch ({cfg.micro_batch}: micro_batch, not given, is the whole batch)"
        raise layout("dp", f"({cfg.dp}) must divide {micro}; each replica needs whole samples",
                     "micro-batch divisible by dp")
    if cfg.num_stacks % cfg.pp:
        raise layout("pp", f"({cfg.pp}) must divide num_stacks ({cfg.num_stacks})", "stacks divisible by pp")
    seq_tokens = 1 if cfg.phase == "decode" else cfg.seq
    if seq_tokens % (cfg.sp * (cfg.tp if cfg.tpsp else 1)) and cfg.phase != "decode":
        raise layout("seq", f"({cfg.seq}) must be divisible by sp*tp ({cfg.sp * cfg.tp}) for sequence sharding",
                     "seq divisible by sp x tp")
    if cfg.phase == "decode" and cfg.sp != 1:
        raise bad("sp", "must be 1 for ", Param("phase"), " decode (one new token per sequence)")
    if cfg.dmodel % cfg.head:
        raise bad("head", f"({cfg.head}) must divide dmodel ({cfg.dmodel})")
    if cfg.head % cfg.tp:
        raise layout("head", f"({cfg.head}) must be divisible by tp ({cfg.tp})", "heads divisible by tp")
    if cfg.model != "gpt" and (cfg.head % cfg.kvhead or cfg.kvhead % cfg.tp and cfg.tp % cfg.kvhead):
        raise bad("kvhead", f"({cfg.kvhead}) must divide head ({cfg.head}) and match tp ({cfg.tp})")
    if cfg.dff % cfg.tp:
        raise layout("dff", f"({cfg.dff}) must be divisible by tp ({cfg.tp})", "dff divisible by tp")
    if cfg.model == "moe":
        if cfg.dp % cfg.ep or cfg.experts % cfg.ep:
            raise bad("ep", f"({cfg.ep}) must divide dp ({cfg.dp}) and experts ({cfg.experts})")
        if cfg.kexperts > cfg.experts:
            raise bad("kexperts", f"({cfg.kexperts}) must not exceed experts ({cfg.experts})")
    elif cfg.ep != 1:
        raise bad("ep", "is for ", Param("model"), " moe only")
    passes = cfg.num_stacks * cfg.micro_batches  # every stage's layers, each micro-batch
    if passes * NODES_PER_LAYER_PASS > MAX_TRACE_NODES:  # checked before any graph is built
        raise bad("num_stacks", f"({cfg.num_stacks:,}) x micro-batches ({cfg.micro_batches:,}: batch / micro_batch) "
                                f"would be about {passes * NODES_PER_LAYER_PASS:,} trace nodes, more than the bound "
                                f"of {MAX_TRACE_NODES:,} (about 4 GB to simulate); use fewer num_stacks or a larger "
                                f"micro_batch")

