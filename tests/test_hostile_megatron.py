"""Megatron-LM command lines a researcher writes that Megatron reads differently from what
they look like: each is simulated as Megatron-LM runs it (its ``arguments.py`` quoted), or
refused in one line naming the argument and the fix."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


@pytest.mark.parametrize("hidden, ffn", [
    # Megatron: args.ffn_hidden_size = int((4 * args.hidden_size * 2 / 3) / 64) * 64
    (4096, 10880),  # 10922.7 -> 170 x 64, not 171 x 64 = 10944
    (1024, 2688),  # 2730.7 -> 42 x 64
    (5120, 13632),  # 13653.3 -> 213 x 64
    (768, 2048),  # exactly 32 x 64
])
def test_swiglu_mlp_width_is_megatrons_truncation(hidden, ffn):
    job = parse(BASE.replace("4096", str(hidden)) + " --swiglu", 8, WHERE)
    assert job.ffn_hidden == ffn


def test_swiglu_on_a_width_that_leaves_no_mlp_is_refused():
    # int(4 x 16 x 2/3 / 64) x 64 = 0: an MLP zero wide
    with pytest.raises(InputError) as info:
        parse(BASE.replace("4096", "16").replace("32 ", "4 ") + " --swiglu", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "--ffn-hidden-size" in message and "--swiglu" in message


def test_group_query_attention_alone_is_one_query_group():
    # Megatron: --num-query-groups defaults to 1 (multi-query attention)
    assert parse(BASE + " --group-query-attention", 8, WHERE).kv_heads == 1
    assert parse(BASE + " --group-query-attention --num-query-groups 8", 8, WHERE).kv_heads == 8
    assert parse(BASE, 8, WHERE).kv_heads == 32


def test_query_groups_without_group_query_attention_are_refused():
    # Megatron passes num_query_groups=None without --group-query-attention: every head keeps
    # its own keys and values, whatever --num-query-groups says
    with pytest.raises(InputError) as info:
        parse(BASE + " --num-query-groups 8", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": --num-query-groups 8") and "--group-query-attention" in message
    assert "\n" not in message
