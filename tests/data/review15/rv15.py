"""A backend of a researcher's own that posts each message from a process of its own, in the
instant it was handed (docs/backends.md: a message may be posted later than its ``send``)."""

import simpy

from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class FromItsProcess(CongestionUnawareNetwork):
    pair_delays_only = False

    def __init__(self, env, dims):
        super().__init__(env, dims)
        self.handed = simpy.Store(env)
        env.process(self.poster(env))

    def send(self, src, dst, tag, size, fn, arg):
        self.handed.put((src, dst, tag, size, fn, arg))

    def poster(self, env):
        while True:
            message = yield self.handed.get()
            entry = self.board.post_send(*message)
            self.board.arrive_after(self.message_delay_ns(message[0], message[1], message[3]), entry)


FROM_ITS_PROCESS = BackendSpec("from_its_process", "posts each message from a process of its own",
                               lambda env, dims, source, config=None: FromItsProcess(env, dims), folds=None,
                               folded=None)
