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
from simpy_astra.workloads.transformer.writer import Units, write_trace


def generate_config(cfg: TransformerConfig, prefix: str) -> str:
    """Write the trace of ``cfg`` under ``prefix``; returns the comm-group JSON path."""
    check_prefix(prefix)
    layout = Layout.build(cfg)
    graphs = [account_memory(build_stage(cfg, stage), cfg) for stage in range(cfg.pp)]
    return write_trace(prefix, graphs, layout, cfg.npus, Units(cfg.mixed_precision))


def generate(params: dict[str, Any], prefix: str) -> str:
    """Registry entry (``workloads.generated``): params use the flag names with underscores."""
    return generate_config(config_from_params(params, "workload: generate: transformer"), prefix)


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
