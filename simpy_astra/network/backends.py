"""The network backends by declaration: one :class:`BackendSpec` each, in :data:`BACKENDS`.

Everything the rest of the simulator needs to know about a backend is declared here (its
name, its help line, how it is built, how it folds and its folded network, whether the
bound check applies), so no caller compares backend names. A new backend is one module plus
one :class:`BackendSpec` line, a plug-in's :func:`register` call, or an installed package's
entry point in :data:`BACKENDS_GROUP` (docs/backends.md);
:data:`DEFAULT_BACKEND` is the one runs use unless told.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from simpy_astra.errors import InputError, a_kind
from simpy_astra.infra.registry_names import origin, same_definition
from simpy_astra.network.registered_name import RegisteredName
from simpy_astra.plugins import (
    PluginError,
    asyncio_kind,
    from_entry_point,
    import_object,
    is_ours,
    raised_in_users_code,
    refuse_shadowed_entry_point,
    shown,
    unfit_call,
    user_code_problem,
)

if TYPE_CHECKING:
    import simpy

    from simpy_astra.folding.frames import Folding
    from simpy_astra.topologies.base import BasicTopology

#: the entry-point group in which an installed package declares a backend (its name is the
#: name configs use, as for algorithms, topologies and models)
BACKENDS_GROUP = "simpy_astra.backends"
#: a :class:`simpy_astra.network.Network` (not imported: that package imports this registry)
Network = Any
#: (env, dimensions, network YAML path, the parsed network config or None) -> backend
Builder = Callable[..., Network]
#: (a builder taking a folded run's hooks, the folding) -> the folded run's network
FoldedFactory = Callable[[Callable[..., Any], "Folding"], Network]


@dataclass(frozen=True)
class BackendSpec:
    """One network backend as the rest of the simulator sees it."""

    name: str
    #: one line for ``--network-backend``'s help (docs/backends.md has more)
    help: str
    #: ``build(env, dims, source, config, **fold_hooks)``: the backend (hooks: a folded run's)
    build: Builder
    #: how it folds: "pairs" (a message's delay depends on its two NPUs' places alone, so orbits of
    #: NPUs fold), "links" (messages share links, which fold onto orbit representatives with
    #: them); None: it does not fold
    folds: str | None
    #: the network of a folded run (only representatives send and receive)
    folded: FoldedFactory | None
    #: its figures ignore contention, so the bound check (:mod:`simpy_astra.engine.bandwidth_floor`)
    #: compares each collective with its link-bandwidth floor
    bound_check: bool = False
    #: it models link contention: the backend the bound check's warning suggests
    models_contention: bool = False
    #: a cluster preset's all-reduce is timed in closed form (NCCL's tuning model,
    #: :mod:`simpy_astra.engine.nccl_collectives`) rather than played as messages on its links
    times_nccl: bool = False
    #: it reads the network YAML's ``packet-size`` and ``switch-buffer`` (True), or not
    #: (False: given, they are said to change nothing); None: not known (a plug-in's)
    reads_packet_settings: bool | None = None
    #: it builds its links and switches from ``link-model``/``switch-model`` (True) or refuses
    #: them (False); None: not known (a plug-in's, whose network may build them: docs/backends.md)
    reads_element_models: bool | None = None

    def __call__(self, env: simpy.Environment, dims: list[BasicTopology], source: str, config: Any = None,
                 **fold_hooks: Any) -> Network:
        """The backend on ``dims`` (``build``; what tests and scripts call)."""
        return self.build(env, dims, source, config, **fold_hooks)


def _congestion_unaware(env: simpy.Environment, dims: list[BasicTopology], source: str,
                        config: Any = None) -> Network:
    # deferred: only the congestion-unaware backend needs it; an aware or packet run may not load it
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork

    _no_models(config, "congestion_unaware")

    return CongestionUnawareNetwork(env, dims, rails=getattr(config, "rails", None))


def _congestion_aware(env: simpy.Environment, dims: list[BasicTopology], source: str,
                      config: Any = None, **fold_hooks: Any) -> Network:
    """``fold_hooks``: a folded run's (``links_at_start``, ``link_of_hop``), passed on."""
    # deferred: only the congestion-aware backend needs it; an analytical run does not load it
    from simpy_astra.network.congestion_aware import CongestionAwareNetwork
    from simpy_astra.network.models import lookup_link, lookup_switch

    link, switch = getattr(config, "link_model", None), getattr(config, "switch_model", None)
    return CongestionAwareNetwork(env, dims, source, link_model=lookup_link(link) if link else None,
                                  switch_model=lookup_switch(switch) if switch else None,
                                  link_params=dict(getattr(config, "link_params", ())),
                                  switch_params=dict(getattr(config, "switch_params", ())), **fold_hooks)


def _no_models(config: Any, backend: str) -> None:
    """Element models replace the congestion-aware backend's links and switches only."""
    for key in ("link_model", "switch_model"):
        if getattr(config, key, None):
            raise InputError.at(getattr(config, "source", "<network>"), key.replace("_", "-"),
                                f"is read by the congestion_aware backend only, not {backend}; set backend: "
                                f"congestion_aware (or --network-backend congestion_aware), or remove it")


#: the fastest link the packet backend times (GB/s): its rates are summed and multiplied by
#: times, and a link of 1e300 GB/s ended on 'cannot convert float NaN to integer'
MAX_PACKET_GBPS = 1e15


def _rates_fit(config: Any) -> None:
    for i, gbps in enumerate(getattr(config, "bandwidth_gbps", ())):
        if gbps > MAX_PACKET_GBPS:
            raise InputError.at(getattr(config, "source", "<network>"), f"bandwidth[{i}]",
                                f"is past {MAX_PACKET_GBPS:g} GB/s per link, which the packet backend does not "
                                f"time (its summed rates overflow; got {gbps:g}); give a link's real bandwidth, or "
                                f"use the congestion_aware backend")


def _packet(env: simpy.Environment, dims: list[BasicTopology], source: str, config: Any = None,
            **fold_hooks: Any) -> Network:
    """``fold_hooks``: a folded run's (``links_at_start``, ``path_of_route``), passed on."""
    # deferred: only the packet backend needs it; an analytical run does not load it
    from simpy_astra.network.packet import PacketNetwork

    _no_models(config, "packet")
    _rates_fit(config)

    return PacketNetwork(env, dims, source,
                         packet_size_bytes=getattr(config, "packet_size_bytes", None),
                         switch_buffer_bytes=getattr(config, "switch_buffer_bytes", None), **fold_hooks)


def _folded_pairs(build: Callable[..., Any], folding: Folding) -> Network:
    # local: folding/ imports network.backends at load, so a module-level import here is circular
    from simpy_astra.folding.network import FoldedNetwork

    return FoldedNetwork(build(), folding)


def _folded_users_pairs(build: Callable[..., Any], folding: Folding) -> Network:
    """A user's ``folds="pairs"`` backend, folded: its promise checked pair by pair."""
    # local: folding/ imports network.backends at load, so a module-level import here is circular
    from simpy_astra.folding.network import ClaimCheckedFoldedNetwork

    return ClaimCheckedFoldedNetwork(build(), folding)


def _folded_links(build: Callable[..., Any], folding: Folding) -> Network:
    # local: folding/ imports network.backends at load, so a module-level import here is circular
    from simpy_astra.folding.links import FoldedLinkNetwork

    return FoldedLinkNetwork(build, folding)


def _folded_packets(build: Callable[..., Any], folding: Folding) -> Network:
    # deferred: only a folded packet run needs it; an analytical run does not load it
    from simpy_astra.folding.packet import FoldedPacketNetwork

    return FoldedPacketNetwork(build, folding)


BACKENDS: dict[str, BackendSpec] = {spec.name: spec for spec in (
    BackendSpec("congestion_unaware", "analytical: closed-form delays, as ASTRA-sim's analytical backend",
                _congestion_unaware, "pairs", _folded_pairs, bound_check=True, times_nccl=True,
                reads_packet_settings=False, reads_element_models=False),
    BackendSpec("congestion_aware", "links queue messages, store-and-forward switches",
                _congestion_aware, "links", _folded_links, models_contention=True, reads_packet_settings=False,
                reads_element_models=True),
    # beyond ASTRA-sim: packets pipelined across hops, fair sharing, credits
    BackendSpec("packet", "packets pipelined across hops, ports shared round robin, buffers and credits",
                _packet, "links", _folded_packets, reads_packet_settings=True, reads_element_models=False),
)}

def register(spec: BackendSpec) -> BackendSpec:
    """Make ``--network-backend spec.name`` and a scenario's ``backend: spec.name`` build
    ``spec`` (a plug-in's backend, docs/backends.md); returns the registered spec. A spec
    that ``folds="pairs"`` without a ``folded`` factory gets the analytical backend's folded network,
    checking that promise on each pair it times. A name already given to another backend is a ValueError."""
    if not isinstance(spec, BackendSpec):
        raise TypeError(f"network backend {shown(spec, 120)} is not a BackendSpec(name, help, build, folds, folded)")
    if not isinstance(spec.name, str) or not spec.name.isidentifier():
        raise ValueError(f"network backend name {spec.name!r} must be a word (letters, digits, _)")
    if not callable(spec.build):
        raise TypeError(f"network backend '{spec.name}': build {shown(spec.build, 120)} is not callable")
    if unfit_call(spec.build, None, None, None, None):  # the run calls it so
        if isinstance(spec.build, type):  # the network class itself, whose __init__ takes (env, dims)
            raise TypeError(f"network backend '{spec.name}': build is the class {spec.build.__qualname__}, which "
                            f"cannot be called as build(env, dims, source, config=None); give a function that makes "
                            f"one: lambda env, dims, source, config=None: {spec.build.__qualname__}(env, dims) "
                            f"(docs/backends.md)")
        raise TypeError(f"network backend '{spec.name}': build{inspect.signature(spec.build)} cannot be called as "
                        f"build(env, dims, source, config=None) (docs/backends.md)")
    if spec.folds not in (None, "pairs", "links"):
        raise ValueError(f"network backend '{spec.name}': folds must be None, 'pairs' or 'links' (got {spec.folds!r})")
    if spec.folds == "pairs" and spec.folded is None:
        spec = replace(spec, folded=_folded_users_pairs)
    if spec.folds is not None and spec.folded is None:
        raise ValueError(f"network backend '{spec.name}': folds='links' needs its folded network (folded=...); "
                         f"or leave folds None")
    taken = BACKENDS.get(spec.name)
    if taken is not None and not same_definition(taken.build, spec.build):
        raise ValueError(f"network backend name '{spec.name}' is already taken by {origin(taken.build)}; "
                         f"register {origin(spec.build)} under another name")
    if taken is None or taken.build is not spec.build:
        spec = replace(spec, build=_returns_a_network(spec.name, spec.build))
    BACKENDS[spec.name] = spec
    return spec


def lookup(name: str) -> BackendSpec | None:
    """The backend a flag or scenario names: a registered name, ``package.module:attribute``
    naming a :class:`BackendSpec`, or an installed package's entry point in
    :data:`BACKENDS_GROUP` (either registered under the spec's own name, which the run then
    uses), as algorithms, topologies and models are named; None if nothing has that name. A
    module that cannot be imported, an attribute that is no BackendSpec, or an entry point
    named like a registered backend (which it could never be), is a :class:`PluginError`."""
    if name in BACKENDS:
        refuse_shadowed_entry_point(BACKENDS_GROUP, name, BACKENDS[name].build)
        return BACKENDS[name]
    found = import_object(name) if ":" in name else from_entry_point(BACKENDS_GROUP, name)
    if found is None:
        return None
    if not isinstance(found, BackendSpec):
        what = f"the class {found.__qualname__}" if isinstance(found, type) else a_kind(found)
        raise PluginError(f"network backend '{name}' is {what}, not a BackendSpec(name, help, "
                          f"build, folds, folded) (docs/backends.md)")
    try:
        return register(found)
    except (TypeError, ValueError) as exc:  # register's own words name the spec: said once, as written
        said = str(exc).removeprefix(f"network backend '{found.name}': ")
        named = f"network backend '{name}'" + (f" (BackendSpec '{found.name}')" if found.name != name else "")
        raise PluginError(f"{named}: {said}") from None


def registered_name(written: str) -> str:
    """The name the backend ``written`` runs under: ``loggp:LOGGP`` is the backend ``loggp`` (a
    sweep over both spellings compares them as one); ``written`` itself when nothing by that
    spelling loads (its points fail, saying why)."""
    if written in BACKENDS or ":" not in written:
        return written
    try:
        found = lookup(written)
    except (PluginError, InputError):
        return written
    return found.name if found is not None else written


#: what a run asks of every backend (:class:`simpy_astra.network.Network`)
_NETWORK_MEMBERS = ("send", "recv", "board", "graph", "label", "pair_delays_only", "has_links", "has_faults",
                    "links", "link", "link_stats", "send_background", "fail_device")


def _returns_a_network(name: str, build: Builder) -> Builder:
    """``build`` refusing to hand the run what is not a network (None, a dict): one line naming
    what it lacks, not an AttributeError deep in the run."""
    @functools.wraps(build)
    def checked(*args: Any, **kwargs: Any) -> Network:
        try:
            network = build(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - theirs is reported as theirs, ours goes on up
            if isinstance(exc, InputError) or not raised_in_users_code(exc):  # an InputError: their words
                raise
            raise PluginError(user_code_problem(f"network backend '{name}', build()", exc), exc) from None
        have = getattr(network, "__dict__", {})
        missing = [m for m in _NETWORK_MEMBERS if not hasattr(type(network), m) and m not in have]
        if missing:
            cls = type(network).__name__
            # a subclass of a network of ours lacks what our __init__ sets: its own skipped ours
            # (a bare faults.WithoutLinks sets nothing: its members are the author's to write)
            ours = [base for base in type(network).__mro__[1:] if is_ours(base)]
            fix = (f"{cls}.__init__ must call super().__init__(env, dims), which sets them (docs/backends.md)"
                   if any("__init__" in vars(base) for base in ours) else
                   "return a simpy_astra.network.Network (e.g. a CongestionUnawareNetwork subclass, docs/backends.md)")
            raise PluginError(f"network backend '{name}': build returned {cls}, which has no "
                              f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}; {fix}")
        config = args[3] if len(args) > 3 else kwargs.get("config")
        _models_taken(name, config, network)
        if isinstance(network, RegisteredName):  # a subclass of ours: its errors name the backend run
            network.run_as(name)
        for method in ("send", "message_delay_ns"):  # what a backend of one's own overrides, called unawaited
            if asyncio_kind(getattr(network, method, None)):
                raise PluginError(f"network backend '{name}': {type(network).__qualname__}.{method} is "
                                  f"{asyncio_kind(getattr(network, method))} (async def), which nothing in a SimPy "
                                  f"run awaits: write it as a plain method (docs/backends.md)")
        delay = getattr(network, "message_delay_ns", None)  # the hook a backend of one's own overrides
        unfit = unfit_call(delay, None, None, None) if callable(delay) else None
        if unfit:  # else the first send fails at the call, before a line of theirs runs
            raise PluginError(f"network backend '{name}': {unfit} cannot be called as message_delay_ns(src, dst, "
                              f"size_bytes) (docs/backends.md)")
        return network

    return checked


def _models_taken(name: str, config: Any, network: Network) -> None:
    """A ``link-model`` or ``switch-model`` the network YAML names, refused unless the plug-in's
    network built its links or switches from it (a congestion_aware subclass handed it on): a
    backend of one's own that ignores its ``config`` ran without the model, in silence."""
    from simpy_astra.network.models import lookup_link, lookup_switch

    for key, lookup_model in (("link_model", lookup_link), ("switch_model", lookup_switch)):
        named = getattr(config, key, None)
        if named and getattr(network, key, None) is not lookup_model(named):
            # named as it was given: Simulation's keyword (link_model=), else the YAML's field
            given = (config.model_field(key) if hasattr(config, "model_field") else
                     f"{getattr(config, 'source', '<network>')}: field '{key.replace('_', '-')}'")
            raise InputError(f"{given} is not read by the {name} backend (its build does not hand {named!r} to "
                             f"its {key.split('_')[0]}s); link and switch models replace the congestion_aware "
                             f"backend's: run on congestion_aware, or leave it out")


#: the backend of a run that names none (the command line, a scenario, a sweep, calibration)
DEFAULT_BACKEND = "congestion_unaware"
#: the backend the bound check suggests: the first that models contention
CONTENTION_BACKEND = next(name for name, spec in BACKENDS.items() if spec.models_contention)


def unread_packet_settings(config: Any, backend: str) -> list[str]:
    """A note when the network YAML's packet-backend settings are given to a backend that does
    not read them. A note, not an error: a sweep over backends keeps one network YAML for all
    of them (scenarios/sweeps/mesh_backends.yaml), yet a run on another backend alone took a
    ``packet-size: 512`` in silence, its figures those without it."""
    spec = BACKENDS.get(backend)
    if spec is None or spec.reads_packet_settings is not False:
        return []
    given = [key for key, attr in (("packet-size", "packet_size_bytes"), ("switch-buffer", "switch_buffer_bytes"))
             if getattr(config, attr, None) is not None]
    if not given:
        return []
    both = len(given) > 1
    fields = " and ".join(f"'{key}'" for key in given)
    return [f"{getattr(config, 'source', '<network>')}: field{'s' * both} {fields} {'are' if both else 'is'} "
            f"accepted but change{'' if both else 's'} nothing on the {backend} backend: only the packet backend "
            f"splits messages into packets and buffers them in switches; run with --network-backend packet, or "
            f"remove {'them' if both else 'it'}"]
