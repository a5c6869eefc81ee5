"""What calling a user's object makes, judged by one rule (``plugins.call_makes``): a function,
a partial of one or an object whose class's ``__call__`` is one. An observer or a workload
generator written as an object whose ``__call__`` yields was let in: called, it returns a
generator and runs none of its lines (every milestone dropped in silence; a generator's traces
never written)."""

from __future__ import annotations

import functools

import pytest


class YieldingWatcher:
    """An observer whose ``__call__`` was written with ``yield`` (a SimPy habit); refused as
    sim.on's and link.watch's callback: tests/test_extensions_round15.py."""

    def __call__(self, *observation):
        yield observation


class YieldingGenerator:
    def __call__(self, params, prefix):
        yield prefix


async def async_generator(params, prefix, extra=1):
    return None


async def async_yielding(*observation):
    yield observation


@pytest.mark.parametrize(("name", "fn"), [("h2_yields", YieldingGenerator()),
                                         ("h2_awaits", functools.partial(async_generator, extra=2))])
def test_a_workload_generator_that_yields_or_awaits_is_refused_where_registered(name, fn) -> None:
    from simpy_astra.workloads.generator_registry import GENERATORS, register

    with pytest.raises(TypeError, match="is a generator or async function"):
        register(name, fn)
    assert name not in GENERATORS


@pytest.mark.parametrize(("fn", "made", "asyncio"), [
    (lambda: None, None, None),
    # a generator function is a SimPy process, not asyncio's: asyncio_kind says nothing of it
    (YieldingWatcher(), "a generator function", None),
    (functools.partial(YieldingWatcher.__call__, None), "a generator function", None),
    (async_generator, "an async function", "an async function"),
    (functools.partial(functools.partial(async_generator, 1), 2), "an async function", "an async function"),
    (type("AsyncCall", (), {"__call__": async_generator})(), "an async function", "an async function"),
    (async_yielding, "an async generator function", "an async generator function"),
    (YieldingWatcher, None, None),  # a class: calling it builds an object
])
def test_what_calling_makes_is_read_through_partials_and_call(fn, made, asyncio) -> None:
    from simpy_astra.plugins import asyncio_kind, call_makes

    assert call_makes(fn) == made
    assert asyncio_kind(fn) == asyncio  # each written out, not asyncio_kind's own rule again
