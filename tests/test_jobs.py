"""Several jobs on one network, and NPUs that differ (issue 31), against hand-derived figures.

Rules used below (the same as tests/test_closed_forms.py and tests/test_packet_fabric.py):
network bandwidth B in GiB/s (2^30 bytes), endpoint delay E per message, reduction delay
R = 3 x trunc(s / local-mem-bw) with GB = 1e9 bytes. A ring all-reduce of one chunk on n
NPUs whose messages of s bytes each take d takes E + 2(n-1)(d + E) + (n-1)R. The
congestion-aware backend stores and forwards: a message crossing h free links takes
h(L + s/B). The packet backend pipelines: h L + (h-1) P/B + s/b when the message moves at
rate b (its head packet crosses each earlier hop whole, at the link's speed), where a port
with two busy inputs gives each b = B/2 (round robin over inputs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.config.scenario import load_scenario
from simpy_astra.network.packet import DEFAULT_PACKET_SIZE_BYTES
from simpy_astra.report.isolation import finish_alone
from simpy_astra.running.jobs import job_results
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import ALL_REDUCE, COMM_COLL_NODE, COMP_NODE
from tests.sim_helpers import BASE_SYSTEM
from tests.wrapped_lines import plain

E = 10
L = 500.0
GBPS = 50.0
P = DEFAULT_PACKET_SIZE_BYTES
MSG = 4 << 20  # 4 MiB: s/B = 78125 ns exactly at 50 GiB/s
SIZE = 4 * MSG  # a 4-rank ring all-reduce of one chunk sends MSG-byte messages


def bytes_per_ns(gbps: float) -> float:
    return gbps * 2**30 / 1e9


def reduce_ns(size: int, local_mem_gbps: float = 50.0) -> int:
    return 3 * int(size / (local_mem_gbps * 1e9) * 1e9)


def ring_all_reduce_ns(n: int, d: float, msg: int = MSG) -> float:
    return E + 2 * (n - 1) * (d + E) + (n - 1) * reduce_ns(msg)


def all_reduce(size: int = SIZE, node_id: int = 1, deps=()) -> object:
    return make_node(node_id, "ar", COMM_COLL_NODE, deps=list(deps), attrs={"comm_type": ALL_REDUCE, "comm_size": size})


def write_workload(tmp: Path, name: str, ranks: list[list]) -> str:
    """One ET file per rank under ``tmp/name``; returns the prefix."""
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    for rank, nodes in enumerate(ranks):
        write_et(str(folder / f"w.{rank}.et"), nodes)
    return str(folder / "w")


def scenario(tmp: Path, jobs: list[dict], topology: str = "Switch", npus: int = 8,
             backend: str = "congestion_aware", system: dict | None = None, name: str = "s.yaml") -> str:
    doc = {"network": {"topology": [topology], "npus_count": [npus], "bandwidth": [GBPS], "latency": [L]},
           "backend": backend, "system": system or BASE_SYSTEM, "jobs": jobs}
    path = tmp / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def run(path: str, backend: str | None = None) -> tuple[dict[str, int], Simulation]:
    """Run a scenario; returns each job's finish (ns) and the simulation."""
    sim = Simulation(load_scenario(path, backend))
    reports = sim.run()
    return {j.name: j.finished_cycles for j in job_results(sim.jobs, reports)}, sim


def two_ring_jobs(tmp: Path, npus_a: list[int], npus_b: list[int], **kw) -> str:
    a = write_workload(tmp, "a", [[all_reduce()]] * 4)
    b = write_workload(tmp, "b", [[all_reduce()]] * 4)
    return scenario(tmp, [{"name": "a", "workload": a, "npus": npus_a},
                          {"name": "b", "workload": b, "npus": npus_b}], **kw)


# ------------------------------------------------------------------------------ no shared link
def test_disjoint_jobs_on_a_switch_each_finish_exactly_as_alone(tmp_path: Path) -> None:
    # Jobs on NPUs 0-3 and 4-7 of a switch share no link (each NPU has its own up- and
    # downlink). Store-and-forward, 2 hops: d = 2(L + s/B) = 2(500 + 78125) = 157250;
    # T = 10 + 6(157250 + 10) + 3 * 3 * 83886 = 1698544 for both, shared or alone.
    path = two_ring_jobs(tmp_path, [0, 1, 2, 3], [4, 5, 6, 7])
    finish, sim = run(path)
    expected = ring_all_reduce_ns(4, 2 * (L + MSG / bytes_per_ns(GBPS)))
    assert expected == 1698544
    assert finish == {"a": expected, "b": expected}
    for job in sim.jobs:  # the cross-check the issue asks for: run alone on the same network
        assert finish_alone(sim.inputs, job) == expected
    # every byte on a link is one job's: the split adds up to the link's total
    stats = {(s.src, s.dst): s.bytes for s in sim.network.link_stats()}
    by_job = sim.link_bytes_by_job.by_label()
    assert by_job and all(sum(c.values()) == stats[link] for link, c in by_job.items())
    assert all(list(c) == (["a"] if min(link[0], link[1]) < 4 else ["b"]) for link, c in by_job.items())


def test_disjoint_jobs_on_the_packet_backend_finish_as_alone(tmp_path: Path) -> None:
    # Pipelined over 2 free hops: d = 2L + s/B + P/B (delivery rounded up to a whole ns).
    path = two_ring_jobs(tmp_path, [0, 1, 2, 3], [4, 5, 6, 7], backend="packet")
    finish, sim = run(path)
    b = bytes_per_ns(GBPS)
    expected = ring_all_reduce_ns(4, 2 * L + MSG / b + P / b)
    assert finish["a"] == finish["b"] == finish_alone(sim.inputs, sim.jobs[0])
    assert expected <= finish["a"] <= expected + 6 * 2  # at most 1 ns of rounding per hop


# ------------------------------------------------------------------------------ shared links
def test_interleaved_rings_share_every_link_and_take_the_derived_longer_time(tmp_path: Path) -> None:
    # An 8-NPU ring; job a on the even NPUs, b on the odd ones; each a 4-rank ring all-reduce
    # sending rank r -> r+1, i.e. NPU p -> p+2 over the two clockwise links p -> p+1 -> p+2.
    # Every clockwise link carries one message of each job in every step: at NPU p+1 the
    # port to p+2 serves its transit input (from p) and its own injection round robin, so
    # each message moves at B/2 on both hops: d_shared = 2L + P/B + s/(B/2). Alone each
    # link carries one message: d_alone = 2L + P/B + s/B.
    path = two_ring_jobs(tmp_path, [0, 2, 4, 6], [1, 3, 5, 7], topology="Ring", backend="packet")
    finish, sim = run(path)
    half = bytes_per_ns(GBPS) / 2
    shared = ring_all_reduce_ns(4, 2 * L + MSG / half + P / (2 * half))
    alone = ring_all_reduce_ns(4, 2 * L + MSG / (2 * half) + P / (2 * half))
    assert finish["a"] == finish["b"]
    assert shared <= finish["a"] <= shared + 6 * 2
    assert alone <= finish_alone(sim.inputs, sim.jobs[0]) <= alone + 6 * 2
    stats = {(s.src, s.dst): s for s in sim.network.link_stats()}
    by_job = sim.link_bytes_by_job.by_label()
    for p in range(8):  # both jobs on every clockwise link, 2(n-1) messages each
        assert by_job[(p, (p + 1) % 8)] == {"a": 6 * MSG, "b": 6 * MSG}
        assert stats[(p, (p + 1) % 8)].bytes == 12 * MSG


def test_interleaved_rings_on_the_aware_backend_take_turns_on_each_link(tmp_path: Path) -> None:
    # Store-and-forward: in each step link p -> p+1 carries the message injected at p for
    # its first hop during [t, t + L + s/B] and the other job's message (from p-1) for its
    # second hop during [t + L + s/B, t + 2(L + s/B)]: they take turns and never queue, so
    # both jobs finish exactly as alone, d = 2(L + s/B), though every link carries both.
    path = two_ring_jobs(tmp_path, [0, 2, 4, 6], [1, 3, 5, 7], topology="Ring")
    finish, sim = run(path)
    alone = ring_all_reduce_ns(4, 2 * (L + MSG / bytes_per_ns(GBPS)))
    assert finish == {"a": alone, "b": alone}
    assert finish_alone(sim.inputs, sim.jobs[0]) == alone
    assert sim.link_bytes_by_job.by_label()[(0, 1)] == {"a": 6 * MSG, "b": 6 * MSG}


def test_the_unaware_backend_says_once_that_jobs_do_not_interfere(tmp_path: Path, capsys) -> None:
    path = two_ring_jobs(tmp_path, [0, 2, 4, 6], [1, 3, 5, 7], topology="Ring", backend="congestion_unaware")
    finish, sim = run(path)
    assert finish["a"] == finish["b"] == finish_alone(sim.inputs, sim.jobs[0])
    assert sum("do not interfere" in w for w in sim.warnings) == 1
    assert main(["run", path, "--quiet"]) == 0
    err = plain(capsys.readouterr().err)  # its warning wrapped within the pipe's width: one line again
    assert err.count("do not interfere") == 1
    assert "symmetry folding is off" not in err  # --quiet: warnings, not notes (test_console_round4)


# ------------------------------------------------------------------------------ NPUs that differ
def test_data_parallel_step_finishes_when_the_slow_group_allows(tmp_path: Path) -> None:
    # Four NPUs, each computing num_ops FLOPs (roofline, compute-bound: intensity 1e12) then
    # a ring all-reduce on the 4-NPU ring. NPUs 0-1 run at 1000 TFLOP/s, 2-3 at 250.
    # Compute: trunc(num_ops / peak * 1e9). Each NPU's k-th send waits for its predecessor's
    # (k-1)-th message, so the chain into any NPU's last receive starts at a slow NPU's first
    # send: finish = slow compute + T (T the all-reduce alone, d = trunc(L + s/B) on the ring).
    num_ops = 10**12
    node = [make_node(0, "gemm", COMP_NODE, attrs={"num_ops": num_ops, "tensor_size": 1}), all_reduce(deps=[0])]
    system = dict(BASE_SYSTEM, **{"roofline-enabled": 1, "peak-perf": 1000, "npu-groups": [
        {"npus": [0, 1], "peak-perf": 1000}, {"npus": [2, 3], "peak-perf": 250, "memory-capacity": 80e9}]})
    prefix = write_workload(tmp_path, "dp", [node] * 4)
    path = tmp_path / "dp.yaml"
    path.write_text(yaml.safe_dump({
        "workload": prefix, "system": system, "backend": "congestion_unaware",
        "network": {"topology": ["Ring"], "npus_count": [4], "bandwidth": [GBPS], "latency": [L]}}))
    sim = Simulation(load_scenario(str(path)))
    reports = {r.npu_id: r for r in sim.run()}
    slow = int(num_ops / 250e12 * 1e9)
    fast = int(num_ops / 1000e12 * 1e9)
    assert (slow, fast) == (4_000_000, 1_000_000)
    total = slow + ring_all_reduce_ns(4, int(L + MSG / bytes_per_ns(GBPS)))
    assert max(r.finished_cycles for r in reports.values()) == total
    assert sim.npu(0).services.peak_flops == 1000e12 and sim.npu(3).services.peak_flops == 250e12
    assert sim.system_config.memory_capacity_of(2) == 80e9
    assert sim.folding is None  # NPUs that differ are not folded


def test_a_straggler_composes_with_npu_groups(tmp_path: Path) -> None:
    # NPU 0 (fast group) slowed 8x from t=0 computes in 8 x 1 ms = the slow group's 4 ms x 2:
    # it, not the slow group, now gates the step: finish = 8 ms + T.
    num_ops = 10**12
    node = [make_node(0, "gemm", COMP_NODE, attrs={"num_ops": num_ops, "tensor_size": 1}), all_reduce(deps=[0])]
    system = dict(BASE_SYSTEM, **{"roofline-enabled": 1, "peak-perf": 1000, "npu-groups": [
        {"npus": [2, 3], "peak-perf": 250}]})
    prefix = write_workload(tmp_path, "dp", [node] * 4)
    path = tmp_path / "dp.yaml"
    path.write_text(yaml.safe_dump({
        "workload": prefix, "system": system,
        "network": {"topology": ["Ring"], "npus_count": [4], "bandwidth": [GBPS], "latency": [L]}}))
    sim = Simulation(load_scenario(str(path)))
    sim.npu(0).slow_down(8.0)
    reports = sim.run()
    fast = int(num_ops / 1000e12 * 1e9)
    assert max(r.finished_cycles for r in reports) == int(fast * 8.0) + ring_all_reduce_ns(
        4, int(L + MSG / bytes_per_ns(GBPS)))


# ------------------------------------------------------------------------------ placement, reports
@pytest.mark.parametrize("placement, seed, expected_a, expected_b", [
    ("contiguous", None, [0, 1, 2, 3], [4, 5, 6, 7]),
    ("strided", None, [0, 2, 4, 6], [1, 3, 5, 7]),
])
def test_placements(tmp_path: Path, placement: str, seed, expected_a, expected_b) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    jobs = [{"name": "a", "workload": a, "placement": placement},
            {"name": "b", "workload": a, "placement": placement}]
    inputs = load_scenario(scenario(tmp_path, jobs))
    assert [list(j.npus) for j in inputs.jobs] == [expected_a, expected_b]


def test_random_placement_is_reproducible_and_disjoint(tmp_path: Path) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    jobs = [{"name": "a", "workload": a, "placement": "random", "seed": 7},
            {"name": "b", "workload": a, "placement": "random", "seed": 7}]
    first = [j.npus for j in load_scenario(scenario(tmp_path, jobs)).jobs]
    again = [j.npus for j in load_scenario(scenario(tmp_path, jobs, name="t.yaml")).jobs]
    assert first == again
    assert sorted(first[0] + first[1]) == list(range(8))


def test_job_lines_json_and_isolation(tmp_path: Path, capsys) -> None:
    path = two_ring_jobs(tmp_path, [0, 2, 4, 6], [1, 3, 5, 7], topology="Ring", backend="packet")
    out = tmp_path / "f.json"
    assert main(["run", path, "--reference-lines", "--quiet", "--isolation", "--json-out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    finish = json.loads(out.read_text())["jobs"]
    assert lines[-2:] == [f"job a finished, {finish['a']['finished_cycles']} cycles",
                          f"job b finished, {finish['b']['finished_cycles']} cycles"]
    assert all(line.startswith("sys[") for line in lines[:-2])
    for job in finish.values():
        assert job["slowdown"] == round(job["finished_cycles"] / job["alone_cycles"], 6)
        # the closed forms of the interleaved-rings test: shared / alone
        half = bytes_per_ns(GBPS) / 2
        shared = ring_all_reduce_ns(4, 2 * L + MSG / half + P / (2 * half))
        alone = ring_all_reduce_ns(4, 2 * L + MSG / (2 * half) + P / (2 * half))
        assert job["slowdown"] == pytest.approx(shared / alone, abs=1e-4)
    links = json.loads(out.read_text())["links"]
    assert all(sum(rec["bytes_by_job"].values()) == rec["bytes"] for rec in links)


def test_a_late_job_starts_at_start_ns(tmp_path: Path) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    path = scenario(tmp_path, [{"name": "a", "workload": a, "npus": [0, 1, 2, 3]},
                               {"name": "b", "workload": a, "npus": [4, 5, 6, 7], "start_ns": 1_000_000}])
    finish, sim = run(path)
    assert finish["b"] == finish["a"] + 1_000_000
    assert finish_alone(sim.inputs, sim.jobs[1]) == finish["b"]


def test_a_job_with_its_own_system_and_generated_workload(tmp_path: Path) -> None:
    # Job b reduces at 100 GB/s (its own system), a at 50; b's ranks keep their own numbering
    # on NPUs 7, 6, 5, 4 (rank 0 on NPU 7).
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    system_b = dict(BASE_SYSTEM, **{"local-mem-bw": 100})
    path = scenario(tmp_path, [
        {"name": "a", "workload": a, "npus": [0, 1, 2, 3]},
        {"name": "b", "workload": {"generate": "microbench", "collective": "all_reduce", "size": SIZE,
                                   "num_npus": 4}, "npus": [7, 6, 5, 4], "system": system_b}])
    finish, sim = run(path)
    d = 2 * (L + MSG / bytes_per_ns(GBPS))
    assert finish["a"] == ring_all_reduce_ns(4, d)
    assert finish["b"] == E + 6 * (d + E) + 3 * reduce_ns(MSG, 100)
    assert sim.npu(7).npu_id == 0 and sim.npu(7).job == "b"


# ------------------------------------------------------------------------------ bad inputs
def _error(capsys, path: str) -> str:
    assert main(["run", path, "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_overlapping_jobs_name_both_and_the_npu(tmp_path: Path, capsys) -> None:
    path = two_ring_jobs(tmp_path, [0, 1, 2, 3], [3, 4, 5, 6])
    assert _error(capsys, path).endswith("jobs[1].npus: NPU 3 is already used by job 'a'; jobs 'a' and 'b' overlap")


@pytest.mark.parametrize("jobs_edit, expected", [
    (lambda j: j[1].update(npus=[4, 5, 6]), "jobs[1].npus: lists 3 NPUs but jobs[1].workload"),
    (lambda j: j[1].update(npus=[4, 5, 6, 8]), "jobs[1].npus: NPU 8 does not exist (the network has NPUs 0..7)"),
    (lambda j: (j[1].pop("npus"), j[1].update(placement="diagonal")),
     "jobs[1].placement: must be one of contiguous, strided, random (got 'diagonal')"),
    (lambda j: j[1].update(name="a"), "jobs[1].name: 'a' is also the name of jobs[0]"),
    (lambda j: j[1].update(placement="strided"), "jobs[1]: give npus or placement, not both"),
    (lambda j: j[0].update(start_ns=-1), "jobs[0].start_ns: must be a number of ns >= 0 (got -1)"),
    # the clock ticks in whole ns: 1.5 started the job at 1 without a word
    (lambda j: j[1].update(start_ns=1.5), "jobs[1].start_ns: must be a whole number of ns (the clock ticks in ns; "
                                          "got 1.5); write 1 or 2"),
])
def test_bad_jobs_are_one_line_errors(tmp_path: Path, capsys, jobs_edit, expected) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    jobs = [{"name": "a", "workload": a, "npus": [0, 1, 2, 3]}, {"name": "b", "workload": a, "npus": [4, 5, 6, 7]}]
    jobs_edit(jobs)
    assert expected in _error(capsys, scenario(tmp_path, jobs))


def test_workload_and_jobs_together_is_an_error(tmp_path: Path, capsys) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    path = scenario(tmp_path, [{"name": "a", "workload": a}])
    doc = yaml.safe_load(Path(path).read_text())
    doc["workload"] = a
    Path(path).write_text(yaml.safe_dump(doc))
    assert "jobs: give either workload (one job) or jobs (several), not both" in _error(capsys, path)


@pytest.mark.parametrize("groups, expected", [
    ([{"npus": [0, 1], "local-mem-bw": 50}, {"npus": [1, 2], "local-mem-bw": 50}],
     "npu-groups[1].npus' names NPU 1, which npu-groups[0] also names"),
    ([{"npus": [0, 9], "local-mem-bw": 50}], "npu-groups[0].npus' names NPU 9, but the network has NPUs 0..7"),
    ([{"npus": [0], "peak-prf": 3}], "npu-groups[0].peak-prf' is not an npu-groups key"),
])
def test_bad_npu_groups_are_one_line_errors(tmp_path: Path, capsys, groups, expected) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 8)
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({
        "workload": a, "system": dict(BASE_SYSTEM, **{"npu-groups": groups}),
        "network": {"topology": ["Ring"], "npus_count": [8], "bandwidth": [GBPS], "latency": [L]}}))
    assert expected in _error(capsys, str(path))


# ------------------------------------------------------------------------------ sweeps
def test_job_placement_and_npu_groups_are_sweep_axes(tmp_path: Path) -> None:
    # Axes index into lists: jobs.1.placement places job b (a takes NPUs 0-3 first, so b is
    # on 4-7 contiguous, or on 4 of them at random); system.npu-groups.0.peak-perf re-times
    # the compute of NPUs 0-1 (job a's ranks 0-1). With b contiguous (no shared link on the
    # switch) the point finishes at trunc(1e12 / peak * 1e9) + T, T the aware all-reduce.
    from simpy_astra.sweep.point import run_point
    from simpy_astra.sweep.spec import load_sweep

    num_ops = 10**12
    node = [make_node(0, "gemm", COMP_NODE, attrs={"num_ops": num_ops, "tensor_size": 1}), all_reduce(deps=[0])]
    write_workload(tmp_path, "dp", [node] * 4)
    system = dict(BASE_SYSTEM, **{"roofline-enabled": 1, "peak-perf": 1000,
                                  "npu-groups": [{"npus": [0, 1], "peak-perf": 1000}]})
    base = {"network": {"topology": ["Switch"], "npus_count": [8], "bandwidth": [GBPS], "latency": [L]},
            "backend": "congestion_aware", "system": system,
            "jobs": [{"name": "a", "workload": "dp/w", "placement": "contiguous"},
                     {"name": "b", "workload": "dp/w", "placement": "contiguous"}]}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "base": "base.yaml",
        "axes": {"jobs.1.placement": ["contiguous", "random"], "system.npu-groups.0.peak-perf": [250, 1000]}}))
    points = load_sweep(str(tmp_path / "sweep.yaml")).points()
    assert len(points) == 4
    assert {p.scenario["jobs"][1]["placement"] for p in points} == {"contiguous", "random"}
    assert all(p.scenario["jobs"][0]["workload"] == str(tmp_path / "dp" / "w") for p in points)
    t_ar = ring_all_reduce_ns(4, 2 * (L + MSG / bytes_per_ns(GBPS)))
    for p in points:
        if p.scenario["jobs"][1]["placement"] != "contiguous":
            continue
        peak = p.coordinates["system.npu-groups.0.peak-perf"]
        row = run_point(p.scenario)
        assert row["status"] == "ok", row
        assert row["finish_ns"] == int(num_ops / (peak * 1e12) * 1e9) + t_ar


def test_a_sweep_index_past_a_list_is_an_input_error(tmp_path: Path) -> None:
    from simpy_astra.errors import InputError
    from simpy_astra.sweep.spec import set_path

    with pytest.raises(InputError, match=r"'jobs' is a list of 2, so 'jobs.2.npus' needs an index 0..1"):
        set_path({"jobs": [{}, {}]}, "jobs.2.npus", [0], "sweep.yaml: axes: jobs.2.npus")



def test_a_peak_over_the_groups_memory_capacity_is_a_warning(tmp_path: Path) -> None:
    # A tiny data-parallel transformer step with memory tracked: NPU 1's group has 1 byte of
    # memory, so its (positive) peak exceeds it; NPU 0's group has 1 TB and stays silent.
    system = dict(BASE_SYSTEM, **{"roofline-enabled": 1, "peak-perf": 100, "track-local-mem": 1,
                                  "local-mem-trace-filename": str(tmp_path / "mem"), "npu-groups": [
                                      {"npus": [0], "memory-capacity": 1e12}, {"npus": [1], "memory-capacity": 1}]})
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({
        "workload": {"generate": "transformer", "model": "llama", "dp": 2, "dmodel": 256, "dff": 512, "head": 4,
                     "kvhead": 4, "num_stacks": 1, "seq": 128, "batch": 2, "micro_batch": 2},
        "system": system, "network": {"topology": ["Ring"], "npus_count": [2], "bandwidth": [GBPS], "latency": [L]}}))
    sim = Simulation(load_scenario(str(path)), memory_traces=False)
    sim.run()
    over = [w for w in sim.warnings if "exceeds its memory-capacity" in w]
    assert len(over) == 1 and over[0].startswith("NPU 1: peak memory ")
    assert over[0].endswith("exceeds its memory-capacity 1 bytes (npu-groups in " + str(path) + ": system)")


def test_a_jobs_communicator_groups_are_in_its_own_ranks(tmp_path: Path) -> None:
    # Job b's group 1 is its ranks 0 and 1, which run on NPUs 5 and 4; ranks 2-3 compute
    # 5 us. A 2-rank ring all-reduce of 2 s bytes sends s-byte messages over 2 switch hops:
    # T = E + 2(d + E) + R, d = 2(L + s/B); job a (4 ranks, NPUs 0-3) is untouched by it.
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    grouped = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": 2 * MSG,
                                                       "pg_name": "1"})
    idle = make_node(1, "c", COMP_NODE, duration_micros=5)
    b = write_workload(tmp_path, "b", [[grouped], [grouped], [idle], [idle]])
    path = scenario(tmp_path, [{"name": "a", "workload": a, "npus": [0, 1, 2, 3]},
                               {"name": "b", "workload": b, "npus": [5, 4, 7, 6], "comm_groups": {"1": [0, 1]}}])
    finish, sim = run(path)
    d = 2 * (L + MSG / bytes_per_ns(GBPS))
    assert finish["b"] == E + 2 * (d + E) + reduce_ns(MSG)
    assert finish["a"] == ring_all_reduce_ns(4, d)
    by_job = sim.link_bytes_by_job.by_label()
    assert by_job[(5, 8)] == by_job[(4, 8)] == {"b": 2 * MSG}  # 2(n-1) messages up to switch 8
    assert (7, 8) not in by_job and (6, 8) not in by_job


def test_a_job_without_a_system_needs_the_scenarios(tmp_path: Path, capsys) -> None:
    a = write_workload(tmp_path, "a", [[all_reduce()]] * 4)
    path = scenario(tmp_path, [{"name": "a", "workload": a, "npus": [0, 1, 2, 3]}])
    doc = yaml.safe_load(Path(path).read_text())
    del doc["system"]
    Path(path).write_text(yaml.safe_dump(doc))
    assert "jobs[0].system: is missing, and the scenario has no system for it" in _error(capsys, path)


def test_a_stalled_job_is_reported_by_its_physical_npus(tmp_path: Path, capsys) -> None:
    # Job b's rank 0 (NPU 6) waits for a message its rank 1 never sends: exit 3, NPU 6 named.
    from simpy_astra.cli.main import EXIT_STALLED
    from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE

    a = write_workload(tmp_path, "a", [[all_reduce()]] * 2)
    recv = make_node(1, "recv", COMM_RECV_NODE, attrs={"comm_src": 1, "comm_size": 64, "comm_tag": 3})
    idle = make_node(1, "c", COMP_NODE, duration_micros=1)
    b = write_workload(tmp_path, "b", [[recv], [idle]])
    path = scenario(tmp_path, [{"name": "a", "workload": a, "npus": [0, 1]},
                               {"name": "b", "workload": b, "npus": [6, 7]}])
    assert main(["run", path, "--quiet"]) == EXIT_STALLED
    err = capsys.readouterr().err
    assert "NPU 6 " in err and "NPU 0 " not in err
