"""Replaceable network elements: link and switch models a network YAML can name.

``link-model: NAME`` / ``switch-model: NAME`` in a network YAML (congestion-aware backend)
makes every directed link / every switch an instance of that class; ``link-model: {class:
NAME, key: value, ...}`` passes the other keys to the class as keyword arguments, checked
against its ``__init__`` first (:func:`check_params`). ``NAME`` is one of ours
(:data:`LINKS`, :data:`SWITCHES`), one registered by a ``--plugin`` module
(:func:`register_link`, :func:`register_switch`), ``package.module:Class``, or an installed
entry point of the group ``simpy_astra.links`` / ``simpy_astra.switches``. The contract a
model keeps is in ``simpy_astra/network/README.md``.
"""

from __future__ import annotations

import difflib
import inspect
import types
import typing
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import simpy

from simpy_astra.infra.registry_names import claim
from simpy_astra.network.link import LinkElement
from simpy_astra.network.models.delay_switch import DelaySwitch
from simpy_astra.network.models.ecn import EcnLink
from simpy_astra.network.models.process_link import ProcessLink
from simpy_astra.network.models.strict_priority import StrictPriorityLink
from simpy_astra.network.switch import SwitchElement
from simpy_astra.plugins import (
    PluginError,
    asyncio_kind,
    from_entry_point,
    import_object,
    refuse_shadowed_entry_point,
    shown,
    unfit_call,
)

LINKS_GROUP = "simpy_astra.links"
SWITCHES_GROUP = "simpy_astra.switches"

LINKS: dict[str, type] = {"fifo": ProcessLink, "strict_priority": StrictPriorityLink, "ecn": EcnLink}
SWITCHES: dict[str, type] = {"delay": DelaySwitch}


def register_link(name: str, model: type) -> type:
    """Make ``link-model: name`` build ``model`` (a :class:`LinkElement`: the link contract)."""
    claim(LINKS, name, model, "link model")
    LINKS[name] = _checked(name, model, LinkElement)
    return model


def register_switch(name: str, model: type) -> type:
    """Make ``switch-model: name`` build ``model`` (a :class:`SwitchElement`: the switch contract)."""
    claim(SWITCHES, name, model, "switch model")
    SWITCHES[name] = _checked(name, model, SwitchElement)
    return model


def _checked(name: str, model: Any, base: type) -> type:
    """``model`` if it derives from ``base`` (so it keeps every control, fault, statistic and
    probe of the contract), else :class:`~simpy_astra.plugins.PluginError`."""
    if not isinstance(model, type) or not issubclass(model, base):
        raise PluginError(f"network model '{name}': {shown(model, 120)} does not derive from {base.__module__}."
                          f"{base.__qualname__} (the contract in simpy_astra/network/README.md)")
    for method, args in (LINK_POLICY if base is LinkElement else SWITCH_POLICY).items():
        fn = getattr(model, method, None)
        if fn is getattr(base, method):
            continue  # the base's own
        if asyncio_kind(fn):  # the element calls it and uses what it returns: nothing awaits it
            raise PluginError(f"network model '{name}': {model.__qualname__}.{method} is {asyncio_kind(fn)} (async "
                              f"def), which nothing in a SimPy run awaits: write it as a plain method"
                              f"{' (run: a generator function, yield, not await)' if method == 'run' else ''}")
        unfit = unfit_call(fn, None, *args) if callable(fn) else f"{method} = {fn!r}"
        if unfit:  # a call that cannot bind fails before any line of theirs runs: name it now
            raise PluginError(f"network model '{name}': {unfit} cannot be called as "
                              f"{method}({', '.join(args)}) (the contract in simpy_astra/network/README.md)")
    return model


#: the policy methods a model may override, and the arguments the element calls them with
LINK_POLICY = {"hold_ns": ("item",), "enqueue": ("item",), "dequeue": (), "run": ()}
SWITCH_POLICY = {"release_ns": ("item", "arrived_ns"), "receive": ("item",), "run": ()}


def lookup_link(name: str) -> type:
    return _lookup(name, LINKS, LINKS_GROUP, LinkElement, "link-model")


def lookup_switch(name: str) -> type:
    return _lookup(name, SWITCHES, SWITCHES_GROUP, SwitchElement, "switch-model")


def _lookup(name: str, registry: dict[str, type], group: str, base: type, key: str) -> type:
    """The class ``name`` names; :class:`~simpy_astra.plugins.PluginError` if none or broken."""
    found = registry.get(name)
    if found is not None:
        refuse_shadowed_entry_point(group, name, found)
        return found
    found = import_object(name) if ":" in name else from_entry_point(group, name)
    if found is None:
        raise PluginError(f"{key} '{name}' is not known (ours: {', '.join(registry)}; or package.module:Class, "
                          f"a name a --plugin module registers, or an entry point of {group})")
    registry[name] = _checked(name, found, base)
    return found


#: the positional arguments the contract passes: a link's and a switch's
LINK_ARGS = ("env", "src", "dst", "bandwidth_gbps", "latency_ns", "on_arrival")
SWITCH_ARGS = ("env", "device", "forward")
_CHECKED_TYPES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
                  dict: "a mapping", type(None): "null"}


def _init_of(model: type) -> Any:
    """The ``__init__`` that says what ``model`` takes: the first in its MRO that is not a
    pass-through ``(self, *args, **kwargs)`` (strict_priority's hands everything to fifo's)."""
    for cls in model.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        try:
            kinds = [p.kind for p in inspect.signature(init).parameters.values()][1:]
        except (TypeError, ValueError):
            return init
        if kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
            return init
    return model.__init__


def _own_signature(model: type) -> inspect.Signature | None:
    """``model(...)``'s signature as its effective ``__init__`` (:func:`_init_of`) has it."""
    try:
        signature = inspect.signature(_init_of(model))
    except (TypeError, ValueError):
        return None
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def trial_problem(model: type, params: dict[str, Any], link: bool) -> str | None:
    """Why ``model`` refuses ``params`` when built (its ``__init__`` raising ValueError or
    TypeError: a delay < 0, say), in its words; None when it builds. Built once on a
    scratch environment that never runs, so a bad value is an input error before the run."""
    env = simpy.Environment()
    try:
        if link:
            built = model(env, 0, 1, 1.0, 0.0, lambda item: None, **params)
        else:
            built = model(env, "switch", lambda item: None, **params)
    except (ValueError, TypeError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    if not isinstance(getattr(built, "process", None), simpy.Process):  # the base's __init__ starts it
        base = "LinkElement" if link else "SwitchElement"
        args = ", ".join(LINK_ARGS if link else SWITCH_ARGS)
        return (f"did not call {base}.__init__: call super().__init__({args}) in its __init__ (the base "
                f"keeps the element's process, statistics and controls)")
    # the way out, called once per message: None (or a number) would fail at the first arrival
    name, kept = ("on_arrival", getattr(built, "_on_arrival", None)) if link else \
        ("forward", getattr(built, "_forward", None))
    if not callable(kept):
        base = "LinkElement" if link else "SwitchElement"
        return (f"passed {kept!r} as {name} to {base}.__init__, which calls it with every message that "
                f"{'reaches the far end' if link else 'the switch passes on'}: pass on the {name} it was given "
                f"(or a function that calls it)")
    return None


def check_params(model: type, params: dict[str, Any], contract: tuple[str, ...]) -> str | None:
    """Why ``model(*contract, **params)`` cannot be built, in words (one unknown, missing or
    wrongly typed parameter, with its fix), or None. Checked against ``model.__init__``'s
    signature: the parameters after the contract's positional ones, and their annotations
    where they are ``int``, ``float``, ``str``, ``bool``, ``list``, ``dict`` or unions of them
    with None (``int | None``)."""
    signature = _own_signature(model)
    if signature is None:
        return None  # not introspectable: the call itself will tell
    fields = list(signature.parameters.values())
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in fields)
    named: list[inspect.Parameter] = []
    positional = 0
    for p in fields:
        if p.kind is p.VAR_POSITIONAL:
            positional = len(contract)
        elif p.kind is p.POSITIONAL_OR_KEYWORD and positional < len(contract):
            positional += 1
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            named.append(p)
    names = [p.name for p in named]
    takes = f"it takes: {', '.join(names)}" if names else "it takes none"
    for key in params:
        if key not in names and not var_keyword:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            return f"has an unknown parameter '{key}' ({hint}{takes})"
    for p in named:
        if p.default is p.empty and p.name not in params:
            return f"misses the required parameter '{p.name}' (add '{p.name}: <value>' beside class:)"
    try:
        hints = typing.get_type_hints(_init_of(model))
    except Exception:  # noqa: BLE001 - annotations we cannot resolve are not checked
        hints = {}
    for key, value in params.items():
        kinds = _checked_kinds(hints.get(key))
        if kinds and not any(_fits(value, kind) for kind in kinds):
            return f"parameter '{key}' must be {' or '.join(_CHECKED_TYPES[k] for k in kinds)} (got {value!r})"
    return None


def _checked_kinds(want: Any) -> tuple[type, ...]:
    """The kinds of value an annotation allows, each one :data:`_CHECKED_TYPES` knows (``int |
    None`` and ``Optional[int]``: int and None; ``dict[str, int]``: dict), or () where any part
    is another (a class of the user's: their ``__init__`` judges it)."""
    members = typing.get_args(want) if typing.get_origin(want) in (typing.Union, types.UnionType) else (want,)
    kinds = tuple(typing.get_origin(m) or m for m in members)
    return kinds if all(k in _CHECKED_TYPES for k in kinds) else ()


def _fits(value: Any, kind: type) -> bool:
    """``value`` is of ``kind``, numbers as numbers.py sees them (numpy's too: a sweep from
    Python over np.arange), a list as a list or tuple (a Python script's), a dict as a mapping."""
    if kind is bool:
        return isinstance(value, bool)
    if kind in (int, float):
        return isinstance(value, Integral if kind is int else Real) and not isinstance(value, bool)
    if kind is list:
        return isinstance(value, list | tuple)
    return isinstance(value, Mapping if kind is dict else kind)


__all__ = ["check_params", "trial_problem", "LINK_ARGS", "SWITCH_ARGS", "DelaySwitch", "EcnLink", "ProcessLink", "StrictPriorityLink", "LINKS", "SWITCHES",
           "register_link", "register_switch", "lookup_link", "lookup_switch"]
