"""A fourth hunt for inputs that ran as something other than what they say: each is now simulated
as Megatron-LM runs it, or refused in one line naming the file, the field and the fix."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


@pytest.mark.parametrize("lengths", ["--seq-length 2048 --encoder-seq-length 512",
                                     "--encoder-seq-length 512 --seq-length 2048",
                                     "--seq-length=1024 --encoder-seq-length=1024"])
def test_seq_length_beside_encoder_seq_length_is_refused(lengths):
    # Megatron-LM (every release, validate_args): if args.seq_length is not None:
    # assert args.encoder_seq_length is None; the two names were one argument here, and the
    # later silently won (a step of 512 tokens priced for a line that says 2048)
    with pytest.raises(InvalidConfigurationError) as info:
        parse(f"{BASE} {lengths} --max-position-embeddings 2048", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "\n" not in message
    assert info.value.rule == "one sequence-length name" and "--seq-length alone" in message


def test_encoder_seq_length_alone_is_the_sequence():
    # Megatron: else: assert args.encoder_seq_length is not None; args.seq_length = args.encoder_seq_length
    assert parse(BASE + " --encoder-seq-length 512", 8, WHERE).seq == 512
    assert parse(BASE + " --seq-length 512 --seq-length 1024", 8, WHERE).seq == 1024  # argparse: the last
