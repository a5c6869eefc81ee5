"""A sweep point loads and builds with the garbage collector paused, as ``run``'s start-up
does, after collecting the points before it at once.

A sweep worker built each point with the collector on: the objects a 16,384-GPU Megatron point
makes, which live to its end, set off full collections that scanned the worker's heap again
and again. Paused alone, each point's cycles would outlive it (the worker grew 40 MB a point,
measured), so the previous point's simulation must be gone when the next one loads.

A worker's heap is frozen before its points, so that collection scans only what the points
made; a run must leave it frozen, and still no point's garbage may stay."""

from __future__ import annotations

import gc
import os
import weakref

from simpy_astra.sweep import point
from tests.test_sweep_megatron import GPUS, SMALL

SCENARIO = {"workload": {"generate": "megatron", "args": SMALL + " --tensor-model-parallel-size 2"},
            "cluster": {"preset": "dgx-a100-80gb", "gpus": GPUS}}


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
    assert gc.isenabled()
    for _ in range(2):
        assert point.run_point(SCENARIO)["status"] == "ok"
        assert gc.isenabled()  # as it was: the run and what follows collect
    assert collecting_while_built == [False, False]
    assert gone_when_loaded == [True, True]  # the first point's simulation, cycles and all
    assert len(built) == 2


def test_a_workers_frozen_heap_stays_frozen_and_its_points_leave_nothing_behind():
    """A sweep worker freezes what it holds before its points (point.freeze_worker_heap): each
    point's collection then skips it. A run thawed every frozen object at its end (gc.unfreeze
    thaws all), so the next collections scanned the worker's whole heap again. Frozen or not,
    the points' garbage must go: neither the frozen heap nor what is left unfrozen after a
    collection grows from point to point (the same point, so no cache fills anew). The frozen
    count may fall (a frozen object the run frees, e.g. a cache entry replaced, leaves it, as
    it did once a whole suite had run first) but never rise: a run's own objects frozen and left
    so would never be collected."""
    try:
        probe = [object()]  # frozen with the worker's heap: the collector's generations must not hold it
        point.freeze_worker_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        unfrozen = []
        for _ in range(4):
            assert point.run_point(SCENARIO)["status"] == "ok"
            assert not any(o is probe for o in gc.get_objects())  # the run left the worker's heap frozen
            assert 0 < gc.get_freeze_count() <= frozen  # and froze none of its own
            gc.collect()
            unfrozen.append(len(gc.get_objects()))
        assert unfrozen[3] <= unfrozen[2] <= unfrozen[1], unfrozen  # the first point fills caches
    finally:
        gc.unfreeze()


def test_a_run_with_nothing_frozen_before_leaves_nothing_frozen():
    """``run`` and ASTRA-sim's flags: the run freezes what exists at its start (its graphs) and
    thaws it at its end, as before a worker's heap was kept frozen."""
    from simpy_astra.engine.events import fast_collection

    gc.unfreeze()
    with fast_collection():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_sweeps_worker_keeps_its_heap_frozen_across_its_points(tmp_path):
    """The local pool's workers freeze their heap as they start, and a point leaves it so."""
    from concurrent.futures import ProcessPoolExecutor

    from simpy_astra.sweep import runner

    with ProcessPoolExecutor(max_workers=1, mp_context=runner._worker_context(), initializer=runner._init_worker,
                             initargs=(os.getpid(), str(tmp_path), ())) as pool:
        before = pool.submit(gc.get_freeze_count).result()
        assert pool.submit(point.run_point, SCENARIO).result()["status"] == "ok"
        after = pool.submit(gc.get_freeze_count).result()
    assert before > 0
    assert after == before
