"""A switch model of one's own (simpy_astra/network/README.md, "The switch contract"): an item
leaves delay_ns after it arrived; examples/paced_switch.yaml names it."""

from simpy_astra.network.switch import SwitchElement


class SlowSwitch(SwitchElement):
    def __init__(self, env, device, forward, delay_ns: int = 0):
        self.delay_ns = delay_ns
        super().__init__(env, device, forward)

    def release_ns(self, item, arrived_ns):   # when an item that arrived may leave
        return arrived_ns + self.delay_ns
