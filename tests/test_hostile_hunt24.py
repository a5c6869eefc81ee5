"""A twenty-fourth hunt: interrupted and concurrent work, the newest features, and sizes at the
ends of their ranges. Each test failed before its fix: a traceback or internal error, a run
that could not finish at a size the cluster accepts, or a wrong success."""

from __future__ import annotations

import signal
import sys
import types

import pytest

from simpy_astra.collectives.logical import dimension_ring
from simpy_astra.engine.collective_plans import CommunicatorGroup


def test_every_npu_of_a_network_line_holds_one_tuple_of_its_members():
    # before: each NPU built its own tuple of its line's members, n copies of an n-NPU line:
    # a 32,768-GPU data-parallel job (dgx-h100) passed 4 GB in a minute, and 262,144 GPUs (the
    # cluster's bound) could not finish; now 262,144 GPUs run in about 3 minutes and 3.7 GB
    dims = [8, 4096]
    line = dimension_ring(3, dims, 1)
    other = dimension_ring(3 + 8 * 4095, dims, 1)
    assert line.members is other.members
    assert line.members == tuple(range(3, 8 * 4096, 8)) and (line.index, other.index) == (0, 4095)


def test_a_group_member_finds_its_place_without_scanning_the_group():
    # before: each member's view asked members.index (and `in members`): n scans of an n-member
    # group, quadratic in the GPUs of a data-parallel group
    group = CommunicatorGroup(7, (5, 9, 2, 9))
    view = group.member_view()
    assert view.positions is group.positions and view.streams is not group.streams
    assert [group.positions[m] for m in (5, 9, 2)] == [0, 1, 2]  # a repeated member: its first place


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_sweep_runner_is_still_being_imported_stops_the_sweep(monkeypatch, signum):
    # before: the handler imported Terminated from simpy_astra.sweep.runner; a Ctrl-C in a
    # sweep's first second, while that module was half imported, ended it with "internal error
    # ImportError: cannot import name 'Terminated' from partially initialized module"
    from simpy_astra.cli import sweep as sweep_cli
    from simpy_astra.infra.stopping import Terminated

    monkeypatch.setitem(sys.modules, "simpy_astra.sweep.runner", types.ModuleType("simpy_astra.sweep.runner"))
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(KeyboardInterrupt) as stopped:
            sweep_cli._stop_once(signum, None)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert isinstance(stopped.value, Terminated) == (signum == signal.SIGTERM)
