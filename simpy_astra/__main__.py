"""``python -m simpy_astra`` and the ``simpy-astra`` command: see :mod:`simpy_astra.cli.main`."""

import gc
import sys


def _installed() -> bool:
    """The top-level folders are packages of ``simpy_astra`` (setup.cfg's ``package_dir``) once
    the project is installed; run from a checkout that is not, say how to install it."""
    from importlib.util import find_spec

    if find_spec("simpy_astra.collectives") is not None:
        return True
    import os

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"error: {checkout}: simpy_astra.collectives: not found: collectives/, topologies/ and workloads/ "
          f"become packages of simpy_astra when the project is installed; run pip install -e . in "
          f"{checkout} (README, 'Fresh machine'), then this command again", file=sys.stderr)
    return False


def main() -> int:
    """Run the command line, with the cyclic garbage collector paused during start-up.

    Start-up (importing the modules, reading the inputs) creates objects that live as long as
    the run: modules, classes, the Chakra schema, the loaded graphs. Collecting while they
    appear only scans them again and again (about 8 ms of the default scenario's 0.27 s). The run
    itself collects as before (:func:`simpy_astra.engine.events.fast_collection` resumes the
    collector for it); subcommands other than ``run`` resume it before they start.
    """
    if not _installed():
        return 2
    from simpy_astra.infra import streams

    closed = streams.prepare()
    if closed:
        print(closed, file=sys.stderr)
        return 2
    gc.disable()
    try:
        from simpy_astra.cli.main import main as cli_main
        from simpy_astra.infra.stopping import process_ends_after

        process_ends_after()

        code = cli_main()
    except KeyboardInterrupt:  # Ctrl-C before the command's own handler was installed
        from simpy_astra.infra.stopping import Stopped

        print(Stopped().line(), file=sys.stderr)
        code = Stopped().exit_code
    finally:
        gc.enable()
    _leave_if_stopped(code)
    return code


def _leave_if_stopped(code: int) -> None:
    """A stopped command leaves at once (its outputs are complete or absent), without closing
    the user's generators: one that catches GeneratorExit would print a warning per NPU."""
    from simpy_astra.infra.stopping import EXIT_INTERRUPTED, EXIT_TERMINATED

    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
