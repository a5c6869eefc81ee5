"""The shipped scenarios run, and show what they were written to show."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.config.scenario import load_scenario
from simpy_astra.simulation import Simulation

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def finish_times(name: str, backend: str) -> set[int]:
    inputs = load_scenario(str(SCENARIOS / f"{name}.yaml"), backend=backend)
    return {r.finished_cycles for r in Simulation(inputs).run()}


def test_mesh_all_to_all_is_slower_when_links_are_shared() -> None:
    unaware = max(finish_times("mesh2d_xy_all_to_all", "congestion_unaware"))
    aware = max(finish_times("mesh2d_xy_all_to_all", "congestion_aware"))
    assert aware > unaware


def test_fat_tree_ecmp_spreads_what_shortest_path_piles_on_one_spine(tmp_path: Path) -> None:
    unaware = max(finish_times("fat_tree_all_to_all", "congestion_unaware"))
    ecmp = max(finish_times("fat_tree_all_to_all", "congestion_aware"))
    text = (SCENARIOS / "fat_tree_all_to_all.yaml").read_text()
    one_spine = tmp_path / "one_spine.yaml"
    one_spine.write_text(text.replace("routing: ecmp", "routing: shortest_path")
                         .replace("workload: workloads/", f"workload: {SCENARIOS}/workloads/"))
    inputs = load_scenario(str(one_spine), backend="congestion_aware")
    sim = Simulation(inputs)
    shortest = max(r.finished_cycles for r in sim.run())
    assert unaware < ecmp < shortest
    # every cross-leaf byte crossed spine0; spine1 carried nothing
    spine_bytes = {(s.src, s.dst): s.bytes for s in sim.network.link_stats() if "spine" in f"{s.src}{s.dst}"}
    assert all(b == 0 for (u, v), b in spine_bytes.items() if "spine1" in (u, v))
    # leaf0's 4 NPUs each send a 256 KiB share (4 MiB / 16) to each of the 12 NPUs elsewhere
    assert spine_bytes[("leaf0", "spine0")] == 4 * 12 * (4 << 20) // 16


def test_torus_ring_all_reduce_has_no_contention() -> None:
    # every ring phase only talks to the next NPU of its dimension, one chunk at a time, so no
    # two messages ever share a link: both backends charge one hop per message
    unaware = finish_times("torus3d_all_reduce", "congestion_unaware")
    assert finish_times("torus3d_all_reduce", "congestion_aware") == unaware
    assert len(unaware) == 1


@pytest.mark.parametrize("name", ["default"])
def test_default_scenario_runs_on_both_backends(name: str) -> None:
    assert finish_times(name, "congestion_unaware") == finish_times(name, "congestion_aware")


def test_two_llm_jobs_on_a_fat_tree_share_the_spine_and_slow_each_other_down() -> None:
    # Strided placement puts both jobs under every leaf and shortest_path routes every
    # cross-leaf byte through spine0, so each leaf's uplink carries both jobs' bytes, half
    # each (the jobs are the same model); on the packet backend that costs each job time.
    from simpy_astra.report.isolation import finish_alone
    from simpy_astra.running.jobs import job_results

    inputs = load_scenario(str(SCENARIOS / "two_llm_jobs_fat_tree.yaml"))
    sim = Simulation(inputs)
    jobs = job_results(sim.jobs, sim.run())
    assert [j.npus for j in jobs] == [tuple(range(0, 16, 2)), tuple(range(1, 16, 2))]
    up = sim.link_bytes_by_job.by_label()[("leaf0", "spine0")]
    assert up["a"] == up["b"] > 0
    for job, spec in zip(jobs, sim.jobs, strict=True):
        job.alone_cycles = finish_alone(inputs, spec)
        assert job.slowdown > 1.2
