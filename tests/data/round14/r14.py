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
