"""An NPU's parts (its communication, what it waits on) read of it what their contracts
declare: a built NPU is held to each contract, so a part cannot read an attribute the NPU
stopped setting, and the NPU cannot drop one a part reads, without this failing."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.engine.npu_communication import NpuCommunication
from simpy_astra.engine.npu_contracts import CommunicatingNpu, WaitingNpu
from simpy_astra.engine.npu_waiting import NpuWaiting
from simpy_astra.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("contract", [CommunicatingNpu, WaitingNpu])
def test_a_built_npu_keeps_the_contract_of_each_of_its_parts(contract):
    npu = Simulation.from_scenario(str(ROOT / "scenarios" / "default.yaml")).npu_for(0)
    declared = [*contract.__annotations__, *(n for n, v in vars(contract).items()
                                            if callable(v) and not n.startswith("_"))]
    assert [name for name in declared if not hasattr(npu, name)] == []
    assert isinstance(npu, contract)


def test_the_contracts_cost_the_run_nothing():
    """At run time a part is a plain class: the contract is no base of it (no Protocol
    machinery in an NPU's attribute lookups)."""
    for part, contract in ((NpuCommunication, CommunicatingNpu), (NpuWaiting, WaitingNpu)):
        assert part.__mro__ == (part, object) and contract not in part.__mro__
