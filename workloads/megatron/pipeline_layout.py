"""Megatron-Core's ``--pipeline-model-parallel-layout`` strings, read as its
``PipelineParallelLayerLayout.parse_str_to_list`` reads them
(``megatron/core/transformer/pipeline_parallel_layer_layout.py``).

Grammar: commas are cosmetic and dropped; ``(...)*N`` repeats what the parentheses hold (no
nesting), then ``x*N`` repeats the one character before it; ``|`` separates the model's
chunks in model order (chunk ``c`` of stage ``s`` is the ``c * pp + s``-th); in a chunk
``E`` is the embedding, ``t`` a transformer layer, ``L`` the loss, ``m`` a multi-token
prediction layer. ``"Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"`` is 40 chunks of 80 layers.
"""

from __future__ import annotations

import re

#: Megatron's layer characters (``char2layer_type``)
LAYER_CHARACTERS = "ELtm"
#: the most layer characters and separators a layout may expand to: far past any model (a
#: layer or a chunk each), short of a repeat count that would fill the memory before a rule
#: could refuse it
MAX_EXPANDED_CHARACTERS = 1_000_000


class LayoutTooLong(ValueError):
    """A layout whose repeats expand past :data:`MAX_EXPANDED_CHARACTERS`."""


def chunks(layout: str) -> list[str]:
    """The layout's chunks, each the string of its layer characters."""
    text = layout.replace(",", "")
    text = _repeated(r"\(([^)]+)\)\*(\d+)", text, layout)
    text = _repeated(r"(.)\*(\d+)", text, layout)
    return text.split("|")


def _repeated(pattern: str, text: str, layout: str) -> str:
    """``text`` with each match of ``pattern`` (what to repeat, how many times) expanded, as
    ``re.sub`` would, its length counted before each repeat is made."""
    pieces, at, size = [], 0, 0
    for match in re.finditer(pattern, text):
        what, times = match.group(1), int(match.group(2))
        size += match.start() - at + len(what) * times
        if size > MAX_EXPANDED_CHARACTERS:
            raise LayoutTooLong(f"{layout!r} expands past {MAX_EXPANDED_CHARACTERS:,} layers and separators "
                                f"({what!r} * {times:,})")
        pieces += [text[at:match.start()], what * times]
        at = match.end()
    pieces.append(text[at:])
    return "".join(pieces)
