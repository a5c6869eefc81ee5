"""Folding judges a run's symmetry by the algorithms that run: the ones a system names for a
collective its collective timer times whole never run, and the timer says which
(``CollectiveTimer.replaces_algorithms``). Folding asks the timer, not whether the run is a
cluster preset's: before, any timer on the analytical backend skipped the all-reduce's,
reduce-scatter's and all-gather's algorithms, whichever it timed.

Outside facts: halvingDoubling pairs NPU ``i`` with ``i XOR 2^k``, which a rotation of a ring
of 8 does not keep (1 -> 2 moves the pair 0-1 to 1-2, no pair of its first step); the ring
algorithm's neighbours are kept by every rotation. The preset's own fold (figures identical
folded and unfolded) is checked in tests/test_hostile_hunt25b.py
(``test_a_default_group_collective_on_a_preset_folds_exactly``)."""

from __future__ import annotations

import dataclasses

import pytest

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER
from simpy_astra.config.scenario import load_scenario
from simpy_astra.engine.nccl_collectives import NcclAllReduce, NcclRendezvous
from simpy_astra.engine.nccl_names import COLLECTIVE_ALGORITHMS
from simpy_astra.folding import FoldSetup
from simpy_astra.network.backends import BACKENDS
from simpy_astra.topologies import build as build_topology
from tests.scenario_files import DEFAULT, default_with, write_yaml


@dataclasses.dataclass
class Timer:
    """A collective timer of a user's, timing the kinds it names."""

    replaces_algorithms: frozenset[str]

    def rendezvous(self, simulated):  # never asked here: no run starts
        raise AssertionError


def _setup(tmp_path, timer: Timer | None) -> FoldSetup:
    """The default scenario's ring of 8 with halvingDoubling all-reduces (rings elsewhere)."""
    system = {**DEFAULT["system"], "all-reduce-implementation": ["halvingDoubling"]}
    inputs = load_scenario(write_yaml(tmp_path, default_with(system=system)))
    dims = [build_topology("Ring", 8, 50.0, 500.0)]
    network = dataclasses.replace(inputs.network, nccl=timer)
    return FoldSetup.for_run(BACKENDS["congestion_unaware"], network, inputs.system, inputs.remote_memory, dims)


@pytest.mark.parametrize("timer", [None, Timer(frozenset()), Timer(frozenset({ALL_GATHER, REDUCE_SCATTER}))])
def test_an_algorithm_no_timer_replaces_is_judged(tmp_path, timer):
    # before: a timer of all-gathers alone skipped the all-reduce's halvingDoubling too
    setup = _setup(tmp_path, timer)
    assert setup.with_dims == [{0}]  # rotations kept the delays, not halvingDoubling's pairs
    assert setup.allowed == [set(range(8))]
    assert not setup.timed_sets


def test_an_algorithm_the_timer_replaces_is_not(tmp_path):
    setup = _setup(tmp_path, Timer(frozenset({ALL_REDUCE})))
    assert setup.with_dims == [set(range(8))]
    assert not setup.timed_sets  # all-gathers and reduce-scatters are still played by their members' order
    assert _setup(tmp_path, Timer(frozenset({ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER}))).timed_sets


def test_the_preset_timer_declares_what_nccls_model_times():
    # NCCL's tuning model (tuning.cc) times the all-reduce, reduce-scatter and all-gather in place of
    # the system's algorithms, and the broadcast, which no system algorithm runs (ASTRA-sim replays it)
    assert NcclAllReduce.replaces_algorithms == frozenset(COLLECTIVE_ALGORITHMS) - {"broadcast"}
    assert NcclRendezvous.TIMED == frozenset(COLLECTIVE_ALGORITHMS)
