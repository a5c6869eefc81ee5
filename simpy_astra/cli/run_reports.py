"""What a finished run writes: one writer per output, each knowing from the run's plan when it
is wanted, run in the order their output appears (stdout's answer, then the files, then the
stderr summary). On a terminal the order changes so that the answer is what stays on screen:
the summary and timeline on stderr come first, stdout's answer last (a terminal shows its
last lines; 60 lines of summary below the answer pushed it out of view). A new report is one
writer here and a line in :data:`WRITERS`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.engine.statistics import NpuReport
from simpy_astra.report.console import say, say_wrapped
from simpy_astra.report.links import link_fields

if TYPE_CHECKING:
    from simpy_astra.report.log_folder import LogFolder


@dataclass(frozen=True)
class RunPlan:
    """What the command line asked of a run: its outputs and how much to print."""

    json_out: str | None = None
    csv_out: str | None = None
    trace_out: str | None = None
    plots: str | None = None
    rich_summary: bool = False
    quiet: bool = False
    reference_lines: bool = False
    verbose: bool = False
    isolation: bool = False
    given: tuple[str, ...] = ()  # the input files the command line named (digests in --json-out)
    plugins: tuple[str, ...] = ()  # the modules it loaded
    log: LogFolder | None = None  # --logging-folder: report lines and warnings too
    trace_npus: str | None = None  # --trace-npus: the NPUs the trace shows (ids and ranges), None: all

    @property
    def headline_only(self) -> bool:
        return self.quiet and not self.reference_lines

    def records_nodes(self, real_job: bool) -> bool:
        """Whether node timings are recorded: only for reports that need them."""
        return bool(self.csv_out or self.trace_out or self.rich_summary or self.json_out or self.plots
                    or (real_job and not self.quiet))


@dataclass(frozen=True)
class Finished:
    """A run's results and the figures derived from them, as the writers read them."""

    plan: RunPlan
    inputs: Any
    sim: Any
    reports: list[NpuReport]
    record: Any  # node timings (report/recorder.py), None when no report needs them
    jobs: list | None
    link_jobs: dict | None
    wall_s: float
    links: list | None
    cost: Any
    training: Any  # a generated job's TrainingFigures, or None
    breakdowns: dict | None
    held_lines: list[str] = field(default_factory=list)  # reference lines to print below the answer


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (ru_maxrss: KB on Linux, bytes on macOS)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _job_lines(done: Finished) -> None:
    print("\n".join(j.line() for j in done.jobs), flush=True)


def _warnings(done: Finished) -> None:
    from simpy_astra.report.answer import FOLD_UNDONE, short_warning

    for warning in done.sim.warnings:
        # folding undone changes no figure: a note, which --quiet leaves out (unless --verbose)
        if not (warning.startswith(FOLD_UNDONE) and done.plan.quiet and not done.plan.verbose):
            say_wrapped(short_warning(warning, done.plan.verbose))
        if done.plan.log is not None:
            done.plan.log.add("warning", warning)


def _local_memory_note(done: Finished) -> None:
    """The system config asked for local-memory traces (track-local-mem): say where they went."""
    from simpy_astra.infra.files import escaped

    written = done.sim.written_files
    first, last = written[0], written[-1]
    # the source and the paths on lines of their own: in one line the note was 200 columns
    # its words within the plain width (COLUMNS=60 too); the paths whole, for grep
    say_wrapped(f"note: wrote {len(written)} local-memory trace(s), as local-mem-trace-filename in")
    say_wrapped(f"  {escaped(done.inputs.system.source)} asks:")
    say(f"  {escaped(os.path.abspath(first))}")
    if len(written) > 1:
        say(f"  .. {escaped(os.path.basename(last))}")


def _headline(done: Finished) -> None:
    from simpy_astra.report.answer import headline
    from simpy_astra.report.console import Output

    print(headline(done.reports, done.training, Output(sys.stdout).width), flush=True)


def _fit_warning(done: Finished) -> None:
    """A quiet run's job that does not fit its GPUs' memory: a step that cannot run is no
    answer alone, whether the headline or the reference lines carry it."""
    say_wrapped(f"warning: {done.training.lines()[1]}")
    for line in done.training.fit_advice():  # indented lines of their own: each within 80 columns
        print(line, file=sys.stderr)


def _answer(done: Finished) -> None:
    from simpy_astra.report.answer import print_answer

    print_answer(done.training, done.breakdowns)


def _held_lines(done: Finished) -> None:
    """A real job's reference lines (--reference-lines), held while it ran to follow its answer."""
    print("\n".join(done.held_lines), flush=False)


def _json(done: Finished) -> None:
    """Every figure, and what made them (version, source digest, backend, input digests)."""
    from simpy_astra import __version__
    from simpy_astra.engine.figure_names import NAMES_NOTE, with_ns_names
    from simpy_astra.infra import files
    from simpy_astra.infra.source_digest import simulator_identity
    from simpy_astra.report.identity import inputs_of
    from simpy_astra.report.json_text import indented_json

    reports = done.reports
    npus = npu_entries(reports, done.breakdowns or {})
    data: dict = {
        "simpy_astra_version": __version__,
        "simulator": simulator_identity(),  # the version stays 0.1.0 while the code changes: its source
        "backend": done.inputs.backend,
        "inputs": inputs_of(done.inputs, done.plan.given, done.plan.plugins),
        "units": NAMES_NOTE,
        # the step's time: when the last NPU finished
        "iteration_time_ns": max((r.finished_cycles for r in reports), default=0),
        "npus": npus,
        "simulator_wall_s": round(done.wall_s, 3),
        "peak_rss_mb": peak_rss_mb(),
    }
    if done.cost is not None:  # the network cost model (simpy_astra/network/cost_model.py)
        data["cost_usd"] = done.cost.total_usd
        data["cost"] = done.cost.as_dict()
    if done.training is not None:  # a generated training job's own figures (Megatron's TFLOP/s, MFU)
        data["training"] = done.training.as_dict()
    if done.jobs is not None:  # multi-job runs: per job (simpy_astra/running/jobs.py)
        data["jobs"] = {j.name: with_ns_names(j.as_dict()) for j in done.jobs}
    if done.links is not None:  # link-level runs (aware, packet): every directed link, busiest first
        data["links"] = [link_fields(stat) for stat in done.links]
        if done.link_jobs is not None:
            for record, stat in zip(data["links"], done.links, strict=True):
                record["bytes_by_job"] = done.link_jobs.get((stat.src, stat.dst), {})
    _folder_of(done.plan.json_out, "--json-out")
    with files.open_output(done.plan.json_out, "--json-out") as f:
        f.write(indented_json(data))  # json.dump(data, f, indent=1)'s text, each distinct NPU encoded once


def npu_entries(reports: list, breakdowns: dict) -> dict[str, dict]:
    """``--json-out``'s ``npus``: each NPU's figures and where its time went
    (``breakdown_ns``), by NPU id. A folded run's NPUs share their representative's figures
    and breakdown (16,384 NPUs, a few dozen distinct): one entry is made per distinct pair and
    shared, which :func:`~simpy_astra.report.json_text.indented_json` then encodes once."""

    made: dict[tuple, dict] = {}
    npus = {}
    for r in sorted(reports, key=lambda r: r.npu_id):
        b = breakdowns.get(r.npu_id)
        # an orbit member is its representative's report with another npu_id (NpuReport.for_npu):
        # the same figures, the same dicts; anything else is a key of its own
        key = (r.finished_cycles, r.exposed_comm_cycles, r.wall_time, r.comp_comm_overlap_ns, r.peak_memory, id(r.times),
               id(r.roofline), id(r.memory_breakdown), id(b))
        entry = made.get(key)
        if entry is None:
            entry = made[key] = r.as_dict()  # its figures under both names, as NpuReport gives them
            if b is not None:
                entry["breakdown_ns"] = b.ordered()
        npus[str(r.npu_id)] = entry
    return npus


def _csv(done: Finished) -> None:
    from simpy_astra.report.csv_tables import write_csv_reports

    write_csv_reports(done.record, done.plan.csv_out, done.breakdowns)


def _folder_of(path: str, flag: str) -> None:
    """The folder of an output file, made when the run's checks left it to a folder output
    (``--json-out out/f.json`` beside ``--plots out``), which may be written after it."""
    from simpy_astra.infra import files

    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        files.make_folder(folder, flag)


def _chrome_trace(done: Finished) -> None:
    from simpy_astra.report.timeline import write_chrome_trace
    from simpy_astra.report.trace_size import selected_npus

    _folder_of(done.plan.trace_out, "--trace-out")
    write_chrome_trace(done.record, done.plan.trace_out, selected_npus(done.plan.trace_npus, done.sim.total_npus))


def _plots(done: Finished) -> None:
    from simpy_astra.report.pipeline_roles import pipeline_layout
    from simpy_astra.report.plots import write_plots

    sim = done.sim
    groups = sim.planner.file_group_members() if sim.jobs is None else {}
    roles, replica = pipeline_layout(sim.group_names, groups, sim.total_npus)
    write_plots(done.breakdowns, done.plan.plots, roles, replica)


def _summary(done: Finished) -> None:
    from simpy_astra.report.console import Output, print_breakdown, print_summary
    from simpy_astra.report.timeline import print_timeline

    out = Output()
    # a price nobody asked for and the table cannot give is not worth a line
    priced = done.cost if done.cost.error is None or done.inputs.network.cost is not None else None
    print_summary(done.reports, done.wall_s, done.links, out=out, cost=priced, jobs=done.jobs,
                  link_jobs=done.link_jobs)
    print_timeline(done.breakdowns, out=out)
    if done.training is None:  # a real job's table is part of its answer, on stdout
        from simpy_astra.report.answer import headline

        print_breakdown(done.breakdowns, out)
        # ASTRA-sim inputs' answer, the step's time, last: stdout's reference lines hold it per NPU
        answer = headline(done.reports, width=out.width)
        out.line(answer, f"[bold]{answer}[/bold]")


#: (when it is wanted, the writer), in the order of their output
WRITERS: tuple[tuple[Callable[[Finished], bool], Callable[[Finished], None]], ...] = (
    (lambda d: d.jobs is not None and not d.plan.headline_only, _job_lines),
    (lambda d: True, _warnings),
    (lambda d: bool(d.sim.written_files), _local_memory_note),
    (lambda d: d.plan.headline_only, _headline),
    (lambda d: d.plan.quiet and d.training is not None and not d.training.fits, _fit_warning),
    (lambda d: not d.plan.headline_only and d.training is not None and not d.plan.quiet, _answer),
    (lambda d: bool(d.held_lines), _held_lines),
    (lambda d: bool(d.plan.json_out), _json),
    (lambda d: d.record is not None and bool(d.plan.csv_out), _csv),
    (lambda d: d.record is not None and bool(d.plan.trace_out), _chrome_trace),
    (lambda d: d.breakdowns is not None and bool(d.plan.plots), _plots),
    (lambda d: d.plan.rich_summary, _summary),
)


#: the writers whose output is stdout's answer
ANSWER_WRITERS = (_job_lines, _headline, _answer, _held_lines)


def on_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def write_reports(done: Finished) -> None:
    """Every report the run's plan wants, in order; with stderr on a terminal, stdout's answer
    last (below the summary), where the terminal keeps it in view."""
    sys.stdout.flush()
    writers = [write for wanted, write in WRITERS if wanted(done)]
    if on_terminal(sys.stderr):
        writers.sort(key=lambda write: write in ANSWER_WRITERS)  # stable: each group keeps its order
    for write in writers:
        write(done)
