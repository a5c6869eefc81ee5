"""The researcher's module of round 13 (tests/test_extensions_round13.py), written from the docs."""

from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class Resends(CongestionUnawareNetwork):
    """docs/backends.md's Trunk shape, with a slip: a retransmission modelled by posting the
    message again and giving both copies their arrival."""

    pair_delays_only = False
    attempts = 2

    def send(self, src, dst, tag, size, fn, arg):
        for _attempt in range(self.attempts):
            entry = self.board.post_send(src, dst, tag, size, fn, arg)
            self.board.arrive_after(self.message_delay_ns(src, dst, size), entry)


class SendsOnce(Resends):
    attempts = 1


RESENDS = BackendSpec("resends", "posts each message twice",
                      lambda env, dims, source, config=None: Resends(env, dims), folds=None, folded=None)
SENDS_ONCE = BackendSpec("sends_once", "posts each message once",
                         lambda env, dims, source, config=None: SendsOnce(env, dims), folds=None, folded=None)


def slash_ring(ctx):
    """docs/collectives.md's simple_ring with its message size divided by ``/``, as a
    researcher writes it first: a float, even where S/n is whole."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    msg = ctx.size_bytes / n
    for step in range(2 * (n - 1)):
        ctx.send(right, msg)
        yield ctx.recv(left, msg)
        yield ctx.endpoint(reduce_bytes=msg if step < n - 1 else 0)


def gpipe_yielded(stage, pp, micro_batches, chunks):
    """GPipe as a generator function: every forward, then every backward in reverse."""
    from simpy_astra.workloads.schedules.task import Kind, Task

    for m in range(micro_batches):
        yield Task(Kind.FORWARD, m, 0)
    for m in reversed(range(micro_batches)):
        yield Task(Kind.BACKWARD, m, 0)


def gpipe_listed(stage, pp, micro_batches, chunks):
    return list(gpipe_yielded(stage, pp, micro_batches, chunks))
