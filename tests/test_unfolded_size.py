"""A generated run that cannot fold simulates every GPU: at 16,384 GPUs a step's traces hold
tens of millions of nodes, which filled 24 GB of memory and 6.6 GB of trace cache over eight
minutes before the machine killed it. It is refused before its traces are written, naming
why it does not fold."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.folding import run as folding_run

#: tp 2 with sequence parallelism and two stages, 16 micro-batches a replica: thousands of
#: nodes a GPU (its tensor-parallel exchanges are nodes of their own, per layer and micro-batch)
ARGS = ("--num-layers 32 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 "
        "--micro-batch-size 1 --global-batch-size 65536 --pipeline-model-parallel-size 2 "
        "--tensor-model-parallel-size 2 --sequence-parallel --bf16")


def _scenario(tmp_path: Path, cluster: dict, **fields) -> str:
    path = tmp_path / "s.yaml"
    doc = {"workload": {"generate": "megatron", "args": ARGS},
           "cluster": {"preset": "dgx-h100", "gpus": 16384, **cluster}, **fields}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.mark.parametrize(("cluster", "fields", "why"), [
    ({"nodes_per_leaf": 32, "oversubscription": 2}, {}, "cluster.oversubscription 2:1 over leaves of 32 nodes"),
    ({}, {"fold_symmetry": False}, "fold_symmetry: false"),
])
def test_a_run_too_large_to_simulate_unfolded_is_refused_before_its_traces_are_written(
        tmp_path, capsys, monkeypatch, cluster, fields, why):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    assert main(["run", _scenario(tmp_path, cluster, **fields)]) == 2
    err = capsys.readouterr().err
    assert "s.yaml: workload: the run would simulate 16,384 of 16,384 NPUs" in err and why in err
    nodes_one = int(err.split(" for one NPU")[0].rsplit("(", 1)[1].replace(",", ""))
    # the estimate is one GPU's trace times the GPUs: far past the bound, and derived so
    assert f"about {nodes_one * 16384:,} trace nodes" in err and nodes_one * 16384 > folding_run.MAX_SIMULATED_NODES
    written = list((tmp_path / "cache").rglob("*.et"))
    assert len(written) == 1  # one GPU's trace to measure, not 16,384


def test_the_same_job_folded_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    assert main(["run", _scenario(tmp_path, {}), "--quiet"]) == 0
    assert len(list((tmp_path / "cache").rglob("*.et"))) < 16  # the representatives only
