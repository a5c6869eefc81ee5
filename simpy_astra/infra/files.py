"""The one door through which simpy-astra opens files: every input it reads, every output it writes.

A FIFO, a device, a socket or a symlink to one (``/dev/zero``) is refused before it is opened,
so no input can block a run or grow its memory without bound; a symlink loop is an error, not
a file skipped. Reads are bounded by what the format can need (:data:`CONFIG_LIMIT_BYTES`,
:data:`TRACE_LIMIT_BYTES`, :data:`LOG_LIMIT_BYTES`, :data:`TABLE_LIMIT_BYTES`); a table too large
to hold is read a line at a time (:func:`open_text_input`). An output may not be one of the run's
inputs (each input read is remembered by device and inode), and is written to a temporary file
beside it that replaces the target only once complete, so a stopped or failed run leaves
nothing half-written. ``os.devnull`` is the one non-regular file accepted as an output. Every
OS error (missing, permission, full disk, not a folder) becomes one :class:`InputError` line
naming the path and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
from collections.abc import Iterator
from typing import IO, Any

from simpy_astra.errors import InputError, printable


def path_like_strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (a scenario, a generator's parameters: mappings and lists
    nested in any way) that could name a file: non-empty, shorter than a path can be, no NUL."""
    if isinstance(value, dict):
        for v in value.values():
            yield from path_like_strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from path_like_strings(v)
    elif isinstance(value, str) and 0 < len(value) < 4096 and "\0" not in value:
        yield value


#: configuration files (JSON, YAML, XML, sweep specs): real ones are kilobytes, a Graph
#: network of 100k nodes a few tens of megabytes
CONFIG_LIMIT_BYTES = 256 * 2**20
#: Chakra ET traces and PyTorch traces: big, but within what one process can hold
TRACE_LIMIT_BYTES = 8 * 2**30
#: text logs and ASTRA-sim 1.0 text workloads
LOG_LIMIT_BYTES = 1 * 2**30
#: CSV tables a run wrote (``--csv-out``): read a line at a time, so bounded only against a
#: wrong path; a folded 1,536-GPU step's expanded rows are 3 GB, an unfolded nodes.csv as much
TABLE_LIMIT_BYTES = 64 * 2**30
#: how much one read asks for (a read of ``limit + 1`` bytes would reserve the whole bound)
_BLOCK_BYTES = 16 * 2**20

#: (device, inode, mtime_ns, size) -> path of every input read by this process (an output
#: that is one of them is refused; mtime and size keep a reused inode from matching)
_inputs: dict[tuple[int, int, int, int], str] = {}
#: (device, inode) of every folder a file was created in by :func:`_probe_folder`
_writable_folders: set[tuple[int, int]] = set()


def forget_inputs() -> None:
    """Start a new command: no input read yet, no folder known to be writable."""
    _inputs.clear()
    _writable_folders.clear()


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def escaped(path: Any) -> str:
    """A path as one printable line: a colour code or a newline in a name is shown as ``\\x1b``,
    ``\\n`` (printed raw it recoloured the terminal, or wrote the code into a pipe)."""
    return printable(os.fsdecode(path) if isinstance(path, bytes) else str(path))


def show(path: Any) -> str:
    """A path fit for a one-line message (a 5000-character name is cut in the middle)."""
    text = escaped(path)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-57:]}"


def non_regular_kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def where_relative(path: Any) -> str:
    """' (relative paths resolve from CWD)' for a relative path that was not found; nothing for
    an absolute one, whose folder the hint would only send a user to look in wrongly."""
    if isinstance(path, str | bytes | os.PathLike) and os.path.isabs(path):
        return ""
    return f" (relative paths resolve from {os.getcwd()})"


def os_problem(exc: BaseException) -> str:
    """An OS error in words a user can act on."""
    code = getattr(exc, "errno", None)
    words = {
        errno.ENOENT: "does not exist" + where_relative(getattr(exc, "filename", None)),
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOTDIR: "a part of the path is not a folder",
        errno.ELOOP: "is a symlink loop (too many levels of symbolic links)",
        errno.ENAMETOOLONG: "the name is too long",
        errno.ENOSPC: "no space left on the device; free some space or choose another path",
        errno.EDQUOT: "disk quota exceeded; free some space or choose another path",
        errno.EROFS: "the file system is read-only; choose another path",
        errno.EISDIR: "is a directory",
        errno.EIO: "input/output error",
    }
    if code in words:
        return words[code]
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def check_input(path: Any, what: str) -> os.stat_result:
    """The stat of an input file, which must be a regular file (a symlink to one is fine)."""
    if path is None or path == "":
        raise InputError(f"<empty path>: expected the path of the {what} (got an empty string)")
    if path == "-" and not os.path.lexists(path):  # stdin to many tools
        raise InputError(f"-: '-' is not read as stdin here; save the {what} to a file and give its path")
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InputError.in_file(show(path), f"{os_problem(exc)}; expected the {what}") from None
    kind = non_regular_kind(st.st_mode)
    if kind is not None:
        raise InputError.in_file(show(path), f"is {kind}, not a regular file; expected the {what}")
    return st


@contextlib.contextmanager
def open_input(path: Any, what: str, limit: int = CONFIG_LIMIT_BYTES) -> Iterator[IO[bytes]]:
    """A regular file opened for binary reading (never blocks on a FIFO: it is refused before
    it is opened, and opening does not wait); larger than ``limit`` bytes is an error."""
    check_input(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        raise InputError.in_file(show(path), f"cannot be read ({os_problem(exc)}); expected the {what}") from None
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed to a moment ago
        kind = non_regular_kind(st.st_mode)
        if kind is not None:
            raise InputError.in_file(show(path), f"is {kind}, not a regular file; expected the {what}")
        if st.st_size > limit:
            raise InputError.in_file(show(path), f"is {st.st_size:,} bytes, more than a {what} can need "
                                   f"({limit:,}); check the path")
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    _inputs[_key(st)] = str(path)
    with f:
        try:
            yield f
        except OSError as exc:
            raise InputError.in_file(show(path), f"cannot be read ({os_problem(exc)}); expected the {what}") from None


def digest_16(path: Any, what: str, limit: int = CONFIG_LIMIT_BYTES) -> str:
    """The first 16 hex digits of a regular file's SHA-256, read in blocks (how a sweep names
    its inputs' contents and a calibration its logs: by content, not by name)."""
    import hashlib  # deferred: loading OpenSSL cost every run's start-up a few ms, few runs digest

    sha = hashlib.sha256()
    with open_input(path, what, limit) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()[:16]


def read_bytes(path: Any, what: str, limit: int = CONFIG_LIMIT_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` of them (a file that grows past it while read,
    or a ``/proc`` file that never ends, is an error)."""
    chunks: list[bytes] = []
    total = 0
    with open_input(path, what, limit) as f:
        ask = min(limit + 1, os.fstat(f.fileno()).st_size + 1)  # the file whole, in one piece
        while total <= limit:  # then in blocks (it grew, or is a /proc file of size 0): a
            block = f.read(ask)  # bound must not reserve what it bounds
            if not block:
                break
            chunks.append(block)
            total += len(block)
            ask = min(_BLOCK_BYTES, limit + 1 - total)
    if total > limit:
        raise InputError.in_file(show(path), f"is more than {limit:,} bytes, more than a {what} can need; "
                               f"check the path")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_text(path: Any, what: str, limit: int = CONFIG_LIMIT_BYTES, *, encoding: str = "utf-8-sig",
              errors: str = "strict") -> str:
    """A regular file's text (UTF-8, a leading BOM dropped); bytes that are not UTF-8 are one line."""
    data = read_bytes(path, what, limit)
    bom = _foreign_bom(data)
    if bom:  # Notepad's "Unicode", PowerShell's > redirect; first, as errors="replace" reads garbage
        raise InputError(f"{show(path)}: is {bom} text (its byte-order mark says so), not UTF-8; save "
                         f"it as UTF-8 (iconv -f {bom} -t UTF-8); expected the {what}")
    wide = _utf16_without_bom(data)
    if wide:  # valid UTF-8 (its NULs are ASCII): the YAML reader blamed '#x0000' at 'position 1'
        raise InputError(f"{show(path)}: is {wide} text without a byte-order mark (every other byte is 0), not "
                         f"UTF-8; save it as UTF-8 (iconv -f {wide} -t UTF-8); expected the {what}")
    packed = _compressed(data)
    if packed:  # a log fetched as .gz read as "no result table", a YAML as "not UTF-8 (byte 1)"
        name, tool = packed
        raise InputError(f"{show(path)}: is {name}-compressed, not text; decompress it ({tool}) and give the "
                         f"file it holds; expected the {what}")
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as exc:
        raise InputError.in_file(show(path), f"{not_utf8_at(data, exc.start)}; expected the {what}") from None


def not_utf8_at(data: bytes, start: int) -> str:
    """'is not UTF-8 text (line 3, column 9: byte 0xe9); save it as UTF-8 (...)': where the first
    byte that is not UTF-8 sits, and the fix. A byte offset alone sent a user to a hex editor,
    naming no fix; an editor's Latin-1 or Windows-1252 text is the usual cause."""
    if b"\0" in data[:4096]:  # a Chakra trace or an archive, not text in another encoding
        return "is a binary file, not text"
    line = data.count(b"\n", 0, start) + 1
    column = len(data[data.rfind(b"\n", 0, start) + 1:start].decode("utf-8", "replace")) + 1
    return (f"is not UTF-8 text (line {line}, column {column}: byte 0x{data[start]:02x}); save it as UTF-8 "
            f"(iconv -f WINDOWS-1252 -t UTF-8 for an editor's Latin-1 or Windows-1252)")


def _compressed(data: bytes) -> tuple[str, str] | None:
    """(format, the command that unpacks it) of an archive's or compressor's magic bytes."""
    for magic, name, tool in ((b"\x1f\x8b", "gzip", "gunzip"), (b"BZh", "bzip2", "bunzip2"),
                              (b"\xfd7zXZ\x00", "xz", "unxz"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
                              (b"PK\x03\x04", "zip", "unzip")):
        if data.startswith(magic) and (name != "bzip2" or data[3:4].isdigit()):
            return name, tool
    return None


@contextlib.contextmanager
def open_text_input(path: Any, what: str, limit: int = TABLE_LIMIT_BYTES, *,
                    newline: str | None = None) -> Iterator[IO[str]]:
    """:func:`open_input` as UTF-8 text read a line at a time (a table too large to hold whole);
    bytes that are not UTF-8 are one line naming the file, wherever they are met."""
    with open_input(path, what, limit) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline=newline)
        try:
            yield text
        except UnicodeDecodeError as exc:
            raise InputError.in_file(show(path), f"is not UTF-8 text ({exc.reason}); expected the {what}") from None


def _utf16_without_bom(data: bytes) -> str | None:
    """``UTF-16LE``/``UTF-16BE`` for text that starts as ASCII written two bytes a character
    with no byte-order mark (``iconv -t UTF-16LE``, some Windows tools); None otherwise."""
    head = data[:8]
    if len(head) < 4 or len(head) % 2:
        head = head[:len(head) - len(head) % 2]
    if len(head) < 4:
        return None
    evens, odds = head[0::2], head[1::2]
    if not any(odds) and all(0 < b < 0x80 for b in evens):
        return "UTF-16LE"
    if not any(evens) and all(0 < b < 0x80 for b in odds):
        return "UTF-16BE"
    return None


def _foreign_bom(data: bytes) -> str | None:
    """The encoding a leading byte-order mark other than UTF-8's names; None without one."""
    for mark, name in ((b"\xff\xfe\x00\x00", "UTF-32LE"), (b"\x00\x00\xfe\xff", "UTF-32BE"),
                       (b"\xff\xfe", "UTF-16LE"), (b"\xfe\xff", "UTF-16BE")):
        if data.startswith(mark):
            return name
    return None


def remember_input(path: Any) -> None:
    """Count ``path`` among the run's inputs although it is not read (yet): e.g. the ET ranks a
    folded run never opens. Missing files are ignored."""
    with contextlib.suppress(OSError, ValueError):
        _inputs[_key(os.stat(path))] = str(path)


def check_output(path: Any, what: str) -> None:
    """Refuse, before anything is written, an output path that cannot be written or must not be:
    not a regular file (a FIFO would block), one of the run's inputs, a missing folder."""
    if path is None or path == "":
        raise InputError(f"{what}: must be a file path (got an empty string)")
    text = os.fsdecode(path)
    if "\0" in text or any(len(os.fsencode(part)) > 255 for part in text.split(os.sep)):
        raise InputError(f"{what}: {show(path)} is not a path the system accepts (a name over 255 bytes "
                         f"or a NUL character)")
    if text == os.devnull:
        return
    descriptor = descriptor_name(text)
    if descriptor is not None:  # the file goes in whole by a rename: that replaced /dev/stdout itself
        raise InputError(f"{what}: {show(path)} is {descriptor}, not a file: an output is written whole and "
                         f"renamed into place, which would replace the link itself; give a file path (then cat it)")
    path = text = write_target(text)  # a link is written through, as a shell's > does
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"{what}: cannot write {show(path)} ({os_problem(exc)})") from None
    if st is not None:
        kind = non_regular_kind(st.st_mode)
        if kind is not None:
            raise InputError(f"{what}: {show(path)} is {kind}; expected a regular file to write")
        source = _inputs.get(_key(st))
        if source is not None:
            raise InputError(f"{what}: {show(path)} is one of this run's inputs ({show(source)}); "
                             f"write the output to another path")
    folder = os.path.dirname(text) or "."
    if not os.path.isdir(folder):
        problem = "is not a folder" if os.path.exists(folder) else "does not exist (make it first)"
        raise InputError(f"{what}: cannot write {show(path)}: {show(folder)} {problem}")
    if not os.access(folder, os.W_OK | os.X_OK) or (st is not None and not os.access(path, os.W_OK)):
        raise InputError(f"{what}: cannot write {show(path)}: permission denied")
    _probe_folder(folder, path, what)


def write_target(path: str) -> str:
    """The file a write to ``path`` lands in: a symlink's target (also a missing one, made as a
    shell's ``>`` makes it), so the link survives a write that renames a whole file into place
    and points at the new text; ``path`` itself if it is no link, or a link loop."""
    if not os.path.islink(path):
        return path
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


#: a process's open descriptor as a path: /proc/self/fd/1, /proc/123/fd/2, /dev/fd/1
_FD_PATH = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/\d+|/dev/fd/\d+")


def descriptor_name(text: str) -> str | None:
    """What a path that is, or links through, one of a process's descriptors (/dev/stdout,
    /dev/fd/1) names, in words ("standard output"); None for any other path."""
    hop = os.path.abspath(text)
    for _ in range(40):  # the kernel's own bound on a chain of links
        folder = os.path.realpath(os.path.dirname(hop))  # /dev/fd and /proc/self: where they point
        hop = os.path.join(folder, os.path.basename(hop))
        if _FD_PATH.fullmatch(hop):
            fd = int(hop.rsplit("/", 1)[1])
            return ("standard input", "standard output", "standard error")[fd] if fd < 3 else f"descriptor {fd}"
        try:
            hop = os.path.join(folder, os.readlink(hop))
        except (OSError, ValueError):
            return None
    return None


def _probe_folder(folder: str, path: Any, what: str) -> None:
    """Create and remove a file in ``folder``, as :func:`open_output` will: ``os.access``
    says yes to root everywhere, also in ``/proc`` and ``/sys``, where no file can be made,
    so only trying tells before the run whether its output can be written."""
    try:
        st = os.stat(folder)
        key = (st.st_dev, st.st_ino)
    except OSError:
        key = None
    if key in _writable_folders:  # a generator's thousands of ranks: one probe a folder
        return
    probe = os.path.join(folder, f".{os.path.basename(os.fsdecode(path))}.{os.getpid()}.probe")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        problem = "its folder accepts no new files" if exc.errno == errno.ENOENT else os_problem(exc)
        raise InputError(f"{what}: cannot write {show(path)} ({problem})") from None
    os.close(fd)
    _remove(probe)
    if key is not None:
        _writable_folders.add(key)


@contextlib.contextmanager
def open_output(path: Any, what: str, mode: str = "w", **options: Any) -> Iterator[IO[Any]]:
    """An output file, written whole or not at all: the text goes to a temporary file beside
    ``path`` that replaces it once the block ends without error (an interrupted or failed
    write leaves the old file, or none). ``what`` names the flag or field the path came from."""
    check_output(path, what)
    if "b" not in mode:
        options.setdefault("encoding", "utf-8")
    if os.fsdecode(path) == os.devnull:
        with open(path, mode, **options) as f:
            yield f
        return
    text = write_target(os.fsdecode(path))
    tmp = os.path.join(os.path.dirname(text), f".{os.path.basename(text)}.{os.getpid()}.tmp")
    try:
        with open(tmp, mode, **options) as f:
            yield f
        os.replace(tmp, text)
    except OSError as exc:
        _remove(tmp)
        raise InputError(f"{what}: cannot write {show(path)} ({os_problem(exc)})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def make_folder(path: Any, what: str) -> None:
    """``mkdir -p`` whose failure (a file in the way, permission, full disk) is one line."""
    if path is None or not str(path).strip():  # makedirs('') failed as "its folder accepts no new folders"
        raise InputError(f"{what}: must be a folder path (got {'an empty string' if path == '' else repr(path)})")
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:  # exist_ok is for folders: something else has the name
        try:
            kind = non_regular_kind(os.stat(path).st_mode) or "a regular file"
        except OSError as exc:
            kind = "a symlink loop" if exc.errno == errno.ELOOP else "a symlink to nothing"
        raise InputError(f"{what}: {show(path)} is {kind}, not a folder; name a folder") from None
    except (OSError, ValueError) as exc:  # ENOENT once makedirs made the parents: /proc, /sys
        enoent = getattr(exc, "errno", None) == errno.ENOENT
        made = getattr(exc, "filename", None) or path  # a parent on the way, or the folder itself
        problem = (("" if made == path else f"{show(made)}: ") + "its folder accepts no new folders"
                   if enoent else os_problem(exc))
        raise InputError(f"{what}: cannot create folder {show(path)} ({problem})") from None
    if not os.path.isdir(path):
        raise InputError(f"{what}: {show(path)} is not a folder")


def numbered_files(prefix: str, suffix: str = ".et") -> dict[int, str]:
    """Rank -> path of every ``PREFIX.{rank}{suffix}`` in the prefix's folder (one listing, so
    a folder of 100k ranks costs one scan, not one stat per rank)."""
    folder = os.path.dirname(prefix) or "."
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"\.(0|[1-9][0-9]*)" + re.escape(suffix))
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"{show(folder)}: cannot list the folder of {show(prefix)}.*{suffix} "
                         f"({os_problem(exc)})") from None
    out = {}
    for name in names:
        m = pattern.fullmatch(name)
        if m:
            out[int(m.group(1))] = os.path.join(os.path.dirname(prefix), name)
    return out


def odd_rank_file(prefix: str, ranks: int, suffix: str = ".et") -> str | None:
    """What is wrong with the first of ranks ``0 .. ranks-1``'s files that is there but not a
    regular file (a folder named ``step.3.et``), or None: one listing, its entries' own types."""
    folder = os.path.dirname(prefix) or "."
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"\.(0|[1-9][0-9]*)" + re.escape(suffix))
    try:
        entries = list(os.scandir(folder))
    except (OSError, ValueError):
        return None  # the run's own checks name a folder that cannot be listed
    odd = {}
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m and int(m.group(1)) < ranks:
            with contextlib.suppress(OSError):
                kind = None if entry.is_file() else non_regular_kind(entry.stat().st_mode)
                if kind is not None:
                    odd[int(m.group(1))] = (os.path.join(os.path.dirname(prefix), entry.name), kind)
    if not odd:
        return None
    rank = min(odd)
    return f"NPU {rank}'s ET file {show(odd[rank][0])} is {odd[rank][1]}, not a Chakra ET file; put the rank's file there"


def rank_file_problem(prefix: str, suffix: str = ".et") -> str | None:
    """What is wrong with a workload named by one of its files (``traces/ar.0.et``, which looks
    for ``traces/ar.0.et.0.et``), or None when ``prefix`` is no rank's file."""
    rank = re.fullmatch(r"(.+)\.(0|[1-9][0-9]*)" + re.escape(suffix), prefix)
    if rank is None or not os.path.isfile(prefix):
        return None
    return (f"{show(prefix)}: is the ET file of NPU {rank.group(2)}; a workload is the prefix of its ET files, "
            f"PREFIX for PREFIX.0{suffix}, PREFIX.1{suffix} ...: give {show(rank.group(1))}")


def check_no_gaps(ranks: dict[int, str], prefix: str, where: str, suffix: str = ".et") -> int:
    """The number of ranks, which must be 0..N-1 with none missing; else one line naming the
    first missing ones (a job read up to its first gap would silently be a smaller job)."""
    if not ranks:
        return 0
    missing = sorted(set(range(max(ranks) + 1)) - set(ranks))
    if missing:
        shown = ", ".join(f"{prefix}.{r}{suffix}" for r in missing[:4]) + (" ..." if len(missing) > 4 else "")
        raise InputError(f"{where}: {shown} missing: the workload has ranks up to {max(ranks)} "
                         f"({len(ranks)} files), so it needs every rank 0..{max(ranks)}; add the missing "
                         f"file(s) or remove the later ones")
    return len(ranks)
