"""What a chunk's forward, recomputation or backward is made of, in order: compute between
tensor-parallel collectives, the collectives, and markers without time (where a layer's weight
gradients are complete, where the forward starts reading a layer's weights, where the host
waits for the GPU, where the compute waits for collectives beside it). The
schedule turns them into trace nodes; each kind is its own type so nothing tells them apart
by sentinel values."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Compute:
    """The kernels between two collectives: their time by kind (``gemm``, ``attention``,
    ``elementwise``), how many the host launches, and the host's work around them beyond
    those launches (``host_s``: Transformer Engine modules' Python)."""

    label: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    kernels: int = 0
    host_s: float = 0.0

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())


@dataclass(frozen=True)
class Collective:
    """One NCCL call on communicator ``dim``. ``overlap``: it runs beside the next compute
    step instead of before it (the compute after both waits for both)."""

    label: str
    comm_type: int
    size_bytes: int
    overlap: bool = False
    dim: str = "tp"


@dataclass(frozen=True)
class GradsReady:
    """The weight gradients of ``params`` parameters are complete here; ``dim`` is the group
    that syncs them (``edp`` for experts' weights)."""

    params: int
    dim: str = "dp"
    label: str = "grads"


@dataclass(frozen=True)
class ParamsUsed:
    """The forward reads ``params`` parameters (synced over ``dim``) from here on: a layer's
    weights, which ``--overlap-param-gather`` must have gathered by now."""

    params: int
    dim: str = "dp"
    label: str = "params"
    #: of ``params``, the weights of Transformer Engine's linear layers (kept in FP8 with
    #: ``--fp8-param-gather``, one byte each to gather)
    fp8: int = 0


@dataclass(frozen=True)
class Wait:
    """The compute after this point waits for the collectives launched beside the compute
    before it (Megatron's ``handle.wait()`` right after the GEMM an async collective overlaps):
    those collectives hold their SMs only over that GEMM, and what follows runs on all SMs."""

    label: str = "wait"


@dataclass(frozen=True)
class HostSync:
    """The host waits here for the GPU to finish what it has issued (``torch.cuda.synchronize``,
    a tensor's ``.cpu()`` or ``.item()``, a CUDA tensor read as a bool): what follows is
    issued on an idle GPU, which waits for the host's first launch after it."""

    label: str = "sync"


Step = Compute | Collective | GradsReady | ParamsUsed | Wait | HostSync


class StepBuilder:
    """Collects compute time into the current step until a collective or a marker closes it.

    ``weights``: a second builder that takes the weight-gradient work (:meth:`wgrad`,
    :meth:`grads`) for a pipeline schedule that splits the backward into its input gradient
    (this builder) and its weight gradient, run later as a task of its own (zero-bubble
    schedules); without it that work stays in place."""

    def __init__(self, weights: StepBuilder | None = None) -> None:
        self.steps: list[Step] = []
        self.current = Compute()
        self.overlapping = False  # a collective launched beside the compute not yet waited for
        self.weights = weights

    def wgrad(self, kind: str, seconds: float, kernels: int = 1) -> None:
        """Kernels that compute or accumulate weight gradients: here, or in :attr:`weights`."""
        (self.weights or self).add(kind, seconds, kernels)

    def add(self, kind: str, seconds: float, kernels: int = 1) -> None:
        """``kernels`` kernels of ``seconds`` in all (each one the host must launch)."""
        self.current.seconds[kind] = self.current.seconds.get(kind, 0.0) + seconds
        self.current.kernels += kernels

    def host(self, seconds: float) -> None:
        """Host work beside the kernels it launches (a module's Python), in the current step."""
        self.current.host_s += seconds

    def add_copies(self, one: StepBuilder, times: int) -> None:
        """``times`` copies of the compute ``one`` collected (its weight-gradient work into
        :attr:`weights`): ten thousand experts' identical kernels charged at once, not one by one."""
        for source, target in ((one, self), (one.weights, self.weights or self)):
            if source is None:
                continue
            if source.steps:
                raise ValueError("add_copies: the copied builder must hold compute only")
            for kind, seconds in source.current.seconds.items():
                target.add(kind, seconds * times, 0)
            target.current.kernels += source.current.kernels * times
            target.current.host_s += source.current.host_s * times

    def comm(self, label: str, comm_type: int, size_bytes: int, overlap: bool = False, dim: str = "tp") -> None:
        if size_bytes <= 0:
            return
        computed = bool(self.current.seconds)  # a blocking call after compute: what ran beside is done
        self.close(label + ".before")
        self.steps.append(Collective(label, comm_type, size_bytes, overlap, dim))
        self.overlapping = overlap or (self.overlapping and not computed)

    def wait(self, label: str = "wait") -> None:
        """Wait here for the collectives running beside the compute (none: nothing to do)."""
        if not self.overlapping:
            return
        self.close(label + ".before")
        self.steps.append(Wait(label))
        self.overlapping = False

    def sync(self, label: str = "sync") -> None:
        """The host synchronises with the GPU here (:class:`HostSync`)."""
        self.close(label + ".before")
        self.steps.append(HostSync(label))

    def grads(self, params: int, dim: str = "dp") -> None:
        if self.weights is not None:
            self.weights.grads(params, dim)
            return
        if params <= 0:
            return
        self.close("grads.before")
        self.steps.append(GradsReady(params, dim))

    def params(self, params: int, dim: str = "dp", fp8: int = 0) -> None:
        if params <= 0:
            return
        self.close("params.before")
        self.steps.append(ParamsUsed(params, dim, fp8=fp8))

    def close(self, label: str) -> None:
        if self.current.seconds:
            self.current.label = label
            self.steps.append(self.current)
        self.current = Compute()

    def done(self, label: str) -> list[Step]:
        self.close(label)
        return self.steps
