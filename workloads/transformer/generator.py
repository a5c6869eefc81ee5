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
import time
from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError
from simpy_astra.workloads.trace_output import check_prefix
from simpy_astra.workloads.transformer.config import (
    MEMORY_ACCOUNTINGS,
    MODELS,
    PHASES,
    PRESETS,
    TransformerConfig,
    config_from_params,
)
from simpy_astra.workloads.transformer.graph import Layout
from simpy_astra.workloads.transformer.memory import account_memory
from simpy_astra.workloads.transformer.schedule import build_stage
from simpy_astra.workloads.transformer.writer import (
    StageWriter,
    Units,
    write_groups,
    write_rank_files,
    write_trace,
)


def generate_config(cfg: TransformerConfig, prefix: str) -> str:
    """Write the trace of ``cfg`` under ``prefix``; returns the comm-group JSON path."""
    check_prefix(prefix)
    layout = Layout.build(cfg)
    graphs = [account_memory(build_stage(cfg, stage), cfg) for stage in range(cfg.pp)]
    return write_trace(prefix, graphs, layout, cfg.npus, Units(cfg.mixed_precision))


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


def group_dimensions(params: dict[str, Any]) -> dict[int, str]:
    """Comm-group id -> its parallel dimension (``dp``, ``tp``, ``sp``, ``ep``, ``edp``)."""
    layout = Layout.build(config_from_params(params, "workload: generate: transformer"))
    return {gid: dim for (dim, _rank), gid in layout.group_of.items()}


def write_summary(params: dict[str, Any], prefix: str) -> str:
    """Lazy registry entry: the comm groups and the rank summary, no trace.

    A rank's trace is its stage's graph with, per slot, its group in one parallel dimension
    (collectives) or its peer in one stage offset (sends/receives) filled in
    (:class:`~simpy_astra.workloads.transformer.writer.StageWriter`), so its class is its stage
    and its slots are those groups and peers in the order the stage's ops first use them."""
    from simpy_astra.workloads.generated import write_summary as write

    check_prefix(prefix)
    cfg, layout, graphs = _build(params)
    slot_keys = [list(dict.fromkeys(StageWriter.slot_key(op) for op in g.ops if StageWriter.has_slot(op)))
                 for g in graphs]
    kinds = ["".join("g" if k[0] == "coll" else "p" for k in keys) for keys in slot_keys]
    stride = layout.stage_stride()
    classes, slots = [], []
    for rank in range(cfg.npus):
        stage = layout.stage_of(rank)
        classes.append(stage)
        slots.append([layout.group_of[(k[1], rank)] if k[0] == "coll" else rank + k[2] * stride
                      for k in slot_keys[stage]])
    write(prefix, "transformer", params, classes, kinds, slots)
    return write_groups(prefix, layout)


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


class _Parser(ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - argparse's signature
        raise InputError(f"generate transformer: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="simpy-astra generate transformer", description=__doc__.split("\n")[0])
    def spellings(name: str) -> list[str]:  # --micro-batch and STAGE's --micro_batch
        return list(dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"]))

    for name in _INT_FLAGS:
        p.add_argument(*spellings(name), dest=name, type=int, default=None)
    for name in _BOOL_FLAGS:
        p.add_argument(*spellings(name), dest=name, default=None, metavar="0|1")
    p.add_argument("--model", "--model-type", "--model_type", dest="model", default=None,
                   help=f"{'|'.join(MODELS)} (STAGE's 'dense' is gpt)")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None)
    p.add_argument("--phase", choices=PHASES, default=None)
    p.add_argument("--memory-accounting", "--memory_accounting", dest="memory_accounting",
                   choices=MEMORY_ACCOUNTINGS, default=None,
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
    check_prefix(prefix)
    start = time.perf_counter()
    groups = generate_config(cfg, prefix)
    took = time.perf_counter() - start
    print(f"wrote {cfg.npus} traces {prefix}.{{0..{cfg.npus - 1}}}.et and {groups} in {took:.1f} s")
    return 0
