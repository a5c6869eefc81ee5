"""Where a run's report goes: a rich console on a terminal, plain aligned text within
:func:`~simpy_astra.report.widths.plain_width` anywhere else (``2>file``, a pipe, CI), with no
rich import (~0.05 s). Either way the columns that do not fit go on in a table below, so no
figure is cut or lost and each row is one line (but for a name too wide to stand beside one
figure, which folds onto lines below, as rich folds it)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from simpy_astra.report.widths import (
    FOLDED_TEXT_WIDTH,
    column_blocks,
    fits_plain,
    fitting_columns,
    padded,
    plain_column_widths,
    plain_width,
    plain_widths,
    rich_widths,
    text_width,
    wrapped,
)


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
            lines.append("\n".join(wrapped(line, plain_width(), subsequent_indent="  ", break_long_words=False))
                         .replace("\u00a0", " ") or line)
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

    @property
    def width(self) -> int:
        """How wide its lines may be: the terminal's, else :func:`plain_width`."""
        return self.console.width if self.console is not None else plain_width()

    def line(self, text: str, markup: str | None = None) -> None:
        """A line of text; ``markup`` is its rich-markup form for a colour terminal."""
        if self.console is not None:
            self.console.print(markup if markup is not None and self.colour else text,
                               markup=markup is not None and self.colour, highlight=False)
        else:
            print(text, file=self.stream)

    def prose(self, text: str, markup: str | None = None) -> None:
        """A sentence of a summary: one line on a terminal (rich wraps it to the window), else
        wrapped within :func:`plain_width` (later lines indented; a word, a path, never cut), so
        a pipe or a file gets lines of 80 columns too. ``markup`` as :meth:`line`'s."""
        if self.console is not None:
            self.line(text, markup)
            return
        for line in wrapped(text, plain_width(), subsequent_indent="  ", break_long_words=False) or [""]:
            print(line, file=self.stream)

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
            widths = plain_column_widths(columns, rows)
            blocks = column_blocks(widths, key, fits_plain)
            if all(fits_plain([widths[i] for i in b]) for b in blocks):
                return blocks
            # a name too wide to stand beside one figure: text columns take at most half the width
            # and fold (_plain_table), as rich folds them on a terminal
            return column_blocks([min(w, plain_width() // 2) if a == "left" or i < key else w
                                  for i, (w, a) in enumerate(zip(widths, align, strict=True))], key, fits_plain)
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
        widths = plain_widths(plain_column_widths(columns, rows), folds)
        # a title wider than the text (at COLUMNS=60) wraps at spaces, as rich wraps it over a table
        for line in wrapped(title, plain_width(), subsequent_indent="  ", break_long_words=False) or [""]:
            print(line, file=self.stream)
        for cells in (columns, *rows):  # a header wider than its column wraps at spaces, as on a terminal
            pieces = [wrapped(c, w) or [""] if (f or cells is columns) and text_width(c) > w
                      else [c] for c, w, f in zip(cells, widths, folds, strict=True)]
            for k in range(max(map(len, pieces))):
                print("  ".join(padded(p[k] if k < len(p) else "", w, a)
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
        widest = rich_widths(least[:shown], full[:shown], [len(c) for c in columns[:shown]], self.console.width)
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
