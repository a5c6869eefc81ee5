"""The scenario and sweep files tests write, in one place: a test states only what its case
changes (the arguments, an axis, a cluster field), and every file it writes is YAML as a user
would write it."""

from __future__ import annotations

from pathlib import Path

import yaml

from simpy_astra.cli.main import main

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
#: the default scenario as a dict, for cases that change one of its fields
DEFAULT = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
#: a tiny GPT (2 layers, h 256, 4 heads, s 128) on 8 A100s: a step runs in a few milliseconds
TINY_GPT_ARGS = ("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
                 "--global-batch-size 16 --bf16 --vocab-size 32000")
#: a small GPT (8 layers, h 1024, 16 heads, s 1024) at tp 2, pp 2: a sweep point runs in a
#: fraction of a second on 16 GPUs
SMALL_GPT_ARGS = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
                  "--max-position-embeddings 1024 --micro-batch-size 2 --global-batch-size 64 "
                  "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16 --vocab-size 32000")


def write_yaml(folder: Path, doc: dict, name: str = "s.yaml") -> str:
    """``doc`` written as ``folder/name``, in the key order given; its path as a string."""
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def default_with(**fields) -> dict:
    """The default scenario, its workload by absolute path (so it runs from any folder), with
    ``fields`` laid over it."""
    return {**DEFAULT, "workload": str(SCENARIOS / DEFAULT["workload"]), **fields}


def megatron_scenario(folder: Path, args: str = TINY_GPT_ARGS, name: str = "s.yaml", *,
                      preset: str = "dgx-a100-80gb", gpus: int = 8, **cluster) -> str:
    """A Megatron-LM job of ``args`` on ``gpus`` GPUs of ``preset`` and the ``cluster`` fields."""
    return write_yaml(folder, {"workload": {"generate": "megatron", "args": args},
                               "cluster": {"preset": preset, "gpus": gpus, **cluster}}, name)


def megatron_sweep(folder: Path, axes: dict, args: str = SMALL_GPT_ARGS, cluster: dict | None = None,
                   **fields) -> str:
    """``sweep.yaml`` over ``axes`` of a Megatron-LM job (16 H100s unless ``cluster``), minimising
    the iteration time; ``fields`` are further top-level keys (``constraints``, ``report``...)."""
    base = {"workload": {"generate": "megatron", "args": args},
            "cluster": cluster or {"preset": "dgx-h100", "gpus": 16}}
    return write_yaml(folder, {"base": base, "axes": axes, "minimise": "iteration_time_ns", **fields},
                      "sweep.yaml")


def launched_as_alone(folder: Path, capsys, launcher: str, gpus: int = 16) -> tuple[str, str]:
    """The output of ``TINY_GPT_ARGS`` run with ``launcher`` pasted before them, and without it
    (16 H100s), each run of which must succeed: a launcher that changes nothing gives the same."""
    outputs = []
    for name, args in (("a.yaml", f"{launcher} {TINY_GPT_ARGS}"), ("b.yaml", TINY_GPT_ARGS)):
        assert main(["run", megatron_scenario(folder, args, name, preset="dgx-h100", gpus=gpus), "--quiet"]) == 0
        outputs.append(capsys.readouterr().out)
    return outputs[0], outputs[1]


def error_lines(capsys, argv: list[str]) -> list[str]:
    """The lines a command that refuses its input (exit status 2) writes to stderr."""
    assert main(argv) == 2
    return capsys.readouterr().err.strip().splitlines()


def headline_and_warnings(capsys, path: str) -> tuple[str, list[str]]:
    """What ``run path --quiet`` writes: its headline, and its warnings one a line (unwrapped)."""
    from tests.wrapped_lines import plain

    assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return captured.out, plain(captured.err).strip().splitlines()


def custom_ring(folder: Path, npus: int) -> str:
    """A custom collective of one ring step (each rank sends 64 KiB to the next): its prefix."""
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE

    for rank in range(npus):
        size = {"comm_size": 65536, "comm_tag": 0}
        write_et(str(folder / f"ring.{rank}.et"),
                 [make_node(0, "send", COMM_SEND_NODE, attrs={"comm_dst": (rank + 1) % npus, **size}),
                  make_node(1, "recv", COMM_RECV_NODE, attrs={"comm_src": (rank - 1) % npus, **size})])
    return str(folder / "ring")
