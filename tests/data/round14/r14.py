"""The researcher's module of round 14 (tests/test_extensions_round14.py), written from the docs."""

from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class Retransmits(CongestionUnawareNetwork):
    """docs/backends.md's Trunk shape, with a slip: a lost first attempt modelled by posting
    the message again, both copies given their arrival."""

    pair_delays_only = False

    def send(self, src, dst, tag, size, fn, arg):
        for _attempt in range(2):
            entry = self.board.post_send(src, dst, tag, size, fn, arg)
            self.board.arrive_after(self.message_delay_ns(src, dst, size), entry)


RETRANSMITS = BackendSpec("retransmits", "posts each message twice",
                          lambda env, dims, source, config=None: Retransmits(env, dims), folds=None, folded=None)


class Pairs(CongestionUnawareNetwork):
    """A backend that holds each message until the next one is sent (a coalescing NIC's
    shape), then posts both, each once, with their own pair's delay."""

    pair_delays_only = False

    def __init__(self, env, dims):
        super().__init__(env, dims)
        self.held = None

    def send(self, src, dst, tag, size, fn, arg):
        if self.held is None:
            self.held = (src, dst, tag, size, fn, arg)
            return
        for message in (self.held, (src, dst, tag, size, fn, arg)):
            entry = self.board.post_send(*message)
            self.board.arrive_after(self.message_delay_ns(message[0], message[1], message[3]), entry)
        self.held = None


PAIRS = BackendSpec("pairs", "posts messages two at a time",
                    lambda env, dims, source, config=None: Pairs(env, dims), folds=None, folded=None)


def halves(params, prefix):
    """docs/generators.md's generator shape: even and odd NPUs each all-reduce ``size`` bytes in
    a communicator group of their own (groups 1 and 2 of the comm-group JSON it writes)."""
    import json

    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE

    n, size = params["num_npus"], params["size"]
    for rank in range(n):
        write_et(f"{prefix}.{rank}.et", [make_node(0, "ar", COMM_COLL_NODE, attrs={
            "is_cpu_op": False, "comm_type": ALL_REDUCE, "comm_size": size, "pg_name": str(1 + rank % 2)})])
    with open(prefix + ".json", "w") as f:
        json.dump({"1": list(range(0, n, 2)), "2": list(range(1, n, 2))}, f)
    return prefix + ".json"


from simpy_astra.topologies import BasicTopology  # noqa: E402 - the topology part of the module


class YieldingHypercube(BasicTopology):
    """docs/collectives.md's hypercube with its links and routes written as generators, as
    Python is often written: NPU i links to i XOR 2^k."""

    def hops(self, src, dst):
        return bin(src ^ dst).count("1")

    def links(self):
        for i in range(self.npus_count):
            for k in range(self.npus_count.bit_length() - 1):
                yield (i, i ^ (1 << k))

    def route(self, src, dst):
        at = src
        yield at
        for k in range(self.npus_count.bit_length() - 1):
            if (at ^ dst) >> k & 1:
                at ^= 1 << k
                yield at


class CountingHypercube(YieldingHypercube):
    """A slip: the bits counted with a generator expression, not its sum."""

    def hops(self, src, dst):
        return (1 for k in range(8) if (src ^ dst) >> k & 1)


def _step(ctx, right, left, msg):
    ctx.send(right, msg)
    yield ctx.recv(left, msg)


def ring_with_a_helper(ctx):
    """collectives/README.md's simple_ring with its step moved to a helper, and a slip:
    ``yield`` where ``yield from`` was meant."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    for _step_index in range(2 * (n - 1)):
        yield _step(ctx, right, left, ctx.size_bytes // n)


class NumpyRing(BasicTopology):
    """A one-way ring whose links' figures come from numpy tables, as a researcher keeps them:
    every fourth link (from NPU 0, 4, ...) has twice the latency."""

    def __init__(self, npus_count, bandwidth_gbps, latency_ns):
        import numpy as np

        super().__init__(npus_count, bandwidth_gbps, latency_ns)
        self.latency = np.full(npus_count, latency_ns, dtype=np.int64)
        self.latency[::4] *= 2
        self.bandwidth = np.full(npus_count, bandwidth_gbps, dtype=np.float64)

    def hops(self, src, dst):
        return (dst - src) % self.npus_count

    def links(self):
        return [(i, (i + 1) % self.npus_count) for i in range(self.npus_count)]

    def route(self, src, dst):
        return [(src + k) % self.npus_count for k in range(self.hops(src, dst) + 1)]

    def link_params(self, src, dst):
        return self.bandwidth[src], self.latency[src]
