"""Whether the files a sweep started from still hold what they held when it started.

A point is checked where it ran, the moment it ends: a row is kept only if every input still
had its starting contents then. Checking later, when the sweep's process saves the row, would
race the next point (which may already be running, and may be what edits the file) and refuse
a row made from the right contents.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from simpy_astra.errors import InputError
from simpy_astra.infra import files

Stamp = tuple[int, int] | None  # (size, mtime_ns); None when the file cannot be read


def file_digest(path: str) -> str:
    """The first 16 hex digits of the file's SHA-256 (how a sweep names its inputs' contents)."""
    return files.digest_16(path, "input file", files.TRACE_LIMIT_BYTES)


def stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


@dataclass(frozen=True)
class InputSnapshot:
    """The sweep's input files with their content hashes and their stat at the start."""

    digests: dict[str, str]
    stamps: dict[str, Stamp]
    #: where a point finds the user's modules after its working directory (the base scenario's
    #: folder, the sweep file's): a point runs from a temporary folder, in a worker
    module_folders: tuple[str, ...] = ()

    @classmethod
    def take(cls, paths: list[str], module_folders: tuple[str, ...] = ()) -> InputSnapshot:
        """Stat every file, then hash it: a file edited in between is hashed with its new
        contents, which the points then run on, and its moved stat only costs a hash later."""
        stamps = {path: stamp(path) for path in paths}
        return cls({path: file_digest(path) for path in paths}, stamps, module_folders)

    def changed(self) -> list[str]:
        """The files whose contents differ from the start: a cheap stat first, the content hash
        only when the stat moved (a file touched or rewritten with the same bytes is unchanged)."""
        changed = []
        for path, start in self.stamps.items():
            if stamp(path) == start:
                continue
            try:
                same = file_digest(path) == self.digests[path]
            except InputError:  # gone or unreadable
                same = False
            if not same:
                changed.append(path)
        return changed
