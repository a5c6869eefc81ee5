"""``simpy-astra generate megatron``: a Megatron-LM training step as Chakra traces.

A scenario names it as ``workload: {generate: megatron, args: "<pretrain_gpt.py arguments>"}``
beside a ``cluster:``, which gives the GPU count (Megatron's data-parallel size follows from
it) and the GPU whose kernels are timed. Each compute node carries its time
(:mod:`~simpy_astra.workloads.megatron.layers`), each communication node its NCCL stream.

Generator parameters: ``args`` (a string or list), ``gpus``, ``gpu`` (the
:class:`~simpy_astra.workloads.megatron.kernels.Gpu` fields; a scenario's cluster fills both).
"""

from __future__ import annotations

import json
from typing import Any

from simpy_astra.config.cluster import Gpu
from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.arguments import MegatronJob, parse
from simpy_astra.workloads.megatron.rules import check_hardware
from simpy_astra.workloads.megatron.schedule import Layout, build_stage
from simpy_astra.workloads.trace_output import check_prefix
from simpy_astra.workloads.transformer.writer import (
    Units,
    write_rank_files,
    write_rank_summary,
    write_trace,
)

#: where a generator parameter came from, when no scenario file names it
WHERE = "workload"


def job_and_gpu(params: dict[str, Any], where: str = WHERE) -> tuple[MegatronJob, Gpu]:
    unknown = sorted(set(params) - {"args", "gpus", "gpu"})
    if unknown:
        raise InputError(f"{where}: unknown parameter {unknown[0]!r} (give args; a scenario's cluster: "
                         f"gives gpus and gpu)")
    gpus, gpu = params.get("gpus"), params.get("gpu")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1 or not isinstance(gpu, dict):
        raise InputError(f"{where}: needs a cluster: beside it (cluster: {{preset: dgx-a100-80gb, gpus: N}}); "
                         f"it gives the GPU count and the GPU")
    gpu_model = Gpu(**gpu)
    job = parse(params.get("args"), gpus, f"{where}.args")
    check_hardware(job.fp8, gpu_model, f"{where}.args")
    return job, gpu_model


_built: dict[str, tuple[MegatronJob, Layout, list]] = {}


def _build(params: dict[str, Any]) -> tuple[MegatronJob, Layout, list]:
    key = json.dumps(params, sort_keys=True)
    if key not in _built:
        _built.clear()
        job, gpu = job_and_gpu(params)
        graphs = [build_stage(job, gpu, stage) for stage in range(job.pp)]
        _built[key] = (job, Layout.build(job), graphs)
    return _built[key]


def generate(params: dict[str, Any], prefix: str) -> str:
    check_prefix(prefix)
    job, layout, graphs = _build(params)
    return write_trace(prefix, graphs, layout, job.gpus, Units(False), where="generate megatron")


def group_dimensions(params: dict[str, Any]) -> dict[int, str]:
    """Comm-group id -> its parallel dimension (``tp``, ``cp``, ``dp``, ``ep``, ``edp``, and
    ``emb``: the first and last stage's tied embedding), as the traces' metadata records them."""
    job, _gpu = job_and_gpu(params)
    return {gid: dim for (dim, _rank), gid in Layout.build(job).group_of.items()}


def write_summary(params: dict[str, Any], prefix: str) -> str:
    """Lazy entry: comm groups and the rank summary (a rank's class is its pipeline stage)."""
    check_prefix(prefix)
    job, layout, graphs = _build(params)
    return write_rank_summary(prefix, "megatron", params, graphs, layout, job.gpus)


def write_ranks(params: dict[str, Any], prefix: str, ranks: list[int]) -> None:
    job, layout, graphs = _build(params)
    try:
        write_rank_files(prefix, graphs, layout, Units(False), ranks)
    finally:
        _built.clear()


def main(argv: list[str]) -> int:
    """``generate megatron --gpus N [--preset P] --output PREFIX -- ARGS...``."""
    import argparse
    import textwrap

    from simpy_astra.cli.args import ArgumentParser
    from simpy_astra.config.cluster import load_cluster, presets
    from simpy_astra.workloads.megatron.arguments import SMALL_EFFECT
    from simpy_astra.workloads.megatron.arguments import parser as megatron_parser

    split = argv.index("--") if "--" in argv else len(argv)
    own, rest = argv[:split], argv[split + 1:]
    intro = textwrap.fill("Megatron-LM arguments that are modelled are listed below. Other arguments that "
                          "change a step's time are refused by name; paths, logging, learning rate and the "
                          "like are accepted. These are accepted and change under 1% of a step: "
                          + ", ".join(SMALL_EFFECT) + ".", 79, break_on_hyphens=False)
    modelled = megatron_parser().format_help().split("\n", 2)[2]
    p = ArgumentParser(prog="simpy-astra generate megatron", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=textwrap.fill("Write a Megatron-LM training step as Chakra traces: generate "
                                                 "megatron --gpus N --output PREFIX -- <pretrain_gpt.py "
                                                 "arguments>", 79),
                       epilog=f"{intro}\n\nMegatron-LM arguments (after --):\n{modelled.split(chr(10), 1)[1]}")
    p.add_argument("--gpus", type=int, required=True, help="GPUs of the job (dp = gpus / (tp x pp x cp))")
    p.add_argument("--preset", default="dgx-a100-80gb", help=f"cluster preset whose GPU times the kernels: "
                                                              f"{', '.join(presets())} (default dgx-a100-80gb)")
    p.add_argument("--output", required=True, help="PREFIX: writes PREFIX.{rank}.et and PREFIX.json")
    args = p.parse_args(own)
    if not rest:
        raise InputError("generate megatron: give the Megatron-LM arguments after --")
    cluster = load_cluster({"preset": args.preset, "gpus": args.gpus}, "--preset")
    job = parse(rest, args.gpus, "generate megatron: arguments after --", "generate megatron: --gpus")  # errors worded for the command line
    check_hardware(job.fp8, cluster.gpu_model(), f"generate megatron: --preset {args.preset}")
    params = {"args": rest, "gpus": args.gpus, "gpu": cluster.gpu}
    groups = generate(params, args.output)
    print(f"wrote {args.gpus} traces {args.output}.{{0..{args.gpus - 1}}}.et and {groups}")
    return 0
