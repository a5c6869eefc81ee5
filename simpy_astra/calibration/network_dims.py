"""A network calibrate can fit (one bandwidth and latency per dimension, given as lists), and
the leading dimensions a log's GPUs span, with the network and system cut to them.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from simpy_astra.errors import InputError


def refuse_unfittable(network: dict[str, Any], where: str) -> None:
    """A network calibrate cannot fit, said before the simulator reads it (so a graph's module
    need not import first): a networkx graph, whose links carry their own values, or a whole
    scenario given for its network."""
    topology = network.get("topology")
    if isinstance(topology, dict) and "networkx" in topology:
        raise InputError.at(where, "topology", "is a networkx graph ({networkx: ...}), whose links carry their own "
                                               "bandwidth and latency; calibrate fits one bandwidth and latency per "
                                               "dimension, so give lists with one entry per dimension: topology "
                                               "(Ring, Switch, FullyConnected or Line), npus_count, bandwidth, latency")
    if "topology" not in network and isinstance(network.get("network"), dict | str):
        raise InputError(f"{where}: is a scenario (it has network:, no topology:); --network takes a network "
                         f"YAML: save the scenario's network: block as a file of its own and give that")


def check_network(network: dict[str, Any], where: str) -> None:
    refuse_unfittable(network, where)
    for key in ("topology", "npus_count", "bandwidth", "latency"):
        if not isinstance(network.get(key), list) or not network[key]:
            raise InputError.at(where, key, "must be a list with one entry per dimension")
    if "Graph" in network["topology"]:
        raise InputError.at(where, "topology", "calibrate fits per-dimension bandwidth and latency; "
                                               "a Graph dimension carries its own per-link values, "
                                               "which it does not scale (use Ring, Switch, "
                                               "FullyConnected or Line)")


def span(network: dict[str, Any], ranks: int, where: str, per_host: int | None = None) -> list[int]:
    """The NPU counts per dimension a run on ``ranks`` GPUs uses: the leading dimensions,
    the last one possibly in part (16 GPUs of an 8 x 8 network use 8 x 2: two of its nodes).
    A log's hosts of ``per_host`` GPUs each must fill whole leading dimensions: a network of
    4 x 4 for two hosts of 8 fitted its 'node' links to pairs inside a host and across alike."""
    used = _leading(network, ranks, where)
    products = [math.prod(used[:d + 1]) for d in range(len(used))]
    if per_host is not None and per_host < ranks and per_host not in products:
        shape = " x ".join(str(n) for n in used)
        raise InputError(f"{where}: the log's {ranks} GPUs sit {per_host} to a host (its Rank lines), but the "
                         f"network's dimensions ({shape}) do not end at a host's GPUs; give --network's npus_count "
                         f"[{per_host}, {ranks // per_host}] (or dimensions within a host whose product is "
                         f"{per_host})")
    return used


def _leading(network: dict[str, Any], ranks: int, where: str) -> list[int]:
    counts = [int(n) for n in network["npus_count"]]
    used: list[int] = []
    product = 1
    for n in counts:
        if product * n >= ranks:
            if ranks % product == 0 and ranks // product >= 2:
                used.append(ranks // product)
                return used
            if ranks == product:
                return used
            break
        used.append(n)
        product *= n
    shape = " x ".join(str(n) for n in counts)
    raise InputError(f"{where}: the log ran on {ranks} GPUs, which the network ({shape}) cannot hold "
                     f"as its leading dimensions (the last one possibly in part); give a network "
                     f"whose first dimensions hold exactly the GPUs of the run")


def sub_network(network: dict[str, Any], counts: list[int]) -> dict[str, Any]:
    """The network restricted to the leading ``len(counts)`` dimensions, with these NPU counts."""
    out = copy.deepcopy(network)
    dims = len(counts)
    for key in ("topology", "bandwidth", "latency"):
        out[key] = list(network[key])[:dims]
    out["npus_count"] = list(counts)
    return out


def sub_system(system: dict[str, Any], dims: int) -> dict[str, Any]:
    out = dict(system)
    for key, value in system.items():
        if key.endswith("-implementation") and isinstance(value, list) and len(value) > dims:
            out[key] = value[:dims]
    return out
