"""The names a registry gives out: which names a config can spell, and who may claim one.

Every registry a plug-in fills (algorithms, topologies, link and switch models, backends,
generators, pipeline schedules) holds its names to :func:`spellable` and its owners to
:func:`same_definition`: a name stays with what first claimed it, except that the same
definition, imported again, may claim it again.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any

from simpy_astra.errors import a_kind


def definition(obj: Any) -> Any:
    """The function or class that defines a registered object (an algorithm's run function
    through its wrappers and partials; a callable instance's class's ``__call__``, as the
    registered algorithm's wrapper of it names it): what ``inspect`` finds a source file for."""
    if isinstance(obj, type):
        return obj
    obj = inspect.unwrap(getattr(obj, "run", obj))
    while isinstance(obj, functools.partial):
        obj = inspect.unwrap(obj.func)
    if not hasattr(obj, "__qualname__"):  # an instance: what calling it runs
        call = inspect.getattr_static(type(obj), "__call__", None)
        obj = call if inspect.isfunction(call) else type(obj)
    return obj


def origin(obj: Any) -> str:
    """``module:qualname`` of a registered object (a function, a class, an algorithm's run
    function through its wrappers): the same after the module is imported again."""
    obj = definition(obj)
    return f"{getattr(obj, '__module__', '?')}:{obj.__qualname__}"


def _source_file(obj: Any) -> str | None:
    """The real path of the file whose module defines ``obj``, or None (built in, made at run time)."""
    path = getattr(sys.modules.get(getattr(obj, "__module__", None) or ""), "__file__", None)
    return os.path.realpath(path) if path else None


def same_definition(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are one definition: the same object, the same ``module:qualname``
    imported again, or the same qualified name in the same file imported under two module
    names (a script's ``import examples.loggp`` beside a scenario's ``plugins: [loggp]``,
    which finds the same file beside it: the file runs twice, and registers twice)."""
    if a is b or origin(a) == origin(b):
        return True
    a, b = definition(a), definition(b)
    file = _source_file(a)
    return (file is not None and file == _source_file(b)
            and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None))


def spellable(name: Any, what: str) -> None:
    """Refuse a ``what`` name no config can spell (not a string, empty, on more than one line,
    spaces around it): registered in silence, its object could never be named. Every registry
    a plug-in fills holds its names to this."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name {name!r} is {a_kind(name)}, not a string: a config names what it runs by "
                        f"a string")
    if not name.strip() or name != name.strip() or not name.isprintable():
        raise ValueError(f"{what} name {name!r} is not one a config can give: write a non-empty name on one line, "
                         f"without spaces around it")


def claim(registry: dict[str, Any], name: str, obj: Any, what: str) -> None:
    """Refuse to register ``obj`` under a ``name`` that ``registry`` already gives to another
    object (one of ours, or another module's): a plug-in must never silently replace an
    algorithm, topology or model other configs mean by that name. The same definition
    (:func:`same_definition`: a plug-in loaded twice) may register again. A name no config can
    spell is refused (:func:`spellable`)."""
    spellable(name, what)
    taken = registry.get(name)
    if taken is None or same_definition(taken, obj):
        return
    raise ValueError(f"{what} name '{name}' is already taken by {origin(taken)}; register "
                     f"{origin(obj)} under another name (or name it as module:attribute in the config)")
