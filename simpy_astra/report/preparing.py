"""A line on stderr while a run prepares, before simulated time starts.

Reading the inputs, writing a generated job's traces and reading them back come before the
run's own progress line (:func:`~simpy_astra.report.progress_line.run_with_progress`): a Megatron job
near the trace bound (4,000,000 nodes) spends a minute or two there. Once preparing has taken
``after_s``, a background thread shows ``preparing the run (inputs and traces): N s elapsed``:
redrawn in place on a terminal; in a pipe or a file only with ``SIMPY_ASTRA_PROGRESS=1``, a
line every ``every_s``. A short preparation prints nothing; ``SIMPY_ASTRA_PROGRESS=0`` turns
it off.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

from simpy_astra.report.progress_line import ProgressLine, progress_wanted

TEXT = "preparing the run (inputs and traces): {elapsed_s:.0f} s elapsed"


class PreparingNotice:
    """Started before the inputs are read, stopped when simulated time starts (idempotent);
    drawn through a :class:`~simpy_astra.report.progress_line.ProgressLine`."""

    def __init__(self, stream: TextIO | None = None, after_s: float = 2.0, every_s: float = 5.0) -> None:
        self.line = ProgressLine(stream)
        self.after_s, self.every_s = after_s, every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PreparingNotice:
        if progress_wanted(self.line.stream) and self._thread is None:
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.line.clear()  # off the terminal: the run's own lines come next

    def _watch(self) -> None:
        start = time.monotonic()
        if self._stop.wait(self.after_s):
            return
        while True:
            self.show(time.monotonic() - start)
            if self._stop.wait(1.0 if self.line.live else self.every_s):
                return

    def show(self, elapsed_s: float) -> None:
        self.line.write(TEXT.format(elapsed_s=elapsed_s))

    def __enter__(self) -> PreparingNotice:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
