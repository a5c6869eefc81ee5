"""Console summary of a run (``run`` mode): one row per NPU and where time went.

On a terminal the tables are drawn with rich to its width; otherwise (``2>file``, a pipe, CI)
as plain aligned text within :func:`plain_width` (``COLUMNS``, at most 80), with no rich import
(~0.05 s). Either way the columns that do not fit go on in a table below, so no figure is cut
or lost and each row is one line (but for a name too wide to stand beside one figure, which
folds onto lines below, as rich folds it).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from simpy_astra.engine.statistics import COMM, GPU, NpuReport
from simpy_astra.infra.switches import env_switch
from simpy_astra.infra.units import bytes_to_gib


def say(text: str, stream: TextIO | None = None, *, wrap_in_pipe: bool = False) -> None:
    """A line wrapped to the terminal's width on a terminal (later lines indented); in a pipe or
    a file one line however long (a validate summary a script reads, a path), or with
    ``wrap_in_pipe`` within :func:`plain_width` (:func:`say_wrapped`). A word (a path) is
    never broken."""
    import textwrap

    stream = stream or sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if terminal:
        import shutil

        text = textwrap.fill(text, shutil.get_terminal_size().columns, subsequent_indent="  ",
                             break_long_words=False, break_on_hyphens=False)
    elif wrap_in_pipe:
        lines = []
        for line in text.splitlines() or [""]:  # a line of its own stays one
            # 'warning:' stays beside its first word (a path too long for the line): not alone above it
            line = line.replace(" ", "\u00a0", 1) if line.startswith(("warning: ", "note: ")) else line
            lines.append(textwrap.fill(line, plain_width(), subsequent_indent="  ", break_long_words=False,
                                       break_on_hyphens=False).replace("\u00a0", " ") or line)
        text = "\n".join(lines)
    print(text, file=stream, flush=True)


def say_wrapped(text: str, stream: TextIO | None = None) -> None:
    """A warning or note of a run's summary: wrapped in a pipe or a file too, as a sweep's
    warnings and the bound check's are (one of 170 columns is no line of a log read at 80);
    ``--logging-folder``'s log.log keeps each warning on one line, for grep."""
    say(text, stream, wrap_in_pipe=True)


class Output:
    """Where the summary goes: a rich console on a terminal, plain text anywhere else."""

    def __init__(self, stream: TextIO | None = None, rich: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        if rich is None:
            rich = self.stream.isatty()
        self.console = None
        if rich:
            from rich.console import Console

            self.console = Console(file=self.stream)

    @property
    def colour(self) -> bool:
        """Whether colours are shown (a terminal without NO_COLOR)."""
        return self.console is not None and not self.console.no_color and bool(self.console.color_system)

    def line(self, text: str, markup: str | None = None) -> None:
        """A line of text; ``markup`` is its rich-markup form for a colour terminal."""
        if self.console is not None:
            self.console.print(markup if markup is not None and self.colour else text,
                               markup=markup is not None and self.colour, highlight=False)
        else:
            print(text, file=self.stream)

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
              align: Sequence[str] | None = None, sections: Sequence[int] = (), key: int = 1) -> None:
        """A table: drawn to fit the terminal, or plain aligned text within :func:`plain_width`.

        ``align``: "left" or "right" per column (default right); ``sections``: row indices
        that start a new section (a rule on a terminal). Columns that do not fit go on in a
        table below, "(continued)", that repeats the first ``key`` columns (``key=0``: the
        rows are numbered), so every figure is shown whole and each row is one line."""
        align = list(align or ["right"] * len(columns))
        columns, rows = [str(c) for c in columns], [[str(c) for c in row] for row in rows]
        blocks = self._blocks(columns, rows, align, key)
        if len(blocks) > 1 and key == 0:  # numbered rows match a block's lines to the first's
            columns, align = ["#", *columns], ["right", *align]
            rows = [[str(n), *row] for n, row in enumerate(rows, 1)]
            blocks = self._blocks(columns, rows, align, 1)
        folds = [a == "left" or i < key for i, a in enumerate(align)]  # text: names, coordinates
        for b, block in enumerate(blocks):
            part = [[row[i] for i in block] for row in (columns, *rows)]
            more = f"{title} (continued)"
            # a title wider than its table: rich wraps it to the table (three lines over a narrow one)
            drawn = sum(max(len(c) for c in col) for col in zip(*part, strict=True)) + 3 * len(block) + 1
            width = plain_width() if self.console is None else min(self.console.width, drawn)
            name = title if b == 0 else more if len(more) <= width else "(continued)"
            if self.console is not None:
                self._rich_table(name, part[0], part[1:], [align[i] for i in block], sections)
            else:
                self._plain_table(name, part[0], part[1:], [align[i] for i in block], [folds[i] for i in block])

    def _blocks(self, columns: list[str], rows: list[list[str]], align: list[str], key: int) -> list[list[int]]:
        """The columns of each table printed: all of them if they fit, else :func:`column_blocks`."""
        if self.console is None:
            widths = _plain_column_widths(columns, rows)
            blocks = column_blocks(widths, key, _fits_plain)
            if all(_fits_plain([widths[i] for i in b]) for b in blocks):
                return blocks
            # a name too wide to stand beside one figure: text columns take at most half the width
            # and fold (_plain_table), as rich folds them on a terminal
            return column_blocks([min(w, plain_width() // 2) if a == "left" or i < key else w
                                  for i, (w, a) in enumerate(zip(widths, align, strict=True))], key, _fits_plain)
        def fits(ws: list[int]) -> bool:
            return fitting_columns(ws, self.console.width) == len(ws)

        # every value whole where the columns can be split so (a preset folded 'dgx-a100-8' /
        # '0gb' to seat one more figure beside it); folding only for a column too wide for that
        full = self._cell_widths(columns, rows)
        blocks = column_blocks(full, key, fits)
        if all(fits([full[i] for i in b]) for b in blocks):
            return blocks
        least = [min(w, FOLDED_TEXT_WIDTH) if a == "left" else w for w, a in zip(full, align, strict=True)]
        return column_blocks(least, key, fits)

    def _cells(self, rows: list[list[str]]) -> list[list[Any]]:
        """Rich texts of ``rows``: markup only where colours are shown; elsewhere a "[" is text."""
        from rich.text import Text

        return [[Text.from_markup(c) if self.colour else Text(c) for c in row] for row in rows]

    def _cell_widths(self, columns: list[str], rows: list[list[str]]) -> list[int]:
        """Each column's widest cell, or word of its header (headers wrap at spaces)."""
        cells = self._cells(rows)
        return [max([row[i].cell_len for row in cells] + [len(w) for w in col.split()] + [1])
                for i, col in enumerate(columns)]

    def _plain_table(self, title: str, columns: list[str], rows: list[list[str]], align: list[str],
                     folds: list[bool]) -> None:
        """Aligned text within :func:`plain_width`: a text cell (``folds``) too wide goes on below it."""
        import textwrap

        widths = _plain_widths(_plain_column_widths(columns, rows), folds)
        # a title wider than the text (at COLUMNS=60) wraps at spaces, as rich wraps it over a table
        for line in textwrap.wrap(title, plain_width(), subsequent_indent="  ", break_long_words=False,
                                  break_on_hyphens=False) or [""]:
            print(line, file=self.stream)
        for cells in (columns, *rows):  # a header wider than its column wraps at spaces, as on a terminal
            pieces = [textwrap.wrap(c, w, break_on_hyphens=False) or [""] if (f or cells is columns) and len(c) > w
                      else [c] for c, w, f in zip(cells, widths, folds, strict=True)]
            for k in range(max(map(len, pieces))):
                print("  ".join((p[k] if k < len(p) else "").ljust(w) if a == "left" else
                                (p[k] if k < len(p) else "").rjust(w)
                                for p, w, a in zip(pieces, widths, align, strict=True)).rstrip(), file=self.stream)

    def _rich_table(self, title: str, columns: list[str], rows: list[list[str]], align: list[str],
                    sections: Sequence[int]) -> None:
        """One table that fits the terminal: text (left-aligned) columns fold down to
        FOLDED_TEXT_WIDTH, headers wrap at spaces, a figure is never cut or broken. Only a key
        and one column too wide for the terminal together leave a column out, named below."""
        from rich.table import Table

        cells = self._cells(rows)
        full = self._cell_widths(columns, rows)
        least = [min(w, FOLDED_TEXT_WIDTH) if a == "left" else w for w, a in zip(full, align, strict=True)]
        shown = fitting_columns(least, self.console.width)
        widest = _widths(least[:shown], full[:shown], [len(c) for c in columns[:shown]], self.console.width)
        table = Table(title=title)
        for i in range(shown):
            table.add_column(columns[i], justify=align[i], overflow="fold", width=widest[i])
        for k, row in enumerate(cells):
            if k in sections:
                table.add_section()
            table.add_row(*row[:shown])
        self.console.print(table)
        if shown < len(columns):
            self.line(f"(not shown at {self.console.width} columns: {', '.join(columns[shown:])}; "
                      f"a wider terminal or a file shows them)")


#: the widest plain text (a pipe or a file has no terminal width): the project's 80 columns
PLAIN_WIDTH = 80
#: the narrowest ``COLUMNS`` plain text follows: a table's figures and a timeline need room
PLAIN_MIN_WIDTH = 40


def plain_width() -> int:
    """The width of everything printed in a pipe or a file (tables, progress and sweep lines,
    the timeline): ``COLUMNS`` when set to a number, held within PLAIN_MIN_WIDTH..PLAIN_WIDTH,
    else 80. One rule, so that at ``COLUMNS=60`` a log's tables are not 80 wide beside a
    60-wide timeline, and a ``COLUMNS=200`` left in a shell does not widen a log past 80."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return PLAIN_WIDTH
    return max(PLAIN_MIN_WIDTH, min(PLAIN_WIDTH, columns))


def _fits_plain(widths: Sequence[int]) -> bool:
    """Whether plain-text columns of these widths (two spaces apart) fit :func:`plain_width`."""
    return sum(widths) + 2 * (len(widths) - 1) <= plain_width()


def _plain_column_widths(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each plain column's width: its widest cell, or its header if that is wider; a header over
    half the line (a long report expression) counts by its longest word, and wraps at spaces."""
    widths = []
    for i, head in enumerate(columns):
        cells = max((len(row[i]) for row in rows), default=0)
        words = max((len(w) for w in head.split()), default=0)
        widths.append(max(cells, len(head) if len(head) <= plain_width() // 2 else words, 1))
    return widths


def _plain_widths(widths: list[int], folds: list[bool]) -> list[int]:
    """Column widths within :func:`plain_width`: as wide as their cells if they fit, else the text
    columns (``folds``) cut to one width, the widest that fits (never under FOLDED_TEXT_WIDTH;
    a figure keeps its width)."""
    if _fits_plain(widths) or not any(folds):
        return widths
    room = plain_width() - 2 * (len(widths) - 1) - sum(w for w, f in zip(widths, folds, strict=True) if not f)
    cap = max(w for w, f in zip(widths, folds, strict=True) if f)
    while cap > FOLDED_TEXT_WIDTH and sum(min(w, cap) for w, f in zip(widths, folds, strict=True) if f) > room:
        cap -= 1
    return [min(w, cap) if f else w for w, f in zip(widths, folds, strict=True)]


def fit_words(head: str, tail: str, width: int) -> str:
    """``head + tail`` within ``width``: the words of ``head`` that do not fit left out (each
    run of them marked "..."), never part of one, the ones after them kept where they fit (one
    long coordinate no longer hides the rest: every point of a sweep read ``pp=2 ...``), and
    ``tail`` (a figure) always whole, even past ``width``."""
    if len(head) + len(tail) <= width:
        return head + tail
    words = head.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        mark = 0 if i == len(words) - 1 else len(" ...")  # room for the mark of a later gap
        if len(" ".join([*kept, word])) + mark + len(tail) <= width:
            kept.append(word)
        elif kept[-1:] != ["..."]:
            kept.append("...")
    return " ".join(kept) + tail


def fit_first(heads: Sequence[str], tail: str, width: int) -> str:
    """The first of ``heads`` that fits whole beside ``tail`` within ``width`` (the most
    telling first), else the last cut by :func:`fit_words`."""
    for head in heads:
        if len(head) + len(tail) <= width:
            return head + tail
    return fit_words(heads[-1], tail, width)


def column_blocks(widths: Sequence[int], key: int, fits: Callable[[list[int]], bool]) -> list[list[int]]:
    """Column indices of each table of a table too wide: the first ``key`` columns, then as
    many of the rest, in order, as ``fits`` (their widths) allows; always at least one more
    per table, so a very wide column stands alone beside the key."""
    rest = list(range(key, len(widths)))
    if not rest:
        return [list(range(len(widths)))]
    blocks: list[list[int]] = []
    while rest:
        block = list(range(key))
        while rest and (len(block) == key or fits([widths[i] for i in (*block, rest[0])])):
            block.append(rest.pop(0))
        blocks.append(block)
    return blocks


#: how narrow a text column (a name, a coordinate) may fold on a narrow terminal
FOLDED_TEXT_WIDTH = 10


def _widths(least: list[int], full: list[int], headers: list[int], width: int) -> list[int]:
    """Column widths within ``width``: whole headers if there is room, else every cell whole,
    else the room left shared out to the folded text columns, first ones first."""
    whole = [max(f, h) for f, h in zip(full, headers, strict=True)]
    for candidate in (whole, full):
        if fitting_columns(candidate, width) == len(candidate):
            return candidate
    spare = width - (sum(least) + 3 * len(least) + 1)
    widths = list(least)
    for i, (lo, hi) in enumerate(zip(least, full, strict=True)):
        grow = max(0, min(spare, hi - lo))
        widths[i] += grow
        spare -= grow
    return widths


def fitting_columns(widths: Sequence[int], width: int) -> int:
    """How many leading columns of these content widths a rich table (heavy head, one space of
    padding each side, a border between columns) draws within ``width`` characters; at least one."""
    shown, total = 0, 1
    for w in widths:
        total += w + 3
        if total > width and shown:
            break
        shown += 1
    return shown


def print_summary(reports: list[NpuReport], wall_s: float, links: list | None = None,
                  out: Output | None = None, cost=None, jobs: list | None = None,
                  link_jobs: dict | None = None) -> None:
    """``jobs``: per-job results of a multi-job run (:class:`~simpy_astra.running.jobs.JobResult`);
    ``link_jobs``: (from, to) -> job -> bytes, shown beside the busiest links."""
    out = out or Output()
    rows = sorted(reports, key=lambda r: r.npu_id)
    shown = rows if len(rows) <= 16 else rows[:8] + rows[-8:]
    memory = any(r.peak_memory for r in shown)  # no column of dashes when no NPU tracks memory
    # every time column says its unit (the reference's 'GPU time', 'Comm time' and overlap read as
    # unitless beside 'finished (ns)'); short enough that 8 NPUs' table fits 80 columns whole
    out.table(f"simpy-astra: {len(reports):,} NPUs simulated in {wall_s:.2f} s",
              ("NPU", "finished (ns)", "exposed comm (ns)", "GPU time (ns)", "comm (ns)", "overlap (ns)")
              + (("peak memory",) if memory else ()),
              [(str(r.npu_id), f"{r.finished_cycles:,}", f"{r.exposed_comm_cycles:,}",
                f"{r.times.get(GPU, 0):,}", f"{r.times.get(COMM, 0):,}", f"{r.overlap or 0:,}",
                *((r.peak_memory or "-",) if memory else ())) for r in shown])
    if len(rows) > len(shown):
        out.line(f"({len(rows) - len(shown):,} NPUs not shown; --json-out has all of them)")
    print_memory_breakdown(shown, out)
    if jobs:
        print_jobs(jobs, out)
    if links:
        packet = links[0].max_queue_bytes is not None  # the packet backend adds queue and stall time
        end = max((r.finished_cycles for r in reports), default=0) or 1
        by_job = link_jobs is not None
        out.table("busiest links", ("link", "bytes", "busy (ns)", "busy share")
                  + (("max queue (B)", "stalled (ns)") if packet else ()) + (("bytes by job",) if by_job else ()),
                  [(f"{s.src} -> {s.dst}", f"{s.bytes:,}", f"{s.busy_ns:,}", f"{100 * s.busy_ns / end:.1f}%",
                    *((f"{s.max_queue_bytes:,}", f"{s.stall_ns:,}") if packet else ()),
                    *((_job_bytes(link_jobs.get((s.src, s.dst), {})),) if by_job else ()))
                   for s in links[:5]],
                  # the jobs' names and bytes fold within the line: each job on a link widened it
                  align=("left", "right", "right", "right", *(("right", "right") if packet else ()),
                         *(("left",) if by_job else ())))
    if cost is not None:
        print_cost(cost, out)


def _job_bytes(counts: dict[str, int]) -> str:
    return ", ".join(f"{job} {n:,}" for job, n in counts.items()) or "-"


def print_jobs(jobs: list, out: Output) -> None:
    """One row per job: where it ran, when it finished, and (``--isolation``) its slowdown."""
    alone = any(j.alone_cycles is not None for j in jobs)
    out.table("jobs", ("job", "NPUs", "start (ns)", "finished (ns)", "exposed comm (ns)")
              + (("alone (ns)", "slowdown") if alone else ()),
              [(j.name, _npu_list(j.npus), f"{j.start_ns:,}", f"{j.finished_cycles:,}", f"{j.exposed_comm_cycles:,}",
                *((f"{j.alone_cycles:,}", f"{j.slowdown:.3f}x") if alone else ())) for j in jobs],
              align=("left", "left", "right", "right", "right", *(("right", "right") if alone else ())))


def _npu_list(npus: Sequence[int]) -> str:
    """``0-3`` for a run of ids, else the ids (shortened past 8)."""
    ids = list(npus)
    if ids == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 2:
        return f"{ids[0]}-{ids[-1]}"
    text = ",".join(map(str, ids[:8]))
    return text + (",..." if len(ids) > 8 else "")


def print_cost(cost, out: Output) -> None:
    """The network's price (:mod:`simpy_astra.network.cost_model`): one row per kind of part and dimension;
    bandwidth in the network YAML's unit, which ASTRA-sim calls GB/s and is 2^30 B/s: GiB/s, to 4
    significant digits (a preset's derived 21.8861 beside 215.822 read as more than it says)."""
    if cost.error is not None:
        out.line(f"network cost: unknown ({cost.error})")
        return
    out.table(f"network cost: ${dollars(cost.total_usd)}", ("dim", "tier", "part", "GiB/s", "radix", "count",
                                                              "cost ($)"),
              [(str(i.dim), i.tier, i.kind, f"{i.bandwidth_gbps:.4g}", str(i.radix), f"{i.count:,}",
                dollars(i.cost_usd)) for i in cost.items], key=3)


def dollars(amount: float) -> str:
    """A price as a person reads it: whole dollars from $100 up (prices per GB/s make a
    $8,859,416.32 fabric, whose cents say nothing), cents below ($1.50), 0 for nothing."""
    if amount == 0:
        return "0"
    return f"{amount:,.0f}" if abs(amount) >= 100 else f"{amount:,.2f}"


def print_memory_breakdown(reports: list[NpuReport], out: Output) -> None:
    """What each NPU holds at its peak instant, in GB (2^30 B, as the reference prints)."""
    rows = [r for r in reports if r.memory_breakdown is not None]
    if not rows:
        return
    from simpy_astra.engine.memory_tracker import CATEGORIES

    used = [c for c in CATEGORIES if any(r.memory_breakdown[c] for r in rows)] or ["weights"]
    out.table("memory at each NPU's peak (GB = 2^30 B)", ("NPU", *used, "peak"),
              [(str(r.npu_id), *(f"{bytes_to_gib(r.memory_breakdown[c]):.2f}" for c in used),
                f"{bytes_to_gib(sum(r.memory_breakdown.values())):.2f}") for r in rows])


class ProgressLine:
    """The one progress line of a run on stderr: redrawn in place on a terminal (and cleared
    while other lines are printed, so that a report line never lands at its end), a line of
    its own every few seconds in a pipe or a file. Every line fits :func:`plain_width` in a
    pipe, on a terminal ``PLAIN_WIDTH`` or the terminal's width when narrower."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        try:
            self.live = self.stream.isatty()
        except (AttributeError, ValueError):
            self.live = False
        self._lock = threading.Lock()
        self._drawn = False

    @property
    def width(self) -> int:
        if not self.live:
            return plain_width()
        import shutil

        return min(PLAIN_WIDTH, shutil.get_terminal_size().columns - 1)  # the cursor's column too

    def show(self, done: int, total: int, now_ns: float, elapsed_s: float) -> None:
        self.write(progress_text(done, total, now_ns, elapsed_s, self.width))

    def write(self, text: str) -> None:
        """Draw ``text`` as the line (in place on a terminal, a line of its own elsewhere)."""
        with self._lock:
            self.stream.write(f"\r{text}\x1b[K" if self.live else text + "\n")
            self.stream.flush()
            self._drawn = self.live

    def clear(self) -> None:
        """Take the line off a terminal (nothing to do in a pipe: its lines are whole)."""
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def above(self, text: str, stream: TextIO | None = None) -> None:
        """Print ``text`` (to stdout by default) where the progress line was; the next sample
        draws the line again below it."""
        with self._lock:
            self._clear()
            stream = stream or sys.stdout
            print(text, file=stream, flush=self.live)


def progress_text(done: int, total: int, now_ns: float, elapsed_s: float, width: int | None = None) -> str:
    """The progress line, in the longest wording that fits ``width`` (default
    :func:`plain_width`; a number is never cut)."""
    width = width or plain_width()
    counts, at, took = f"{done:,} of {total:,}", f"{now_ns:,.0f} ns", f"{elapsed_s:.0f} s"
    wordings = (f"simulating: {counts} nodes done, simulated time {at}, {took} elapsed",
                f"simulating: {counts} nodes, at {at}, {took} elapsed",
                f"simulating: {done:,}/{total:,} nodes, {at}, {took}",
                f"{done:,}/{total:,} nodes, {at}")
    return next((w for w in wordings if len(w) <= width), wordings[-1])


def run_with_progress(sim, stream: TextIO | None = None, after_s: float = 1.0, every_s: float = 0.5,
                      line: ProgressLine | None = None) -> list:
    """``sim.run()`` with a progress line on stderr once the run has taken ``after_s``.

    A background thread samples the NPUs' completion counters and the simulated clock, so the
    simulation itself does no extra work for the display and a short run prints nothing. On
    a terminal the line is redrawn in place; elsewhere (a log file) a line is written every
    ``10 * every_s`` seconds. A run stuck inside one long event (a collective split a million
    ways) still shows the wall time going on. ``line``: the :class:`ProgressLine` the run's
    report lines are printed through (:meth:`ProgressLine.above`), so that they and the
    progress line do not mix on a terminal.
    """
    line = line or ProgressLine(stream)
    total = sum(len(npu.nodes) for npu in sim.npus)
    stop = threading.Event()

    def sample() -> None:
        start = time.monotonic()
        if stop.wait(after_s):
            return
        period = every_s if line.live else 10 * every_s
        while True:
            line.show(sum(npu.completed for npu in sim.npus), total, sim.now_ns, time.monotonic() - start)
            if stop.wait(period):
                return

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        return sim.run()
    finally:
        stop.set()
        watcher.join()
        line.clear()


def progress_wanted(stream: TextIO | None = None) -> bool:
    """Progress lines where a person watches: on a terminal (``stream``, default stderr). A pipe
    or a file gets them only with SIMPY_ASTRA_PROGRESS=1 (a long batch run's log), a terminal
    none with SIMPY_ASTRA_PROGRESS=0: a piped run's stderr is its summary, not a record of
    how fast this machine was."""
    asked = env_switch("SIMPY_ASTRA_PROGRESS")
    if asked is not None:
        return asked
    try:
        return (stream or sys.stderr).isatty()
    except (AttributeError, ValueError):
        return False


#: (unit, ns per unit) for breakdown tables: the largest in which the largest figure is >= 1,000
_TIME_UNITS = (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1))


def _time_unit(largest_ns: float) -> tuple[str, int]:
    for name, scale in _TIME_UNITS:
        if largest_ns >= 1_000 * scale:
            return name, scale
    return _TIME_UNITS[-1]


def print_breakdown(breakdowns: dict, out: Output) -> None:
    """Where the critical NPU's time went (the last to finish), and each part's spread over
    every NPU (min / median / max); ``breakdowns``: NPU -> :class:`~simpy_astra.report.breakdown.Breakdown`.
    Figures in one unit so the table fits 80 columns."""
    from simpy_astra.report.breakdown import spread

    if not breakdowns:
        return
    critical = min(breakdowns, key=lambda i: (-breakdowns[i].finish_ns, i))
    mine = breakdowns[critical]
    spreads = spread(breakdowns)
    unit, scale = _time_unit(max([mine.finish_ns, *(hi for _lo, _mid, hi in spreads.values())]))

    def fmt(ns: float) -> str:
        return f"{ns / scale:,.1f}" if scale > 1 else f"{ns:,.0f}"

    total = mine.finish_ns or 1
    rows = [(_short_part(name), fmt(mine.parts.get(name, 0)), f"{100 * mine.parts.get(name, 0) / total:.1f}%",
             fmt(lo), fmt(mid), fmt(hi)) for name, (lo, mid, hi) in spreads.items()]
    rows.append(("finish", fmt(mine.finish_ns), "100.0%", *(fmt(v) for v in _finish_spread(breakdowns))))
    npus = "NPU" if len(breakdowns) == 1 else f"{len(breakdowns):,} NPUs"
    out.table(f"where the time went ({unit}): NPU {critical} (last to finish), and over {npus}",
              ("part", f"NPU {critical}", "share", "min", "median", "max"), rows)
    if any(_short_part(name) != name for name in spreads):
        out.line("(long part names shortened with ..; --json-out has them whole)")


#: the widest part name the breakdown table shows (the generators' widest, "compute.elementwise"):
#: beside its five figure columns (at most "999,999.9" each, the unit chosen so) the table fits
#: 80 columns whole, plain or drawn by rich
PART_WIDTH = 19


def _short_part(name: str) -> str:
    """A part name (``compute.<op_type>``, ``comm.<stream or group>``: a trace's own strings)
    within :data:`PART_WIDTH`: its start and end kept, the middle left out."""
    if len(name) <= PART_WIDTH:
        return name
    tail = (PART_WIDTH - 2) // 2
    return f"{name[:PART_WIDTH - 2 - tail]}..{name[-tail:]}"


def _finish_spread(breakdowns: dict) -> tuple[int, float, int]:
    import statistics

    finishes = [b.finish_ns for b in breakdowns.values()]
    return min(finishes), statistics.median(finishes), max(finishes)
