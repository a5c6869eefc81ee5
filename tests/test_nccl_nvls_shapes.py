"""NCCL's NVLS estimate on groups of every shape, and the choice it makes (issue 47).

NCCL 2.29.7 (``src/graph/search.cc``, ``tuning.cc``; the same since 2.28.9) gives NVLS one
channel a GPU of the node, each at the fastest of its search speeds ``s`` with ``(k + 1) s``
within a GPU's NVLink (one node: 60, 50, 40, 30 GB/s, ...; across nodes 48, 45, 42, 40, ...,
within a rail), and moves per channel the least of ``s x 0.85 x (k - 1) / k x 2``, bwInter
(the speeds raised toward twice ``s``: 60 on one node; a rail's 45 across, twice that on two
nodes) and the NVLS tree's cap (57.7 GB/s on two nodes); times ``k`` and ``n / (2 (n - 1))``.
The model had NVLS at 0.85 x NVLink = 337.7 GB/s whatever ``k``, so a 4-GPU group ran NVLS
(1 GiB: 4,352 us) where NCCL runs the ring (4,149 us by the model's own figures). Every figure
here is written out from the preset's file: NVLink 370 GiB/s = 397.28 GB/s, a rail 47 GB/s,
Simple's latency x 3.1671, 3.675 us a call, NVLS at 1.0216 of NCCL's estimate.
"""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.engine.nccl_tuning import ALGORITHMS, Shape, available, choose, nccl_estimate_us, predict_us
from tests.test_cluster_placement import GIB, _node

NVLINK = 370 * GIB / 1e9  # GB/s
SCALE, LAUNCH, NVLS_SHARE = 3.1671, 3.675, 1.0216

#: NCCL's NVLS estimate (GB/s of the buffer) on k GPUs of one H100 node, by hand:
#: k x min(s x 0.85 x (k - 1) / k x 2, 60) x k / (2 (k - 1)), s = 60 while (k + 1) x 60 <= 397.28
#: (k <= 5), 50 for k = 6 (7 x 50 = 350), 40 for 7 and 8 (8 x 50 = 400 is over)
ONE_NODE_NVLS = {
    2: 2 * min(60 * 0.85 * 1 / 2 * 2, 60) * 2 / 2,  # 102
    3: 3 * min(60 * 0.85 * 2 / 3 * 2, 60) * 3 / 4,  # 135
    4: 4 * min(60 * 0.85 * 3 / 4 * 2, 60) * 4 / 6,  # 160
    5: 5 * min(60 * 0.85 * 4 / 5 * 2, 60) * 5 / 8,  # 187.5
    6: 6 * min(50 * 0.85 * 5 / 6 * 2, 60) * 6 / 10,  # 216
    7: 7 * min(40 * 0.85 * 6 / 7 * 2, 60) * 7 / 12,  # 238
    8: 8 * min(40 * 0.85 * 7 / 8 * 2, 60) * 8 / 14,  # 272
}


def _links():
    return load_cluster({"preset": "dgx-h100", "gpus": 16}, "c").nccl_all_reduce().links


def test_the_preset_states_the_figures_written_here():
    node = _node("dgx-h100")
    assert (node["nvlink_gib_s"], node["nccl_latency_scale"], node["nccl_launch_us"]) == (370, SCALE, LAUNCH)
    assert node["nccl_nvls_efficiency"] == NVLS_SHARE
    assert node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"] == pytest.approx(47)


@pytest.mark.parametrize("k", sorted(ONE_NODE_NVLS))
def test_part_of_an_h100_node_runs_what_nccl_picks(k):
    """NCCL's estimate of NVLS on k GPUs against the ring's k / (2 (k - 1)) x NVLink (Simple,
    1 GiB: latency 25 us against 8.4 + 2 (k - 1) x 3.4): NCCL runs NVLS on 7 and 8 GPUs only,
    the ring on 2 to 6. What it picks is also the fastest of the three as the machine runs them."""
    links, shape = _links(), Shape(k, 1, k)
    ring = k / (2 * (k - 1)) * NVLINK
    nvls_us = 25 + GIB / (ONE_NODE_NVLS[k] * 1e3)
    ring_us = 8.4 + 2 * (k - 1) * 3.4 + GIB / (ring * 1e3)
    assert nccl_estimate_us(links, shape, "nvls", "Simple", GIB) == pytest.approx(nvls_us, rel=1e-9)
    assert nccl_estimate_us(links, shape, "ring", "Simple", GIB) == pytest.approx(ring_us, rel=1e-9)
    picked = choose(links, shape, GIB)
    assert picked == ("nvls" if k >= 7 else "ring") == ("nvls" if nvls_us < ring_us else "ring")
    took = {a: predict_us(links, shape, a, GIB)[0] for a in ALGORITHMS}
    assert took[picked] == min(took.values())
    # NVLS as the machine runs it: 1.0216 of NCCL's estimate, Simple's fill (x 3.1671) and the call
    by_hand = LAUNCH + 25 * SCALE + GIB / (NVLS_SHARE * ONE_NODE_NVLS[k] * 1e3)
    assert took["nvls"] == pytest.approx(by_hand, rel=1e-9)


def test_four_gpus_of_a_node_run_the_ring_at_every_size():
    """The issue's case: 4 H100s of a node. NVLS, 160 GB/s in NCCL's estimate, never beats the
    ring's 264.9 (nor LL's and LL128's smaller latencies); 1 GiB takes the ring's 3.675 +
    28.8 (NCCL's own: the preset's fill is NVLS's) + 2^30 / 264.86 GB/s = 4,086 us, where forced
    NVLS takes 6,652."""
    links, shape = _links(), Shape(4, 1, 4)
    assert all(choose(links, shape, 2**e) == "ring" for e in range(3, 36))
    ring_us = LAUNCH + (8.4 + 6 * 3.4) + GIB / (4 / 6 * NVLINK * 1e3)
    assert predict_us(links, shape, "ring", GIB)[0] == pytest.approx(ring_us, rel=1e-9) == pytest.approx(4086, abs=1)
    assert predict_us(links, shape, "nvls", GIB)[0] == pytest.approx(6652, abs=1)


def test_strided_data_parallel_group_on_two_nodes_runs_the_tree():
    """{0, 4, 8, 12} (tp 4 on two H100 nodes): 2 GPUs and their 2 NICs on each node. NCCL's NVLS
    tree: 2 channels at 45 GB/s (48 is over a rail's 47; 3 x 45 within NVLink), a channel
    min(45 x 0.85 x 1/2 x 2, 2 x 45, 57.7) = 38.25, x 2 x 4/6 = 51.0 GB/s; the tree 0.46 x
    min(NVLink, 2 x 2 rails) = 86.48, the ring 4/6 x 2 rails = 62.67. NCCL runs the tree (the
    model ran NVLS, at min(0.85 x NVLink, 2 x 47) = 94 GB/s); 1 GiB takes 3.675 + 8.4 + 2 x
    (4.0 + 14) (NCCL's own: the preset's fill is NVLS's) + 2^30 / 86.48 GB/s = 12,464 us, the
    fastest of the three."""
    cluster = load_cluster({"preset": "dgx-h100", "gpus": 16}, "c")
    timing = cluster.nccl_all_reduce()
    shape = timing.shape((0, 4, 8, 12))
    assert shape == Shape(4, 2, 2)
    links = timing.links
    nvls_us = 25 + 2 * 20.9 + GIB / (2 * min(45 * 0.85 * 1 / 2 * 2, 2 * 45, 57.7) * 4 / 6 * 1e3)
    tree_us = 8.4 + 2 * (4.0 + 14) + GIB / (0.46 * min(NVLINK, 4 * 47) * 1e3)
    assert nccl_estimate_us(links, shape, "nvls", "Simple", GIB) == pytest.approx(nvls_us, rel=1e-9)
    assert nccl_estimate_us(links, shape, "tree", "Simple", GIB) == pytest.approx(tree_us, rel=1e-9)
    assert timing.algorithm(shape, GIB) == "tree"
    by_hand = LAUNCH + (8.4 + 2 * (4.0 + 14)) + GIB / (0.46 * 4 * 47 * 1e3)
    assert timing.duration_ns((0, 4, 8, 12), GIB) == int(by_hand * 1000)
    took = {a: predict_us(links, shape, a, GIB)[0] for a in ALGORITHMS if available(links, shape, a)}
    assert took["tree"] == min(took.values()) == pytest.approx(12464, abs=1)


def test_two_full_nodes_keep_the_logs_crossover():
    """Two H100 nodes, 8 GPUs each (the log's machine): NCCL's NVLS tree is 8 channels at 42 GB/s
    (9 x 42 within NVLink, 45 x 9 over), bwInter 45; a channel min(42 x 0.85 x 7/8 x 2, 2 x 45,
    57.7) = 57.7, x 8 x 16/30 = 246.2 GB/s, latency 25 + 2 x 20.9. Against the tree with LL128
    (0.46 x NVLink x 120/128 x NCCL's size correction 0.8 at 4 MiB, 0.9 at 8 MiB; latency 14 +
    2 (7 x 1.25 + 8.5)) it loses at 4 MiB (83.8 against 79.1 us) and wins at 8 MiB (100.9
    against 102.9), where the log shows the tree's LL128 up to 4 MiB and NVLS from 8 MiB."""
    links, shape = _links(), Shape(16, 2, 8)
    nvls = 8 * min(42 * 0.85 * 7 / 8 * 2, 2 * 45, 57.7) * 16 / 30
    for size, correction, picked in ((4 << 20, 0.8, "tree"), (8 << 20, 0.9, "nvls")):
        nvls_us = 25 + 2 * 20.9 + size / (nvls * 1e3)
        tree_us = 14 + 2 * (7 * 1.25 + 8.5) + size / (0.46 * NVLINK * 120 / 128 * correction * 1e3)
        assert nccl_estimate_us(links, shape, "nvls", "Simple", size) == pytest.approx(nvls_us, rel=1e-9)
        assert nccl_estimate_us(links, shape, "tree", "LL128", size) == pytest.approx(tree_us, rel=1e-9)
        assert choose(links, shape, size) == picked
