"""NCCL's tuning model (:mod:`simpy_astra.engine.nccl_tuning`) fitted to what a machine achieves:
the terms of :func:`~simpy_astra.engine.nccl_tuning.predict_us` solved for from measured
(bytes, us) points of an nccl-tests log (``calibrate --nccl-algo``,
:mod:`simpy_astra.calibration.nccl_algorithms`).

Each fit is least squares on relative error over terms the model is linear in: the call's
fixed cost (:func:`fit_launch`), then each algorithm's share of the links' bandwidth and
Simple's latency scale (:func:`fit`), then what LL and LL128 achieve against NCCL's constants
for them (:func:`fit_protocol`). NCCL's choice of algorithm and protocol is never fitted: it
stays NCCL's, on the links' nominal rates.
"""

from __future__ import annotations

from dataclasses import replace

from simpy_astra.engine.nccl_tuning import (
    PROTOCOLS,
    Links,
    Shape,
    choose,
    halved_chunks,
    latency_us,
    predict_us,
    protocol,
    protocol_gb_s,
    protocol_key,
)


def fit_launch(links: Links, shape: Shape, points: list[tuple[int, float]]) -> Links:
    """``links`` with the call's fixed cost fitted on measured (bytes, us) points of small sizes
    (where NCCL's latency is nearly all of its estimate): the median of what the measured time
    leaves over NCCL's chosen algorithm's time without it (median: a log's small sizes carry
    the odd outlier of a first call or a context switch)."""
    if not points:
        raise ValueError("no sizes to fit the call's fixed cost on")
    bare = replace(links, launch_us=0.0)
    rest = sorted(t - predict_us(bare, shape, choose(bare, shape, size), size)[0] for size, t in points)
    mid = len(rest) // 2
    median = rest[mid] if len(rest) % 2 else (rest[mid - 1] + rest[mid]) / 2
    return replace(links, launch_us=round(max(median, 0.0), 3))


def _solve(rows: list[tuple[float, float, float]]) -> tuple[float, float]:
    """(a, b) minimising sum(a x + b y - r)^2 over rows (x, y, r)."""
    s_aa = sum(x * x for x, _, _ in rows)
    s_bb = sum(y * y for _, y, _ in rows)
    s_ab = sum(x * y for x, y, _ in rows)
    s_a, s_b = sum(x * r for x, _, r in rows), sum(y * r for _, y, r in rows)
    det = s_aa * s_bb - s_ab * s_ab
    if len(rows) < 2 or det <= 0:
        raise ValueError("fit needs two or more sizes of different per-byte share")
    return (s_a * s_bb - s_b * s_ab) / det, (s_aa * s_b - s_ab * s_a) / det


#: the largest share of the links' bandwidth a fit may find (the logs' fits find 0.74-1.04):
#: past it the times do not grow with the size, and the links' rates say nothing of them
MAX_SHARE = 100.0


def _fitted_share(b: float) -> float:
    """The share ``1 / b`` a fit found, as kept (4 decimals); refused when it leaves the
    transfer no time or rounds to nothing (a later time would divide by it)."""
    if b <= 0 or round(1 / b, 4) <= 0:
        raise ValueError("its sizes' times leave nothing for the transfer")
    return round(1 / b, 4)


def fit(links: Links, shape: Shape, algo: str, points: list[tuple[int, float]]) -> Links:
    """``links`` with ``algo``'s efficiency and Simple latency scale fitted to measured
    (bytes, us) points where NCCL runs it, each with the protocol NCCL picks there and the
    call's fixed cost taken off: time = launch + [scale x] latency + bytes / (eff x bw) is
    linear in (scale, 1 / eff), so least squares on relative error solves it directly. Where
    NCCL halved some points' tree chunks, the halved chunks' cost is fitted instead of the
    scale (then 1): time = launch + latency + bytes / (eff x bw) + chunks x cost. LL's and
    LL128's factors are not read: they are fitted after it, on sizes no range holds
    (:func:`fit_protocol`)."""
    halved = any(halved_chunks(links, shape, algo, protocol(links, shape, algo, size), size) > 0
                 for size, _ in points)
    rows = []  # (latency or halved-chunk share, per-byte share, what is left of 1) of each point, over t
    for size, t in points:
        proto = protocol(links, shape, algo, size)
        p = PROTOCOLS.index(proto)
        lat0 = latency_us(shape, algo, p)
        per_byte = size / (1000 * protocol_gb_s(links, shape, algo, p, size, 1.0))  # at efficiency 1
        if halved:
            rows.append((halved_chunks(links, shape, algo, proto, size) / t, per_byte / t,
                         1 - (links.launch_us + lat0) / t))
        else:
            scaled = proto == "Simple"
            rows.append(((lat0 if scaled else 0.0) / t, per_byte / t,
                         1 - (links.launch_us + (0.0 if scaled else lat0)) / t))
    a, b = _solve(rows)
    if a < 0 or b <= 0:  # latency (or the chunks' cost) not resolved by these sizes: bandwidth alone
        a, b = 0.0, sum(y * r for _, y, r in rows) / sum(y * y for _, y, _ in rows)
    chunk_us = links.tree_chunk_us
    if halved:
        chunk_us, a = a, 1.0
    share = _fitted_share(b)
    if share > MAX_SHARE:
        raise ValueError(f"its sizes' times ask {share:.3g} times the links' bandwidth; they hardly grow with "
                         f"the size, or the network's bandwidth is far below the machine's")
    eff = dict(links.efficiency) | {algo: share}
    scale = dict(links.latency_scale) | {algo: round(a, 4)}
    return replace(links, efficiency=tuple(sorted(eff.items())), latency_scale=tuple(sorted(scale.items())),
                   tree_chunk_us=round(chunk_us, 4))


def fit_protocol(links: Links, shape: Shape, algo: str, proto: str, points: list[tuple[int, float]]) -> Links:
    """``links`` with what ``algo`` achieves with ``proto`` (LL or LL128) fitted to measured
    (bytes, us) points where NCCL runs it so: time = launch + lat_factor x latency + bytes /
    (bw_factor x bw), linear in (lat_factor, 1 / bw_factor) as :func:`fit`. LL's latency stays
    NCCL's: the smallest sizes, where it is nearly all of NCCL's time, fit the call's fixed
    cost (:func:`fit_launch`) with it. Where the sizes do not resolve the latency, the
    bandwidth alone."""
    p = PROTOCOLS.index(proto)
    eff, _ = links.scaled(algo)
    rows = []
    for size, t in points:
        lat0 = latency_us(shape, algo, p)
        per_byte = size / (1000 * protocol_gb_s(links, shape, algo, p, size, eff))
        rows.append((lat0 / t, per_byte / t, 1 - links.launch_us / t))
    try:
        a, b = _solve(rows) if proto != "LL" else (-1.0, 0.0)
    except ValueError:
        a, b = -1.0, 0.0
    if a <= 0 or b <= 0:
        rows = [(0.0, y, r - x) for x, y, r in rows]
        a, b = 1.0, sum(y * r for _, y, r in rows) / sum(y * y for _, y, _ in rows)
    try:
        share = _fitted_share(b)
    except ValueError as exc:
        raise ValueError(f"{proto}: {exc}") from None
    key = protocol_key(shape, algo, proto)
    scale = [e for e in links.protocol_scale if e[0] != key] + [(key, share, round(a, 4))]
    return replace(links, protocol_scale=tuple(sorted(scale)))
