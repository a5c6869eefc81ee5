"""``simpy-astra generate transformer``: LLM training / inference traces for dp x tp x pp x sp (x ep).

The knobs are STAGE's (``--dp 8 --tp 8 --dmodel 8192 ... --activation-recompute 1``; underscores
work as well as dashes), or a ``--preset`` fills the model shape. Writes ``PREFIX.{npu}.et`` for
``dp*tp*pp*sp`` NPUs and the comm-group JSON ``PREFIX.json`` to pass as ``--comm-group-configuration``.

How the trace is made, file by file: ``config`` (knobs, presets, checks),
``layers`` (each layer's ops, FLOPs, tensors and collectives),
``schedule`` (micro-batches, 1F1B pipeline, gradient sync, optimizer),
``graph`` (NPU layout, comm groups), ``writer`` (ET files).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import fields
from typing import Any

from simpy_astra.cli.args import ArgumentParser, plain
from simpy_astra.errors import InputError, Param, spelt
from simpy_astra.workloads.generated import WorkloadLayout
from simpy_astra.workloads.trace_output import check_prefix
from simpy_astra.workloads.transformer.config import (
    MEMORY_ACCOUNTINGS,
    MODELS,
    PHASES,
    PRESETS,
    TransformerConfig,
    config_from_params,
    unread_notes,
    worded,
)
from simpy_astra.workloads.transformer.graph import Layout
from simpy_astra.workloads.transformer.memory import account_memory
from simpy_astra.workloads.transformer.schedule import build_stage
from simpy_astra.workloads.transformer.writer import (
    TRANSFORMER_TOO_LARGE,
    Units,
    stage_writers,
    write_rank_files,
    write_rank_summary,
    write_trace,
)


def generate_config(cfg: TransformerConfig, prefix: str) -> str:
    """Write the trace of ``cfg`` under ``prefix``; returns the comm-group JSON path."""
    check_prefix(prefix)
    layout = Layout.build(cfg)
    return write_trace(prefix, _graphs(cfg), layout, cfg.npus, Units(cfg.mixed_precision))


def _graphs(cfg: TransformerConfig) -> list:
    """Every pipeline stage's graph, its memory accounted."""
    return [account_memory(build_stage(cfg, stage), cfg) for stage in range(cfg.pp)]


def _refuse_one_npu(cfg: TransformerConfig) -> None:
    """A 1-NPU layout (the default dp 1) wrote a trace no run takes; refused once the records
    are made, so a value past Chakra's fields or the horizon is still the error told."""
    if cfg.npus < 2:
        stage_writers(_graphs(cfg), range(cfg.pp), Layout.build(cfg), Units(cfg.mixed_precision),
                      "generate transformer", TRANSFORMER_TOO_LARGE)
        parts = (Param("dp"), " x ", Param("tp"), " x ", Param("pp"), " x ", Param("sp"), " is 1 NPU, and no run "
                 "takes a 1-NPU trace (every network has 2 or more NPUs); give ", Param("dp"), " 2 or more (or ",
                 Param("tp"), ", ", Param("pp"), ")")
        raise InputError("generate transformer: " + spelt(parts, lambda p: p.flag)).with_parts(*parts)


def generate(params: dict[str, Any], prefix: str) -> str:
    """Registry entry (``workloads.generated``): params use the flag names with underscores."""
    return generate_config(config_from_params(params, "workload: generate: transformer"), prefix)


#: the stage graphs last built (params as JSON -> config, layout, graphs): a cold run builds
#: them for the rank summary and writes the ranks it simulates from the same ones
_built: dict[str, tuple[TransformerConfig, Layout, list]] = {}


def _build(params: dict[str, Any]) -> tuple[TransformerConfig, Layout, list]:
    key = json.dumps(params, sort_keys=True)
    if key not in _built:
        _built.clear()
        cfg = config_from_params(params, "workload: generate: transformer")
        graphs = [account_memory(build_stage(cfg, stage), cfg) for stage in range(cfg.pp)]
        _built[key] = (cfg, Layout.build(cfg), graphs)
    return _built[key]


def group_dimensions(cfg: TransformerConfig) -> dict[int, str]:
    """Comm-group id -> its parallel dimension (``dp``, ``tp``, ``sp``, ``ep``, ``edp``)."""
    return {gid: dim for (dim, _rank), gid in Layout.build(cfg).group_of.items()}


def layout(params: dict[str, Any]) -> WorkloadLayout:
    """Registry entry: the groups' dimensions and whether the network plays a message of the
    job one by one, before any trace is written."""
    cfg = config_from_params(params, "workload: generate: transformer")
    return WorkloadLayout(dimensions=group_dimensions(cfg), warnings=unread_notes(params),
                          plays_messages=cfg.plays_messages)


def write_summary(params: dict[str, Any], prefix: str) -> str:
    """Lazy registry entry: the comm groups and the rank summary, no trace
    (:func:`~simpy_astra.workloads.transformer.writer.write_rank_summary`)."""
    check_prefix(prefix)
    cfg, layout, graphs = _build(params)
    return write_rank_summary(prefix, "transformer", params, graphs, layout, cfg.npus)


def write_ranks(params: dict[str, Any], prefix: str, ranks: list[int]) -> None:
    """Lazy registry entry: ``PREFIX.{rank}.et`` of just ``ranks`` (the bytes a full
    generation writes for them), building writers only for their stages."""
    cfg, layout, graphs = _build(params)
    try:
        write_rank_files(prefix, graphs, layout, Units(cfg.mixed_precision), ranks)
    finally:
        _built.clear()  # the graphs are not needed once the simulated ranks are written


_INT_FLAGS = ("dp", "tp", "pp", "sp", "ep", "dvocal", "dmodel", "dff", "head", "kvhead", "seq", "batch",
              "micro_batch", "num_stacks", "experts", "kexperts")
_BOOL_FLAGS = ("weight_sharded", "activation_recompute", "tpsp", "mixed_precision")


#: what each knob means (``--help``); the defaults shown are TransformerConfig's (STAGE's)
_FLAG_HELP = {
    "dp": "data-parallel replicas",
    "tp": "tensor-parallel ranks (Megatron)",
    "pp": "pipeline stages (1F1B); must divide num_stacks",
    "sp": "sequence-parallel ranks",
    "ep": "expert-parallel ranks (--model moe); must divide dp and experts",
    "dvocal": "vocabulary size",
    "dmodel": "hidden size",
    "dff": "feed-forward inner size",
    "head": "attention heads",
    "kvhead": "key/value heads (grouped-query attention; a gpt model has one per head and warns of another kvhead)",
    "seq": "sequence length in tokens",
    "batch": "global batch in sequences per step",
    "micro_batch": "global micro-batch in sequences (STAGE's meaning); -1: the whole batch",
    "num_stacks": "transformer blocks",
    "experts": "experts per MoE layer",
    "kexperts": "experts each token is routed to",
    "weight_sharded": "shard weights, gradients and optimizer state over dp (FSDP/ZeRO-3)",
    "activation_recompute": "keep only each block's input; run its forward again in backward",
    "tpsp": "Megatron sequence parallelism with tp: reduce-scatter/all-gather, not all-reduce",
    "mixed_precision": "bf16 tensors and messages, fp32 Adam state (0: STAGE's one unit per element)",
}


def _default(name: str) -> str:
    value = next(f.default for f in fields(TransformerConfig) if f.name == name)
    return str(int(value)) if isinstance(value, bool) else str(value)


class _Parser(ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - argparse's signature
        raise InputError(f"generate transformer: {self.error_for_flag(message)}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="simpy-astra generate transformer", description=plain(__doc__.split("\n")[0]),
                epilog="Defaults are STAGE's; a --preset sets the model shape (model, dmodel, dff, head, "
                       "kvhead, num_stacks, dvocal, seq and, for mixtral, experts and kexperts) and "
                       "flags given with it win. Flags also take STAGE's underscores (--micro_batch).")

    def add(flag: str, *aliases: str, **kwargs: Any) -> None:
        """The flag as listed; its other spellings (STAGE's underscores) accepted, not listed."""
        p.add_argument(flag, **kwargs)
        underscored = "--" + flag[2:].replace("-", "_")
        for alias in [a for a in dict.fromkeys([*aliases, underscored]) if a != flag]:
            p.add_argument(alias, **{**kwargs, "help": argparse.SUPPRESS})

    def flag_help(name: str) -> str:
        return f"{_FLAG_HELP[name]} (default {_default(name)})"

    for name in _INT_FLAGS:
        add(f"--{name.replace('_', '-')}", dest=name, type=int, default=None, metavar="N", help=flag_help(name))
    for name in _BOOL_FLAGS:
        add(f"--{name.replace('_', '-')}", dest=name, default=None, metavar="0|1", help=flag_help(name))
    add("--model", "--model-type", "--model_type", dest="model", default=None, metavar="|".join(MODELS),
        help=f"gpt: dense (STAGE's 'dense'); llama: SwiGLU and grouped-query attention; "
             f"moe: mixture of experts (default {_default('model')})")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None, metavar="NAME",
                   help=f"a published model's shape: {', '.join(sorted(PRESETS))} (default none)")
    p.add_argument("--phase", choices=PHASES, default=None,
                   help="a training step, or a forward-only inference step reading a KV cache "
                        f"(default {_default('phase')})")
    add("--memory-accounting", dest="memory_accounting", choices=MEMORY_ACCOUNTINGS, default=None,
        metavar="MODE",
        help="physical (default): tensors live as in a real framework; stage: as in the "
             "traces of the STAGE the lab used (its template generator before commit "
             "93cacd6); stage-3a7f49c: as in STAGE 3a7f49c's traces (the reference cases')")
    p.add_argument("--output", required=True, help="PREFIX: writes PREFIX.{npu}.et and PREFIX.json")
    return p


def main(argv: list[str]) -> int:
    args = vars(_parser().parse_args(argv))
    prefix = args.pop("output")
    params = {k: v for k, v in args.items() if v is not None}
    cfg = config_from_params(params, "generate transformer")
    for parts in unread_notes(params, "generate transformer"):
        print(f"warning: {worded('generate transformer', parts)}", file=sys.stderr)
    check_prefix(prefix)
    _refuse_one_npu(cfg)  # after every other check, so a bad flag is still told first
    start = time.perf_counter()
    groups = generate_config(cfg, prefix)
    took = time.perf_counter() - start
    print(f"wrote {cfg.npus} traces {prefix}.{{0..{cfg.npus - 1}}}.et and {groups} in {took:.1f} s")
    return 0
