"""``simpy-astra run SCENARIO.yaml`` and the ASTRA-sim flag form: parse, simulate, report.

Every output file is checked before the run starts; figures go to stdout in the reference's
lines, the summary, timeline and progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError
from simpy_astra.report.links import busiest_links, link_fields
from simpy_astra.statistics import NpuReport


def _astra_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="simpy-astra",
        description="Simulate a distributed training workload (ASTRA-sim 2.0 compatible flags).",
    )
    p.add_argument("--workload-configuration", required=True, help="Chakra ET prefix (PREFIX.{npu}.et)")
    p.add_argument("--system-configuration", required=True, help="system JSON")
    p.add_argument("--network-configuration", required=True, help="network YAML")
    p.add_argument("--remote-memory-configuration", required=True, help="remote memory JSON")
    p.add_argument("--comm-group-configuration", default="empty", help="communicator group JSON")
    _add_plugin_flag(p)
    p.add_argument("--network-backend", default="congestion_unaware",
                   help="congestion_unaware (analytical), congestion_aware (links queue messages) or "
                        "packet (packets pipelined, ports shared round robin over inputs, buffers and credits)")
    p.add_argument("--num-queues-per-dim", type=int, default=1, help="queues per dimension (1 to 4096)")
    p.add_argument("--injection-scale", type=float, default=1.0)
    p.add_argument("--compute-scale", type=float, default=1.0, help="accepted, unused (as in ASTRA-sim)")
    p.add_argument("--comm-scale", type=float, default=1.0, help="accepted, unused (as in ASTRA-sim)")
    p.add_argument("--rendezvous-protocol", default="false")
    p.add_argument("--logging-configuration", default="empty")
    p.add_argument("--logging-folder", default="log")
    p.add_argument("--json-out", default=None, help="write every figure as JSON to this file")
    p.add_argument("--num-passes", type=int, default=1,
                   help="training iterations when the workload is an ASTRA-sim 1.0 .txt file")
    _add_report_flags(p)
    return p


def astra_help() -> str:
    """The ASTRA-sim flag form's help (for the top-level ``--help``)."""
    return _astra_parser().format_help()


def _add_report_flags(p: argparse.ArgumentParser) -> None:
    """Report files, and the one engine switch that depends on them."""
    p.add_argument("--fold-symmetry", choices=("on", "off"), default=None,
                   help="simulate each orbit of symmetric NPUs once (default on; see docs/performance.md, "
                        "'Symmetry folding'); --csv-out and --trace-out switch it off")
    p.add_argument("--csv-out", default=None, metavar="DIR",
                   help="write nodes.csv (and layers.csv for text workloads) into DIR")
    p.add_argument("--trace-out", default=None, metavar="FILE.json",
                   help="write a Chrome/Perfetto trace: per NPU compute, communication and chunk tracks")
    p.add_argument("--plots", default=None, metavar="DIR",
                   help="write breakdown.png (each NPU's time by part) and timeline.png into DIR (matplotlib)")


def _add_plugin_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first: it may register collective algorithms and topologies "
                        "(repeatable; names like pkg.mod:fn in configs work without it)")


def _run_parser() -> argparse.ArgumentParser:
    from simpy_astra.config import scenario

    p = ArgumentParser(
        prog="simpy-astra run", description="Run a scenario YAML (also: simpy-astra SCENARIO.yaml).",
        epilog=scenario.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", help="scenario YAML; its fields are listed below (examples: scenarios/*.yaml "
                                    "in the source tree, README 'Running')")
    p.add_argument("--network-backend", default=None, help="override the scenario's backend")
    p.add_argument("--json-out", default=None, help="write every figure as JSON to this file")
    p.add_argument("--quiet", action="store_true", help="print only the reference's lines")
    p.add_argument("--isolation", action="store_true",
                   help="multi-job scenarios: also run each job alone on the same network and report "
                        "its slowdown (shared / alone)")
    _add_plugin_flag(p)
    _add_report_flags(p)
    return p


def _print_report(report: NpuReport) -> None:
    print("\n".join(report.lines()), flush=False)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (ru_maxrss: KB on Linux, bytes on macOS)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _write_json(path: str, reports: list[NpuReport], wall_s: float, links: list | None,
                cost=None, jobs: list | None = None, link_jobs: dict | None = None, training=None,
                breakdowns: dict | None = None) -> None:
    npus = {str(r.npu_id): r.as_dict() for r in sorted(reports, key=lambda r: r.npu_id)}
    for npu_id, b in (breakdowns or {}).items():  # where each NPU's time went (report/breakdown.py)
        if str(npu_id) in npus:
            npus[str(npu_id)]["breakdown_ns"] = b.ordered()
    data: dict = {
        # the step's time: when the last NPU finished
        "iteration_time_ns": max((r.finished_cycles for r in reports), default=0),
        "npus": npus,
        "simulator_wall_s": round(wall_s, 3),
        "peak_rss_mb": peak_rss_mb(),
    }
    if cost is not None:  # the network cost model (simpy_astra/cost_model.py)
        data["cost_usd"] = cost.total_usd
        data["cost"] = cost.as_dict()
    if training is not None:  # a generated training job's own figures (Megatron's TFLOP/s, MFU)
        data["training"] = training.as_dict()
    if jobs is not None:  # multi-job runs: per job (simpy_astra/jobs.py)
        data["jobs"] = {j.name: j.as_dict() for j in jobs}
    if links is not None:  # link-level runs (aware, packet): every directed link, busiest first
        data["links"] = [link_fields(stat) for stat in links]
        if link_jobs is not None:
            for record, stat in zip(data["links"], links, strict=True):
                record["bytes_by_job"] = link_jobs.get((stat.src, stat.dst), {})
    from simpy_astra import files

    with files.open_output(path, "--json-out") as f:
        json.dump(data, f, indent=1)


def _name_fits(path: str, flag: str) -> None:
    """A path the OS accepts: no name over 255 bytes, no NUL (else the run would fail at the end)."""
    from simpy_astra.config.readers import short_path

    if "\0" in path or any(len(os.fsencode(part)) > 255 for part in path.split(os.sep)) \
            or len(os.fsencode(os.path.abspath(path))) >= 4096:
        raise InputError(f"{flag}: {short_path(path)} is not a path the system accepts (a name over 255 "
                         f"bytes, a path over 4096, or a NUL character)")


def _writable_file(path: str | None, flag: str) -> None:
    """Refuse an output file that cannot be written, before the run (not after minutes of it)."""
    if path is None:
        return
    if not path:
        raise InputError(f"{flag}: must be a file path (got an empty string)")
    _name_fits(path, flag)
    from simpy_astra import files

    files.check_output(path, flag)  # a FIFO, a device, one of the run's inputs, a missing folder


def _writable_dir(path: str | None, flag: str) -> None:
    """A folder that exists and is writable, or can be made (its nearest existing parent is)."""
    if path is None:
        return
    if not path:
        raise InputError(f"{flag}: must be a folder path (got an empty string)")
    _name_fits(path, flag)
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing.rstrip(os.sep)) or "."
    if not os.path.isdir(existing):
        raise InputError(f"{flag}: cannot write into {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag}: cannot write into {path}: permission denied on {existing}")


def check_outputs(inputs, json_out: str | None, csv_out: str | None, trace_out: str | None,
                  plots: str | None = None) -> None:
    """Every file a run will write, checked before it starts; each error names the flag or field.
    An output that is one of the run's inputs is refused (an ET rank counts although a folded
    run reads only some of them)."""
    import re

    prefixes = {os.path.realpath(p) for p in (inputs.workload_prefix, *(j.workload_prefix for j in inputs.jobs or ()))
                if p}
    for path, flag in ((json_out, "--json-out"), (trace_out, "--trace-out")):
        m = re.fullmatch(r"(.*)\.\d+\.et", os.path.realpath(path)) if path else None
        if m and m.group(1) in prefixes:
            raise InputError(f"{flag}: {path} is one of this run's inputs (a workload ET rank); write the "
                             f"output to another path")
    _writable_file(json_out, "--json-out")
    _writable_dir(csv_out, "--csv-out")
    _writable_dir(plots, "--plots")
    _writable_file(trace_out, "--trace-out")
    cfg = inputs.system
    if cfg.track_local_mem:
        prefix = cfg.local_mem_trace_filename
        folder = os.path.dirname(prefix) or "."
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
            raise InputError.at(cfg.source, "local-mem-trace-filename",
                                f"is {prefix!r}, but folder {folder} does not exist or is not writable")


def _simulate(inputs, json_out: str | None, rich_summary: bool, csv_out: str | None = None,
              trace_out: str | None = None, fold: str | None = None, isolation: bool = False,
              plots: str | None = None) -> int:
    from simpy_astra.simulation import Simulation

    check_outputs(inputs, json_out, csv_out, trace_out, plots)
    if isolation and inputs.jobs is None:
        raise InputError("--isolation: needs a scenario with jobs: (it runs each job alone to compare)")
    t0 = time.perf_counter()
    if fold is not None:
        inputs.fold_symmetry = fold == "on"
    if csv_out or trace_out:  # per-node reports and traces list every NPU's own events
        inputs.fold_symmetry = False
    sim = Simulation(inputs, on_report=_print_report)
    from simpy_astra.folding import NOTE_FROM_NPUS
    from simpy_astra.folding.run import fold_requested

    if sim.jobs is not None and fold_requested(inputs.fold_symmetry):
        print("note: symmetry folding is off: several jobs share the network", file=sys.stderr, flush=True)

    if sim.fold_note and len(sim.npus) >= NOTE_FROM_NPUS:  # before time starts: what not folding costs
        print(f"note: {sim.fold_note}", file=sys.stderr, flush=True)
    record = None  # node timings are recorded only for reports that need them
    if csv_out or trace_out or rich_summary or json_out or plots:
        from simpy_astra.report.recorder import attach

        record = attach(sim, record_chunks=bool(trace_out))
    from simpy_astra.report.console import progress_wanted, run_with_progress

    reports = run_with_progress(sim) if progress_wanted() else sim.run()
    jobs = link_jobs = None
    if sim.jobs is not None:
        from simpy_astra.isolation import finish_alone
        from simpy_astra.jobs import job_results

        jobs = job_results(sim.jobs, reports)
        print("\n".join(j.line() for j in jobs))
        if isolation:
            for result, job in zip(jobs, sim.jobs, strict=True):
                result.alone_cycles = finish_alone(inputs, job)
        if sim.link_bytes_by_job is not None:
            link_jobs = sim.link_bytes_by_job.by_label()
    wall = time.perf_counter() - t0
    sys.stdout.flush()
    for warning in sim.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if sim.written_files:  # the system config asked for them (track-local-mem): say where they went
        first, last = sim.written_files[0], sim.written_files[-1]
        shown = first if len(sim.written_files) == 1 else f"{first} .. {os.path.basename(last)}"
        print(f"note: wrote {len(sim.written_files)} local-memory trace(s) {os.path.abspath(shown)} "
              f"(local-mem-trace-filename in {inputs.system.source})", file=sys.stderr)
    links = busiest_links(sim.network)
    from simpy_astra.cost_model import network_cost

    cost = network_cost(inputs.network)
    training = None
    if inputs.training is not None and reports:
        training = inputs.training(max(r.finished_cycles for r in reports))
        for line in training.lines():
            print(line, file=sys.stderr)
    breakdowns = None
    if record is not None:
        from simpy_astra.report.breakdown import npu_breakdowns

        breakdowns = npu_breakdowns(record, {r.npu_id: r.finished_cycles for r in reports}, segments=bool(plots))
    if json_out:
        _write_json(json_out, reports, wall, links, cost, jobs, link_jobs, training, breakdowns)
    if record is not None and csv_out:
        from simpy_astra.report.csv_tables import write_csv_reports

        write_csv_reports(record, csv_out, breakdowns)
    if record is not None and trace_out:
        from simpy_astra.report.timeline import write_chrome_trace

        write_chrome_trace(record, trace_out)
    if breakdowns is not None and plots:
        from simpy_astra.report.plots import write_plots

        write_plots(breakdowns, plots)
    if rich_summary:
        from simpy_astra.report.console import Output, print_breakdown, print_summary
        from simpy_astra.report.timeline import print_timeline

        out = Output()
        print_summary(reports, wall, links, out=out, cost=cost, jobs=jobs, link_jobs=link_jobs)
        print_timeline(record, out=out)
        print_breakdown(breakdowns, out)
    return 0




def run_scenario(argv: list[str]) -> int:
    """``run SCENARIO.yaml [flags]``."""
    args = _run_parser().parse_args(argv)
    from simpy_astra.config.scenario import load_plugins, load_scenario

    load_plugins(args.plugin, "--plugin")
    inputs = load_scenario(args.scenario, backend=args.network_backend)
    return _simulate(inputs, args.json_out, rich_summary=not args.quiet, csv_out=args.csv_out,
                     trace_out=args.trace_out, fold=args.fold_symmetry, isolation=args.isolation,
                     plots=args.plots)


def run_astra_flags(argv: list[str]) -> int:
    """The reference binary's flags. An unknown flag is an error (ASTRA-sim ignores it, so a
    mistyped ``--netwrok-backend=packet`` would silently run the default backend)."""
    args = _astra_parser().parse_args(argv)
    for flag in ("workload", "system", "network", "remote_memory"):
        if not getattr(args, f"{flag}_configuration"):
            raise InputError(f"--{flag.replace('_', '-')}-configuration: must be a file path (got an empty "
                             f"string)")
    for flag, value in (("--compute-scale", args.compute_scale), ("--comm-scale", args.comm_scale)):
        if value != 1.0:
            print(f"warning: {flag} {value} is accepted but changes nothing (ASTRA-sim reads it "
                  f"and does not use it either)", file=sys.stderr)
    from simpy_astra.config.scenario import inputs_from_astra_flags, load_plugins

    load_plugins(args.plugin, "--plugin")
    inputs = inputs_from_astra_flags(
        workload=args.workload_configuration,
        system=args.system_configuration,
        network=args.network_configuration,
        remote_memory=args.remote_memory_configuration,
        comm_groups=args.comm_group_configuration,
        backend=args.network_backend,
        queues_per_dim=args.num_queues_per_dim,
        injection_scale=args.injection_scale,
        num_passes=args.num_passes,
    )
    return _simulate(inputs, args.json_out, rich_summary=False, csv_out=args.csv_out,
                     trace_out=args.trace_out, fold=args.fold_symmetry, plots=args.plots)

