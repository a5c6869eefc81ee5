"""Collective algorithms and topologies from the user's own modules, without editing ours.

Three ways in, all resolved before time starts:

* a name ``package.module:attribute`` wherever a config names an algorithm or topology
  (``"all-reduce-implementation": ["my_pkg.algos:my_ring"]``, ``topology: [my_pkg.topo:Torus]``);
* a module imported with ``--plugin MODULE`` or a scenario's ``plugins: [MODULE, ...]``,
  which registers names with :func:`collectives.register` / :func:`topologies.register`;
* packaging entry points in the groups ``simpy_astra.collectives`` and
  ``simpy_astra.topologies`` (the entry point's name is the name configs use).
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

COLLECTIVES_GROUP = "simpy_astra.collectives"
TOPOLOGIES_GROUP = "simpy_astra.topologies"


class PluginError(ValueError):
    """A plugin name that cannot be imported or is not what it must be (one line)."""


#: folders searched for user modules after the working directory: those of the scenarios
#: read so far (a scenario's ``plugins`` sit beside it, wherever it is run from)
SEARCH_FOLDERS: list[str] = []


def search_also(folder: str) -> None:
    """Import user modules from ``folder`` too (after the working directory)."""
    import os

    folder = os.path.abspath(folder)
    if folder not in SEARCH_FOLDERS:
        SEARCH_FOLDERS.append(folder)


def import_module(name: str) -> Any:
    """Import a user module by name: from the working directory first, then the installed
    packages, then the folders of :data:`SEARCH_FOLDERS` (a scenario's own folder)."""
    import os
    import sys

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for folder in SEARCH_FOLDERS:  # last: a scenario's folder never shadows an installed package
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        where = ", ".join(["the working directory", *SEARCH_FOLDERS])
        raise PluginError(f"cannot import plugin module '{name}' ({exc}; searched {where} and the "
                          f"installed packages)") from None


def import_object(spec: str) -> Any:
    """``package.module:attribute`` -> the attribute."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise PluginError(f"'{spec}' is not of the form package.module:attribute")
    module = import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise PluginError(f"module '{module_name}' has no attribute '{attr}'") from None


@cache
def _entry_points(group: str) -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=group)}


def from_entry_point(group: str, name: str) -> Any | None:
    """The object an installed package registered under ``name`` in ``group``, if any."""
    ep = _entry_points(group).get(name)
    if ep is None:
        return None
    try:
        return ep.load()
    except Exception as exc:  # a broken third-party package: say which one
        raise PluginError(f"entry point '{name}' of {group} ({ep.value}) fails to load: {exc}") from None


def entry_point_names(group: str) -> list[str]:
    return sorted(_entry_points(group))
