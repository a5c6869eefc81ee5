"""Read NVIDIA nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ...) as printed.

A log is the program's stdout, possibly captured through MPI or a batch system: lines may
carry ``[1,0]<stdout>:`` / ``[0]`` rank prefixes (even in the middle of a line, when each
write is prefixed) and the result rows may or may not start with ``#``. NCCL debug lines,
warnings and shell noise between the rows are ignored. What is read:

- the collective: ``--collective``, else the program named on a command line or in
  ``# Collective test starting: X_perf``, else inferred from the table itself (the ratio of
  ``size`` to ``count`` x type size, whether a reduction op is printed, and the ratio of
  busbw to algbw, which nccl-tests sets per collective: see its doc/PERFORMANCE.md);
- the rank count: the ``Rank N`` lines under ``# Using devices`` (one per GPU, whatever mix
  of ``-g``, ``-t`` and MPI processes), else the busbw/algbw ratio;
- the rows: ``size count type [redop] [root] time algbw busbw #wrong [time algbw busbw
  #wrong]``, out-of-place then in-place. The columns come from the header line, since older
  versions have no ``root`` column and ``all_gather_perf`` no ``redop`` (``alltoall_perf``
  prints a ``redop`` heading over empty cells).

Whatever cannot be read stops with one line naming the file and line (:class:`InputError`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from simpy_astra.errors import InputError, with_article
from simpy_astra.infra import files

#: nccl-tests program stem -> our collective name (``workloads.microbench.COLLECTIVES`` + sendrecv)
PROGRAMS: dict[str, str] = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "sendrecv": "sendrecv",
}
#: programs nccl-tests ships that we read but cannot simulate
OTHER_PROGRAMS = ("broadcast", "reduce", "gather", "scatter", "hypercube")
COLLECTIVES = tuple(PROGRAMS.values())

TYPE_BYTES: dict[str, int] = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2,
    "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}
REDOPS = ("sum", "prod", "max", "min", "avg", "mulsum", "premulsum", "none", "all")

_RANK_PREFIX = re.compile(r"\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?")
_PROGRAM = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast|reduce|"
                      r"gather|scatter|hypercube)_perf(?:_mpi)?\b")
_STARTING = re.compile(r"Collective test starting:\s*(\w+?)_perf")
_RANK_LINE = re.compile(r"^\s*Rank\s+(\d+)\b.*\bdevice\b", re.IGNORECASE)
#: the host a Rank line names: '#  Rank  8 Group  0 Pid  26633 on bm-h100-02 device  0 ...'
_HOST = re.compile(r"\bon\s+(\S+)\s+device\b")
_INT = re.compile(r"^-?\d+$")
_NUM = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
#: what a size column could hold if mistyped or edited: 1M, 1.5, -1024, 4KiB (never silently skipped)
_SIZE_LIKE = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:[KMGTkmgt]i?[Bb]?|[Bb])?$")
#: the longest time a row may report (about 31 years): beyond it a figure is an edit, not a run
MAX_TIME_US = 1e15


@dataclass(frozen=True)
class Row:
    """One result row: sizes in bytes, times in microseconds as printed."""

    line: int
    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    time_us: float  # out-of-place
    algbw: float
    busbw: float
    inplace_time_us: float | None = None
    inplace_algbw: float | None = None
    inplace_busbw: float | None = None
    root: int | None = None  # the root column (-1 for rootless collectives), when printed


@dataclass
class NcclLog:
    """One log file: one collective on ``ranks`` GPUs."""

    path: str
    collective: str
    ranks: int
    rows: list[Row] = field(default_factory=list)
    skipped_zero_size: int = 0  # rows of 0 bytes (nccl-tests prints them for tiny -b with many GPUs)
    tables: int = 1
    devices: list[str] = field(default_factory=list)  # the GPU names of the "Using devices" lines
    #: the GPUs on each host, where the Rank lines name two or more hosts holding alike (else None)
    per_host: int | None = None

    @property
    def label(self) -> str:
        return os.path.basename(self.path)


def _clean(raw: str) -> str:
    """A line without MPI rank prefixes (wherever they are) and without a leading '#'."""
    text = _RANK_PREFIX.sub(" ", raw)
    text = text.strip()
    if text.startswith("#"):
        text = text[1:].strip()
    return text


@dataclass
class _Columns:
    """Which optional columns the header line announced."""

    redop: bool
    root: bool
    line: int


def _header(text: str, lineno: int) -> _Columns | None:
    words = text.split()
    if len(words) >= 4 and words[0] == "size" and words[1] == "count" and "time" in words:
        return _Columns(redop="redop" in words, root="root" in words, line=lineno)
    return None


#: the figures after the type columns, in nccl-tests' order
_VALUE_COLUMNS = ("out-of-place time (us)", "out-of-place algbw", "out-of-place busbw", "out-of-place #wrong",
                  "in-place time (us)", "in-place algbw", "in-place busbw", "in-place #wrong")


def _looks_like_row(words: list[str]) -> bool:
    return len(words) >= 2 and bool(_INT.match(words[0])) and bool(_INT.match(words[1]))


def _err(path: str, lineno: int, problem: str) -> InputError:
    return InputError(f"{path}:{lineno}: {problem}")


def _parse_row(path: str, lineno: int, words: list[str], cols: _Columns) -> Row:
    size, count = int(words[0]), int(words[1])
    if size < 0 or count < 0:
        raise _err(path, lineno, f"size {size} and count {count} must be >= 0")
    if max(size, count) > 2**64 - 1:  # beyond a double too: the fit's arithmetic overflowed
        column, digits = ("size", words[0]) if size > count else ("count", words[1])
        shown = digits if len(digits) <= 24 else f"of {len(digits)} digits"
        raise _err(path, lineno, f"{column} {shown} is past 2^64 - 1, the largest size_t nccl-tests prints "
                                 f"(was the log edited?)")
    if len(words) < 3:
        raise _err(path, lineno, "truncated result row (it ends after the count column)")
    dtype = words[2]
    if _NUM.match(dtype):
        raise _err(path, lineno, f"expected a data type after the count column, got {dtype!r}")
    if dtype not in TYPE_BYTES:
        raise _err(path, lineno, f"unknown data type {dtype!r} (known: {', '.join(TYPE_BYTES)})")
    rest = words[3:]
    redop = None
    if rest and rest[0].lower() in REDOPS:
        redop = rest.pop(0).lower()
    elif rest and not _NUM.match(rest[0]) and rest[0].upper() != "N/A":
        raise _err(path, lineno, f"unknown reduction op {rest[0]!r} (known: {', '.join(REDOPS)}; "
                                 f"was the log edited?)")
    root = None
    if cols.root:
        if not rest:
            raise _err(path, lineno, "truncated result row (no root column)")
        if not _INT.match(rest[0]):
            raise _err(path, lineno, f"expected the root rank, got {rest[0]!r}")
        root = int(rest.pop(0))
    values: list[float | None] = []
    for i, w in enumerate(rest[:8]):
        if _NUM.match(w):
            values.append(float(w))
        elif w.upper() == "N/A":
            values.append(None)
        elif i < 3 or 4 < i < 7:  # a column the row has, with no number in it (nan, inf, a typo)
            raise _err(path, lineno, f"{_VALUE_COLUMNS[i]} is {w!r}, not a number; expected nccl-tests' figures "
                                     f"(was the log edited, or the run broken?)")
        else:
            break
    if len(values) < 3 or any(v is None for v in values[:3]):
        raise _err(path, lineno, "truncated result row: needs time, algbw and busbw "
                                 "(out-of-place) after the type columns")
    time_us, algbw, busbw = values[0], values[1], values[2]
    inplace: list[float | None] = [None, None, None]
    if len(values) > 4:
        if len(values) < 7 or any(v is None for v in values[4:7]):
            raise _err(path, lineno, "truncated result row: the in-place columns stop after "
                                     f"{len(values) - 4} of time, algbw, busbw")
        inplace = values[4:7]
    for what, wrong in (("out-of-place", values[3] if len(values) > 3 else None),
                        ("in-place", values[7] if len(values) > 7 else None)):
        if wrong:  # nccl-tests' #wrong column: the data came back corrupt
            raise _err(path, lineno, f"{what} results have {wrong:g} wrong values (nccl-tests' #wrong "
                                     f"column); a run with errors does not calibrate anything")
    for what, t in (("out-of-place", time_us), ("in-place", inplace[0])):
        if t is not None and not 0 <= t <= MAX_TIME_US:
            raise _err(path, lineno, f"{what} time is {t:g} us; expected 0 .. {MAX_TIME_US:g} us")
        if t is not None and t <= 0 and size > 0:
            raise _err(path, lineno, f"{what} time is {t:g} us for {size} bytes; a real run "
                                     f"takes time (was the log cut or edited?)")
    return Row(lineno, size, count, dtype, redop, time_us, algbw, busbw, *inplace, root=root)


def _collective_from_program(stem: str, path: str, lineno: int) -> str:
    if stem in PROGRAMS:
        return PROGRAMS[stem]
    raise _err(path, lineno, f"{stem}_perf is not simulated; calibrate reads "
                             f"{', '.join(p + '_perf' for p in PROGRAMS)}")


def _infer(path: str, rows: list[Row], ranks: int | None, has_redop_column: bool) -> tuple[str, int]:
    """Collective and rank count from the numbers nccl-tests printed (no command line).

    Older nccl-tests print no redop column for all_gather and an empty one for alltoall;
    newer ones print ``none`` for both, which the numbers cannot tell apart."""
    sample = [r for r in rows if r.size_bytes > 0 and r.algbw > 0.5 and r.busbw > 0]
    if not sample:
        raise _err(path, rows[0].line, "cannot tell which collective this table holds (no "
                                       "command line, no 'Collective test starting' line, no row "
                                       "with a readable bandwidth); pass --collective")
    r = max(sample, key=lambda r: r.size_bytes)
    if r.root is not None and r.root >= 0:  # rootless collectives print -1
        raise _err(path, r.line, f"this table has a root rank ({r.root}): broadcast, reduce, gather "
                                 f"or scatter, which calibrate does not simulate; it reads "
                                 f"{', '.join(p + '_perf' for p in PROGRAMS)}")
    factor = r.busbw / r.algbw
    type_bytes = TYPE_BYTES.get(r.dtype)
    per_rank = r.size_bytes / (r.count * type_bytes) if type_bytes and r.count else None
    reduces = r.redop not in (None, "none")

    def near(a: float, b: float) -> bool:
        return abs(a - b) <= 0.02 * b + 0.01

    candidates: list[tuple[str, int]] = []
    if per_rank is not None and near(per_rank, 1):  # all-reduce or send/receive: size = count
        if reduces and factor > 1.05:  # 2(n-1)/n
            n = ranks or (round(2 / (2 - factor)) if factor < 1.999 else 0)
            if n >= 2 and near(factor, 2 * (n - 1) / n):
                candidates.append(("all_reduce", n))
        elif reduces and ranks and ranks > 2 and near(factor, 1.0):
            candidates.append(("sendrecv", ranks))
    elif per_rank is not None:  # size = count x n: reduce-scatter, all-gather, all-to-all
        n = round(per_rank)
        if n >= 2 and near(per_rank, n) and (ranks in (None, n)) and near(factor, (n - 1) / n):
            if reduces:
                candidates.append(("reduce_scatter", n))
            elif not has_redop_column:
                candidates.append(("all_gather", n))
            elif r.redop is None:
                candidates.append(("all_to_all", n))
            else:
                candidates += [("all_gather", n), ("all_to_all", n)]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        fits = (" and ".join(c for c, _n in candidates) + " alike (nccl-tests prints the same size, "
                "count, redop and busbw factor for them)")
    else:
        fits = f"no collective on {ranks or 'any number of'} GPUs (busbw/algbw {factor:.3f})"
    raise _err(path, r.line, "cannot tell which collective this table holds (no command line or "
                             f"'Collective test starting' line, and the numbers fit {fits}); "
                             "pass --collective")


def parse_log(path: str, collective: str | None = None) -> NcclLog:
    """Read one nccl-tests log; ``collective`` overrides what the log says."""
    lines = files.read_text(path, "nccl-tests log", files.LOG_LIMIT_BYTES, errors="replace").splitlines()
    named: tuple[str, int] | None = None  # (collective, line) from a command line or header
    ranks: set[int] = set()
    devices: list[str] = []
    hosts: dict[int, str] = {}  # rank -> the host its line names
    cols: _Columns | None = None
    rows: list[Row] = []
    zero_sizes = 0
    tables = 0
    seen_sizes: dict[tuple, Row] = {}
    for lineno, raw in enumerate(lines, start=1):
        text = _clean(raw)
        if not text:
            continue
        m = _STARTING.search(text) or _PROGRAM.search(text)
        if m and not _looks_like_row(text.split()):
            found = _collective_from_program(m.group(1), path, lineno)
            if named is not None and found != named[0]:
                raise _err(path, lineno, f"mixed collectives: this line runs {m.group(1)}_perf but "
                                         f"line {named[1]} ran a {named[0]}; give each collective "
                                         f"its own log file")
            named = named or (found, lineno)
            continue
        rank = _RANK_LINE.match(text)
        if rank:
            ranks.add(int(rank.group(1)))
            host = _HOST.search(text)
            hosts[int(rank.group(1))] = host.group(1) if host else ""
            dev = re.search(r"\]\s*(.+)$", text)
            if dev:
                devices.append(dev.group(1).strip())
            continue
        header = _header(text, lineno)
        if header is not None:
            if cols is None or rows:
                tables += 1
            cols = header
            continue
        words = text.split()
        if cols is not None and len(words) >= 2 and not _looks_like_row(words) \
                and _SIZE_LIKE.match(words[0]) and _SIZE_LIKE.match(words[1]):
            raise _err(path, lineno, f"size {words[0]!r} and count {words[1]!r}: a result row gives "
                                     f"both as whole numbers of bytes and elements (was the log edited?)")
        if cols is None or not _looks_like_row(words):
            continue
        try:
            row = _parse_row(path, lineno, words, cols)
        except InputError as exc:
            if "truncated result row" in exc.message and not any(rest.strip() for rest in lines[lineno:]):
                raise InputError(f"{exc.message}; the log ends here, cut mid-row (a job killed or a copy cut "
                                 f"short?): remove this line to fit the rows above it") from None
            raise
        earlier = seen_sizes.get((tables, row.size_bytes, row.count, row.dtype, row.redop)) if row.size_bytes else None
        if earlier is not None:  # counted twice in the fit and its scores, as a log given twice would be
            same = earlier.time_us == row.time_us
            raise _err(path, lineno, f"size {row.size_bytes} is also on line {earlier.line} of this table, "
                                     + (f"with the same time ({row.time_us:g} us): a line pasted twice? keep one"
                                        if same else f"with another time ({earlier.time_us:g} vs "
                                                     f"{row.time_us:g} us); keep one run per size"))
        seen_sizes[(tables, row.size_bytes, row.count, row.dtype, row.redop)] = row
        if row.size_bytes == 0:
            zero_sizes += 1
            continue
        rows.append(row)
    if not rows:
        where = "only rows of 0 bytes" if zero_sizes else (
            "a header but no result rows" if cols else "no nccl-tests result table")
        raise InputError.at(path, None, f"{where} (expected the 'size count type ... time algbw "
                                        f"busbw' table all_reduce_perf and friends print)")
    n = len(ranks) if ranks else None
    if ranks and max(ranks) + 1 > len(ranks):  # some Rank lines left out of a pasted log
        n = max(ranks) + 1
    if collective is not None:
        if collective not in COLLECTIVES:
            raise InputError(f"--collective: {collective!r} is not one of {', '.join(COLLECTIVES)}")
        name = collective
    elif named is not None:
        name = named[0]
    else:
        name, n = _infer(path, rows, n, cols is not None and cols.redop)
    if n is None:
        n = _ranks_from_factor(path, rows, name)
    _check_consistent(path, rows, name, n)
    return NcclLog(path, name, n, rows, zero_sizes, max(tables, 1), devices, _per_host(hosts))


def _per_host(hosts: dict[int, str]) -> int | None:
    """How many GPUs each host holds, where every Rank line names its host and there are two
    hosts or more, each holding alike."""
    counts = Counter(hosts.values())
    if len(counts) < 2 or "" in counts or len(set(counts.values())) != 1:
        return None
    return next(iter(counts.values()))


def _ranks_from_factor(path: str, rows: list[Row], name: str) -> int:
    """The rank count from busbw/algbw when the 'Using devices' lines are missing."""
    r = max((r for r in rows if r.algbw > 0.5), key=lambda r: r.size_bytes, default=None)
    if r is not None and name != "sendrecv":
        f = r.busbw / r.algbw / (2 if name == "all_reduce" else 1)  # (n-1)/n
        if 0 < f < 1:
            n = round(1 / (1 - f))
            if n >= 2:
                return n
    raise _err(path, rows[0].line, "cannot tell how many GPUs ran this test (no '#  Rank N ... "
                                   "device' lines under '# Using devices'); paste the whole log")


def _check_consistent(path: str, rows: list[Row], name: str, n: int) -> None:
    """Every row must be the same collective: one count-to-size rule, one busbw/algbw factor."""
    if n < 2:
        raise InputError.at(path, None, f"the log shows {n} GPU; calibration needs a collective "
                                        f"across at least 2")
    expected = {"all_reduce": 2 * (n - 1) / n, "sendrecv": 1.0}.get(name, (n - 1) / n)
    for r in rows:
        if r.algbw >= 1.0 and r.busbw > 0:
            f = r.busbw / r.algbw
            if abs(f - expected) > 0.03 * expected + 0.02:
                raise _err(path, r.line, f"busbw/algbw is {f:.3f} here but {with_article(name)} on {n} GPUs "
                                         f"has {expected:.3f}: mixed collectives or GPU counts in "
                                         f"one log? (or pass the right --collective)")
    # nccl-tests prints max(sendBytes, expectedBytes) and nbytes / wordSize: count x the type's
    # bytes, times n for the collectives whose buffers hold every rank's part (common.cu)
    ranks_in_size = 1 if name in ("all_reduce", "sendrecv") else n
    for r in rows:
        if r.size_bytes != r.count * TYPE_BYTES[r.dtype] * ranks_in_size:
            times = f" x {n} GPUs" if ranks_in_size > 1 else ""
            raise _err(path, r.line, f"size {r.size_bytes} B is not count {r.count} x {TYPE_BYTES[r.dtype]} B "
                                     f"({r.dtype}){times} = {r.count * TYPE_BYTES[r.dtype] * ranks_in_size} B, as "
                                     f"nccl-tests prints {with_article(name)}: an edited "
                                     f"row, or mixed collectives or GPU counts in one log? (or pass the right "
                                     f"--collective)")
    # after the size rule: a size edited away from its count is named as such, not as a time
    # that disagrees with its algbw
    for r in sorted(rows, key=lambda r: -r.size_bytes):  # the largest first: the most figures printed
        _check_units(path, r)


def _check_units(path: str, r: Row) -> None:
    """nccl-tests prints algbw as size / time (GB/s from bytes and microseconds): a time column
    that disagrees with it by a factor was converted or typed in other units (ms, ns), and the
    fit read it as microseconds, silently fitting a network a thousand times too fast or slow.
    The tolerance covers the printed roundings (algbw to 0.01, time to 4 figures)."""
    for what, time_us, algbw in (("out-of-place", r.time_us, r.algbw),
                                 ("in-place", r.inplace_time_us, r.inplace_algbw)):
        if time_us is None or algbw is None or time_us <= 0 or r.size_bytes <= 0:
            continue
        implied = r.size_bytes / time_us / 1e3  # GB/s
        if abs(algbw - implied) <= 0.02 * implied + 0.011:
            continue
        ratio = algbw / implied if algbw > 0 else 0.0
        unit = next((f" (the time reads as in {name}, not us)" for name, factor in (("ms", 1e-3), ("ns", 1e3),
                                                                                  ("s", 1e-6))
                     if ratio and abs(ratio / factor - 1) < 0.05), "")
        raise _err(path, r.line, f"{what} time {time_us:g} us and algbw {algbw:g} GB/s disagree: {r.size_bytes} B "
                                 f"in {time_us:g} us is {implied:.4g} GB/s{unit}; nccl-tests prints the time in "
                                 f"microseconds and algbw = size / time: give the log as it printed it")


def parse_logs(paths: list[str], collective: str | None = None) -> list[NcclLog]:
    """Each log once: one given twice would count its every size twice in the fit and the scores."""
    seen: dict[str, str] = {}
    contents: dict[str, str] = {}  # a copy under another name counts twice just the same
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise InputError(f"{path}: this log is given twice (also as {seen[real]}); give each log once")
        seen[real] = path
    logs = []
    for path in paths:
        logs.append(parse_log(path, collective))  # read and checked first: a missing file says so
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        if digest in contents:
            raise InputError(f"{path}: this log has the same contents as {contents[digest]} (a copy?); "
                             f"every size would count twice: give each log once")
        contents[digest] = path
    return logs
