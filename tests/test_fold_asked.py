"""A run that was asked to fold and did not says why, whatever its size (docs/performance.md,
*Symmetry folding*); a run folding by default stays quiet below 64 NPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.wrapped_lines import unwrapped

# two DGX nodes under leaves of one node each, a 2:1 spine between them: a message's rate
# depends on whether it crosses the spine, so the run cannot fold (experts over 8 GPUs: their
# all-to-alls are messages; before, the note blamed the halvingDoubling of the system's
# all-reduces, which NCCL's model times instead, and the run now folds without the spine)
ARGS = ("--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
        "--global-batch-size 16 --num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 "
        "--moe-token-dispatcher-type alltoall --bf16")  # bf16: no attention fallback warning
WHY = ("note: symmetry folding off: cluster.oversubscription 2:1 over leaves of 1 node makes GPUs under "
       "different leaves unlike; leave it out to fold; simulating 16 of 16 NPUs")


def _run(tmp_path: Path, capsys, flags: list[str], **scenario) -> tuple[str, str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16, "nodes_per_leaf": 1,
                                                "oversubscription": 2}, **scenario}))
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
