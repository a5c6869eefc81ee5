"""Extensions written from the docs alone, sixth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round5.py``) and is checked against a figure derived here from the closed forms the docs
state, never against the tool's own output.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns unless a test
says otherwise: one hop of S bytes takes ``d(S) = trunc(L + S / B)`` = L + S; ``E`` is the
endpoint delay and ``P(x)`` the reduction of x bytes, three passes of ``int(x / (local-mem-bw
10^9) x 10^9)`` (collectives/README.md).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import ONE_BYTE_PER_NS, E, L, d, reduce_ns, ring_all_reduce

MIB = 2**20

#: the researcher's module, written from docs/collectives.md, collectives/README.md,
#: docs/backends.md, simpy_astra/network/README.md, docs/generators.md, docs/reports.md and
#: docs/sweeps.md
R6 = textwrap.dedent('''
import csv
import json

import networkx as nx
import simpy

from simpy_astra.collectives.base import ALL_REDUCE, ALL_TO_ALL, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.network.switch import SwitchElement
from simpy_astra.topologies import BasicTopology
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_AR
from simpy_astra.workloads.chakra.types import ALL_TO_ALL as COLL_A2A
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE

NODE = 4  # NPUs per node for the hierarchical all-to-all


def node_and_rail(dim):
    """The members of this NPU's node (NODE consecutive positions) and of its rail (the
    members at its position in every node), each in position order."""
    m, i = dim.members, dim.index
    first = i - i % NODE
    return tuple(m[first:first + NODE]), tuple(m[i % NODE::NODE])


def hierarchical_all_to_all(ctx, node, rail):
    """Two steps: in the node, hand each peer what goes to its rail (S / NODE); then along
    the rail, hand each peer what its node's NPUs hold for it (NODE x S / n)."""
    n, size = len(ctx.members), ctx.size_bytes
    for peers, nbytes in ((node, size // NODE), (rail, NODE * size // n)):
        others = [p for p in peers if p != ctx.npu_id]
        for p in others:
            ctx.post(p, nbytes)
        yield ctx.env.all_of([ctx.recv(p, nbytes) for p in others])
        yield ctx.endpoint()


def hierarchical_traffic(shape):
    """What one member sends in a phase (positions): S / NODE to each node peer, then
    NODE x S / n to each rail peer, for the bound check's link-bandwidth floor."""
    n, i, size = len(shape.members), shape.index, shape.size_bytes
    node = [p for p in range(i - i % NODE, i - i % NODE + NODE) if p != i]
    rail = [p for p in range(i % NODE, n, NODE) if p != i]
    return [(p, size // NODE) for p in node] + [(p, NODE * size // n) for p in rail]


HIER_A2A = CollectiveAlgorithm("hier_a2a", hierarchical_all_to_all, ring_final_size,
                               kinds=frozenset({ALL_TO_ALL}), logical=node_and_rail, traffic=hierarchical_traffic)


def doubling_any(ctx):
    """Recursive doubling on any n: the r = n - p members past the largest power of two p
    first hand their buffer to member i - p, which reduces it; the first p run log2 p rounds
    of exchange-and-reduce with i XOR dist; then member i < r hands the sum back to i + p."""
    n, i, m, size = len(ctx.members), ctx.index, ctx.members, ctx.size_bytes
    p = 1 << (n.bit_length() - 1)
    if i >= p:
        ctx.post(m[i - p], size)
        yield ctx.recv(m[i - p], size)
        yield ctx.endpoint()
        return
    if i < n - p:
        yield ctx.recv(m[i + p], size)
        yield ctx.endpoint(reduce_bytes=size)
    dist = 1
    while dist < p:
        ctx.post(m[i ^ dist], size)
        yield ctx.recv(m[i ^ dist], size)
        yield ctx.endpoint(reduce_bytes=size)
        dist *= 2
    if i < n - p:
        ctx.post(m[i + p], size)


DOUBLING_ANY = CollectiveAlgorithm("doubling_any", doubling_any, ring_final_size, kinds=frozenset({ALL_REDUCE}))


class DeBruijn(BasicTopology):
    """Binary de Bruijn graph on n = 2^m NPUs: i links to 2i mod n and 2i+1 mod n (no
    self-loops); a message shifts in dst's bits after the longest overlap of src's last bits
    with dst's first ones."""

    def _bits(self):
        return self.npus_count.bit_length() - 1

    def links(self):
        n = self.npus_count
        return sorted({(i, (2 * i + b) % n) for i in range(n) for b in (0, 1)} - {(i, i) for i in range(n)})

    def route(self, src, dst):
        m, n = self._bits(), self.npus_count
        overlap = next(k for k in range(m, -1, -1) if src % (1 << k) == dst >> (m - k))
        path = [src]
        for j in range(m - overlap - 1, -1, -1):
            path.append((2 * path[-1] + (dst >> j & 1)) % n)
        return path

    def hops(self, src, dst):
        return len(self.route(src, dst)) - 1


ROUTER_NS = 200  # a router's pipeline between two links, which the analytical backend ignores


class RoutedDeBruijn(DeBruijn):
    """The de Bruijn graph whose analytical figure also counts ROUTER_NS at every NPU a
    message passes through: path_profile is (latency ns, bandwidth GB/s) of the whole path."""

    def path_profile(self, src, dst):
        hops = self.hops(src, dst)
        return hops * self.latency_ns + (hops - 1) * ROUTER_NS, self.bandwidth_gbps


class OutputQueuedSwitch(SwitchElement):
    """A buffer per output port: an item waits behind the items for its own port only, and
    a port passes one item at a time at port_gbps (items for other ports go on)."""

    def __init__(self, env, device, forward, port_gbps: float = 1.0):
        if not port_gbps > 0:
            raise ValueError(f"port_gbps must be > 0 (got {port_gbps})")
        self.port_bytes_per_ns = port_gbps * 2**30 / 1e9
        self.ports = {}
        super().__init__(env, device, forward)

    def receive(self, item):
        port = self.ports.get(item.next_link)
        if port is None:
            port = self.ports[item.next_link] = simpy.Store(self.env)
            self.env.process(self._serve(port))
        port.put(item)

    def run(self):  # every port serves itself
        return
        yield

    def _serve(self, port):
        while True:
            item = yield port.get()
            yield self.env.timeout(int(item.size / self.port_bytes_per_ns))
            self.send_on(item)


class ShortestFirstLink(LinkElement):
    """Sends the smallest waiting message next (ties: the first come)."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.waiting = []

    def enqueue(self, item):
        self.waiting.append(item)

    def dequeue(self):
        if not self.waiting:
            return None
        best = min(range(len(self.waiting)), key=lambda k: self.waiting[k].size)
        return self.waiting.pop(best)

    @property
    def queue(self):
        return sorted(self.waiting, key=lambda item: item.size)


class NicLink(LinkElement):
    """A link leaving an NPU (ids below npus; switches are numbered from there) first holds
    each item nic_ns, the sending NIC's work; links leaving a switch hold nothing."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, npus: int = 0, nic_ns: int = 0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.nic_ns = nic_ns if src < npus else 0

    def hold_ns(self, item):
        return self.nic_ns


RENDEZVOUS_BYTES = 65536  # from this size on, a message waits for a handshake


class Rendezvous(CongestionUnawareNetwork):
    """Analytical, plus a zero-byte round trip (request to send, clear to send) before every
    message of RENDEZVOUS_BYTES or more."""

    def __init__(self, env, dims):
        super().__init__(env, dims)
        self.topology = dims[0]

    def message_delay_ns(self, src, dst, size_bytes):
        delay = super().message_delay_ns(src, dst, size_bytes)
        if size_bytes >= RENDEZVOUS_BYTES:
            delay += 2 * self.topology.hops(src, dst) * self.topology.latency_ns
        return delay


RENDEZVOUS = BackendSpec("rendezvous", "analytical plus a handshake round trip for large messages",
                         lambda env, dims, source, config=None: Rendezvous(env, dims), folds="pairs", folded=None)


def fat_tree(leaves=2, per_leaf=2, spines=1, oversubscription=1.0, down_gbps=1.0, latency_ns=500.0):
    """A two-level fat tree: per_leaf NPUs under each leaf, every leaf cabled to every spine;
    a leaf's uplinks carry per_leaf x down_gbps / oversubscription in all."""
    g = nx.DiGraph()
    up = per_leaf * down_gbps / oversubscription / spines
    for leaf in range(leaves):
        g.add_node(f"leaf{leaf}", kind="switch")
        for k in range(per_leaf):
            npu = leaf * per_leaf + k
            g.add_edge(npu, f"leaf{leaf}", bandwidth_gbps=down_gbps, latency_ns=latency_ns)
            g.add_edge(f"leaf{leaf}", npu, bandwidth_gbps=down_gbps, latency_ns=latency_ns)
        for s in range(spines):
            g.add_node(f"spine{s}", kind="switch")
            g.add_edge(f"leaf{leaf}", f"spine{s}", bandwidth_gbps=up, latency_ns=latency_ns)
            g.add_edge(f"spine{s}", f"leaf{leaf}", bandwidth_gbps=up, latency_ns=latency_ns)
    return g


def _p2p(node_id, kind, peer, size, tag, deps=()):
    key = "comm_dst" if kind == COMM_SEND_NODE else "comm_src"
    return make_node(node_id, "send" if kind == COMM_SEND_NODE else "recv", kind, deps=list(deps),
                     attrs={"is_cpu_op": False, key: peer, "comm_size": size, "comm_tag": tag})


def shift(params, prefix):
    """A permutation: NPU i sends size bytes to i + by and receives them from i - by."""
    n, size, by = params["num_npus"], params["size"], params["by"]
    for r in range(n):
        write_et(f"{prefix}.{r}.et", [_p2p(0, COMM_SEND_NODE, (r + by) % n, size, 7),
                                      _p2p(1, COMM_RECV_NODE, (r - by) % n, size, 7)])


def pairs(params, prefix):
    """Each [src, dst] of pairs sends size bytes at time 0 (a tag per pair); an NPU of
    num_npus in no pair computes for 0 us (a trace needs a node)."""
    nodes = {r: [] for r in range(params["num_npus"])}
    for tag, (src, dst) in enumerate(params["pairs"]):
        nodes[src].append(_p2p(len(nodes[src]), COMM_SEND_NODE, dst, params["size"], tag))
        nodes[dst].append(_p2p(len(nodes[dst]), COMM_RECV_NODE, src, params["size"], tag))
    for r, rank_nodes in nodes.items():
        write_et(f"{prefix}.{r}.et", rank_nodes or [make_node(0, "nothing", COMP_NODE, duration_micros=0,
                                                              attrs={"is_cpu_op": False})])


def gpipe_forward(params, prefix):
    """Forward passes of micro micro-batches through stages stages (NPU s is stage s): receive
    the activation (tag m), compute compute_us, send it on; the sends and receives are the
    pipeline's ('pp', so the breakdown calls waiting on a receive a bubble)."""
    stages, micro, size = params["stages"], params["micro"], params["size"]
    for s in range(stages):
        nodes, last = [], []
        for m in range(micro):
            deps = list(last)
            if s > 0:
                nodes.append(_p2p(len(nodes), COMM_RECV_NODE, s - 1, size, m))
                deps.append(len(nodes) - 1)
            nodes.append(make_node(len(nodes), f"forward{m}", COMP_NODE, deps=deps,
                                   duration_micros=params["compute_us"], attrs={"is_cpu_op": False}))
            last = [len(nodes) - 1]
            if s < stages - 1:
                nodes.append(_p2p(len(nodes), COMM_SEND_NODE, s + 1, size, m, deps=last))
        write_et(f"{prefix}.{s}.et", nodes, metadata_attrs={"p2p_dimension": "pp"})


def sizes_burst(params, prefix):
    """NPU 0 sends one message of each size to NPU 1, all at once (tags 0, 1, ...)."""
    sizes = params["sizes"]
    write_et(f"{prefix}.0.et", [_p2p(j, COMM_SEND_NODE, 1, s, j) for j, s in enumerate(sizes)])
    write_et(f"{prefix}.1.et", [_p2p(j, COMM_RECV_NODE, 0, s, j) for j, s in enumerate(sizes)])


def moe(params, prefix):
    """Mixture of experts on dp x ep NPUs (ep fastest): layers of compute_us, each followed by
    an all-to-all of tokens bytes in its expert-parallel group (dispatch); the breakdown names
    those groups 'ep'."""
    ep, dp = params["ep"], params["dp"]
    groups = {str(1 + d): [d * ep + e for e in range(ep)] for d in range(dp)}
    for rank in range(ep * dp):
        nodes, last = [], []
        for layer in range(params["layers"]):
            nodes.append(make_node(len(nodes), f"expert{layer}", COMP_NODE, deps=last,
                                   duration_micros=params["compute_us"], attrs={"is_cpu_op": False}))
            nodes.append(make_node(len(nodes), f"dispatch{layer}", COMM_COLL_NODE, deps=[len(nodes) - 1], attrs={
                "is_cpu_op": False, "comm_type": COLL_A2A, "comm_size": params["tokens"],
                "pg_name": str(1 + rank // ep)}))
            last = [len(nodes) - 1]
        write_et(f"{prefix}.{rank}.et", nodes, metadata_attrs={"pg_names": json.dumps([["ep", 1, dp]])})
    with open(prefix + ".json", "w") as f:
        json.dump(groups, f)
    return prefix + ".json"


def from_table(params, prefix):
    """A front-end: every NPU runs the steps of a CSV table in order, a row `compute,<us>` or
    `all_reduce,<bytes>`."""
    with open(params["table"], newline="") as f:
        rows = [(kind.strip(), int(value)) for kind, value in csv.reader(f) if kind.strip()]
    for r in range(params["num_npus"]):
        nodes = []
        for j, (kind, value) in enumerate(rows):
            deps = [j - 1] if j else []
            if kind == "compute":
                nodes.append(make_node(j, f"c{j}", COMP_NODE, deps=deps, duration_micros=value,
                                       attrs={"is_cpu_op": False}))
            else:
                nodes.append(make_node(j, f"ar{j}", COMM_COLL_NODE, deps=deps, attrs={
                    "is_cpu_op": False, "comm_type": COLL_AR, "comm_size": value}))
        write_et(f"{prefix}.{r}.et", nodes)


def link_report(figures_json):
    """From run --json-out: each link's utilisation (busy / iteration time), busiest first,
    and the NPUs' mean exposed share."""
    with open(figures_json) as f:
        fig = json.load(f)
    t = fig["iteration_time_ns"]
    links = [(f"{x['from']}->{x['to']}", x["bytes"], x["busy_ns"] / t) for x in fig.get("links", [])]
    exposed = [npu["exposed_comm_ns"] / npu["finished_ns"] for npu in fig["npus"].values()]
    return {"links": links, "mean_exposed_share": sum(exposed) / len(exposed)}


def fit_alpha_beta(scenario, sizes=(65536, 1048576)):
    """A front-end: time the scenario's send_recv at two sizes (a copy of the
    scenario beside it per size) and fit T = alpha + size / beta: (alpha ns, beta B/ns)."""
    from pathlib import Path

    import yaml

    from simpy_astra.simulation import Simulation

    base = Path(scenario)
    spec = yaml.safe_load(base.read_text())
    times = []
    for s in sizes:
        spec["workload"]["size"] = s
        copy = base.with_name(f"{base.stem}_{s}.yaml")
        copy.write_text(yaml.safe_dump(spec))
        times.append(max(r.finished_ns for r in Simulation.from_scenario(str(copy)).run()))
    beta = (sizes[1] - sizes[0]) / (times[1] - times[0])
    return times[0] - sizes[0] / beta, beta
''')

#: the same extensions under short names, for `--plugin r6_plugin` / `plugins: [r6_plugin]`
R6_PLUGIN = textwrap.dedent('''
"""Registers r6's extensions under short names (loaded with --plugin r6_plugin)."""
from simpy_astra import collectives, topologies
from simpy_astra.network import backends, models
from simpy_astra.workloads import generated

import r6

backends.register(r6.RENDEZVOUS)
collectives.register("doubling_any", r6.DOUBLING_ANY)
topologies.register("DeBruijn", r6.DeBruijn)
models.register_link("shortest_first", r6.ShortestFirstLink)
models.register_switch("output_queued", r6.OutputQueuedSwitch)
generated.register("shift", r6.shift, version="1")
''')


@pytest.fixture
def r6(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r6.py and r6_plugin.py, the working directory;
    the registries are left as they were found."""
    with researcher_folder(tmp_path, monkeypatch, {"r6": R6, "r6_plugin": R6_PLUGIN}) as folder:
        yield folder


def _system(all_reduce: str = "ring", all_to_all: str = "direct") -> str:
    return ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
            "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, local-mem-bw: 50, "
            f"all-reduce-implementation: [{all_reduce}], all-gather-implementation: [ring], "
            f"reduce-scatter-implementation: [ring], all-to-all-implementation: [{all_to_all}]}}")


def _net(topology: str, n: int, extra: str = "") -> str:
    return f"{{topology: [{topology}], npus_count: [{n}], bandwidth: [{ONE_BYTE_PER_NS!r}], latency: [{L}]{extra}}}"


def _write(folder: Path, name: str, workload: str, network: str, backend: str, system: str = "",
           extra: str = "") -> Path:
    path = folder / name
    path.write_text(f"workload: {workload}\nsystem: {system or _system()}\nnetwork: {network}\n"
                    f"backend: {backend}\n{extra}")
    return path


def _finished(path: Path, **kwargs) -> dict[int, int]:
    from simpy_astra.simulation import Simulation

    return {r.npu_id: r.finished_ns for r in Simulation.from_scenario(str(path), **kwargs).run()}


def _cli(folder: Path, *args: str, status: int = 0, path: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m simpy_astra ARGS` in `folder` (`path`: a folder of modules on PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(path)} if path else None
    done = subprocess.run([sys.executable, "-m", "simpy_astra", *args], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == status, done.stderr[-800:]
    return done


def _quiet_ns(done: subprocess.CompletedProcess) -> int:
    """The figure of `run --quiet`'s one line, `iteration time 2,500 ns (...)`."""
    return int(done.stdout.split()[2].replace(",", ""))


# -- a topology class -------------------------------------------------------------------------

@pytest.mark.parametrize("backend, per_hop", [("congestion_unaware", False), ("congestion_aware", True)])
@pytest.mark.parametrize("src, dst, hops", [(0, 5, 3), (6, 3, 2), (0, 1, 1), (7, 0, 3)])
def test_a_de_bruijn_topology_shifts_in_the_destinations_bits(r6, backend, per_hop, src, dst, hops):
    """On 8 NPUs (3 bits) 0 = 000 -> 5 = 101 overlaps in nothing: 0 -> 1 -> 2 -> 5, 3 hops;
    6 = 110 -> 3 = 011 overlaps in one bit: 6 -> 5 -> 3; 0 -> 1 in two bits. One message of
    S: trunc(h L + S) on the analytical backend, h (L + S) store-and-forward."""
    size = 1000
    path = _write(r6, "db.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, "
                  f"src: {src}, dst: {dst}}}", _net('"r6:DeBruijn"', 8), backend)
    want = hops * d(size) if per_hop else hops * L + size
    assert _finished(path)[src] == want
    import r6 as module

    topo = module.DeBruijn(8, ONE_BYTE_PER_NS, L)
    path = topo.route(src, dst)
    assert topo.hops(src, dst) == hops and all(pair in topo.links() for pair in zip(path, path[1:], strict=False))


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_path_profile_that_adds_a_routers_delay_on_the_analytical_backend(r6, backend):
    """`path_profile` returns (latency ns, bandwidth GB/s), the reverse of `link_params`'s
    order (docs/collectives.md): 0 -> 5 passes NPUs 1 and 2, so the analytical backend charges
    3L + 2 x 200 + S; the link-level backends follow the links and never read it: 3 (L + S)."""
    size = 1000
    path = _write(r6, "routed.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, "
                  "src: 0, dst: 5}", _net('"r6:RoutedDeBruijn"', 8), backend)
    want = 3 * L + 2 * 200 + size if backend == "congestion_unaware" else 3 * d(size)
    assert _finished(path)[5] == want
    guide = " ".join((Path(__file__).resolve().parents[1] / "docs" / "collectives.md").read_text().split())
    assert "`(latency_ns, bandwidth_gbps)` of the whole path: mind the order" in guide


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_ones_own_topology_stacked_under_a_ring_by_its_short_name(r6, backend):
    """`topology: [DeBruijn, Ring]` (the plug-in's short name), 8 x 2 NPUs: NPU 13 is (5, 1),
    so 0 -> 13 is 0 -> 1 -> 2 -> 5 in dimension 0, then one ring hop. The link-level backends
    follow all 4 hops: 4 (L + S) store-and-forward, 4L + S + 3S pipelined in one packet of S;
    the analytical one charges the first dimension the NPUs differ in, 3L + S, as ASTRA-sim
    does (docs/backends.md)."""
    size = 1000
    path = _write(r6, "stacked.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 16, "
                  "src: 0, dst: 13}", f"{{topology: [DeBruijn, Ring], npus_count: [8, 2], "
                  f"bandwidth: [{ONE_BYTE_PER_NS!r}, {ONE_BYTE_PER_NS!r}], latency: [{L}, {L}]}}", backend,
                  extra="plugins: [r6_plugin]\n")
    want = {"congestion_unaware": 3 * L + size, "congestion_aware": 4 * d(size), "packet": 4 * L + 4 * size}[backend]
    assert _finished(path)[13] == want
    guide = " ".join((Path(__file__).resolve().parents[1] / "docs" / "backends.md").read_text().split())
    assert "charges the first dimension its two NPUs differ in, as ASTRA-sim does" in guide


# -- collective algorithms --------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_hierarchical_all_to_all_built_by_a_logical_hook(r6, backend):
    """8 NPUs as 2 nodes of 4 (the `logical=` hook, collectives/README.md): S / 4 to each of
    3 node peers, an endpoint, then 4 S / 8 to the one rail peer, an endpoint. Fully
    connected, every message on a link of its own: d(S/4) + E + d(S/2) + E on both backends."""
    size = 64_000
    path = _write(r6, "a2a.yaml", f"{{generate: microbench, collective: all_to_all, size: {size}, num_npus: 8}}",
                  _net("FullyConnected", 8), backend, _system(all_to_all="r6:HIER_A2A"))
    assert set(_finished(path).values()) == {d(size // 4) + E + d(size // 2) + E}


def test_a_traffic_matrix_of_the_hierarchical_all_to_all_from_observations(r6):
    """`sim.on("message_delivered", ...)` (docs/cosimulation.md) over the 8-NPU run: each NPU
    sends S/4 to its 3 node peers, delivered at d(S/4), and S/2 to its rail peer, delivered
    at d(S/4) + E + d(S/2); nothing to anyone else."""
    from simpy_astra.simulation import Simulation

    size = 64_000
    path = _write(r6, "a2a.yaml", f"{{generate: microbench, collective: all_to_all, size: {size}, num_npus: 8}}",
                  _net("FullyConnected", 8), "congestion_unaware", _system(all_to_all="r6:HIER_A2A"))
    sim, seen = Simulation.from_scenario(str(path)), {}
    sim.on("message_delivered", lambda o: seen.setdefault((o.npu, o.peer), []).append((o.size_bytes, o.time_ns)))
    sim.run()
    node_peer = {(a, b): (size // 4, d(size // 4)) for a in range(8) for b in range(8) if a != b and a // 4 == b // 4}
    rail_peer = {(a, a ^ 4): (size // 2, d(size // 4) + E + d(size // 2)) for a in range(8)}
    assert seen == {pair: [sent] for pair, sent in {**node_peer, **rail_peer}.items()}


def test_recursive_doubling_on_six_npus_folds_the_two_extra_members_in_and_out(r6):
    """n = 6, p = 4, r = 2 (fully connected, analytical; a round R = d(S) + E + P(S)): members
    0 and 1 first reduce what 4 and 5 hand them (R), then exchange with 1 (R) and 2 (its message
    there since R + d(S); E + P(S)), ending at 2R + E + P(S) and handing the sum back; 2 and 3
    exchange at once (R), then wait for 0's, ending at 3R; 4 and 5 get the sum at 3R, + E."""
    size = 60_000
    path = _write(r6, "rd6.yaml", f"{{generate: microbench, collective: all_reduce, size: {size}, num_npus: 6}}",
                  _net("FullyConnected", 6), "congestion_unaware", _system(all_reduce="r6:DOUBLING_ANY"))
    round_ns = d(size) + E + reduce_ns(size)
    first, middle, extra = 2 * round_ns + E + reduce_ns(size), 3 * round_ns, 3 * round_ns + E
    assert _finished(path) == {0: first, 1: first, 2: middle, 3: middle, 4: extra, 5: extra}


@pytest.mark.parametrize("size, warned", [(4000, False), (MIB, True)])
def test_the_hierarchical_all_to_alls_traffic_feeds_the_bound_check(r6, size, warned):
    """With `traffic=` (collectives/README.md) the analytical backend's bound check knows the
    phase: on Switch(8) each NPU's up-link carries 3 x S/4 + S/2 = 1.25 S ns at 1 byte/ns,
    while the run charges 2 x 2L + S/4 + S/2 + 2E. At 4,000 B that is 5,020 ns against a floor
    of 5,000: no warning; at 1 MiB 788,452 against 1,310,720: 1.66x below, one warning."""
    path = _write(r6, "bound.yaml", f"{{generate: microbench, collective: all_to_all, size: {size}, num_npus: 8}}",
                  _net("Switch", 8), "congestion_unaware", _system(all_to_all="r6:HIER_A2A"))
    done = _cli(r6, "run", path.name)
    run_ns, floor_ns = 4 * L + size // 4 + size // 2 + 2 * E, 3 * (size // 4) + size // 2
    assert f"sys[0] finished, {run_ns} cycles" in done.stdout
    assert ("below its link-bandwidth floor" in done.stderr) == warned == (run_ns < floor_ns)
    if warned:
        assert f"all-to-all on Switch(8): {floor_ns / run_ns:.2f}x below" in done.stderr


# -- a switch model and a link model ----------------------------------------------------------

def test_a_switch_with_a_queue_per_output_port(r6):
    """NPUs 1 and 2 send S to NPU 0 and NPU 3 to NPU 2, all at t = 0, through one switch
    whose output ports each pass one item at a time at 1 byte/ns (`item.next_link`, the
    port an item leaves by, network/README.md). Both messages for port 0 are in at L + S; the
    first leaves the port at L + 2S and NPU 0 at 2L + 3S, the second waits for the port
    (L + 3S) and arrives at 2L + 4S. NPU 3's message has port 2 to itself: 2L + 3S, as if
    alone. The built-in switch (no port queue): 2L + 2S and 2L + 3S."""
    size = 1000
    path = _write(r6, "oq.yaml", f'{{generate: "r6:pairs", num_npus: 4, size: {size}, pairs: [[1, 0], [2, 0], [3, 2]]}}',
                  _net("Switch", 4, f', switch-model: {{class: "r6:OutputQueuedSwitch", port_gbps: {ONE_BYTE_PER_NS!r}}}'),
                  "congestion_aware")
    alone, behind = 2 * L + 3 * size, 2 * L + 4 * size
    assert _finished(path) == {0: behind, 1: alone, 2: behind, 3: alone}
    import r6 as module

    plain = {0: 2 * L + 3 * size, 1: 2 * L + 2 * size, 2: 2 * L + 3 * size, 3: 2 * L + 2 * size}
    assert _finished(path, switch_model=module.SwitchElement) == plain


def test_a_nic_link_and_the_port_switch_together_in_one_network_yaml(r6):
    """`link-model: {class: r6:NicLink, npus: 4, nic_ns: 300}` beside the per-port switch:
    NPU 0 -> 3 through the switch is the NIC's 300 ns, a hop, the port's S / (2 B), a hop
    (the switch's link holds nothing): 300 + 2 d(S) + S/2."""
    size = 1000
    path = _write(r6, "nic.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 4, "
                  "src: 0, dst: 3}", _net("Switch", 4, ", link-model: {class: r6:NicLink, npus: 4, nic_ns: 300}, "
                                       f"switch-model: {{class: r6:OutputQueuedSwitch, port_gbps: {2 * ONE_BYTE_PER_NS!r}}}"),
                  "congestion_aware")
    assert _finished(path)[3] == 300 + 2 * d(size) + size // 2


def incast_ns(size: int, port_gbps: float) -> int:
    """NPUs 1 and 2 send S to NPU 0 through the per-port switch: both in at L + S; the port
    passes each in p = trunc(S / port rate); the second starts on the link when the port has
    passed it and the first has left the wire (L + 2S + p), and takes L + S."""
    p = int(size / (port_gbps * 2**30 / 1e9))
    return max(L + size + 2 * p, L + 2 * size + p) + L + size


def test_a_sweep_over_the_switch_models_own_parameter_loaded_by_plugin(r6):
    """`sweep --plugin r6_plugin` (docs/sweeps.md) makes the short name `output_queued` known
    to every point; an axis on its parameter, a constraint over that axis dropping 2 GB/s
    before anything runs, and each point's incast at its closed form."""
    size = 4000
    _write(r6, "incast.yaml", f'{{generate: "r6:pairs", num_npus: 4, size: {size}, pairs: [[1, 0], [2, 0]]}}',
           _net("Switch", 4, ", switch-model: {class: output_queued, port_gbps: 1}"), "congestion_aware")
    (r6 / "ports.yaml").write_text("base: incast.yaml\naxes:\n  network.switch-model.port_gbps: [0.25, 0.5, 1, 2]\n"
                                   "constraints:\n  - port_gbps <= 1\n")
    _cli(r6, "sweep", "ports.yaml", "--out", "runs", "--plugin", "r6_plugin")
    with open(r6 / "runs" / "results.csv") as f:
        finish = {float(row["network.switch-model.port_gbps"]): int(row["finish_ns"]) for row in csv.DictReader(f)}
    assert finish == {g: incast_ns(size, g) for g in (0.25, 0.5, 1)}
    best = json.loads((r6 / "runs" / "best.json").read_text())["best"]
    assert best["coordinates"] == {"network.switch-model.port_gbps": 1}


@pytest.mark.parametrize("params, says", [({"port_gbps": 0}, "port_gbps must be > 0 (got 0)"),
                                          ({"port_gbs": 1}, "unknown parameter 'port_gbs' (did you mean 'port_gbps'?")])
def test_the_switch_models_parameters_from_python_are_checked_as_the_yamls(r6, params, says):
    """`Simulation.from_scenario(path, switch_model=..., switch_params=...)` (network/README.md):
    the model's own ValueError and a misspelt key are an InputError naming `switch_model=`."""
    import r6 as module

    from simpy_astra.errors import InputError
    from simpy_astra.simulation import Simulation

    path = _write(r6, "plain.yaml", "{generate: microbench, collective: send_recv, size: 8, num_npus: 4, src: 0, dst: 1}",
                  _net("Switch", 4), "congestion_aware")
    with pytest.raises(InputError, match="switch_model=") as caught:
        Simulation.from_scenario(str(path), switch_model=module.OutputQueuedSwitch, switch_params=params)
    assert says in str(caught.value)


def test_a_link_that_sends_the_smallest_waiting_message_first(r6):
    """A process of the script's puts 3,000, 2,000 and 1,000 B of background traffic on link
    0 -> 1 at t = 0 (docs/cosimulation.md). The first starts at once (L + 3,000); shortest
    first, the 1,000 B follows (3,000 + L + 1,000), then the 2,000 B (4,000 + L + 2,000); FIFO
    the 2,000 B second (L + 5,000) and the 1,000 B last (L + 6,000). Offered before `sim.run()`,
    when no link's process has started yet, all three wait, and the smallest goes first."""
    import r6 as module

    from simpy_astra.network.link import Link
    from simpy_astra.simulation import Simulation

    path = _write(r6, "sjf.yaml", "{generate: microbench, collective: send_recv, size: 10000, num_npus: 2, "
                  "src: 1, dst: 0}", _net("FullyConnected", 2), "congestion_aware")  # keeps the run going

    def background(sim, done):
        done.extend(sim.network.send_background(0, 1, size) for size in (3000, 2000, 1000))
        yield sim.env.timeout(0)

    for model, want in ((module.ShortestFirstLink, [L + 3000, L + 6000, L + 4000]),
                        (Link, [L + 3000, L + 5000, L + 6000])):
        sim, done = Simulation.from_scenario(str(path), link_model=model), []
        sim.env.process(background(sim, done))
        sim.run()
        assert [event.value for event in done] == want, model
    sim = Simulation.from_scenario(str(path), link_model=module.ShortestFirstLink)
    early = [sim.network.send_background(0, 1, size) for size in (3000, 2000, 1000)]
    sim.run()
    assert [event.value for event in early] == [L + 6000, L + 3000, L + 1000]


# -- a backend of one's own -------------------------------------------------------------------

def test_a_rendezvous_backend_from_a_plugin_by_its_short_name(r6):
    """Every ring message of S/4 = 256 KiB is past the 64 KiB threshold, so it waits for a
    zero-byte round trip over its one hop, 2L: the ring all-reduce's closed form with a hop of
    d(S/4) + 2L, from `plugins:` in the scenario and from `--plugin` on the command line."""
    want = ring_all_reduce(4, MIB, hop=lambda s: d(s) + 2 * L)
    bench = f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}"
    with_plugins = _write(r6, "rv.yaml", bench, _net("Ring", 4), "rendezvous", extra="plugins: [r6_plugin]\n")
    assert set(_finished(with_plugins).values()) == {want}
    plain = _write(r6, "rv_cli.yaml", bench, _net("Ring", 4), "congestion_unaware")
    assert _quiet_ns(_cli(r6, "run", "rv_cli.yaml", "--quiet", "--plugin", "r6_plugin",
                          "--network-backend", "rendezvous")) == want
    assert _quiet_ns(_cli(r6, "run", str(plain), "--quiet")) == ring_all_reduce(4, MIB)


def test_a_link_model_named_beside_a_backend_that_builds_no_links_is_refused(r6):
    """The rendezvous backend (analytical) builds no links, so a `link-model` beside it would
    change nothing: one line naming the field and the backend, not a run without it."""
    path = _write(r6, "rv_link.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _net("Ring", 4, ", link-model: shortest_first"), "rendezvous", extra="plugins: [r6_plugin]\n")
    done = _cli(r6, "run", path.name, "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "field 'link-model' is not read by the rendezvous backend" in done.stderr


def test_the_generators_guide_says_an_npus_sends_take_turns(r6):
    """docs/generators.md: one communication slot per NPU, held by a send until its message
    arrived: three sends to a neighbour without deps end at L + 3,000, 2L + 5,000 and
    3L + 6,000, and the receives, which need no slot, with them."""
    path = _write(r6, "burst.yaml", '{generate: "r6:sizes_burst", sizes: [3000, 2000, 1000]}',
                  _net("FullyConnected", 2), "congestion_aware")
    _cli(r6, "run", path.name, "--quiet", "--csv-out", "burst")
    with open(r6 / "burst" / "nodes.csv") as f:
        ends = {(row["npu"], row["node_id"]): int(row["end_ns"]) for row in csv.DictReader(f)}
    want = [L + 3000, 2 * L + 5000, 3 * L + 6000]
    assert [ends[("0", str(j))] for j in range(3)] == want == [ends[("1", str(j))] for j in range(3)]
    guide = " ".join((Path(__file__).resolve().parents[1] / "docs" / "generators.md").read_text().split())
    assert "end at L + 3,000, 2L + 5,000 and 3L + 6,000" in guide


# -- a fabric built with networkx, from YAML, from Python and in a sweep ----------------------

def fat_tree_shift_ns(size: int, oversubscription: float) -> int:
    """NPUs 0, 1 under leaf 0 send S to 2, 3 under leaf 1 (and back), store-and-forward:
    both are in leaf 0 at L + S; the uplink and the spine's downlink, each S / B_up a message,
    carry the two in turn, the second one S / B_up behind; then the leaf's own downlink."""
    up = 2 * ONE_BYTE_PER_NS / oversubscription
    serial = int(size / (up * 2**30 / 1e9))
    return d(size) + 2 * d(size, up) + serial + d(size)


def test_a_fat_tree_builder_with_oversubscription_from_yaml_and_from_python(r6):
    """`topology: {networkx: "r6:fat_tree", oversubscription: 2}` and the same graph handed to
    `Simulation.from_scenario(path, topology=G)` (the scenario then fixes only the NPU count)."""
    import r6 as module

    size, bw = 1000, ONE_BYTE_PER_NS
    path = _write(r6, "ft.yaml", f'{{generate: "r6:shift", num_npus: 4, size: {size}, by: 2}}',
                  f'{{topology: {{networkx: "r6:fat_tree", oversubscription: 2, down_gbps: {bw!r}, latency_ns: {L}}}}}',
                  "congestion_aware")
    assert max(_finished(path).values()) == fat_tree_shift_ns(size, 2) == 4 * L + 5 * size
    graph = module.fat_tree(oversubscription=1, down_gbps=bw, latency_ns=L)
    assert max(_finished(path, topology=graph).values()) == fat_tree_shift_ns(size, 1) == 4 * L + 3.5 * size


def test_a_sweep_for_the_most_oversubscribed_tree_that_meets_a_deadline(r6):
    """An axis on the builder's own parameter, a result constraint (the deadline) and an
    objective over the axis itself (docs/sweeps.md): oversubscription 1, 2 and 4 finish at
    their closed forms; the deadline 4L + 5S leaves 1 and 2, of which 2 is the most."""
    size = 1000
    _write(r6, "ft.yaml", f'{{generate: "r6:shift", num_npus: 4, size: {size}, by: 2}}',
           f'{{topology: {{networkx: "r6:fat_tree", down_gbps: {ONE_BYTE_PER_NS!r}, latency_ns: {L}}}}}',
           "congestion_aware")
    (r6 / "deadline.yaml").write_text("base: ft.yaml\naxes:\n  network.topology.oversubscription: [1, 2, 4]\n"
                                      f"constraints:\n  - finish_ns <= {4 * L + 5 * size}\n"
                                      "minimise: -oversubscription\n")
    _cli(r6, "sweep", "deadline.yaml", "--out", "runs")
    with open(r6 / "runs" / "results.csv") as f:
        finish = {float(row["network.topology.oversubscription"]): int(row["finish_ns"]) for row in csv.DictReader(f)}
    assert finish == {o: fat_tree_shift_ns(size, o) for o in (1, 2, 4)}
    best = json.loads((r6 / "runs" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"network.topology.oversubscription": 4}
    assert best["best_under"][f"finish_ns <= {4 * L + 5 * size}"]["coordinates"] == {
        "network.topology.oversubscription": 2}


# -- workload generators and front-ends -------------------------------------------------------

def test_an_expert_parallel_generator_whose_groups_the_breakdown_calls_ep(r6):
    """dp 2 x ep 4 on 8 fully connected NPUs: each of 2 layers computes 5 us, then all-to-alls
    8,000 B in its group of 4 by the hierarchical algorithm (a node of 4: S / 4 to each peer,
    E, no rail peer, E). `--json-out` gives every NPU 2 (5,000 + d(S/4) + 2E) and a breakdown
    whose `comm.ep` is the two all-to-alls (docs/reports.md)."""
    size = 8000
    path = _write(r6, "moe.yaml", f'{{generate: "r6:moe", ep: 4, dp: 2, layers: 2, compute_us: 5, tokens: {size}}}',
                  _net("FullyConnected", 8), "congestion_unaware", _system(all_to_all="r6:HIER_A2A"))
    _cli(r6, "run", path.name, "--quiet", "--json-out", "moe.json")
    figures = json.loads((r6 / "moe.json").read_text())
    a2a = d(size // 4) + 2 * E
    assert figures["iteration_time_ns"] == 2 * (5000 + a2a)
    assert {npu["breakdown_ns"]["comm.ep"] for npu in figures["npus"].values()} == {2 * a2a}
    assert len(figures["npus"]) == 8


def test_a_gpipe_generator_whose_waits_the_breakdown_calls_bubble(r6):
    """3 stages, 2 micro-batches of F = 10 us, activations of 4,000 B (h = d(4,000)); sends
    take the one communication slot in turn, receives wait from t = 0. Stage 0 ends at
    2F + h (its last send exposed: comm.pp h), stage 1 at 3F + 2h (a bubble of F + h before
    its first micro-batch), stage 2 at 4F + 2h (a bubble of 2F + 2h): `--json-out`'s
    `breakdown_ns` (docs/reports.md)."""
    f, h = 10_000, d(4000)
    path = _write(r6, "gpipe.yaml", '{generate: "r6:gpipe_forward", stages: 3, micro: 2, compute_us: 10, size: 4000}',
                  _net("Ring", 3), "congestion_unaware")
    _cli(r6, "run", path.name, "--quiet", "--json-out", "gpipe.json")
    npus = json.loads((r6 / "gpipe.json").read_text())["npus"]
    assert {k: (v["finished_ns"], v["breakdown_ns"]) for k, v in npus.items()} == {
        "0": (2 * f + h, {"compute.other": 2 * f, "comm.pp": h}),
        "1": (3 * f + 2 * h, {"compute.other": 2 * f, "comm.pp": h, "bubble": f + h}),
        "2": (4 * f + 2 * h, {"compute.other": 2 * f, "bubble": 2 * f + 2 * h})}


def test_a_csv_front_end_reads_its_table_from_the_working_directory_and_reruns_when_it_changes(r6):
    """`from_table` turns a table of steps into traces: compute 10 us, a 4,000 B ring
    all-reduce, compute 5 us. The scenario sits in proj/ and names the table as the generator
    opens it, from the working directory (docs/generators.md); editing the table's last step to
    7 us runs the generator again (its content is in the cache key): 2,000 ns more."""
    proj = r6 / "proj"
    proj.mkdir()
    (proj / "steps.csv").write_text("compute,10\nall_reduce,4000\ncompute,5\n")
    _write(proj, "table.yaml", '{generate: "r6:from_table", table: proj/steps.csv, num_npus: 4}',
           _net("Ring", 4), "congestion_unaware")
    want = 10_000 + ring_all_reduce(4, 4000) + 5_000
    assert _quiet_ns(_cli(r6, "run", "proj/table.yaml", "--quiet")) == want
    (proj / "steps.csv").write_text("compute,10\nall_reduce,4000\ncompute,7\n")
    assert _quiet_ns(_cli(r6, "run", "proj/table.yaml", "--quiet")) == want + 2_000
    wrong = _cli(proj, "run", "table.yaml", "--quiet", status=2, path=r6)  # from proj/: no proj/steps.csv
    assert "generator 'r6:from_table' raised FileNotFoundError" in wrong.stderr and "Traceback" not in wrong.stderr


def test_a_report_of_link_use_from_the_json_figures(r6):
    """The 1 MiB ring all-reduce on 4 NPUs (congestion_aware): every clockwise link carries
    2(n-1) messages of S/4, 6 x 262,144 B, busy 6 x 262,144 ns of the ring's closed form; no
    compute, so every NPU's time is exposed."""
    import r6 as module

    path = _write(r6, "ring.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _net("Ring", 4), "congestion_aware")
    _cli(r6, "run", path.name, "--quiet", "--json-out", "ring.json")
    report = module.link_report(r6 / "ring.json")
    t = ring_all_reduce(4, MIB)
    busy = [(name, nbytes, share) for name, nbytes, share in report["links"] if nbytes]
    assert sorted(name for name, _, _ in busy) == ["0->1", "1->2", "2->3", "3->0"]
    assert {(nbytes, share) for _, nbytes, share in busy} == {(6 * MIB // 4, 6 * (MIB // 4) / t)}
    assert report["mean_exposed_share"] == 1.0


@pytest.mark.parametrize("backend, alpha, beta", [("congestion_unaware", 3 * L, 1.0),
                                                  ("congestion_aware", 3 * L, 1 / 3)])
def test_a_front_end_that_fits_latency_and_bandwidth_from_two_runs(r6, backend, alpha, beta):
    """Two send_recv runs over the de Bruijn route 0 -> 1 -> 2 -> 5 (3 hops) at 64 KiB and
    1 MiB: T = alpha + S / beta with alpha = 3L, and beta 1 byte/ns on the analytical backend
    (the slowest link) or a third of it store-and-forward (each hop serialises S again)."""
    import r6 as module

    path = _write(r6, "p2p.yaml", "{generate: microbench, collective: send_recv, size: 1, num_npus: 8, src: 0, dst: 5}",
                  _net('"r6:DeBruijn"', 8), backend)
    fitted_alpha, fitted_beta = module.fit_alpha_beta(str(path))
    assert fitted_alpha == pytest.approx(alpha) and fitted_beta == pytest.approx(beta)


@pytest.mark.parametrize("field, base", [("switch-model", "simpy_astra.network.switch:SwitchElement"),
                                         ("link-model", "simpy_astra.network.link:LinkElement")])
def test_a_models_serving_loop_written_without_a_yield_is_named(r6, field, base):
    """`run()` is the serving loop, a generator (network/README.md); one written as a plain
    method (a switch that serves from processes of its own, its `run` left as `pass`) was
    SimPy's bare 'None is not a generator'. Now one line names the model, run() and the fix."""
    module, cls = base.split(":")
    (r6 / "noloop.py").write_text(f"from {module} import {cls}\n\n\nclass NoLoop({cls}):\n    def run(self):\n"
                                  "        pass\n")
    path = _write(r6, "noloop.yaml", "{generate: microbench, collective: send_recv, size: 8, num_npus: 4, src: 0, "
                  "dst: 1}", _net("Switch", 4, f', {field}: "noloop:NoLoop"'), "congestion_aware")
    done = _cli(r6, "run", path.name, "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "'noloop:NoLoop': run() returned None; it must return a generator" in done.stderr


def test_a_misspelt_kind_is_named_where_the_algorithm_is_made(r6):
    """`kinds=frozenset({"allreduce"})` made an algorithm that implements nothing; the system
    config that picked it was told only that it does not implement all_reduce. Now the module
    that makes it stops with the kind, the kinds there are, and the line."""
    (r6 / "typo.py").write_text("from simpy_astra.collectives.base import CollectiveAlgorithm, ring_final_size\n\n\n"
                                "def one(ctx):\n    yield ctx.endpoint()\n\n\n"
                                "ONE = CollectiveAlgorithm('one', one, ring_final_size, kinds=frozenset({'allreduce'}))\n")
    path = _write(r6, "typo.yaml", "{generate: microbench, collective: all_reduce, size: 4000, num_npus: 4}",
                  _net("Ring", 4), "congestion_unaware", _system(all_reduce="typo:ONE"))
    done = _cli(r6, "run", path.name, "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "kinds 'allreduce' is no collective; kinds are all_reduce, reduce_scatter, all_gather" in done.stderr
    assert "typo.py:8" in done.stderr


@pytest.mark.parametrize("body, returned", [("    ctx.post(right, ctx.size_bytes)\n", "None"),
                                            ("    return [ctx.recv(left, ctx.size_bytes)]\n", "[<")])
def test_an_algorithm_written_as_a_plain_function_is_told_to_yield(r6, body, returned):
    """An algorithm that never yields (a plain function: its post sent, nothing waited on) was
    'raised TypeError: NoneType object is not iterable (at the call, before any line of it
    ran ...)', though every line of it had run; one returning a list of events ran them as if
    yielded. Now one line says what it returned and that an algorithm is a generator."""
    (r6 / "plain.py").write_text("from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, "
                                 "ring_final_size\n\n\ndef plain(ctx):\n    n, i = len(ctx.members), ctx.index\n"
                                 "    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]\n" + body +
                                 "\n\nPLAIN = CollectiveAlgorithm('plain', plain, ring_final_size, "
                                 "kinds=frozenset({ALL_REDUCE}))\n")
    path = _write(r6, "plain.yaml", "{generate: microbench, collective: all_reduce, size: 4000, num_npus: 4}",
                  _net("Ring", 4), "congestion_unaware", _system(all_reduce="plain:PLAIN"))
    done = _cli(r6, "run", path.name, "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"collective algorithm 'plain:PLAIN' returned {returned}" in done.stderr
    assert "not a generator: an algorithm is a generator function" in done.stderr


def test_spawning_the_function_instead_of_its_call_says_to_call_it(r6):
    """`ctx.spawn(one_direction)` where collectives/README.md writes `ctx.spawn(one_direction(...))`
    was 'raised TypeError: a collective algorithm must be a generator function (got <function
    ...>)': no word of spawn, and the algorithm was a generator function. Now the line names
    ctx.spawn and the call to write."""
    (r6 / "spawned.py").write_text("from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, "
                                   "ring_final_size\n\n\ndef halves(ctx):\n    def half():\n"
                                   "        yield ctx.endpoint()\n\n    yield ctx.spawn(half)\n\n\n"
                                   "HALVES = CollectiveAlgorithm('halves', halves, ring_final_size, "
                                   "kinds=frozenset({ALL_REDUCE}))\n")
    path = _write(r6, "spawned.yaml", "{generate: microbench, collective: all_reduce, size: 4000, num_npus: 4}",
                  _net("Ring", 4), "congestion_unaware", _system(all_reduce="spawned:HALVES"))
    done = _cli(r6, "run", path.name, "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert ("ctx.spawn(...): takes a running generator, not the function halves.<locals>.half: call it: "
            "ctx.spawn(half(...))") in done.stderr
