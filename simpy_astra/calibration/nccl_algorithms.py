"""``calibrate --nccl-algo ALGO:FROM[:TO]``: NCCL's all-reduce algorithms
(:mod:`simpy_astra.engine.nccl_tuning`) fitted on an nccl-tests log, each on the size range where the
log shows NCCL running it.

The machine comes from the network YAML as cluster presets state it: dimension 0 is a node
(its GPUs on NVSwitch, bandwidth = NVLink per GPU), dimension 1, if any, the nodes (bandwidth
= one GPU's NIC); NVLS where the log's GPUs are NVSwitch-3 ones (H100 and later). For each
range, the algorithm's bandwidth share and latency scale are fitted on every other size
(:func:`simpy_astra.engine.nccl_fit.fit`); then LL and LL128, for each algorithm NCCL's choice
runs them with outside the ranges, on every other such size above 4 KiB
(:func:`simpy_astra.engine.nccl_fit.fit_protocol`); every size of the range is then predicted by NCCL's
choice, and the report says, per size, whether it was fitted or held out, the error,
whether the choice is the algorithm the range names, and the channels and threads NCCL runs
it on there (:func:`simpy_astra.engine.nccl_tuning.channels`).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from simpy_astra.config.gpu_names import gpu_generation, has_nvls
from simpy_astra.engine.nccl_fit import fit, fit_launch, fit_protocol
from simpy_astra.engine.nccl_tuning import ALGORITHMS, Links, Shape, channels, choose, predict_us, protocol
from simpy_astra.errors import InputError

GIB_IN_GB = 2**30 / 1e9
#: the sizes the call's fixed cost is fitted on: NCCL's latency is nearly all of their time
SMALL_BYTES = 4096


def parse_range(text: str) -> tuple[str, int, int | None]:
    """``ring:268435456`` or ``ring:33554432:134217728`` (bytes): algorithm, first, last size."""
    m = re.fullmatch(r"(\w+):(\d+)(?::(\d+))?", text)
    if m is None or m.group(1) not in ALGORITHMS:
        raise InputError(f"--nccl-algo: {text!r} must be ALGO:FROM[:TO] in bytes, ALGO one of "
                         f"{', '.join(ALGORITHMS)} (e.g. nvls:134217728){_range_fix(text)}")
    first, last = int(m.group(2)), (int(m.group(3)) if m.group(3) else None)
    if last is not None and last < first:
        raise InputError(f"--nccl-algo: {text!r}: TO must be at least FROM")
    return m.group(1), first, last


def _range_fix(text: str) -> str:
    """The range to write for one whose sizes are floats or whose algorithm is in capitals
    (``ring:1e6``, ``RING:1``), as a flag of integers is told its integer; else ''."""
    algo, *sizes = text.split(":")
    if algo.lower() not in ALGORITHMS or not 1 <= len(sizes) <= 2:
        return ""
    try:
        numbers = [float(size) for size in sizes]
    except ValueError:
        return ""
    if not all(math.isfinite(n) and 0 <= n < 2**63 and n.is_integer() for n in numbers):
        return ""
    return "; write " + ":".join([algo.lower(), *(str(int(n)) for n in numbers)])


def parse_ranges(texts: list[str]) -> list[tuple[str, int, int | None]]:
    """Every ``--nccl-algo`` range (:func:`parse_range`), one an algorithm and none sharing a
    size: NCCL runs one algorithm a size, and a second range of one algorithm would replace
    the first's fit, leaving its sizes timed by the other's."""
    ranges = [parse_range(text) for text in texts]
    seen: dict[str, str] = {}
    for text, (algo, _, _) in zip(texts, ranges, strict=True):
        if algo in seen:
            raise InputError(f"--nccl-algo: {algo} twice ({seen[algo]} and {text}); give each algorithm one "
                             f"range, FROM to TO, where NCCL ran it")
        seen[algo] = text
    spans = [(first, math.inf if last is None else last) for _, first, last in ranges]
    for i, (first, last) in enumerate(spans):
        for j in range(i + 1, len(spans)):
            if first <= spans[j][1] and spans[j][0] <= last:
                raise InputError(f"--nccl-algo: the {ranges[i][0]} and {ranges[j][0]} ranges overlap ({texts[i]}, "
                                 f"{texts[j]}): NCCL runs one algorithm a size; end one where the other begins")
    return ranges


def machine(network: dict[str, Any], devices: list[str]) -> tuple[Links, Shape]:
    """The links and the all-reduce's shape of a node x nodes network YAML."""
    counts = [int(n) for n in network["npus_count"]]
    if len(counts) > 2:
        raise InputError(f"--nccl-algo: the network must be [GPUs per node] or [GPUs per node, nodes] "
                         f"(got {counts})")
    per_node, nodes = counts[0], (counts[1] if len(counts) == 2 else 1)
    bws = [float(b) * GIB_IN_GB for b in network["bandwidth"]]
    nvls = any(has_nvls(d) for d in devices)
    # NCCL's constants by GPU: LL's ceiling in a node, the caps per channel, NVLS's speeds
    generation = next((g for g in map(gpu_generation, devices) if g), "")
    return (Links(bws[0], bws[1] if nodes > 1 else bws[0], nvls, generation=generation),
            Shape(per_node * nodes, nodes, per_node))


def fit_log(log, network: dict[str, Any], ranges: list[tuple[str, int, int | None]],
            in_place: bool = False, no_ll128: tuple[str, ...] = ()) -> dict[str, Any]:
    """The call's fixed cost fitted on the log's sizes up to :data:`SMALL_BYTES`; each range's
    algorithm fitted on every other size of it; every size of the log reported: in a range
    (fitted or held out) or outside them, with NCCL's choice and the error of its time.
    ``no_ll128``: the algorithms NCCL does not run with LL128 across this machine's nodes."""
    links, shape = machine(network, log.devices)
    if shape.nodes > 1 and no_ll128:
        links = replace(links, ll128_across_nodes=tuple(a for a in links.ll128_across_nodes if a not in no_ll128))
    points = [(r.size_bytes, r.inplace_time_us if in_place else r.time_us) for r in log.rows]
    points = [(size, t) for size, t in points if size > 0 and t]

    def rows(first: int, last: int | None) -> list[tuple[int, float]]:
        return [(size, t) for size, t in points if size >= first and (last is None or size <= last)]

    small = [(size, t) for size, t in points if size <= SMALL_BYTES]
    if small:
        links = fit_launch(links, shape, small)
    for algo, first, last in ranges:
        if algo == "nvls" and not links.nvls:
            raise InputError(f"--nccl-algo: nvls needs NVSwitch-3 GPUs; {log.path} ran on "
                             f"{', '.join(sorted(set(log.devices))) or 'unnamed GPUs'}")
        count = len(rows(first, last))
        if count < 2:
            raise InputError(f"--nccl-algo: {algo}:{first}{f':{last}' if last else ''}: {log.path} has "
                             f"{count} size(s) in that range; two or more are needed")
        try:
            links = fit(links, shape, algo, _every_other(rows(first, last)))
        except ValueError as exc:
            raise InputError(f"--nccl-algo: {algo}: {exc}") from None
    # LL and LL128 as the machine runs them, each on the sizes outside the ranges where NCCL
    # runs it; one a range holds for its algorithm is timed by that range's fit instead
    covered = {(algo, protocol(links, shape, algo, size)) for algo, first, last in ranges
               for size, _ in rows(first, last)}
    ranged = {size for _, first, last in ranges for size, _ in rows(first, last)}
    groups = _protocol_groups(links, shape, [(size, t) for size, t in points
                                             if size > SMALL_BYTES and size not in ranged])
    groups = {key: pts for key, pts in groups.items() if key not in covered}
    for (algo, proto), pts in groups.items():
        try:
            links = fit_protocol(links, shape, algo, proto, _every_other(pts))
        except ValueError:
            raise InputError(f"--nccl-algo: {log.path}: {algo} with {proto} ({pts[0][0]} to {pts[-1][0]} bytes, "
                             f"NCCL's choice there): the times do not grow with the size, so its bandwidth "
                             f"cannot be fitted; check those rows of the log") from None
    fitted_protocols = {pt for pts in groups.values() for pt in _every_other(pts)}
    sizes = []
    for algo, first, last in ranges:
        pts = rows(first, last)
        fitted = set(_every_other(pts))
        sizes += [_row(links, shape, size, measured, algo, "fitted" if (size, measured) in fitted else "held out")
                  for size, measured in pts]
    outside = [_row(links, shape, size, measured, None, "outside the ranges" + (
                   ", fitted" if (size, measured) in fitted_protocols else ""))
               for size, measured in points if size not in ranged]
    return {"log": log.path, "gpus": shape.ranks, "nodes": shape.nodes, "nvls": links.nvls,
            "ll128_across_nodes": list(links.ll128_across_nodes), "launch_us": links.launch_us,
            "launch_sizes": len(small),
            "efficiency": dict(links.efficiency), "latency_scale": dict(links.latency_scale),
            "tree_chunk_us": links.tree_chunk_us,
            "protocols": {key: {"bandwidth": bw, "latency": lat} for key, bw, lat in links.protocol_scale},
            "sizes": sorted(sizes, key=lambda r: r["size_bytes"]), "outside": outside}


def _every_other(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The points a fit is made on (every other; both of two), the rest held out."""
    return points[::2] if len(points) > 2 else points


def _protocol_groups(links: Links, shape: Shape,
                     points: list[tuple[int, float]]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """The points NCCL runs with LL or LL128, by (algorithm, protocol) of its choice; groups of
    two or more."""
    groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for size, t in points:
        algo = choose(links, shape, size)
        proto = protocol(links, shape, algo, size)
        if proto != "Simple":
            groups.setdefault((algo, proto), []).append((size, t))
    return {key: pts for key, pts in groups.items() if len(pts) >= 2}


def _row(links: Links, shape: Shape, size: int, measured: float, algo: str | None, role: str) -> dict[str, Any]:
    chosen = choose(links, shape, size)
    predicted, proto = predict_us(links, shape, chosen, size)
    nc, nt = channels(links, shape, chosen, proto, size)
    return {"size_bytes": size, "algorithm": algo, "chosen": chosen, "protocol": proto, "channels": nc, "threads": nt,
            "measured_us": measured, "predicted_us": round(predicted, 3), "error": round(predicted / measured - 1, 5),
            "role": role}
