"""The guard against a user's collective looping within one instant costs our own algorithms
nothing: their phases and sub-processes are never counted, per resume or per message.

Counting every resume of every phase (and deciding per phase whether it was the user's, which
read ``sysconfig`` each time) made the unfolded 64-NPU ResNet-50 reference case run over 20
minutes instead of 84 s. Here the counters raise if ever reached, and reference cases that run
each of our algorithms (ring, direct's injected sub-processes, halving-doubling, double binary
tree, a custom ET collective) still give ASTRA-sim's figures; a user's algorithm, and the
sub-processes it spawns, are still stopped.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simpy_astra.engine.phase_process import PostCount
from simpy_astra.infra.zero_time import ZeroTimeGuard
from tests.test_extension_audit import error_line_of_all_reduce
from tests.test_reference_parity import simulate_case

CASES = [
    "ex_cu_all_reduce_8npus_ring",
    "ex_ca_all_to_all_8npus_ring",
    "ex_cu_custom_collective",
    "grid_ca_all_reduce_1MB_fc8_direct",
    "grid_ca_all_reduce_1MB_fc8_halvingDoubling",
    "grid_ca_all_reduce_1MB_fc8_doubleBinaryTree",
    "text_ca_Resnet50_DataParallel_8npus_p1_fc8",
]


@pytest.mark.parametrize("case_id", CASES)
def test_our_algorithms_are_never_counted(case_id: str, reference_dir: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def counted(*_args: object) -> None:
        raise AssertionError("one of our algorithms was counted as the user's")

    monkeypatch.setattr(ZeroTimeGuard, "resumed", counted)
    monkeypatch.setattr(PostCount, "too_many", counted)
    case = json.loads((reference_dir / "cases" / f"{case_id}.json").read_text())
    got = simulate_case(case, reference_dir, tmp_path, monkeypatch)
    for npu, figures in case["expected"].items():
        assert {key: got[npu].get(key) for key in figures} == figures, npu


#: a user's algorithm whose sub-process loops on zero-time waits (the phase itself waits for it)
SPAWNS = textwrap.dedent('''
    def spins_in_a_sub_process(ctx):
        def spin():
            while True:
                yield ctx.wait(0)

        yield ctx.spawn(spin())
''')


def test_a_users_sub_process_that_loops_without_time_passing_is_one_line(tmp_path: Path) -> None:
    """The sub-process is counted as its phase is: the user's; the run stops in one line (the
    stall watchdog, which wakes at later instants, would never run)."""
    line = error_line_of_all_reduce(tmp_path, SPAWNS, "algos:spins_in_a_sub_process")
    assert line.startswith("error: collective algorithm 'spins_in_a_sub_process.<locals>.spin' (")
    assert "100,000 times at 0 ns without simulated time passing" in line
