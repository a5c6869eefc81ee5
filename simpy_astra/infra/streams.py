"""The process's standard output and error, made safe before a command runs.

A shell may start the command with a stream closed (``>&-``: Python then has no
``sys.stdout`` and every print ended on ``'NoneType' object has no attribute``), or on a
device that refuses bytes (``> /dev/full``: an unnamed ``OSError`` told as a simpy-astra bug).
A closed stream is pointed at /dev/null, so that no file the run opens takes its number;
standard output closed is refused, as the answer goes there, while error closed drops the
diagnostics as the user asked. Standard output's write errors name it
(:data:`STDOUT`), so that the command's one error line can say which output failed.
"""

from __future__ import annotations

import io
import os
import sys

#: the name an OSError of writing standard output carries (``OSError.filename``)
STDOUT = "<standard output>"


class _NamedOutput(io.FileIO):
    """Standard output's file descriptor, whose write errors name it (a broken pipe stays
    itself: the reader left, which ends the command quietly)."""

    def write(self, data) -> int | None:  # type: ignore[override]
        try:
            return super().write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, STDOUT) from None


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _text(fd: int, like: io.TextIOWrapper | None, raw: io.FileIO) -> io.TextIOWrapper:
    """A text stream on ``raw`` (descriptor ``fd``), encoded and buffered as ``like`` was."""
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=getattr(like, "encoding", None) or "utf-8",
                            errors=getattr(like, "errors", None) or "backslashreplace",
                            line_buffering=bool(getattr(like, "line_buffering", False)) or os.isatty(fd),
                            write_through=bool(getattr(like, "write_through", False)))


def prepare() -> str | None:
    """Point a closed standard output or error at /dev/null, name standard output's write
    errors; the error line to stop on when standard output was closed, else None."""
    closed = [fd for fd in (1, 2) if _closed(fd)]
    if closed:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in closed:
            if fd != devnull:
                os.dup2(devnull, fd)
        if devnull not in closed:
            os.close(devnull)
    if 2 in closed:
        sys.stderr = _text(2, None, io.FileIO(2, "w", closefd=False))
    if 1 in closed:
        sys.stdout = _text(1, None, io.FileIO(1, "w", closefd=False))
        return ("error: standard output is closed (>&-), and the command writes its answer there; give "
                "> FILE, or > /dev/null to drop it")
    if _on_descriptor_1(sys.stdout):
        sys.stdout.flush()
        sys.stdout = _text(1, sys.stdout, _NamedOutput(1, "w", closefd=False))
    return None


def _on_descriptor_1(stream: object) -> bool:
    """``stream`` is the interpreter's own text stream on descriptor 1 (not a caller's)."""
    try:
        return isinstance(stream, io.TextIOWrapper) and stream.fileno() == 1
    except (OSError, ValueError):
        return False
