"""Round sixteen's researcher module, written from docs/backends.md, docs/collectives.md,
collectives/README.md, docs/generators.md and docs/megatron.md: a backend that counts in
``Decimal``, a chordal ring, a direct reduce-scatter, a generator that hands back a ``Path``,
and GPipe as a Megatron pipeline schedule, each with the mistakes a first try makes."""

import json
from decimal import Decimal
from pathlib import Path

from simpy_astra.collectives.base import REDUCE_SCATTER, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec, register
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.link import LinkElement
from simpy_astra.topologies import BasicTopology
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import Kind, Task

#: the overheads at the two ends of a message, in exact decimal ns: 600.5 ns, cut to 600
OVERHEADS_NS = (Decimal("300.25"), Decimal("300.25"))


class DecimalLogGP(CongestionUnawareNetwork):
    """docs/backends.md's LogGP, its send and receive overheads counted in Decimal."""

    def message_delay_ns(self, src, dst, size_bytes):
        wire_ns = super().message_delay_ns(src, dst, size_bytes)
        return sum(OVERHEADS_NS, start=Decimal(wire_ns))


def build_loggp16(env, dims, source, config=None):
    return DecimalLogGP(env, dims)


LOGGP16 = register(BackendSpec("loggp16", "analytical plus Decimal overheads per message", build_loggp16,
                               folds="pairs", folded=None))


class DecimalPacedLink(LinkElement):
    """simpy_astra/network/README.md's paced link, its gap before each item kept exact: a
    Decimal of ns (a fraction cut, as a link cuts its own times)."""

    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: str = "0"):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.gap_ns = Decimal(gap_ns)

    def hold_ns(self, item):
        return self.gap_ns


class ChordalRing(BasicTopology):
    """A ring whose NPUs also link to the NPU opposite (n even): i -> i +- 1 and i -> i + n/2.
    A message takes the chord when that saves hops, then the ring the short way."""

    def _steps(self, src, dst):
        n, half = self.npus_count, self.npus_count // 2
        ahead = (dst - src) % n
        chord = min(ahead, n - ahead) > 1 + min(abs(ahead - half), n - abs(ahead - half))
        start = (src + half) % n if chord else src
        ahead = (dst - start) % n
        step = 1 if ahead <= n - ahead else -1
        return ([start] if chord else []) + [(start + step * k) % n for k in range(1, min(ahead, n - ahead) + 1)]

    def hops(self, src, dst):
        return len(self._steps(src, dst))

    def links(self):
        n = self.npus_count
        return sorted({(i, (i + d) % n) for i in range(n) for d in (1, -1, n // 2)})

    def route(self, src, dst):
        return [src, *self._steps(src, dst)]


class ChordalRingFloatHops(ChordalRing):
    """A first try: hops worked out as a float (half the ring, divided)."""

    def hops(self, src, dst):
        return len(self._steps(src, dst)) / 1


def direct_reduce_scatter(ctx):
    """Every member sends each other member its S/n piece at once, then reduces the n - 1 it
    received in one endpoint."""
    n, piece = len(ctx.members), ctx.size_bytes // len(ctx.members)
    others = [m for m in ctx.members if m != ctx.npu_id]
    for peer in others:
        ctx.post(peer, piece)
    yield ctx.env.all_of([ctx.recv(peer, piece) for peer in others])
    yield ctx.endpoint(reduce_bytes=(n - 1) * piece)


DIRECT_RS = CollectiveAlgorithm("direct_rs16", direct_reduce_scatter, ring_final_size,
                                kinds=frozenset({REDUCE_SCATTER}))


def direct_reduce_scatter_off_by_one(ctx):
    """A first try that sends to every id after its own, the last NPU's peers past the ring."""
    piece = ctx.size_bytes // len(ctx.members)
    for k in range(1, len(ctx.members)):
        ctx.post(ctx.npu_id + k, piece)
    yield ctx.endpoint()


OFF_BY_ONE_RS = CollectiveAlgorithm("off_by_one_rs16", direct_reduce_scatter_off_by_one, ring_final_size,
                                    kinds=frozenset({REDUCE_SCATTER}))


def pipeline_path(params, prefix):
    """docs/generators.md's pipeline, its stages in pairs as a group, returning the comm-group
    JSON as a pathlib.Path (the docs say 'the path')."""
    stages, size, compute_us = params["stages"], params["size"], params["compute_us"]
    for s in range(stages):
        nodes, after = [], []
        if s > 0:
            nodes.append(make_node(0, "recv", COMM_RECV_NODE, attrs={
                "is_cpu_op": False, "comm_src": s - 1, "comm_size": size, "comm_tag": 1}))
            after = [0]
        nodes.append(make_node(1, "forward", COMP_NODE, deps=after, duration_micros=compute_us,
                               attrs={"is_cpu_op": False}))
        if s < stages - 1:
            nodes.append(make_node(2, "send", COMM_SEND_NODE, deps=[1], attrs={
                "is_cpu_op": False, "comm_dst": s + 1, "comm_size": size, "comm_tag": 1}))
        write_et(f"{prefix}.{s}.et", nodes)
    groups = Path(prefix + ".json")
    groups.write_text(json.dumps({str(1 + s // 2): [s, s + 1] for s in range(0, stages - 1, 2)}))
    return groups


def gpipe(stage, pp, micro_batches, chunks):
    """GPipe: every micro-batch forward, then every backward, last first."""
    return [Task(Kind.FORWARD, m, 0) for m in range(micro_batches)] + \
        [Task(Kind.BACKWARD, m, 0) for m in reversed(range(micro_batches))]


def gpipe_endless(stage, pp, micro_batches, chunks):
    """A first try at GPipe as a generator, its loop over micro-batches with no end."""
    m = 0
    while True:
        yield Task(Kind.FORWARD, m % micro_batches, 0)
        m += 1


registry.register("gpipe16", gpipe)
