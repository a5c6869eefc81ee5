"""What calling a user's object makes, judged by one rule (``plugins.call_makes``): a function,
a partial of one or an object whose class's ``__call__`` is one. An observer or a workload
generator written as an object whose ``__call__`` yields was let in: called, it returns a
generator and runs none of its lines (every milestone dropped in silence; a generator's traces
never written)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.test_extensions_round4 import ring_all_reduce
from tests.test_extensions_round15 import _cosim_ring


class YieldingWatcher:
    """An observer whose ``__call__`` was written with ``yield`` (a SimPy habit)."""

    def __init__(self) -> None:
        self.seen: list = []

    def __call__(self, *observation):
        self.seen.append(observation)
        yield


@pytest.mark.parametrize("where", ["sim.on", "link.watch"])
def test_an_observer_object_whose_call_yields_is_refused_not_dropped(tmp_path: Path, where) -> None:
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(_cosim_ring(tmp_path)))
    watcher = YieldingWatcher()
    with pytest.raises(TypeError, match="is a generator function: called, it returns a generator"):
        if where == "sim.on":
            sim.on("collective_end", watcher)
        else:
            sim.network.link(0, 1).watch("link_start", watcher)
    assert max(r.finished_ns for r in sim.run()) == ring_all_reduce(4, 1048576)  # the run, untouched


class YieldingGenerator:
    def __call__(self, params, prefix):
        yield prefix


async def async_generator(params, prefix, extra=1):
    return None


@pytest.mark.parametrize(("name", "fn"), [("h2_yields", YieldingGenerator()),
                                         ("h2_awaits", functools.partial(async_generator, extra=2))])
def test_a_workload_generator_that_yields_or_awaits_is_refused_where_registered(name, fn) -> None:
    from simpy_astra.workloads.generator_registry import GENERATORS, register

    with pytest.raises(TypeError, match="is a generator or async function"):
        register(name, fn)
    assert name not in GENERATORS


@pytest.mark.parametrize(("fn", "made"), [
    (lambda: None, None),
    (YieldingWatcher(), "a generator function"),
    (functools.partial(YieldingWatcher.__call__, None), "a generator function"),
    (async_generator, "an async function"),
    (functools.partial(functools.partial(async_generator, 1), 2), "an async function"),
    (type("AsyncCall", (), {"__call__": async_generator})(), "an async function"),
    (YieldingWatcher, None),  # a class: calling it builds an object
])
def test_what_calling_makes_is_read_through_partials_and_call(fn, made) -> None:
    from simpy_astra.plugins import asyncio_kind, call_makes

    assert call_makes(fn) == made
    assert asyncio_kind(fn) == (None if made == "a generator function" else made)
