"""A collective's chunks and their phases, as the algorithms see them.

:class:`Phase` implements :class:`~simpy_astra.collectives.base.PhaseContext` (``ctx``) on
its NPU's system layer (:mod:`simpy_astra.engine.system_layer`, which queues and starts the
phases: :class:`PhaseHost` is what a phase asks of it), its clock and the network: the calls
an algorithm makes per message, checked at the boundary and kept cheap. A :class:`Stream`
is one chunk moving through its phases; a :class:`ChunkCounter` counts a collective's chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from simpy_astra.collectives.base import CollectiveError
from simpy_astra.collectives.logical import LogicalDim
from simpy_astra.engine.phase_process import PhaseProcess, PostCount, Signal, describe, users_algorithm
from simpy_astra.engine.tags import native_tag, stream_tag
from simpy_astra.infra.horizon import HORIZON_NS, whole_ns
from simpy_astra.plugins import shown, users_int

if TYPE_CHECKING:
    from simpy_astra.engine.events import NpuClock

LOCAL_RING_ENDPOINT_DELAY_NS = 10  # hard-wired in the reference for group-subset rings


class PhaseHost(Protocol):
    """What a phase asks of its NPU's system layer (a
    :class:`~simpy_astra.engine.system_layer.SystemLayer`)."""

    npu_id: int
    #: the physical NPU (a job's rank npu_id runs on another), as stall reports name NPUs
    device_id: int
    total_npus: int
    endpoint_delay_ns: int
    clock: NpuClock
    network: Any

    def reduction_ns(self, size_bytes: int) -> int: ...

    def proceed(self, stream: Stream) -> None: ...


class ChunkCounter:
    """One collective on one NPU (ASTRA-sim's ``DataSet``): done when all of its chunks finished."""

    __slots__ = ("total", "finished", "on_done")

    def __init__(self, total: int, on_done: Callable[[], None]) -> None:
        self.total = total
        self.finished = 0
        self.on_done = on_done

    def stream_finished(self) -> None:
        self.finished += 1
        if self.finished == self.total:
            self.on_done()


class Stream:
    """One chunk of a collective moving through its phases."""

    __slots__ = ("stream_id", "tag", "priority", "phases", "next_phase", "queue_id",
                 "initialized", "chunks_left", "current")

    def __init__(self, stream_id: int, phases: list[Phase], priority: int, chunks_left: ChunkCounter) -> None:
        self.stream_id = stream_id
        self.tag = stream_tag(stream_id)
        self.priority = priority
        self.phases = phases
        self.next_phase = 0
        self.queue_id = -1
        self.initialized = False
        self.chunks_left = chunks_left
        self.current: Phase | None = None
        for p in phases:
            p.stream = self


class Phase:
    """One phase of one chunk; implements :class:`collectives.base.PhaseContext`.

    Its algorithm runs as a :class:`~simpy_astra.engine.phase_process.PhaseProcess` (``process``, a
    :class:`simpy.Process`), resumed by its own events; the stream moves on when the
    algorithm returns."""

    __slots__ = (
        "system", "stream", "kind", "size_bytes", "final_bytes", "queue_id", "direction", "members",
        "index", "window", "local", "npu_id", "algorithm", "args", "env", "clock", "network",
        "_endpoint_ns", "process", "_posts", "_peers",
    )

    def __init__(self, system: PhaseHost, kind: str, size_bytes: int, final_bytes: int,
                 queue_id: int, direction: int, dim: LogicalDim | None, window: int | None,
                 algorithm: Callable, args: tuple) -> None:
        self.system = system
        self.env = system.clock.env
        self.clock = system.clock
        self.network = system.network
        self.stream: Stream | None = None
        self.npu_id = system.npu_id
        self.kind = kind
        self.size_bytes = size_bytes
        self.final_bytes = final_bytes
        self.queue_id = queue_id
        self.direction = direction
        self.members = dim.members if dim else ()
        self.index = dim.index if dim else 0
        self.local = dim.local if dim else False
        self._endpoint_ns = LOCAL_RING_ENDPOINT_DELAY_NS if self.local else system.endpoint_delay_ns
        self.window = window
        self.algorithm = algorithm
        self.args = args
        self.process: PhaseProcess | None = None  # the algorithm's process once started
        self._posts = PostCount() if users_algorithm(algorithm) else None  # ours always yield
        #: the NPUs a user's phase may name as peers (ours name only members: not checked)
        self._peers = frozenset(self.members) if self._posts is not None and self.members else None

    # -- driven by the system layer
    def start(self) -> None:
        generator = self.algorithm(self, *self.args)
        run = self.process = PhaseProcess(self.env, generator, self._posts is not None)
        if run.fired:  # a phase takes time: no native algorithm ends before its first wait
            raise CollectiveError(f"collective algorithm {describe(self.algorithm)} ended in the instant it "
                                  f"started, without waiting (it returned before it yielded, or yielded only "
                                  f"events that had already happened, such as a signal it fired itself); a "
                                  f"collective phase waits for at least one event (yield ctx.endpoint(), "
                                  f"ctx.recv(...), ...)")
        else:
            run.wait_in_place(self._ended)

    def _ended(self, _value: Any) -> None:
        posts = self._posts
        if posts is not None and posts.pending and not self.process.interrupted:
            raise CollectiveError(
                f"NPU {self.npu_id}: collective algorithm {describe(self.algorithm)} returned at "
                f"{self.env.now:,} ns with {posts.pending} receive(s) it posted still to arrive, so its "
                f"collective would end without that data; yield each ctx.recv(...) (or ctx.env.all_of of "
                f"them) before returning")
        self.system.proceed(self.stream)

    def describe(self) -> str:
        """For stall reports: which NPU (physical, as the board's messages name it), collective
        and chunk this phase belongs to."""
        stream = -1 if self.stream is None else self.stream.stream_id
        return f"NPU {self.system.device_id} {self.kind} phase of chunk stream {stream}"

    # -- PhaseContext
    def _misuse(self, call: str, problem: str) -> CollectiveError:
        """One line for a context call the contract does not allow, naming the algorithm."""
        return CollectiveError(f"NPU {self.npu_id}: collective algorithm {describe(self.algorithm)}: a "
                               f"collective's ctx.{call}: {problem}")

    def _check_peer(self, what: str, peer: Any, size_bytes: Any) -> tuple[int, int]:
        """A peer that exists and a size >= 0 (no wrap-around, no negative bytes), as ints (numpy's too)."""
        npus, peer, size_bytes = self.system.total_npus, users_int(peer), users_int(size_bytes)
        if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < npus or peer == self.npu_id:
            problem = "is this NPU itself" if peer == self.npu_id else f"does not exist (NPUs 0..{npus - 1})"
            raise self._misuse(f"{what}({shown(peer, 60)}, ...)", f"the peer {problem}; name another NPU of ctx.members")
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
            raise self._misuse(f"{what}(..., {shown(size_bytes, 60)})",
                               f"a message size is an integer number of bytes >= 0{_divided(size_bytes)}")
        return peer, size_bytes

    def _users_call(self, what: str, peer: int) -> None:
        """A user's phase's message call, held to what the native ones keep by construction:
        a peer of this phase's members (an id from ``ctx.members``: a position used as an id
        sent into another group, which stalled, or in a folded run went unseen), and time
        passing (:class:`PostCount`)."""
        if self._posts.too_many(self.env.now):
            raise self._misuse(f"{what}({peer}, ...)", self._posts.problem(self.env.now))
        if self._peers is not None and peer not in self._peers:
            raise self._misuse(f"{what}({peer}, ...)", f"NPU {peer} is not a member of this phase, "
                               f"{shown(self.members, 60)}; name peers by their ids in ctx.members "
                               f"(ctx.members[k]: ctx.index is this NPU's position among them, not an id)")

    def _tag(self, what: str, tag: Any) -> int:
        """A workload's tag (an integer >= 0) on the wire; None, the chunk's own, is the callers'."""
        tag = users_int(tag)
        if isinstance(tag, bool) or not isinstance(tag, int) or tag < 0:
            raise self._misuse(f"{what}(..., tag={shown(tag, 60)})", "a tag is an integer >= 0 (or None: this chunk's own)")
        return native_tag(tag)

    def send(self, dst: int, size_bytes: int, tag: int | None = None) -> Signal:
        if type(dst) is not int or type(size_bytes) is not int or size_bytes < 0 \
                or not 0 <= dst < self.system.total_npus or dst == self.npu_id:
            dst, size_bytes = self._check_peer("send", dst, size_bytes)
        if self._posts is not None:
            self._users_call("send", dst)
        arrived = Signal(self.env)
        tag = self.stream.tag if tag is None else self._tag("send", tag)
        self.network.send(self.npu_id, dst, tag, size_bytes, self._sent, arrived)
        return arrived

    def post(self, dst: int, size_bytes: int, tag: int | None = None) -> None:
        """:meth:`send` without an event to fire on arrival: native algorithms never wait on
        one, and making and settling a Signal per message cost them about 6% of a run."""
        if type(dst) is not int or type(size_bytes) is not int or size_bytes < 0 \
                or not 0 <= dst < self.system.total_npus or dst == self.npu_id:
            dst, size_bytes = self._check_peer("post", dst, size_bytes)
        if self._posts is not None:
            self._users_call("post", dst)
        tag = self.stream.tag if tag is None else self._tag("post", tag)
        self.network.send(self.npu_id, dst, tag, size_bytes, self._posted, None)

    def _posted(self, _nothing: None) -> None:
        """A :meth:`post` arrived: nothing to do. A bound method of the phase all the same,
        so that a stall report can say which phase sent."""

    def _sent(self, arrived: Signal) -> None:
        """A send arrived (in the network's event): fire its event if someone waits on it in
        place; native algorithms never do, and then it is only settled (the SimPy fields
        stay in ``engine/events.py``). A bound method of the phase, so that a stall report can say
        which phase sent."""
        if arrived.resume is not None:
            arrived.fire()
        else:
            arrived.settle()

    def recv(self, src: int, size_bytes: int, tag: int | None = None) -> Signal:
        if type(src) is not int or type(size_bytes) is not int or size_bytes < 0 \
                or not 0 <= src < self.system.total_npus or src == self.npu_id:
            src, size_bytes = self._check_peer("recv", src, size_bytes)
        if self._posts is not None:
            self._users_call("recv", src)
        received = Signal(self.env)
        tag = self.stream.tag if tag is None else self._tag("recv", tag)
        if self._posts is None:
            self.network.recv(self.npu_id, src, tag, size_bytes, self._received, received)
        else:  # the user's: counted until it arrives (checked when the phase returns)
            self._posts.pending += 1
            self.network.recv(self.npu_id, src, tag, size_bytes, self._received_users, received)
        return received

    def _received(self, received: Signal) -> None:
        """The message is here (in the network's event): resume who waits on it. A bound
        method of the phase, so that a stall report can say which phase waits."""
        received.fire()

    def _received_users(self, received: Signal) -> None:
        """:meth:`_received` for a user's phase, which counts its receives still to arrive."""
        self._posts.pending -= 1
        received.fire()

    def endpoint(self, reduce_bytes: int = 0) -> Signal:
        back = Signal(self.env)
        if reduce_bytes:
            reduce_bytes = users_int(reduce_bytes)
            if type(reduce_bytes) is not int or reduce_bytes < 0:
                raise self._misuse(f"endpoint(reduce_bytes={shown(reduce_bytes, 60)})",
                                   f"the bytes to reduce are an integer >= 0{_divided(reduce_bytes)}")
            back.result = reduce_bytes  # until it fires: what to reduce after the delay
            self.clock.register(self._endpoint_ns, self._reduce, back)
        else:
            self.clock.register(self._endpoint_ns, Signal.fire, back)
        return back

    def _reduce(self, back: Signal) -> None:
        self.clock.register(self.system.reduction_ns(back.result), Signal.fire, back)

    def wait(self, delay_ns: int) -> Signal:
        if type(delay_ns) is not int or not 0 <= delay_ns <= HORIZON_NS:
            whole = whole_ns(delay_ns)
            if whole is None:
                raise self._misuse(f"wait({shown(delay_ns, 60)})", "a delay is a finite number of ns >= 0 (a fraction is "
                                                         "cut: simulated time is counted in whole ns)")
            delay_ns = whole
        later = Signal(self.env)
        self.clock.register(delay_ns, Signal.fire, later)
        return later

    def spawn(self, generator) -> PhaseProcess:
        if not hasattr(generator, "throw"):  # PhaseProcess's own error names no spawn and no fix
            name = getattr(generator, "__name__", None)
            fix = f"call it: ctx.spawn({name}(...))" if callable(generator) and name else "a generator's call"
            raise self._misuse("spawn(...)", f"takes a running generator, not {_quoted(generator)}: {fix}")
        return PhaseProcess(self.env, generator, self._posts is not None)  # the user's if the phase is

    def signal(self) -> Signal:
        return Signal(self.env)


def _quoted(value: object) -> str:
    """``value`` in an error: the function ``name``, else its repr cut short."""
    name = getattr(value, "__qualname__", None)
    if callable(value) and name:
        return f"the function {name}"
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def _divided(size_bytes: object) -> str:
    """The fix for a byte count an algorithm computed as a float (``ctx.size_bytes / n``, even
    when it divides evenly), else nothing."""
    return "; a size divided with / is a float: divide with // (ctx.size_bytes // n)" \
        if isinstance(size_bytes, float) else ""
