"""``simpy-astra generate megatron``: a Megatron-LM training step as Chakra traces.

A scenario names it as ``workload: {generate: megatron, args: "<pretrain_gpt.py arguments>"}``
beside a ``cluster:``, which gives the GPU count (Megatron's data-parallel size follows from
it) and the GPU whose kernels are timed. Each compute node carries its time
(:mod:`~simpy_astra.workloads.megatron.layers`), each communication node its NCCL stream.

Generator parameters: ``args`` (a string or list), ``gpus``, ``gpu`` (the
:class:`~simpy_astra.workloads.megatron.kernels.Gpu` fields) and ``tp_link_gb_s`` (the rate a
tensor-parallel collective runs at; 0: unknown); a scenario's cluster fills those three.
``schedule`` (optional) names the pipeline schedule instead of Megatron-LM's choice: one of
the registry's (:mod:`simpy_astra.workloads.schedules.registry`), a plug-in's, or
``package.module:function``.
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.config.cluster import Cluster, load_cluster
from simpy_astra.config.cluster_presets import presets
from simpy_astra.errors import InputError
from simpy_astra.plugins import PluginError
from simpy_astra.workloads.generated import WorkloadLayout
from simpy_astra.workloads.megatron import attention_backend
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.flag_kinds import nearest_flag
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import Gpu
from simpy_astra.workloads.megatron.layers import middle_chunk
from simpy_astra.workloads.megatron.modelled_arguments import parser as megatron_parser
from simpy_astra.workloads.megatron.rank_layout import Layout
from simpy_astra.workloads.megatron.report import TrainingFigures, figures
from simpy_astra.workloads.megatron.rules import check_hardware
from simpy_astra.workloads.megatron.schedule import build_stage
from simpy_astra.workloads.megatron.slow_figures import slow_figures
from simpy_astra.workloads.megatron.steps import Compute
from simpy_astra.workloads.megatron.unmodelled_flags import SMALL_EFFECT
from simpy_astra.workloads.schedules import registry as schedules
from simpy_astra.workloads.schedules.deadlock import stall
from simpy_astra.workloads.schedules.task import takes_costs
from simpy_astra.workloads.trace_output import check_prefix
from simpy_astra.workloads.transformer.writer import (
    Fix,
    Units,
    write_rank_files,
    write_rank_summary,
    write_trace,
)

#: where a generator parameter came from, when no scenario file names it
WHERE = "workload"


def job_and_gpu(params: dict[str, Any], where: str = WHERE, gpus_where: str | None = None,
                gpus_per_node: int | None = None) -> tuple[MegatronJob, Gpu]:
    """The parsed job and its GPU; ``gpus_where`` names where the GPU count was written (a
    scenario's ``cluster.gpus``) for errors about it, ``gpus_per_node`` a node's GPUs (a
    cluster's; None: unknown)."""
    unknown = sorted(set(params) - {*PARAMS, SCHEDULE_SOURCE})
    if unknown:  # named by its dotted path: 'workload: unknown parameter' left which workload key unsaid
        key, field = str(unknown[0]), where.rpartition(": ")[2]
        flag = nearest_flag("--" + key.lstrip("-"))
        fix = (f"a Megatron-LM argument goes in {field}.args (\"--{flag} ...\"); remove {field}.{key}" if flag else
               "it takes args (Megatron-LM's arguments) and schedule; a scenario's cluster: gives gpus and gpu")
        raise InputError(f"{where}.{key}: generate megatron takes no parameter {key!r}; {fix}")
    gpus, gpu = params.get("gpus"), params.get("gpu")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1 or not isinstance(gpu, dict):
        raise InputError(f"{where}: needs a cluster: beside it (cluster: {{preset: dgx-a100-80gb, gpus: N}}); "
                         f"it gives the GPU count and the GPU")
    gpu_model = Gpu(**gpu)
    job = on_hardware(parse(params.get("args"), gpus, f"{where}.args", gpus_where, gpus_per_node), gpu_model,
                      f"{where}.args")
    if "schedule" in params:
        job = _with_schedule(params["schedule"], job, gpu_model, f"{where}.schedule")
    return job, gpu_model


def on_hardware(job: MegatronJob, gpu: Gpu, where: str) -> MegatronJob:
    """``job`` as it runs on ``gpu``: refused where Megatron refuses that GPU (FP8 without FP8
    units, grouped GEMM before Ampere, an attention backend its kernels rule out), with the
    attention Transformer Engine picks there. A sweep's ``--list`` asks it too, so that such a
    point is marked before it runs."""
    check_hardware(job.fp8_requested, gpu, where, job.moe_grouped_gemm)
    return attention_backend.on_gpu(job, gpu.name, where)


#: the trace cache's entry for a plug-in schedule's source (so an edited schedule runs again)
SCHEDULE_SOURCE = "schedule_source"
#: the parameters a scenario's ``{generate: megatron, ...}`` takes (a cluster: gives gpus and gpu)
PARAMS = ("args", "gpus", "gpu", "tp_link_gb_s", "schedule")


def _with_schedule(name: Any, job: MegatronJob, gpu: Gpu, where: str) -> MegatronJob:
    """``job`` run by the pipeline schedule a scenario names (``workload.schedule``):
    registered (Megatron's own, a plug-in's) or ``package.module:function``, asked once per
    stage here so that what it raises or returns out of contract names ``where``, before any
    trace is written; one that takes the passes' costs is given a middle chunk's."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: must name a pipeline schedule, e.g. 1f1b (got {name!r})")
    try:
        job = replace(job, pipeline_schedule=name, pass_costs=())
        if takes_costs(schedules.lookup(name)):
            job = replace(job, pass_costs=_pass_costs(job, gpu))
        orders = [job.stage_order(stage) for stage in range(job.pp)]
    except (PluginError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: {exc}") from None
    if job.pp == 1:  # Megatron-Core's get_forward_backward_func: forward_backward_no_pipelining
        raise InputError(f"{where}: pipeline schedule '{name}' on one pipeline stage: Megatron runs no pipeline "
                         f"schedule then (each micro-batch's forward and backward in turn); remove "
                         f"workload.schedule, or set --pipeline-model-parallel-size 2 or more")
    if job.v_placement and (job.virtual_stages % 2 or len(set(job.split)) > 1):
        raise InputError(f"{where}: pipeline schedule '{name}' places the chunks in a V: it needs an even number "
                         f"of chunks a stage and the layers split evenly (--virtual-pipeline-model-parallel-size 2, "
                         f"without --pipeline-model-parallel-layout or an uneven first or last stage)")
    stuck = stall(orders, lambda stage, chunk: job.chunk_place(stage, chunk).index, job.stage_of)
    if stuck:  # each stage's order is fine alone; together?
        raise InputError(f"{where}: pipeline schedule '{name}': its stages' orders wait on each other for ever "
                         f"({job.micro_batches} micro-batches, {job.virtual_stages} chunk(s)): {stuck}; order each "
                         f"stage's tasks so that what it waits for comes earlier in the other stage's")
    return job


def _pass_costs(job: MegatronJob, gpu: Gpu) -> tuple[float, float, float]:
    """One micro-batch through chunk 0 of stage 1 (a middle one, no embedding or loss; stage 0
    at pp 1): the kernels' seconds of its forward, input gradient and weight gradient."""
    model, layers = middle_chunk(job, gpu)
    inputs, weights = model.backward_split(layers, False, False)
    return tuple(sum(s.total_s for s in steps if isinstance(s, Compute))  # type: ignore[return-value]
                 for steps in (model.forward(layers, False, False), inputs, weights))


@dataclass(frozen=True)
class MegatronRun:
    """A Megatron job on its GPU, parsed once per scenario: what every registry entry takes.
    Its layout and stage graphs are built on first use and kept with it (a cold run builds
    them for the rank summary and writes the ranks it simulates from the same ones)."""

    job: MegatronJob
    gpu: Gpu
    #: the generator's parameters (args, gpus, gpu's fields): what keys the trace cache
    params: dict[str, Any] = field(compare=False)
    #: where the arguments were written (``s.yaml: workload.args``), for errors met later
    where: str = field(default=WHERE, compare=False)
    @property
    def tp_link_gb_s(self) -> float:
        """The rate a GPU's tensor-parallel collectives run at (:func:`tp_link_gb_s`; the
        parameters carry it, as it shapes the trace), 0: unknown."""
        return float(self.params.get("tp_link_gb_s", 0.0))

    @cached_property
    def layout(self) -> Layout:
        return Layout.build(self.job)

    @cached_property
    def graphs(self) -> list:
        return [build_stage(self.job, self.gpu, stage, self.tp_link_gb_s) for stage in range(self.job.pp)]


def tp_link_gb_s(job: MegatronJob, cluster: Cluster) -> float:
    """The rate (10^9 B/s) a GPU's tensor-parallel ring moves bytes at on ``cluster``: NVLink as
    NCCL sustains it where the group fits in a node, else the GPU's rail. It sizes the window
    in which compute beside such a collective shares the GPU's SMs with NCCL's kernels."""
    if job.tp <= cluster.gpus_per_node:
        return float(cluster.node["nvlink_gib_s"]) * 2**30 / 1e9
    return cluster.rail_gib_s() * 2**30 / 1e9


def _given_rate(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise InputError(f"{where}.tp_link_gb_s: {value!r} is not a rate; give 10^9 B/s as a number >= 0 "
                         f"(0: unknown), or a cluster: that gives it")


def prepare(params: dict[str, Any], cluster: Any, where: str = WHERE) -> tuple[dict[str, Any], MegatronRun]:
    """Registry entry: the arguments parsed once; a scenario's ``cluster`` gives the GPU count
    and the GPU (they join the parameters, so they key the cache)."""
    gpus_where = None
    if cluster is not None:
        given = sorted(set(params) & {"gpus", "gpu", "tp_link_gb_s"})
        if given:  # the cluster's would replace it without a word
            hint, field = {"gpus": ("the GPU count", "cluster.gpus"),
                           "gpu": ("the GPU's figures (cluster.gpu: overrides them)", "cluster.gpu"),
                           # no cluster key of that name: the rate is NVLink's, or a NIC's when tp spans nodes
                           "tp_link_gb_s": ("the tensor-parallel link rate (NVLink's, or a NIC's when tp spans "
                                            "nodes)", "cluster.nvlink_gib_s (or cluster.inter_node_gbit_s)")}[given[0]]
            raise InputError(f"{where}.{given[0]}: the cluster: gives {hint}; set {field} and "
                             f"remove workload.{given[0]}")
        params = {**params, "gpus": cluster.gpus, "gpu": cluster.gpu}
        gpus_where = f"{where.rpartition(': ')[0]}: cluster.gpus" if ": " in where else "cluster.gpus"
    job, gpu = job_and_gpu(params, where, gpus_where, None if cluster is None else cluster.gpus_per_node)
    if cluster is None:
        _given_rate(params.get("tp_link_gb_s", 0.0), where)
    else:
        params = {**params, "tp_link_gb_s": tp_link_gb_s(job, cluster)}  # it shapes the trace: it keys the cache
    params = {k: v for k, v in params.items() if k != SCHEDULE_SOURCE}
    if "schedule" in params and schedules.source_digest(job.schedule_name):
        params[SCHEDULE_SOURCE] = schedules.source_digest(job.schedule_name)
    return params, MegatronRun(job, gpu, params, where)


def layout(run: MegatronRun) -> WorkloadLayout:
    """Registry entry: the job's ranks, its parallel dimensions in rank order (how a cluster's
    GPUs are written as network dimensions) and each comm group's dimension (``tp``, ``cp``,
    ``dp``, ``ep``, ``edp``, and ``emb``: the first and last stage's tied embedding), as the
    traces' metadata records them."""
    return WorkloadLayout(ranks=run.job.gpus, blocks=Layout.blocks(run.job),
                          dimensions={gid: dim for (dim, _rank), gid in run.layout.group_of.items()},
                          warnings=run.job.warnings, plays_messages=run.job.plays_messages,
                          played_pairs=Layout.played_pairs(run.job) if run.job.plays_messages else (),
                          gathers=run.job.gathers)


def report(run: MegatronRun, iteration_time_ns: int) -> TrainingFigures:
    """Registry entry: the step's figures (TFLOP/s, MFU, memory) from its simulated time."""
    return figures(run.job, run.gpu, iteration_time_ns)


def generate(run: MegatronRun, prefix: str) -> str:
    check_prefix(prefix)
    return write_trace(prefix, run.graphs, run.layout, run.job.gpus, Units(False), run.where, _too_large(run))


def write_summary(run: MegatronRun, prefix: str) -> str:
    """Lazy entry: comm groups and the rank summary (a rank's class is its pipeline stage)."""
    check_prefix(prefix)
    return write_rank_summary(prefix, "megatron", run.params, run.graphs, run.layout, run.job.gpus)


def write_ranks(run: MegatronRun, prefix: str, ranks: list[int]) -> None:
    write_rank_files(prefix, run.graphs, run.layout, Units(False), ranks, run.where, _too_large(run))


def _too_large(run: MegatronRun) -> tuple[str, Fix]:
    """What a Megatron trace blames for a value past its field, and the fix (:func:`stage_writers`):
    past the horizon, the GPU's figures that time the kernels of the slowest kind, by name."""
    # a scenario's cluster.gpu overrides the preset's figure; the command line has only --preset
    prefix = "cluster.gpu." if ": " in run.where else "the preset's gpu."

    def fix(kind: str, over: float) -> str:
        named = slow_figures(run.job, run.gpu, kind, over) if kind else []
        if not named:
            return "use smaller ones"
        figures = ", ".join(f"{prefix}{name}: {getattr(run.gpu, name):g}" for name in named)
        return f"raise {figures} (what its {kind} kernels run at), or use smaller ones"

    return f"the model's dimensions and batch on the {run.gpu.name}", fix


def main(argv: list[str]) -> int:
    """``generate megatron --gpus N [--preset P] --output PREFIX -- ARGS...``."""
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
                                                              f"{', '.join(presets())}, or the path of your own "
                                                              f"(default dgx-a100-80gb)")
    p.add_argument("--output", required=True, help="PREFIX: writes PREFIX.{rank}.et and PREFIX.json")
    args = p.parse_args(own)
    if not rest:
        raise InputError("generate megatron: give the Megatron-LM arguments after --")
    try:
        cluster = load_cluster({"preset": args.preset, "gpus": args.gpus}, "cluster")
    except InputError as exc:  # worded for a scenario's cluster.FIELD: name the flag given
        raise InputError(exc.message.replace("cluster.gpus:", "--gpus:").replace("cluster.preset:", "--preset:")
                         ) from None
    job = parse(rest, args.gpus, "generate megatron: arguments after --", "generate megatron: --gpus")  # errors worded for the command line
    gpu = cluster.gpu_model()
    job = on_hardware(job, gpu, f"generate megatron: --preset {args.preset}")
    run = MegatronRun(job, gpu, {"args": rest, "gpus": args.gpus, "gpu": cluster.gpu,
                                 "tp_link_gb_s": tp_link_gb_s(job, cluster)}, "generate megatron")
    for line in job.warnings:
        print(f"warning: {line}", file=sys.stderr)
    groups = generate(run, args.output)
    print(f"wrote {args.gpus} traces {args.output}.{{0..{args.gpus - 1}}}.et and {groups}")
    return 0
