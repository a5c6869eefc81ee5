"""Fit network parameters to measured times, through a linear model of the simulator.

Everything that runs the simulator goes through
:func:`~simpy_astra.calibration.simulator_adapter.simulate_collective`, the one place
that knows the engine's entry point (a scenario with an inline network and system and a
generated microbenchmark workload, exactly what ``simpy-astra run`` reads).

The fit rests on a property of the congestion-unaware backend: every message costs
``endpoint delay + hops x latency + bytes / bandwidth`` (plus a reduction delay set by
``local-mem-bw``), so a collective's simulated time is, up to integer truncation, linear in
the per-dimension latencies ``L_d``, the endpoint delay ``E`` and the inverse bandwidths
``1/B_d``::

    T(S) = c + e*E + sum_d l_d*L_d + S * (r + sum_d b_d / B_d)

The coefficients depend on the topology, the algorithms and the chunking, not on the
parameter values (with one chunk per collective; pipelined chunks over several dimensions
make it piecewise linear, hence the re-probing in :func:`calibrate`), so :func:`probe` reads
them off a handful of simulations (one base run and one per parameter). The fit then has a
few non-negative unknowns (a latency and a bandwidth scale per group of dimensions) and
minimises the geometric-mean error by trying every vertex of that small problem: no starting
point, no iteration, the same answer every time. Validation simulates every logged size.

Its parts: :mod:`~simpy_astra.calibration.simulator_adapter` runs the simulator,
:mod:`~simpy_astra.calibration.system_defaults` and :mod:`~simpy_astra.calibration.network_dims`
set up what is fitted, :mod:`~simpy_astra.calibration.geomean_solver` solves the fit.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.calibration.geomean_solver import geomean_error, minimise
from simpy_astra.calibration.local_copy import memory_gbps, own_chunk_copy_ns
from simpy_astra.calibration.network_dims import check_network, span, sub_network, sub_system
from simpy_astra.calibration.simulator_adapter import comm_size, simulate_collective
from simpy_astra.errors import InputError
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND

#: bytes per GB in the network YAML (``simpy_astra/infra/units.py``: bandwidth is GiB/s)
YAML_GB = 2**30
MIB = 1 << 20


# ------------------------------------------------------------------------------ the model
@dataclass
class LinearModel:
    """T(S) = c + e*E + sum_d l[d]*L_d + S*(r + sum_d b[d]/B_d), in ns; S in bytes of comm_size."""

    collective: str
    ranks: int
    dims: int
    c: float
    e: float
    l: list[float]  # noqa: E741 - the latency coefficients
    r: float
    b: list[float]

    def time_ns(self, size: float, latency: list[float], bandwidth: list[float], endpoint: float) -> float:
        t = self.c + self.e * endpoint + self.r * size
        for d in range(self.dims):
            t += self.l[d] * latency[d] + size * self.b[d] / (bandwidth[d] * YAML_GB / 1e9)
        return t


def probe(network: dict[str, Any], system: dict[str, Any], collective: str, ranks: int,
          backend: str = DEFAULT_BACKEND) -> LinearModel:
    """Linearise the simulated time around the given parameters: 4 + 2 x dims simulations.

    Exact wherever the time is linear in the parameters (one chunk per collective, or one
    dimension); :func:`calibrate` re-probes at the fitted point until the fit stops moving,
    which also covers chunk pipelines across dimensions, whose time is piecewise linear."""
    dims = len(network["npus_count"])
    step_ns = 10_000.0  # added to one latency / the endpoint delay: far above truncation
    size = 64 * MIB * ranks  # large enough that per-message truncation is negligible
    lat = [float(v) for v in network["latency"]]
    bw = [float(v) for v in network["bandwidth"]]
    e0 = float(system.get("endpoint-delay", 10))

    def sim(latency: list[float], bandwidth: list[float], endpoint: float, s: int) -> int:
        net = dict(network, latency=latency, bandwidth=bandwidth)
        sys_ = dict(system, **{"endpoint-delay": int(round(endpoint))})
        return simulate_collective(net, sys_, collective, s, ranks, backend)

    t0 = sim(lat, bw, e0, size)
    slope = (t0 - sim(lat, bw, e0, size // 2)) / (size - size // 2)
    e = (sim(lat, bw, e0 + step_ns, size) - t0) / step_ns
    lat_coef, bw_coef = [], []
    for d in range(dims):
        more = list(lat)
        more[d] += step_ns
        lat_coef.append((sim(more, bw, e0, size) - t0) / step_ns)
        half = list(bw)
        half[d] = bw[d] / 2  # 1/B doubles: the added time is S * b_d / B_d
        bw_coef.append((sim(lat, half, e0, size) - t0) * (bw[d] * YAML_GB / 1e9) / size)
    link_slope = sum(bw_coef[d] / (bw[d] * YAML_GB / 1e9) for d in range(dims))
    r = slope - link_slope
    c = t0 - e * e0 - sum(lat_coef[d] * lat[d] for d in range(dims)) - slope * size
    return LinearModel(collective, ranks, dims, c, e, lat_coef, r, bw_coef)


# ------------------------------------------------------------------------------- the fit
@dataclass
class Observation:
    """One measured point: a log row (size as printed by nccl-tests, time in ns)."""

    log: str
    line: int
    collective: str
    ranks: int
    nccl_size: int
    time_ns: float
    copy_ns: float = 0.0  # the rank's own chunk copied locally (calibration/local_copy.py), not simulated


@dataclass
class FitResult:
    latency_ns: list[float]
    bandwidth_gbps: list[float]
    endpoint_delay_ns: int
    groups: list[list[int]]  # dimensions fitted together (spanned by the same logs)
    used_points: int
    objective: float  # geometric mean of (1 + |relative error|) - 1 over the used points
    model_errors: list[float] = field(default_factory=list)  # per used point, model vs measured


def fit(network: dict[str, Any], system: dict[str, Any], observations: list[Observation],
        models: dict[tuple[str, int], LinearModel], min_size: int) -> FitResult:
    """Per group of dimensions, one latency and one bandwidth scale on the given values.

    Dimensions spanned by exactly the same logs cannot be told apart by those logs, so they
    keep the ratios the given network sets between them (a group); an 8-GPU log and a
    16-GPU log on an 8 x 2 network separate the two dimensions. Chooses the scales that
    minimise the geometric-mean error of the model over the points of at least ``min_size``
    bytes, the figure ``validate`` reports.
    """
    dims = len(network["npus_count"])
    lat0 = [float(v) for v in network["latency"]]
    bw0 = [float(v) for v in network["bandwidth"]]
    e0 = float(system.get("endpoint-delay", 10))
    cover: dict[int, frozenset[int]] = {d: frozenset() for d in range(dims)}
    for (_coll, ranks), m in models.items():  # which rank counts (logs) span each dimension
        for d in range(m.dims):
            cover[d] = cover[d] | {ranks}
    signature: dict[frozenset[int], list[int]] = {}
    for d in range(dims):
        if cover[d]:
            signature.setdefault(cover[d], []).append(d)
    groups = sorted(signature.values())
    lat_unit = list(lat0)  # a group whose given latencies are all 0 scales 1 ns per dimension
    for g in groups:
        if all(lat0[d] == 0 for d in g):
            for d in g:
                lat_unit[d] = 1.0
    used = [o for o in observations if o.nccl_size >= min_size]
    if len(used) < 2 * len(groups):
        raise InputError(f"calibrate: only {len(used)} logged size{'' if len(used) == 1 else 's'} of at least {min_size} bytes "
                         f"for {2 * len(groups)} unknowns; lower --min-size or log more sizes")
    rows, targets = [], []
    for o in used:
        m = models[(o.collective, o.ranks)]
        s = comm_size(o.collective, o.nccl_size, o.ranks)
        fixed = m.c + m.e * e0 + m.r * s + o.copy_ns
        row = [sum(m.l[d] * lat_unit[d] for d in g if d < m.dims) for g in groups]
        row += [sum(s * m.b[d] / (bw0[d] * YAML_GB / 1e9) for d in g if d < m.dims) for g in groups]
        rows.append([v / o.time_ns for v in row])
        targets.append((o.time_ns - fixed) / o.time_ns)
    k = len(groups)
    x = minimise(rows, targets, positive=list(range(k, 2 * k)))
    latency, bandwidth = list(lat0), list(bw0)
    for gi, g in enumerate(groups):
        for d in g:
            latency[d] = round(x[gi] * lat_unit[d], 3)
            bandwidth[d] = round(bw0[d] / x[k + gi], 6)
    errors = []
    for o in used:
        m = models[(o.collective, o.ranks)]
        t = m.time_ns(comm_size(o.collective, o.nccl_size, o.ranks), latency[:m.dims], bandwidth[:m.dims], e0)
        t += o.copy_ns
        errors.append(t / o.time_ns - 1)
    return FitResult(latency, bandwidth, int(e0), groups, len(used), geomean_error(errors), errors)


# --------------------------------------------------------------------------- calibration
@dataclass
class Calibration:
    network: dict[str, Any]  # the calibrated network YAML
    system: dict[str, Any]  # the system JSON the fit assumed (written next to it)
    fit: FitResult
    rounds: int
    simulations: int
    sim_errors: list[float]  # per used point: the simulator with the fitted values vs measured
    observations: list[Observation]
    uncovered_dims: list[int]


def observations_of(logs: list, in_place: bool = False,
                    held_out: frozenset[tuple[str, int]] = frozenset(),
                    gpu_memory_gbps: float | None = None) -> list[Observation]:
    """The rows to fit, in ns; rows named in ``held_out`` as (log path, line) are left out.
    Each carries the local copy of the rank's own chunk its run made (``local_copy``)."""
    out = []
    for log in logs:
        mem_gbps = memory_gbps(log.devices, gpu_memory_gbps)
        for row in log.rows:
            if (log.path, row.line) in held_out:
                continue
            t = row.inplace_time_us if in_place else row.time_us
            if t is None:
                raise InputError(f"{log.path}:{row.line}: no in-place time; drop --in-place")
            copy_ns = own_chunk_copy_ns(log.collective, row.size_bytes, log.ranks, mem_gbps, in_place)
            out.append(Observation(log.path, row.line, log.collective, log.ranks, row.size_bytes, t * 1000.0,
                                   copy_ns))
    return out


def calibrate(logs: list, network: dict[str, Any], system: dict[str, Any], min_size: int = MIB,
              in_place: bool = False, max_rounds: int = 4, backend: str = DEFAULT_BACKEND,
              held_out: frozenset[tuple[str, int]] = frozenset(),
              gpu_memory_gbps: float | None = None) -> Calibration:
    """Fit the network's latencies and bandwidths to ``logs`` (parsed nccl-tests logs).

    ``gpu_memory_gbps`` overrides the datasheet memory bandwidth of the logs' GPUs, which
    prices the local copy out-of-place all-gathers and all-to-alls make (``local_copy``).

    ``held_out`` rows (log path, line) are kept out of the fit so that ``validate`` can test
    the prediction on them. With ``backend`` other than congestion_unaware the time is not
    exactly linear (queues), which the re-probing at the fitted point absorbs."""
    check_network(network, "--network")
    if backend not in BACKENDS:
        raise InputError(f"--backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    observations = observations_of(logs, in_place, held_out, gpu_memory_gbps)
    spans = {(log.collective, log.ranks): span(network, log.ranks, log.path, log.per_host) for log in logs}
    current = copy.deepcopy(network)
    simulations = 0
    fitted: FitResult | None = None
    sim_errors: list[float] = []
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        models = {}
        for (coll, ranks), counts in sorted(spans.items()):
            sub = sub_network(current, counts)
            models[(coll, ranks)] = probe(sub, sub_system(system, len(counts)), coll, ranks, backend)
            simulations += 4 + 2 * len(counts)
        fitted = fit(current, system, observations, models, min_size)
        current = dict(current, latency=fitted.latency_ns, bandwidth=fitted.bandwidth_gbps)
        used = [o for o in observations if o.nccl_size >= min_size]
        sim_errors = []
        agrees = True
        simulated: dict[tuple[str, int, int], int] = {}  # a size logged on many rows runs once
        for o, model_err in zip(used, fitted.model_errors, strict=True):
            key = (o.collective, o.ranks, o.nccl_size)
            if key not in simulated:
                counts = spans[(o.collective, o.ranks)]
                simulated[key] = simulate_collective(sub_network(current, counts), sub_system(system, len(counts)),
                                                     o.collective, comm_size(o.collective, o.nccl_size, o.ranks),
                                                     o.ranks, backend)
                simulations += 1
            t = simulated[key] + o.copy_ns
            sim_errors.append(t / o.time_ns - 1)
            agrees = agrees and abs((1 + sim_errors[-1]) / (1 + model_err) - 1) < 0.005
        if agrees:
            break
    assert fitted is not None
    covered = {d for g in fitted.groups for d in g}
    out = copy.deepcopy(network)
    out["latency"] = fitted.latency_ns
    out["bandwidth"] = fitted.bandwidth_gbps
    return Calibration(out, dict(system), fitted, rounds, simulations, sim_errors, observations,
                       [d for d in range(len(network["npus_count"])) if d not in covered])
