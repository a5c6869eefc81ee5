"""The researcher's module of round 15 (tests/test_extensions_round15.py), written from the docs."""

import asyncio
from dataclasses import dataclass, field

from simpy_astra import collectives
from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec, register
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.topologies import BasicTopology

O_NS = 300  # docs/backends.md's LogGP overhead, read by the script that checks it


class LogGP(CongestionUnawareNetwork):
    """docs/backends.md's LogGP-like backend, its overheads a class attribute."""

    overhead_ns = 2 * O_NS

    def message_delay_ns(self, src, dst, size_bytes):
        return self.overhead_ns + super().message_delay_ns(src, dst, size_bytes)


def build_loggp(env, dims, source, config=None):
    return LogGP(env, dims)


LOGGP15 = register(BackendSpec("loggp15", "LogGP-like overheads", build_loggp, folds="pairs", folded=None))


@dataclass
class PipelinedRing:
    """A ring all-reduce cut into ``pieces`` messages a step, one in flight (user state: the
    piece count, and the NPUs it ran on)."""

    pieces: int = 2
    ran_on: list = field(default_factory=list)

    def __call__(self, ctx):
        self.ran_on.append(ctx.npu_id)
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        msg = ctx.size_bytes // n // self.pieces
        for _step in range(2 * (n - 1)):
            for _piece in range(self.pieces):
                ctx.post(right, msg)
                yield ctx.recv(left, msg)
            yield ctx.endpoint()


PIPE2 = PipelinedRing(2)
collectives.register("pipe2_r15", PIPE2)


async def async_ring(ctx):
    """A ring written as asyncio code (await, not yield): not a SimPy process."""
    await asyncio.sleep(0)


ASYNC_RING = CollectiveAlgorithm("async_ring", async_ring, ring_final_size, kinds=frozenset({ALL_REDUCE}))


async def async_gen_ring(ctx):
    """The same as an async generator."""
    yield ctx.endpoint()


ASYNC_GEN_RING = CollectiveAlgorithm("async_gen_ring", async_gen_ring, ring_final_size,
                                     kinds=frozenset({ALL_REDUCE}))


def halves(params, prefix):
    """Every rank computes ``compute_us``, then all-reduces ``size`` bytes within its half of
    the NPUs (group 1 the first half, group 2 the second), docs/generators.md's nodes."""
    import json

    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_ALL_REDUCE
    from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMP_NODE

    n, size = params["num_npus"], params["size"]
    for rank in range(n):
        write_et(f"{prefix}.{rank}.et", [
            make_node(0, "forward", COMP_NODE, duration_micros=params["compute_us"], attrs={"is_cpu_op": False}),
            make_node(1, "grads", COMM_COLL_NODE, deps=[0], attrs={
                "is_cpu_op": False, "comm_type": COLL_ALL_REDUCE, "comm_size": size,
                "pg_name": "1" if rank < n // 2 else "2"})])
    with open(prefix + ".json", "w") as f:
        json.dump({"1": list(range(n // 2)), "2": list(range(n // 2, n))}, f)
    return prefix + ".json"


def halves_yielded(params, prefix):
    """halves() with its path yielded, as if a generator were a stream of files."""
    yield halves(params, prefix)


class OneWayFast(BasicTopology):
    """A bidirectional ring whose clockwise links run at the YAML's bandwidth and latency and
    whose anticlockwise ones at a quarter of the bandwidth (asymmetric links); shortest way."""

    def hops(self, src, dst):
        n = self.npus_count
        return min((dst - src) % n, (src - dst) % n)

    def links(self):
        n = self.npus_count
        for i in range(n):
            yield (i, (i + 1) % n)
            yield ((i + 1) % n, i)

    def route(self, src, dst):
        n = self.npus_count
        step = 1 if (dst - src) % n <= (src - dst) % n else -1
        path = [src]
        while path[-1] != dst:
            path.append((path[-1] + step) % n)
        return path

    def link_params(self, src, dst):
        clockwise = (dst - src) % self.npus_count == 1
        return (self.bandwidth_gbps if clockwise else self.bandwidth_gbps / 4, self.latency_ns)


class PerLinkGap(LinkElement):
    """Each directed link waits its own gap before an item: ``gaps`` maps 'src-dst' (device
    ids, switches numbered from the NPU count) to ns; a link not listed waits none."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gaps: dict | None = None):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.gap_ns = (gaps or {}).get(f"{src}-{dst}", 0)

    def hold_ns(self, item):
        return self.gap_ns


class OptionalGap(LinkElement):
    """docs' PacedLink with its parameter optional, ``int | None`` (None: no gap)."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int | None = None):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.gap_ns = gap_ns

    def hold_ns(self, item):
        return self.gap_ns or 0


# -- the same shapes written as asyncio code (async def): nothing in a SimPy run awaits them --------------

class AsyncRunLink(LinkElement):
    async def run(self):
        pass


class AsyncHoldLink(LinkElement):
    async def hold_ns(self, item):
        return 5


class AsyncHops(OneWayFast):
    async def hops(self, src, dst):
        return 1


class AsyncSend(CongestionUnawareNetwork):
    """docs/backends.md's Trunk shape, its send written with async def."""

    pair_delays_only = False

    async def send(self, src, dst, tag, size, fn, arg):
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        self.board.arrive_after(self.message_delay_ns(src, dst, size), entry)


ASYNC_SEND = register(BackendSpec("async_send15", "send written with async def",
                                  lambda env, dims, source, config=None: AsyncSend(env, dims), folds=None, folded=None))


# -- communicator groups of every other NPU, and an algorithm whose first member waits longer ---------------

def evens_odds(params, prefix):
    """Every rank computes ``compute_us``, then all-reduces ``size`` bytes within its group: the
    even NPUs (group 1) or the odd ones (group 2)."""
    import json

    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_ALL_REDUCE
    from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMP_NODE

    n, size = params["num_npus"], params["size"]
    for rank in range(n):
        write_et(f"{prefix}.{rank}.et", [
            make_node(0, "forward", COMP_NODE, duration_micros=params["compute_us"], attrs={"is_cpu_op": False}),
            make_node(1, "grads", COMM_COLL_NODE, deps=[0], attrs={
                "is_cpu_op": False, "comm_type": COLL_ALL_REDUCE, "comm_size": size, "pg_name": str(1 + rank % 2)})])
    with open(prefix + ".json", "w") as f:
        json.dump({"1": list(range(0, n, 2)), "2": list(range(1, n, 2))}, f)
    return prefix + ".json"


def first_waits(ctx):
    """A ring all-reduce of one message a step (no reduction asked); the member at index 0
    then waits 1,000 ns more (an algorithm that makes no symmetry claim: it has none)."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    for _step in range(2 * (n - 1)):
        ctx.post(right, ctx.size_bytes // n)
        yield ctx.recv(left, ctx.size_bytes // n)
        yield ctx.endpoint()
    if i == 0:
        yield ctx.wait(1000)


def positions_as_ids(ctx):
    """The same ring written with positions where NPU ids belong (right = index + 1)."""
    n, i = len(ctx.members), ctx.index
    for _step in range(2 * (n - 1)):
        ctx.post((i + 1) % n, ctx.size_bytes // n)
        yield ctx.recv((i - 1) % n, ctx.size_bytes // n)
        yield ctx.endpoint()


def star(ctx, root):
    """Everyone sends its buffer to the root (a position the logical hook picks)."""
    if ctx.index == root:
        for member in ctx.members:
            if member != ctx.npu_id:
                yield ctx.recv(member, ctx.size_bytes)
    else:
        yield ctx.send(ctx.members[root], ctx.size_bytes)


def root_yielded(dim):
    """collectives/logical.py's hook with a slip: the root yielded, not returned as (root,)."""
    yield 0


STAR_YIELDED = CollectiveAlgorithm("star_yielded", star, ring_final_size, kinds=frozenset({ALL_REDUCE}),
                                   logical=root_yielded)


FIRST_WAITS_CLAIMED = CollectiveAlgorithm("first_waits", first_waits, ring_final_size, kinds=frozenset({ALL_REDUCE}),
                                          rotation_symmetric=True)  # a wrong claim: index 0 waits longer
