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
            if item is not None:
                yield from self.transmit(item)
            else:
                yield self.env.timeout(0)


class PollingSwitch(SwitchElement):
    """The same mistake in a switch's serving loop."""

    def run(self):
        while True:
            yield self.env.timeout(0)


# -- backends that subtract a saving, or mistake the unit ------------------------------------------

from simpy_astra.network.backends import BackendSpec  # noqa: E402 - kept beside the backends it builds
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork  # noqa: E402

SAVING_NS = 1_000  # what an offload engine saves per message, taken off the analytical delay


class Offload(CongestionUnawareNetwork):
    """The analytical delay less a fixed saving: below the saving it goes negative (an int)."""

    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) - SAVING_NS


class Attoseconds(CongestionUnawareNetwork):
    """The analytical delay written in attoseconds (10^-18 s) by mistake: an int past 2^63."""

    def message_delay_ns(self, src, dst, size_bytes):
        return super().message_delay_ns(src, dst, size_bytes) * 10**9 * 10**9


OFFLOAD = BackendSpec("offload", "analytical less a fixed saving per message",
                      lambda env, dims, source, config=None: Offload(env, dims), folds="pairs", folded=None)
ATTOSECONDS = BackendSpec("attoseconds", "analytical in the wrong unit",
                          lambda env, dims, source, config=None: Attoseconds(env, dims), folds="pairs", folded=None)


# -- pipeline schedules built with numpy -----------------------------------------------------------

import numpy as np  # noqa: E402

from simpy_astra.workloads.schedules.task import Kind, Task  # noqa: E402


def gpipe_np(stage, pp, micro_batches, chunks):
    """GPipe (every forward, then every backward in reverse) over numpy's micro-batch ids."""
    ids = np.arange(micro_batches)
    return [Task(Kind.FORWARD, m, 0) for m in ids] + [Task(Kind.BACKWARD, m, 0) for m in ids[::-1]]


def gpipe_words(stage, pp, micro_batches, chunks):
    """GPipe with the kinds written as words, not Kind members."""
    return ([Task("forward", m, 0) for m in range(micro_batches)]
            + [Task("backward", m, 0) for m in reversed(range(micro_batches))])


# -- a generator that names its groups' dimensions -------------------------------------------------

import json  # noqa: E402

from simpy_astra.workloads.chakra import make_node, write_et  # noqa: E402
from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE  # noqa: E402

#: ways to write pg_names: the docs' runs of group ids, and mistakes a reader makes
PG_NAMES = {"runs": json.dumps([["tp", 1, 1]]), "word": "tp", "pairs": json.dumps([["tp", 1]]),
            "mapping": json.dumps({"tp": 1}), "backwards": json.dumps([["tp", 2, 1]])}


def tp_all_reduce(params, prefix):
    """Every NPU all-reduces ``size`` bytes in group 1 (all of them), named tp as ``pg`` says."""
    for rank in range(params["num_npus"]):
        node = make_node(0, "all_reduce", COMM_COLL_NODE, attrs={
            "is_cpu_op": False, "comm_type": ALL_REDUCE, "comm_size": params["size"], "pg_name": "1"})
        write_et(f"{prefix}.{rank}.et", [node], metadata_attrs={"pg_names": PG_NAMES[params["pg"]]})
    with open(prefix + ".json", "w") as f:
        json.dump({"1": list(range(params["num_npus"]))}, f)
    return prefix + ".json"


# -- a switch that forwards at once, and also queues what it forwarded ------------------------------

class CutThrough(SwitchElement):
    """Hands each item on the moment it arrives; the base's receive() kept from the docs'
    example by a slip, so the base's loop hands it on a second time."""

    def receive(self, item):
        self.send_on(item)
        super().receive(item)


class CutThroughOnce(SwitchElement):
    """The same switch without the slip."""

    def receive(self, item):
        self.send_on(item)


# -- a link whose dequeue forgets to remove what it gives ------------------------------------------

from collections import deque  # noqa: E402


class Forgetful(LinkElement):
    """FIFO of its own whose dequeue looks at the head and forgets to remove it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.waiting = deque()

    def enqueue(self, item):
        self.waiting.append(item)

    def dequeue(self):
        return self.waiting[0] if self.waiting else None


class NotYet(LinkElement):
    """A serving loop of its own that takes the head out, and puts it back while the link's
    first 1,000 ns have not passed (a start-up delay): the same item comes out again, rightly."""

    def run(self):
        while True:
            item = self.dequeue()
            if item is None:
                yield self.env.timeout(100)
            elif self.env.now < 1000:
                self.enqueue(item)
                yield self.env.timeout(1000 - self.env.now)
            else:
                yield from self.transmit(item)

    def dequeue(self):
        return super().dequeue()


class SendsTwice(LinkElement):
    """A lossy link written as its own loop: every item's first attempt is lost, so it is
    transmitted again (the slip: each transmission hands the item on at the far end)."""

    def run(self):
        while True:
            item = self.dequeue()
            if item is None:
                yield self.env.timeout(1)
                continue
            yield from self.transmit(item)  # lost
            yield from self.transmit(item)  # sent again
