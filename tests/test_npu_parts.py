"""The parts an NPU is made of (:mod:`simpy_astra.engine.npu_communication`,
:mod:`simpy_astra.engine.npu_waiting`) declare what they read of it; a built NPU has each."""

from __future__ import annotations

import pytest

from simpy_astra.engine.npu_communication import NpuCommunication, RunServices
from simpy_astra.engine.npu_waiting import NpuWaiting
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.types import COMP_NODE
from tests.sim_helpers import net, run_sim


@pytest.mark.parametrize("part", [NpuCommunication, NpuWaiting])
def test_an_npu_has_every_attribute_its_parts_declare(tmp_path, part) -> None:
    _, sim = run_sim(tmp_path, [[make_node(1, "c", COMP_NODE, duration_micros=1)]] * 2, net("Ring", 2), run=False)
    npu = sim.npus[0]
    assert part.__annotations__ and [n for n in part.__annotations__ if not hasattr(npu, n)] == []
    assert [n for n in RunServices.__annotations__ if not hasattr(npu.services, n)] == []
