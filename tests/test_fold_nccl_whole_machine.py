"""A cluster preset's job whose communicator group is every GPU (tensor parallelism over one
whole node, data parallelism over all the GPUs) folds: NCCL times its all-reduces,
reduce-scatters and all-gathers by their members alone (:mod:`simpy_astra.engine.nccl_collectives`),
here every GPU, a set every translation maps onto itself, so the algorithms configured on
the network's dimensions, which such a group would otherwise run on, play no part. Such jobs
were run unfolded ("collectives on the network's dimensions use an algorithm that does not
commute with their shifts"). The folded run must give every figure the unfolded one gives;
a group of every GPU that also runs all-to-alls (played as messages on the dimensions) is
still judged by the dimensions' algorithms."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simpy_astra.config.scenario import load_scenario
from simpy_astra.simulation import Simulation

BASE = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings "
        "1024 --micro-batch-size 1 --global-batch-size 16 --bf16 --vocab-size 5120")

#: (preset, GPUs, arguments, NPUs the folded run simulates)
JOBS = [
    ("dgx-a100-80gb", 8, "--tensor-model-parallel-size 8", 1),  # tp's all-reduces on the node
    ("dgx-h100", 8, "--tensor-model-parallel-size 8 --sequence-parallel", 1),  # NVLS reduce-scatters, gathers
    ("dgx-a100-80gb", 8, "--use-distributed-optimizer", 1),  # dp over all: reduce-scatter and all-gather
    ("dgx-h100", 16, "--tensor-model-parallel-size 16", 1),  # over two nodes: tree, rails
]


def _run(tmp_path, preset: str, gpus: int, args: str, fold: bool):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": f"{BASE} {args}"},
                                "cluster": {"preset": preset, "gpus": gpus}}))
    sim = Simulation(dataclasses.replace(load_scenario(str(path)), fold_symmetry=fold))
    reports = sim.run()
    return len(sim.npus), [dataclasses.asdict(r) for r in reports]


@pytest.mark.parametrize(("preset", "gpus", "args", "simulated"), JOBS)
def test_a_group_of_every_gpu_timed_by_nccl_folds_exactly(tmp_path, monkeypatch, preset, gpus, args, simulated):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    folded_npus, folded = _run(tmp_path, preset, gpus, args, True)
    full_npus, full = _run(tmp_path, preset, gpus, args, False)
    assert (folded_npus, full_npus) == (simulated, gpus)
    assert folded == full


def test_a_group_of_every_gpu_with_all_to_alls_is_judged_by_the_dimensions(tmp_path, monkeypatch):
    """Experts over every GPU, tokens sent by all-to-all: those are messages on the dimensions'
    rings, so the group is no set of NCCL's, and the dimensions' algorithms keep it unfolded
    (with the all-gather dispatcher, its collectives are NCCL's and it folds)."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    experts = "--num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 --moe-token-dispatcher-type"
    assert _run(tmp_path, "dgx-a100-80gb", 8, f"{experts} alltoall", True)[0] == 8
    folded_npus, folded = _run(tmp_path, "dgx-a100-80gb", 8, f"{experts} allgather", True)
    assert folded_npus == 1 and folded == _run(tmp_path, "dgx-a100-80gb", 8, f"{experts} allgather", False)[1]
