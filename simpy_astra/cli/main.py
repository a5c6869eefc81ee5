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

from simpy_astra.collectives.base import CollectiveError
from simpy_astra.errors import InputError, StalledError
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
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
        return run_astra_flags(argv)
    except (InputError, EtError, CollectiveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except StalledError as exc:
        sys.stdout.flush()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_STALLED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a bug, not a bad input: still one line, unless asked for more
        if os.environ.get("SIMPY_ASTRA_TRACEBACK"):
            raise
        sys.stdout.flush()
        text = " ".join(str(exc).split()) or "no message"
        print(
            f"error: internal error {type(exc).__name__}: {text} (this is a simpy-astra bug; "
            f"set SIMPY_ASTRA_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


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
