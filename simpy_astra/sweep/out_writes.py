"""A write into the sweep's ``--out`` folder that fails: its one-line error, and the removal of
the temporary it leaves (a failed write leaves no file behind)."""

from __future__ import annotations

import os

from simpy_astra.errors import InputError


def cannot_write(path: str, exc: OSError) -> InputError:
    return InputError(f"--out: cannot write {path} ({exc.strerror or exc}); choose a folder you can write")


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
