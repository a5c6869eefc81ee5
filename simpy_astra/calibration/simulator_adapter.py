"""The one adapter to the engine: the simulated time of one collective, run as ``simpy-astra
run`` runs a scenario (the network and system inline, a microbenchmark workload), and the
collective's size as an nccl-tests row of a log prints it.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from simpy_astra.config.scenario import load_scenario
from simpy_astra.config.yaml_reader import dump_yaml
from simpy_astra.network.backends import DEFAULT_BACKEND
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE


def comm_size(collective: str, nccl_size: int, ranks: int) -> int:
    """The Chakra ``comm_size`` of the node that reproduces an nccl-tests row of ``nccl_size``.

    nccl-tests prints the largest buffer: all-gather's is the gathered output, so each rank
    contributes size/n (ASTRA-sim's all-gather ``comm_size`` is the per-rank input);
    all-reduce, reduce-scatter (input), all-to-all (each rank's send buffer) and send/receive
    print what ASTRA-sim calls the collective's size.
    """
    return nccl_size // ranks if collective == "all_gather" else nccl_size


def simulate_collective(network: dict[str, Any], system: dict[str, Any], collective: str,
                        size_bytes: int, num_npus: int, backend: str = DEFAULT_BACKEND) -> int:
    """Simulated time in ns of one ``collective`` of ``size_bytes`` (ASTRA-sim's comm_size) on
    ``num_npus`` NPUs, given the network YAML and system JSON as mappings.

    The only function here that knows how the engine is driven: a scenario with the network
    and system inline and a microbenchmark workload, loaded by ``load_scenario`` and run by
    ``Simulation``, as ``simpy-astra run`` does. ``sendrecv`` (nccl-tests' ring of
    neighbour exchanges) has no microbenchmark generator, so its traces are written here.
    """
    with tempfile.TemporaryDirectory(prefix="simpy-astra-calib-") as tmp:
        if collective == "sendrecv":
            workload: Any = _write_sendrecv(os.path.join(tmp, "sendrecv"), size_bytes, num_npus)
        else:
            workload = {"generate": "microbench", "collective": collective, "size": size_bytes,
                        "num_npus": num_npus}
        path = os.path.join(tmp, "scenario.yaml")
        with open(path, "w") as f:
            dump_yaml({"workload": workload, "system": system, "network": network,
                            "backend": backend}, f)
        inputs = load_scenario(path)
        reports = Simulation(inputs).run()
    return max(r.finished_cycles for r in reports)


def _write_sendrecv(prefix: str, size_bytes: int, n: int) -> str:
    """Every rank sends ``size_bytes`` to rank+1 and receives as much from rank-1."""
    for rank in range(n):
        send = make_node(1, "send", COMM_SEND_NODE, attrs={"comm_dst": (rank + 1) % n,
                                                          "comm_size": size_bytes, "comm_tag": 1})
        recv = make_node(2, "recv", COMM_RECV_NODE, attrs={"comm_src": (rank - 1) % n,
                                                          "comm_size": size_bytes, "comm_tag": 1})
        write_et(f"{prefix}.{rank}.et", [send, recv])
    return prefix
