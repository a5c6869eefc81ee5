"""The researcher's module of round 10, written from docs/collectives.md, collectives/README.md,
docs/backends.md, simpy_astra/network/README.md, docs/generators.md and docs/megatron.md."""

import json

from hypercube import Hypercube

from simpy_astra import collectives, topologies
from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE as COLL_ALL_REDUCE
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMP_NODE
from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import Kind, Task


def recursive_doubling(ctx):
    """All-reduce in log2 n steps: the whole buffer to and from index XOR 2^k, then reduce it."""
    n, i, k = len(ctx.members), ctx.index, 1
    while k < n:
        peer = ctx.members[i ^ k]
        ctx.post(peer, ctx.size_bytes)
        yield ctx.recv(peer, ctx.size_bytes)
        yield ctx.endpoint(reduce_bytes=ctx.size_bytes)
        k *= 2


def one_shot(ctx):
    """NCCL-style one-shot all-reduce: the whole buffer to every other member at once, then
    one reduction of everything that arrived."""
    others = [m for m in ctx.members if m != ctx.npu_id]
    for m in others:
        ctx.post(m, ctx.size_bytes)
    yield ctx.env.all_of([ctx.recv(m, ctx.size_bytes) for m in others])
    yield ctx.endpoint(reduce_bytes=ctx.size_bytes * len(others))


def one_shot_traffic(shape):
    """What one member sends in a phase: the whole buffer to each other member."""
    return [(p, shape.size_bytes) for p in range(len(shape.members)) if p != shape.index]


class Cube(Hypercube):
    """The docs' hypercube (examples/hypercube.py) refusing a count that is not a power of two."""

    name = "Cube"

    def __init__(self, npus_count, bandwidth_gbps, latency_ns):
        if npus_count < 2 or npus_count & (npus_count - 1):
            raise ValueError(f"a cube has a power of two of NPUs (got {npus_count}): write npus_count: [8]")
        super().__init__(npus_count, bandwidth_gbps, latency_ns)


class Duplicating(CongestionUnawareNetwork):
    """Delivers every message twice, the copy 100 ns after it (a retransmission): schedules
    one entry's arrival twice, which the board cannot do."""

    pair_delays_only = False

    def send(self, src, dst, tag, size, fn, arg):
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        delay = self.message_delay_ns(src, dst, size)
        self.board.arrive_after(delay, entry)
        self.board.arrive_after(delay + 100, entry)


DUPLICATING = BackendSpec("duplicating", "x", lambda env, dims, source, config=None: Duplicating(env, dims),
                          folds=None, folded=None)


def tp_then_dp(params, prefix):
    """Each rank computes 10 us, all-reduces `size` bytes in its tensor-parallel pair, then in
    its data-parallel group; the groups go to prefix.json and their dimensions into every rank's
    metadata (docs/generators.md), so the breakdown says comm.tp and comm.dp."""
    n, size, tp = params["num_npus"], params["size"], 2
    groups = {str(g + 1): [g * tp + r for r in range(tp)] for g in range(n // tp)}
    groups.update({str(n // tp + r + 1): list(range(r, n, tp)) for r in range(tp)})
    names = json.dumps([["tp", 1, n // tp], ["dp", n // tp + 1, n // tp + tp]])
    for rank in range(n):
        coll = {"is_cpu_op": False, "comm_type": COLL_ALL_REDUCE, "comm_size": size}
        write_et(f"{prefix}.{rank}.et", [
            make_node(0, "forward", COMP_NODE, duration_micros=10, attrs={"is_cpu_op": False}),
            make_node(1, "tp", COMM_COLL_NODE, deps=[0], attrs={**coll, "pg_name": str(rank // tp + 1)}),
            make_node(2, "dp", COMM_COLL_NODE, deps=[1], attrs={**coll, "pg_name": str(n // tp + rank % tp + 1)}),
        ], metadata_attrs={"pg_names": names})
    with open(prefix + ".json", "w") as f:
        json.dump(groups, f)
    return prefix + ".json"


def interleaved_again(stage, pp, micro_batches, chunks):
    """Megatron's interleaved 1F1B, handed on as a schedule of one's own."""
    return registry.schedule("interleaved-1f1b")(stage, pp, micro_batches, chunks)


interleaved_again.overlap_p2p_comm = True  # it waits for gradient sends as Megatron's does


def interleaved_blocking(stage, pp, micro_batches, chunks):
    """The same order, saying nothing of its gradient sends (each is waited at once)."""
    return registry.schedule("interleaved-1f1b")(stage, pp, micro_batches, chunks)


def gpipe(stage, pp, micro_batches, chunks):
    """GPipe: every forward, then every backward, last micro-batch first."""
    return ([Task(Kind.FORWARD, m, 0) for m in range(micro_batches)]
            + [Task(Kind.BACKWARD, m, 0) for m in reversed(range(micro_batches))])


collectives.register("rd", CollectiveAlgorithm("rd", recursive_doubling, ring_final_size,
                                               kinds=frozenset({ALL_REDUCE}), xor_symmetric=True))
collectives.register("one_shot", CollectiveAlgorithm("one_shot", one_shot, ring_final_size,
                                                     kinds=frozenset({ALL_REDUCE}), rotation_symmetric=True,
                                                     traffic=one_shot_traffic))
topologies.register("Cube", Cube)
registry.register("gpipe10", gpipe)
