"""A LogGP-like network backend (docs/backends.md, "A backend of your own"): the analytical
backend's delay plus a send and a receive overhead per message."""

from simpy_astra.network.backends import BackendSpec, register
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork

O_NS = 300  # per-message overhead at each end


class LogGP(CongestionUnawareNetwork):
    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) + 2 * O_NS


LOGGP = register(BackendSpec("loggp", "analytical plus a send and a receive overhead per message",
                             lambda env, dims, source, config=None: LogGP(env, dims), folds="pairs",
                             folded=None))
