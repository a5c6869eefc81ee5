"""On/off switches read from the environment (``SIMPY_ASTRA_PROGRESS``, ``SIMPY_ASTRA_FOLD``,
``SIMPY_ASTRA_TRACEBACK``), one reading for all: ``SIMPY_ASTRA_PROGRESS=yes-please`` was read
as unset without a word (no progress in a pipe, and no hint why), ``SIMPY_ASTRA_TRACEBACK=0``
as on, while ``SIMPY_ASTRA_FOLD=maybe`` was refused."""

from __future__ import annotations

import os

from simpy_astra.errors import InputError

#: the words of each state, in any case
ON = ("1", "on", "true", "yes")
OFF = ("0", "off", "false", "no")
#: every switch, and what leaving it unset means
SWITCHES = {"SIMPY_ASTRA_PROGRESS": "progress lines on a terminal only",
            "SIMPY_ASTRA_FOLD": "symmetry folding on",
            "SIMPY_ASTRA_TRACEBACK": "a bug's one error line, no traceback"}


def env_switch(name: str) -> bool | None:
    """The switch ``name``: True (on), False (off), None (unset or empty); another word is an
    error naming the words it takes."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    if value in ON or value in OFF:
        return value in ON
    raise InputError(f"{name}: must be 1/on or 0/off (got {value!r}); unset it for the default "
                     f"({SWITCHES.get(name, 'off')})")


def check_switches() -> None:
    """Every switch's value, read once before a command starts (a bad one is one line then,
    not mid-run)."""
    for name in SWITCHES:
        env_switch(name)
