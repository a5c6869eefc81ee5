"""Small runs whose times are derived here by hand from the reference's rules.

Every expected value is computed in the test from first principles (bandwidth in GiB/s,
per-message truncation, endpoint delay E, reduction delay P = 3 x trunc(s / local-mem-bw)),
never read back from the simulator.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import (
    ALL_REDUCE,
    ALL_TO_ALL,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    REDUCE_SCATTER,
)
from tests.sim_helpers import net, run

E = 10


def bytes_per_ns(gbps: float) -> float:
    return gbps * 2**30 / 1e9


def delay(hops: int, latency: float, size: int, gbps: float) -> int:
    return int(hops * latency + size / bytes_per_ns(gbps))


def reduce_ns(size: int, local_mem_gbps: float) -> int:
    return 3 * int(size / (local_mem_gbps * 1e9) * 1e9)


def coll(kind: int, size: int, node_id: int = 1, deps=()) -> object:
    return make_node(node_id, "coll", COMM_COLL_NODE, deps=list(deps), attrs={"comm_type": kind, "comm_size": size})


def test_ring_all_reduce_matches_the_reference_regression(tmp_path: Path) -> None:
    # ASTRA-sim's regression test: 8-NPU ring, 1 MiB, 4 chunks, local-mem-bw 50 -> 117780
    n, size, splits = 8, 1 << 20, 4
    msg = size // splits // n
    chunk = E + 2 * (n - 1) * (delay(1, 500, msg, 50) + E) + (n - 1) * reduce_ns(msg, 50)
    reports = run(tmp_path, [[coll(ALL_REDUCE, size)]] * n, net("Ring", n),
                  {"preferred-dataset-splits": splits})
    assert splits * chunk == 117780
    for r in reports.values():
        assert r.finished_cycles == splits * chunk
        assert r.exposed_comm_cycles == splits * chunk


def test_ring_reduce_scatter(tmp_path: Path) -> None:
    n, size, splits = 4, 1 << 20, 4
    msg = size // splits // n
    chunk = E + (n - 1) * (delay(1, 500, msg, 50) + E + reduce_ns(msg, 1600))
    reports = run(tmp_path, [[coll(REDUCE_SCATTER, size)]] * n, net("Ring", n),
                  {"preferred-dataset-splits": splits, "local-mem-bw": 1600})
    assert {r.finished_cycles for r in reports.values()} == {splits * chunk} == {22240}


def test_active_chunks_run_in_waves(tmp_path: Path) -> None:
    n, size, splits, active = 4, 1 << 20, 4, 2
    msg = size // splits // n
    chunk = E + 2 * (n - 1) * (delay(1, 500, msg, 50) + E) + (n - 1) * reduce_ns(msg, 50)
    reports = run(tmp_path, [[coll(ALL_REDUCE, size)]] * n, net("Ring", n),
                  {"preferred-dataset-splits": splits, "active-chunks-per-dimension": active})
    assert {r.finished_cycles for r in reports.values()} == {-(-splits // active) * chunk}


def test_direct_all_to_all_on_fully_connected(tmp_path: Path) -> None:
    # all n-1 messages leave at E, each arrival costs E more: T = E + d + E
    n, size = 4, 1 << 20
    msg = size // n
    reports = run(tmp_path, [[coll(ALL_TO_ALL, size)]] * n, net("FullyConnected", n, 100, 20))
    assert {r.finished_cycles for r in reports.values()} == {E + delay(1, 20, msg, 100) + E}


def test_double_binary_tree_roots_finish_before_leaves(tmp_path: Path) -> None:
    # RootMax tree on 8: 7 -> 3 -> {1 -> {0, 2}, 5 -> {4, 6}}; H = 3 edges leaf to root
    n, size, h = 8, 1 << 16, 3
    d, p = delay(1, 20, size, 100), reduce_ns(size, 50)
    reports = run(tmp_path, [[coll(ALL_REDUCE, size)]] * n, net("FullyConnected", n, 100, 20),
                  {"all-reduce-implementation": ["doubleBinaryTree"]})
    assert reports[7].finished_cycles == E + h * (d + E + p)
    for leaf in (0, 2, 4, 6):
        assert reports[leaf].finished_cycles == 2 * h * d + (2 * h + 1) * E + (2 * h - 1) * p


def test_eager_send_and_late_receive(tmp_path: Path) -> None:
    size, lat, bw = 4096, 700.0, 25.0
    arrive = 3000 + delay(2, lat, size, bw)  # switch: two hops of latency, one serialisation
    send = make_node(2, "send", COMM_SEND_NODE, deps=[1],
                     attrs={"comm_dst": 1, "comm_size": size, "comm_tag": 7})
    recv = make_node(2, "recv", COMM_RECV_NODE, deps=[1],
                     attrs={"comm_src": 0, "comm_size": size, "comm_tag": 7})
    rank0 = [make_node(1, "c", COMP_NODE, duration_micros=3), send]
    rank1 = [make_node(1, "c", COMP_NODE, duration_micros=20), recv]  # posted after the arrival
    reports = run(tmp_path, [rank0, rank1], net("Switch", 2, bw, lat))
    assert reports[0].finished_cycles == arrive
    assert reports[0].exposed_comm_cycles == arrive - 3000
    assert reports[1].finished_cycles == 20000  # the receive completes 0 ns after it is posted
    assert reports[1].times["Comm"] == 0


def test_roofline_runtime_and_averages(tmp_path: Path) -> None:
    ops, tensor = 10**9, 10**6  # intensity 1000 FLOP/B: compute bound at 900 TFLOP/s
    comp = make_node(1, "gemm", COMP_NODE, attrs={"num_ops": ops, "tensor_size": tensor})
    reports = run(tmp_path, [[comp], [comp]], net("Switch", 2),
                  {"roofline-enabled": 1, "peak-perf": 900, "local-mem-bw": 3000})
    runtime = int(ops / min(3000e9 * (ops / tensor), 900e12) * 1e9)
    r = reports[0]
    assert r.finished_cycles == runtime == 1111
    assert r.exposed_comm_cycles == 0
    assert f"{r.roofline['compute_bound'] * 100:.3f}" == f"{100 * runtime / (runtime + 1):.3f}"
    assert f"{r.roofline['intensity']:.3f}" == f"{1000 * runtime / (runtime + 1):.3f}"


def test_peak_memory_from_tensor_lifetimes(tmp_path: Path) -> None:
    # t1 (1 KiB) lives [0, 2000], t2 (2 KiB) lives [1000, 3000]: both live at 1000 -> 3 KiB
    a = make_node(1, "a", COMP_NODE, duration_micros=1, attrs={"inputs": ("string_list", []), "outputs": ["t1", "1024"]})
    b = make_node(2, "b", COMP_NODE, deps=[1], duration_micros=1,
                  attrs={"inputs": ["t1", "1024"], "outputs": ["t2", "2048"]})
    c = make_node(3, "c", COMP_NODE, deps=[2], duration_micros=1, attrs={"inputs": ["t2", "2048"], "outputs": ("string_list", [])})
    reports = run(tmp_path, [[a, b, c], [a, b, c]], net("Switch", 2), {"track-local-mem": 1,
                  "local-mem-trace-filename": str(tmp_path / "trace")})
    assert reports[0].peak_memory == "3.00 KB"
    assert (tmp_path / "trace.0.json").exists()


def test_group_all_reduce_uses_a_local_ring(tmp_path: Path) -> None:
    # a 2-member group ring: E is hard-wired to 10 even when endpoint-delay says 1000
    size = 1 << 16
    msg = size // 2
    ar1, ar2 = (make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size,
                                                          "pg_name": g}) for g in ("1", "2"))
    reports = run(tmp_path, [[ar1], [ar2], [ar1], [ar2]], net("Ring", 4),
                  {"endpoint-delay": 1000}, groups={"1": [0, 2], "2": [1, 3]})
    d = delay(2, 500, msg, 50)  # members 0 and 2 are two hops apart on the 4-ring
    assert reports[0].finished_cycles == 10 + 2 * (d + 10) + reduce_ns(msg, 50)


def test_bidirectional_ring_closed_form(tmp_path: Path) -> None:
    # two concurrent ring all-reduces of S/2 each: per chunk E + 2(n-1)(d+E) + (n-1)P(S/2n)
    n, size, splits = 8, 1 << 20, 2
    msg = size // splits // (2 * n)
    chunk = E + 2 * (n - 1) * (delay(1, 500, msg, 50) + E) + (n - 1) * reduce_ns(msg, 50)
    reports = run(tmp_path, [[coll(ALL_REDUCE, size)]] * n, net("Ring", n),
                  {"preferred-dataset-splits": splits, "all-reduce-implementation": ["bidirectionalRing"]})
    assert {r.finished_cycles for r in reports.values()} == {splits * chunk}


def test_remote_memory_per_npu_and_pool(tmp_path: Path) -> None:
    # access = latency + trunc(bytes / (bytes per ns)); a pool serves one access at a time
    from simpy_astra.workloads.chakra.schema import MEM_LOAD_NODE

    load = make_node(1, "load", MEM_LOAD_NODE, attrs={"tensor_size": 1_000_003})
    access = 300 + 1_000_003 // 7
    (tmp_path / "a").mkdir()
    per_npu = run(tmp_path / "a", [[load], [load]],
                  net("Switch", 2), memory={"memory-type": "PER_NPU_MEMORY_EXPANSION",
                                            "remote-mem-latency": 300, "remote-mem-bw": 7.9})
    assert {r.finished_cycles for r in per_npu.values()} == {access}
    (tmp_path / "b").mkdir()
    pool = run(tmp_path / "b", [[load], [load]], net("Switch", 2),
               memory={"memory-type": "MEMORY_POOL", "remote-mem-latency": 300, "remote-mem-bw": 7})
    assert sorted(r.finished_cycles for r in pool.values()) == [access, 2 * access]


def test_replay_only_replays_communication_too(tmp_path: Path) -> None:
    # replay-only: every node takes duration_micros (comm included) and counts as GPU time
    comp = make_node(1, "c", COMP_NODE, duration_micros=4)
    ar = make_node(2, "ar", COMM_COLL_NODE, deps=[1], duration_micros=6,
                   attrs={"comm_type": ALL_REDUCE, "comm_size": 1 << 20})
    reports = run(tmp_path, [[comp, ar]] * 2, net("Switch", 2), {"replay-only": 1})
    assert {r.finished_cycles for r in reports.values()} == {10_000}
    assert {r.exposed_comm_cycles for r in reports.values()} == {0}


def test_groups_from_a_metadata_node(tmp_path: Path) -> None:
    # PyTorch-style metadata: inputs.values is the repr of a list holding a JSON string.
    # (The reference would stall here: the all-reduce is released by a zero-time METADATA node
    # with nothing else in flight; we issue it, see README "Where we differ".)
    from simpy_astra.workloads.chakra.schema import METADATA_NODE

    size = 1 << 16
    msg = size // 2
    groups = '[\'[{"pg_name": "1", "ranks": [0, 2]}, {"pg_name": "2", "ranks": [1, 3]}]\']'
    meta = make_node(1, "pg", METADATA_NODE, inputs_values=groups)
    ranks = []
    for pg in ("1", "2", "1", "2"):
        ar = make_node(2, "ar", COMM_COLL_NODE, deps=[1], attrs={"comm_type": ALL_REDUCE, "comm_size": size,
                                                                 "pg_name": pg})
        ranks.append([meta, ar])
    reports = run(tmp_path, ranks, net("Ring", 4), {"endpoint-delay": 1000})
    d = delay(2, 500, msg, 50)
    assert reports[0].finished_cycles == 10 + 2 * (d + 10) + reduce_ns(msg, 50)


def test_involved_dim_restricts_a_collective_to_some_dimensions(tmp_path: Path) -> None:
    # [Ring 4, Ring 2]: with involved_dim [true, false] only the 4-ring runs (one chunk)
    size = 1 << 16
    msg = size // 4
    ar = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size,
                                                  "involved_dim": [True, False]})
    network = {"topology": ["Ring", "Ring"], "npus_count": [4, 2], "bandwidth": [50.0, 25.0],
               "latency": [500.0, 900.0]}
    reports = run(tmp_path, [[ar]] * 8, network, {"all-reduce-implementation": ["ring", "ring"]})
    one_ring = E + 2 * 3 * (delay(1, 500, msg, 50) + E) + 3 * reduce_ns(msg, 50)
    assert {r.finished_cycles for r in reports.values()} == {one_ring}
