"""``simpy-astra sweep SWEEP.yaml --out DIR [--jobs N] [--cluster ADDRESS]``.

Expands the sweep, runs the points not yet in DIR/results.csv (locally in parallel, or on a
Dask cluster), then writes DIR/best.json, the plots, a summary table (stderr) and the best
points, its answer (stdout, as ``run``'s). See
``simpy_astra/sweep/spec.py`` for the YAML.

Exit status: 0 done; 2 a bad input (one ``error:`` line naming the file and field, before any
point runs; or, after them, a ``minimise`` that gave no point a number); 4 every point failed or is invalid (their errors are in results.csv); 130 stopped by Ctrl-C and
143 by SIGTERM (finished points saved; the same command finishes the rest).
"""

from __future__ import annotations

import argparse
import contextlib
import operator
import os
import signal
import sys
import textwrap
import time
from typing import TYPE_CHECKING, Any

from simpy_astra.cli.args import ArgumentParser, add_plugin_flag
from simpy_astra.cli.output_checks import _not_stdout
from simpy_astra.cli.sweep_points import WholePoints, checked, print_list, reads_whole_points
from simpy_astra.config.yaml_reader import dump_yaml
from simpy_astra.errors import InputError, printable
from simpy_astra.infra.files import escaped
from simpy_astra.infra.stopping import Terminated, raise_stop
from simpy_astra.sweep.expansion_progress import ExpansionProgress

if TYPE_CHECKING:
    from simpy_astra.sweep.spec import Point, SweepSpec
    from simpy_astra.sweep.store import ResultsStore

EXIT_ALL_FAILED = 4
EXIT_NO_BEST = 2  # the minimise expression (an input) ranks nothing
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def _stop_once(signum: int, frame) -> None:
    """The first SIGINT/SIGTERM stops the sweep; later ones are ignored while it cleans up, so
    a second Ctrl-C cannot cut the cleanup short with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise_stop(Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())  # after a row being saved


class _ReaderMayLeave:
    """A text stream whose reader may close it (``sweep ... 2>&1 | head -1``): once the pipe is
    closed, what is written goes nowhere, and the sweep goes on to write results.csv and
    best.json instead of dying of a BrokenPipeError half-way (or exit 120 at the final flush)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def _gone(self) -> None:
        self.closed_by_reader = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:  # the interpreter's own final flush of this descriptor must not fail either
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


#: local worker processes a CPU may take: past it they only share the CPUs and add memory
JOBS_PER_CPU = 4


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="simpy-astra sweep", description=(
        "Run a design-space sweep. Points that run one step (Megatron-LM arguments it reads alike; "
        "a cluster's null that leaves the preset's value, a value equal to the preset's or a default, "
        "a key that changes nothing there) run once, as one of them, with a warning saying which and "
        "why; a constraint whose best is the overall best says 'the same point' (docs/sweeps.md)."))
    p.add_argument("sweep", role="input", help="sweep YAML (base scenario, axes, constraints, minimise)")
    p.add_argument("--out", help="output folder; starting again resumes it (required unless --list)")
    p.add_argument("--list", action="store_true", help="print the points to run (key and coordinates) and stop")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, limits=(1, JOBS_PER_CPU * (os.cpu_count() or 1)),
                   help=f"local worker processes (default: the CPU count, {os.cpu_count() or 1} here)")
    p.add_argument("--cluster", default=None, help="Dask scheduler address (e.g. tcp://host:8786)")
    p.add_argument("--retry-failed", action="store_true", help="run failed points again")
    add_plugin_flag(p)  # added to the base's plugins: every point, in every worker, loads it
    p.add_argument("--no-plots", action="store_true",
                   help="skip the PNG plots (skipped anyway, with a note, without matplotlib)")
    return p


def _module_note(spec: SweepSpec) -> str:
    """The header a point's scenario needs when the points' own modules (``plugins:``,
    ``module:attribute``) sit beside the base scenario or the sweep file: ``run`` looks for
    them in the working directory and beside the scenario it runs, points/ here, so it says
    where they are ('' when every one is in the working directory or installed)."""
    files = spec.plugin_files()
    folders = [f for f in spec.module_folders if f != os.getcwd() and any(x.startswith(f + os.sep) for x in files)]
    return "".join(f"# its modules are in {f}: run it from there, or with PYTHONPATH={f}\n" for f in folders)


def _write_point_scenarios(out_dir: str, points, header: str = "") -> None:
    """DIR/points/KEY.yaml: each point as a scenario that ``simpy-astra run`` reproduces
    (``header``: lines put before it, after its coordinates)."""
    folder = os.path.join(out_dir, "points")
    path = folder
    try:
        os.makedirs(folder, exist_ok=True)
        for p in points:
            path = os.path.join(folder, f"{p.key}.yaml")
            if not os.path.exists(path):
                with open(path + ".tmp", "w") as f:
                    f.write("".join(f"# {k}: {v}\n" for k, v in p.coordinates.items()) + header)
                    dump_yaml(p.scenario, f, sort_keys=False)
                os.replace(path + ".tmp", path)
    except OSError as exc:
        if path != folder:
            with contextlib.suppress(OSError):
                os.unlink(path + ".tmp")  # nothing half-written stays
        if path == folder and os.path.exists(folder) and not os.path.isdir(folder):
            raise InputError(f"--out: {folder} is a file where the sweep keeps its points' scenarios (a "
                             f"folder); move the file, or choose another --out") from None
        raise InputError(f"--out: cannot write {path} ({exc.strerror or exc}); choose a folder you can "
                         f"write") from None


def _require(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise InputError(f"sweep needs the '{module}' package, which simpy-astra installs: pip install "
                         f"'{module}' (or reinstall simpy-astra)")


def main(argv: list[str]) -> int:
    import threading

    previous = {}
    if threading.current_thread() is threading.main_thread():  # only there can Python set handlers
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)
                    if signal.getsignal(sig) is not signal.SIG_IGN}  # e.g. nohup: stays ignored
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayLeave(sys.stdout), _ReaderMayLeave(sys.stderr)
    stopped = False
    try:
        for sig in previous:
            signal.signal(sig, _stop_once)
        code = _main(argv)
        stopped = code in (EXIT_INTERRUPTED, EXIT_TERMINATED)
        return code
    except KeyboardInterrupt as exc:  # before or after the points ran: nothing half-written
        stopped = True
        terminated = isinstance(exc, Terminated)
        print("terminated" if terminated else "interrupted", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # a reader that left is noticed here, not at the interpreter's exit
        sys.stdout, sys.stderr = streams
        if not stopped or not _is_main_program():
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        # else: a stopped sweep keeps ignoring Ctrl-C until the process is gone, so a second
        # one during the interpreter's shutdown cannot kill it by SIGINT or print a traceback


def _is_main_program() -> bool:
    """Whether this process is ``python -m simpy_astra`` / ``simpy-astra`` (which exits right
    after ``main``), not a caller that goes on and needs its own Ctrl-C back."""
    main = sys.modules.get("__main__")
    return getattr(main, "__spec__", None) is not None and main.__spec__.name == "simpy_astra.__main__" \
        or os.path.basename(sys.argv[0] if sys.argv else "") == "simpy-astra"


def _out_given(out: str | None) -> None:
    """A run needs ``--out``; an empty one is said to be empty (it was told to be missing)."""
    if out is None:
        raise InputError("sweep: --out DIR is required (the folder for results.csv and best.json)")
    if not out.strip():
        raise InputError("--out: must be a folder path (got an empty string); the folder for results.csv and "
                         "best.json")


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.jobs < 1:
        raise InputError(f"--jobs must be >= 1 (got {args.jobs})")
    if args.cluster is not None and not args.cluster.strip():  # "$SCHEDULER" unset: not a local run
        raise InputError("--cluster: must be a Dask scheduler's address such as tcp://HOST:8786 (got an empty "
                         "string); leave the flag out to run the points here")
    if args.cluster and not args.list and any(a == "--jobs" or a.startswith("--jobs=") for a in argv):
        # the Dask path submits every point; its workers' threads set how many run at once
        raise InputError("--jobs: the points run on the Dask cluster's workers, so --jobs would change nothing "
                         "beside --cluster; leave it out (start each worker with --nthreads N to set how many "
                         "points it runs at once)")
    cpus = os.cpu_count() or 1
    if args.jobs > JOBS_PER_CPU * cpus and not args.cluster:  # a process a point: 10^5 would exhaust memory
        raise InputError(f"--jobs {args.jobs}: this machine has {cpus} CPU(s); points are CPU-bound, so more "
                         f"processes only share them, each holding its own simulation in memory; give at most "
                         f"{JOBS_PER_CPU * cpus} (the default is {cpus})")
    _require("simpleeval")  # a core dependency; checked in case an install left it out
    from simpy_astra.plugins import search_also
    from simpy_astra.report.widths import plain_width
    from simpy_astra.sweep.memory_figures import check_memory_figures
    from simpy_astra.sweep.spec import load_sweep
    from simpy_astra.sweep.store import ResultsStore

    if args.plugin:  # here first, so that a module that cannot load is one line before any point
        from simpy_astra.config.plugin_modules import load_plugins

        load_plugins(args.plugin, "--plugin")
    spec = load_sweep(args.sweep, tuple(args.plugin))
    for folder in spec.module_folders:  # a backend named module:attribute is found as a point's run finds it
        search_also(folder)
    # --list of axes beyond Megatron's flags loads each point as it is read (its job then at hand)
    loaded = WholePoints(args.sweep) if args.list and reads_whole_points(spec) else None
    # a line now and then: 10^5 points take a minute
    points = spec.points(ExpansionProgress("checking" if loaded else "reading"), loaded)
    for warning in spec.warnings:  # after the points: their expansion may find more
        print(textwrap.fill(f"warning: {warning}", plain_width(), subsequent_indent="  ", break_on_hyphens=False),
              file=sys.stderr)
    if not points:
        raise InputError(f"{args.sweep}: constraints leave no point to run; loosen them")
    _check_expressions(spec, points)
    spec.check_training_figures(points)
    check_memory_figures(spec, points)
    if args.list:
        given = [flag for flag, value in (("--out", args.out), ("--cluster", args.cluster),
                                          ("--retry-failed", args.retry_failed)) if value]
        given += ["--jobs"] if any(a == "--jobs" or a.startswith("--jobs=") for a in argv) else []
        if given:  # a flag of running the points, read by nothing
            raise InputError(f"--list: prints the points and runs none, so {given[0]} would change nothing; leave "
                             f"out {given[0]} (or --list, to run the sweep)")
        return print_list(points, args.sweep, spec, loaded)
    _out_given(args.out)
    _not_stdout(args.out, "--out", "folder")
    made = _absent(args.out)
    store = ResultsStore(args.out, spec, points, retry_failed=args.retry_failed, same_runs=spec.same_runs)
    client = None
    try:  # the folder stays locked until best.json and the plots are written too
        todo = [p for p in points if not store.done(p.key)]
        refused, _ = checked(todo, args.sweep)  # the failing run, each saying why in its row
        if args.cluster and not all(refused[p.key] for p in todo):  # nothing left to run needs no scheduler
            client = _connect(args.cluster, made)
        if store.rerun_note:
            print(store.rerun_note, file=sys.stderr)
        return _run(args, spec, points, store, todo, refused, client)
    finally:
        if client is not None:
            client.close()
        store.close()


def _check_expressions(spec: SweepSpec, points: list[Point]) -> None:
    """The sweep's expressions checked on one point of each pattern of null axes: a null
    coordinate is a value, and ordered it cannot be compared (refused before any point runs)."""
    nulls: set[frozenset[str]] = set()
    for point in points:
        pattern = frozenset(a.name for a in spec.axes if point.coordinates[a.column] is None)
        if pattern not in nulls:
            nulls.add(pattern)
            spec.check_expressions(point)


def _absent(path: str) -> list[str]:
    """What --out will make: its outermost folder not there yet, or else the files not in it yet."""
    path, missing = os.path.abspath(path), None
    while not os.path.lexists(path):
        path, missing = os.path.dirname(path), path
    if missing is not None:
        return [missing]
    return [os.path.join(path, name) for name in ("results.csv", "sweep.json")
            if not os.path.lexists(os.path.join(path, name))]


def _connect(address: str, made: list[str]) -> Any:
    """The scheduler's client, before a line is printed or a point's scenario written; if none
    answers (or Dask is not installed), what this sweep made in --out goes again (a typo in the
    address left an empty --out folder and '0 already in' before its error)."""
    import shutil

    from simpy_astra.sweep.runner import connect_cluster

    try:
        return connect_cluster(address)
    except InputError:
        for path in made:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        raise


def _sweep_plots(args: argparse.Namespace, spec: SweepSpec, done: list, summary: dict,
                 interrupted: bool) -> list[str] | None:
    """The sweep's plots, unless --no-plots or interrupted: the files written, None when skipped
    for want of matplotlib."""
    import importlib.util

    from simpy_astra.sweep.best import best_keys

    plots = not args.no_plots and not interrupted
    skipped_plots = plots and importlib.util.find_spec("matplotlib") is None  # results need none
    if plots and not skipped_plots:
        from simpy_astra.sweep.plots import write_plots

        try:
            return write_plots(spec, done, args.out, best_keys(summary))
        except OSError as exc:
            raise InputError(f"--out: cannot write the plots in {args.out} ({exc.strerror or exc})") from None
    return None if skipped_plots else []


def _say(out: Any, text: str, markup: str | None = None) -> None:
    """One of the sweep's own lines without a path: on a terminal as it is (the terminal wraps
    it), in a pipe or a file within :func:`plain_width`, wrapped at spaces. (A line naming a
    path stays whole, for grep; what follows the path goes on a line of its own.)"""
    from simpy_astra.report.widths import plain_width, wrapped

    if out.console is not None:
        out.line(text, markup)
        return
    # by the columns it takes: a sweep named in Chinese ran to 80 at COLUMNS=60
    for line in wrapped(text, plain_width(), subsequent_indent="  ", break_long_words=False):
        out.line(line)


def _scorer(spec: SweepSpec, points: list[Point]):
    """A finished point's objective and how it reads, for its progress line and the best so
    far (ranked among points that ran and fit, as best.json ranks them); none across backends
    (never compared)."""
    from simpy_astra.sweep.best import Outcome, backends_of, objective_of
    from simpy_astra.sweep.summary import objective_text

    if len(backends_of(points)) > 1:
        return None

    def score(p: Point, figures: dict[str, Any]) -> tuple[float, str] | None:
        o = Outcome(p, figures)
        try:
            value = objective_of(spec, o) if o.ok else None
        except InputError:  # a figure the objective cannot use: best.json says so at the end
            return None
        return None if value is None else (value, objective_text(spec.goals.objective.text, value))
    return score


def _best_before(spec: SweepSpec, points: list[Point], store: ResultsStore, score: Any) -> Any:
    """The best of the rows results.csv has before the points run: a resumed sweep's best so
    far may be one of them (its progress named the best new point, a slower one)."""
    from simpy_astra.sweep.best import outcomes
    from simpy_astra.sweep.runner import best_before

    rows = outcomes(spec, points, store.rows, store.point_inputs)
    return best_before([(o.point, o.figures) for o in rows], score)


def _run(args: argparse.Namespace, spec: SweepSpec, points: list[Point], store: ResultsStore, todo: list[Point],
         refused: dict[str, dict[str, Any] | None], client: Any) -> int:
    """Run ``todo`` (the points without a row; ``refused``: each one's invalid row or None),
    on ``client``'s cluster when given, and write best.json and the plots."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.best import backends_of, best_keys, best_summary, outcomes, write_best
    from simpy_astra.sweep.runner import run_cluster, run_local
    from simpy_astra.sweep.summary import print_summary

    _write_point_scenarios(args.out, points, _module_note(spec))
    out = Output(sys.stderr)  # drawn on a terminal; plain lines, never wrapped, in a pipe or a log file

    label = operator.methodcaller("where", args.sweep)  # what a failing point's error names: p.where(sweep)
    invalid = sum(1 for r in refused.values() if r)
    jobs = min(args.jobs, max(len(todo) - invalid, 1))
    where = f"cluster {args.cluster}" if args.cluster else f"{jobs} local process{'es' if jobs != 1 else ''}"
    # two lines, the first wrapped within 80 columns whatever the names (the path is on the second)
    _say(out, f"sweep {spec.name}: {len(points)} points, running {len(todo) - invalid} on {where}")
    _already(out, len(points) - len(todo), store.csv_path, invalid)

    def save(p: Point, figures: dict[str, Any], changed: list[str]) -> None:
        if changed:  # the point ended on other contents: its row may be from other inputs
            raise InputError(f"{changed[0]}: changed while the sweep ran (the rows in {store.csv_path} were "
                             f"made from its earlier contents); restore it, or start the sweep again with "
                             f"another --out")
        store.append(p.key, p.coordinates, figures)

    t0 = time.perf_counter()
    for p in todo:  # a layout Megatron refuses is a row at once: nothing to simulate
        if refused[p.key]:
            save(p, refused[p.key], [])
    todo = [p for p in todo if not refused[p.key]]
    best = _best_before(spec, points, store, score := _scorer(spec, points))  # the first best so far
    if client is not None:
        outcome = run_cluster(todo, client, store.inputs, save, out, where=label, score=score, best=best)
    else:
        outcome = run_local(todo, jobs, store.inputs, save, out, where=label, close_fds=(store.lock.fd,),
                            score=score, best=best)
    wall_s = time.perf_counter() - t0
    if not outcome.interrupted:  # every point has its row: in sweep order, whatever finished first
        store.in_sweep_order(spec.order)
    done = outcomes(spec, points, store.rows, store.point_inputs)
    summary = best_summary(spec, done, len(points), backends_of(points))
    write_best(args.out, summary)
    print_summary(spec, done, summary, out, wall_s, interrupted=outcome.interrupted, answer=Output(sys.stdout))
    sys.stdout.flush()  # the answer (stdout, as run's) before the plots' seconds and stderr's lines below it
    plotted = _sweep_plots(args, spec, done, summary, outcome.interrupted)
    if outcome.interrupted:
        stopped = "terminated" if outcome.terminated else "interrupted"
        rest = f": {len(done)} of {len(points)} points saved in {store.csv_path}"
        out.line(stopped + rest, f"[yellow]{stopped}[/yellow]" + rest.replace("[", "\\["))
        out.line("  run the same command again to finish the rest")  # the path's line stays whole
        return EXIT_TERMINATED if outcome.terminated else EXIT_INTERRUPTED
    ok = [o for o in done if o.ok]
    if ok and not any(o.fits for o in ok):
        _say(out, f"no finished point fits its GPU's memory ({len(ok)} of {len(points)} ran): best.json names "
             f"no best; try more pipeline or tensor parallelism, recomputation or a smaller micro-batch")
    elif ok and not best_keys(summary):  # finished points, yet nothing to rank: say so, not exit 0
        print(f"error: {args.sweep}: minimise: '{spec.goals.objective.text}' gave no number for any of the "
              f"{len(ok)} finished points (a figure it uses is empty, e.g. cost_usd without a price for "
              f"the network, or it divides by zero or goes past 2**1024), so best.json names no best; minimise a figure every "
              f"point has, e.g. finish_ns", file=sys.stderr)
        return EXIT_NO_BEST
    if done and all(o.invalid for o in done):
        # the summary above named each point's rule; its whole reason is in results.csv
        rule = done[0].figures["error"].split(": ", 1)[0]
        print(f"error: {args.sweep}: every point is invalid ({len(done)} of {len(points)}): each breaks a rule "
              f"(the framework's, NCCL's or the model's), e.g. '{printable(rule)}'; change the axes "
              f"(results.csv has each reason)", file=sys.stderr)
        return EXIT_ALL_FAILED
    if done and not any(o.ok for o in done):
        print(f"error: {args.sweep}: every point failed ({len(done)} of {len(points)}; results.csv has "
              f"their errors), e.g. {printable(next(o for o in done if not o.invalid).figures['error'])}",
              file=sys.stderr)
        return EXIT_ALL_FAILED
    _wrote(out, store.csv_path, os.path.join(args.out, "best.json"), plotted, wall_s)
    return 0


def _already(out: Any, done: int, csv_path: str, invalid: int) -> None:
    """How many points results.csv holds already, and how many are invalid: the path whole on
    its line (for grep), what follows it on a line of its own where the line cannot hold both
    (66 columns at COLUMNS=60)."""
    from simpy_astra.report.widths import text_width

    already, rest = f"{done} already in {escaped(csv_path)}", f"; {invalid} invalid, not run" if invalid else ""
    for line in [already + rest] if text_width(already + rest) <= out.width else [already, f"  {rest[2:]}"]:
        out.line(line)


def _wrote(out: Any, csv_path: str, best_path: str, plotted: list[str] | None, wall_s: float) -> None:
    """The sweep's last lines: the files it wrote, each path whole on its line (for grep), the
    rest within the width (the plots went unnamed, and the line was 62 columns at COLUMNS=60)."""
    from simpy_astra.report.widths import text_width

    csv_path, best_path = escaped(csv_path), escaped(best_path)
    wrote = f"wrote {csv_path} and {best_path}"
    for line in [wrote] if text_width(wrote) <= out.width else [f"wrote {csv_path}", f"  and {best_path}"]:
        out.line(line)
    plots = ("skipped the plots: matplotlib is not installed (pip install 'simpy-astra[sweep]')" if plotted is None
             else f"and {len(plotted)} plots ({', '.join(escaped(os.path.basename(p)) for p in plotted)})"
             if plotted else "")
    _say(out, f"  {plots + '; ' if plots else ''}{wall_s:.1f} s in all")
