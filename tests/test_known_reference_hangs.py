"""Inputs on which ASTRA-sim never finishes: we must stop with a report, never hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.errors import StalledError
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import ALL_REDUCE, COMM_COLL_NODE
from tests.sim_helpers import run


def test_double_binary_tree_on_three_rings_stops_with_a_report(tmp_path: Path) -> None:
    # the reference deadlocks here (DBT all-reduce over [Ring 4, Ring 4, Ring 4] at 1 MiB)
    ar = make_node(1, "grad_ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": 1 << 20})
    network = {"topology": ["Ring"] * 3, "npus_count": [4, 4, 4], "bandwidth": [50.0] * 3,
               "latency": [500.0] * 3}
    system = {"collective-optimization": "localBWAware", "preferred-dataset-splits": 4,
              "all-reduce-implementation": ["doubleBinaryTree"] * 3}
    with pytest.raises(StalledError) as info:
        run(tmp_path, [[ar]] * 64, network, system)
    text = str(info.value)
    assert "NPU 0" in text and "node 1 (COMM_COLL 'grad_ar'" in text
    assert "never sent" in text or "never received" in text
    # a receive a collective waits on is named by its phase, not only by its NPU
    assert "phase of chunk stream 0 waits for" in text
