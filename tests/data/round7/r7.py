"""A researcher's extensions, written from simpy-astra's docs alone (round 7 of
tests/test_extensions_*.py): collectives, topologies, a link, a switch, a backend,
workload generators and report scripts."""

import json

import networkx as nx
import simpy

from simpy_astra.collectives.base import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    CollectiveAlgorithm,
    ring_final_size,
)
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.network.switch import SwitchElement
from simpy_astra.topologies import BasicTopology
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_AR
from simpy_astra.workloads.chakra.types import ALL_TO_ALL as COLL_A2A
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE

# -- collectives ------------------------------------------------------------------------------


def bidirectional_tagged(ctx):
    """Half the buffer clockwise, half anticlockwise, each a ring all-reduce of S/2n messages;
    the two directions on their own tags, so that on a 2-ring (one peer both ways) neither
    takes the other's message (collectives/README.md)."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    msg = ctx.size_bytes // (2 * n)

    def one_direction(send_to, receive_from, tag):
        for step in range(2 * (n - 1)):
            ctx.post(send_to, msg, tag=tag)
            yield ctx.recv(receive_from, msg, tag=tag)
            yield ctx.endpoint(reduce_bytes=msg if step < n - 1 else 0)

    yield ctx.env.all_of([ctx.spawn(one_direction(m[(i + 1) % n], m[(i - 1) % n], 1)),
                          ctx.spawn(one_direction(m[(i - 1) % n], m[(i + 1) % n], 2))])


BIDIR = CollectiveAlgorithm("bidir_tagged", bidirectional_tagged, ring_final_size,
                            kinds=frozenset({ALL_REDUCE}), rotation_symmetric=True)


def pipelined_tree(pieces):
    """An all-reduce on a binary tree by ring position (parent (i-1)//2, children 2i+1, 2i+2),
    cut into `pieces`: a node reduces piece p once both children's p is here and sends the sum
    up; the root's sums come back down, forwarded piece by piece by a second sub-process."""

    def run(ctx):
        n, i, m = len(ctx.members), ctx.index, ctx.members
        piece = ctx.size_bytes // pieces
        children = [m[c] for c in (2 * i + 1, 2 * i + 2) if c < n]
        parent = m[(i - 1) // 2] if i else None
        reduced = [ctx.signal() for _ in range(pieces)]

        def up():
            for p in range(pieces):
                if children:
                    yield ctx.env.all_of([ctx.recv(c, piece) for c in children])
                    yield ctx.endpoint(reduce_bytes=piece)
                else:
                    yield ctx.endpoint()
                if parent is not None:
                    ctx.post(parent, piece)
                reduced[p].fire(p)

        def down():
            for p in range(pieces):
                if parent is None:
                    yield reduced[p]
                else:
                    yield ctx.recv(parent, piece)
                for c in children:
                    ctx.post(c, piece)
                yield ctx.endpoint()

        yield ctx.env.all_of([ctx.spawn(up()), ctx.spawn(down())])

    run.__name__ = f"tree{pieces}"
    return CollectiveAlgorithm(f"tree{pieces}", run, ring_final_size, kinds=frozenset({ALL_REDUCE}))


TREE1, TREE2, TREE4, TREE8 = (pipelined_tree(k) for k in (1, 2, 4, 8))


def tree4_until_interrupted(ctx):
    """TREE4, whose phase returns when interrupted (a deadline of the researcher's own)."""
    try:
        yield from TREE4.run(ctx)
    except simpy.Interrupt:
        return


TREE4_DEADLINE = CollectiveAlgorithm("tree4_deadline", tree4_until_interrupted, ring_final_size,
                                     kinds=frozenset({ALL_REDUCE}))


def line_all_gather(ctx):
    """All-gather on a line (no wrap-around): every piece travels both ways; at step s NPU i
    hands on rightwards the piece of NPU i-s and leftwards that of NPU i+s, where they exist."""
    n, i, m, size = len(ctx.members), ctx.index, ctx.members, ctx.size_bytes
    for s in range(n - 1):
        if i - s >= 0 and i + 1 < n:
            ctx.post(m[i + 1], size)
        if i + s < n and i - 1 >= 0:
            ctx.post(m[i - 1], size)
        arriving = []
        if i - 1 - s >= 0:
            arriving.append(ctx.recv(m[i - 1], size))
        if i + 1 + s < n:
            arriving.append(ctx.recv(m[i + 1], size))
        if not arriving:
            return
        yield ctx.env.all_of(arriving)
        yield ctx.endpoint()


LINE_AG = CollectiveAlgorithm("line_ag", line_all_gather, ring_final_size, kinds=frozenset({ALL_GATHER}))


def ring_reduce_scatter(ctx):
    """A plain ring reduce-scatter: n-1 steps of S/n to the right, each reduced on arrival."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    msg = ctx.size_bytes // n
    for _ in range(n - 1):
        ctx.post(m[(i + 1) % n], msg)
        yield ctx.recv(m[(i - 1) % n], msg)
        yield ctx.endpoint(reduce_bytes=msg)


RING_RS = CollectiveAlgorithm("ring_rs", ring_reduce_scatter, ring_final_size, kinds=frozenset({REDUCE_SCATTER}))


def all_at_once(ctx):
    """All-to-all: S/n to every peer at once, the next ring position first; one endpoint."""
    n, i, m = len(ctx.members), ctx.index, ctx.members
    msg = ctx.size_bytes // n
    for k in range(1, n):
        ctx.post(m[(i + k) % n], msg)
    yield ctx.env.all_of([ctx.recv(m[(i - k) % n], msg) for k in range(1, n)])
    yield ctx.endpoint()


ALL_AT_ONCE = CollectiveAlgorithm("all_at_once", all_at_once, ring_final_size, kinds=frozenset({ALL_TO_ALL}))

# -- topologies -------------------------------------------------------------------------------

HYPERX_ROW = 4  # NPUs per row of the HyperX


class HyperX(BasicTopology):
    """A 2D HyperX: NPU i sits at (row i // HYPERX_ROW, column i % HYPERX_ROW); every row and
    every column is fully connected; a message fixes its column in its row, then its row."""

    def _at(self, i):
        return divmod(i, HYPERX_ROW)

    def links(self):
        n = self.npus_count
        return [(a, b) for a in range(n) for b in range(n)
                if a != b and (self._at(a)[0] == self._at(b)[0] or self._at(a)[1] == self._at(b)[1])]

    def route(self, src, dst):
        (r0, c0), (r1, c1) = self._at(src), self._at(dst)
        path = [src]
        if c0 != c1:
            path.append(r0 * HYPERX_ROW + c1)
        if r0 != r1:
            path.append(dst)
        return path

    def hops(self, src, dst):
        return len(self.route(src, dst)) - 1


def dragonfly_plus(groups=2, leaves=1, spines=1, per_leaf=4, bandwidth_gbps=1.0, latency_ns=500.0,
                   global_latency_ns=500.0):
    """Dragonfly+: in each group per_leaf NPUs under each leaf, every leaf cabled to every spine
    of its group (a two-level fat tree); spine s of every group cabled to spine s of every other
    group (the global links)."""
    g = nx.DiGraph()

    def cable(a, b, latency):
        g.add_edge(a, b, bandwidth_gbps=bandwidth_gbps, latency_ns=latency)
        g.add_edge(b, a, bandwidth_gbps=bandwidth_gbps, latency_ns=latency)

    for grp in range(groups):
        for s in range(spines):
            g.add_node(f"g{grp}s{s}", kind="switch")
        for leaf in range(leaves):
            name = f"g{grp}l{leaf}"
            g.add_node(name, kind="switch")
            for k in range(per_leaf):
                cable((grp * leaves + leaf) * per_leaf + k, name, latency_ns)
            for s in range(spines):
                cable(name, f"g{grp}s{s}", latency_ns)
    for s in range(spines):
        for a in range(groups):
            for b in range(a + 1, groups):
                cable(f"g{a}s{s}", f"g{b}s{s}", global_latency_ns)
    return g

# -- a link, a switch, a backend --------------------------------------------------------------


class WakeUpLink(LinkElement):
    """An energy-efficient link: after idle_ns with nothing on the wire it sleeps, and the next
    item waits wake_ns while it wakes (the first item too: it starts asleep)."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, wake_ns: int = 0,
                 idle_ns: int = 0):
        if wake_ns < 0 or idle_ns < 0:
            raise ValueError(f"wake_ns and idle_ns must be >= 0 ns (got {wake_ns}, {idle_ns})")
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.wake_ns, self.idle_ns = wake_ns, idle_ns
        self.quiet_since_ns = None  # when the last byte left the wire (None: never used)

    def hold_ns(self, item):
        asleep = self.quiet_since_ns is None or self.env.now - self.quiet_since_ns >= self.idle_ns
        hold = self.wake_ns if asleep else 0
        self.quiet_since_ns = self.env.now + hold + int(item.size / self.bytes_per_ns)
        return hold


class CreditSwitch(SwitchElement):
    """A switch that has `credits` items out at once: it hands an item on only with a credit,
    which comes back when that item reaches the far end of its output link."""

    def __init__(self, env, device, forward, credits: int = 1):
        if not isinstance(credits, int) or credits < 1:
            raise ValueError(f"credits must be a whole number >= 1 (got {credits!r})")
        self.credits = simpy.Container(env, capacity=credits, init=credits)
        self.waiting = simpy.Store(env)
        self.watched = set()
        super().__init__(env, device, forward)

    def receive(self, item):
        self.waiting.put(item)

    def run(self):
        while True:
            item = yield self.waiting.get()
            yield self.credits.get(1)
            if item.next_link not in self.watched:
                self.watched.add(item.next_link)
                item.next_link.watch("link_end", self._credit_back)
            self.send_on(item)

    def _credit_back(self, link, key, size_bytes):
        self.credits.put(1)


class NicQueue(CongestionUnawareNetwork):
    """Analytical, but every NPU's NIC injects one message at a time at the link's bandwidth:
    a message waits for its sender's earlier ones to leave, then takes the analytical delay."""

    pair_delays_only = False

    def __init__(self, env, dims):
        super().__init__(env, dims)
        self.bytes_per_ns = dims[0].bandwidth_gbps * 2**30 / 1e9
        self.nic_free_ns = {}

    def send(self, src, dst, tag, size, fn, arg):
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        start = max(self.env.now, self.nic_free_ns.get(src, 0))
        self.nic_free_ns[src] = start + size / self.bytes_per_ns
        wait = int(start - self.env.now)
        self.board.arrive_after(wait + int(self.message_delay_ns(src, dst, size)), entry)


NIC_QUEUE = BackendSpec("nic_queue", "analytical plus a FIFO injection queue per NIC",
                        lambda env, dims, source, config=None: NicQueue(env, dims), folds=None, folded=None)
#: the same, registered as LogGP is (folds="pairs"): a slip docs/backends.md warns of
NIC_QUEUE_PAIRS = BackendSpec("nic_queue_pairs", "NicQueue registered with folds='pairs'",
                              lambda env, dims, source, config=None: NicQueue(env, dims), folds="pairs",
                              folded=None)

# -- workload generators ----------------------------------------------------------------------


def _compute(node_id, name, us, deps=()):
    return make_node(node_id, name, COMP_NODE, deps=list(deps), duration_micros=us, attrs={"is_cpu_op": False})


def _coll(node_id, name, kind, size, deps=()):
    return make_node(node_id, name, COMM_COLL_NODE, deps=list(deps),
                     attrs={"is_cpu_op": False, "comm_type": kind, "comm_size": size})


def dlrm_step(params, prefix):
    """One DLRM training step per NPU: bottom MLP and embedding lookups, the embeddings'
    all-to-all, interaction and top MLP, its backward, the embeddings' gradients back by
    all-to-all beside the MLP gradients' all-reduce, then the embedding update."""
    mlp, emb, top, update = (params[k] for k in ("mlp_us", "emb_us", "top_us", "update_us"))
    for rank in range(params["num_npus"]):
        write_et(f"{prefix}.{rank}.et", [
            _compute(0, "bottom_mlp", mlp),
            _compute(1, "embedding_lookup", emb),
            _coll(2, "emb_all_to_all", COLL_A2A, params["emb_bytes"], deps=[1]),
            _compute(3, "interaction_top_mlp", top, deps=[0, 2]),
            _compute(4, "top_mlp_backward", top, deps=[3]),
            _coll(5, "emb_grad_all_to_all", COLL_A2A, params["emb_bytes"], deps=[4]),
            _coll(6, "mlp_grad_all_reduce", COLL_AR, params["mlp_bytes"], deps=[4]),
            _compute(7, "embedding_update", update, deps=[5]),
        ])


def two_sends(params, prefix):
    """NPU 0 sends size bytes to NPU 1, computes gap_us, sends again; NPU 1 receives both."""
    size, gap = params["size"], params["gap_us"]

    def p2p(node_id, kind, peer, tag, deps=()):
        key = "comm_dst" if kind == COMM_SEND_NODE else "comm_src"
        return make_node(node_id, "p2p", kind, deps=list(deps),
                         attrs={"is_cpu_op": False, key: peer, "comm_size": size, "comm_tag": tag})

    write_et(f"{prefix}.0.et", [p2p(0, COMM_SEND_NODE, 1, 0), _compute(1, "gap", gap, deps=[0]),
                                p2p(2, COMM_SEND_NODE, 1, 1, deps=[1])])
    write_et(f"{prefix}.1.et", [p2p(0, COMM_RECV_NODE, 0, 0), p2p(1, COMM_RECV_NODE, 0, 1)])
    for rank in range(2, params["num_npus"]):
        write_et(f"{prefix}.{rank}.et", [_compute(0, "nothing", 0)])


def permutation(params, prefix):
    """Each NPU sends size bytes to NPU perm[i] (tag 0) and receives from whoever sends to it."""
    perm, size = params["perm"], params["size"]
    senders = {dst: src for src, dst in enumerate(perm)}
    for r in range(len(perm)):
        write_et(f"{prefix}.{r}.et", [
            make_node(0, "send", COMM_SEND_NODE, attrs={"is_cpu_op": False, "comm_dst": perm[r],
                                                         "comm_size": size, "comm_tag": 0}),
            make_node(1, "recv", COMM_RECV_NODE, attrs={"is_cpu_op": False, "comm_src": senders[r],
                                                         "comm_size": size, "comm_tag": 0})])

# -- reports ----------------------------------------------------------------------------------


def utilisation_by_dimension(sim, t_ns):
    """Per network dimension (the `dim` of network.graph's edges): links, bytes, busy ns and
    the mean utilisation busy / (links x t_ns)."""
    out = {}
    for _u, _v, edge in sim.network.graph.edges(data=True):
        row = out.setdefault(edge["dim"], {"links": 0, "bytes": 0, "busy_ns": 0})
        row["links"] += 1
        row["bytes"] += edge["link"].bytes
        row["busy_ns"] += edge["link"].busy_ns
    for row in out.values():
        row["utilisation"] = row["busy_ns"] / (row["links"] * t_ns)
    return out


def busiest_links(figures_json, top=3):
    """From run --json-out: the `top` busiest links as (from, to, share of the iteration)."""
    with open(figures_json) as f:
        fig = json.load(f)
    t = fig["iteration_time_ns"]
    return [(x["from"], x["to"], x["busy_ns"] / t) for x in fig["links"][:top]]


def chunk_phases(trace_json, npu_pid=None):
    """From run --trace-out (a Chrome trace): every collective phase of one NPU's chunks as
    (chunk stream, phase, start ns, duration ns, queued ns), in start order."""
    with open(trace_json) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("name", "").startswith("chunk ") and npu_pid in (None, e.get("pid")):
            args = e["args"]
            out.append((args["stream"], args["phase"], round(e["ts"] * 1000), round(e["dur"] * 1000), args["queued_ns"]))
    return sorted(out, key=lambda row: (row[2], row[1]))
