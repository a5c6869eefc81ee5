"""How a transformer trace accounts memory: what each tensor is, and how long it lives.

ASTRA-sim's tracker keeps a tensor alive from the start of the node that writes it to the end
of the last node that reads it; a tensor read but never written lives from time 0, one never
read lives to the end. So the ``inputs``/``outputs`` lists of a trace *are* its memory model.
Two are written (``--memory-accounting``):

``physical`` (default): what a training framework keeps. Weights and the Adam moments live
for the whole step, each weight's gradient from its first weight-gradient op to the
optimizer, activations from the op that writes them to the last backward op that reads them
(only each block's input with activation recompute), collective outputs from the collective
to their last reader. With ``weight_sharded`` (FSDP) each NPU keeps its 1/dp shard of the
block weights; the all-gathered copies live from their gather to the last op reading them.

``stage``: the tensor lists of the STAGE the lab used, so peak memory is what that STAGE's
traces give: its template generator (``main.py`` with the ``sharding_spreadsheets/module/
fullset[_recomp]`` templates) before 93cacd6 "fix FSDP memory" (2025-04-28) added 4 B of Adam
state per weight element. Read off its traces (commit 8e6e087; the tensor-list code is the same
back to 0afba8f) of the two lab points (issue 18; scenarios/sweeps/results/README.md says what
was run and what each gives):

- a weight is 1 B per element with no optimizer state; nobody writes it, so it lives from time
  0 to the optimizer, which writes an updated copy nobody reads (live to the end);
- its attention has no output projection, so ``wo`` (and its gradient) hold no memory here;
- a collective writes nothing: the op after it reads the collective's input under its name;
- each weight's gradient lives from its weight-gradient op to the optimizer;
- with activation recompute the backward keeps two checkpoints per layer, the outputs of the
  attention and the FFN sub-blocks (the first forward's ``attn_res.y`` and ``ffn_res.y``);
  what the recomputed forward writes lives until its backward reader (what nobody reads, such
  as the recomputed block output, is not written).

``stage-3a7f49c``: STAGE's own tensor lists at commit 3a7f49c (read off its st1..st6 traces and
two lab points with ``workloads.chakra.read_et``), so peak memory is what STAGE 3a7f49c's
traces give (the reference cases pin that commit):

- a collective writes nothing, and the op after it reads a *separate* name nobody writes
  (STAGE's shortcut tensors: ``ffn.x0``, ``mha.o``, ``mha.do`` ...), so those live from time
  0; with tp = 1 the collective is absent but the separate names stay;
- every matmul reads its own copy of its weight (forward and backward copies, never written,
  so live from 0 to that read), and the optimizer reads a block's fused weight of 5 B per
  element (1 B weight + 4 B Adam state, STAGE's ``_create_IOInfo``) and writes a new one that
  nobody reads (so both live through the step's end);
- gradient collectives read a never-written ``_assembled_grad`` of the block's size, the
  weight-gradient ops' outputs are never read (live to the end);
- the attention kernel reads only q (k and v are never read again), the backward kernel only
  the incoming gradient; norms' backward read only their incoming gradient;
- activation recompute is a no-op in STAGE: the recomputed forward still runs here (its
  time is physical) but writes and reads nothing, and the backward reads the first forward's
  tensors, as in STAGE's traces.

The kinds (``KIND_PREFIX``) let the tracker break the peak down; in ``stage-3a7f49c`` mode the fused
weight is written as two tensors with the same lifetime (weight, 4x optimizer state).
"""

from __future__ import annotations

import re

from simpy_astra.workloads.transformer.config import TransformerConfig
from simpy_astra.workloads.transformer.graph import COLL, RECV, StageGraph, Tensor
from simpy_astra.workloads.transformer.layers import Blocks
from simpy_astra.workloads.transformer.schedule import shapes_for

_BLOCK_WEIGHT = re.compile(r"^L\d+\.(wqkv|wo|router|ffn\.w\d|experts\.w\d|weights_shard)$")
_LAYER_OP = re.compile(r"^(?P<scope>mb\d+\.L(?P<layer>\d+))\.(?P<rest>.+)$")
STAGE_OPTIMIZER_PER_WEIGHT = 4  # STAGE: 4 B of Adam state per weight element, fused into it


def account_memory(g: StageGraph, cfg: TransformerConfig) -> StageGraph:
    if cfg.memory_accounting == "stage-3a7f49c":
        _stage_lifetimes(g, cfg)
    elif cfg.memory_accounting == "stage":
        _stage_template(g, cfg)
    else:
        _physical(g, cfg)
    return g


# ---------------------------------------------------------------- physical
def _physical(g: StageGraph, cfg: TransformerConfig) -> None:
    if cfg.weight_sharded and cfg.dp > 1 and cfg.phase == "train":
        _fsdp_copies(g, cfg)
    kinds = g.kinds
    for op in g.ops:
        for name, _ in op.inputs + op.outputs:
            if name in kinds:
                continue
            if _BLOCK_WEIGHT.match(name) or name in ("in_emb.w", "out_emb.w") or name.endswith(".w.updated"):
                kinds[name] = "weight"
            elif name.endswith(".adam_state"):
                kinds[name] = "optim"
            elif name.endswith(".grad") or name.endswith(".grad.final") or name.endswith("_emb.dw"):
                kinds[name] = "grad"
            elif name in g.saved or name.endswith(".tokens_onehot"):
                kinds[name] = "act"
        if op.kind in (COLL, RECV):
            for name, _ in op.outputs:
                kinds.setdefault(name, "comm")


def _fsdp_copies(g: StageGraph, cfg: TransformerConfig) -> None:
    """Each weight all-gather writes the layer's full (tp-shard) weights under its own scope;
    the matmuls of that pass read those copies, the optimizer reads and writes the shard."""
    blocks = Blocks(StageGraph(g.stage), cfg, shapes_for(cfg), True)
    current: dict[int, str] = {}
    for op in g.ops:
        if op.name.endswith(".weights.allgather_dp"):
            scope = op.name[: -len(".weights.allgather_dp")]
            layer = int(re.search(r"\.L(\d+)", scope).group(1))
            current[layer] = scope
            op.outputs = [(f"{scope}:{name}", size) for name, size in blocks.weights(layer).values()]
            for name, _ in op.outputs:
                g.kinds[name] = "comm"
            continue
        if op.name.endswith(".update") and op.name.startswith("L"):
            layer = int(op.name[1:].split(".", 1)[0])
            shard = (f"L{layer}.weights_shard", cfg.layer_params() // cfg.tp // cfg.dp)
            grads = [t for t in op.inputs if not _BLOCK_WEIGHT.match(t[0]) or t[0] == shard[0]]
            op.inputs = [shard, *[t for t in grads if t[0] != shard[0]]]
            continue
        if any(_BLOCK_WEIGHT.match(t[0]) for t in op.inputs):
            op.inputs = [(f"{current[int(t[0][1:].split('.', 1)[0])]}:{t[0]}", t[1])
                         if _BLOCK_WEIGHT.match(t[0]) else t for t in op.inputs]


# ---------------------------------------------------------------- stage (the lab's STAGE)
_WO = re.compile(r"^L\d+\.wo(\.grad)?$")


def _stage_template(g: StageGraph, cfg: TransformerConfig) -> None:
    """STAGE's template generator before 93cacd6 (see the module docstring)."""
    _physical(g, cfg)  # the kinds, and FSDP's gathered copies (not checked against STAGE)
    # collectives write nothing: whoever reads a collective's output reads its input instead
    alias: dict[str, Tensor] = {}
    for op in g.ops:
        if op.kind == COLL and op.outputs and op.inputs and not op.name.endswith(".weights.allgather_dp"):
            for name, _ in op.outputs:
                alias[name] = op.inputs[0]
            op.outputs = []
    for op in g.ops:
        inputs = []
        for name, size in op.inputs:
            while name in alias:
                name, size = alias[name]
            if name.endswith(".adam_state"):
                continue  # no optimizer state
            if _WO.match(name):
                size = 0  # no output projection
            elif (cfg.activation_recompute and ".recompute." not in op.name
                  and name.endswith(".attn_res.y") and ".recompute." in name):
                name = name.replace(".recompute.", ".", 1)  # the first forward's checkpoint
                g.kinds[name] = "act"
            inputs.append((name, size))
        if op.name.startswith("L") and op.name.endswith((".update", ".grad.accumulate")):
            wo = sum(size for name, size in op.inputs if _WO.match(name))  # out of the layer's total
            op.outputs = [(name, size - wo) for name, size in op.outputs]
        op.inputs = inputs
        op.outputs = [(name, 0 if _WO.match(name) else size) for name, size in op.outputs]
    read = {name for op in g.ops for name, _ in op.inputs}
    for op in g.ops:  # the recomputed forward writes only what its backward reads
        if ".recompute." in op.name:
            op.outputs = [t for t in op.outputs if t[0] in read]
    written = {name: size for op in g.ops for name, size in op.outputs}
    for op in g.ops:  # a reader names a tensor with the size its writer gave it
        op.inputs = [(name, written.get(name, size)) for name, size in op.inputs]


# ---------------------------------------------------------------- stage-3a7f49c
_FORWARD = {"input_norm.y", "attn.qkv", "attn.q", "attn.k", "attn.v", "attn.context", "attn.o", "attn_res.y",
            "post_attn_norm.y", "ffn.h1", "ffn.h3", "ffn.act", "ffn.down", "ffn_res.y"}


class _StageNames:
    """Builds STAGE-style tensors for one stage graph and records their kinds."""

    def __init__(self, g: StageGraph, cfg: TransformerConfig):
        self.g, self.cfg = g, cfg
        self.s = shapes_for(cfg)
        self.blocks = Blocks(StageGraph(g.stage), cfg, self.s, True)
        self.fsdp = cfg.weight_sharded and cfg.dp > 1

    def t(self, name: str, size: int, kind: str, zero_with_fsdp: bool = False) -> Tensor:
        """A tensor of ``kind``; STAGE's FSDP traces give backward tensors size 0."""
        self.g.kinds[name] = kind
        return (name, 0 if zero_with_fsdp and self.fsdp else size)

    def weight_copy(self, scope: str, layer: int, key: str, backward: bool) -> Tensor:
        size = self.blocks.weights(layer)[key][1]
        which = "bwd_copy" if backward else "fwd_copy"
        return self.t(f"{scope}.{key}.{which}", size, "weight", zero_with_fsdp=backward)

    def never_written(self, scope: str, leaf: str, size: int | None = None, kind: str = "comm",
                      backward: bool = False) -> Tensor:
        return self.t(f"{scope}.{leaf}", self.s.hidden if size is None else size, kind, zero_with_fsdp=backward)

    def fused_weight(self, name: str, elements: int) -> list[Tensor]:
        """STAGE's trainable weight: 1 B weight + 4 B Adam state per element, one lifetime."""
        if self.fsdp:
            elements //= self.cfg.dp
        return [self.t(name, elements, "weight"),
                self.t(f"{name}.optimizer", STAGE_OPTIMIZER_PER_WEIGHT * elements, "optim")]


def _stage_lifetimes(g: StageGraph, cfg: TransformerConfig) -> None:
    n = _StageNames(g, cfg)
    s = n.s
    emb = s.vocab_share * cfg.dmodel
    for op in g.ops:
        name = op.name
        if ".recompute." in name:  # STAGE's recompute flag is a no-op: no tensors
            op.inputs, op.outputs = [], []
            continue
        if op.kind == COLL:
            op.outputs = []
        # the backward reads the first forward's tensors, not the recomputed ones
        op.inputs = [(t.replace(".recompute.", ".", 1), size) for t, size in op.inputs]
        m = _LAYER_OP.match(name)
        if m:
            _stage_layer_op(n, op, m.group("scope"), int(m.group("layer")), m.group("rest"))
            continue
        _stage_other_op(n, op, emb)
    # what is left unclassified: forward outputs are activations, the rest transient
    for op in g.ops:
        for tname, _ in op.outputs:
            if tname not in g.kinds:
                m = _LAYER_OP.match(tname)
                g.kinds[tname] = "act" if (m and m.group("rest") in _FORWARD) else "tmp"
        for tname, _ in op.inputs:
            g.kinds.setdefault(tname, "tmp")


def _strip_reduced(t: Tensor) -> Tensor:
    return (t[0][: -len(".reduced")], t[1]) if t[0].endswith(".reduced") else t


def _stage_layer_op(n: _StageNames, op, scope: str, layer: int, rest: str) -> None:
    s, cfg = n.s, n.cfg
    ins = op.inputs
    if rest == "ffn.dy.allgather_tp":
        op.inputs = [n.never_written(scope, "ffn_res.dx1", backward=True)]
    elif rest == "attn.do.allgather_tp":
        op.inputs = [n.never_written(scope, "attn_res.dx1", backward=True)]
    elif rest == "attn.qkv":
        op.inputs = [(f"{scope}.input_norm.y", s.hidden), n.weight_copy(scope, layer, "wqkv", False)]
    elif rest == "attn.context":
        op.inputs = [ins[0]]  # q only
    elif rest == "attn.o":
        op.inputs = [ins[0], n.weight_copy(scope, layer, "wo", False)]
    elif rest == "attn_res.y":
        op.inputs = [n.never_written(scope, "attn.o.out"), n.never_written(scope, "input_norm.x", kind="act")]
    elif rest in ("ffn.h1", "ffn.h3"):
        key = "w1" if rest == "ffn.h1" else "w3"
        op.inputs = [n.never_written(scope, "ffn.x0"), n.weight_copy(scope, layer, key, False)]
    elif rest == "ffn.down":
        op.inputs = [ins[0], n.weight_copy(scope, layer, "w2", False)]
    elif rest == "ffn_res.y":  # STAGE sizes the reduced FFN output as tokens x dff (its shape quirk)
        op.inputs = [n.never_written(scope, "ffn.down.out", s.sharded_tokens * cfg.dff),
                     n.never_written(scope, "post_attn_norm.x", kind="act")]
    elif rest == "ffn.w2.wgrad":
        op.inputs = [n.never_written(scope, "ffn.dxdown", backward=True), ins[1]]
    elif rest == "ffn.dh":
        op.inputs = [n.never_written(scope, "ffn.dxdown", backward=True), n.weight_copy(scope, layer, "w2", True)]
    elif rest in ("ffn.w1.wgrad", "ffn.w3.wgrad"):
        op.inputs = [ins[0], n.never_written(scope, "ffn.x0")]
    elif rest in ("ffn.dx", "ffn.dx3"):
        key = "w1" if rest == "ffn.dx" else "w3"
        op.inputs = [ins[0], n.weight_copy(scope, layer, key, True)]
    elif rest == "post_attn_norm.dy":
        op.inputs = [_strip_reduced(ins[0]), n.never_written(scope, "ffn_res.dy", backward=True)]
    elif rest in ("post_attn_norm.dx", "input_norm.dx"):
        op.inputs = [ins[0]]
    elif rest == "attn.dctx":
        op.inputs = [n.never_written(scope, "attn.do", backward=True), n.weight_copy(scope, layer, "wo", True)]
    elif rest == "wo.wgrad":
        op.inputs = [n.never_written(scope, "attn.do", backward=True), ins[1]]
    elif rest in ("attn.dq", "attn.dk", "attn.dv"):
        op.inputs = [ins[0]]  # the incoming gradient only
    elif rest == "wqkv.wgrad":
        op.inputs = [ins[0], (f"{scope}.input_norm.y", s.hidden)]
    elif rest == "attn.dx":
        op.inputs = [ins[0], n.weight_copy(scope, layer, "wqkv", True)]
    elif rest == "input_norm.dy":
        op.inputs = [_strip_reduced(ins[0]), n.never_written(scope, "attn_res.dy", backward=True)]
    elif rest.endswith(".weights.allgather_dp"):
        op.inputs = [(f"L{layer}.weights_shard", 0)]
    if rest.endswith(".wgrad"):
        for tname, _ in op.outputs:
            n.g.kinds[tname] = "grad"
        if n.fsdp:
            op.outputs = [(t, 0) for t, _ in op.outputs]
    elif n.fsdp and (rest.split(".")[-1].startswith("d") or rest.endswith(".dy") or rest.endswith(".dx")):
        op.outputs = [(t, 0) for t, _ in op.outputs]


def _stage_other_op(n: _StageNames, op, emb: int) -> None:
    name = op.name
    cfg = n.cfg
    m = re.match(r"^L(\d+)\.(.+)$", name)
    if m:
        layer, rest = int(m.group(1)), m.group(2)
        size = cfg.layer_params() // cfg.tp
        assembled = n.t(f"mb0.L{layer}._assembled_grad", size, "grad", zero_with_fsdp=True)
        if rest in ("grad.sync_dp", "grad.sync_sp"):
            op.inputs = [assembled]
        elif rest == "grad.accumulate":
            op.inputs = [assembled]
            op.outputs = [n.t(f"L{layer}._sharded_grad", op.outputs[0][1], "grad")]
        elif rest == "update":
            op.inputs = [*n.fused_weight(f"L{layer}._sharded_weight@0", size),
                         (f"L{layer}._sharded_grad", op.inputs[-2][1])]
            op.outputs = n.fused_weight(f"L{layer}._sharded_weight@1", size)
        return
    m = re.match(r"^(in_emb|out_emb)\.(.+)$", name)
    if m:
        which, rest = m.group(1), m.group(2)
        final = n.t(f"{which}.grad.final", emb, "grad", zero_with_fsdp=True)
        if rest == "grad.accumulate":
            op.outputs = [final]
        elif rest.startswith("grad.sync_"):
            op.inputs = [final]
        elif rest == "update":
            op.inputs = [*n.fused_weight(f"{which}.w@0", emb), final]
            op.outputs = n.fused_weight(f"{which}.w@1", emb)
        return
    m = re.match(r"^(mb\d+)\.(.+)$", name)
    if not m:
        return
    p, rest = m.group(1), m.group(2)
    if rest in ("in_emb.y", "in_emb.dx", "out_emb.y", "out_emb.dx"):
        which = rest.split(".")[0]
        op.inputs = [op.inputs[0], *n.fused_weight(f"{which}.w@0", emb)]
        n.g.kinds.setdefault(op.inputs[0][0], "act" if rest == "in_emb.y" else "tmp")
    if rest in ("in_emb.dw", "out_emb.dw"):
        for tname, _ in op.outputs:
            n.g.kinds[tname] = "grad"
    if rest == "recv_activation":
        for tname, _ in op.outputs:
            n.g.kinds[tname] = "act"
    elif rest == "recv_gradient":
        for tname, _ in op.outputs:
            n.g.kinds[tname] = "comm"
    if f"{p}.tokens_onehot" in {t[0] for t in op.inputs}:
        n.g.kinds[f"{p}.tokens_onehot"] = "act"
