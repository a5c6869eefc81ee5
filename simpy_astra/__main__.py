"""``python -m simpy_astra`` and the ``simpy-astra`` command: see :mod:`simpy_astra.cli.main`."""

import gc
import sys


def main() -> int:
    """Run the command line, with the cyclic garbage collector paused during start-up.

    Start-up (importing the modules, reading the inputs) creates objects that live as long as
    the run: modules, classes, the Chakra schema, the loaded graphs. Collecting while they
    appear only scans them again and again (about 8 ms of the default scenario's 0.27 s). The run
    itself collects as before (:func:`simpy_astra.engine.fast_collection` resumes the
    collector for it); subcommands other than ``run`` resume it before they start.
    """
    gc.disable()
    try:
        from simpy_astra.cli.main import main as cli_main

        return cli_main()
    finally:
        gc.enable()


if __name__ == "__main__":
    sys.exit(main())
