"""Drive the simulator for one collective, and fit network parameters to measured times.

Everything that runs the simulator goes through :func:`simulate_collective`, the one place
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
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.calibration.local_copy import memory_gbps, own_chunk_copy_ns
from simpy_astra.config.scenario import load_scenario
from simpy_astra.config.yaml_reader import dump_yaml
from simpy_astra.errors import InputError
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE

#: above this many candidate vertices the fit iterates instead (three or more dimension groups)
MAX_VERTICES = 100_000
#: bytes per GB in the network YAML (``simpy_astra/infra/units.py``: bandwidth is GiB/s)
YAML_GB = 2**30
MIB = 1 << 20
#: the network backends ``calibrate`` and ``validate`` can drive (scenario key ``backend``)

#: the system knobs calibrate sets when --system does not (docs/calibration.md, "Calibrating to a real cluster")
DEFAULT_SYSTEM: dict[str, Any] = {
    "scheduling-policy": "LIFO",
    "collective-optimization": "localBWAware",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    # NCCL reduces while it forwards (the reduction is fused into the copy kernel), so no
    # separate reduction pass: a local memory this fast makes ASTRA-sim's 3 x bytes / bw
    # negligible (1 ns a pass per 10^6 B, truncated: none under 1 MB)
    "local-mem-bw": 1_000_000,
}


def default_implementations(npus_count: list[int]) -> dict[str, list[str]]:
    """Algorithms whose latency structure matches NCCL's (docs/calibration.md explains the choice).

    All-reduce: halving-doubling (bandwidth-optimal like a ring, but log2(n) steps, close to
    NCCL's tree for small sizes) where a dimension is a power of two, else ring. All-gather
    and reduce-scatter: ring, as NCCL. All-to-all: direct with a window of one, i.e. one
    peer at a time at the full link rate (the congestion-unaware backend would otherwise let
    n-1 messages use n-1 full links at once).
    """
    ar = ["halvingDoubling" if n & (n - 1) == 0 else "ring" for n in npus_count]
    dims = len(npus_count)
    return {
        "all-reduce-implementation": ar,
        "all-gather-implementation": ["ring"] * dims,
        "reduce-scatter-implementation": ["ring"] * dims,
        "all-to-all-implementation": ["direct1"] * dims,
    }


def default_system(network: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULT_SYSTEM, **default_implementations(list(network["npus_count"]))}


# ----------------------------------------------------------------------------- the adapter
def comm_size(collective: str, nccl_size: int, ranks: int) -> int:
    """The Chakra ``comm_size`` of the node that reproduces an nccl-tests row of ``nccl_size``.

    nccl-tests prints the largest buffer: all-gather's is the gathered output, so each rank
    contributes size/n (ASTRA-sim's all-gather ``comm_size`` is the per-rank input);
    all-reduce, reduce-scatter (input), all-to-all (each rank's send buffer) and send/receive
    print what ASTRA-sim calls the collective's size.
    """
    return nccl_size // ranks if collective == "all_gather" else nccl_size


def simulate_collective(network: dict[str, Any], system: dict[str, Any], collective: str,
                        size_bytes: int, num_npus: int, backend: str = DEFAULT_BACKEND) -> int:
    """Simulated time in ns of one ``collective`` of ``size_bytes`` (ASTRA-sim's comm_size) on
    ``num_npus`` NPUs, given the network YAML and system JSON as mappings.

    The only function here that knows how the engine is driven: a scenario with the network
    and system inline and a microbenchmark workload, loaded by ``load_scenario`` and run by
    ``Simulation``, as ``simpy-astra run`` does. ``sendrecv`` (nccl-tests' ring of
    neighbour exchanges) has no microbenchmark generator, so its traces are written here.
    """
    with tempfile.TemporaryDirectory(prefix="simpy-astra-calib-") as tmp:
        if collective == "sendrecv":
            workload: Any = _write_sendrecv(os.path.join(tmp, "sendrecv"), size_bytes, num_npus)
        else:
            workload = {"generate": "microbench", "collective": collective, "size": size_bytes,
                        "num_npus": num_npus}
        path = os.path.join(tmp, "scenario.yaml")
        with open(path, "w") as f:
            dump_yaml({"workload": workload, "system": system, "network": network,
                            "backend": backend}, f)
        inputs = load_scenario(path)
        reports = Simulation(inputs).run()
    return max(r.finished_cycles for r in reports)


def _write_sendrecv(prefix: str, size_bytes: int, n: int) -> str:
    """Every rank sends ``size_bytes`` to rank+1 and receives as much from rank-1."""
    for rank in range(n):
        send = make_node(1, "send", COMM_SEND_NODE, attrs={"comm_dst": (rank + 1) % n,
                                                          "comm_size": size_bytes, "comm_tag": 1})
        recv = make_node(2, "recv", COMM_RECV_NODE, attrs={"comm_src": (rank - 1) % n,
                                                          "comm_size": size_bytes, "comm_tag": 1})
        write_et(f"{prefix}.{rank}.et", [send, recv])
    return prefix


# ------------------------------------------------------------------------- network helpers
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


def span(network: dict[str, Any], ranks: int, where: str) -> list[int]:
    """The NPU counts per dimension a run on ``ranks`` GPUs uses: the leading dimensions,
    the last one possibly in part (16 GPUs of an 8 x 8 network use 8 x 2: two of its nodes)."""
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


def geomean_error(errors: list[float]) -> float:
    """exp(mean(ln(1 + |e|))) - 1: the geometric mean of the error factors, minus one."""
    if not errors:
        return float("nan")
    return math.exp(sum(math.log1p(abs(e)) for e in errors) / len(errors)) - 1


def _solve(a: list[list[float]], y: list[float]) -> list[float] | None:
    """Square system by Gaussian elimination with partial pivoting; None if singular."""
    k = len(y)
    m = [list(row) + [t] for row, t in zip(a, y, strict=True)]
    for col in range(k):
        piv = max(range(col, k), key=lambda i: abs(m[i][col]))
        if abs(m[piv][col]) < 1e-12:
            return None
        m[col], m[piv] = m[piv], m[col]
        for i in range(k):
            if i != col and m[i][col] != 0.0:
                f = m[i][col] / m[col][col]
                m[i] = [vi - f * vc for vi, vc in zip(m[i], m[col], strict=True)]
    return [m[i][k] / m[i][i] for i in range(k)]


def _minimise(a: list[list[float]], y: list[float], positive: list[int]) -> list[float]:
    """x >= 0 (x[j] > 0 for j in ``positive``) minimising sum ln(1 + |a_i . x - y_i|).

    The objective is concave in each |residual|, so a minimum sits where as many residuals
    or variables are zero as there are unknowns: every such vertex is tried (a few hundred
    for one group of dimensions), and the best one, first in a fixed order, wins.
    Deterministic, no starting point, no tolerance to tune."""
    k = len(a[0])
    n = len(a)
    # constraints: residual i = 0 (ids 0..n-1), or x[j] = 0 (ids n..n+k-1) for free variables
    ids = list(range(n)) + [n + j for j in range(k) if j not in positive]
    if math.comb(len(ids), k) > MAX_VERTICES:
        return _irls(a, y, positive)
    best: tuple[float, list[float]] | None = None
    for combo in itertools.combinations(ids, k):
        rows, rhs = [], []
        for c in combo:
            if c < n:
                rows.append(a[c])
                rhs.append(y[c])
            else:
                rows.append([1.0 if j == c - n else 0.0 for j in range(k)])
                rhs.append(0.0)
        x = _solve(rows, rhs)
        if x is None or any(v < -1e-12 for v in x) or any(x[j] <= 0 for j in positive):
            continue
        x = [max(v, 0.0) for v in x]
        obj = sum(math.log1p(abs(sum(r[j] * x[j] for j in range(k)) - t)) for r, t in zip(a, y, strict=True))
        if best is None or obj < best[0] - 1e-12:
            best = (obj, x)
    if best is None:
        raise InputError("calibrate: no positive bandwidth fits these logs (do their times grow "
                         "with size?)")
    return best[1]


def _weighted_nnls(a: list[list[float]], y: list[float], w: list[float], positive: list[int]) -> list[float] | None:
    """min sum w_i (a_i . x - y_i)^2 with x >= 0 (> 0 for ``positive``): every zero pattern."""
    k = len(a[0])
    free = [j for j in range(k) if j not in positive]
    best: tuple[float, list[float]] | None = None
    for zeros in range(len(free) + 1):
        for zero_set in itertools.combinations(free, zeros):
            cols = [j for j in range(k) if j not in zero_set]
            normal = [[sum(wi * r[i] * r[j] for r, wi in zip(a, w, strict=True)) for j in cols] for i in cols]
            rhs = [sum(wi * r[i] * t for r, t, wi in zip(a, y, w, strict=True)) for i in cols]
            sol = _solve(normal, rhs)
            if sol is None or any(v < 0 for v in sol) or any(v <= 0 for j, v in zip(cols, sol, strict=True)
                                                              if j in positive):
                continue
            x = [0.0] * k
            for j, v in zip(cols, sol, strict=True):
                x[j] = v
            res = sum(wi * (sum(r[j] * x[j] for j in range(k)) - t) ** 2 for r, t, wi in zip(a, y, w, strict=True))
            if best is None or res < best[0] - 1e-15:
                best = (res, x)
    return best[1] if best else None


def _irls(a: list[list[float]], y: list[float], positive: list[int]) -> list[float]:
    """Too many vertices to try: iteratively reweighted least squares on the same objective,
    from the plain least-squares solution (still deterministic)."""
    w = [1.0] * len(a)
    x = _weighted_nnls(a, y, w, positive)
    if x is None:
        raise InputError("calibrate: no positive bandwidth fits these logs (do their times grow "
                         "with size?)")
    for _ in range(200):
        res = [sum(r[j] * x[j] for j in range(len(x))) - t for r, t in zip(a, y, strict=True)]
        w = [1.0 / ((1 + abs(e)) * max(abs(e), 1e-4)) for e in res]
        nxt = _weighted_nnls(a, y, w, positive)
        if nxt is None:
            break
        moved = max(abs(p - q) / max(abs(q), 1e-12) for p, q in zip(nxt, x, strict=True))
        x = nxt
        if moved < 1e-9:
            break
    return x


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
        raise InputError(f"calibrate: only {len(used)} logged sizes of at least {min_size} bytes "
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
    x = _minimise(rows, targets, positive=list(range(k, 2 * k)))
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
    spans = {(log.collective, log.ranks): span(network, log.ranks, log.path) for log in logs}
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
