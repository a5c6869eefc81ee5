"""A run that was asked to fold and did not says why, whatever its size (docs/performance.md,
*Symmetry folding*); a run folding by default stays quiet below 64 NPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.wrapped_lines import unwrapped

# one DGX node, experts over its 8 GPUs: their all-to-alls are messages on the node's
# dimension, whose configured algorithms do not commute with its shifts, so the run cannot fold
# (tensor parallelism over the 8 GPUs now folds: NCCL times its collectives by their members)
ARGS = ("--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
        "--global-batch-size 8 --num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 "
        "--moe-token-dispatcher-type alltoall --bf16")  # bf16: no attention fallback warning
WHY = ("note: symmetry folding off: collectives on the network's dimensions use an algorithm that does "
       "not commute with their shifts; simulating 8 of 8 NPUs")


def _run(tmp_path: Path, capsys, flags: list[str], **scenario) -> tuple[str, str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}, **scenario}))
    assert main(["run", str(path), *flags]) == 0
    done = capsys.readouterr()
    return done.out, done.err


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    monkeypatch.delenv("SIMPY_ASTRA_FOLD", raising=False)


def test_a_refused_fold_that_was_asked_for_says_why_in_one_line(tmp_path: Path, capsys) -> None:
    quiet_out, quiet_err = _run(tmp_path, capsys, [])
    assert "symmetry folding" not in quiet_err  # the default: 8 NPUs cost little unfolded
    out, err = _run(tmp_path, capsys, ["--fold-symmetry", "on"])
    assert out == quiet_out  # the answer on stdout unchanged
    lines = unwrapped(err)
    assert lines[0] == WHY  # first, before time starts
    assert [line for line in lines if "symmetry folding" in line] == [WHY]
    assert max(len(line) for line in err.splitlines()) <= 80


def test_the_scenarios_fold_setting_asks_too_and_quiet_keeps_the_line(tmp_path: Path, capsys) -> None:
    _, err = _run(tmp_path, capsys, ["--quiet"], fold_symmetry=True)
    assert unwrapped(err) == [WHY]
    _, err = _run(tmp_path, capsys, ["--quiet"], fold_symmetry=False)
    assert err == ""
