"""Where a Megatron step's compute time goes: each kind of kernel (GEMMs, attention, memory-bound
element-wise kernels) is charged its own time in the breakdown, also where no collective
separates them (tensor parallelism 1), and the parts still add up to the step."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.steps import Compute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: two GPUs, two layers, two micro-batches a replica; Megatron's own layers (unfused attention: score
#: GEMMs, a softmax and a dropout over the s x s scores) so that every kind has a share
ARGS = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
        "--max-position-embeddings 1024 --micro-batch-size 1 --fp16 "
        "--vocab-size 1024 --transformer-impl local")


def _kinds_s(steps: list) -> dict[str, float]:
    out: dict[str, float] = {}
    for step in steps:
        if isinstance(step, Compute):
            for kind, seconds in step.seconds.items():
                out[kind] = out.get(kind, 0.0) + seconds
    return out


@pytest.mark.parametrize("tp", [1, 2])
def test_each_kind_of_kernel_is_charged_its_own_time(tmp_path, tp):
    """The breakdown's ``compute.gemm``, ``compute.attention`` and ``compute.elementwise`` are
    the layer model's kernel times of each kind (forward and backward of both micro-batches,
    the embedding and the loss included), to the microsecond a node: with one node for the
    kernels between two collectives, tp 1 charged its attention and element-wise kernels to
    the GEMMs (no ``compute.attention`` at all)."""
    args = ARGS + f" --tensor-model-parallel-size {tp} --global-batch-size {2 * (2 // tp)}"
    cluster = {"preset": "dgx-a100-80gb", "gpus": 2}
    job = parse(args, 2)
    model, layers = ChunkModel(job, load_cluster(cluster, "c").gpu_model()), job.chunk_kinds(0, 0)
    per_mb = _kinds_s(model.forward(layers, True, True) + model.backward(layers, True, True))
    want_ns = {kind: 2 * seconds * 1e9 for kind, seconds in per_mb.items()}  # two micro-batches

    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}))
    out = tmp_path / "out.json"
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--json-out", str(out), "--quiet"],
                   check=True, capture_output=True, env=env, cwd=ROOT)
    report = json.loads(out.read_text())
    parts = report["npus"]["0"]["breakdown_ns"]
    nodes = 400  # compute nodes of the step, far more than it has: each rounds to a microsecond
    for kind in ("gemm", "attention", "elementwise"):
        assert want_ns[kind] > 0.02 * sum(want_ns.values())  # every kind has a real share
        assert parts[f"compute.{kind}"] == pytest.approx(want_ns[kind], abs=nodes * 1000)
    assert sum(parts.values()) == report["iteration_time_ns"]
