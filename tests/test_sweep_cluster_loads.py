"""A sweep loads each cluster its points name once as they are expanded: the point's Megatron
job (simpy_astra/sweep/point_job.py) and the test of points that run one step
(simpy_astra/sweep/same_run.py) read one load (simpy_astra/sweep/cluster_loads.py). Before, each
loaded it with a cache of its own, the second once per rank grid, and a cluster the loader
refuses was loaded again for every point."""

from __future__ import annotations

import csv
import re

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import megatron_sweep


@pytest.fixture
def clusters_loaded(monkeypatch):
    """Each cluster mapping the scenario loader's cluster loader was given, as it was given."""
    from simpy_astra.config import cluster

    loaded: list[dict] = []
    real = cluster.load_cluster
    monkeypatch.setattr(cluster, "load_cluster", lambda value, *a, **k: loaded.append(value) or real(value, *a, **k))
    return loaded


def test_expanding_loads_each_cluster_once_a_refused_one_too(tmp_path, clusters_loaded):
    # 3 tp values x 2 algorithms on A100 nodes: nvls is refused there (no NVSwitch-3), so its 3
    # points are invalid; 2 clusters, so 2 loads (10 before: ring once for the jobs and once a
    # rank grid for the alike points, nvls once a point for each)
    from simpy_astra.sweep.spec import load_sweep

    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4],
                                      "cluster.nccl_algo": ["ring", "nvls"]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16})
    points = load_sweep(sweep).points()
    assert len(points) == 6
    assert [p.coordinates["cluster.nccl_algo"] for p in points if p.megatron and p.megatron.invalid] == ["nvls"] * 3
    assert sorted(c["nccl_algo"] for c in clusters_loaded) == ["nvls", "ring"]


def test_a_refused_clusters_rule_names_each_point(tmp_path, capsys):
    # one load, its refusal worded for each point it refuses (the point's where, then the field)
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16, "nccl_algo": "nvls"})
    out_dir = tmp_path / "out"
    assert main(["sweep", sweep, "--out", str(out_dir), "--no-plots"]) != 0
    with open(out_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [row["status"] for row in rows] == ["invalid", "invalid"]
    said = [re.search(r"point (\S+): cluster\.nccl_algo: nvls, but ", row["error"]) for row in rows]
    assert [found and found[1] for found in said] == [f"workload.args.tensor-model-parallel-size={tp}" for tp in (1, 2)]
