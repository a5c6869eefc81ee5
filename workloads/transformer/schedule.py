"""One training step (or inference step) of a pipeline stage: micro-batches in 1F1B order.

Stage ``s`` of ``pp`` holds blocks ``[s*L/pp, (s+1)*L/pp)``; the first stage also embeds the
tokens, the last computes the logits and the loss. Micro-batch tasks run in the 1F1B order
(``pp - s - 1`` warm-up forwards, then one forward / one backward, then the cool-down
backwards: the schedule registry's ``1f1b``, Megatron's too); each task starts after the
previous task's last op, so the trace keeps that order.
Activations go forward and their gradients back with send/receive pairs between stages.
After a block's last backward its gradients are all-reduced over dp then sp (reduce-scattered
over dp with ``weight_sharded``), and the optimizer step reads weights, gradients and the
Adam state.
"""

from __future__ import annotations

from simpy_astra.workloads.schedules.registry import schedule
from simpy_astra.workloads.schedules.task import Kind
from simpy_astra.workloads.transformer.config import TransformerConfig
from simpy_astra.workloads.transformer.graph import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER, StageGraph, Tensor
from simpy_astra.workloads.transformer.layers import Blocks, Shapes

ADAM_STATE_PER_PARAM = 2  # first and second moments


def shapes_for(cfg: TransformerConfig) -> Shapes:
    b = cfg.samples_per_replica
    if cfg.phase == "decode":
        tokens, context = b, cfg.seq
    else:
        tokens, context = b * cfg.seq // cfg.sp, cfg.seq // cfg.sp
    sharded = tokens // cfg.tp if (cfg.tpsp and cfg.tp > 1 and cfg.phase != "decode") else tokens
    return Shapes(cfg, tokens, sharded, context)


def _tag(cfg: TransformerConfig, mb: int, boundary: int, backward: bool) -> int:
    """A tag unique to (micro-batch, stage boundary, direction), the same on both ends."""
    return 1 + 2 * (mb * cfg.pp + boundary) + int(backward)


class StageBuilder:
    def __init__(self, cfg: TransformerConfig, stage: int):
        self.cfg = cfg
        self.stage = stage
        self.g = StageGraph(stage)
        self.training = cfg.phase == "train"
        self.shapes = shapes_for(cfg)
        self.blocks = Blocks(self.g, cfg, self.shapes, self.training)
        per_stage = cfg.num_stacks // cfg.pp
        self.layers = list(range(stage * per_stage, (stage + 1) * per_stage))
        self.first = stage == 0
        self.last = stage == cfg.pp - 1
        self.saved: dict[int, dict] = {}  # mb -> per-layer saved tensors and the stage output
        self.wgrad_ops: dict[int, list[int]] = {}  # layer -> weight-gradient ops of the last mb
        self.emb_grad_ops: dict[str, int] = {}
        self._pending_dep = -1

    def gather_weights(self, p: str, layer: int) -> None:
        """FSDP (STAGE's): all-gather this block's weight shards over dp before its forward and
        again before its backward, issued without dependencies so they prefetch; the matmuls
        that read the weights wait for them. Message size: the local shard (as every
        all-gather here, the size each rank contributes)."""
        if not (self.cfg.weight_sharded and self.cfg.dp > 1):
            return
        shard = (f"L{layer}.weights_shard", self.cfg.layer_params() // self.cfg.tp // self.cfg.dp)
        self.blocks.weights_ready = self.g.coll(f"{p}.weights.allgather_dp", ALL_GATHER, "dp", shard[1],
                                                [shard], [])

    def _after(self, dep: int) -> None:
        """Receives are posted at once; the op that follows one also waits for the previous task."""
        self._pending_dep = dep

    def _apply_pending(self, first_op: int) -> None:
        ops = self.g.ops
        while first_op < len(ops) and ops[first_op].name.endswith(".weights.allgather_dp"):
            first_op += 1  # prefetched weight gathers stay free
        if self._pending_dep >= 0 and first_op < len(ops):
            ops[first_op].deps.append(self._pending_dep)
        self._pending_dep = -1

    # ---- tasks ----
    def forward(self, mb: int, dep: int) -> int:
        cfg, s, g = self.cfg, self.shapes, self.g
        p = f"mb{mb}"
        if self.first:
            x, op = self.blocks.embed_forward(p, dep)
        else:
            x = (f"{p}.L{self.layers[0]}.input", s.hidden)
            op = g.recv(f"{p}.recv_activation", x, -1, _tag(cfg, mb, self.stage - 1, False), [])
            self._after(dep)
        saved = {}
        first_op = len(g.ops)
        for layer in self.layers:
            self.gather_weights(f"{p}.L{layer}", layer)
            kv_cache = None
            if not self.training:
                kv_cache = (f"L{layer}.kv_cache", cfg.samples_per_replica * s.context * 2 * s.kv_width)
            y, op, keep = self.blocks.block_forward(f"{p}.L{layer}", layer, x, op, kv_cache)
            saved[layer] = {"x": x} if cfg.activation_recompute else keep
            if self.training:
                g.saved.update(t[0] for t in saved[layer].values())
            x = y
        self._apply_pending(first_op)
        self.saved[mb] = {"layers": saved, "out": x}
        if self.training and self.last:
            g.saved.add(x[0])
        if not self.last:
            g.send(f"{p}.send_activation", x, +1, _tag(cfg, mb, self.stage, False), [op])
            return op  # the next task waits for compute only: sends never block the schedule
        logits, op = self.blocks.head_forward(p, x, op)
        self.saved[mb]["logits"] = logits
        if self.training:
            g.saved.add(logits[0])
        return op

    def backward(self, mb: int, dep: int) -> int:
        cfg, s, g = self.cfg, self.shapes, self.g
        p = f"mb{mb}"
        last_mb = mb == cfg.micro_batches - 1
        saved = self.saved.pop(mb)
        if self.last:
            dy, op, dw = self.blocks.loss_and_head_backward(p, saved["out"], saved["logits"], dep)
            if last_mb:
                self.emb_grad_ops["out_emb"] = dw
        else:
            dy = (f"{p}.L{self.layers[-1]}.dy", s.hidden)
            op = g.recv(f"{p}.recv_gradient", dy, +1, _tag(cfg, mb, self.stage, True), [])
            self._after(dep)
        first_op = len(g.ops)
        for layer in reversed(self.layers):
            lp = f"{p}.L{layer}"
            keep = saved["layers"][layer]
            self.gather_weights(f"{lp}.backward", layer)
            if cfg.activation_recompute:  # run the block's forward again from its saved input
                _, op, keep = self.blocks.block_forward(f"{lp}.recompute", layer, keep["x"], op)
                g.saved.update(t[0] for t in keep.values())
            dy, op, wgrads = self.blocks.block_backward(lp, layer, dy, op, keep)
            if last_mb:
                self.wgrad_ops[layer] = wgrads
        self._apply_pending(first_op)
        if not self.first:
            g.send(f"{p}.send_gradient", dy, -1, _tag(cfg, mb, self.stage - 1, True), [op])
            return op
        dw = self.blocks.embed_backward(p, dy, op)
        if last_mb:
            self.emb_grad_ops["in_emb"] = dw
        return op

    # ---- after the last micro-batch ----
    def gradient_sync_and_update(self) -> None:
        """Sum each block's gradients over its replicas, then step the optimizer.

        Dense weights are replicated over dp and sp; MoE experts are split over ep, so their
        replicas are the ``dp/ep`` ranks holding the same experts (group ``edp``)."""
        cfg, g = self.cfg, self.g
        for layer in self.layers:
            wgrads = self.wgrad_ops[layer]
            groups: dict[str, list[int]] = {}
            for op in wgrads:
                expert = ".experts." in g.ops[op].outputs[0][0]
                groups.setdefault("edp" if expert and cfg.ep > 1 else "dp", []).append(op)
            for dim, deps in groups.items():
                name = f"L{layer}.experts" if dim == "edp" else f"L{layer}"
                grads = [g.ops[i].outputs[0] for i in deps]
                size = sum(t[1] for t in grads)
                replicas = cfg.dp // cfg.ep if dim == "edp" else cfg.dp
                if replicas > 1:
                    kind = REDUCE_SCATTER if cfg.weight_sharded else ALL_REDUCE
                    deps = [g.coll(f"{name}.grad.sync_dp", kind, dim, size, grads, deps)]
                if cfg.sp > 1:
                    deps = [g.coll(f"{name}.grad.sync_sp", ALL_REDUCE, "sp", size, grads, deps)]
                shard = size // cfg.dp if cfg.weight_sharded else size
                final = (f"{name}.grad.final", shard)
                op = g.comp(f"{name}.grad.accumulate", shard, "CUSTOM", grads, final, deps)
                weights = [t for t in self.blocks.weights(layer).values()
                           if (".experts." in t[0]) == (dim == "edp")]
                self.update(name, weights, final, op)
        emb = self.shapes.vocab_share * cfg.dmodel
        vocab_parallel = self.shapes.vocab_share < cfg.dvocal
        for name, dw in self.emb_grad_ops.items():
            grad = g.ops[dw].outputs[0]
            final = (f"{name}.grad.final", emb)
            op = g.comp(f"{name}.grad.accumulate", emb, "CUSTOM", [grad], final, [dw])
            for dim in ("dp", "tp", "sp"):  # STAGE sums embedding gradients over every dimension
                if getattr(cfg, dim) > 1 and not (dim == "tp" and vocab_parallel):
                    op = g.coll(f"{name}.grad.sync_{dim}", ALL_REDUCE, dim, emb, [grad], [op])
            self.update(name, [(f"{name}.w", emb)], final, op)

    def update(self, name: str, weights: list[Tensor], grad: Tensor, dep: int) -> None:
        """Adam: reads weights, gradient and moments, writes the new weights (one op per element)."""
        size = grad[1]
        state = (f"{name}.adam_state", ADAM_STATE_PER_PARAM * size)
        self.g.comp(f"{name}.update", size, "A", [*weights, grad, state], (f"{name}.w.updated", size), [dep])

    def build(self) -> StageGraph:
        op = -1
        if self.training:
            for task in schedule("1f1b")(self.stage, self.cfg.pp, self.cfg.micro_batches, 1):
                op = self.forward(task.micro_batch, op) if task.kind is Kind.FORWARD else self.backward(task.micro_batch, op)
            self.gradient_sync_and_update()
        else:
            for mb in range(self.cfg.micro_batches):
                op = self.forward(mb, op)
        return self.g


def build_stage(cfg: TransformerConfig, stage: int) -> StageGraph:
    return StageBuilder(cfg, stage).build()
