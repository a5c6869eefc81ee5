"""ASTRA-sim's knobs beside a cluster: its preset's machine times every collective as NCCL
does, so a knob it never reads is refused naming the field, not run as if it had been set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main

ARGS = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
        "--global-batch-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16 "
        "--vocab-size 32000")


def _scenario(tmp_path: Path, **extra) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 32}, **extra}))
    return path


@pytest.mark.parametrize("field, value, words", [
    # an endpoint delay x 1000 and 16 queues a dimension left the step at 9,208,741 ns to the ns
    ("injection_scale", 1000.0, "endpoint-delay"),
    ("num_queues_per_dim", 16, "queues"),
    # the job's own communicator groups (tp, dp, pp) would be replaced by these
    ("comm_groups", {"1": [0, 1]}, "communicator groups"),
])
def test_an_astra_sim_knob_beside_a_cluster_is_refused(tmp_path, capsys, field, value, words):
    scenario = _scenario(tmp_path, **{field: value})
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {scenario}: field '{field}'"), err
    assert words in err[0] and "cluster" in err[0]


@pytest.mark.parametrize("field, value", [("injection_scale", 1.0), ("num_queues_per_dim", 1)])
def test_the_knobs_default_beside_a_cluster_runs(tmp_path, capsys, field, value):
    assert main(["run", str(_scenario(tmp_path, **{field: value})), "--quiet"]) == 0
