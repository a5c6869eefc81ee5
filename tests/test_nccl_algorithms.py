"""NCCL's ring, tree and NVLS all-reduce (simpy_astra/nccl_tuning.py) against the nccl-tests
logs the project ships: each algorithm's bandwidth share and latency scale are fitted on every
other size of the range where the log shows NCCL running it, and every size of that range
(the held-out ones included; the OCI ring's range has two sizes, both fitted) is then
predicted within 5% by NCCL's choice, which must be that algorithm.

Which algorithm a log ran is read off its bus bandwidth, not assumed: one A100 node has no
NVLS and NCCL's tree on one node is a chain at half the ring's ratio, so ring; two H100 nodes
reach 469 GB/s of bus bandwidth, above what a ring can pass through 8 x 400 Gb/s NICs
(400 GB/s), so a tree, and NVLS on NVSwitch-3 nodes; the OCI two-node RoCE log runs near its
ring's NIC limit up to 128 MiB and leaps past it (1.3x) from 1 GiB, the tree's doubled
network share (NCCL switched there; the model switches at 256 MiB, between the two, so the
OCI log's 256 and 512 MiB rows are not claimed).
"""

from __future__ import annotations

import os

import pytest

from simpy_astra.calibration.nccl_log import parse_log
from simpy_astra.nccl_tuning import Links, Shape, choose, fit, predict_us

DATA = os.path.join(os.path.dirname(__file__), "data", "nccl")
MIB = 1 << 20
A100_NVLINK_GB_S = 215.822 * 2**30 / 1e9  # the dgx-a100 presets' NVLink (GiB/s there)
H100_NVLINK_GB_S = 607.054 * 2**30 / 1e9  # the dgx-h100 preset's
#: (log, shape, links, {algorithm: (first, last) size of the range NCCL runs it})
CASES = [
    ("dgx-a100-superbench", Shape(8, 1, 8), Links(A100_NVLINK_GB_S, 1.0, False), {"ring": (256 * MIB, None)}),
    ("hgx-h100-2node-ib", Shape(16, 2, 8), Links(H100_NVLINK_GB_S, 50 * 0.94, True), {"nvls": (128 * MIB, None)}),
    ("oci-a100-2node-roce", Shape(16, 2, 8), Links(A100_NVLINK_GB_S, 25 * 0.94, False),
     {"ring": (64 * MIB, 128 * MIB), "tree": (1024 * MIB, None)}),
]


def _rows(name: str, first: int, last: int | None) -> list[tuple[int, float]]:
    log = parse_log(os.path.join(DATA, name, "all_reduce.log"))
    return [(r.size_bytes, r.time_us) for r in log.rows
            if r.size_bytes >= first and (last is None or r.size_bytes <= last)]


def _fitted(shape: Shape, links: Links, ranges: dict, name: str) -> Links:
    for algo, (first, last) in ranges.items():
        rows = _rows(name, first, last)
        links = fit(links, shape, algo, rows[::2] if len(rows) > 2 else rows)
    return links


@pytest.mark.parametrize("name,shape,links,ranges", CASES, ids=[c[0] for c in CASES])
def test_each_algorithm_matches_its_log_where_nccl_uses_it(name, shape, links, ranges):
    fitted = _fitted(shape, links, ranges, name)
    for algo, (first, last) in ranges.items():
        rows = _rows(name, first, last)
        for size, measured_us in rows:
            assert choose(fitted, shape, size) == algo, (name, size)
            predicted_us, _ = predict_us(fitted, shape, algo, size)
            assert predicted_us == pytest.approx(measured_us, rel=0.05), (name, algo, size)


def test_nccl_choice_by_size_and_nodes():
    """With NCCL's own constants: on one A100 node the ring (a chain tree has half its
    ratio); on two H100 nodes NVLS for large buffers, where its network share is twice the
    ring's; a tree (2 log2 m network hops) before a ring (2 (m - 1)) for small buffers on many
    nodes; NVLS only on NVSwitch-3."""
    a100 = Links(A100_NVLINK_GB_S, 25 * 0.94, False)
    h100 = Links(H100_NVLINK_GB_S, 50 * 0.94, True)
    assert choose(a100, Shape(8, 1, 8), 1 << 30) == "ring"
    assert choose(h100, Shape(16, 2, 8), 1 << 30) == "nvls"
    assert choose(a100, Shape(512, 64, 8), 64 * 1024) == "tree"
    assert choose(a100, Shape(16, 2, 8), 1 << 30) != "nvls"
