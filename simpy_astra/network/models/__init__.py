"""Replaceable network elements: link and switch models a network YAML can name.

``link-model: NAME`` / ``switch-model: NAME`` in a network YAML (congestion-aware backend)
makes every directed link / every switch an instance of that class. ``NAME`` is one of ours
(:data:`LINKS`, :data:`SWITCHES`), one registered by a ``--plugin`` module
(:func:`register_link`, :func:`register_switch`), ``package.module:Class``, or an installed
entry point of the group ``simpy_astra.links`` / ``simpy_astra.switches``. The contract a
model keeps is in ``simpy_astra/network/README.md``.
"""

from __future__ import annotations

from typing import Any

from simpy_astra.network.models.delay_switch import DelaySwitch
from simpy_astra.network.models.ecn import EcnLink
from simpy_astra.network.models.process_link import ProcessLink
from simpy_astra.network.models.strict_priority import StrictPriorityLink

LINKS_GROUP = "simpy_astra.links"
SWITCHES_GROUP = "simpy_astra.switches"

LINKS: dict[str, type] = {"fifo": ProcessLink, "strict_priority": StrictPriorityLink, "ecn": EcnLink}
SWITCHES: dict[str, type] = {"delay": DelaySwitch}


def register_link(name: str, model: type) -> type:
    """Make ``link-model: name`` build ``model`` (a class keeping the link contract)."""
    LINKS[name] = _checked(name, model, ("offer",))
    return model


def register_switch(name: str, model: type) -> type:
    """Make ``switch-model: name`` build ``model`` (a class keeping the switch contract)."""
    SWITCHES[name] = _checked(name, model, ("receive",))
    return model


def _checked(name: str, model: Any, methods: tuple[str, ...]) -> type:
    from simpy_astra.plugins import PluginError

    if not isinstance(model, type) or any(not callable(getattr(model, m, None)) for m in methods):
        raise PluginError(f"network model '{name}': {model!r} is not a class with {', '.join(methods)}()")
    return model


def lookup_link(name: str) -> type:
    return _lookup(name, LINKS, LINKS_GROUP, ("offer",), "link-model")


def lookup_switch(name: str) -> type:
    return _lookup(name, SWITCHES, SWITCHES_GROUP, ("receive",), "switch-model")


def _lookup(name: str, registry: dict[str, type], group: str, methods: tuple[str, ...], key: str) -> type:
    """The class ``name`` names; :class:`~simpy_astra.plugins.PluginError` if none or broken."""
    found = registry.get(name)
    if found is not None:
        return found
    from simpy_astra.plugins import PluginError, from_entry_point, import_object

    found = import_object(name) if ":" in name else from_entry_point(group, name)
    if found is None:
        raise PluginError(f"{key} '{name}' is not known (ours: {', '.join(registry)}; or package.module:Class, "
                          f"a name a --plugin module registers, or an entry point of {group})")
    registry[name] = _checked(name, found, methods)
    return found


__all__ = ["DelaySwitch", "EcnLink", "ProcessLink", "StrictPriorityLink", "LINKS", "SWITCHES",
           "register_link", "register_switch", "lookup_link", "lookup_switch"]
