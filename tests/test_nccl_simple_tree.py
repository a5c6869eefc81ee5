"""NCCL's simple-tree factor (tuning.cc, 2.18.3 on; from 2.26 on the communicator's largest
pattern): ``if (a == NCCL_ALGO_TREE && comm->maxTreePattern == NCCL_TOPO_PATTERN_TREE)
busBw *= .85``, after the tree's own factor, its protocol's share and every cap. search.cc gives the tree graph that pattern where a node
holds one GPU of the communicator (``if (ngpus == 1 && graph->pattern !=
NCCL_TOPO_PATTERN_RING) graph->pattern = NCCL_TOPO_PATTERN_TREE``); a node of eight keeps the
balanced tree's bandwidth. The figures below are worked out by hand from tuning.cc's
constants on an Ampere machine (200 GB/s NVLink, 20 GB/s NICs) at 1 GiB, past the size
correction's last entry."""

from __future__ import annotations

import pytest

from simpy_astra.engine.nccl_tuning import Links, Shape, protocol_gb_s

LINKS = Links(200.0, 20.0, False)  # 32 channels: no cap binds below
GIB = 1 << 30


def test_one_gpu_a_node_runs_the_simple_tree_at_085():
    """Two nodes, one GPU each: the tree graph's bwIntra is twice the NIC (40 GB/s), x 0.92,
    x 1/2 (NCCL's tree ratio) = 18.4 GB/s, x 0.85 = 15.64; LL 18.4 / 3.8 (under its 39 x 1/2
    ceiling) x 0.85; LL128 18.4 x 120/128 x 0.85."""
    shape = Shape(2, 2, 1)
    simple = 0.5 * 0.92 * 40.0
    got = [protocol_gb_s(LINKS, shape, "tree", p, GIB, 1.0) for p in range(3)]
    assert got == pytest.approx([simple / 3.8 * 0.85, simple * 120 / 128 * 0.85, simple * 0.85])


def test_eight_gpus_a_node_keep_the_balanced_trees_bandwidth():
    """Two nodes of eight GPUs and eight NICs: min(NVLink 200, 8 x 20 x 2) x 0.92 x 1/2 = 92.0
    GB/s, no 0.85."""
    assert protocol_gb_s(LINKS, Shape(16, 2, 8), "tree", 2, GIB, 1.0) == pytest.approx(92.0)


def test_the_factor_comes_after_the_cap_per_channel():
    """One channel: Ampere's tree cap on two nodes (23.6 GB/s) binds under 0.92 x 40 = 36.8, so
    the bus bandwidth is 23.6 x 1/2 x 0.85 = 10.03 GB/s (0.85 before the cap would leave 11.8)."""
    one_channel = Links(200.0, 20.0, False, channels=1)
    assert protocol_gb_s(one_channel, Shape(2, 2, 1), "tree", 2, GIB, 1.0) == pytest.approx(10.03)
