"""Where generators write traces: a checked prefix, a bounded file count, nothing left on failure.

A generator writes one ``PREFIX.{npu}.et`` per NPU; a slip of a flag (``--dp 1000000``, an
empty ``--output``) would otherwise scatter hundreds of thousands of files or hidden ``.0.et``
files into the working directory. These checks run before the first file is written, and
:class:`TraceFiles` removes what a failed or interrupted generator had written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import sys
from types import TracebackType

from simpy_astra.errors import InputError, Param
from simpy_astra.infra import files

#: the most ET files (NPUs) one generator call writes; far beyond what one run can simulate
MAX_TRACE_NPUS = 65536
#: the most trace nodes a generated step may hold over all its stages, about 1 KB each to build
#: and simulate (about 4 GB): past it a typo of a few digits spent minutes and gigabytes before
#: any error, or ended on an internal MemoryError
MAX_TRACE_NODES = 4_000_000
#: a rank's trace file, PREFIX.{rank}.et
_RANK_FILE = re.compile(r"(.*)\.(0|[1-9][0-9]*)\.et")
#: Linux's limits on one file name and on a whole path, in bytes
NAME_MAX = 255
PATH_MAX = 4096


#: the traces' prefix, ``--output`` of a command line; a scenario's traces are the workload cache's
OUTPUT = Param("output")


def unwritable(problem: str) -> InputError:
    """``--output: <problem>``, kept as parts: a scenario's generation words it as the workload
    cache's (:func:`~simpy_astra.workloads.trace_cache.materialise`), never as a field of its own."""
    return InputError.of_params(OUTPUT, f": {problem}")


def check_prefix(prefix: str) -> None:
    """``prefix`` names files ``PREFIX.{npu}.et`` in a folder that exists or can be made."""
    base = os.path.basename(prefix)
    if not prefix or not base or base in (".", ".."):
        raise unwritable(f"must be a file prefix such as traces/allreduce (got {prefix!r}); "
                         f"it writes PREFIX.0.et, PREFIX.1.et, ...")
    if prefix == "-":  # stdout to many tools: here files '-.0.et', '-.1.et', ... in the working folder
        raise unwritable("'-' would be files named '-.0.et', '-.1.et', ... here, not stdout (a trace is "
                         "one binary file per NPU); give a file prefix such as traces/allreduce")
    if os.path.isdir(prefix):  # the files would land beside the folder, named after it
        raise unwritable(f"{prefix} is a folder; a prefix names files, so they would be {base}.0.et, "
                         f"{base}.1.et, ... beside it: give {os.path.join(prefix, 'NAME')} to write NAME.0.et, ... "
                         f"inside it")
    kind = files.descriptor_name(prefix)  # /dev/stdout: a regular file when stdout is redirected
    with contextlib.suppress(OSError, ValueError):  # /dev/null: files /dev/null.0.et, ... in /dev
        kind = kind or files.non_regular_kind(os.stat(prefix).st_mode)
    if kind is not None:
        raise unwritable(f"{prefix} is {kind}; a prefix names files, so they would be {base}.0.et, "
                         f"{base}.1.et, ... beside it: give a prefix such as traces/allreduce")
    rank = _RANK_FILE.fullmatch(base)
    if rank is not None:  # else traces/ar.0.et.0.et, ... which no one meant
        raise unwritable(f"{prefix} is the name of NPU {rank.group(2)}'s ET file; give the prefix, "
                         f"{prefix[:len(prefix) - len(base)]}{rank.group(1)}, which writes {rank.group(1)}.0.et, "
                         f"{rank.group(1)}.1.et, ...")
    if "\0" in prefix:
        raise unwritable(f"must not contain a NUL character (got {prefix!r})")
    long_part = next((part for part in prefix.split(os.sep) if len(os.fsencode(part)) + 9 > NAME_MAX), None)
    if long_part is not None:
        raise unwritable(f"the name {long_part[:40]!r}... is {len(long_part)} characters; a file or "
                         f"folder name may have at most {NAME_MAX - 9} here (the system's limit, with "
                         f"'.NNNNN.et' added)")
    if len(os.fsencode(os.path.abspath(prefix))) + 9 >= PATH_MAX:
        raise unwritable(f"the path is {len(prefix)} characters; at most about {PATH_MAX - 9} fit "
                         f"the system's limit")
    folder = os.path.dirname(prefix) or "."
    parent = folder
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent) or "."
    if not os.path.isdir(parent):
        raise unwritable(f"cannot write under {folder!r}: {parent!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise unwritable(f"cannot write under {folder!r}: {parent!r} is not writable")


def check_npu_count(npus: int, param: Param) -> None:
    """2 to :data:`MAX_TRACE_NPUS` files of the generator parameter ``param``, checked before
    anything is built or written: traces for 1 NPU were written, and no run takes them (a network
    dimension holds 2 or more NPUs)."""
    if npus < 2:
        raise InputError.of_params(param, f": must be 2 or more (got {npus}): a run simulates a network between "
                                          f"NPUs, and every network has 2 or more")
    if npus > MAX_TRACE_NPUS:
        raise InputError.of_params(param, f": {npus} NPUs would write {npus} trace files; at most "
                                          f"{MAX_TRACE_NPUS} are written (lower the parallelism)")


def check_free_space(prefix: str, total_bytes: int, where: str | None = None) -> None:
    """Refuse before writing when the traces would not fit on the disk (at ``where``, else
    as :func:`unwritable`)."""
    folder = os.path.dirname(prefix) or "."
    while not os.path.exists(folder):
        folder = os.path.dirname(folder) or "."
    free = shutil.disk_usage(folder).free
    if total_bytes > free:
        room = "no free space (a full disk, or a file system that takes no files)" if free == 0 else \
            f"{_size(free)} free"
        problem = f"the traces need about {_size(total_bytes)} but {folder!r} has {room}"
        raise unwritable(problem) if where is None else InputError(f"{where}: {problem}")


def _size(n: float) -> str:
    """Bytes in GB, MB or kB, whichever reads more than 0.0."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if n >= scale / 10:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.1f} kB"


class TraceFiles:
    """Paths written inside a ``with`` block; all of them are removed if the block fails
    (an error, Ctrl-C), so a generator never leaves half a trace set behind."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.made_dirs: list[str] = []

    def makedirs(self, prefix: str) -> None:
        """Create ``prefix``'s folder, remembering which folders are new."""
        folder = os.path.dirname(prefix)
        missing = []
        while folder and not os.path.exists(folder):
            if os.path.islink(folder):  # makedirs then said only "(File exists)"
                raise unwritable(f"cannot create the folder {folder!r}: it is a symlink that leads nowhere (a loop, "
                                 f"or to a missing path); mend the link, or give another prefix")
            missing.append(folder)
            folder = os.path.dirname(folder)
        for path in reversed(missing):
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as exc:
                problem = ("its folder accepts no new folders" if exc.errno == errno.ENOENT  # /proc, /sys: was
                           else files.os_problem(exc))  # "(No such file or directory)" of the one being made
                raise unwritable(f"cannot create the folder {path!r} ({problem})") from None
            self.made_dirs.append(path)

    def add(self, path: str) -> str:
        """Remember ``path`` (removed if the block fails); a FIFO, device or one of the run's
        inputs in its place is refused before anything is written."""
        files.check_output(path, "--output")
        self.paths.append(path)
        return path

    def _drop_stale_ranks(self) -> None:
        """A whole set ``PREFIX.0.et`` .. ``PREFIX.{n-1}.et`` was written: ranks ``n`` and up
        left by an earlier, larger set at the prefix are removed (said on stderr), else a run
        on more NPUs would read them with this set as one job."""
        written: dict[str, set[int]] = {}
        for path in self.paths:
            m = _RANK_FILE.fullmatch(path)
            if m:
                written.setdefault(m.group(1), set()).add(int(m.group(2)))
        for prefix, ranks in written.items():
            if ranks != set(range(len(ranks))):
                continue  # not a whole set from rank 0: nothing can be told stale
            stale = sorted(r for r in files.numbered_files(prefix) if r >= len(ranks))
            for rank in stale:
                with contextlib.suppress(OSError):
                    os.remove(f"{prefix}.{rank}.et")
            if stale:
                shown = f"{prefix}.{stale[0]}.et" + (f" .. {prefix}.{stale[-1]}.et" if len(stale) > 1 else "")
                print(f"note: removed {shown}: ranks of an earlier trace set at {prefix} past this one's "
                      f"{len(ranks)}", file=sys.stderr)

    def __enter__(self) -> TraceFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self._drop_stale_ranks()
            return
        for path in self.paths:
            try:
                os.remove(path)
            except OSError:
                pass
        for folder in reversed(self.made_dirs):
            try:
                os.rmdir(folder)
            except OSError:
                pass
