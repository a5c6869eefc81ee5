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


def chunks(layout: str) -> list[str]:
    """The layout's chunks, each the string of its layer characters."""
    text = layout.replace(",", "")
    text = re.sub(r"\(([^)]+)\)\*(\d+)", lambda x: x.group(1) * int(x.group(2)), text)
    text = re.sub(r"(.)\*(\d+)", lambda x: x.group(1) * int(x.group(2)), text)
    return text.split("|")
