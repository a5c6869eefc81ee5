"""A researcher's extensions, round 12: written from the docs, each with one mistake or one
idea the docs invite but do not show (tests/test_extensions_round12.py runs them)."""

from simpy_astra.network.link import LinkElement
from simpy_astra.network.switch import SwitchElement


class PollingLink(LinkElement):
    """A serving loop of one's own that polls its queue: when nothing waits it yields a
    timer of 0 ns, meaning "look again soon", which never lets the clock move."""

    def run(self):
        while True:
            item = self.dequeue()
            if item is None:
                yield self.env.timeout(0)
                continue
            yield from self.transmit(item)


class PollingSwitch(SwitchElement):
    """The same mistake in a switch's serving loop."""

    def run(self):
        while True:
            yield self.env.timeout(0)
