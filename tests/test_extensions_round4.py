"""Extensions written from the docs alone, fourth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_round2.py``, ``test_extensions_round3.py``,
``test_extension_*.py``) and is checked against a figure derived here from the closed forms
the docs state.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns unless a test
says otherwise, so one hop of S bytes takes ``d(S) = trunc(L + S / B)``; ``E`` is the endpoint
delay and ``P(x)`` the reduction of x bytes, three passes of ``int(x / (local-mem-bw 10^9) x
10^9)`` (collectives/README.md). The native ring all-reduce of S on n NPUs is
``E + 2(n-1)(d(S/n) + E) + (n-1) P(S/n)`` (docs/reports.md's 32,362 ns plus the reductions).
"""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

L = 500
E = 10
MEM_BW = 50
ONE_BYTE_PER_NS = 1e9 / 2**30

#: the researcher's module, written from docs/collectives.md, collectives/README.md,
#: docs/backends.md, simpy_astra/network/README.md and docs/generators.md
R4 = textwrap.dedent('''
import json
import math

from simpy_astra import collectives
from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec, register
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.topologies import BasicTopology
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_AR
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE

GPUS_PER_NODE = 4
RAIL_SLOWDOWN = 4  # a rail between nodes is 4x slower and 4x longer than an in-node link


class TwoLevel(BasicTopology):
    """Nodes of 4 NPUs, fully connected inside; NPUs of the same local rank joined across nodes
    by rails (fully connected), a quarter of the bandwidth, 4x the latency."""

    def _node(self, i):
        return i // GPUS_PER_NODE

    def _local(self, i):
        return i % GPUS_PER_NODE

    def links(self):
        return [(a, b) for a in range(self.npus_count) for b in range(self.npus_count)
                if a != b and (self._node(a) == self._node(b) or self._local(a) == self._local(b))]

    def route(self, src, dst):
        if src == dst:
            return [src]
        if self._node(src) == self._node(dst) or self._local(src) == self._local(dst):
            return [src, dst]
        return [src, self._node(src) * GPUS_PER_NODE + self._local(dst), dst]

    def hops(self, src, dst):
        return len(self.route(src, dst)) - 1

    def link_params(self, src, dst):
        if self._node(src) == self._node(dst):
            return self.bandwidth_gbps, self.latency_ns
        return self.bandwidth_gbps / RAIL_SLOWDOWN, self.latency_ns * RAIL_SLOWDOWN


def hierarchical(ctx):
    """Reduce-scatter inside the node, all-reduce of the shard across nodes on the rail,
    all-gather inside the node: each step a ring of S/4 (in node) or S/4/m (across)."""
    g, i = GPUS_PER_NODE, ctx.index
    node, local = i // g, i % g
    nodes = len(ctx.members) // g
    mates = [ctx.members[node * g + k] for k in range(g)]
    rail = [ctx.members[k * g + local] for k in range(nodes)]
    shard = ctx.size_bytes // g
    for step in range(g - 1):  # reduce-scatter in the node
        ctx.send(mates[(local + 1) % g], shard)
        yield ctx.recv(mates[(local - 1) % g], shard)
        yield ctx.endpoint(reduce_bytes=shard)
    piece = shard // nodes
    for step in range(2 * (nodes - 1)):  # ring all-reduce of the shard across nodes
        ctx.send(rail[(node + 1) % nodes], piece)
        yield ctx.recv(rail[(node - 1) % nodes], piece)
        yield ctx.endpoint(reduce_bytes=piece if step < nodes - 1 else 0)
    for step in range(g - 1):  # all-gather in the node
        ctx.send(mates[(local + 1) % g], shard)
        yield ctx.recv(mates[(local - 1) % g], shard)
        yield ctx.endpoint()


HIER = CollectiveAlgorithm("hier", hierarchical, ring_final_size, kinds=frozenset({ALL_REDUCE}))


def simple_ring(ctx):
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    msg = ctx.size_bytes // n
    for step in range(2 * (n - 1)):
        ctx.send(right, msg)
        yield ctx.recv(left, msg)
        yield ctx.endpoint(reduce_bytes=msg if step < n - 1 else 0)


collectives.register("r4Ring", CollectiveAlgorithm("r4Ring", simple_ring, ring_final_size,
                                                   kinds=frozenset({ALL_REDUCE})))


class OverheadLink(LinkElement):
    """Every message waits o_ns plus the time of its header_bytes before it starts."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, o_ns=0, header_bytes=0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.o_ns, self.header_bytes = o_ns, header_bytes

    def hold_ns(self, item):
        return self.o_ns + self.header_bytes / self.bytes_per_ns


MTU, PER_PACKET_NS = 4096, 40


class Packetised(CongestionUnawareNetwork):
    """The analytical delay plus PER_PACKET_NS for each MTU-sized packet a message is cut into."""

    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) + PER_PACKET_NS * math.ceil(size_bytes / MTU)


PACKETISED = BackendSpec("packetised", "analytical plus 40 ns per 4 KiB packet",
                         lambda env, dims, source, config=None: Packetised(env, dims), folds="pairs",
                         folded=None)


def dp_groups(params, prefix):
    """Every NPU computes, all-reduces its gradients within its group (even NPUs, odd NPUs),
    then steps its optimizer; the groups go to prefix.json."""
    n, size = params["num_npus"], params["size"]
    groups = {"1": list(range(0, n, 2)), "2": list(range(1, n, 2))}
    for rank in range(n):
        nodes = [make_node(0, "backward", COMP_NODE, duration_micros=params["compute_us"],
                           attrs={"is_cpu_op": False}),
                 make_node(1, "grad_ar", COMM_COLL_NODE, deps=[0], attrs={
                     "is_cpu_op": False, "comm_type": COLL_AR, "comm_size": size, "pg_name": str(1 + rank % 2)}),
                 make_node(2, "optimizer", COMP_NODE, deps=[1], duration_micros=params["opt_us"],
                           attrs={"is_cpu_op": False})]
        write_et(f"{prefix}.{rank}.et", nodes)
    with open(prefix + ".json", "w") as f:
        json.dump(groups, f)
    return prefix + ".json"


def gpipe_fb(params, prefix):
    """Two stages, M micro-batches: all forwards (activations 0->1, tag m), then all backwards
    in reverse (gradients 1->0, tag 100 + m)."""
    micro, size = params["micro_batches"], params["size"]
    f, b = params["fwd_us"], params["bwd_us"]
    for s in range(2):
        nodes, nid, last = [], 0, None

        def add(name, kind, deps, **kw):
            nonlocal nid
            nodes.append(make_node(nid, name, kind, deps=[d for d in deps if d is not None], **kw))
            nid += 1
            return nid - 1

        for m in range(micro):
            recv = None
            if s == 1:
                recv = add(f"recv_act{m}", COMM_RECV_NODE, [], attrs={
                    "is_cpu_op": False, "comm_src": 0, "comm_size": size, "comm_tag": m})
            last = add(f"fwd{m}", COMP_NODE, [last, recv], duration_micros=f, attrs={"is_cpu_op": False})
            if s == 0:
                add(f"send_act{m}", COMM_SEND_NODE, [last], attrs={
                    "is_cpu_op": False, "comm_dst": 1, "comm_size": size, "comm_tag": m})
        for m in reversed(range(micro)):
            recv = None
            if s == 0:
                recv = add(f"recv_grad{m}", COMM_RECV_NODE, [], attrs={
                    "is_cpu_op": False, "comm_src": 1, "comm_size": size, "comm_tag": 100 + m})
            last = add(f"bwd{m}", COMP_NODE, [last, recv], duration_micros=b, attrs={"is_cpu_op": False})
            if s == 1:
                add(f"send_grad{m}", COMM_SEND_NODE, [last], attrs={
                    "is_cpu_op": False, "comm_dst": 0, "comm_size": size, "comm_tag": 100 + m})
        write_et(f"{prefix}.{s}.et", nodes)
''')

#: a plugin module registering short names for what r4 defines (docs/collectives.md,
#: docs/generators.md)
R4PLUG = textwrap.dedent('''
from simpy_astra import collectives, topologies
from simpy_astra.workloads import generated
import r4

collectives.register("r4bare", r4.simple_ring)
topologies.register("R4TwoLevel", r4.TwoLevel)
generated.register("r4dp", r4.dp_groups, version="1")
''')


@pytest.fixture
def r4(tmp_path: Path, monkeypatch) -> Path:
    from simpy_astra import collectives, topologies
    from simpy_astra.network.backends import BACKENDS
    from simpy_astra.workloads import generated

    backends_before = set(BACKENDS)
    for name in ("r4", "r4plug"):
        sys.modules.pop(name, None)
    (tmp_path / "r4.py").write_text(R4)
    (tmp_path / "r4plug.py").write_text(R4PLUG)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / ".cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    yield tmp_path
    for registry, name in ((collectives.REGISTRY, "r4Ring"), (collectives.REGISTRY, "r4bare"),
                           (topologies.REGISTRY, "R4TwoLevel"), (generated.GENERATORS, "r4dp")):
        registry.pop(name, None)
    for name in set(BACKENDS) - backends_before:  # 'backend: r4:PACKETISED' registers 'packetised'
        BACKENDS.pop(name)
    for name in ("r4", "r4plug"):
        sys.modules.pop(name, None)


def _system(all_reduce: str = "ring", extra: str = "") -> str:
    return ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
            f"active-chunks-per-dimension: 1, preferred-dataset-splits: 1, local-mem-bw: {MEM_BW}, "
            f"all-reduce-implementation: [{all_reduce}], all-gather-implementation: [ring], "
            f"reduce-scatter-implementation: [ring], all-to-all-implementation: [direct]{extra}}}")


def _write(folder: Path, name: str, workload: str, system: str, network: str, backend: str,
           extra: str = "") -> Path:
    path = folder / name
    path.write_text(f"workload: {workload}\nsystem: {system}\nnetwork: {network}\nbackend: {backend}\n{extra}")
    return path


def _net(topology: str, n: int, bandwidth: float = ONE_BYTE_PER_NS, extra: str = "") -> str:
    return f"{{topology: [{topology}], npus_count: [{n}], bandwidth: [{bandwidth!r}], latency: [{L}]{extra}}}"


def _finished(path: Path, **kwargs) -> dict[int, int]:
    from simpy_astra.simulation import Simulation

    return {r.npu_id: r.finished_ns for r in Simulation.from_scenario(str(path), **kwargs).run()}


def d(size: float, bandwidth_gbps: float = ONE_BYTE_PER_NS, latency: int = L) -> int:
    """One hop of `size` bytes: trunc(latency + size / B), B in bytes per ns (GB = 2^30 B)."""
    return int(latency + size / (bandwidth_gbps * 2**30 / 1e9))


def reduce_ns(size: int) -> int:
    return 3 * int(size / (MEM_BW * 1e9) * 1e9)


def ring_all_reduce(n: int, size: int, hop=d) -> int:
    """The native ring: E first, then 2(n-1) steps of a hop and E, the first n-1 reducing."""
    return E + 2 * (n - 1) * (hop(size // n) + E) + (n - 1) * reduce_ns(size // n)


MIB = 2**20
BENCH_AR8 = f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 8}}"


def hierarchical(size: int, nodes: int, rail=lambda s: d(s, ONE_BYTE_PER_NS / 4, 4 * L), g: int = 4) -> int:
    """r4's hierarchical all-reduce: (g-1) in-node reduce-scatter steps of S/g, 2(m-1) ring
    steps of S/g/m across the m nodes (the first m-1 reduce), (g-1) in-node all-gather steps."""
    shard, piece = size // g, size // g // nodes
    in_node = (g - 1) * (d(shard) + E + reduce_ns(shard)) + (g - 1) * (d(shard) + E)
    across = 2 * (nodes - 1) * (rail(piece) + E) + (nodes - 1) * reduce_ns(piece)
    return in_node + across


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_a_hierarchical_all_reduce_on_two_levels_of_unequal_links(r4, backend):
    """A topology class whose rails between nodes are 4x slower and 4x longer
    (`link_params`, docs/collectives.md) and one phase that reduce-scatters in the node,
    all-reduces the shard on the rail and all-gathers in the node. Every message crosses one
    link of its own, so all three backends give the closed form: 2 nodes of 4, 1 MiB."""
    path = _write(r4, "hier.yaml", BENCH_AR8, _system('"r4:HIER"'), _net('"r4:TwoLevel"', 8), backend)
    expected = hierarchical(MIB, nodes=2)
    assert expected == 3 * (262_644 + 10 + 15_726) + 2 * (526_288 + 10) + 7_863 + 3 * (262_644 + 10) == 2_683_561
    assert _finished(path) == dict.fromkeys(range(8), expected)


def test_the_hierarchical_all_reduce_on_a_flat_fabric_pays_no_rail(r4):
    """The same algorithm on 8 fully connected NPUs of one speed: the cross-node ring is a
    plain hop of S/8, which it beats the native ring with (fewer steps of E)."""
    path = _write(r4, "flat.yaml", BENCH_AR8, _system('"r4:HIER"'), _net("FullyConnected", 8), "congestion_unaware")
    expected = hierarchical(MIB, nodes=2, rail=d)
    assert expected == 1_894_129 < ring_all_reduce(8, MIB)
    assert _finished(path) == dict.fromkeys(range(8), expected)


def test_a_torus_all_reduce_runs_ones_own_ring_on_each_dimension_in_turn(r4):
    """docs/collectives.md: an implementation list names one algorithm per dimension. On a
    4 x 2 torus (`[Ring, Ring]`) the plugin's ring runs on the 4-ring, then on the 2-ring, each
    over the whole S (an all-reduce keeps its size: `ring_final_size`), with no E first:
    2(n-1)(d(S/n) + E) + (n-1) P(S/n) per dimension."""
    path = _write(r4, "torus.yaml", BENCH_AR8, _system("r4Ring, r4Ring"),
                  f"{{topology: [Ring, Ring], npus_count: [4, 2], bandwidth: [{ONE_BYTE_PER_NS!r}, "
                  f"{ONE_BYTE_PER_NS!r}], latency: [{L}, {L}]}}", "congestion_unaware", "plugins: [r4]\n")

    def own_ring(n: int) -> int:
        return 2 * (n - 1) * (d(MIB // n) + E) + (n - 1) * reduce_ns(MIB // n)

    assert own_ring(4) + own_ring(2) == 1_623_102 + 1_081_051
    assert _finished(path) == dict.fromkeys(range(8), own_ring(4) + own_ring(2))


def test_a_link_model_with_a_per_message_overhead_and_header(r4):
    """A link model (simpy_astra/network/README.md, "The link contract") whose `hold_ns` is
    o + header / B, a fraction cut to whole ns: each of the ring all-reduce's 6 messages per NPU
    waits trunc(200 + 64 / (50 x 2^30 / 10^9)) = 201 ns more, at 50 GB/s on 4 NPUs."""
    model = ', link-model: {class: "r4:OverheadLink", o_ns: 200, header_bytes: 64}'
    path = _write(r4, "ovh.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _system(), _net("Ring", 4, 50.0, model), "congestion_aware")
    hold = int(200 + 64 / (50 * 2**30 / 1e9))
    expected = ring_all_reduce(4, MIB, hop=lambda s: d(s, 50.0) + hold)
    assert (hold, expected) == (201, 32_362 + 3 * 15_726 + 6 * 201)
    assert _finished(path) == dict.fromkeys(range(4), expected)


def test_a_packetising_backend_named_by_its_spec(r4):
    """docs/backends.md: `backend: module:SPEC` runs an unregistered BackendSpec. Each message
    pays 40 ns per 4 KiB packet: the plugin ring's 6 messages of 250,000 B on 4 NPUs, 62
    packets each."""
    workload = "{generate: microbench, collective: all_reduce, size: 1000000, num_npus: 4}"
    path = _write(r4, "pkt.yaml", workload, _system("r4Ring"), _net("Ring", 4), "r4:PACKETISED", "plugins: [r4]\n")
    per_message = 40 * -(-250_000 // 4096)
    expected = 6 * (d(250_000) + per_message + E) + 3 * reduce_ns(250_000)
    assert per_message == 2_480
    assert _finished(path) == dict.fromkeys(range(4), expected)


def test_a_generator_that_writes_its_groups_run_by_ones_own_group_algorithm(r4):
    """docs/generators.md: a generator may return `prefix + ".json"`, the comm groups of its
    traces. r4dp (registered with a version from a plugin) all-reduces within the even and the
    odd NPUs; `all-reduce-group-implementation` (docs/collectives.md) names a bare generator
    function registered by the plugin, on the two-level topology registered by it too. Group
    {0,2,4,6}'s ring alternates a link in the node (2 -> 0's mate) and a 2-hop path through a
    rail (2 -> 4 via 0, charged its summed latency and slowest bandwidth), so each of its 6
    lock-step waits crosses, going back along the ring, 3 slow and 3 fast hops:
    3 (d_rail + d_in) + 6 E + 3 P(S/4), between 20 us of compute and 5 us of optimizer."""
    workload = f"{{generate: r4dp, num_npus: 8, size: {MIB}, compute_us: 20, opt_us: 5}}"
    path = _write(r4, "grp.yaml", workload, _system(extra=", all-reduce-group-implementation: r4bare"),
                  _net("R4TwoLevel", 8), "congestion_unaware", "plugins: [r4plug]\n")
    shard = MIB // 4
    rail = d(shard, ONE_BYTE_PER_NS / 4, L + 4 * L)
    expected = 20_000 + 3 * (rail + d(shard)) + 6 * E + 3 * reduce_ns(shard) + 5_000
    assert expected == 4_013_398
    assert _finished(path) == dict.fromkeys(range(8), expected)
    assert (r4 / ".cache").is_dir()


def pipeline_ends(micro: int, fwd: int, bwd: int, size: int) -> tuple[int, int]:
    """GPipe on 2 stages: stage 1's forward m ends at (m + 2) f + d, its backwards follow; the
    gradients reach stage 0 one b apart, so stage 0 ends at (M+1)(f + b) + 2d, and stage 1 when
    its last gradient arrives, (M+1) f + M b + 2d (a send ends at the arrival: docs/generators.md)."""
    hop = d(size)
    return (micro + 1) * (fwd + bwd) + 2 * hop, (micro + 1) * fwd + micro * bwd + 2 * hop


def test_a_forward_and_backward_pipeline_generator(r4):
    """A generator of a 2-stage GPipe step (4 micro-batches forward, then backward in reverse,
    activations and gradients as tagged sends) named as module:function."""
    workload = '{generate: "r4:gpipe_fb", micro_batches: 4, size: 65536, fwd_us: 100, bwd_us: 200}'
    path = _write(r4, "pp.yaml", workload, _system(), _net("Ring", 2), "congestion_unaware")
    first, last = pipeline_ends(4, 100_000, 200_000, 65_536)
    assert (first, last) == (1_632_072, 1_432_072)
    assert _finished(path) == {0: first, 1: last}


def test_two_jobs_of_ones_own_generators_with_their_own_groups(r4):
    """docs/jobs.md: each job keeps its rank numbering and its communicator groups, which a
    generator returns. On 16 fully connected NPUs (congestion_aware) job a, r4dp on NPUs 0-7,
    runs group rings of one hop each; job b, the pipeline on NPUs 8-9, starts 1 us later. No
    link is shared, so each ends as alone: a at 20 us + the plugin's ring on 4 + 5 us, b at
    1 us + the pipeline's ends."""
    jobs = ("jobs:\n"
            f"  - {{name: a, workload: {{generate: r4dp, num_npus: 8, size: {MIB}, compute_us: 20, opt_us: 5}},"
            " placement: contiguous}\n"
            '  - {name: b, workload: {generate: "r4:gpipe_fb", micro_batches: 4, size: 65536, fwd_us: 100, '
            "bwd_us: 200}, placement: contiguous, start_ns: 1000}\n")
    path = r4 / "jobs.yaml"
    path.write_text(f"plugins: [r4plug]\nsystem: {_system('r4bare', ', all-reduce-group-implementation: r4bare')}\n"
                    f"network: {_net('FullyConnected', 16)}\nbackend: congestion_aware\n{jobs}")
    shard = MIB // 4
    a = 20_000 + 6 * (d(shard) + E) + 3 * reduce_ns(shard) + 5_000
    first, last = pipeline_ends(4, 100_000, 200_000, 65_536)
    assert _finished(path) == {**dict.fromkeys(range(8), a), 8: 1000 + first, 9: 1000 + last}


def test_a_sweep_over_ones_own_algorithm_and_topology_class(r4):
    """docs/sweeps.md: axis values may be anything of one's own a scenario can name: the
    hierarchical algorithm and the native ring, on the two-level class and on a fully
    connected fabric. The points with the hierarchical algorithm give its closed forms."""
    _write(r4, "base.yaml", BENCH_AR8, _system('"r4:HIER"'), _net('"r4:TwoLevel"', 8), "congestion_unaware")
    (r4 / "sweep.yaml").write_text('base: base.yaml\naxes:\n  system.all-reduce-implementation: [ring, "r4:HIER"]\n'
                                   '  network.topology: [FullyConnected, "r4:TwoLevel"]\n')
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", "sweep.yaml", "--out", "out"], cwd=r4,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    with open(r4 / "out" / "results.csv") as f:
        rows = {(r["system.all-reduce-implementation"], r["network.topology"]): r for r in csv.DictReader(f)}
    assert len(rows) == 4 and {r["status"] for r in rows.values()} == {"ok"}
    assert int(rows["r4:HIER", "r4:TwoLevel"]["finish_ns"]) == hierarchical(MIB, nodes=2)
    assert int(rows["r4:HIER", "FullyConnected"]["finish_ns"]) == hierarchical(MIB, nodes=2, rail=d)
    assert int(rows["ring", "FullyConnected"]["finish_ns"]) == ring_all_reduce(8, MIB)


def test_a_process_that_throttles_a_link_mid_message_and_sends_background_bytes(r4):
    """docs/cosimulation.md: a process halves link 0->1 at 100 us while 1 MiB crosses it
    (`set_bandwidth` re-times the bytes not yet on the wire), another puts 4 KiB on link 1->0
    at 10 ns, and a third reads `link_end` from `sim.stream`. The message's last byte leaves at
    10^5 + (2^20 - 10^5) x 2 and arrives L later; the background bytes at 10 + L + 4,096."""
    from simpy_astra.simulation import Simulation

    workload = f"{{generate: microbench, collective: send_recv, size: {MIB}, num_npus: 2, src: 0, dst: 1}}"
    path = _write(r4, "p2p.yaml", workload, _system(), _net("Ring", 2), "congestion_aware")
    sim = Simulation.from_scenario(str(path))
    env, link = sim.env, sim.network.link(0, 1)
    ends, background = [], []

    def throttle():
        yield env.timeout(100_000)
        link.set_bandwidth(link.bandwidth_gbps / 2)

    def reader(store):
        while True:
            seen = yield store.get()
            ends.append((seen.time_ns, seen.size_bytes, seen.what.src, seen.what.dst))

    def put_background():
        yield env.timeout(10)
        background.append((yield sim.network.link(1, 0).put(4096)))

    env.process(throttle())
    env.process(reader(sim.stream("link_end")))
    env.process(put_background())
    finished = {r.npu_id: r.finished_ns for r in sim.run()}
    arrival = 100_000 + (MIB - 100_000) * 2 + L
    assert finished == {0: arrival, 1: arrival} and arrival == 1_997_652
    assert ends == [(arrival, MIB, 0, 1)]
    assert background == [10 + L + 4096] and link.bytes == MIB


def test_a_report_of_collectives_and_link_use_from_observations(r4):
    """docs/reports.md, "A report of your own", with docs/cosimulation.md's `sim.on`: per NPU the
    all-reduce's span from `collective_start` to `collective_end`, the messages delivered, and
    the ring's links: on 4 NPUs the ring (with the per-message link model) sends 6 messages of
    S/4 per NPU, all clockwise, so 4 links carry 6 S/4 bytes, busy 6 trunc(S/4 / B) each, and
    the 4 others none."""
    from simpy_astra.simulation import Simulation

    model = ', link-model: {class: "r4:OverheadLink", o_ns: 200}'
    path = _write(r4, "ovh.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _system(), _net("Ring", 4, 50.0, model), "congestion_aware")
    sim = Simulation.from_scenario(str(path))
    spans: dict[int, list[int]] = {}
    delivered = []
    sim.on("collective_start", lambda o: spans.setdefault(o.npu, []).append(o.time_ns))
    sim.on("collective_end", lambda o: spans[o.npu].append(o.time_ns))
    sim.on("message_delivered", lambda o: delivered.append((o.npu, o.peer, o.size_bytes)))
    finish = max(r.finished_ns for r in sim.run())
    expected = ring_all_reduce(4, MIB, hop=lambda s: d(s, 50.0) + 200)
    assert finish == expected and spans == dict.fromkeys(range(4), [0, expected])
    assert sorted(delivered) == sorted((i, (i + 1) % 4, MIB // 4) for i in range(4) for _ in range(6))
    use = {(link.src, link.dst): (link.bytes, link.busy_ns) for link in sim.network.links()}
    busy = 6 * int(MIB // 4 / (50 * 2**30 / 1e9))
    assert use == {**{(i, (i - 1) % 4): (0, 0) for i in range(4)},
                   **{(i, (i + 1) % 4): (6 * MIB // 4, busy) for i in range(4)}}
    assert busy == 29_292


#: a double binary tree built by a `logical` hook (collectives/README.md): two heap-ordered
#: trees, one over the ring order and one over its reverse, each reducing and broadcasting S/2
DOUBLE_TREE = textwrap.dedent('''
    from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size

    TAGS = (None, None)


    def heap_trees(dim):
        """For this NPU, in each tree, its parent (None at the root) and its children."""
        n, m = len(dim.members), dim.members
        out = []
        for order in (list(range(n)), list(reversed(range(n)))):
            p = order.index(dim.index)
            parent = m[order[(p - 1) // 2]] if p else None
            out.append((parent, [m[order[c]] for c in (2 * p + 1, 2 * p + 2) if c < n]))
        return (tuple(out),)


    def double_tree(ctx, trees):
        half = ctx.size_bytes // 2

        def one_tree(parent, children, tag):
            for child in children:  # reduce what each child sends up
                yield ctx.recv(child, half, tag=tag)
                yield ctx.endpoint(reduce_bytes=half)
            if parent is not None:  # pass it up, wait for the result
                ctx.send(parent, half, tag=tag)
                yield ctx.recv(parent, half, tag=tag)
            for child in children:  # and hand the result down
                ctx.send(child, half, tag=tag)

        a = ctx.spawn(one_tree(*trees[0], TAGS[0]))
        b = ctx.spawn(one_tree(*trees[1], TAGS[1]))
        yield a
        yield b


    DOUBLE_TREE = CollectiveAlgorithm("double_tree", double_tree, ring_final_size, kinds=frozenset({ALL_REDUCE}),
                                      logical=heap_trees)
''')


@pytest.mark.parametrize("tags", [(1, 2), (None, None)])
def test_a_double_binary_tree_keeps_its_two_trees_apart_by_tag(r4, tags):
    """collectives/README.md: a receive takes the first message of its size and tag its peer
    sent; the two trees of a double binary tree exchange S/2 with the same peers, so without
    a tag each apart they take each other's messages and the run stalls, as the guide says.
    With tags, on 4 fully connected NPUs: a root ends its reduction at R = 2d + 3E + 3P (its
    first child's sum arrives after a leaf's hop, a reduction and a hop; it then reduces both
    children), a child of the root finishes at R + d, a grandchild at R + 2d; NPUs 0 and 3 are
    each a root in one tree and a grandchild in the other, 1 and 2 children in both."""
    from simpy_astra.errors import StalledError

    (r4 / "dtree.py").write_text(DOUBLE_TREE.replace("TAGS = (None, None)", f"TAGS = {tags!r}"))
    sys.modules.pop("dtree", None)
    path = _write(r4, "dtree.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _system('"dtree:DOUBLE_TREE"'), _net("FullyConnected", 4), "congestion_unaware")
    if tags == (None, None):
        with pytest.raises(StalledError, match="which NPU [0-3] never sent"):
            _finished(path)
        return
    half = MIB // 2
    root = 2 * d(half) + 3 * E + 3 * reduce_ns(half)
    assert _finished(path) == {0: root + 2 * d(half), 1: root + d(half), 2: root + d(half), 3: root + 2 * d(half)}
    assert root + 2 * d(half) == 2_193_547


def test_the_collectives_guide_lists_the_tag_a_phase_may_send_and_receive_on():
    """The double tree above needs `tag=`; the guide's table of `ctx` calls must name it, and
    say how a receive is matched."""
    guide = (Path(__file__).resolve().parents[1] / "collectives" / "README.md").read_text()
    assert "| `ctx.send(dst, nbytes, tag=None)` |" in guide and "| `ctx.recv(src, nbytes, tag=None)` |" in guide
    assert "first posted, first served" in guide


def test_a_topology_class_of_ones_own_is_priced_by_its_cables(r4):
    """docs/reports.md, "Network cost": a topology class of one's own is read off its
    `links()`, a cable per connected pair at its `link_params` bandwidth. The two-level class
    on 8 NPUs (one dimension: tier `package`, $4 per GiB/s of link): 2 nodes x 6 in-node
    cables at B and 4 rails at B/4, B = 1 byte/ns = 10^9 / 2^30 GiB/s."""
    import json

    guide = (Path(__file__).resolve().parents[1] / "docs" / "reports.md").read_text()
    assert "as\nis a topology class of your own" in guide
    _write(r4, "hier.yaml", BENCH_AR8, _system('"r4:HIER"'), _net('"r4:TwoLevel"', 8), "congestion_unaware")
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "hier.yaml", "--quiet", "--json-out", "f.json"],
                          cwd=r4, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    figures = json.loads((r4 / "f.json").read_text())
    expected = 4.0 * (12 * ONE_BYTE_PER_NS + 4 * ONE_BYTE_PER_NS / 4)
    assert figures["cost_usd"] == pytest.approx(expected) and round(expected, 2) == 48.43


#: an all-reduce that gives up when interrupted (docs/cosimulation.md: "phase.interrupt(cause)
#: throws simpy.Interrupt into the algorithm, which may catch it and return")
GIVE_UP = textwrap.dedent('''
    import simpy
    from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size

    CAUGHT = []


    def patient_ring(ctx):
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        msg = ctx.size_bytes // n
        try:
            for step in range(2 * (n - 1)):
                ctx.send(right, msg)
                yield ctx.recv(left, msg)
                yield ctx.endpoint()
        except simpy.Interrupt as stop:
            CAUGHT.append((ctx.npu_id, ctx.env.now, stop.cause))


    PATIENT = CollectiveAlgorithm("patient", patient_ring, ring_final_size, kinds=frozenset({ALL_REDUCE}))
''')


def test_an_all_reduce_given_a_deadline_by_a_process_of_ones_own(r4):
    """A process interrupts every running phase at 600 us (`sim.running_phases`); the ring,
    whose steps of d(S/4) + E end at 262,654 and 525,308 ns on 4 NPUs (congestion_aware,
    unfolded), catches it and returns, so every NPU finishes at the deadline, and
    `node_finished` and `npu_finished` report that instant."""
    from simpy_astra.simulation import Simulation

    (r4 / "giveup.py").write_text(GIVE_UP)
    sys.modules.pop("giveup", None)
    path = _write(r4, "gu.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _system('"giveup:PATIENT"'), _net("Ring", 4), "congestion_aware", "fold_symmetry: false\n")
    sim = Simulation.from_scenario(str(path))
    env, seen = sim.env, {}

    def deadline():
        yield env.timeout(600_000)
        seen["steps done"] = env.now // (d(MIB // 4) + E)
        for npu in range(4):
            for phase in sim.running_phases(npu):
                phase.interrupt("deadline")

    def watch():
        seen["node"] = yield sim.node_finished(2, 2)  # microbench: NPU i's node is i
        seen["npu 3"] = (yield sim.npu_finished(3)).finished_ns

    env.process(deadline())
    env.process(watch())
    finished = {r.npu_id: r.finished_ns for r in sim.run()}
    assert finished == dict.fromkeys(range(4), 600_000)
    assert seen == {"steps done": 2, "node": 600_000, "npu 3": 600_000}
    assert sorted(sys.modules["giveup"].CAUGHT) == [(npu, 600_000, "deadline") for npu in range(4)]
    sys.modules.pop("giveup", None)


def test_ones_own_ring_reduces_at_each_npu_groups_local_memory_speed(r4):
    """docs/jobs.md, "NPUs that differ": an `npu-groups` group's `local-mem-bw` times its
    NPUs' reductions, a collective of one's own's too. The plugin ring on 4 NPUs, NPUs 2 and
    3 reducing at 25 GB/s, the others at 50: NPU i's last receive waits on a chain back
    along the ring whose three reducing steps ran on NPUs i+3, i and i+1, so it ends at
    6 (d + E) plus their three reductions. As a sweep axis (`system.npu-groups.0.local-mem-bw`)
    the point's finish_ns is the slowest NPU's."""
    groups = ", npu-groups: [{npus: [2, 3], local-mem-bw: 25}]"
    path = _write(r4, "grp.yaml", f"{{generate: microbench, collective: all_reduce, size: {MIB}, num_npus: 4}}",
                  _system("r4Ring", groups), _net("Ring", 4), "congestion_unaware", "plugins: [r4]\n")
    shard = MIB // 4
    speed = {0: 50, 1: 50, 2: 25, 3: 25}

    def ends(npu: int) -> int:
        return 6 * (d(shard) + E) + sum(3 * int(shard / (speed[(npu + k) % 4] * 1e9) * 1e9) for k in (3, 0, 1))

    assert {i: ends(i) for i in range(4)} == {0: 1_638_831, 1: 1_638_831, 2: 1_654_560, 3: 1_654_560}
    assert _finished(path) == {i: ends(i) for i in range(4)}
    (r4 / "sweep.yaml").write_text("base: grp.yaml\naxes:\n  system.npu-groups.0.local-mem-bw: [25, 50]\n")
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", "sweep.yaml", "--out", "out"], cwd=r4,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    with open(r4 / "out" / "results.csv") as f:
        rows = {r["system.npu-groups.0.local-mem-bw"]: int(r["finish_ns"]) for r in csv.DictReader(f)}
    assert rows == {"25": ends(2), "50": 6 * (d(shard) + E) + 3 * reduce_ns(shard)}


def test_the_generators_guide_gives_the_comm_group_json_a_generator_writes():
    """r4dp above writes `{"1": [...], "2": [...]}` and names a group by `pg_name: "1"`; a
    researcher who named them `"even"` from the guide got `group 'even' is not a group id`,
    so the guide shows the format."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "generators.md").read_text()
    assert '`{"1": [0, 2, 4, 6], "2": [1, 3, 5, 7]}`' in guide and "decimal\nintegers > 0" in guide


#: an all-to-all that sends every piece at once, with the `traffic` hook the bound check adds
#: up (collectives/README.md, docs/reports.md "The bound check")
SCATTER = textwrap.dedent('''
    from simpy_astra.collectives.base import ALL_TO_ALL, CollectiveAlgorithm, ring_final_size


    def scatter(ctx):
        n, i = len(ctx.members), ctx.index
        piece = ctx.size_bytes // n
        for k in range(1, n):
            ctx.send(ctx.members[(i + k) % n], piece)
        yield ctx.env.all_of([ctx.recv(ctx.members[(i - k) % n], piece) for k in range(1, n)])
        yield ctx.endpoint()


    def scatter_traffic(shape):
        n = len(shape.members)
        return [((shape.index + k) % n, shape.size_bytes // n) for k in range(1, n)]


    SCATTER = CollectiveAlgorithm("scatter", scatter, ring_final_size, kinds=frozenset({ALL_TO_ALL}),
                                  traffic=scatter_traffic)
''')


def test_ones_own_all_to_all_with_its_traffic_is_held_to_the_link_bandwidth_floor(r4):
    """On a switch of 8 the analytical backend ends the 8 MiB all-to-all after one message of
    S/8 over two hops and E, trunc(2L + 2^20 / B) + E = 1,049,586 ns; each NPU's link to the
    switch carries 7 such pieces, a floor of 7 trunc(2^20 / B), so the run warns it finished
    7,340,032 / 1,049,586 = 6.99x below it."""
    (r4 / "scat.py").write_text(SCATTER)
    size = 8 * MIB
    workload = f"{{generate: microbench, collective: all_to_all, size: {size}, num_npus: 8}}"
    system = _system().replace("all-to-all-implementation: [direct]", 'all-to-all-implementation: ["scat:SCATTER"]')
    _write(r4, "scat.yaml", workload, system, _net("Switch", 8), "congestion_unaware")
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "scat.yaml", "--quiet"], cwd=r4,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    finish, floor = d(size // 8, latency=2 * L) + E, 7 * int(size // 8 / (ONE_BYTE_PER_NS * 2**30 / 1e9))
    assert done.stdout.startswith(f"iteration time {finish:,} ns") and finish == 1_049_586
    warning = f"warning: 8 MiB all-to-all on Switch(8): {floor / finish:.2f}x below its link-bandwidth floor"
    assert warning in done.stderr.splitlines() and f"{floor / finish:.2f}" == "6.99"


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_a_graph_from_python_whose_pinned_route_takes_the_slow_side(r4, backend):
    """docs/cosimulation.md: `Simulation.from_scenario(path, topology=G, routes=...)`. A
    4-NPU ring graph whose 2-3-0 side runs at B/2: 1 MiB from NPU 0 to 2 takes 0-1-2 by
    itself (latencies tie, then the smaller device sequence), the slow side when pinned.
    Over h = 2 hops of L at bandwidth b: trunc(2L + S/b) analytical, 2 trunc(L + S/b)
    store-and-forward, 2L + S/b + P/b in 4 KiB packets (simpy_astra/network/README.md)."""
    import networkx as nx

    graph = nx.DiGraph()
    for a, b, bandwidth in [(0, 1, ONE_BYTE_PER_NS), (1, 2, ONE_BYTE_PER_NS), (2, 3, ONE_BYTE_PER_NS / 2),
                            (3, 0, ONE_BYTE_PER_NS / 2)]:
        for u, v in ((a, b), (b, a)):
            graph.add_edge(u, v, bandwidth_gbps=bandwidth, latency_ns=float(L))
    workload = f"{{generate: microbench, collective: send_recv, size: {MIB}, num_npus: 4, src: 0, dst: 2}}"
    path = _write(r4, "p2p.yaml", workload, _system(), _net("Ring", 4), backend)

    def expected(per_byte: int) -> int:
        return {"congestion_unaware": 2 * L + MIB * per_byte, "congestion_aware": 2 * (L + MIB * per_byte),
                "packet": 2 * L + (MIB + 4096) * per_byte}[backend]

    for routes, per_byte in ((None, 1), ([[0, 3, 2]], 2)):
        assert _finished(path, topology=graph, routes=routes) == {0: expected(per_byte), 1: 0, 2: expected(per_byte),
                                                                 3: 0}


#: a ring all-gather of one's own: n-1 messages of this NPU's piece (collectives/README.md:
#: for an all-gather `ctx.size_bytes` is the piece, and the phase ends with n times it)
RING_ALL_GATHER = textwrap.dedent('''
    from simpy_astra.collectives.base import ALL_GATHER, CollectiveAlgorithm, ring_final_size


    def ring_ag(ctx):
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        for step in range(n - 1):
            ctx.send(right, ctx.size_bytes)
            yield ctx.recv(left, ctx.size_bytes)
            yield ctx.endpoint()


    RING_AG = CollectiveAlgorithm("ring_ag", ring_ag, ring_final_size, kinds=frozenset({ALL_GATHER}))
''')


def test_a_torus_all_gather_of_ones_own_grows_its_piece_across_dimensions(r4):
    """On a 4 x 2 torus the all-gather of S = 64 KiB per NPU runs its dimensions last to first
    (collectives/README.md): on the 2-ring (1 message of S), then, `ring_final_size` handing on
    2 S, on the 4-ring (3 messages of 2 S): d(S) + E + 3 (d(2 S) + E), at 1 byte/ns the same
    figure as the other order's 3 (d(S) + E) + d(4 S) + E."""
    (r4 / "ag.py").write_text(RING_ALL_GATHER)
    size = 65_536
    system = (_system().replace("all-gather-implementation: [ring]", 'all-gather-implementation: ["ag:RING_AG", '
                                '"ag:RING_AG"]'))
    path = _write(r4, "ag.yaml", f"{{generate: microbench, collective: all_gather, size: {size}, num_npus: 8}}",
                  system, f"{{topology: [Ring, Ring], npus_count: [4, 2], bandwidth: [{ONE_BYTE_PER_NS!r}, "
                          f"{ONE_BYTE_PER_NS!r}], latency: [{L}, {L}]}}", "congestion_unaware")
    expected = d(size) + E + 3 * (d(2 * size) + E)
    assert expected == 3 * (d(size) + E) + d(4 * size) + E == 460_792
    assert _finished(path) == dict.fromkeys(range(8), expected)
