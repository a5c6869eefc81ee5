"""A link model of one's own (simpy_astra/network/README.md, "The link contract"): every item
waits gap_ns before it starts; examples/paced_switch.yaml names it."""

from simpy_astra.network.link import LinkElement


class PacedLink(LinkElement):
    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int = 0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.gap_ns = gap_ns

    def hold_ns(self, item):          # when: wait gap_ns before each item starts
        return self.gap_ns
