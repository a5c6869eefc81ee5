"""A command line split into words as ``shlex.split`` splits it, in time linear in its length.

``shlex`` grows each word one character at a time (``token = token + char``), so a word of n
characters costs n^2: one 10^6-character ``--data-path`` took 17 s to split, and a sweep
splits its base's arguments several times a point, so four points listed nothing for minutes.
Here each run of plain characters, quoted text or escape is one regular-expression match, and
the words are joined once. The rules are POSIX ``shlex``'s (``comments=False``): blanks
separate words; ``'...'`` is literal; inside ``"..."`` a backslash escapes only ``"`` and
``\\`` (else it stays); outside quotes a backslash escapes any character; an unclosed quote, or
a backslash that ends the text, is a ``ValueError`` with shlex's words.
"""

from __future__ import annotations

import re

#: one piece of a word, or the blanks between words; the double-quoted form is the unrolled
#: loop ``[^"\\]*(\\.[^"\\]*)*``, linear (no alternation tried per character)
_PIECE = re.compile(r"""
    (?P<blank>[ \t\r\n]+)
  | (?P<plain>[^ \t\r\n'"\\]+)
  | '(?P<single>[^']*)'
  | "(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"
  | \\(?P<escaped>.)
  | (?P<open>['"\\])
""", re.VERBOSE | re.DOTALL)
_DOUBLE_ESCAPE = re.compile(r'\\(["\\])')


def split(text: str) -> list[str]:
    """``shlex.split(text)``, linear in ``len(text)``."""
    words: list[str] = []
    pieces: list[str] = []
    in_word = False
    for m in _PIECE.finditer(text):
        kind = m.lastgroup
        if kind == "blank":
            if in_word:
                words.append("".join(pieces))
                pieces, in_word = [], False
            continue
        if kind == "open":  # the text ends inside it: shlex's words, by the state it ends in
            rest = text[m.start() + 1:]
            ends_escaping = m.group() == "\\" or (m.group() == '"' and (len(rest) - len(rest.rstrip("\\"))) % 2)
            raise ValueError("No escaped character" if ends_escaping else "No closing quotation")
        value = m.group(kind)
        pieces.append(_DOUBLE_ESCAPE.sub(r"\1", value) if kind == "double" else value)
        in_word = True
    if in_word:
        words.append("".join(pieces))
    return words
