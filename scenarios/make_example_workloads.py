"""Write the small Chakra traces the shipped scenarios use (run from the repository root).

    python scenarios/make_example_workloads.py

``step_8npus_1MB``: each NPU computes a forward pass, all-reduces 1 MiB of gradients, then
runs an optimizer step that depends on the all-reduce (compute, exposed communication and a
dependency between them). ``all_to_all_16npus_4MB`` and ``all_reduce_64npus_4MB``: one
collective per NPU, for the mesh and torus scenarios.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import ALL_REDUCE, ALL_TO_ALL, COMM_COLL_NODE, COMP_NODE

HERE = Path(__file__).resolve().parent


def compute_allreduce_step(prefix: Path, npus: int, grad_bytes: int) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for rank in range(npus):
        nodes = [
            make_node(1, "forward_backward", COMP_NODE, duration_micros=20),
            make_node(2, "grad_all_reduce", COMM_COLL_NODE, deps=[1],
                      attrs={"comm_type": ALL_REDUCE, "comm_size": grad_bytes}),
            make_node(3, "optimizer_step", COMP_NODE, deps=[2], duration_micros=5),
        ]
        write_et(str(prefix) + f".{rank}.et", nodes)


def single_collective(prefix: Path, npus: int, comm_type: int, size: int) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for rank in range(npus):
        node = make_node(1, "collective", COMM_COLL_NODE, attrs={"comm_type": comm_type, "comm_size": size})
        write_et(str(prefix) + f".{rank}.et", [node])


if __name__ == "__main__":
    compute_allreduce_step(HERE / "workloads" / "step_8npus_1MB" / "step", 8, 1 << 20)
    single_collective(HERE / "workloads" / "all_to_all_16npus_4MB" / "a2a", 16, ALL_TO_ALL, 4 << 20)
    single_collective(HERE / "workloads" / "all_reduce_64npus_4MB" / "ar", 64, ALL_REDUCE, 4 << 20)
