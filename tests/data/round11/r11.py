"""The researcher's module of round 11, written from collectives/README.md, docs/backends.md,
simpy_astra/network/README.md and docs/cosimulation.md."""

from simpy_astra.collectives.base import ALL_GATHER, CollectiveAlgorithm, ring_final_size
from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.switch import SwitchElement


def ring_gather(ctx):
    """Ring all-gather: n-1 steps, each forwarding the piece that came in (S bytes each)."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    for _step in range(n - 1):
        ctx.send(right, ctx.size_bytes)
        yield ctx.recv(left, ctx.size_bytes)
        yield ctx.endpoint()


RING_GATHER = CollectiveAlgorithm("ring_gather", ring_gather, ring_final_size, kinds=frozenset({ALL_GATHER}))


class Lagging(CongestionUnawareNetwork):
    """The analytical delay plus a fixed lag; its __init__ keeps its own figure and forgets the
    base's (the researcher's slip)."""

    def __init__(self, env, dims):
        self.lag_ns = 300

    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) + self.lag_ns


LAGGING = BackendSpec("lagging", "analytical plus a fixed lag", lambda env, dims, source, config=None: Lagging(env, dims),
                      folds="pairs", folded=None)


class SlowSwitch(SwitchElement):
    """docs' examples/slow_switch.py: an item leaves delay_ns after it arrived."""

    def __init__(self, env, device, forward, delay_ns: int = 0):
        self.delay_ns = delay_ns
        super().__init__(env, device, forward)

    def release_ns(self, item, arrived_ns):
        return arrived_ns + self.delay_ns
