"""A cluster preset's job whose communicator group is every GPU (tensor parallelism over one
whole node, data parallelism over all the GPUs) folds: NCCL times its all-reduces,
reduce-scatters and all-gathers by their members alone (:mod:`simpy_astra.engine.nccl_collectives`),
here every GPU, a set every translation maps onto itself, so the algorithms configured on
the network's dimensions, which such a group would otherwise run on, play no part. Such jobs
were run unfolded ("collectives on the network's dimensions use an algorithm that does not
commute with their shifts"). The folded run must give every figure the unfolded one gives;
a group of every GPU that also runs all-to-alls (played as messages on the dimensions) is
judged by the all-to-all's algorithm alone."""

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


def _by_npu(reports: list[dict]) -> list[dict]:
    """Reports in NPU order: an unfolded run gives those of one instant in the order its events fall."""
    return sorted(reports, key=lambda r: r["npu_id"])


@pytest.mark.parametrize(("preset", "gpus"), [("dgx-a100-80gb", 8), ("dgx-h100", 16)])
def test_a_group_of_every_gpu_with_all_to_alls_folds_by_the_algorithm_that_sends_them(tmp_path, monkeypatch,
                                                                                        preset, gpus):
    """Experts over every GPU, tokens sent by all-to-all: those are messages on the dimensions,
    by the system's all-to-all algorithm (direct), which commutes with their shifts. Before, the
    halvingDoubling the system names for all-reduces (which NCCL's model times instead: it never
    runs) kept the run unfolded; the folded run gives every figure the unfolded one gives."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    experts = "--num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 --moe-token-dispatcher-type alltoall"
    folded_npus, folded = _run(tmp_path, preset, gpus, experts, True)
    full_npus, full = _run(tmp_path, preset, gpus, experts, False)
    assert (folded_npus, full_npus) == (1, gpus)
    assert _by_npu(folded) == _by_npu(full)
