"""The user's plug-in modules (``--plugin``, a scenario's ``plugins:``), imported before the
inputs that name what they register, each held to registering something."""

from __future__ import annotations

import sys
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.plugins import PluginError, import_module, is_users_file

#: plug-in module -> how many registry entries its import added (the imports made here)
_REGISTERED: dict[str, int] = {}


def load_plugins(modules: Any, where: str) -> None:
    """Import the user's plugin modules (they register algorithms, topologies, ...)."""
    if isinstance(modules, str):
        modules = [modules]
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise InputError(f"{where}: must be a list of module names, e.g. [my_pkg.algos]")
    for module in modules:
        try:
            import_plugin(module)
        except PluginError as exc:
            raise InputError(f"{where}: {exc}") from None


def registries() -> tuple[dict[str, Any], ...]:
    """Every registry a plug-in module may add to."""
    # deferred: a run without plug-ins (an ASTRA-sim run) loads neither generators nor schedules
    from simpy_astra.collectives import REGISTRY as COLLECTIVES
    from simpy_astra.network.backends import BACKENDS
    from simpy_astra.network.models import LINKS, SWITCHES
    from simpy_astra.topologies import REGISTRY as TOPOLOGIES
    from simpy_astra.workloads.generated import GENERATORS
    from simpy_astra.workloads.schedules.registry import SCHEDULES

    return COLLECTIVES, TOPOLOGIES, LINKS, SWITCHES, BACKENDS, GENERATORS, SCHEDULES


def import_plugin(name: str) -> None:
    """Import plug-in module ``name``, which must register something: a module that adds
    nothing (``os``, a module of the same name found first) would be taken silently and change
    nothing the run does. A module imported before by other code of the user's (a plug-in's
    helper) is taken: it registered then, if at all."""
    module_name, colon, _ = name.partition(":") if isinstance(name, str) else (name, "", "")
    if colon and module_name:  # else "no module named 'm:f'", as if the module were missing
        raise PluginError(f"'{name}' names one object of a module (module:NAME, as a config's fields take); a "
                          f"plug-in is a whole module that registers what it holds: write it as {module_name}")
    found = registries()
    before = [dict(r) for r in found]
    new = name not in sys.modules
    module = import_module(name)
    if new:
        _REGISTERED[name] = sum(1 for r, old in zip(found, before, strict=True)
                                for key, value in r.items() if old.get(key) is not value)
    path = getattr(module, "__file__", None)
    theirs = isinstance(path, str) and is_users_file(path)
    if _REGISTERED.get(name, 0) == 0 and (name in _REGISTERED or not theirs):
        raise PluginError(f"plugin module '{name}' registered nothing (no collective algorithm, topology, link or "
                          f"switch model, network backend, workload generator or pipeline schedule); remove it, "
                          f"or have it call a register function (docs/collectives.md); a name such as "
                          f"{name}:NAME in a config needs no plug-in")
