"""docs/megatron.md's table of sequence parallelism at hidden 1,024 (section "The host") holds
what the tree prints: its step times, read from the page, are those `run` gives for the same
command lines, so the paragraph's reason (more calls, host bound) is about today's figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simpy_astra.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
ARGS = ("--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
        "--micro-batch-size 1 --global-batch-size 16 --bf16 --tensor-model-parallel-size {tp}{sp}")


def _table() -> dict[tuple[int, bool], float]:
    text = (ROOT / "docs" / "megatron.md").read_text()
    rows = re.findall(r"^\| (\d) \| (off|on) \| ([\d.]+) \|", text, re.M)
    return {(int(tp), sp == "on"): float(ms) for tp, sp, ms in rows}


@pytest.mark.parametrize("tp", [2, 4])
def test_the_pages_sequence_parallel_rows_are_the_trees(tp, tmp_path, capsys):
    table, step_ms = _table(), {}
    for sp in (False, True):
        scenario = tmp_path / f"sp{int(sp)}.yaml"
        args = ARGS.format(tp=tp, sp=" --sequence-parallel" if sp else "")
        scenario.write_text(f"workload: {{generate: megatron, args: \"{args}\"}}\n"
                            "cluster: {preset: dgx-h100, gpus: 16}\n")
        assert main(["run", str(scenario), "--quiet"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        step_ms[sp] = float(re.match(r"iteration time ([\d.]+) ms", first).group(1))
        assert step_ms[sp] == table[(tp, sp)], first
    assert step_ms[True] > step_ms[False]  # what the paragraph explains
