"""Interleaved 1F1B's ``overlap_p2p_comm`` (Megatron-LM's default since 2023-10, commit
``4eeff55d1f``; off with ``--no-overlap-p2p-communication``).

What Megatron-Core's ``forward_backward_pipelining_with_interleaving`` does with it (read at
Megatron-LM ``d98e8a64dd``): ``pp_post_backward`` issues a backward's gradient send with
``isend`` and waits for the *previous* one (``send_prev_wait_handle.wait()``) after the
backward's compute, so each gradient send runs beside the stage's next forward and backward;
the last is waited before the step ends. ``pp_post_forward`` waits for an activation send at
once (``deallocate_pipeline_outputs``, which Megatron-LM's training sets, frees the output
only after it: commit ``260cba7133``). Without virtual stages Megatron turns the overlap off
(``validate_args``), and every send is waited before the next task.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.schedule import build_stage
from simpy_astra.workloads.transformer.graph import SEND
from tests.test_megatron import ROOT

ARGS = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
        "--global-batch-size 8 --pipeline-model-parallel-size 4 --bf16 --vocab-size 1024")
INTERLEAVED = ARGS + " --num-layers-per-virtual-pipeline-stage 1"
#: an op of one task of the schedule (``F3.c1.…``, ``B7.c0.…``)
TASK_OP = re.compile(r"^[A-Z]+\d+\.c\d+\.")


def _ancestors(ops, i: int) -> set[int]:
    seen, todo = set(), [i]
    while todo:
        for d in ops[todo.pop()].deps:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def _waits(args: str, stage: int) -> list[tuple[str, str | None]]:
    """Each send of ``stage`` and the first op after it (in issue order) that waits for it."""
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    ops = build_stage(parse(args, 4), gpu, stage).ops
    found = []
    for i, op in enumerate(ops):
        if op.kind == SEND:
            waiter = next((later.name for j, later in enumerate(ops[i + 1:], i + 1) if i in _ancestors(ops, j)), None)
            found.append((op.name, waiter))
    return found


def test_a_gradient_send_is_waited_after_the_next_backward_and_an_activation_send_at_once():
    waits = _waits(INTERLEAVED, 3)  # the last stage
    grads = [(send, waiter) for send, waiter in waits if send.endswith("send_gradient")]
    acts = [(send, waiter) for send, waiter in waits if send.endswith("send_activation")]
    assert len(grads) == 16 and len(acts) == 8  # 8 micro-batches: both chunks send gradients, chunk 0 activations
    for (send, waiter), (next_send, _) in zip(grads, grads[1:], strict=False):
        # the next op that waits is the next backward's own gradient send (after its compute)
        assert waiter == next_send, (send, waiter)
    assert not TASK_OP.match(grads[-1][1]), grads[-1]  # the last: waited when the step's tasks are done
    for send, waiter in acts:  # the task after it waits (its first op depends on the send)
        assert waiter is not None and not waiter.endswith("send_activation"), (send, waiter)
        assert waiter.split(".")[0] != send.split(".")[0], (send, waiter)


@pytest.mark.parametrize("args", [INTERLEAVED + " --no-overlap-p2p-communication", ARGS])
def test_without_the_overlap_or_without_virtual_stages_every_send_is_waited_by_the_next_task(args):
    for send, waiter in _waits(args, 3):
        assert waiter is not None and waiter.split(".")[0] != send.split(".")[0], (send, waiter)
        assert not waiter.endswith("send_gradient"), (send, waiter)


def _step_ns(tmp_path, args: str, gpus: int) -> dict:
    folder = tmp_path / str(abs(hash(args)))
    folder.mkdir()
    (folder / "s.yaml").write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                               "cluster": {"preset": "dgx-a100-80gb", "gpus": gpus}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(folder / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(folder / "s.yaml"), "--json-out",
                           str(folder / "o.json"), "--quiet"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads((folder / "o.json").read_text())


def test_the_overlap_hides_gradient_sends_across_nodes_and_no_more(tmp_path):
    """tp 8 fills a node, so each stage's sends cross the NIC: 1 x 1024 x 4096 x 2 B / 8 (scatter/
    gather under sequence parallelism) = 1 MiB at 25 GB/s (one 200 Gb/s rail), about 42 us each.
    Overlapped, the step is shorter, and by no more than the gradient sends one stage makes
    (16 of them: 8 micro-batches x 2 chunks) would take end to end."""
    args = ARGS.replace("--hidden-size 1024", "--hidden-size 4096").replace("--num-attention-heads 16",
                                                                              "--num-attention-heads 32")
    args += " --tensor-model-parallel-size 8 --sequence-parallel --num-layers-per-virtual-pipeline-stage 1"
    on = _step_ns(tmp_path, args, 32)["iteration_time_ns"]
    off = _step_ns(tmp_path, args + " --no-overlap-p2p-communication", 32)["iteration_time_ns"]
    send_ns = 1024 * 4096 * 2 / 8 / 25e9 * 1e9
    assert on < off
    # 20 us: NCCL's latency a send, generously; and without the overlap every exchange is
    # batched and synchronises the device (batch_p2p_sync), so each of the stage's 32 tasks
    # starts on an idle GPU after the host's first launch (batch_fetch, host_time): 100 us each
    # bounds a launch and the host's share of the first step, generously
    assert off - on <= 16 * (send_ns + 20_000) + 32 * 100_000, (on, off)


def test_both_names_of_the_switch_are_refused():
    """The opt-in ``--overlap-p2p-communication`` (to 2023-10) and ``--no-overlap-p2p-
    communication`` (since) never were arguments of one Megatron-LM, and say opposite things."""
    from simpy_astra.errors import InvalidConfigurationError

    with pytest.raises(InvalidConfigurationError, match="no Megatron-LM takes both"):
        parse(INTERLEAVED + " --overlap-p2p-communication --no-overlap-p2p-communication", 4)
    assert parse(INTERLEAVED + " --overlap-p2p-communication", 4).overlap_p2p_comm  # the old name: on
