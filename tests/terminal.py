"""Run a command in a pseudo-terminal of a given size: what a researcher's terminal receives."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

#: colour, cursor and title escape sequences
ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07)")


def run_in_terminal(argv: list[str], cwd: Path, env: dict[str, str], rows: int, columns: int,
                    timeout_s: float = 600) -> tuple[int, str]:
    """Exit status and everything ``argv`` wrote to a ``rows`` x ``columns`` terminal (stdout
    and stderr both), escape sequences dropped. ``timeout_s`` guards against a hang; it is
    not a timing claim."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    import time

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env={**env, "TERM": "xterm"}, stdin=follower, stdout=follower,
                            stderr=follower, close_fds=True)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if not select.select([leader], [], [], 1)[0]:
                continue
            try:
                data = os.read(leader, 1 << 16)
            except OSError:  # the terminal's other end closed: the command is gone
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        if proc.poll() is None and time.monotonic() >= deadline:
            proc.kill()
    return proc.wait(timeout=60), ANSI.sub("", b"".join(chunks).decode(errors="replace"))
