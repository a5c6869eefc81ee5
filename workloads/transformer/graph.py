"""The per-pipeline-stage op graph a transformer trace is written from, and the NPU layout.

Every NPU of one pipeline stage runs the same ops; they differ only in which communicator
group a collective uses and which peer a send/receive talks to. So the graph is built once per
stage with collectives naming a *parallel dimension* (``dp``, ``tp``, ``sp``, ``ep``, ``edp``)
and sends/receives naming a *stage offset*, and the writer resolves both per NPU.

NPU layout (STAGE's): ``rank = dp_i + dp*(tp_i + tp*(sp_i + sp*pp_i))``. Communicator groups
are numbered from 1, dimension by dimension (dp, tp, sp, then ep and edp for MoE), each
dimension's groups ordered by the other coordinates with pp outermost.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from simpy_astra.workloads.chakra import types
from simpy_astra.workloads.transformer.config import TransformerConfig

# Chakra's node types and collective kinds by the short names the generators read here: its
# numbers as workloads/chakra/types.py holds them, not a copy (this one and linear_kernels' each
# had BROADCAST added by hand)
COMP, SEND, RECV, COLL = types.COMP_NODE, types.COMM_SEND_NODE, types.COMM_RECV_NODE, types.COMM_COLL_NODE
ALL_REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER = (
    types.ALL_REDUCE, types.ALL_GATHER, types.BROADCAST, types.ALL_TO_ALL, types.REDUCE_SCATTER)

Tensor = tuple[str, int]  # (name, elements)

# Every tensor name in a written trace starts with its kind, so the memory tracker can say what
# the bytes at the peak are (simpy_astra/engine/memory_tracker.py reads these prefixes).
KIND_PREFIX = {"weight": "weight/", "grad": "grad/", "optim": "optim/", "act": "act/", "tmp": "tmp/",
               "comm": "comm/"}


@dataclass(slots=True)
class Op:
    """One node of a stage's graph; ``dim``/``peer_stage`` are resolved per NPU when written."""

    name: str
    kind: int
    deps: list[int]
    inputs: list[Tensor]
    outputs: list[Tensor]
    num_ops: int = 0
    tensor_size: int = 0
    op_type: str = ""
    comm_type: int = 0
    comm_size: int = 0
    dim: str = ""  # collectives: the parallel dimension whose group runs it
    peer_stage: int = 0  # send/recv: +1 next stage, -1 previous stage
    tag: int = 0
    duration_us: int = 0  # a compute op with a known time (replayed), else timed by num_ops
    stream: str = ""  # communication: the stream it runs on beside others (``comm_stream``)
    #: compute: how long each kind of kernel in it takes, ``kind:us,...`` (``kind_split``)
    kind_split: str = ""
    #: compute: the host's work, not the GPU's (``is_cpu_op``: it holds the CPU, not the GPU)
    cpu: bool = False


@dataclass
class StageGraph:
    """Ops of one pipeline stage in issue order; ids are list indices."""

    stage: int
    ops: list[Op] = field(default_factory=list)
    producer: dict[str, int] = field(default_factory=dict)  # tensor name -> op that wrote it
    saved: set[str] = field(default_factory=set)  # activations the backward reads (physical)
    kinds: dict[str, str] = field(default_factory=dict)  # tensor name -> KIND_PREFIX key

    def add(self, op: Op) -> int:
        self.ops.append(op)
        for name, _ in op.outputs:
            self.producer.setdefault(name, len(self.ops) - 1)
        return len(self.ops) - 1

    def comp(self, name: str, num_ops: int, op_type: str, inputs: list[Tensor], output: Tensor,
             deps: list[int]) -> int:
        """A compute op; its roofline tensor size is the output's size (as STAGE's)."""
        return self.add(Op(name, COMP, [d for d in deps if d >= 0], inputs, [output],
                           num_ops=num_ops, tensor_size=output[1], op_type=op_type))

    def coll(self, name: str, comm_type: int, dim: str, size: int, inputs: list[Tensor],
             deps: list[int], outputs: list[Tensor] | None = None) -> int:
        """A collective; ``outputs`` names what it produces (a gathered tensor) for memory tracking."""
        return self.add(Op(name, COLL, [d for d in deps if d >= 0], inputs, outputs or [],
                           comm_type=comm_type, comm_size=size, dim=dim))

    def send(self, name: str, tensor: Tensor, peer_stage: int, tag: int, deps: list[int]) -> int:
        return self.add(Op(name, SEND, [d for d in deps if d >= 0], [tensor], [], comm_size=tensor[1],
                           peer_stage=peer_stage, tag=tag))

    def recv(self, name: str, tensor: Tensor, peer_stage: int, tag: int, deps: list[int]) -> int:
        return self.add(Op(name, RECV, [d for d in deps if d >= 0], [], [tensor], comm_size=tensor[1],
                           peer_stage=peer_stage, tag=tag))


@dataclass(frozen=True)
class Layout:
    """Coordinates of every NPU and the communicator groups of each parallel dimension."""

    sizes: dict[str, int]  # dp, tp, sp, pp (and ep when > 1)
    groups: dict[int, list[int]]  # group id -> ranks
    group_of: dict[tuple[str, int], int]  # (dim, rank) -> group id

    @classmethod
    def build(cls, cfg: TransformerConfig) -> Layout:
        sizes = {"dp": cfg.dp, "tp": cfg.tp, "sp": cfg.sp, "pp": cfg.pp}
        groups: dict[int, list[int]] = {}
        group_of: dict[tuple[str, int], int] = {}

        def rank(c: dict[str, int]) -> int:
            return c["dp"] + cfg.dp * (c["tp"] + cfg.tp * (c["sp"] + cfg.sp * c["pp"]))

        def add_dim(dim: str, members: list[dict[str, int]]) -> None:
            gid = len(groups) + 1
            groups[gid] = [rank(c) for c in members]
            for r in groups[gid]:
                group_of[(dim, r)] = gid

        for dim in ("dp", "tp", "sp"):
            others = [d for d in ("pp", "dp", "tp", "sp") if d != dim]
            for coords in itertools.product(*(range(sizes[d]) for d in others)):
                base = dict(zip(others, coords, strict=True))
                add_dim(dim, [dict(base, **{dim: i}) for i in range(sizes[dim])])
        if cfg.ep > 1:  # experts split over consecutive data-parallel ranks
            replicas = cfg.dp // cfg.ep
            for coords in itertools.product(range(cfg.pp), range(cfg.tp), range(cfg.sp)):
                base = dict(zip(("pp", "tp", "sp"), coords, strict=True))
                for r in range(replicas):
                    add_dim("ep", [dict(base, dp=r * cfg.ep + i) for i in range(cfg.ep)])
                for i in range(cfg.ep):
                    add_dim("edp", [dict(base, dp=r * cfg.ep + i) for r in range(replicas)])
        return cls(sizes, groups, group_of)

    def stage_of(self, rank: int) -> int:
        return rank // (self.sizes["dp"] * self.sizes["tp"] * self.sizes["sp"])

    def stage_stride(self) -> int:
        return self.sizes["dp"] * self.sizes["tp"] * self.sizes["sp"]
