"""A sweep point loads and builds with the garbage collector paused, as ``run``'s start-up
does, after collecting the points before it at once.

A sweep worker built each point with the collector on: the objects a 16,384-GPU Megatron point
makes, which live to its end, set off full collections that scanned the worker's heap again
and again. Paused alone, each point's cycles would outlive it (the worker grew 40 MB a point,
measured), so the previous point's simulation must be gone when the next one loads."""

from __future__ import annotations

import gc
import weakref

from simpy_astra.sweep import point
from tests.test_sweep_megatron import GPUS, SMALL


def test_a_point_builds_with_the_collector_paused_and_the_last_points_run_collected(monkeypatch):
    built: list[weakref.ref] = []
    collecting_while_built: list[bool] = []
    gone_when_loaded: list[bool] = []
    real_load, real_simulation = point.load_point, point.Simulation

    class Watched(real_simulation):
        def __init__(self, *args, **kwargs) -> None:
            collecting_while_built.append(gc.isenabled())
            super().__init__(*args, **kwargs)
            built.append(weakref.ref(self))

    def load(scenario):
        gone_when_loaded.append(all(ref() is None for ref in built))
        return real_load(scenario)

    monkeypatch.setattr(point, "Simulation", Watched)
    monkeypatch.setattr(point, "load_point", load)
    scenario = {"workload": {"generate": "megatron", "args": SMALL + " --tensor-model-parallel-size 2"},
                "cluster": {"preset": "dgx-a100-80gb", "gpus": GPUS}}
    assert gc.isenabled()
    for _ in range(2):
        assert point.run_point(scenario)["status"] == "ok"
        assert gc.isenabled()  # as it was: the run and what follows collect
    assert collecting_while_built == [False, False]
    assert gone_when_loaded == [True, True]  # the first point's simulation, cycles and all
    assert len(built) == 2
