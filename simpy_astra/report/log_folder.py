"""``--logging-folder DIR``: ASTRA-sim's two log files, in the folder the flag names.

ASTRA-sim (``astra-sim/common/Logging.cc``) makes the folder if it is missing and logs through
spdlog to three sinks: the console (info and up), ``DIR/log.log`` (debug and up) and
``DIR/err.log`` (errors and up), each line ``[2026-11-26T22:40:01+0000] [I] <workload>: ...``:
the time, the level's letter, the logger's name. Here ``log.log`` gets every line the run
prints on stdout (the reference's per-NPU lines, under ASTRA-sim's logger names: ``workload``
for the finished and peak-memory lines, ``statistics`` for the others) and its warnings
(``[W]``); ``err.log`` gets the error that stops a run (``[E]``, also in ``log.log``) and is
empty otherwise. Both are appended to, as spdlog's file sinks do. They are written when the
command ends, each in one piece, so a run stopped by Ctrl-C adds nothing half-written.

ASTRA-sim writes ``log/`` even without the flag; simpy-astra writes no log files unless asked.
"""

from __future__ import annotations

import os
import time

from simpy_astra.errors import InputError
from simpy_astra.infra import files

FLAG = "--logging-folder"
#: spdlog's short level names (``%L``)
LEVELS = {"info": "I", "warning": "W", "error": "E"}


def logger_of(line: str) -> str:
    """The ASTRA-sim logger that prints ``line`` (Workload::report or Statistics)."""
    return "workload" if " finished, " in line or " peak memory usage: " in line else "statistics"


class LogFolder:
    """The two files of one run; lines are held until :meth:`write`."""

    def __init__(self, folder: str) -> None:
        if not folder:
            raise InputError(f"{FLAG}: must be a folder path (got an empty string)")
        files.make_folder(folder, FLAG)
        self.folder = folder
        self.log_path = os.path.join(folder, "log.log")
        self.err_path = os.path.join(folder, "err.log")
        self.check()
        self._log: list[str] = []
        self._err: list[str] = []

    def check(self) -> None:
        """No FIFO, device or input of the run (so far); a folder we can write."""
        for path in (self.log_path, self.err_path):
            files.check_output(path, FLAG)

    def add(self, level: str, text: str, logger: str = "simpy_astra") -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        line = f"[{stamp}] [{LEVELS[level]}] <{logger}>: {' '.join(text.split())}\n"
        self._log.append(line)
        if level == "error":
            self._err.append(line)

    def report_lines(self, lines: list[str]) -> None:
        for line in lines:
            self.add("info", line, logger_of(line))

    def write(self) -> None:
        """Append what was logged (err.log is made, empty, when nothing went wrong); never
        into one of the run's inputs (checked again: the inputs are known by now)."""
        self.check()
        for path, lines in ((self.log_path, self._log), (self.err_path, self._err)):
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write("".join(lines))
            except OSError as exc:
                raise InputError(f"{FLAG}: cannot write {files.show(path)} ({files.os_problem(exc)})") from None
        self._log, self._err = [], []
