"""Physical topologies: one file per building block, each a :class:`BasicTopology`.

A topology knows its NPU count, builds the networkx graph of its devices and links, and
answers how many hops a message between two NPUs crosses. Register a new one by adding a
file and one line in ``REGISTRY``; its name is what network YAML files write.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator

from simpy_astra.infra.horizon import python_number
from simpy_astra.infra.registry_names import claim
from simpy_astra.plugins import (
    TOPOLOGIES_GROUP,
    PluginError,
    asyncio_kind,
    class_name,
    from_entry_point,
    import_object,
    refuse_shadowed_entry_point,
    shown,
    unfit_call,
    user_code_problem,
    users_int,
)
from simpy_astra.topologies.base import BasicTopology, CostPart
from simpy_astra.topologies.fully_connected import FullyConnected
from simpy_astra.topologies.graph import (
    GraphSpec,
    GraphSpecError,
    GraphTopology,
    from_networkx,
    networkx_dimension_values,
    spec_from_networkx,
)
from simpy_astra.topologies.line import Line
from simpy_astra.topologies.ring import Ring
from simpy_astra.topologies.switch import Switch

REGISTRY: dict[str, type[BasicTopology]] = {
    "Ring": Ring,
    "FullyConnected": FullyConnected,
    "Switch": Switch,
    # beyond ASTRA-sim
    "Line": Line,
    "Graph": GraphTopology,  # needs the network YAML's `graph` mapping
}
_OURS = frozenset(REGISTRY.values())
#: the methods the backends call on a topology, with their arguments
_CALLED_AS = {"hops": ("src", "dst"), "links": (), "route": ("src", "dst"), "link_params": ("src", "dst"),
              "path_profile": ("src", "dst")}


def register(name: str, topology: type[BasicTopology]) -> type[BasicTopology]:
    """Make network YAMLs' ``topology: [name]`` build ``topology`` (a BasicTopology subclass
    defining ``hops``, ``links`` and ``route``). A name already given to another topology
    (``Ring``, another module's) is a ValueError."""
    if not (isinstance(topology, type) and issubclass(topology, BasicTopology)):
        raise TypeError(f"topology '{name}': {shown(topology, 120)} is not a BasicTopology subclass")
    missing = [m for m in ("hops", "links", "route") if getattr(topology, m) is getattr(BasicTopology, m)]
    if missing:
        raise TypeError(f"topology '{name}': {topology.__qualname__} does not define "
                        f"{', '.join(m + '()' for m in missing)}; a BasicTopology subclass must define "
                        f"hops(src, dst), links() and route(src, dst) (docs/collectives.md)")
    for method, args in _CALLED_AS.items():  # a call that cannot bind fails before a line of theirs runs
        fn = getattr(topology, method)
        if asyncio_kind(fn):
            raise TypeError(f"topology '{name}': {topology.__qualname__}.{method} is {asyncio_kind(fn)} (async def), "
                            f"which nothing awaits: write it as a plain method that returns (or yields) its answer "
                            f"(docs/collectives.md)")
        unfit = None if fn is getattr(BasicTopology, method) else unfit_call(fn, None, *args)
        if unfit:
            raise TypeError(f"topology '{name}': {unfit} cannot be called as {method}({', '.join(args)}) "
                            f"(docs/collectives.md)")
    claim(REGISTRY, name, topology, "topology")
    REGISTRY[name] = topology
    return topology


def lookup(name: str) -> type[BasicTopology] | None:
    """The topology class a network YAML names: ours, a registered one, ``pkg.mod:Class``,
    or an installed ``simpy_astra.topologies`` entry point; None if nothing has that name.
    Raises :class:`simpy_astra.plugins.PluginError` for a plugin that cannot be loaded."""
    found = REGISTRY.get(name)
    if found is not None:
        refuse_shadowed_entry_point(TOPOLOGIES_GROUP, name, found)
        return found
    found = import_object(name) if ":" in name else from_entry_point(TOPOLOGIES_GROUP, name)
    if found is None:
        return None
    try:
        return register(name, found)
    except (TypeError, ValueError) as exc:
        raise PluginError(str(exc)) from None


def build(name: str, npus_count: int, bandwidth_gbps: float, latency_ns: float,
          graph: GraphSpec | None = None, field: str = "") -> BasicTopology:
    """One dimension of a network; ``graph`` is the parsed ``graph`` mapping for Graph.
    ``field`` is the input that chose a class of the user's (``s.yaml: network: field
    'topology[0]'``): its errors, raised mid-run, name it, the class and its file."""
    if name == "Graph":
        if graph is None:
            raise GraphSpecError("graph", "is missing; topology Graph needs a graph mapping")
        return GraphTopology(npus_count, bandwidth_gbps, latency_ns, graph)
    topology = lookup(name)
    if topology in _OURS:
        return topology(npus_count, bandwidth_gbps, latency_ns)
    who = _chosen(topology, name, field)
    try:  # a plugin's class: what it raises is its author's error, reported as such
        return _checked(topology, who)(npus_count, bandwidth_gbps, latency_ns)
    except PluginError:
        raise  # its __init__ asked a method of its own, which answered wrong: said already
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        raise PluginError(user_code_problem(who, exc), exc) from None


def _chosen(topology: type[BasicTopology], name: str, field: str) -> str:
    """The user's class as its errors name it: the field that chose it, the name it was
    chosen by and, for a registered name, the class behind it."""
    label = name if name == class_name(topology) else f"{name}, {class_name(topology)}"
    return f"{field} ({label})" if field else f"topology '{label}'"


def refusal(name: str, npus_count: int, bandwidth_gbps: float, latency_ns: float) -> str | None:
    """Why a plug-in's topology class refuses the network YAML's values (its ``__init__``
    raising ValueError: a hypercube of 6 NPUs), in its words; None when it takes them, or is
    ours. Asked when the YAML is read, so the refusal is an input error naming the file and
    the field; any other exception is left to the run, which reports it as the class's fault."""
    topology = lookup(name)
    if topology is None or topology in _OURS:
        return None
    try:
        topology(npus_count, bandwidth_gbps, latency_ns)
    except ValueError as exc:
        return " ".join(str(exc).split()) or "ValueError"
    except Exception:  # noqa: BLE001 - theirs, reported where the run builds it
        return None
    return None


_CHECKED: dict[tuple[type, str], type] = {}


def _checked(topology: type[BasicTopology], who: str) -> type[BasicTopology]:
    """``topology`` (the user's class) with every answer it gives the backends checked: a hop
    count, a route, a bandwidth or latency that is negative, not finite, not a number or ends
    at the wrong NPU is the user's error naming the method and what it returned, not an
    internal error or a hang deep in a backend. ``who`` names it (:func:`_chosen`), and what
    one of its methods raises is said as the method's, in one line."""
    if (topology, who) in _CHECKED:
        return _CHECKED[(topology, who)]
    try:
        home = inspect.getsourcefile(topology) or topology.__module__
    except TypeError:  # defined where no file holds it (a class built in a REPL)
        home = topology.__module__

    def wrong(method: str, args: tuple, value: object, expected: str, also: str = "") -> PluginError:
        fix = f"{topology.__qualname__}.{method}()" + (f" or {also}()" if also else "")
        return PluginError(f"{who}: {method}{args} returned {shown(value, 80)}; expected {expected}; fix {fix} "
                           f"in {home}")

    def theirs(method: str, exc: Exception) -> Exception:
        """What to raise for ``exc``, which ``method`` raised: one line naming the user's method
        (its context dropped, as ``from None`` drops it); ``exc`` itself from a method of ours
        (path_profile by default), not theirs to fix, or a PluginError said already (a method of
        theirs that it called answered wrong). Asked on the error path only: each call pays for
        a ``try`` alone, which costs nothing until it raises."""
        if getattr(topology, method) is getattr(BasicTopology, method) or isinstance(exc, PluginError):
            return exc
        error = PluginError(user_code_problem(f"{who}, method {method}()", exc), exc)
        error.__suppress_context__ = True
        return error

    def number(value: object, positive: bool) -> bool:
        return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                and (value > 0 if positive else value >= 0))

    class Checked(topology):  # type: ignore[valid-type, misc]
        checks_answers = True  # a wrapper, not the user's own link_params (BasicTopology.path_profile)
        name = topology.name  # reports call it as the user's class is called

        def hops(self, src: int, dst: int) -> int:
            try:
                value = super().hops(src, dst)
            except Exception as exc:  # noqa: BLE001 - the user's method failed
                raise theirs("hops", exc)  # noqa: B904 - theirs() says what context it keeps
            value = users_int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise wrong("hops", (src, dst), value, "an integer >= 1 (links crossed)")
            return value

        def route(self, src: int, dst: int) -> list[int]:
            value = self._a_path(src, dst)
            if self.__dict__.get("_cross_checking"):  # hops() asked route(): compared by the outer call
                return value
            self.__dict__["_cross_checking"] = True
            try:  # a hops() written as len(self.route(...)) - 1 comes back here once, unchecked
                hops = self.hops(src, dst)
            finally:
                self.__dict__["_cross_checking"] = False
            if hops != len(value) - 1:
                raise wrong("route", (src, dst), value, f"a path of hops{(src, dst)} = {hops} "
                            f"links, as the congestion-unaware backend charges it (this one has {len(value) - 1})", "hops")
            return value

        def check_route(self, src: int, dst: int) -> None:
            """For the analytical backend, which charges ``hops()`` alone on uniform links: a
            route that is no path from ``src`` to ``dst`` is a broken topology (a ``hops()``
            that charges more than its route, SlowRing's extra latency, is the user's choice)."""
            if not self._own_link_params():  # else path_profile() has followed the route
                self._a_path(src, dst)

        def _a_path(self, src: int, dst: int) -> list[int]:
            """The user's route, checked to be a path from ``src`` to ``dst`` along links()."""
            try:
                value = super().route(src, dst)
            except Exception as exc:  # noqa: BLE001 - the user's method failed
                raise theirs("route", exc)  # noqa: B904 - theirs() says what context it keeps
            if isinstance(value, Iterator):  # written with yield (or map): a path all the same
                value = list(value)
            value = [users_int(d) for d in value] if isinstance(value, list | tuple) else value
            if (not isinstance(value, list | tuple) or len(value) < 2 or value[0] != src or value[-1] != dst
                    or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in value)):
                raise wrong("route", (src, dst), value, f"a list of device ids from {src} to {dst} "
                            f"({self._ids()})")
            links = self.__dict__.get("_links_given")
            if links is None:
                links = self.__dict__["_links_given"] = set(map(tuple, self.links()))
            off = next(((u, v) for u, v in zip(value, value[1:], strict=False) if (u, v) not in links), None)
            if off is not None:
                raise wrong("route", (src, dst), value, f"a path along links(): {off} is not a link", "links")
            return value

        def link_params(self, src: int, dst: int) -> tuple[float, float]:
            try:
                value = super().link_params(src, dst)
            except Exception as exc:  # noqa: BLE001 - the user's method failed
                raise theirs("link_params", exc)  # noqa: B904 - theirs() says what context it keeps
            value = tuple(map(python_number, value)) if isinstance(value, tuple | list) else value  # numpy's too
            if not (isinstance(value, tuple | list) and len(value) == 2 and number(value[0], True)
                    and number(value[1], False)):
                raise wrong("link_params", (src, dst), value, "(bandwidth GB/s > 0, latency ns >= 0), finite")
            return value

        def path_profile(self, src: int, dst: int) -> tuple[float, float]:
            try:
                value = super().path_profile(src, dst)
            except Exception as exc:  # noqa: BLE001 - the user's method failed
                raise theirs("path_profile", exc)  # noqa: B904 - theirs() says what context it keeps
            value = tuple(map(python_number, value)) if isinstance(value, tuple | list) else value  # numpy's too
            if not (isinstance(value, tuple | list) and len(value) == 2 and number(value[0], False)
                    and number(value[1], True)):
                raise wrong("path_profile", (src, dst), value, "(latency ns >= 0, bandwidth GB/s > 0), finite")
            return value

        def links(self) -> list[tuple[int, int]]:
            try:
                value = super().links()
            except Exception as exc:  # noqa: BLE001 - the user's method failed
                raise theirs("links", exc)  # noqa: B904 - theirs() says what context it keeps
            if isinstance(value, Iterator):  # written with yield (or map): the links all the same
                value = list(value)
            if isinstance(value, list | tuple):  # numpy's integers are ids too
                value = [tuple(map(users_int, e)) if isinstance(e, tuple | list) else e for e in value]
            if not isinstance(value, list | tuple) or not all(
                    isinstance(e, tuple | list) and len(e) == 2 and all(isinstance(d, int) and d >= 0 for d in e)
                    for e in value):
                raise wrong("links", (), value, f"a list of (device, device) pairs of device ids ({self._ids()})")
            return value

        def _ids(self) -> str:
            n = self.npus_count
            return f"integers: NPUs 0..{n - 1}, switches numbered from {n}"

    Checked.__name__ = Checked.__qualname__ = topology.__name__
    Checked.__module__ = topology.__module__
    _CHECKED[(topology, who)] = Checked
    return Checked


__all__ = ["register", "lookup", "BasicTopology", "CostPart", "Ring", "FullyConnected", "Switch", "Line",
           "GraphTopology", "GraphSpec", "from_networkx", "spec_from_networkx", "networkx_dimension_values",
           "GraphSpecError", "REGISTRY", "build"]
