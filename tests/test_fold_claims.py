"""Every registered collective's symmetry claims, checked by simulating it folded and unfolded.

A collective algorithm says which translations of NPU ids it commutes with
(``rotation_symmetric``: its peers depend only on ring-position differences;
``xor_symmetric``: its peers are ``index XOR k``). Folding trusts those claims: a wrong one
would give every orbit member its representative's figures although they differ. So each
claim of each registered algorithm is checked here on networks where that frame applies: the
run must fold, and its per-NPU lines must equal the unfolded run's line for line. An algorithm
that claims nothing must not fold. A deliberately lopsided ring that claims rotation symmetry
shows that the check catches a wrong claim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.collectives import REGISTRY
from simpy_astra.collectives.base import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    AlgorithmRun,
    CollectiveAlgorithm,
    PhaseContext,
    ring_final_size,
)
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.types import ALL_GATHER as ET_ALL_GATHER
from simpy_astra.workloads.chakra.types import ALL_REDUCE as ET_ALL_REDUCE
from simpy_astra.workloads.chakra.types import ALL_TO_ALL as ET_ALL_TO_ALL
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMP_NODE
from simpy_astra.workloads.chakra.types import REDUCE_SCATTER as ET_REDUCE_SCATTER
from tests.sim_helpers import run_sim

ET_TYPES = {ALL_REDUCE: ET_ALL_REDUCE, ALL_GATHER: ET_ALL_GATHER, REDUCE_SCATTER: ET_REDUCE_SCATTER,
            ALL_TO_ALL: ET_ALL_TO_ALL}
KEYS = {ALL_REDUCE: "all-reduce-implementation", ALL_GATHER: "all-gather-implementation",
        REDUCE_SCATTER: "reduce-scatter-implementation", ALL_TO_ALL: "all-to-all-implementation"}


def network(topologies: list[str], counts: list[int]) -> dict:
    return {"topology": topologies, "npus_count": counts, "bandwidth": [50.0] * len(counts),
            "latency": [500.0] * len(counts)}


#: networks on which a frame folds a symmetric run: rotations need rings (a 1-D ring, and a
#: 2-D torus whose dimensions each run the algorithm), XOR needs power-of-two dimensions
ROTATION_NETWORKS = {"ring8": network(["Ring"], [8]), "torus4x2": network(["Ring", "Ring"], [4, 2])}
XOR_NETWORKS = {"switch8": network(["Switch"], [8]), "ring8": network(["Ring"], [8])}


def ranks(kind: str, npus: int, size_bytes: int = 1 << 20) -> list[list]:
    """The same step on every NPU: 1 us of compute, the collective, 2 us of compute."""
    return [[make_node(0, "before", COMP_NODE, duration_micros=1),
             make_node(1, "coll", COMM_COLL_NODE, deps=[0],
                       attrs={"comm_type": ET_TYPES[kind], "comm_size": size_bytes, "is_cpu_op": False}),
             make_node(2, "after", COMP_NODE, deps=[1], duration_micros=2)] for _ in range(npus)]


def fold_check(tmp: Path, name: str, kind: str, net: dict) -> tuple[int, list[str], list[str]]:
    """(NPUs the folded run simulated, its lines, the unfolded run's lines) for ``kind`` run
    with algorithm ``name`` on every dimension of ``net`` (and for every other kind it
    implements; kinds it does not are left out of the system config)."""
    npus = 1
    for n in net["npus_count"]:
        npus *= n
    implements = REGISTRY[name].kinds
    system = {key: [name] * len(net["npus_count"]) if k in implements else None for k, key in KEYS.items()}
    out = []
    for fold in (True, False):
        folder = tmp / ("folded" if fold else "unfolded")
        folder.mkdir()
        reports, sim = run_sim(folder, ranks(kind, npus), net, system=system, fold=fold)
        lines = [line for r in sorted(reports.values(), key=lambda r: r.npu_id) for line in r.lines()]
        out.append((len(sim.npus), lines))
    (simulated, folded), (_, unfolded) = out
    return simulated, folded, unfolded


def claims() -> list:
    """(algorithm name, kind, network name, network, frame) for every claim to check."""
    cases = []
    for name, algorithm in sorted(REGISTRY.items()):
        for kind in sorted(algorithm.kinds):
            if algorithm.rotation_symmetric:
                cases += [pytest.param(name, kind, net, id=f"{name}-{kind}-rotation-{key}")
                          for key, net in ROTATION_NETWORKS.items()]
            if algorithm.xor_symmetric:
                cases += [pytest.param(name, kind, net, id=f"{name}-{kind}-xor-{key}")
                          for key, net in XOR_NETWORKS.items()]
    return cases


@pytest.mark.parametrize(("name", "kind", "net"), claims())
def test_a_claimed_symmetry_folds_and_keeps_every_figure(tmp_path: Path, name: str, kind: str, net: dict) -> None:
    simulated, folded, unfolded = fold_check(tmp_path, name, kind, net)
    npus = 1
    for n in net["npus_count"]:
        npus *= n
    assert simulated < npus, f"{name} claims a symmetry but the {kind} run did not fold"
    assert folded == unfolded


def test_every_registered_algorithm_makes_a_claim_or_is_known_not_to() -> None:
    """A new algorithm that claims nothing is legal (it never folds); this lists the ones that
    do not, so that adding one is a visible decision."""
    silent = sorted(n for n, a in REGISTRY.items() if not (a.rotation_symmetric or a.xor_symmetric))
    assert silent == ["doubleBinaryTree"]


@pytest.mark.parametrize("name", ["doubleBinaryTree"])
def test_an_algorithm_without_claims_does_not_fold(tmp_path: Path, name: str) -> None:
    simulated, folded, unfolded = fold_check(tmp_path, name, ALL_REDUCE, XOR_NETWORKS["switch8"])
    assert simulated == 8 and folded == unfolded


def lopsided_ring(ctx: PhaseContext) -> AlgorithmRun:
    """A ring all-reduce in which the member at position 0 starts 5 us late: its peers are
    ring neighbours, but the run is not the same seen from every position."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    if i == 0:
        yield ctx.wait(5_000)
    for _ in range(2 * (n - 1)):
        ctx.send(right, ctx.size_bytes // n)
        yield ctx.recv(left, ctx.size_bytes // n)
        yield ctx.endpoint()


def test_a_wrong_claim_is_caught(tmp_path: Path, monkeypatch) -> None:
    """The lopsided ring claims rotation symmetry: folded, every NPU would report position 0's
    figures; the check finds lines that differ from the unfolded run's."""
    liar = CollectiveAlgorithm("lopsidedRing", lopsided_ring, ring_final_size, rotation_symmetric=True)
    monkeypatch.setitem(REGISTRY, "lopsidedRing", liar)
    simulated, folded, unfolded = fold_check(tmp_path, "lopsidedRing", ALL_REDUCE, ROTATION_NETWORKS["ring8"])
    assert simulated == 1  # it folded, trusting the claim ...
    assert folded != unfolded  # ... and the figures show the claim is wrong
