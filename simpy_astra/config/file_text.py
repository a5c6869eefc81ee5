"""A config file's text, read through the one door (:mod:`simpy_astra.infra.files`): a file
that is missing, unreadable, not UTF-8 or not a regular file is one line naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

from simpy_astra.errors import InputError
from simpy_astra.infra import files

PathLike = str | os.PathLike[str]


def read_text(src: str, what: str) -> str:
    """A config file's text; a missing, unreadable, non-UTF-8, oddly named or non-regular file
    (a FIFO, a device) is one line. Read through :mod:`simpy_astra.infra.files`, the one door."""
    if not src:
        raise InputError(f"<empty path>: expected the path of the {what} file (got an empty string)")
    if src == "-" and not os.path.lexists(src):  # stdin to many tools ('cat s.yaml | simpy-astra run -')
        raise InputError(f"-: '-' is not read as stdin here; save the {what} to a file and give its path")
    path = Path(src)
    try:
        if not path.exists() and not path.is_symlink():
            raise InputError.in_file(short_path(src), f"{what} file does not exist{files.where_relative(src)}")
        if path.is_dir():
            raise InputError.in_file(short_path(src), f"is a directory; expected the {what} file")
    except (OSError, ValueError) as exc:  # too long a name, a NUL byte, no permission, ...
        why = getattr(exc, "strerror", None) or str(exc)
        raise InputError.in_file(short_path(src), f"cannot be read ({why}); expected the {what} file") from None
    return files.read_text(src, f"{what} file", files.CONFIG_LIMIT_BYTES)


def short_path(src: str) -> str:
    """A path fit for a one-line message (a 5000-character name is cut in the middle)."""
    return src if len(src) <= 120 else f"{src[:60]}...{src[-57:]}"
