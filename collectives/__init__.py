"""Collective algorithms, one file each, looked up by the names system configs use.

To add one: write ``collectives/my_algo.py`` with a generator function ``my_algo(ctx)``
(see :mod:`collectives.base` for the events and the context it may use), wrap it in a
:class:`~collectives.base.CollectiveAlgorithm`, and add it to ``REGISTRY`` below. A system
JSON then selects it with ``"all-reduce-implementation": ["my_algo"]``.

Without touching this package: name it ``my_pkg.algos:my_algo`` in the system JSON, or
register it from a plugin module (:func:`register`) or a packaging entry point in the group
``simpy_astra.collectives`` (see :mod:`simpy_astra.plugins`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from dataclasses import dataclass

from simpy_astra.collectives.base import CollectiveAlgorithm, CollectiveError, ring_final_size
from simpy_astra.collectives.bidirectional_ring import BIDIRECTIONAL_RING
from simpy_astra.collectives.direct import DIRECT
from simpy_astra.collectives.double_binary_tree import DOUBLE_BINARY_TREE
from simpy_astra.collectives.halving_doubling import HALVING_DOUBLING
from simpy_astra.collectives.ring import RING
from simpy_astra.errors import a_kind
from simpy_astra.infra.registry_names import claim
from simpy_astra.plugins import (
    COLLECTIVES_GROUP,
    PluginError,
    asyncio_kind,
    call_makes,
    class_call,
    entry_point_names,
    from_entry_point,
    import_object,
    refuse_shadowed_entry_point,
    shown,
    unfit_call,
    user_code_problem,
    users_inner_entry,
)

REGISTRY: dict[str, CollectiveAlgorithm] = {
    "ring": RING,
    "direct": DIRECT,
    "halvingDoubling": HALVING_DOUBLING,
    "doubleBinaryTree": DOUBLE_BINARY_TREE,
    # beyond ASTRA-sim: researchers' algorithms
    "bidirectionalRing": BIDIRECTIONAL_RING,
}

# "one<Name>" runs <Name> over a single ring of all NPUs; "direct<K>" limits the window
_ONE_VARIANTS = {"oneRing": "ring", "oneDirect": "direct", "oneHalvingDoubling": "halvingDoubling"}
_WINDOWED = re.compile(r"^(direct|oneDirect)(\d{1,5})$")


@dataclass(frozen=True)
class ImplementationChoice:
    """One entry of an ``*-implementation`` list, resolved."""

    algorithm: CollectiveAlgorithm
    spans_all_npus: bool = False
    window: int | None = None


def _with_own_code(run):  # noqa: ANN001, ANN202 - any algorithm's run
    """``run`` as something whose code the engine's loop guard finds (``users_algorithm``
    follows ``__wrapped__`` and partials to a ``__code__``): a callable instance has none, so a
    user's algorithm written as an object with ``__call__`` that looped without time passing
    hung the run; it runs through a function wrapping its class's ``__call__``, its signature
    (``ctx``, ...) kept. Partials keep their arguments; anything else is returned as it is."""
    if isinstance(run, functools.partial):
        inner = _with_own_code(run.func)
        return run if inner is run.func else functools.partial(inner, *run.args, **run.keywords)
    call = class_call(run)
    if call is None:
        return run

    @functools.wraps(call)
    def method(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return call(run, *args, **kwargs)

    method.__signature__ = inspect.signature(run)  # type: ignore[attr-defined] - ctx, not self
    return method


def register(name: str, algorithm) -> CollectiveAlgorithm:
    """Make ``name`` select ``algorithm`` (a CollectiveAlgorithm, or a generator function
    ``fn(ctx)``, which then keeps the data size like ring does); returns the registered one.
    A name already given to another algorithm (``ring``, another module's) is a ValueError."""
    run = algorithm.run if isinstance(algorithm, CollectiveAlgorithm) else algorithm
    if asyncio_kind(run):
        raise TypeError(f"collective '{name}' runs {asyncio_kind(run)} (async def), not a SimPy process: write it "
                        f"as a generator function that yields the events it waits for (yield ctx.recv(...), not "
                        f"await; collectives/README.md)")
    if not isinstance(algorithm, CollectiveAlgorithm):
        if call_makes(algorithm) != "a generator function":  # os:system, a class: never called with a context
            raise TypeError(f"collective '{name}' is {a_kind(algorithm)}, not an algorithm: expected a "
                            f"CollectiveAlgorithm or a generator function fn(ctx) that yields events")
        algorithm = CollectiveAlgorithm(name, algorithm, ring_final_size)
    unfit = unfit_call(algorithm.run, None) if algorithm.logical is None else None  # else it takes more
    if unfit:  # without a logical hook nothing but the phase context is passed
        raise TypeError(f"collective '{name}': {unfit} cannot be called as fn(ctx); an algorithm takes the "
                        f"phase context only (collectives/README.md)")
    unfit = None if algorithm.traffic is None else unfit_call(algorithm.traffic, None)
    if unfit:
        raise TypeError(f"collective '{name}': traffic={unfit} cannot be called as traffic(shape) "
                        f"(collectives/README.md)")
    claim(REGISTRY, name, algorithm, "collective algorithm")
    algorithm = dataclasses.replace(algorithm, run=_users(name, _with_own_code(algorithm.run)),
                                    final_size=_checked_final_size(name, algorithm.final_size),
                                    logical=None if algorithm.logical is None else _checked_logical(name, algorithm.logical),
                                    traffic=None if algorithm.traffic is None else _checked_traffic(name, algorithm.traffic))
    REGISTRY[name] = algorithm
    return algorithm


def _users(name: str, run):  # noqa: ANN001, ANN202 - wraps any algorithm's run
    """``run`` with the exceptions it raises reported as the user's code's (a plugin's bug
    is theirs, with their traceback under --debug), not as a simpy-astra bug."""
    @functools.wraps(run)
    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            phase = run(*args, **kwargs)
            if not inspect.isgenerator(phase):  # a plain function ran whole: its sends were never waited on
                raise PluginError(f"collective algorithm '{name}' returned {_short(phase)} when called, not a "
                                  f"generator: an algorithm is a generator function that yields the events it "
                                  f"waits for (yield ctx.recv(...), yield ctx.endpoint(); collectives/README.md)")
            return (yield from phase)
        except (CollectiveError, PluginError, GeneratorExit):  # a PluginError names its own culprit:
            raise  # a backend, link model or topology of the user's, called from ctx.send
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - theirs, reported as theirs
            culprit = users_inner_entry(exc) or f"collective algorithm '{name}'"  # its backend's, say
            raise PluginError(user_code_problem(culprit, exc), exc) from None

    return wrapped


def _short(value: object) -> str:
    """``value`` as an error quotes it: its repr, cut to one short phrase."""
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def _call_users(name: str, what: str, fn, *args):  # noqa: ANN001, ANN002, ANN202 - any hook of theirs
    """``fn(*args)``, an exception it raises reported as the user's code's."""
    try:
        return fn(*args)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - theirs, reported as theirs
        raise PluginError(user_code_problem(f"collective algorithm '{name}', {what}", exc), exc) from None


def _checked_final_size(name: str, final_size):  # noqa: ANN001, ANN202 - wraps the user's hook
    """``final_size`` refusing, in one line, what is not a whole number of bytes >= 0 (None, a
    fraction), which would otherwise become the next phase's ``ctx.size_bytes``."""
    @functools.wraps(final_size)
    def checked(kind: str, size: int, n: int) -> int:
        value = _call_users(name, "final_size()", final_size, kind, size, n)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PluginError(f"collective algorithm '{name}': final_size({kind!r}, {size}, {n}) returned {value!r}; "
                              f"it must return the bytes the phase leaves, an integer >= 0 (ring_final_size "
                              f"covers the usual shapes)")
        return value

    return checked


def _checked_logical(name: str, logical):  # noqa: ANN001, ANN202 - wraps the user's hook
    """``logical`` refusing, in one line, what is not a tuple of ``run``'s extra arguments."""
    @functools.wraps(logical)
    def checked(dim):  # noqa: ANN001, ANN202
        value = _call_users(name, "logical hook", logical, dim)
        if not isinstance(value, tuple | list):
            raise PluginError(f"collective algorithm '{name}': its logical hook returned {shown(value, 120)}; it must return "
                              f"a tuple of run()'s extra arguments, e.g. (parent, children)")
        return tuple(value)

    return checked


def _checked_traffic(name: str, traffic):  # noqa: ANN001, ANN202 - wraps the user's hook
    """``traffic`` refusing, in one line, what is not a list of (peer position, bytes): a
    peer off the ring, the member itself, or bytes that are negative would otherwise be an
    internal error in the bound check, or lower its floor without a sign."""
    @functools.wraps(traffic)
    def checked(shape):  # noqa: ANN001, ANN202
        value = _call_users(name, "traffic()", traffic, shape)
        n = len(shape.members)
        pairs = list(value) if isinstance(value, list | tuple) else None
        bad = pairs is None or next((p for p in pairs if not (
            isinstance(p, tuple | list) and len(p) == 2 and _whole(p[0]) and 0 <= p[0] < n and p[0] != shape.index
            and isinstance(p[1], int | float) and not isinstance(p[1], bool) and math.isfinite(p[1]) and p[1] >= 0)),
            None) is not None
        if bad:
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise PluginError(f"collective algorithm '{name}': traffic(shape) at index {shape.index} of {n} "
                              f"returned {shown}; it must return [(peer position 0..{n - 1} other than "
                              f"shape.index, bytes >= 0), ...] (collectives/README.md)")
        return pairs

    return checked


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plugin(name: str) -> CollectiveAlgorithm | None:
    """An algorithm named ``module:attribute`` or by an installed entry point (then cached)."""
    found = import_object(name) if ":" in name else from_entry_point(COLLECTIVES_GROUP, name)
    if found is None:
        return None
    try:
        return register(name, found)
    except (TypeError, ValueError) as exc:
        raise PluginError(str(exc)) from None


def resolve(name: str) -> ImplementationChoice | None:
    """Map a config name (``ring``, ``direct4``, ``oneHalvingDoubling``, ``pkg.mod:algo``,
    ...) to an algorithm; None if nothing has that name.

    The one place that knows the names: config validation and the system layer both use it.
    Raises :class:`simpy_astra.plugins.PluginError` for a plugin that cannot be loaded."""
    if name in REGISTRY:
        refuse_shadowed_entry_point(COLLECTIVES_GROUP, name, REGISTRY[name])
        return ImplementationChoice(REGISTRY[name])
    if name in _ONE_VARIANTS:
        return ImplementationChoice(REGISTRY[_ONE_VARIANTS[name]], spans_all_npus=True)
    m = _WINDOWED.match(name)
    if m and int(m.group(2)) > 0:  # a window of 0 would send nothing
        return ImplementationChoice(
            DIRECT, spans_all_npus=m.group(1) == "oneDirect", window=int(m.group(2))
        )
    algorithm = _plugin(name)
    return None if algorithm is None else ImplementationChoice(algorithm)


def subset_algorithm_name(names: tuple[str, ...] | None) -> str:
    """What a communicator group that is a subset of the NPUs runs: the configured algorithm
    when the implementation list has one entry, ring otherwise (the reference's rule)."""
    return names[0] if names and len(names) == 1 else "ring"


#: the package's own algorithms, whose symmetry claims tests/test_fold_claims.py checks
_CHECKED_CLAIMS = tuple(REGISTRY.values())


def unchecked_claim(name: str) -> str | None:
    """``'myAlgo' (rotation_symmetric)`` when ``name`` is an algorithm of the user's that makes
    a symmetry claim, which symmetry folding trusts and no test of ours has checked; else None."""
    choice = resolve(name)
    if choice is None or any(choice.algorithm is ours for ours in _CHECKED_CLAIMS):
        return None
    claims = [claim for claim in ("rotation_symmetric", "xor_symmetric") if getattr(choice.algorithm, claim)]
    return f"'{name}' ({', '.join(claims)})" if claims else None


def known_names() -> list[str]:
    """Every accepted name; K is a window of 1-5 digits, e.g. direct4."""
    return sorted({*REGISTRY, *_ONE_VARIANTS, "directK", "oneDirectK", "package.module:function",
                   *entry_point_names(COLLECTIVES_GROUP)})


__all__ = ["REGISTRY", "ImplementationChoice", "register", "resolve", "subset_algorithm_name", "known_names",
           "unchecked_claim"]
