"""What ``Simulation(...)``'s keyword arguments replace in a scenario's network: a networkx
graph handed in as ``topology=`` (with its ``routes=``) and link and switch models handed in
as classes or names (``link_model=``, ``switch_model=`` and their parameters), each checked as
the network YAML's own keys are and named by its keyword in errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from simpy_astra.config.network import NetworkConfig, graph_problem, graph_spec
from simpy_astra.errors import InputError
from simpy_astra.infra import horizon
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.plugins import PluginError
from simpy_astra.topologies import GraphSpecError, networkx_dimension_values


def with_graph(net: NetworkConfig, graph: Any, routes: Any = None, where: str = "topology=") -> NetworkConfig:
    """``net`` with its dimensions replaced by one Graph dimension from a networkx DiGraph
    handed in from Python (``Simulation(..., topology=G, routes=...)``); its other settings
    (link models, packet sizes, cost) stay. The graph must have as many NPUs as ``net``: the
    workload and comm groups were checked against that count."""
    try:
        n, spec = graph_spec(graph, None, routes)
    except GraphSpecError as exc:
        problem = f"{exc.field} {exc.problem}" if exc.field.startswith("routes") else graph_problem(exc)
        raise InputError(f"{where}: got {problem}") from None
    if n != net.total_npus:
        raise InputError(f"{where}: the graph has {n} NPUs but {net.source} has {net.total_npus}; the "
                         f"workload, comm groups and memory are checked against the network's NPU count, "
                         f"so give a network with {n} NPUs")
    bandwidth, latency = networkx_dimension_values(spec)  # the slowest link, the largest latency
    horizon.check_ns(latency, where, "latency_ns", " per hop (the graph's largest)")
    horizon.check_bandwidth(network_gbps_to_bytes_per_ns(bandwidth), where, "bandwidth_gbps (the graph's slowest)")
    return dataclasses.replace(net, topology=("Graph",), npus_count=(n,), bandwidth_gbps=(bandwidth,),
                               latency_ns=(latency,), graph_specs=(spec,))


def with_models(inputs: Any, link_model: Any = None, link_params: dict[str, Any] | None = None,
                switch_model: Any = None, switch_params: dict[str, Any] | None = None) -> Any:
    """``inputs`` with link and switch models handed to ``Simulation(link_model=MyLink,
    link_params={...}, switch_model=..., switch_params=...)``: a class (registered under its
    ``module:Class`` name) or a name as the YAML's ``link-model`` takes, its parameters
    checked as the YAML's are (congestion-aware backend)."""
    # deferred: only link/switch models need network.models; an analytical run does not load it
    from simpy_astra.network.models import (
        LINK_ARGS,
        SWITCH_ARGS,
        check_params,
        lookup_link,
        lookup_switch,
        register_link,
        register_switch,
        trial_problem,
    )

    net = inputs.network
    for key, model, params, register, lookup, contract in (
            ("link_model", link_model, link_params, register_link, lookup_link, LINK_ARGS),
            ("switch_model", switch_model, switch_params, register_switch, lookup_switch, SWITCH_ARGS)):
        if params is not None and not isinstance(params, Mapping):  # dict() took a list apart
            raise InputError(f"{key.replace('model', 'params')}=: expected a dict of the model's "
                             f"parameters, {{name: value}} (got {params!r})")
        if model is None:
            if params:
                raise InputError(f"{key.replace('model', 'params')}=: parameters of which model? give {key}= too")
            continue
        try:
            if isinstance(model, type):
                name = f"{model.__module__}:{model.__qualname__}"
                register(name, model)
            else:
                name = model
                if not isinstance(name, str) or not name:
                    raise PluginError(f"must be a class or a model's name (got {model!r})")
                model = lookup(name)
        except PluginError as exc:
            raise InputError(f"{key}=: {exc}") from None
        params = dict(params or {})
        problem = check_params(model, params, contract) or trial_problem(model, params, key == "link_model")
        if problem is not None:
            raise InputError(f"{key}=: ({name}) {problem}")
        net = replace(net, **{key: name, key.replace("model", "params"): tuple(params.items())},
                      models_from_python=(*net.models_from_python, key))
    return replace(inputs, network=net)


def with_topology(inputs: Any, graph: Any, routes: Any) -> Any:
    """``inputs`` (a :class:`~simpy_astra.config.inputs.SimulationInputs`) on ``graph``, a
    ``networkx.DiGraph`` handed to ``Simulation(topology=, routes=)``."""
    if graph is None:
        raise InputError("routes=: pins paths of a graph handed in as topology=; give topology= too")
    return replace(inputs, network=with_graph(inputs.network, graph, routes))


def with_python_overrides(inputs: Any, topology: Any = None, routes: Any = None, link_model: Any = None,
                          link_params: dict | None = None, switch_model: Any = None,
                          switch_params: dict | None = None) -> Any:
    """``inputs`` with what ``Simulation(...)``'s keyword arguments replace: a networkx
    topology and its routes (:func:`with_topology`), element models (:func:`with_models`)."""
    if topology is not None or routes is not None:
        inputs = with_topology(inputs, topology, routes)
    if link_model is not None or switch_model is not None or link_params or switch_params:
        from simpy_astra.network.backends import BACKENDS  # deferred: the backends import models, plug-ins

        spec = BACKENDS.get(inputs.backend)
        if spec is not None and spec.reads_element_models is False:  # named as given, not as a YAML field
            given = "link_model=" if link_model is not None or link_params else "switch_model="
            raise InputError(f"{given}: element models replace the links and switches of the congestion_aware "
                             f"backend only, and this run's is {inputs.backend}; pass backend='congestion_aware'")
        inputs = with_models(inputs, link_model, link_params, switch_model, switch_params)
    return inputs
