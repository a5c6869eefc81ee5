"""How wide printed text may be, and what fits it: the width of plain text (a pipe, a file),
a table's columns split into tables that fit, and a line's words fitted beside a figure."""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: the widest plain text (a pipe or a file has no terminal width): the project's 80 columns
PLAIN_WIDTH = 80
#: the narrowest ``COLUMNS`` plain text follows: a table's figures and a timeline need room
PLAIN_MIN_WIDTH = 40


def plain_width() -> int:
    """The width of everything printed in a pipe or a file (tables, progress and sweep lines,
    the timeline): ``COLUMNS`` when set to a positive number, held within
    PLAIN_MIN_WIDTH..PLAIN_WIDTH, else 80 (0 or less is no width, as ``shutil`` reads it: some
    containers export ``COLUMNS=0``). One rule, so that at ``COLUMNS=60`` a log's tables are not
    80 wide beside a 60-wide timeline, and a ``COLUMNS=200`` left in a shell does not widen a log
    past 80."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return PLAIN_WIDTH
    return max(PLAIN_MIN_WIDTH, min(PLAIN_WIDTH, columns)) if columns > 0 else PLAIN_WIDTH


def text_width(text: str) -> int:
    """The columns ``text`` takes on a terminal or in a monospaced file: a wide character
    (East Asian, ``unicodedata.east_asian_width`` W or F: a job named in Chinese) two, a
    combining mark none, every other one; ``len`` counted a CJK name half its width, so its
    table ran past 80 columns with its figures out of line."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def padded(text: str, width: int, align: str) -> str:
    """``text`` padded with spaces to ``width`` columns (:func:`text_width`), left or right aligned."""
    room = " " * max(0, width - text_width(text))
    return text + room if align == "left" else room + text


def cut(text: str, width: int) -> tuple[str, str]:
    """``text`` split where :func:`text_width` reaches ``width`` (at least one character first)."""
    end = len(text)
    while end > 1 and text_width(text[:end]) > width:
        end -= 1
    return text[:end], text[end:]


def wrapped(text: str, width: int, subsequent_indent: str = "", break_long_words: bool = True) -> list[str]:
    """``textwrap.wrap(text, width, ...)`` (never at a hyphen) counting columns by
    :func:`text_width`: textwrap itself, which counts characters, given each wide character
    followed by a NUL that stands for its second column (taken out of the lines after): the
    same lines as textwrap's for any text without wide characters. A word too long for a line
    is cut by :func:`cut`, between characters (textwrap could part a wide one from its NUL: a
    line a column too wide)."""
    import textwrap

    if text_width(text) == len(text):
        return textwrap.wrap(text, width, subsequent_indent=subsequent_indent, break_long_words=break_long_words,
                             break_on_hyphens=False)
    marked = "".join(c + _SECOND_COLUMN if text_width(c) == 2 else c for c in text)
    lines = []
    for line in textwrap.wrap(marked, width, subsequent_indent=subsequent_indent, break_long_words=False,
                              break_on_hyphens=False):
        line = line.replace(_SECOND_COLUMN, "")
        while break_long_words and text_width(line) > width and len(line) > len(subsequent_indent) + 1:
            head, rest = cut(line, width)
            lines.append(head)
            line = subsequent_indent + rest
        lines.append(line)
    return lines


#: what stands for a wide character's second column while textwrap counts (no text holds it)
_SECOND_COLUMN = "\0"


def fits_plain(widths: Sequence[int]) -> bool:
    """Whether plain-text columns of these widths (two spaces apart) fit :func:`plain_width`."""
    return sum(widths) + 2 * (len(widths) - 1) <= plain_width()


def plain_column_widths(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each plain column's width: its widest cell, or its header if that is wider; a header over
    half the line (a long report expression) counts by its longest word, and wraps at spaces."""
    widths = []
    for i, head in enumerate(columns):
        cells = max((text_width(row[i]) for row in rows), default=0)
        words = max((text_width(w) for w in head.split()), default=0)
        widths.append(max(cells, text_width(head) if text_width(head) <= plain_width() // 2 else words, 1))
    return widths


def plain_widths(widths: list[int], folds: list[bool]) -> list[int]:
    """Column widths within :func:`plain_width`: as wide as their cells if they fit, else the text
    columns (``folds``) cut to one width, the widest that fits (never under FOLDED_TEXT_WIDTH;
    a figure keeps its width)."""
    if fits_plain(widths) or not any(folds):
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
    if text_width(head) + text_width(tail) <= width:
        return head + tail
    words = head.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        mark = 0 if i == len(words) - 1 else len(" ...")  # room for the mark of a later gap
        if text_width(" ".join([*kept, word])) + mark + text_width(tail) <= width:
            kept.append(word)
        elif kept[-1:] != ["..."]:
            kept.append("...")
    return " ".join(kept) + tail


def fit_wrapped(heads: Sequence[str], tail: str, width: int, first_room: int, indent: str = "  ") -> list[str]:
    """The first of ``heads`` that fits whole beside ``tail`` in ``first_room`` on one line,
    else the last broken between its words onto lines of ``width`` indented by ``indent`` (a
    word longer than a line broken in it), ``tail`` whole after the last word: a plain line is
    read once, so nothing is cut ("...") from it (two points of a sweep whose last coordinates
    were cut read alike)."""
    whole = fitting(heads, tail, first_room)
    if whole is not None:
        return [whole]
    # greedy, a word at a time, counted by columns (textwrap glued the line's start to the
    # first word, and cut a coordinate that did not fit beside it though a line held it whole)
    words, lines, line = heads[-1].split(), [], ""
    for i, word in enumerate(words):
        end = tail if i == len(words) - 1 else ""  # the figure stays beside the last word
        room = width if lines else first_room
        joined = f"{line} {word}" if line.strip() else line + word
        if text_width(joined + end) <= room:
            line = joined
            continue
        if line.strip() or (not lines and first_room < width - text_width(indent)):  # down a line
            lines.append(line.rstrip())
            line, room, joined = indent, width, indent + word
        while text_width(joined) > room and len(joined) > len(line) + 1:  # a word longer than a line
            kept, joined = cut(joined, room)
            lines.append(kept)
            line, room, joined = indent, width, indent + joined
        line = joined
    return [*lines, line + tail]


def fitting(heads: Sequence[str], tail: str, width: int) -> str | None:
    """The first of ``heads`` (the most telling first) whole beside ``tail`` within ``width``
    columns, with it; None where none fits: the one rule of :func:`first_fitting`,
    :func:`fit_first` and :func:`fit_wrapped`, which differ in what they do then."""
    tail_width = text_width(tail)
    return next((head + tail for head in heads if text_width(head) + tail_width <= width), None)


def first_fitting(wordings: Sequence[str], width: int = PLAIN_WIDTH) -> str:
    """The first of a line's ``wordings`` (the fullest first) within ``width`` columns, else
    the last: a headline said in fewer words where its figures would pass 80 columns."""
    whole = fitting(wordings, "", width)
    return wordings[-1] if whole is None else whole


def fit_first(heads: Sequence[str], tail: str, width: int) -> str:
    """The first of ``heads`` that fits whole beside ``tail`` within ``width``, else the last
    cut by :func:`fit_words`."""
    whole = fitting(heads, tail, width)
    return fit_words(heads[-1], tail, width) if whole is None else whole


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


def rich_widths(least: list[int], full: list[int], headers: list[int], width: int) -> list[int]:
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
