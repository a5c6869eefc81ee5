"""Compute-communication overlap when an NPU also runs CPU ops (Megatron's host batch fetch).

ASTRA-sim computes its overlap (GPU + Comm - wall) only when GPU and communication are the
only categories (ASTRA_SEMANTICS.md 4.6, item 17): with a CPU node it prints no overlap line,
and neither do we. Our own reports (the NPU table, --json-out) show the time a GPU op and a
communication op both run, |GPU n Comm| = GPU + Comm - |GPU u Comm|, which is the reference's
figure whenever GPU and communication fill the wall, and never print "not computed" as 0."""

from __future__ import annotations

import json
from pathlib import Path

from simpy_astra.cli.main import main
from simpy_astra.config.scenario import load_scenario
from simpy_astra.engine.statistics import COMM, CPU, GPU, NpuStatistics, build_report
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE, COMP_NODE

GPU_NS, CPU_NS = 10_000, 5_000
SIZE_BYTES = 64 << 20  # an all-reduce far longer than the GPU op: 2 x 64 MiB at 50 GB/s is ~1.3 ms


def _scenario(folder: Path, cpu: bool) -> Path:
    """Per NPU: a GPU op and an all-reduce issued together at 0, then (``cpu``) a CPU op after both.
    The all-reduce outlasts the GPU op, so they overlap for exactly the GPU op's GPU_NS."""
    for rank in range(2):
        nodes = [make_node(0, "gpu", COMP_NODE, duration_micros=GPU_NS // 1000),
                 make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": 0, "comm_size": SIZE_BYTES,
                                                           "is_cpu_op": False})]
        if cpu:
            nodes.append(make_node(2, "host", COMP_NODE, deps=[0, 1], duration_micros=CPU_NS // 1000,
                                   attrs={"is_cpu_op": True}))
        write_et(str(folder / f"w.{rank}.et"), nodes)
    path = folder / "s.yaml"
    path.write_text(f"workload: {folder / 'w'}\nsystem: {{preferred-dataset-splits: 1, all-reduce-implementation: [ring]}}\n"
                    "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n")
    return path


def _reports(path: Path) -> list:
    return Simulation(load_scenario(str(path))).run()


def test_a_cpu_op_leaves_the_reference_line_out_and_our_overlap_is_the_gpu_op(tmp_path: Path) -> None:
    r = _reports(_scenario(tmp_path, cpu=True))[0]
    assert r.times[CPU] == CPU_NS and r.times[GPU] == GPU_NS and r.times[COMM] > GPU_NS
    assert r.overlap is None  # the reference's figure: not computed with a CPU category
    assert not any("overlap" in line for line in r.lines())
    assert r.comp_comm_overlap_ns == GPU_NS
    # the reference's formula over this wall would have charged the CPU op against the overlap
    assert r.times[GPU] + r.times[COMM] - r.wall_time == GPU_NS - CPU_NS


def test_without_the_cpu_op_ours_is_the_reference_figure(tmp_path: Path) -> None:
    r = _reports(_scenario(tmp_path, cpu=False))[0]
    assert r.overlap == r.comp_comm_overlap_ns == GPU_NS
    assert f"sys[0], Total compute-communication overlap: {GPU_NS}" in r.lines()


def test_the_table_and_json_show_the_overlap_of_a_run_with_cpu_ops(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(_scenario(tmp_path, cpu=True)), "--json-out", "f.json"]) == 0
    captured = capsys.readouterr()
    out = (captured.out + captured.err).splitlines()
    header = next(line for line in out if "overlap (ns)" in line)
    row = next(line for line in out[out.index(header):] if line.split()[:1] == ["0"])
    assert row.split()[5] == f"{GPU_NS:,}"
    npu = json.loads(Path("f.json").read_text())["npus"]["0"]
    assert npu["comp_comm_overlap_ns"] == npu["comp_comm_overlap"] == GPU_NS


def test_closed_form_intervals_with_cpu_between() -> None:
    # GPU [0, 100]; Comm [50, 80] and [150, 250]; CPU [100, 150]: they meet for 30 ns only
    stats = NpuStatistics(0, intervals={GPU: [(0, 100)], COMM: [(50, 80), (150, 250)], CPU: [(100, 150)]},
                          wall_ns=250)
    r = build_report(stats, 250, 100, False, None)
    assert r.overlap is None and r.comp_comm_overlap_ns == 30
    assert r.for_npu(5).comp_comm_overlap_ns == 30


def test_nothing_to_overlap_is_a_true_zero() -> None:
    r = build_report(NpuStatistics(0, intervals={GPU: [(0, 100)], CPU: [(100, 150)]}, wall_ns=150),
                     150, 100, False, None)
    assert r.overlap is None and r.comp_comm_overlap_ns == 0
