"""Command line: ``simpy-astra run SCENARIO.yaml``, other subcommands, or ASTRA-sim's own flags.

Subcommands other than ``run`` live in their own modules, listed in ``SUBCOMMANDS``; each
exposes ``main(argv: list[str]) -> int`` and may raise the input errors handled here.

The ASTRA-sim form accepts the reference binary's flags, so existing scripts switch by
changing the binary path::

    python -m simpy_astra --workload-configuration=W --system-configuration=S \\
        --network-configuration=N --remote-memory-configuration=M \\
        [--comm-group-configuration=G] [--network-backend=congestion_unaware|congestion_aware|packet]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from simpy_astra.collectives.base import CollectiveError
from simpy_astra.errors import InputError, StalledError, printable
from simpy_astra.plugins import PluginError
from simpy_astra.workloads.chakra import EtError

EXIT_INTERNAL_ERROR = 1
EXIT_INPUT_ERROR = 2
EXIT_STALLED = 3
#: what a shell reports for a command stopped by SIGPIPE (128 + 13): the reader of our output
#: (``| head``) closed it early, which is the reader's choice, not an error of ours
EXIT_BROKEN_PIPE = 141

# subcommand name -> module with ``main(argv) -> int`` (imported only when used)
SUBCOMMANDS: dict[str, str] = {
    "convert": "simpy_astra.cli.convert",  # ASTRA-sim 1.0 text workloads -> Chakra ET
    "generate": "simpy_astra.cli.generate",  # microbenchmarks, transformer training/inference
    "sweep": "simpy_astra.cli.sweep",  # design-space sweeps
    "calibrate": "simpy_astra.cli.calibrate",  # fit a network to nccl-tests logs
    "validate": "simpy_astra.cli.validate",  # nccl-tests logs against the simulator
}

#: what ``--help`` (and no arguments) lists first: every command, one line each
COMMAND_LINES = (
    ("run", "SCENARIO.yaml", "simulate a scenario (the default)"),
    ("sweep", "SWEEP.yaml --out DIR", "design-space sweep: results, best point"),
    ("generate", "KIND", "write Chakra ET traces from parameters"),
    ("convert", "text|pytorch", "text or PyTorch workloads to Chakra ET"),
    ("calibrate", "LOG... --network N.yml", "fit a network to nccl-tests logs"),
    ("validate", "LOG... --network N.yml", "nccl-tests logs against the simulator"),
)
#: the flag that prints the traceback of an exception in the user's own code (a plugin)
DEBUG_FLAG = "--debug"


def generator_kinds() -> str:
    """``microbench, transformer, megatron, gemm``: every generator with a command, from the
    one registry (a generator registered there is listed here without another edit)."""
    from simpy_astra.workloads.generated import GENERATORS

    return ", ".join(name for name, entry in GENERATORS.items() if entry.command)


def overview() -> str:
    """The command list, then the ASTRA-sim flag form: what a first-time user needs to start;
    within the terminal's (or ``COLUMNS``') width, 80 at most, as argparse's help is (it was
    written for 80: lines of 75 to 80 columns at COLUMNS=60)."""
    import shutil
    import textwrap

    columns = min(80, shutil.get_terminal_size().columns)
    width = max(len(f"{name} {args}") for name, args, _ in COMMAND_LINES)

    def fill(text: str) -> list[str]:
        return textwrap.wrap(text, columns, break_on_hyphens=False, break_long_words=False)

    lines = ["usage: simpy-astra COMMAND [ARGS]", "       simpy-astra SCENARIO.yaml",
             "       simpy-astra FLAGS (ASTRA-sim's form, below)", ""]
    lines += fill("Simulate distributed ML training: a Megatron-LM step on a cluster preset (a scenario with "
                  "cluster:, docs/megatron.md), or ASTRA-sim 2.0's inputs, figure for figure.")
    lines += ["", "commands:"]
    for name, args, what in COMMAND_LINES:  # what it does beside it, or below it where the line is narrow
        said = textwrap.wrap(what, columns - width - 4, break_on_hyphens=False)
        lines += [f"  {f'{name} {args}':<{width}}  {said[0]}", *(" " * (width + 4) + more for more in said[1:])] \
            if columns - width - 4 >= 24 else [f"  {name} {args}", *fill(f"      {what}")]
    lines += ["", *fill(f"generate's kinds: {generator_kinds()}"), ""]
    lines += fill("Each command has its own --help: run --help lists the scenario fields and the network "
                  "backends; generate --help and convert --help list their kinds.")
    lines += fill(f"{DEBUG_FLAG} (any command): the traceback of an error raised by your plugin code.")
    lines += ["--version: print the version and stop.", ""]
    lines += fill("ASTRA-sim's flag form (its binary's flags: scripts switch by changing the path):") + [""]
    from simpy_astra.cli.args import fit_width
    from simpy_astra.cli.run import astra_help

    return fit_width("\n".join(lines), max(columns, 40)) + "\n" + astra_help()


def version_line() -> str:
    """``simpy-astra --version``: ours, the ASTRA-sim release whose figures we print, and Python."""
    import platform

    from simpy_astra import __version__

    return f"simpy-astra {__version__} (ASTRA-sim 2.0 compatible; Python {platform.python_version()})"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    argv = [a for a in argv if a != DEBUG_FLAG]
    if not argv or argv[0] in ("-h", "--help"):
        def show_overview() -> int:
            print(overview(), file=sys.stdout if argv else sys.stderr, flush=True)
            return 0 if argv else EXIT_INPUT_ERROR

        return _writing_stdout(show_overview)  # --help | head, > /dev/full
    from simpy_astra.infra import files, stopping
    from simpy_astra.plugins import raised_in_users_code

    files.forget_inputs()  # an output may not be one of this command's inputs
    restore_signals = stopping.install()
    try:
        return _flushed(_main(argv, debug))
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM, wherever it landed: one line
        if stopping.requested() is None and type(exc) is KeyboardInterrupt and raised_in_users_code(exc):
            return _report(exc, debug)  # no signal came: the user's code raised it (a plugin's, say)
        stopped = exc if isinstance(exc, stopping.Stopped) else stopping.Stopped()
        _flush_quietly()
        print(stopped.line(), file=sys.stderr)
        return stopped.exit_code
    finally:
        restore_signals()


def _flushed(code: int) -> int:
    """``code``, once what is buffered for standard output is written: a device that refuses
    it (``> /dev/full``) is told in one line here, not by the interpreter's exit (status 120)."""
    def flush() -> int:
        sys.stdout.flush()
        return code

    return _writing_stdout(flush)


def _writing_stdout(write: Callable[[], int]) -> int:
    """``write()``'s exit status, or the one of standard output gone: a reader that left
    (``| head``) ends the command quietly, a device that refuses bytes is one error line."""
    try:
        return write()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if not _on_stdout(exc):
            raise
        return _stdout_failed(exc)


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _main(argv: list[str], debug: bool) -> int:
    from simpy_astra.infra import stopping

    try:
        from simpy_astra.infra.switches import check_switches

        check_switches()
        if not argv or argv[0] in ("-h", "--help"):
            print(overview(), file=sys.stdout if argv else sys.stderr)
            return 0 if argv else EXIT_INPUT_ERROR
        if argv[0] == "--version":
            if argv[1:]:  # printed the version as if the rest were not there
                raise InputError(f"--version: takes nothing after it (got {' '.join(argv[1:])}); give --version "
                                 f"alone")
            print(version_line())
            return 0
        if argv and argv[0] in SUBCOMMANDS:
            import gc
            import importlib

            gc.enable()  # paused for start-up by __main__; these commands allocate as they go

            return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
        if argv and not argv[0].startswith("-") and argv[0] not in ("run", *SUBCOMMANDS):
            first = argv[0]
            if not (first.endswith((".yaml", ".yml")) or os.path.exists(first)):
                raise InputError(f"{first}: neither a scenario YAML nor a command; use simpy-astra "
                                 f"SCENARIO.yaml, run SCENARIO.yaml, {', '.join(SUBCOMMANDS)}, or "
                                 f"ASTRA-sim's --workload-configuration=... flags")
            argv = ["run", *argv]  # the card's form: python -m simpy_astra scenarios/default.yaml
        from simpy_astra.cli.run import run_astra_flags, run_scenario

        if argv and argv[0] == "run":
            return run_scenario(argv[1:])
        _refuse_flags_before_the_command(argv)
        return run_astra_flags(argv)
    except (InputError, EtError, CollectiveError, PluginError, StalledError, Exception) as exc:
        if stopping.requested() is not None:  # whatever the stop broke on its way out
            raise stopping.Stopped(stopping.requested()) from None
        return _report(exc, debug)
    except (KeyboardInterrupt, SystemExit):  # a stop, or argparse's --help
        raise
    except BaseException as exc:  # noqa: BLE001 - GeneratorExit or a BaseException of a plug-in's own
        return _report(exc, debug)  # printed Python's traceback: `except Exception` lets them by


#: flags of ASTRA-sim's form alone: a line with one of them is that form
_ASTRA_INPUTS = ("--workload-configuration", "--system-configuration", "--network-configuration",
                 "--remote-memory-configuration", "--comm-group-configuration")


def _refuse_flags_before_the_command(argv: list[str]) -> None:
    """``--plugin m run s.yaml`` (or ``--quiet s.yaml``): read as ASTRA-sim's flag form, it
    failed on the four --*-configuration flags it lacks, never saying that the command goes first."""
    if any(word.startswith(_ASTRA_INPUTS) for word in argv):
        return
    at = next((i for i, word in enumerate(argv) if word in ("run", *SUBCOMMANDS)
               or (not word.startswith("-") and word.endswith((".yaml", ".yml")))), None)
    if at is None:
        return
    command = argv[at] if argv[at] in ("run", *SUBCOMMANDS) else f"run {argv[at]}"
    raise InputError(f"{' '.join(argv[:at])}: a command's flags go after it: simpy-astra {command} "
                     f"{' '.join([*argv[at + 1:], *argv[:at]])}")


def _report(exc: BaseException, debug: bool) -> int:
    """One line for an exception, and the exit status it means."""
    try:
        raise exc
    except (InputError, EtError, CollectiveError, PluginError) as exc:
        _print_users_traceback(exc, debug)
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except StalledError as exc:
        sys.stdout.flush()
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_STALLED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except BaseException as exc:  # a bug, not a bad input: one line, unless asked for more
        if _on_stdout(exc):
            return _stdout_failed(exc)
        if _traceback_asked():
            raise
        sys.stdout.flush()
        from simpy_astra.plugins import engine_original, users_failure

        theirs = users_failure(exc)  # e.g. a link model's hold_ns, called mid-run
        if theirs is not None:
            if debug:
                import traceback

                traceback.print_exception(engine_original(exc), file=sys.stderr)
            print(f"error: {printable(theirs)}", file=sys.stderr)
            return EXIT_INPUT_ERROR
        text = printable(" ".join(str(exc).split()) or "no message")
        print(
            f"error: internal error {type(exc).__name__}: {text} (this is a simpy-astra bug; "
            f"set SIMPY_ASTRA_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


def _traceback_asked() -> bool:
    """``SIMPY_ASTRA_TRACEBACK`` on (its value was checked as the command started)."""
    from simpy_astra.infra.switches import env_switch

    try:
        return bool(env_switch("SIMPY_ASTRA_TRACEBACK"))
    except InputError:  # a bug before the check: its one line, with the traceback it asked for
        return True


def _print_users_traceback(exc: BaseException, debug: bool) -> None:
    """With --debug: the traceback of the user's code behind ``exc`` (a plugin that raised),
    found on its chain of causes; without: nothing (the one error line says where)."""
    if not debug:
        return
    seen: BaseException | None = exc
    while seen is not None:
        original = getattr(seen, "original", None)
        if original is not None:
            import traceback

            traceback.print_exception(original, file=sys.stderr)
            return
        seen = seen.__cause__ or seen.__context__
    import traceback

    from simpy_astra.plugins import engine_original, is_users_file

    original = engine_original(exc)  # a misuse our code caught inside theirs: ctx.send(99, ...)
    if any(is_users_file(frame.filename) for frame in traceback.extract_tb(original.__traceback__)):
        traceback.print_exception(original, file=sys.stderr)


def _on_stdout(exc: BaseException) -> bool:
    """``exc`` is a failed write of standard output (:mod:`simpy_astra.infra.streams` names it)."""
    from simpy_astra.infra.streams import STDOUT

    return isinstance(exc, OSError) and exc.filename == STDOUT


def _stdout_failed(exc: BaseException) -> int:
    """One line for standard output that refused the answer (``> /dev/full``, a full disk),
    rather than 'internal error OSError ... (this is a simpy-astra bug)'."""
    from simpy_astra.infra.files import os_problem

    _silence_stdout()  # what is still buffered for it must not fail again at exit
    problem = os_problem(exc)
    fix = "" if ";" in problem else "; send it elsewhere (> FILE)"
    print(f"error: cannot write to standard output: {problem}{fix}", file=sys.stderr)
    return EXIT_INPUT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of what is still
    buffered for the closed pipe does not print "Exception ignored ... BrokenPipeError"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (replaced by a caller)
        pass
    finally:
        os.close(devnull)
