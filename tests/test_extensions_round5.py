"""Extensions written from the docs alone, fifth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_round2.py`` .. ``round4.py``,
``test_extension_*.py``) and is checked against a figure derived here from the closed forms
the docs state.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns unless a test
says otherwise, so one hop of S bytes takes ``d(S) = trunc(L + S / B)`` and its serialisation
``trunc(S / B)`` = S; ``E`` is the endpoint delay and ``P(x)`` the reduction of x bytes,
three passes of ``int(x / (local-mem-bw 10^9) x 10^9)`` (collectives/README.md).
"""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# the same machine and closed forms as round 4's (a hop, a reduction, the native ring)
from tests.test_extensions_round4 import MEM_BW, ONE_BYTE_PER_NS, E, L, d, reduce_ns, ring_all_reduce

MIB = 2**20
ROOT = Path(__file__).resolve().parents[1]

#: the researcher's module, written from docs/collectives.md, collectives/README.md,
#: docs/backends.md, simpy_astra/network/README.md, docs/generators.md and docs/cosimulation.md
R5 = textwrap.dedent('''
import json
import random

import networkx as nx

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.network.switch import SwitchElement
from simpy_astra.topologies import BasicTopology
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_AR
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE


def star_all_reduce(ctx):
    """Every member sends its whole buffer to the first one, which reduces them as they come
    and sends the sum back to each."""
    root, size = ctx.members[0], ctx.size_bytes
    if ctx.npu_id != root:
        ctx.post(root, size)
        yield ctx.recv(root, size)
        return
    for peer in ctx.members[1:]:
        yield ctx.recv(peer, size)
        yield ctx.endpoint(reduce_bytes=size)
    yield ctx.env.all_of([ctx.send(peer, size) for peer in ctx.members[1:]])


STAR = CollectiveAlgorithm("star", star_all_reduce, ring_final_size, kinds=frozenset({ALL_REDUCE}))

PIECES = 4


def chain_all_reduce(ctx):
    """The members as a chain: PIECES pieces are reduced from the tail to the head (each
    member adds its own and passes it on), and the head sends each summed piece back down as
    soon as it has it; the two flows run side by side, each piece with its own tag."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    piece = ctx.size_bytes // PIECES

    def towards_head():
        for j in range(PIECES):
            if i < n - 1:
                yield ctx.recv(m[i + 1], piece, tag=j)
                yield ctx.endpoint(reduce_bytes=piece)
            if i > 0:
                ctx.post(m[i - 1], piece, tag=j)
            else:
                ctx.post(m[1], piece, tag=PIECES + j)

    def from_head():
        if i == 0:
            return
        receives = [ctx.recv(m[i - 1], piece, tag=PIECES + j) for j in range(PIECES)]
        for j in range(PIECES):
            yield receives[j]
            if i < n - 1:
                ctx.post(m[i + 1], piece, tag=PIECES + j)

    up = ctx.spawn(towards_head())
    down = ctx.spawn(from_head())
    yield up
    yield down


CHAIN = CollectiveAlgorithm("chain", chain_all_reduce, ring_final_size, kinds=frozenset({ALL_REDUCE}))


def rabenseifner(ctx):
    """Recursive halving (reduce-scatter: keep half, send the other half to index XOR dist),
    then recursive doubling (all-gather: swap what each holds); n a power of two."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    size, dist = ctx.size_bytes, n // 2
    while dist >= 1:
        size //= 2
        ctx.post(m[i ^ dist], size)
        yield ctx.recv(m[i ^ dist], size)
        yield ctx.endpoint(reduce_bytes=size)
        dist //= 2
    dist = 1
    while dist < n:
        ctx.post(m[i ^ dist], size)
        yield ctx.recv(m[i ^ dist], size)
        yield ctx.endpoint()
        size, dist = 2 * size, 2 * dist


RABENSEIFNER = CollectiveAlgorithm("rabenseifner", rabenseifner, ring_final_size, kinds=frozenset({ALL_REDUCE}),
                                   xor_symmetric=True)


def bruck_all_gather(ctx):
    """Bruck: round k sends the min(have, n - have) pieces held to the member 2^k behind, and
    receives as many from the one 2^k ahead; ceil(log2 n) rounds on any n."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    have, step = 1, 1
    while have < n:
        count = min(have, n - have)
        ctx.post(m[(i - step) % n], count * ctx.size_bytes)
        yield ctx.recv(m[(i + step) % n], count * ctx.size_bytes)
        yield ctx.endpoint()
        have, step = have + count, 2 * step


BRUCK_AG = CollectiveAlgorithm("bruck_ag", bruck_all_gather, ring_final_size, kinds=frozenset({ALL_GATHER}))


def scatter_all_to_all(ctx):
    """Every piece at once to its member, then one endpoint once all have come in."""
    n, i = len(ctx.members), ctx.index
    piece = ctx.size_bytes // n
    for k in range(1, n):
        ctx.post(ctx.members[(i + k) % n], piece)
    yield ctx.env.all_of([ctx.recv(ctx.members[(i - k) % n], piece) for k in range(1, n)])
    yield ctx.endpoint()


SCATTER = CollectiveAlgorithm("scatter", scatter_all_to_all, ring_final_size, kinds=frozenset({ALL_TO_ALL}))

GROUP = 2            # NPUs per dragonfly group
GLOBAL_SLOWDOWN = 2  # a global link: half the bandwidth, 4x the latency
GLOBAL_LATENCY = 4


class Dragonfly(BasicTopology):
    """Groups of GROUP NPUs, fully connected inside; GROUP + 1 groups, and NPU k of group g
    holds its group's one global link to group (g + k + 1) mod groups (a canonical dragonfly,
    one global link per router). Minimal routing: to the gateway, across, to the NPU."""

    def _groups(self):
        return self.npus_count // GROUP

    def _gateway(self, g, h):
        """The NPU of group g whose global link reaches group h."""
        return g * GROUP + (h - g - 1) % self._groups()

    def links(self):
        n = self.npus_count
        return [(a, b) for a in range(n) for b in range(n) if a != b and (
            a // GROUP == b // GROUP
            or (self._gateway(a // GROUP, b // GROUP) == a and self._gateway(b // GROUP, a // GROUP) == b))]

    def route(self, src, dst):
        path = [src]
        if src // GROUP != dst // GROUP:
            for hop in (self._gateway(src // GROUP, dst // GROUP), self._gateway(dst // GROUP, src // GROUP)):
                if hop != path[-1]:
                    path.append(hop)
        if dst != path[-1]:
            path.append(dst)
        return path

    def hops(self, src, dst):
        return len(self.route(src, dst)) - 1

    def link_params(self, src, dst):
        if src // GROUP == dst // GROUP:
            return self.bandwidth_gbps, self.latency_ns
        return self.bandwidth_gbps / GLOBAL_SLOWDOWN, self.latency_ns * GLOBAL_LATENCY


def leaf_spine(leaves=2, per_leaf=2, spines=1, down_gbps=1.0, up_gbps=1.0, latency_ns=500.0):
    """NPUs under leaf switches, every leaf wired to every spine (two directed edges a cable)."""
    g = nx.DiGraph()
    for leaf in range(leaves):
        g.add_node(f"leaf{leaf}", kind="switch")
        for k in range(per_leaf):
            npu = leaf * per_leaf + k
            g.add_edge(npu, f"leaf{leaf}", bandwidth_gbps=down_gbps, latency_ns=latency_ns)
            g.add_edge(f"leaf{leaf}", npu, bandwidth_gbps=down_gbps, latency_ns=latency_ns)
        for s in range(spines):
            g.add_node(f"spine{s}", kind="switch")
            g.add_edge(f"leaf{leaf}", f"spine{s}", bandwidth_gbps=up_gbps, latency_ns=latency_ns)
            g.add_edge(f"spine{s}", f"leaf{leaf}", bandwidth_gbps=up_gbps, latency_ns=latency_ns)
    return g


class SmallMessageLink(LinkElement):
    """A message under small_bytes moves at small_share of the bandwidth (an eager protocol's
    copies): the time it lacks is held before it starts."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, small_bytes: int = 0,
                 small_share: float = 1.0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        if not 0 < small_share <= 1:
            raise ValueError(f"small_share must be in (0, 1] (got {small_share})")
        self.small_bytes, self.small_share = small_bytes, small_share

    def hold_ns(self, item):
        if item.size >= self.small_bytes:
            return 0
        return item.size / self.bytes_per_ns * (1 / self.small_share - 1)


class LossyLink(LinkElement):
    """Each attempt to send an item is lost with probability loss, drawn from a generator
    seeded by seed and the link's two ends (the same run gives the same losses); a lost
    attempt costs its serialisation and timeout_ns before the next one."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, loss: float = 0.0, seed: int = 0,
                 timeout_ns: int = 0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.loss, self.timeout_ns = loss, timeout_ns
        self.rng = random.Random(f"{seed}:{src}:{dst}")
        self.retries = []

    def hold_ns(self, item):
        lost = 0
        while self.rng.random() < self.loss:
            lost += 1
        self.retries.append(lost)
        return lost * (item.size / self.bytes_per_ns + self.timeout_ns)


TRUNK_BYTES_PER_NS = 1.0


class Trunk(CongestionUnawareNetwork):
    """Analytical, but every message between the two halves of the NPUs first crosses one
    shared trunk, first come first served, at TRUNK_BYTES_PER_NS: it waits for those ahead."""

    pair_delays_only = False

    def __init__(self, env, dims):
        super().__init__(env, dims)
        self.half = dims[0].npus_count // 2
        self.trunk_free_ns = 0

    def send(self, src, dst, tag, size, fn, arg):
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        delay = self.message_delay_ns(src, dst, size)
        if (src < self.half) != (dst < self.half):
            start = max(self.env.now, self.trunk_free_ns)
            self.trunk_free_ns = start + int(size / TRUNK_BYTES_PER_NS)
            delay += self.trunk_free_ns - self.env.now
        self.board.arrive_after(int(delay), entry)


TRUNK = BackendSpec("trunk", "analytical plus one shared trunk between the two halves",
                    lambda env, dims, source, config=None: Trunk(env, dims), folds=None, folded=None)


class RateLimitedSwitch(SwitchElement):
    """Forwards at most one item every gap_ns, oldest first (a lookup engine's rate)."""

    def __init__(self, env, device, forward, gap_ns: int = 0):
        self.gap_ns, self.last_ns = gap_ns, None
        super().__init__(env, device, forward)

    def release_ns(self, item, arrived_ns):
        due = arrived_ns if self.last_ns is None else max(arrived_ns, self.last_ns + self.gap_ns)
        self.last_ns = due
        return due


def signalled_ring(ctx):
    """A ring all-reduce as two sub-processes: the reduce-scatter fires a signal with the time
    it ended, which the all-gather waits for before its n-1 forwarding steps."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    msg = ctx.size_bytes // n
    scattered = ctx.signal()

    def reduce_scatter():
        for _ in range(n - 1):
            ctx.post(right, msg)
            yield ctx.recv(left, msg)
            yield ctx.endpoint(reduce_bytes=msg)
        scattered.fire(ctx.env.now)

    def all_gather():
        SIGNALS.setdefault(ctx.npu_id, []).append((yield scattered))
        for _ in range(n - 1):
            ctx.post(right, msg)
            yield ctx.recv(left, msg)
            yield ctx.endpoint()

    first = ctx.spawn(reduce_scatter())
    second = ctx.spawn(all_gather())
    yield first
    yield second


SIGNALS = {}
SIGNALLED = CollectiveAlgorithm("signalled", signalled_ring, ring_final_size, kinds=frozenset({ALL_REDUCE}))


def _comp(node_id, name, micros, deps=()):
    return make_node(node_id, name, COMP_NODE, deps=list(deps), duration_micros=micros, attrs={"is_cpu_op": False})


def _all_reduce(node_id, name, size, deps=(), group=None):
    attrs = {"is_cpu_op": False, "comm_type": COLL_AR, "comm_size": size}
    if group is not None:
        attrs["pg_name"] = str(group)
    return make_node(node_id, name, COMM_COLL_NODE, deps=list(deps), attrs=attrs)


def ring_pass(params, prefix):
    """Every NPU computes compute_us, then sends size bytes to the next NPU and receives as
    many from the one before (num_npus: given, or the cluster's GPU count)."""
    n, size = params["num_npus"], params["size"]
    for r in range(n):
        write_et(f"{prefix}.{r}.et", [
            _comp(0, "compute", params["compute_us"]),
            make_node(1, "send", COMM_SEND_NODE, deps=[0], attrs={
                "is_cpu_op": False, "comm_dst": (r + 1) % n, "comm_size": size, "comm_tag": 1}),
            make_node(2, "recv", COMM_RECV_NODE, attrs={
                "is_cpu_op": False, "comm_src": (r - 1) % n, "comm_size": size, "comm_tag": 1})])


def burst(params, prefix):
    """NPU 0 sends count messages of size bytes to NPU 1, each after the one before arrived."""
    count, size = params["count"], params["size"]
    write_et(f"{prefix}.0.et", [make_node(j, f"send{j}", COMM_SEND_NODE, deps=[j - 1] if j else [], attrs={
        "is_cpu_op": False, "comm_dst": 1, "comm_size": size, "comm_tag": 5}) for j in range(count)])
    write_et(f"{prefix}.1.et", [make_node(j, f"recv{j}", COMM_RECV_NODE, attrs={
        "is_cpu_op": False, "comm_src": 0, "comm_size": size, "comm_tag": 5}) for j in range(count)])


def tp_dp(params, prefix):
    """A Megatron-like step on tp x dp NPUs (tp fastest): each of the layers computes
    compute_us / tp and all-reduces act bytes in its tensor-parallel group; then the gradients,
    grad / tp bytes, are all-reduced in the data-parallel group. A group of one has no
    collective. Groups: 1..dp the tensor-parallel ones, dp+1..dp+tp the data-parallel ones,
    named so in every rank's metadata."""
    tp, dp = params["tp"], params["dp"]
    groups = {str(1 + d): [d * tp + t for t in range(tp)] for d in range(dp)}
    groups.update({str(1 + dp + t): [d * tp + t for d in range(dp)] for t in range(tp)})
    for rank in range(tp * dp):
        d, t = divmod(rank, tp)
        nodes, last = [], []
        for layer in range(params["layers"]):
            nodes.append(_comp(len(nodes), f"layer{layer}", params["compute_us"] // tp, last))
            last = [len(nodes) - 1]
            if tp > 1:
                nodes.append(_all_reduce(len(nodes), f"tp_ar{layer}", params["act"], last, 1 + d))
                last = [len(nodes) - 1]
        if dp > 1:
            nodes.append(_all_reduce(len(nodes), "dp_ar", params["grad"] // tp, last, 1 + dp + t))
        # the groups' dimensions, for the breakdown: runs of group ids [dimension, first, last]
        write_et(f"{prefix}.{rank}.et", nodes, metadata_attrs={"pg_names": json.dumps(
            [["tp", 1, dp], ["dp", dp + 1, dp + tp]])})
    with open(prefix + ".json", "w") as f:
        json.dump(groups, f)
    return prefix + ".json"


def overlapped(params, prefix):
    """Each NPU computes compute_us while it all-reduces size bytes (neither waits for the
    other), then steps its optimizer for opt_us once both are done."""
    for r in range(params["num_npus"]):
        write_et(f"{prefix}.{r}.et", [_comp(0, "backward", params["compute_us"]),
                                      _all_reduce(1, "grads", params["size"]),
                                      _comp(2, "optimizer", params["opt_us"], [0, 1])])


def two_steps(params, prefix):
    """Two training steps: compute compute_us, all-reduce size bytes, and again."""
    for r in range(params["num_npus"]):
        write_et(f"{prefix}.{r}.et", [_comp(0, "step0", params["compute_us"]),
                                      _all_reduce(1, "ar0", params["size"], [0]),
                                      _comp(2, "step1", params["compute_us"], [1]),
                                      _all_reduce(3, "ar1", params["size"], [2])])
''')


@pytest.fixture
def r5(tmp_path: Path, monkeypatch) -> Path:
    from simpy_astra.network.backends import BACKENDS
    from simpy_astra.workloads import generated

    backends_before, generators_before = set(BACKENDS), set(generated.GENERATORS)
    sys.modules.pop("r5", None)
    (tmp_path / "r5.py").write_text(R5)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / ".cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    yield tmp_path
    for name in set(BACKENDS) - backends_before:  # 'backend: r5:TRUNK' registers 'trunk'
        BACKENDS.pop(name)
    for name in set(generated.GENERATORS) - generators_before:  # 'generate: r5:...' registers it
        generated.GENERATORS.pop(name)
    sys.modules.pop("r5", None)


def _system(extra: str = "", **algorithms: str) -> str:
    chosen = {"all-reduce": "ring", "all-gather": "ring", "reduce-scatter": "ring", "all-to-all": "direct",
              **{k.replace("_", "-"): v for k, v in algorithms.items()}}
    lists = ", ".join(f"{kind}-implementation: [{algo}]" for kind, algo in chosen.items())
    return ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
            f"active-chunks-per-dimension: 1, preferred-dataset-splits: 1, local-mem-bw: {MEM_BW}, {lists}{extra}}}")


def _net(topology: str, n: int, bandwidth: float = ONE_BYTE_PER_NS, extra: str = "") -> str:
    return f"{{topology: [{topology}], npus_count: [{n}], bandwidth: [{bandwidth!r}], latency: [{L}]{extra}}}"


def _write(folder: Path, name: str, workload: str, system: str, network: str, backend: str,
           extra: str = "") -> Path:
    path = folder / name
    path.write_text(f"workload: {workload}\nsystem: {system}\nnetwork: {network}\nbackend: {backend}\n{extra}")
    return path


def _bench(collective: str, size: int, n: int, **more: int) -> str:
    extra = "".join(f", {k}: {v}" for k, v in more.items())
    return f"{{generate: microbench, collective: {collective}, size: {size}, num_npus: {n}{extra}}}"


def _finished(path: Path, **kwargs) -> dict[int, int]:
    from simpy_astra.simulation import Simulation

    return {r.npu_id: r.finished_ns for r in Simulation.from_scenario(str(path), **kwargs).run()}


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "simpy_astra", *args], cwd=folder, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    return done


def _rows(path: Path, key: str) -> dict[str, dict[str, str]]:
    with open(path) as f:
        return {r[key]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("topology", ["FullyConnected", "Switch"])
def test_a_star_all_reduce_reduces_at_the_root_and_sends_the_sum_back(r5, topology):
    """The first member receives everyone's S, reduces each (E + P(S)) and sends S back.
    Fully connected, every message on a link of its own: 2 d(S) + (n-1)(E + P(S)) for all.
    Through a switch (congestion_aware, store and forward) the root's down-link serialises the
    n-1 incoming messages, k-th in at 2d + (k-1) S, and its up-link the n-1 outgoing ones, the
    last out at 4d + 2(n-2) S + E + P(S) (the root reduces faster than a message arrives)."""
    n, size = 4, 65_536
    path = _write(r5, "star.yaml", _bench("all_reduce", size, n), _system(all_reduce='"r5:STAR"'),
                  _net(topology, n), "congestion_aware")
    finished = _finished(path)
    if topology == "FullyConnected":
        assert finished == dict.fromkeys(range(n), 2 * d(size) + (n - 1) * (E + reduce_ns(size)))
        assert 2 * d(size) + 3 * (E + reduce_ns(size)) == 143_892
        return
    last = 4 * d(size) + 2 * (n - 2) * size + E + reduce_ns(size)
    root_sent = 2 * d(size) + (n - 2) * size + E + reduce_ns(size)  # its sends leave one S apart
    assert finished[0] == last == 530_228
    assert sorted(finished[k] for k in range(1, n)) == [root_sent + k * size + 2 * d(size) for k in range(n - 1)]


@pytest.mark.parametrize("pieces", [1, 4])
def test_a_chain_all_reduce_pipelined_in_pieces_with_posts_and_tags(r5, pieces):
    """The chain 0-1-2-3 on a ring (congestion_aware): the tail posts its PIECES pieces of
    p = S/K at once (its link serialises them, one S/K apart), each member reduces a piece (c =
    E + P(p), shorter than p's serialisation, so no queue forms) and posts it on; the head
    sends each summed piece back down. The head finishes reducing the last piece at R =
    (K-1) p + (n-1)(d(p) + c), member i >= 1 receives it back i hops later: R + i d(p)."""
    (r5 / "r5.py").write_text(R5.replace("PIECES = 4", f"PIECES = {pieces}"))
    n = 4
    path = _write(r5, "chain.yaml", _bench("all_reduce", MIB, n), _system(all_reduce='"r5:CHAIN"'),
                  _net("Ring", n), "congestion_aware")
    p = MIB // pieces
    head = (pieces - 1) * p + (n - 1) * (d(p) + E + reduce_ns(p))
    assert _finished(path) == {i: head + i * d(p) for i in range(n)}
    assert head + 3 * d(p) == {1: 6_483_225, 4: 2_409_504}[pieces]


def rabenseifner(n: int, size: int) -> int:
    """log2 n halving steps of S/2^k (hop, E, reduction), then the doubling steps back (hop, E)."""
    steps = [size >> k for k in range(1, n.bit_length())]
    return sum(2 * (d(s) + E) + reduce_ns(s) for s in steps)


def test_rabenseifners_all_reduce_from_the_command_line_and_unfolded(r5):
    """Halving then doubling on 8 fully connected NPUs: sum over S/2, S/4, S/8 of 2 (d + E) +
    P, from `run` (which may fold on the `xor_symmetric=True` claim) and from a script with
    `fold_symmetry: false` alike."""
    path = _write(r5, "rab.yaml", _bench("all_reduce", MIB, 8), _system(all_reduce='"r5:RABENSEIFNER"'),
                  _net("FullyConnected", 8), "congestion_unaware")
    expected = rabenseifner(8, MIB)
    assert expected == 2 * (524_788 + 10) + 31_455 + 2 * (262_644 + 10) + 15_726 + 2 * (131_572 + 10) + 7_863
    assert _cli(r5, "run", "rab.yaml", "--quiet").stdout.startswith(f"iteration time {expected:,} ns")
    assert _finished(path) == dict.fromkeys(range(8), expected)
    unfolded = _write(r5, "rab_off.yaml", _bench("all_reduce", MIB, 8), _system(all_reduce='"r5:RABENSEIFNER"'),
                      _net("FullyConnected", 8), "congestion_unaware", "fold_symmetry: false\n")
    assert _finished(unfolded) == dict.fromkeys(range(8), expected)


def test_a_bruck_all_gather_on_six_npus(r5):
    """collectives/README.md: an all-gather's ctx.size_bytes is this NPU's piece s. Bruck on 6
    NPUs sends 1, 2 and 2 pieces in its three rounds: d(s) + d(2s) + d(2s) + 3E."""
    size = 65_536
    path = _write(r5, "bruck.yaml", _bench("all_gather", size, 6), _system(all_gather='"r5:BRUCK_AG"'),
                  _net("FullyConnected", 6), "congestion_unaware")
    expected = d(size) + 2 * d(2 * size) + 3 * E
    assert expected == 329_210
    assert _finished(path) == dict.fromkeys(range(6), expected)


#: dragonfly of 3 groups of 2: (src, dst) -> the links crossed, each "l" (local) or "g" (global)
DRAGONFLY_PATHS = {(0, 1): "l", (0, 3): "g", (0, 2): "gl", (1, 5): "gl", (0, 5): "lgl", (4, 3): "lgl", (5, 2): "g"}


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
@pytest.mark.parametrize("pair", sorted(DRAGONFLY_PATHS))
def test_a_dragonfly_class_with_slow_global_links(r5, backend, pair):
    """A topology class whose global links (`link_params`) have half the bandwidth and 4x the
    latency. One message of S: the analytical backend charges trunc(summed latency + S /
    slowest bandwidth), the aware one trunc(latency + S / bandwidth) per link (docs, "How a
    Graph routes"; collectives.md: path_profile's default), the packet one sum(latency + P /
    B_i) + (S - P) / min B_i with P = 4,096 (docs/backends.md)."""
    src, dst = pair
    size = 65_536
    path = _write(r5, "df.yaml", _bench("send_recv", size, 6, src=src, dst=dst), _system(), _net('"r5:Dragonfly"', 6),
                  backend)
    kinds = DRAGONFLY_PATHS[pair]
    params = {"l": (ONE_BYTE_PER_NS, L), "g": (ONE_BYTE_PER_NS / 2, 4 * L)}
    if backend == "congestion_unaware":
        latency = sum(params[k][1] for k in kinds)
        expected = int(latency + size / (min(params[k][0] for k in kinds) * 2**30 / 1e9))
    elif backend == "congestion_aware":
        expected = sum(d(size, *params[k]) for k in kinds)
    else:
        per_ns = {k: bandwidth * 2**30 / 1e9 for k, (bandwidth, _) in params.items()}
        expected = int(sum(params[k][1] + 4096 / per_ns[k] for k in kinds) + (size - 4096) / min(
            per_ns[k] for k in kinds))
    finished = _finished(path)
    assert finished[src] == finished[dst] == expected
    assert {npu for npu, t in finished.items() if t} == {src, dst}


def _leaf_spine_net(**params: object) -> str:
    extra = "".join(f", {k}: {v!r}" for k, v in params.items())
    return f'{{topology: {{networkx: "r5:leaf_spine"{extra}}}}}'


def test_a_networkx_builder_takes_its_parameters_from_the_topology_mapping(r5):
    """docs/collectives.md: the keys of `topology:` beside `networkx` are the function's keyword
    arguments. Three leaves of two NPUs, uplinks at B/4: NPU 0 -> 5 crosses NPU-leaf, leaf-spine,
    spine-leaf, leaf-NPU, trunc(4L + S / (B/4)) on the analytical backend, and a link each,
    trunc(L + S/b), store and forward on the aware one. Before, any key but networkx, routing
    and routes was refused, so the builder's parameters could never be set."""
    size = 65_536
    net = _leaf_spine_net(leaves=3, down_gbps=ONE_BYTE_PER_NS, up_gbps=ONE_BYTE_PER_NS / 4)
    workload = _bench("send_recv", size, 6, src=0, dst=5)
    unaware = _write(r5, "ls.yaml", workload, _system(), net, "congestion_unaware")
    aware = _write(r5, "ls_aware.yaml", workload, _system(), net, "congestion_aware")
    slow = d(size, ONE_BYTE_PER_NS / 4, 4 * L)
    assert _finished(unaware)[5] == slow == 4 * L + 4 * size
    assert _finished(aware)[5] == 2 * d(size) + 2 * d(size, ONE_BYTE_PER_NS / 4) == 2 * 66_036 + 2 * 262_644


def test_a_misspelt_builder_parameter_is_named_with_the_nearest(r5):
    from simpy_astra.errors import InputError

    path = _write(r5, "ls.yaml", _bench("send_recv", 4096, 4, src=0, dst=3), _system(),
                  _leaf_spine_net(up_gpbs=1.0), "congestion_unaware")
    with pytest.raises(InputError, match=r"field 'topology' r5:leaf_spine takes no parameter 'up_gpbs' \(did you "
                                         r"mean 'up_gbps'\?"):
        _finished(path)


def test_a_sweep_over_a_networkx_builders_parameter(r5):
    """docs/sweeps.md: an axis is a dotted path into the scenario, so `network.topology.up_gbps`
    varies the builder's uplink bandwidth, and `network.topology.spines` its spine count (more
    spines tie on latency and hop count, so the route is the same: the figure is too). NPU 0 ->
    3 on two leaves: trunc(4L + S / min(B, up))."""
    size = 65_536
    _write(r5, "base.yaml", _bench("send_recv", size, 4, src=0, dst=3), _system(), _leaf_spine_net(),
           "congestion_unaware")
    (r5 / "sweep.yaml").write_text(f"base: base.yaml\naxes:\n  network.topology.up_gbps: [{ONE_BYTE_PER_NS!r}, "
                                   f"{ONE_BYTE_PER_NS / 2!r}]\n  network.topology.spines: [1, 2]\n")
    _cli(r5, "sweep", "sweep.yaml", "--out", "out")
    with open(r5 / "out" / "results.csv") as f:
        rows = {(float(r["network.topology.up_gbps"]), r["network.topology.spines"]): r for r in csv.DictReader(f)}
    assert {r["status"] for r in rows.values()} == {"ok"} and len(rows) == 4
    for (up, _), row in rows.items():
        assert int(row["finish_ns"]) == d(size, min(up, ONE_BYTE_PER_NS), 4 * L)
    best = json.loads((r5 / "out" / "best.json").read_text())
    assert int(best["best"]["figures"]["finish_ns"]) == 4 * L + size


def test_a_link_whose_small_messages_move_slower_and_a_sweep_over_its_threshold(r5):
    """A link model (simpy_astra/network/README.md) holding a message under small_bytes for
    S/B (1/share - 1) more. The ring all-reduce of 256 KiB on 4 NPUs (congestion_aware) sends
    6 steps of 64 KiB: at half speed each waits 65,536 ns more. Swept over
    `network.link-model.small_bytes`: 0 (nothing is small) gives the native ring."""
    size = 4 * 65_536
    model = ', link-model: {class: "r5:SmallMessageLink", small_bytes: 65537, small_share: 0.5}'
    path = _write(r5, "small.yaml", _bench("all_reduce", size, 4), _system(), _net("Ring", 4, extra=model),
                  "congestion_aware")
    slow = ring_all_reduce(4, size, hop=lambda s: d(s) + s)
    assert slow == ring_all_reduce(4, size) + 6 * 65_536
    assert _finished(path) == dict.fromkeys(range(4), slow)
    (r5 / "sweep.yaml").write_text("base: small.yaml\naxes:\n  network.link-model.small_bytes: [0, 65537]\n")
    _cli(r5, "sweep", "sweep.yaml", "--out", "out")
    rows = _rows(r5 / "out" / "results.csv", "network.link-model.small_bytes")
    assert {k: int(r["finish_ns"]) for k, r in rows.items()} == {"0": ring_all_reduce(4, size), "65537": slow}


def test_a_lossy_link_with_seeded_retransmissions_repeats_its_figures(r5):
    """A link model that loses each attempt with probability `loss`, drawn from
    `random.Random(f"{seed}:{src}:{dst}")`: message j of 8 (each sent once the one before
    arrived, 64 KiB over the one link 0 -> 1 of a 2-NPU ring) waits r_j (S/B + timeout) for
    its r_j lost attempts, then d(S). The draws are derived here from the same seeded
    generator; the run repeats exactly and loses nothing at loss 0."""
    size, count, timeout = 65_536, 8, 2_000
    workload = f'{{generate: "r5:burst", count: {count}, size: {size}}}'

    def scenario(loss: float) -> Path:
        model = f', link-model: {{class: "r5:LossyLink", loss: {loss}, seed: 7, timeout_ns: {timeout}}}'
        return _write(r5, f"lossy{loss}.yaml", workload, _system(), _net("Ring", 2, extra=model), "congestion_aware")

    draws = random.Random("7:0:1")
    retries = []
    for _ in range(count):
        lost = 0
        while draws.random() < 0.3:
            lost += 1
        retries.append(lost)
    expected = count * d(size) + sum(retries) * (size + timeout)
    assert sum(retries) > 0
    assert _finished(scenario(0.3)) == {0: expected, 1: expected} == _finished(scenario(0.3))
    assert _finished(scenario(0.0)) == {0: count * d(size), 1: count * d(size)}


def test_a_backend_with_a_shared_trunk_between_two_halves(r5):
    """docs/backends.md: a delay that depends on the messages in flight overrides `send`. The
    trunk serves the messages between NPUs {0, 1} and {2, 3} one at a time at 1 byte/ns before
    their hop. The scatter all-to-all of S = 4 x 64 KiB on 4 fully connected NPUs sends 8 of
    its 12 pieces across, all at once: the k-th across arrives at k s + d(s), the last at
    8 s + d(s); each NPU ends E after its last piece. Without the trunk: d(s) + E."""
    size, piece = 4 * 65_536, 65_536
    workload = _bench("all_to_all", size, 4)
    path = _write(r5, "trunk.yaml", workload, _system(all_to_all='"r5:SCATTER"'), _net("FullyConnected", 4),
                  "r5:TRUNK")
    finished = _finished(path)
    assert max(finished.values()) == 8 * piece + d(piece) + E == 590_334
    assert all((t - d(piece) - E) % piece == 0 and t >= 2 * piece + d(piece) + E for t in finished.values())
    plain = _write(r5, "plain.yaml", workload, _system(all_to_all='"r5:SCATTER"'), _net("FullyConnected", 4),
                   "congestion_unaware")
    assert _finished(plain) == dict.fromkeys(range(4), d(piece) + E)
    # the page's own block, as a reader copies it (it says this test runs it): the same figures
    from simpy_astra.network.backends import BACKENDS
    from tests.test_docs_code import blocks

    BACKENDS.pop("trunk")  # 'r5:TRUNK' took the name the page's block registers (the fixture restores)

    shown = [code for _, language, code, _ in blocks(ROOT / "docs" / "backends.md") if "class Trunk" in code]
    (r5 / "trunk_doc.py").write_text(shown[0])
    doc = _write(r5, "trunk_doc.yaml", workload, _system(all_to_all='"r5:SCATTER"'), _net("FullyConnected", 4),
                 "trunk_doc:TRUNK")
    assert _finished(doc) == finished


NVLINK = "nvlink_gib_s: 0.931322574615478, nvlink_latency_ns: 250"  # 1 byte/ns, 250 ns a hop


def test_ones_own_generator_beside_a_cluster_learns_its_gpu_count(r5):
    """docs/generators.md: beside a `cluster:` a generator's `params` holds `num_npus`, the
    cluster's GPU count, unless the mapping gives one. Before, a generator reading it raised
    KeyError: the docs said `params` is the mapping, and the cluster gave it nothing. Eight GPUs
    of one node each compute 10 us, then send S to the next one: through the NVSwitch,
    trunc(2 x 250 + S / 1 byte/ns) (docs/megatron.md, "The machine a preset describes")."""
    size = 65_536
    (r5 / "pass.yaml").write_text(f'workload: {{generate: "r5:ring_pass", size: {size}, compute_us: 10}}\n'
                                  f"cluster: {{preset: dgx-a100-80gb, gpus: 8, {NVLINK}}}\n")
    assert _finished(r5 / "pass.yaml") == dict.fromkeys(range(8), 10_000 + 2 * 250 + size)


def test_a_gpu_count_given_beside_a_cluster_must_be_the_clusters(r5):
    from simpy_astra.errors import InputError

    (r5 / "pass.yaml").write_text('workload: {generate: "r5:ring_pass", size: 4096, compute_us: 10, num_npus: 4}\n'
                                  "cluster: {preset: dgx-a100-80gb, gpus: 8}\n")
    with pytest.raises(InputError, match="writes 4 ranks, but cluster.gpus is 8"):
        _finished(r5 / "pass.yaml")


def tp_dp_step(tp: int, dp: int, layers: int, compute_us: int, act: int, grad: int) -> int:
    """Each layer computes compute_us / tp, then all-reduces act in its tp group; then grad / tp
    in the dp group. A group of k NPUs runs the native ring on its own (fully connected: every
    step one hop); a group of one has no collective."""
    def ring(k: int, size: int) -> int:
        return ring_all_reduce(k, size) if k > 1 else 0

    return layers * (compute_us * 1000 // tp + ring(tp, act)) + ring(dp, grad // tp)


def test_a_megatron_like_generator_swept_over_its_layouts_under_a_constraint(r5):
    """docs/sweeps.md: axes on a generator's parameters (`workload.tp`, `workload.dp`) and a
    constraint over coordinates alone, `tp * dp == 8`, which drops the other 12 points before
    they run. The four layouts of 8 NPUs give their closed forms, and best.json names the
    fastest. The generator names its groups `tp` and `dp` (docs/generators.md), so each row's
    breakdown_comm_tp_ns and breakdown_comm_dp_ns are the two rings' times."""
    base = ('{generate: "r5:tp_dp", tp: 2, dp: 4, layers: 2, compute_us: 400, act: 262144, grad: 4194304}')
    _write(r5, "base.yaml", base, _system(), _net("FullyConnected", 8), "congestion_unaware")
    (r5 / "sweep.yaml").write_text("base: base.yaml\naxes:\n  workload.tp: [1, 2, 4, 8]\n  workload.dp: [1, 2, 4, 8]\n"
                                   "constraints:\n  - tp * dp == 8\n")
    _cli(r5, "sweep", "sweep.yaml", "--out", "out")
    with open(r5 / "out" / "results.csv") as f:
        rows = {(int(r["workload.tp"]), int(r["workload.dp"])): r for r in csv.DictReader(f)}
    expected = {(tp, 8 // tp): tp_dp_step(tp, 8 // tp, 2, 400, 262_144, 4 * MIB) for tp in (1, 2, 4, 8)}
    assert {k: int(r["finish_ns"]) for k, r in rows.items()} == expected
    rings = {(tp, dp): (2 * ring_all_reduce(tp, 262_144) if tp > 1 else 0,
                        ring_all_reduce(dp, 4 * MIB // tp) if dp > 1 else 0) for tp, dp in expected}
    assert {k: (int(r["breakdown_comm_tp_ns"]), int(r["breakdown_comm_dp_ns"])) for k, r in rows.items()} == rings
    best = json.loads((r5 / "out" / "best.json").read_text())["best"]
    assert int(best["figures"]["finish_ns"]) == min(expected.values())
    assert (int(best["coordinates"]["workload.tp"]), int(best["coordinates"]["workload.dp"])) == (8, 1)


def bisection_report(figures_json: Path, side: set[int]) -> tuple[int, int]:
    """(bytes, busy ns) the links from `side` to the rest and back carried: a report of one's
    own over `--json-out`'s `links` (docs/reports.md)."""
    links = json.loads(figures_json.read_text())["links"]
    crossing = [link for link in links if (link["from"] in side) != (link["to"] in side)]
    return sum(link["bytes"] for link in crossing), max(link["busy_ns"] for link in crossing)


def test_a_report_of_the_bytes_across_a_rings_bisection(r5):
    """The native ring all-reduce of S on an 8-NPU ring (congestion_aware) sends 2(n-1) messages
    of S/n clockwise on every link; the cut between NPUs 0-3 and 4-7 crosses the links 3 -> 4 and
    7 -> 0 that way (4 -> 3 and 0 -> 7 carry nothing): 2 x 14 x S/8 bytes, each link busy
    14 trunc(S/8 / B). Read from `--json-out`, whose link ends are NPU ids."""
    _write(r5, "ring8.yaml", _bench("all_reduce", MIB, 8), _system(), _net("Ring", 8), "congestion_aware")
    _cli(r5, "run", "ring8.yaml", "--quiet", "--json-out", "f.json")
    assert bisection_report(r5 / "f.json", {0, 1, 2, 3}) == (2 * 14 * MIB // 8, 14 * (MIB // 8)) == (3_670_016,
                                                                                                     1_835_008)


def overlap_report(reports) -> dict[int, tuple[int, int, float]]:
    """Per NPU: GPU time, communication time, and the share of communication hidden under
    compute, 1 - exposed / comm, from what `sim.run()` returns (docs/cosimulation.md)."""
    return {r.npu_id: (r.times["GPU"], r.times["Comm"], 1 - r.exposed_comm_ns / r.times["Comm"]) for r in reports}


@pytest.mark.parametrize("compute_us", [100, 2000])
def test_a_report_of_how_much_communication_compute_hides(r5, compute_us):
    """A generator whose backward compute and gradient all-reduce run side by side, then an
    optimizer of 5 us. The ring all-reduce of 1 MiB on 4 NPUs takes A = E + 6 (d(S/4) + E) +
    3 P(S/4); the step ends at max(C, A) + 5 us, and exposed communication (the reference's
    finish minus GPU time) is max(C, A) - C: all of A is hidden when C >= A."""
    from simpy_astra.simulation import Simulation

    workload = f'{{generate: "r5:overlapped", num_npus: 4, size: {MIB}, compute_us: {compute_us}, opt_us: 5}}'
    path = _write(r5, "ov.yaml", workload, _system(), _net("Ring", 4), "congestion_unaware")
    sim = Simulation.from_scenario(str(path))
    reports = sim.run()
    comm, compute = ring_all_reduce(4, MIB), compute_us * 1000
    hidden = 1 - (max(compute, comm) - compute) / comm
    assert {r.npu_id: r.finished_ns for r in reports} == dict.fromkeys(range(4), max(compute, comm) + 5_000)
    assert overlap_report(reports) == dict.fromkeys(range(4), (compute + 5_000, comm, pytest.approx(hidden)))
    assert comm == 1_623_112 and (hidden == 1.0) == (compute_us == 2000)


def test_a_hook_that_makes_an_npu_a_straggler_after_its_first_all_reduce(r5):
    """docs/cosimulation.md: `sim.on("collective_end", fn)` calls fn in the instant each
    collective ends; this one slows NPU 2 down 3x (`sim.npu(2).slow_down(3.0)`) after its first.
    Two steps of 10 us compute and a 1 MiB ring all-reduce A on 4 NPUs (unfolded): NPU 2's
    second compute takes 30 us, so its first send of the second all-reduce leaves 20 us late.
    The message it starts is reduced and passed on for the 2(n-1) = 6 steps, ending at NPU
    2 + 6 mod 4 = 0 at 10 us + A + 30 us + A. Every other chain of messages reaches NPU 2 at a
    later step, which it starts 20 us late too, yet waits d(S/4) = 262,644 ns for its own
    receive, so those NPUs end as without the straggler, at 2 (10 us + A)."""
    from simpy_astra.simulation import Simulation

    workload = f'{{generate: "r5:two_steps", num_npus: 4, size: {MIB}, compute_us: 10}}'
    path = _write(r5, "steps.yaml", workload, _system(), _net("Ring", 4), "congestion_unaware", "fold_symmetry: false\n")
    sim = Simulation.from_scenario(str(path))
    ends: list[tuple[int, int]] = []

    def straggle(seen) -> None:
        ends.append((seen.npu, seen.time_ns))
        if seen.npu == 2 and sum(npu == 2 for npu, _ in ends) == 1:
            sim.npu(2).slow_down(3.0)

    sim.on("collective_end", straggle)
    finished = {r.npu_id: r.finished_ns for r in sim.run()}
    a = ring_all_reduce(4, MIB)
    assert finished == {0: 10_000 + a + 30_000 + a, 1: 2 * (10_000 + a), 2: 2 * (10_000 + a), 3: 2 * (10_000 + a)}
    assert sorted(t for _, t in ends)[:4] == [10_000 + a] * 4 and len(ends) == 8


XOR_ALL_TO_ALL = textwrap.dedent('''
    from simpy_astra.collectives.base import ALL_TO_ALL, CollectiveAlgorithm, ring_final_size


    def xor_exchange(ctx):
        """Round k swaps S/n with the member at index XOR k."""
        n, i, m = len(ctx.members), ctx.index, ctx.members
        piece = ctx.size_bytes // n
        for k in range(1, n):
            ctx.post(m[i ^ k], piece)
            yield ctx.recv(m[i ^ k], piece)
            yield ctx.endpoint()


    XOR_A2A = CollectiveAlgorithm("xor_a2a", xor_exchange, ring_final_size, kinds=frozenset({ALL_TO_ALL}),
                                  xor_symmetric=True)
''')


@pytest.mark.parametrize("xor_everywhere", [False, True])
def test_an_xor_claim_folds_only_when_every_listed_algorithm_makes_it(r5, xor_everywhere):
    """collectives/README.md: with `ring` all-gather and `direct` all-to-all beside it the
    Rabenseifner claim is not used (the run simulates every NPU); with halvingDoubling and an
    XOR all-to-all of one's own in the other lists it folds, warning of the trusted claims. The
    figure is the closed form either way."""
    from simpy_astra.simulation import Simulation

    (r5 / "xa.py").write_text(XOR_ALL_TO_ALL)
    others = dict(all_gather="halvingDoubling", reduce_scatter="halvingDoubling", all_to_all='"xa:XOR_A2A"')
    path = _write(r5, "rab.yaml", _bench("all_reduce", MIB, 8),
                  _system(all_reduce='"r5:RABENSEIFNER"', **(others if xor_everywhere else {})),
                  _net("FullyConnected", 8), "congestion_unaware", "fold_symmetry: true\n")
    sim = Simulation.from_scenario(str(path))
    assert {r.finished_ns for r in sim.run()} == {rabenseifner(8, MIB)}
    assert (sim.folding is not None) == xor_everywhere
    assert any("'r5:RABENSEIFNER' (xor_symmetric)" in w for w in sim.warnings) == xor_everywhere
    sys.modules.pop("xa", None)


def test_a_sweep_over_the_clusters_gpu_count_regenerates_ones_own_trace(r5):
    """docs/sweeps.md: `cluster.gpus` sweeps as any field; ones own generator beside the cluster
    writes as many ranks as each point's GPUs (num_npus from the cluster), each point cached on
    its own. 4 or 8 GPUs of one node: every step is one NVSwitch hop, the same figure."""
    size = 65_536
    (r5 / "pass.yaml").write_text(f'workload: {{generate: "r5:ring_pass", size: {size}, compute_us: 10}}\n'
                                  f"cluster: {{preset: dgx-a100-80gb, gpus: 8, {NVLINK}}}\n")
    (r5 / "sweep.yaml").write_text("base: pass.yaml\naxes:\n  cluster.gpus: [4, 8]\n")
    listed = _cli(r5, "sweep", "sweep.yaml", "--list")
    assert "will fail" not in listed.stdout + listed.stderr
    _cli(r5, "sweep", "sweep.yaml", "--out", "out")
    rows = _rows(r5 / "out" / "results.csv", "cluster.gpus")
    assert {k: (r["status"], int(r["finish_ns"])) for k, r in rows.items()} == {
        "4": ("ok", 10_000 + 500 + size), "8": ("ok", 10_000 + 500 + size)}
    assert len(list((r5 / ".cache" / "workloads").iterdir())) == 2


PAIR_OVERHEAD = textwrap.dedent('''
    from simpy_astra.network.backends import BackendSpec
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


    class PlusOne(CongestionUnawareNetwork):
        def message_delay_ns(self, src, dst, size_bytes):
            return super().message_delay_ns(src, dst, size_bytes) + 1


    PLUS_ONE = BackendSpec("plus_one", "analytical plus 1 ns", lambda env, dims, source, config=None: PlusOne(env, dims),
                           folds="pairs", folded=None)
''')


def _two_jobs(folder: Path, backend: str) -> Path:
    job = "workload: {generate: microbench, collective: all_to_all, size: 262144, num_npus: 4}"
    path = folder / f"jobs_{backend.partition(':')[0]}.yaml"
    system = _system(all_to_all='"r5:SCATTER"')
    path.write_text(f"system: {system}\nnetwork: {_net('FullyConnected', 8)}\n"
                    f"backend: {backend}\njobs:\n  - {{name: a, {job}, npus: [0, 1, 4, 5]}}\n"
                    f"  - {{name: b, {job}, npus: [2, 3, 6, 7]}}\n")
    return path


def test_two_jobs_meet_on_ones_own_trunk_and_are_not_told_they_do_not(r5):
    """docs/jobs.md: jobs interfere where they share something. On the trunk backend two
    all-to-all jobs of 4 NPUs, each with 2 NPUs in each half, put 16 pieces of 64 KiB on the
    trunk: the last arrives at 16 s + d(s), its NPU ends E later; alone a job ends at 8 s +
    d(s) + E. Before, the run warned 'the congestion_unaware backend has no shared links: the
    jobs do not interfere there', naming the class it derives from, while they did; a backend
    whose delays depend on the pair alone is still warned of, by its own name."""
    piece = 65_536
    done = _cli(r5, "run", _two_jobs(r5, "r5:TRUNK").name, "--isolation")
    last, alone = 16 * piece + d(piece) + E, 8 * piece + d(piece) + E
    assert f"job b finished, {last} cycles" in done.stdout.splitlines()
    assert "interfere" not in done.stderr and f"{alone:,}" in done.stderr
    (r5 / "plusone.py").write_text(PAIR_OVERHEAD)
    done = _cli(r5, "run", _two_jobs(r5, "plusone:PLUS_ONE").name)
    assert "warning: the plus_one backend has no shared links: the jobs do not" in done.stderr
    assert f"job a finished, {d(piece) + 1 + E} cycles" in done.stdout.splitlines()


@pytest.mark.parametrize("backend, folded", [("r5:TRUNK", False), ("plusone:PLUS_ONE", True)])
def test_a_backend_of_ones_own_without_links_is_named_by_its_own_name(r5, backend, folded):
    """docs/cosimulation.md: `sim.network.link(u, v)` and `sim.on("link_start", ...)` say the
    backend has no links. For a subclass of the analytical backend they named it
    `congestion_unaware` (the class it derives from), folded or not; they name the backend run."""
    from simpy_astra.simulation import Simulation

    (r5 / "plusone.py").write_text(PAIR_OVERHEAD)
    path = _write(r5, "own.yaml", _bench("all_reduce", MIB, 4), _system(), _net("Ring", 4), backend)
    sim = Simulation.from_scenario(str(path))
    name = backend.partition(":")[2].lower()
    assert (sim.folding is not None) == folded and sim.network.name == name
    with pytest.raises(AttributeError, match=f"^the {name} backend has no links"):
        sim.network.link(0, 1)
    with pytest.raises(ValueError, match=f"^the {name} backend has no links to observe"):
        sim.on("link_start", print)
    finished = {r.npu_id: r.finished_ns for r in sim.run()}
    if folded:  # plus_one: the ring, each hop 1 ns longer
        assert finished == dict.fromkeys(range(4), ring_all_reduce(4, MIB, hop=lambda s: d(s) + 1))
    sys.modules.pop("plusone", None)


def test_a_switch_that_forwards_one_item_every_gap(r5):
    """A switch model (simpy_astra/network/README.md, "The switch contract") whose release_ns
    keeps gap = 2S between the items it forwards, under the star all-reduce on a switch of 4
    (congestion_aware). The 3 leaves' S reach it together at d and leave it at d + 2kS, so the
    root reduces the last at 2d + 4S + E + P; its 3 sums, S apart on its up-link, leave the
    switch 2S apart again: the last leaf has it at 4d + 8S + E + P, the others 2S and 4S
    earlier (the root's phase ends with the last)."""
    size = 65_536
    model = f', switch-model: {{class: "r5:RateLimitedSwitch", gap_ns: {2 * size}}}'
    path = _write(r5, "rl.yaml", _bench("all_reduce", size, 4), _system(all_reduce='"r5:STAR"'),
                  _net("Switch", 4, extra=model), "congestion_aware")
    last = 4 * d(size) + 8 * size + E + reduce_ns(size)
    finished = _finished(path)
    assert finished[0] == last == 792_372
    assert sorted(finished[k] for k in (1, 2, 3)) == [last - 4 * size, last - 2 * size, last]


def test_a_ring_whose_two_halves_hand_over_by_a_signal(r5):
    """collectives/README.md: `ctx.signal()` fires when the algorithm calls `.fire(value)`, and
    yielding it gives the value. The all-gather half waits for the time the reduce-scatter
    half fires, 3 (d(S/4) + E + P(S/4)) on 4 NPUs; the whole is the ring without the native
    one's first E: 6 (d + E) + 3 P."""
    path = _write(r5, "sig.yaml", _bench("all_reduce", MIB, 4), _system(all_reduce='"r5:SIGNALLED"'),
                  _net("Ring", 4), "congestion_unaware", "fold_symmetry: false\n")
    shard = MIB // 4
    assert _finished(path) == dict.fromkeys(range(4), ring_all_reduce(4, MIB) - E)
    scattered = 3 * (d(shard) + E + reduce_ns(shard))
    assert sys.modules["r5"].SIGNALS == {npu: [scattered] for npu in range(4)} and scattered == 835_140


def exposed_by_node(nodes_csv: Path) -> dict[tuple[int, str], int]:
    """(NPU, node name) -> its exposed share: a report of one's own over `--csv-out`'s
    nodes.csv (docs/reports.md), whose shares add up to each NPU's exposed communication."""
    with open(nodes_csv) as f:
        return {(int(r["npu"]), r["name"]): int(r["exposed_share_ns"]) for r in csv.DictReader(f)
                if int(r["exposed_share_ns"])}


def test_a_report_of_which_node_exposed_communication_from_the_csv(r5):
    """The overlapped step with 500 us of compute beside the 1 MiB all-reduce A = 1,623,112 ns:
    the all-reduce node alone is exposed, for A - C on every NPU; the json's exposed
    communication is the same figure."""
    workload = f'{{generate: "r5:overlapped", num_npus: 4, size: {MIB}, compute_us: 500, opt_us: 5}}'
    _write(r5, "ov.yaml", workload, _system(), _net("Ring", 4), "congestion_unaware")
    _cli(r5, "run", "ov.yaml", "--quiet", "--csv-out", "csv", "--json-out", "csv/f.json")
    exposed = ring_all_reduce(4, MIB) - 500_000
    assert exposed_by_node(r5 / "csv" / "nodes.csv") == {(npu, "grads"): exposed for npu in range(4)}
    npus = json.loads((r5 / "csv" / "f.json").read_text())["npus"]
    assert {int(k): v["exposed_comm_ns"] for k, v in npus.items()} == dict.fromkeys(range(4), exposed)


def test_a_topology_class_given_parameters_is_told_where_parameters_go(r5):
    """A researcher who wrote `topology: [{class: "r5:Dragonfly", group: 3}]`, as link-model
    takes a class with parameters, was told only the built-in names; the line now says how a
    class is named and that a fabric with parameters is a networkx function."""
    from simpy_astra.errors import InputError

    path = _write(r5, "dfp.yaml", _bench("send_recv", 4096, 6, src=0, dst=5), _system(),
                  '{topology: [{class: "r5:Dragonfly", group: 3}], npus_count: [6], bandwidth: [1.0], '
                  'latency: [500]}', "congestion_unaware")
    with pytest.raises(InputError, match=r"field 'topology\[0\]' must be one of Ring, .*named as "
                                         r"'package.module:Class' and takes npus_count, bandwidth and latency "
                                         r"alone; a fabric with parameters of its own is a function: topology: "
                                         r"\{networkx: package.module:function, KEY: value\}$"):
        _finished(path)
