"""A researcher's extensions, round 9, written from the guides alone (docs/collectives.md,
collectives/README.md, docs/backends.md, simpy_astra/network/README.md); the misbehaving ones
are the mistakes a first try makes."""

import simpy
from hypercube import Hypercube

from simpy_astra.collectives.base import ALL_TO_ALL, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.topologies import BasicTopology

# -- collective algorithms --------------------------------------------------------------------

def both_ways(ctx):
    """All-to-all by exchanges in both directions at once: step k sends S/n to the members k
    places ahead and k places behind and receives from both (the one opposite, once), so
    n // 2 steps reach every peer."""
    n, i = len(ctx.members), ctx.index
    msg = ctx.size_bytes // n
    for k in range(1, n // 2 + 1):
        peers = dict.fromkeys((ctx.members[(i + k) % n], ctx.members[(i - k) % n]))
        for peer in peers:
            ctx.post(peer, msg)
        yield ctx.env.all_of([ctx.recv(peer, msg) for peer in peers])
        yield ctx.endpoint()


def both_ways_traffic(shape):
    n, i = len(shape.members), shape.index
    return [(peer, shape.size_bytes // n) for k in range(1, n // 2 + 1)
            for peer in dict.fromkeys(((i + k) % n, (i - k) % n))]


BOTH_WAYS = CollectiveAlgorithm("both_ways", both_ways, ring_final_size, kinds=frozenset({ALL_TO_ALL}),
                                rotation_symmetric=True, traffic=both_ways_traffic)

BURST_MESSAGES = 3


def burst(ctx):
    """An all-to-all on two NPUs that posts its S in BURST_MESSAGES messages at once."""
    peer = ctx.members[1 - ctx.index]
    msg = ctx.size_bytes // BURST_MESSAGES
    for _ in range(BURST_MESSAGES):
        ctx.post(peer, msg)
    yield ctx.env.all_of([ctx.recv(peer, msg) for _ in range(BURST_MESSAGES)])
    yield ctx.endpoint()


BURST = CollectiveAlgorithm("burst", burst, ring_final_size, kinds=frozenset({ALL_TO_ALL}))


def waits_for_done(ctx):
    """Meant to fire `done` when the last message is in; the firing was forgotten."""
    done = ctx.signal()
    yield ctx.endpoint()
    yield done


def sleeps_on_its_own_clock(ctx):
    """Waits on a timeout of a new Environment instead of ctx.env."""
    yield simpy.Environment().timeout(100)


def yields_a_list(ctx):
    peer = ctx.members[(ctx.index + 1) % len(ctx.members)]
    yield [ctx.send(peer, 64), ctx.recv(ctx.members[ctx.index - 1], 64)]


# -- a link with state --------------------------------------------------------------------------

class TokenBucket(LinkElement):
    """A link shaped by a token bucket: `depth_bytes` of burst, refilled at `rate_share` of the
    link's bandwidth; a message waits until the bucket holds its bytes (the bucket may go into
    debt, repaid at the refill rate)."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, rate_share: float = 0.5,
                 depth_bytes: int = 4096):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        if not 0 < rate_share <= 1:
            raise ValueError(f"rate_share must be in (0, 1] (got {rate_share})")
        self.refill_bytes_per_ns = rate_share * self.bytes_per_ns
        self.depth_bytes = depth_bytes
        self.tokens = float(depth_bytes)
        self.last_ns = 0

    def hold_ns(self, item):
        now = self.env.now
        self.tokens = min(self.depth_bytes, self.tokens + (now - self.last_ns) * self.refill_bytes_per_ns)
        self.last_ns = now
        wait_ns = max(0.0, (item.size - self.tokens) / self.refill_bytes_per_ns)
        self.tokens -= item.size
        return wait_ns


class WrappedDequeue(LinkElement):
    """Returns the next item wrapped in a tuple (a slip: `return (item,)`)."""

    def dequeue(self):
        item = super().dequeue()
        return None if item is None else (item,)


# -- a backend whose build fails ------------------------------------------------------------------

def _build_from_a_table(env, dims, source, config=None):
    table = {}  # meant to be read from a file of delays per pair
    return CongestionUnawareNetwork(env, dims) if table["ready"] else None


TABLE = BackendSpec("table", "delays from a table of one's own", _build_from_a_table, folds=None, folded=None)


# -- a hierarchical collective on a topology of one's own -------------------------------------------

POD_NPUS = 4


class Pods(BasicTopology):
    """Pods of POD_NPUS NPUs, each on a pod switch (N + p); the pod switches on one core switch
    (N + pods), whose links have half the bandwidth and twice the latency."""

    def _pod_switch(self, npu):
        return self.npus_count + npu // POD_NPUS

    def _core(self):
        return self.npus_count + self.npus_count // POD_NPUS

    def links(self):
        pods = range(self.npus_count // POD_NPUS)
        up = [(i, self._pod_switch(i)) for i in range(self.npus_count)]
        trunk = [(self.npus_count + p, self._core()) for p in pods]
        return up + [(b, a) for a, b in up] + trunk + [(b, a) for a, b in trunk]

    def route(self, src, dst):
        a, b = self._pod_switch(src), self._pod_switch(dst)
        return [src, a, dst] if a == b else [src, a, self._core(), b, dst]

    def hops(self, src, dst):
        return len(self.route(src, dst)) - 1

    def link_params(self, src, dst):
        if self._core() in (src, dst):
            return self.bandwidth_gbps / 2, 2 * self.latency_ns
        return self.bandwidth_gbps, self.latency_ns


def pod_leaders(dim):
    """The logical hook: this NPU's pod (members that share its pod, its leader first) and
    the pods' leaders, from the dimension's members in ring order."""
    pod = tuple(m for m in dim.members if m // POD_NPUS == dim.members[dim.index] // POD_NPUS)
    leaders = tuple(m for m in dim.members if m % POD_NPUS == 0)
    return pod, leaders


def pod_all_reduce(ctx, pod, leaders):
    """Each member sends its S to its pod's leader, which reduces them; the leaders swap
    their sums in pairs (recursive doubling over the pods) and reduce; each leader sends the
    result back to its pod. Every NPU ends with an endpoint delay."""
    size, me, leader = ctx.size_bytes, ctx.npu_id, pod[0]
    if me != leader:
        ctx.post(leader, size)
        yield ctx.recv(leader, size)
        yield ctx.endpoint()
        return
    yield ctx.env.all_of([ctx.recv(m, size) for m in pod[1:]])
    yield ctx.endpoint(reduce_bytes=(len(pod) - 1) * size)
    rank, step = leaders.index(me), 1
    while step < len(leaders):
        peer = leaders[rank ^ step]
        ctx.post(peer, size)
        yield ctx.recv(peer, size)
        yield ctx.endpoint(reduce_bytes=size)
        step *= 2
    yield ctx.env.all_of([ctx.send(m, size) for m in pod[1:]])
    yield ctx.endpoint()


POD_ALL_REDUCE = CollectiveAlgorithm("pod_all_reduce", pod_all_reduce, ring_final_size, logical=pod_leaders)


class CheckedHypercube(Hypercube):
    """docs/collectives.md's hypercube (examples/hypercube.py), refusing an NPU count that is
    not a power of two."""

    def __init__(self, npus_count, bandwidth_gbps, latency_ns):
        if npus_count < 2 or npus_count & (npus_count - 1):
            raise ValueError(f"a hypercube has a power of two of NPUs, 2 or more (got {npus_count}): "
                             f"write npus_count: [{1 << (npus_count - 1).bit_length()}]")
        super().__init__(npus_count, bandwidth_gbps, latency_ns)


# -- backends with a send of their own that misuse the board ------------------------------------------

class Jittered(CongestionUnawareNetwork):
    """Every message gets `jitter_ns` on top; a first try takes a calibration's offset, more
    than a message's delay, with its sign wrong."""

    pair_delays_only = False
    jitter_ns = -2000

    def send(self, src, dst, tag, size, fn, arg):
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        self.board.arrive_after(self.message_delay_ns(src, dst, size) + self.jitter_ns, entry)


class Forgetful(CongestionUnawareNetwork):
    """Posts each message and never schedules its arrival."""

    pair_delays_only = False

    def send(self, src, dst, tag, size, fn, arg):
        self.board.post_send(src, dst, tag, size, fn, arg)


JITTERED = BackendSpec("jittered", "x", lambda env, dims, source, config=None: Jittered(env, dims), folds=None,
                       folded=None)
FORGETFUL = BackendSpec("forgetful", "x", lambda env, dims, source, config=None: Forgetful(env, dims), folds=None,
                        folded=None)
