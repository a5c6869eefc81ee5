"""``simpy-astra run SCENARIO.yaml`` and the ASTRA-sim flag form: parse, simulate, report.

Every output file is checked before the run starts. stdout is the answer: for ASTRA-sim
inputs the reference's per-NPU lines, exactly; for a real job (a scenario with ``cluster:``)
the iteration time, TFLOP/s, MFU, tokens/s, memory and where the time went, its per-NPU
lines only with ``--reference-lines``. ``--quiet`` prints the headline alone (with
``--reference-lines``, only the reference's lines). The summary, timeline, notes and
progress go to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from simpy_astra.cli.args import ArgumentParser, add_plugin_flag, backends_help, plain
from simpy_astra.cli.output_checks import check_outputs, distinct_outputs, writable_dir
from simpy_astra.cli.run_reports import Finished, RunPlan, on_terminal, write_reports
from simpy_astra.engine.statistics import NpuReport
from simpy_astra.errors import InputError
from simpy_astra.network.backends import DEFAULT_BACKEND
from simpy_astra.report.console import say_wrapped
from simpy_astra.report.links import busiest_links
from simpy_astra.report.preparing import PreparingNotice
from simpy_astra.report.trace_size import check_before_build, check_built

if TYPE_CHECKING:
    from simpy_astra.report.console import ProgressLine
    from simpy_astra.report.log_folder import LogFolder

#: ASTRA-sim's flags that a script may pass and that change nothing here: flag -> (metavar,
#: what it does there and why it does nothing here)
IGNORED_ASTRA_FLAGS: dict[str, tuple[str, str]] = {
    "--compute-scale": ("X", "ASTRA-sim reads it and does not use it either"),
    "--comm-scale": ("X", "ASTRA-sim stores it and does not use it either"),
    "--rendezvous-protocol": ("true|false", "ASTRA-sim's rendezvous handshake before each send is not "
                                            "modelled: sends go eagerly"),
    "--logging-configuration": ("FILE", "ASTRA-sim's spdlog TOML; messages here go to stderr, and to "
                                        "--logging-folder's files"),
}


def ignored_flag_warnings(args: argparse.Namespace) -> list[str]:
    """One line per ignored ASTRA-sim flag the command line gave (a scale of 1 and a rendezvous
    of false change nothing in ASTRA-sim either, and are not worth a line)."""
    lines = []
    if args.num_passes < 1:
        raise InputError(f"--num-passes: must be >= 1 (got {args.num_passes}); it counts training iterations")
    if args.num_passes != 1 and not args.workload_configuration.endswith(".txt"):
        lines.append(f"warning: --num-passes {args.num_passes} is accepted but changes nothing (it repeats an "
                     f"ASTRA-sim 1.0 .txt workload; a Chakra ET prefix runs its graph once)")
    for flag, (_, what) in IGNORED_ASTRA_FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        if flag.endswith("-scale"):
            try:
                if float(value) == 1.0:
                    continue
            except ValueError:
                raise InputError(f"{flag}: must be a number (got {value!r})") from None
        # ASTRA-sim reads a bool as cxxopts does: (t|T)(rue)?|1 or (f|F)(alse)?|0
        if flag == "--rendezvous-protocol" and value.strip().lower() not in ("true", "t", "1", "false", "f", "0"):
            raise InputError(f"{flag}: must be true or false, as ASTRA-sim reads it (got {value!r})")
        if flag == "--rendezvous-protocol" and value.strip().lower() in ("false", "f", "0"):
            continue
        if flag == "--rendezvous-protocol":
            lines.append(f"warning: {flag} {value} is accepted but not modelled: sends go eagerly, so "
                         f"the figures lack ASTRA-sim's handshake delay")
        else:
            lines.append(f"warning: {flag} {value} is accepted but changes nothing ({what})")
    return lines


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
    add_plugin_flag(p)
    p.add_argument("--network-backend", default=DEFAULT_BACKEND, metavar="NAME",
                   help=backends_help(f"default {DEFAULT_BACKEND}"))
    p.add_argument("--num-queues-per-dim", type=int, default=1, limits=(1, 4096),  # config.scenario's bound
                   help="queues per dimension (1 to 4096; default 1)")
    p.add_argument("--injection-scale", type=float, default=1.0,
                   help="multiplies the system JSON's endpoint-delay when that key is present (as in "
                        "ASTRA-sim; default 1)")
    p.add_argument("--logging-folder", default=None, metavar="DIR",
                   help="write ASTRA-sim's log files into DIR (made if missing): log.log, every line "
                        "printed and each warning, and err.log, the error that stops a run; appended "
                        "to, in ASTRA-sim's line format (ASTRA-sim writes log/ without the flag; here "
                        "no log files unless asked)")
    for flag, (metavar, what) in IGNORED_ASTRA_FLAGS.items():
        p.add_argument(flag, default=None, metavar=metavar, help=f"accepted and ignored, with a warning: {what}")
    p.add_argument("--json-out", default=None, help="write every figure as JSON to this file")
    p.add_argument("--num-passes", type=int, default=1, limits=(1, 2**63 - 1),
                   help="training iterations when the workload is an ASTRA-sim 1.0 .txt file")
    _add_answer_flags(p, "the reference's per-NPU lines (printed by default in this form)")
    _add_report_flags(p)
    return p


def astra_help() -> str:
    """The ASTRA-sim flag form's help (for the top-level ``--help``)."""
    return _astra_parser().format_help()


def _add_report_flags(p: argparse.ArgumentParser) -> None:
    """Report files, and the one engine switch that depends on them."""
    p.add_argument("--fold-symmetry", choices=("on", "off"), default=None,
                   help="simulate each orbit of symmetric NPUs once (default on; see docs/performance.md, "
                        "'Symmetry folding'); --csv-out and --trace-out switch it off for ET files (and refuse "
                        "'on' there); a generated workload's stay folded")
    p.add_argument("--csv-out", default=None, metavar="DIR",
                   help="write into DIR nodes.csv (each node of each NPU simulated: a folded run's orbits "
                        "once each), npus.csv (the NPU simulated for each NPU) and, for text workloads, layers.csv")
    p.add_argument("--trace-out", default=None, metavar="FILE.json",
                   help="write a Chrome/Perfetto trace: per NPU compute, communication and chunk tracks "
                        "(refused past 1 GB, which a browser cannot open)")
    p.add_argument("--trace-npus", default=None, metavar="LIST",
                   help="the NPUs --trace-out shows, as ids and ranges (0-7,64; default all)")
    p.add_argument("--plots", default=None, metavar="DIR",
                   help="write breakdown.png (each NPU's time by part) and timeline.png into DIR (matplotlib)")
    p.add_argument("--trace-dir", default=None, metavar="DIR",
                   help="folder for the local-memory traces a system's track-local-mem writes: a relative "
                        "local-mem-trace-filename is taken inside DIR, made if missing (default: the "
                        "run's output folder, that of --json-out, --csv-out, --plots or --trace-out, "
                        "else runs/NAME, for a bare file name such as ASTRA-sim's local_mem_trace)")


def _add_answer_flags(p: argparse.ArgumentParser, lines: str) -> None:
    """What goes to stdout: the headline alone, or ASTRA-sim's per-NPU lines too."""
    p.add_argument("--quiet", action="store_true",
                   help="print the answer's headline only (the iteration time; a real job's TFLOP/s, MFU "
                        "and tokens/s too) and no tables; with --reference-lines, only those lines")
    p.add_argument("--reference-lines", action="store_true", help=f"print ASTRA-sim's per-NPU lines: {lines}")
    p.add_argument("--verbose", action="store_true",
                   help="say in full why symmetry folding fell back to an unfolded run (else one short note)")


#: ``run --help``'s part on a real job: the ``cluster:`` field with one example
CLUSTER_HELP = """
A real job (docs/megatron.md): a Megatron-LM command line and a cluster preset
build the system, network and backend; the run prints the iteration time,
TFLOP/s and MFU per GPU, tokens/s, memory and where the time went:

    workload:
      generate: megatron
      args: "--num-layers 80 --hidden-size 12288 --num-attention-heads 96
        --seq-length 2048 --micro-batch-size 2 --global-batch-size 2304
        --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --fp16"
    cluster:
      preset: dgx-a100-80gb        # {presets}, or ./my.yaml
      gpus: 1536
      inter_node_gbit_s: 1600      # optional: {keys}
"""


def _run_epilog() -> str:
    """The scenario's fields and the cluster presets (listed from their folder): made only
    when help is shown, as the cluster module is not imported by a run without ``cluster:``."""
    from simpy_astra.config import scenario
    from simpy_astra.config.cluster_fields import CLUSTER_KEYS
    from simpy_astra.config.cluster_presets import presets

    cluster = CLUSTER_HELP.format(presets=", ".join(presets()),
                                  keys=", ".join(sorted(CLUSTER_KEYS - {"preset", "gpus"})))
    return plain(scenario.__doc__ or "").replace("::\n", ":\n") + cluster


def _run_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="simpy-astra run", description="Run a scenario YAML (also: simpy-astra SCENARIO.yaml).",
        epilog_of=_run_epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", role="input", help="scenario YAML; its fields are listed below (examples: scenarios/*.yaml "
                                    "in the source tree, README 'Running')")
    p.add_argument("--network-backend", default=None, metavar="NAME",
                   help=backends_help(f"default: the scenario's backend field, else {DEFAULT_BACKEND}"))
    p.add_argument("--json-out", default=None, help="write every figure as JSON to this file")
    _add_answer_flags(p, "always for ASTRA-sim inputs; for a real job (cluster:), only with this flag")
    p.add_argument("--isolation", action="store_true",
                   help="multi-job scenarios: also run each job alone on the same network and report "
                        "its slowdown (shared / alone)")
    add_plugin_flag(p)
    _add_report_flags(p)
    return p


def _print_report(report: NpuReport) -> None:
    print("\n".join(report.lines()), flush=False)


def _reporter(log: LogFolder | None, progress: ProgressLine | None = None, show: bool = True,
              held: list[str] | None = None):
    """What a run does with each NPU's report: print its lines (``show``; into ``held`` instead,
    to print below the answer) and log them, with a log folder; with a progress line, through it
    (a terminal shows the two on separate lines)."""
    if show and log is None and progress is None and held is None:
        return _print_report
    if not show and log is None:
        return None

    def print_and_log(report: NpuReport) -> None:
        if show and held is not None:
            held.append("\n".join(report.lines()))
        elif show and progress is None:
            _print_report(report)
        elif show:
            progress.above("\n".join(report.lines()))
        if log is not None:
            log.report_lines(report.lines())

    return print_and_log


def output_folder(name: str, *outputs: tuple[str | None, bool]) -> str:
    """The run's output folder: that of its first output file or folder given ((path, is a
    folder) pairs, in order of precedence), else ``runs/NAME`` (never the bare working folder
    by default: ASTRA-sim's traces landed there, issue 39)."""
    for path, is_folder in outputs:
        if path:
            return path if is_folder else os.path.dirname(path) or "."
    return os.path.join("runs", name or "run")


def _in_trace_dir(inputs, trace_dir: str, bare_only: bool = False):
    """``inputs`` with ``--trace-dir``: a relative local-mem-trace-filename moves into
    ``trace_dir`` (checked, and made when the run will write there, before time starts);
    ``bare_only`` (the default folder, no --trace-dir): only a bare file name moves, a name
    with a folder stays as written."""
    import dataclasses

    prefix = inputs.system.local_mem_trace_filename
    if bare_only and (not inputs.system.track_local_mem or os.path.dirname(prefix)):
        return inputs
    # a folder for traces no system writes: the flag would be read by nothing, and say nothing
    if not bare_only and not any(s.track_local_mem for s in (inputs.system, *(j.system for j in inputs.jobs or ()))):
        raise InputError("--trace-dir: this run writes no local-memory traces (its system's track-local-mem is "
                         "off); leave out --trace-dir, or turn track-local-mem on")
    if not bare_only and inputs.jobs:  # their names are per rank, which jobs share (docs/jobs.md)
        raise InputError("--trace-dir: a run of several jobs writes no local-memory traces (their names are per "
                         "rank, which the jobs share); leave out --trace-dir")
    if not bare_only and inputs.system.track_local_mem and os.path.isabs(prefix):  # else read by nothing
        raise InputError(f"--trace-dir: {inputs.system.source}: local-mem-trace-filename is {prefix}, an absolute "
                         f"path, where the traces go whatever --trace-dir says; leave out --trace-dir, or give "
                         f"the file name alone")
    writable_dir(trace_dir, "--trace-dir")
    if not os.path.isabs(prefix):
        system = dataclasses.replace(inputs.system, local_mem_trace_filename=os.path.join(trace_dir, prefix))
        inputs = dataclasses.replace(inputs, system=system)
    if inputs.system.track_local_mem:
        try:
            os.makedirs(os.path.dirname(inputs.system.local_mem_trace_filename) or ".", exist_ok=True)
        except OSError as exc:
            raise InputError(f"--trace-dir: cannot make {trace_dir} ({exc.strerror or exc})") from None
    return inputs


def _prepared(inputs, plan: RunPlan, trace_dir: str | None, name: str):
    """``inputs`` with their traces moved to the run's output folder, and every output checked,
    before time starts."""
    log = plan.log
    if trace_dir is not None:  # made by _in_trace_dir: not where a file output goes
        distinct_outputs([(plan.json_out, "--json-out"), (plan.trace_out, "--trace-out")], [(trace_dir, "--trace-dir")])
        inputs = _in_trace_dir(inputs, trace_dir)
    else:  # the traces go with the run's other outputs
        folder = output_folder(name, (plan.json_out, False), (plan.csv_out, True), (plan.plots, True),
                               (plan.trace_out, False), (log.folder if log is not None else None, True))
        inputs = _in_trace_dir(inputs, folder, bare_only=True)
    check_outputs(inputs, plan.json_out, plan.csv_out, plan.trace_out, plan.plots, log)
    if plan.isolation and inputs.jobs is None:
        raise InputError("--isolation: needs a scenario with jobs: (it runs each job alone to compare)")
    if plan.isolation and len(inputs.jobs) == 1:  # else a second run of it, 'slowdown 1.000x'
        raise InputError(f"--isolation: the scenario's one job ({inputs.jobs[0].name}) shares the network with no "
                         f"other job, so alone it runs as it does here (slowdown 1); add a job, or drop --isolation")
    if plan.isolation and plan.quiet and not plan.json_out:  # each job ran again, and nothing showed it
        raise InputError("--isolation: each job's slowdown is printed in the jobs table, which --quiet leaves out; "
                         "drop --quiet, or add --json-out FILE (its jobs map has them)")
    return inputs


def _folded(inputs, plan: RunPlan, fold: str | None):
    """``inputs`` folded as asked (``fold``: on, off or None) and as the reports allow."""
    from simpy_astra.folding.run import resolve_fold
    from simpy_astra.workloads.chakra import has_rank_summary

    if fold == "on" and inputs.jobs is not None:  # asked for in words: dropped with a note --quiet hid
        raise InputError("--fold-symmetry on: a scenario with jobs: runs unfolded (each job's ranks are placed "
                         "apart, so no symmetry is known); drop --fold-symmetry on")
    if fold is not None:
        inputs = replace(inputs, fold_symmetry=fold == "on")
    # nodes.csv and the trace list each NPU's own events: a generated workload's orbit members
    # share their representative's nodes, so theirs are its events relabelled; ET files may name
    # an orbit member's nodes apart, and several jobs do not fold
    own_events = inputs.jobs or not has_rank_summary(inputs.workload_prefix)
    needs = [flag for flag, given in (("--csv-out", plan.csv_out), ("--trace-out", plan.trace_out)) if given]
    if fold == "on" and needs and own_events:  # asked for in words: not dropped without one
        raise InputError(f"--fold-symmetry on: {needs[0]} records every NPU's own events, which a folded run does "
                         f"not simulate; drop --fold-symmetry on (the run is then unfolded) or {needs[0]}")
    if needs and own_events:
        inputs = replace(inputs, fold_symmetry=False)
    return resolve_fold(inputs)  # no script of the user's runs here: the default may fold links too


def _run(inputs, plan: RunPlan, t0: float, ready: Callable[[], None] = lambda: None, sized: bool = True,
         fold_asked: bool = False) -> Finished:
    """Simulate ``inputs`` (the notes that precede time, then time) and derive the figures the
    writers read; ``ready()`` once the simulation is built (its traces read); ``fold_asked``:
    folding was asked for in words, so why it fell short is said at any size, --quiet too."""
    from simpy_astra.folding import NOTE_FROM_NPUS
    from simpy_astra.folding.run import fold_requested
    from simpy_astra.network.cost_model import network_cost
    from simpy_astra.report.console import ProgressLine, progress_wanted, run_with_progress
    from simpy_astra.simulation import Simulation

    progress = ProgressLine() if progress_wanted() else None
    real_job = inputs.workload.reports_figures  # a cluster: scenario: the answer is its training figures
    show = plan.reference_lines or not (real_job or plan.quiet)
    # a real job's answer comes first in a file or a pipe: its reference lines wait below it
    held = [] if real_job and plan.reference_lines and not plan.quiet and not on_terminal(sys.stdout) else None
    sim = Simulation(inputs, on_report=_reporter(plan.log, progress, show=show, held=held))
    ready()
    if (plan.trace_out and not sized) or plan.csv_out:  # ET files' nodes, a folded run's orbits: known once built
        check_built(sim, plan.trace_npus, bool(plan.trace_out) and not sized, bool(plan.csv_out))
    notes = plan.verbose or not plan.quiet  # --quiet: the answer and warnings, not notes
    if notes and sim.jobs is not None and fold_requested(inputs.fold_symmetry):
        say_wrapped(f"note: symmetry folding is off: "
                    f"{'several jobs share the network' if len(sim.jobs) > 1 else 'a scenario with jobs: runs unfolded'}")
    if sim.fold_note and (fold_asked or notes and len(sim.npus) >= NOTE_FROM_NPUS):  # before time starts
        say_wrapped(f"note: {sim.fold_note}")
    record = None
    if plan.records_nodes(real_job):
        # the modules that write the reports from the record, imported now: an import after the
        # run is part of what its reports cost (issue 51), one before it start-up
        import simpy_astra.report.answer  # noqa: F401
        import simpy_astra.report.breakdown  # noqa: F401
        import simpy_astra.report.timeline  # noqa: F401
        from simpy_astra.report.recorder import attach

        record = attach(sim, record_chunks=bool(plan.trace_out))
    reports = run_with_progress(sim, line=progress) if progress is not None else sim.run()
    jobs = link_jobs = None
    if sim.jobs is not None:
        from simpy_astra.report.isolation import finish_alone
        from simpy_astra.running.jobs import job_results

        jobs = job_results(sim.jobs, reports)
        if plan.isolation:
            for result, job in zip(jobs, sim.jobs, strict=True):
                result.alone_cycles = finish_alone(inputs, job)
        if sim.link_bytes_by_job is not None:
            link_jobs = sim.link_bytes_by_job.by_label()
    wall = time.perf_counter() - t0
    training = sim.training() if reports else None  # a generated job's figures (None for others)
    breakdowns = None
    if record is not None:
        from simpy_astra.report.breakdown import npu_breakdowns

        breakdowns = npu_breakdowns(record, {r.npu_id: r.finished_cycles for r in reports},
                                    segments=bool(plan.plots) or plan.rich_summary, shares=bool(plan.csv_out))
    return Finished(plan, inputs, sim, reports, record, jobs, link_jobs, wall, busiest_links(sim.network),
                    network_cost(inputs.network), training, breakdowns, held or [])


def _simulate(inputs, plan: RunPlan, fold: str | None = None, trace_dir: str | None = None,
              name: str = "run", ready: Callable[[], None] = lambda: None) -> int:
    """Run ``inputs`` as ``plan`` asks and write its reports; ``name``: the run's, for its
    default output folder ``runs/NAME``; ``ready()`` once the simulation is built."""
    from simpy_astra.folding.run import fold_asked

    asked = fold == "on" if fold is not None else fold_asked(inputs.fold_symmetry)
    inputs = _folded(_prepared(inputs, plan, trace_dir, name), plan, fold)
    sized = check_before_build(inputs, plan.trace_out, plan.trace_npus, plan.csv_out)  # before an unfolded build
    t0 = time.perf_counter()
    try:
        write_reports(_run(inputs, plan, t0, ready, sized, fold_asked=asked))
    except Exception as exc:  # noqa: BLE001 - a generated trace's fault is named as the scenario names it
        if inputs.workload.prepared is None:
            raise
        from simpy_astra.workloads.generated import as_scenarios_error

        named = as_scenarios_error(exc, inputs.workload_prefix, inputs.workload.prepared)
        if named is exc:  # as it was: ``from None`` would drop the cause that says whose code raised it
            raise
        raise named from None
    return 0


def run_scenario(argv: list[str]) -> int:
    """``run SCENARIO.yaml [flags]``."""
    args = _run_parser().parse_args(argv)
    from simpy_astra.config.plugin_modules import load_plugins
    from simpy_astra.config.scenario import load_scenario

    with PreparingNotice() as notice:  # a line after 2 s: a large job's traces take minutes
        load_plugins(args.plugin, "--plugin")
        inputs = load_scenario(args.scenario, backend=args.network_backend)
        plan = RunPlan(args.json_out, args.csv_out, args.trace_out, args.plots, trace_npus=args.trace_npus,
                       rich_summary=not args.quiet,
                       quiet=args.quiet, reference_lines=args.reference_lines, verbose=args.verbose,
                       isolation=args.isolation, given=(args.scenario,), plugins=tuple(args.plugin))
        return _simulate(inputs, plan, fold=args.fold_symmetry, trace_dir=args.trace_dir,
                         name=os.path.splitext(os.path.basename(args.scenario))[0], ready=notice.stop)


def run_astra_flags(argv: list[str]) -> int:
    """The reference binary's flags. An unknown flag is an error (ASTRA-sim ignores it, so a
    mistyped ``--netwrok-backend=packet`` would silently run the default backend)."""
    args = _astra_parser().parse_args(argv)
    for flag in ("workload", "system", "network", "remote_memory", "comm_group"):
        if not getattr(args, f"{flag}_configuration"):  # the comm groups' is optional: say so
            raise InputError(f"--{flag.replace('_', '-')}-configuration: must be a file path (got an empty "
                             f"string){'; leave the flag out for no groups' if flag == 'comm_group' else ''}")
    log = None
    if args.logging_folder is not None:
        from simpy_astra.report.log_folder import LogFolder

        log = LogFolder(args.logging_folder)
    done = False
    try:
        code = _run_astra_flags(args, log)
        done = True
        return code
    except Exception as exc:  # the error that stops the run goes into err.log too
        if log is not None:
            log.add("error", str(exc))
        raise
    finally:
        if log is not None:
            try:
                log.write()
            except InputError:
                if done:
                    raise  # else the run's own error is the one to report


def _run_astra_flags(args: argparse.Namespace, log: LogFolder | None) -> int:
    for line in ignored_flag_warnings(args):
        say_wrapped(line)
        if log is not None:
            log.add("warning", line.removeprefix("warning: "))
    from simpy_astra.config.astra_inputs import inputs_from_astra_flags
    from simpy_astra.config.plugin_modules import load_plugins
    from simpy_astra.plugins import search_also

    for config in (args.system_configuration, args.network_configuration):  # their module:name specs
        search_also(os.path.dirname(os.path.abspath(config)))  # beside them, as a scenario's are
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
    given = (args.workload_configuration, args.system_configuration, args.network_configuration,
             args.remote_memory_configuration, args.comm_group_configuration)
    plan = RunPlan(args.json_out, args.csv_out, args.trace_out, args.plots, trace_npus=args.trace_npus,
                   quiet=args.quiet,
                   reference_lines=args.reference_lines, verbose=args.verbose, given=given,
                   plugins=tuple(args.plugin), log=log)
    return _simulate(inputs, plan, fold=args.fold_symmetry, trace_dir=args.trace_dir,
                     name=os.path.basename(args.workload_configuration.rstrip(os.sep)))

