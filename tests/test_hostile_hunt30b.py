"""Hunt 30b: NCCL's broadcast as a user's trace and a launcher bring it, NCCL variables exported
empty, LSF's jsrun and DeepSpeed's host list, attacked for wrong successes and misleading lines.
Each test failed before its fix."""

from __future__ import annotations

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import BROADCAST, COMM_COLL_NODE


def _broadcasts(folder, npus: int, duration_us: int = 0) -> str:
    """``npus`` traces of one 1 MiB BROADCAST each (a user's, without or with a duration)."""
    folder.mkdir()
    for rank in range(npus):
        write_et(str(folder / f"t.{rank}.et"), [make_node(1, "bcast", COMM_COLL_NODE, duration_micros=duration_us,
                                                          attrs={"is_cpu_op": False, "comm_type": BROADCAST,
                                                                 "comm_size": 1 << 20})])
    return str(folder / "t")


@pytest.mark.parametrize(("backend", "warned"), [("congestion_unaware", False), ("congestion_aware", True)])
def test_a_broadcast_nccls_model_times_is_not_said_to_take_1_ns(tmp_path, capsys, backend, warned):
    # before: on a cluster preset's analytical backend NCCL's model times a trace's broadcast
    # (1 MiB over 16 A100s: 43.9 us), and the run still warned that 'each takes 1 ns and its
    # bytes never cross the network'; where messages are played it is replayed, and said so
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": _broadcasts(tmp_path / "b", 16),
                                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}))
    assert main(["run", str(scenario), "--quiet", "--network-backend", backend]) == 0
    captured = capsys.readouterr()
    assert ("record no duration" in captured.err) == warned, captured.err
    assert captured.out.startswith("iteration time 1 ns" if warned else "iteration time 43,923 ns"), captured.out
