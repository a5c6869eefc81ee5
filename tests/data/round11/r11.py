"""The researcher's module of round 11, written from docs/backends.md."""

from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class Lagging(CongestionUnawareNetwork):
    """The analytical delay plus a fixed lag; its __init__ keeps its own figure and forgets the
    base's (the researcher's slip)."""

    def __init__(self, env, dims):
        self.lag_ns = 300

    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) + self.lag_ns


LAGGING = BackendSpec("lagging", "analytical plus a fixed lag", lambda env, dims, source, config=None: Lagging(env, dims),
                      folds="pairs", folded=None)
