"""Random Megatron-LM command lines over the modelled flags (a fixed seed, so every run reads
the same 6,000): each is a job or an input error naming the field, never another exception,
and every job's memory parts are finite and not negative. The stop that wrote this found a
division by zero this way (``--expert-tensor-parallel-size 2`` on one GPU without experts and
with the distributed optimizer); on the code before its fix this test fails with it."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.memory import parts_bytes

SWITCHES = (
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--bf16", "--fp16", "--cross-entropy-loss-fusion", "--disable-bias-linear", "--fp8-param-gather",
    "--grad-reduce-in-bf16", "--group-query-attention",
    "--no-async-tensor-model-parallel-allreduce", "--no-bias-dropout-fusion", "--no-bias-gelu-fusion",
    "--no-gradient-accumulation-fusion", "--no-masked-softmax-fusion", "--no-scatter-gather-tensors-in-pipeline",
    "--overlap-grad-reduce", "--overlap-param-gather", "--recompute-activations", "--sequence-parallel",
    "--swiglu", "--tp-comm-overlap", "--untie-embeddings-and-output-weights", "--use-distributed-optimizer",
    "--use-flash-attn", "--checkpoint-activations",
)
VALUES = {
    "--tensor-model-parallel-size": (1, 2, 4, 8, 16), "--pipeline-model-parallel-size": (1, 2, 3, 4),
    "--context-parallel-size": (1, 2, 4), "--expert-model-parallel-size": (1, 2, 4),
    "--expert-tensor-parallel-size": (1, 2), "--num-experts": (2, 4, 8), "--moe-router-topk": (1, 2),
    "--moe-ffn-hidden-size": (64, 128), "--moe-layer-freq": (1, 2), "--moe-shared-expert-intermediate-size": (64,),
    "--num-query-groups": (1, 2, 4), "--kv-channels": (16, 32), "--ffn-hidden-size": (100, 128, 256),
    "--recompute-granularity": ("full", "selective"), "--recompute-method": ("uniform", "block"),
    "--recompute-num-layers": (1, 2), "--virtual-pipeline-model-parallel-size": (2,),
    "--num-layers-per-virtual-pipeline-stage": (1, 2), "--decoder-first-pipeline-num-layers": (1, 2),
    "--decoder-last-pipeline-num-layers": (1, 2), "--fp8-format": ("hybrid", "e4m3"),
    "--fp8-recipe": ("tensorwise", "delayed", "mxfp8"), "--transformer-impl": ("local", "transformer_engine"),
    "--cp-comm-type": ("p2p", "a2a", "allgather"), "--make-vocab-size-divisible-by": (1, 128),
    "--micro-batch-size": (1, 2, 3), "--activations-checkpoint-method": ("uniform", "block"),
    "--global-batch-size": (8, 16, 32, 48),
}


def _command_line(rnd: random.Random) -> tuple[str, int]:
    words = [f"--num-layers {rnd.choice((2, 4, 6, 8))}", f"--hidden-size {rnd.choice((64, 128, 256))}",
             f"--num-attention-heads {rnd.choice((4, 8, 16))}", f"--seq-length {rnd.choice((64, 128, 256))}",
             "--max-position-embeddings 256", f"--vocab-size {rnd.choice((128, 1000))}"]
    words += rnd.sample(SWITCHES, rnd.randrange(5))
    chosen = {flag: rnd.choice(VALUES[flag]) for flag in rnd.sample(sorted(VALUES), rnd.randrange(6))}
    chosen.setdefault("--micro-batch-size", 1)
    words += [f"{flag} {value}" for flag, value in chosen.items()]
    layout = 1
    for flag in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size"):
        layout *= int(chosen.get(flag, 1))
    return " ".join(words), layout * rnd.choice((1, 2, 4))


def _fuzzed(seed: int, count: int, more: Callable[[random.Random], str] = lambda rnd: ""):
    """``count`` random command lines (``more`` adds words to each): yields ``(args, gpus,
    job)`` for each one Megatron would run, ``(args, gpus, None)`` for each refused, once
    its error was checked to name the field."""
    rnd = random.Random(seed)
    for _ in range(count):
        args, gpus = _command_line(rnd)
        args += more(rnd)
        try:
            yield args, gpus, parse(args, gpus, "fuzz")
        except InputError as exc:
            assert str(exc).startswith("fuzz: "), (args, gpus, str(exc))
            yield args, gpus, None


def test_random_command_lines_are_jobs_or_input_errors():
    jobs = refused = 0
    for args, gpus, job in _fuzzed(59, 6000):
        if job is None:
            refused += 1
            continue
        parts = parts_bytes(job)
        assert all(math.isfinite(v) and v >= 0 for v in parts.values()), (args, gpus, parts)
        jobs += 1
    assert jobs > 500 and refused > 500  # both sides of the rules are exercised


#: the kernel-choice flags of the unfused attention and the eras that decide them
KERNEL_SWITCHES = ("--attention-softmax-in-fp32", "--apply-query-key-layer-scaling", "--no-query-key-layer-scaling",
                   "--accumulate-allreduce-grads-in-fp32", "--no-masked-softmax-fusion")
KERNEL_VALUES = {"--DDP-impl": ("local", "torch"), "--attention-backend": ("unfused", "flash", "local"),
                 "--seq-length": (16, 20, 64, 2048, 4096, 8192)}


def test_random_kernel_choices_give_finite_layer_times():
    """Random command lines with the flags that pick the attention's kernels (the fused
    scale-mask-softmax or PyTorch's fallback, its fp32 copies, the eras): each is a job whose
    first layer's forward, recomputation and backward have finite, non-negative kernel times
    and at least one kernel a compute step, or an input error naming the field."""
    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.workloads.megatron.layers import ChunkModel
    from simpy_astra.workloads.megatron.steps import Compute

    def kernel_flags(rnd: random.Random) -> str:
        return ("".join(f" {s}" for s in rnd.sample(KERNEL_SWITCHES, rnd.randrange(3)))
                + "".join(f" {f} {rnd.choice(v)}" for f, v in KERNEL_VALUES.items() if rnd.random() < 0.4)
                + " --max-position-embeddings 8192")

    gpu = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()
    jobs = refused = 0
    for args, gpus, job in _fuzzed(61, 1500, kernel_flags):
        if job is None:
            refused += 1
            continue
        model, moe = ChunkModel(job, gpu), job.chunk_kinds(0, 0)[:1]
        steps = model.forward(moe, True, False) + model.recompute(moe) + model.backward(moe, True, False)
        for step in steps:
            if isinstance(step, Compute):
                assert step.kernels >= 1 and all(math.isfinite(s) and s >= 0 for s in step.seconds.values()), \
                    (args, gpus, step)
        jobs += 1
    assert jobs > 200 and refused > 200


def test_a_command_line_is_split_into_the_words_shlex_gives():
    """The linear splitter against ``shlex.split`` itself on 20,000 random lines of blanks,
    quotes, backslashes and word characters: the same words, or the same error."""
    import shlex

    from simpy_astra.workloads.megatron.shell_words import split

    rnd = random.Random(7)
    alphabet = ["a", "-", "=", " ", "\t", "\n", "'", '"', "\\", "$", "#", "\u00a0"]

    def outcome(fn, text):
        try:
            return fn(text)
        except ValueError as exc:
            return str(exc)

    for _ in range(20_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 16)))
        assert outcome(split, text) == outcome(shlex.split, text), repr(text)


def test_a_sweep_over_a_line_with_a_megabyte_word_lists_its_points_at_once(tmp_path):
    """shlex grows a word a character at a time (n^2): one 10^6-character --data-path took 17 s
    to split, and a sweep splits its base's arguments several times a point, so four points
    were listed after minutes with no sign. In a child with a deadline: a regression fails the
    test instead of hanging the suite."""
    import json
    import os
    import subprocess
    import sys

    args = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1 "
            "--global-batch-size 8 --bf16 --vocab-size 128 --data-path " + "x" * 1_000_000)
    (tmp_path / "base.yaml").write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}}))
    (tmp_path / "sweep.yaml").write_text("base: base.yaml\naxes:\n  workload.args.micro-batch-size: [1, 2]\n"
                                         "  workload.args.num-layers: [2, 4]\n")
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(tmp_path / "sweep.yaml"), "--list"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 points"), done.stdout[:200]
