"""A run's warnings and notes as written before a pipe's wrapping (report.console.say_wrapped):
tests compare what a warning says, not where the plain width broke it."""

from __future__ import annotations


def unwrapped(text: str) -> list[str]:
    """The lines of ``text`` with each wrapped warning's or note's indented continuations
    joined back onto it (wrapping breaks only at single spaces)."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("  ") and lines and lines[-1].startswith(("warning:", "note:")):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def plain(text: str) -> str:
    """``text`` with its warnings and notes unwrapped, one line each (a trailing newline kept)."""
    joined = "\n".join(unwrapped(text))
    return joined + "\n" if text.endswith("\n") and joined else joined
