"""Start a child that a signal reaches as it would from a terminal, whoever started the tests."""

from __future__ import annotations

import signal


def sigint_by_default() -> None:
    """``preexec_fn`` for a child the test will Ctrl-C: a runner that starts the suite in the
    background (``nohup``, ``&`` in a script) hands SIGINT down as ignored, Python then never
    turns it into KeyboardInterrupt, and the child would run on; give it the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
