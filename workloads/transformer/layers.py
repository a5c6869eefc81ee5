"""Transformer layers as ops: each op's FLOPs, its tensors, and the collectives around it.

Counting follows STAGE so that traces ask for the same work: ``num_ops`` of a matmul
``[m, k] x [k, n]`` is ``m*k*n`` (multiply-accumulates; FLOPs are twice that), element-wise
ops count per element (a norm 5 per element), and every size is an element count (one byte
per element, STAGE's unit). Training attention is STAGE's fused kernel (cost linear in the
tokens); inference attention counts the real ``q.k`` and ``p.v`` products over the context.

Shapes on one NPU (tp-way tensor, sp-way sequence parallel):

- ``tokens``: tokens of the local sequence shard, ``b * s / sp``;
- ``sharded_tokens``: tokens between blocks, also split over tp when ``tpsp`` (Megatron
  sequence parallelism): ``tokens / tp``. Entering a tp region all-gathers them over tp;
  leaving it reduce-scatters (without ``tpsp``: no gather, an all-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy_astra.workloads.transformer.config import TransformerConfig
from simpy_astra.workloads.transformer.graph import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    StageGraph,
    Tensor,
)

NORM_OPS_PER_ELEMENT = 5  # mean, variance, normalise, scale, shift


@dataclass(frozen=True)
class Shapes:
    """Per-NPU sizes for one micro-batch of one phase."""

    cfg: TransformerConfig
    tokens: int  # local tokens inside the tp region
    sharded_tokens: int  # local tokens between blocks
    context: int  # keys each query attends to (inference), local share of the sequence

    @property
    def d(self) -> int:
        return self.cfg.dmodel

    @property
    def qkv_width(self) -> int:
        """Columns of the fused q|k|v projection on one tp rank."""
        return (self.cfg.dmodel + 2 * self.cfg.kv_dim) // self.cfg.tp

    @property
    def kv_width(self) -> int:
        return self.cfg.kv_dim // self.cfg.tp

    @property
    def q_width(self) -> int:
        return self.cfg.dmodel // self.cfg.tp

    @property
    def ff_width(self) -> int:
        return self.cfg.dff // self.cfg.tp

    @property
    def vocab_share(self) -> int:
        """Vocabulary rows on one NPU: all when tp splits the tokens, else a 1/tp share
        (Megatron's vocab-parallel embedding, whose partial outputs are all-reduced over tp)."""
        if self.sharded_tokens < self.tokens:
            return self.cfg.dvocal
        return self.cfg.dvocal // self.cfg.tp

    @property
    def hidden(self) -> int:
        """Elements of a block's input/output on one NPU."""
        return self.sharded_tokens * self.d


class Blocks:
    """Emits the ops of embeddings, transformer blocks and the loss into a stage graph."""

    def __init__(self, g: StageGraph, cfg: TransformerConfig, shapes: Shapes, training: bool):
        self.g = g
        self.cfg = cfg
        self.s = shapes
        self.training = training
        self.tp_on = cfg.tp > 1
        self.sp_on = cfg.sp > 1
        self.weights_ready = -1  # FSDP: the all-gather a matmul reading block weights waits for

    # ---- tensor-parallel region boundaries ----
    def enter_tp(self, name: str, x: Tensor, deps: list[int]) -> tuple[Tensor, int]:
        """All-gather the sequence shards over tp (Megatron-SP); returns the gathered tensor."""
        if self.tp_on and self.cfg.tpsp:
            gathered = (f"{name}.gathered", self.s.tokens * self.s.d)
            return gathered, self.g.coll(f"{name}.allgather_tp", ALL_GATHER, "tp", x[1], [x], deps, [gathered])
        return x, deps[0] if deps else -1

    def leave_tp(self, name: str, partial: Tensor, deps: list[int]) -> tuple[Tensor, int]:
        """Sum partial outputs over tp: reduce-scatter (tpsp) or all-reduce."""
        if not self.tp_on:
            return partial, deps[0]
        kind = REDUCE_SCATTER if self.cfg.tpsp else ALL_REDUCE
        reduced = (f"{partial[0]}.reduced", self.s.hidden)
        return reduced, self.g.coll(f"{name}.reduce_tp", kind, "tp", partial[1], [partial], deps, [reduced])

    # ---- pieces ----
    def norm(self, name: str, x: Tensor, dep: int) -> tuple[Tensor, int]:
        out = (f"{name}.y", self.s.hidden)
        return out, self.g.comp(f"{name}.y", NORM_OPS_PER_ELEMENT * self.s.hidden, "E", [x], out, [dep])

    def residual(self, name: str, a: Tensor, b: Tensor, deps: list[int]) -> tuple[Tensor, int]:
        out = (f"{name}.y", self.s.hidden)
        return out, self.g.comp(f"{name}.y", self.s.hidden, "A", [a, b], out, deps)

    def matmul(self, name: str, m: int, k: int, n: int, inputs: list[Tensor], out_elems: int,
               deps: list[int]) -> tuple[Tensor, int]:
        out = (name, out_elems)
        if self.weights_ready >= 0 and any(t[0].startswith("L") for t in inputs):  # block weights
            deps = [*deps, self.weights_ready]
        return out, self.g.comp(name, m * k * n, "M", inputs, out, deps)

    def weight_grad(self, p: str, weight: Tensor, m: int, k: int, n: int, inputs: list[Tensor], deps: list[int]) -> int:
        """A weight-gradient matmul. Its output is the weight's gradient buffer, one name for
        all micro-batches (they accumulate into it), alive until the gradient sync reads it."""
        out = (f"{weight[0]}.grad", weight[1])
        return self.g.comp(f"{p}.{weight[0].split('.', 1)[1]}.wgrad", m * k * n, "M", inputs, out, deps)

    def weights(self, layer: int) -> dict[str, Tensor]:
        """This NPU's shard of a block's weight matrices (read-only between updates)."""
        s, d, cfg = self.s, self.s.d, self.cfg
        w = {"wqkv": (f"L{layer}.wqkv", d * s.qkv_width), "wo": (f"L{layer}.wo", s.q_width * d)}
        if cfg.model == "moe":
            local_experts = cfg.experts // cfg.ep
            w["router"] = (f"L{layer}.router", d * cfg.experts)
            for m in ("w1", "w3", "w2"):
                w[m] = (f"L{layer}.experts.{m}", local_experts * d * s.ff_width)
        else:
            w["w1"] = (f"L{layer}.ffn.w1", d * s.ff_width)
            if cfg.ffn_matrices == 3:
                w["w3"] = (f"L{layer}.ffn.w3", d * s.ff_width)
            w["w2"] = (f"L{layer}.ffn.w2", s.ff_width * d)
        return w

    # ---- embeddings and loss ----
    def vocab_reduce(self, name: str, x: Tensor, dep: int) -> tuple[Tensor, int]:
        """Sum the vocab-parallel partial results over tp (nothing to do when tp splits tokens)."""
        if self.s.vocab_share == self.cfg.dvocal or not self.tp_on:
            return x, dep
        out = (f"{x[0]}.reduced", x[1])
        return out, self.g.coll(f"{name}.reduce_tp", ALL_REDUCE, "tp", x[1], [x], [dep], [out])

    def embed_forward(self, p: str, dep: int) -> tuple[Tensor, int]:
        """Token embedding as STAGE models it: a one-hot ``[tokens, V] x [V, D]`` matmul."""
        s, v = self.s, self.s.vocab_share
        onehot = (f"{p}.tokens_onehot", s.sharded_tokens * v)
        y, op = self.matmul(f"{p}.in_emb.y", s.sharded_tokens, v, s.d, [onehot, ("in_emb.w", v * s.d)],
                            s.hidden, [dep])
        return self.vocab_reduce(f"{p}.in_emb", y, op)

    def embed_backward(self, p: str, dy: Tensor, dep: int) -> int:
        s, v = self.s, self.s.vocab_share
        onehot = (f"{p}.tokens_onehot", s.sharded_tokens * v)
        _, dw = self.matmul(f"{p}.in_emb.dw", s.sharded_tokens, v, s.d, [dy, onehot], v * s.d, [dep])
        self.matmul(f"{p}.in_emb.dx", s.sharded_tokens, v, s.d, [dy, ("in_emb.w", v * s.d)],
                    s.sharded_tokens * v, [dep])
        return dw

    def head_forward(self, p: str, x: Tensor, dep: int) -> tuple[Tensor, int]:
        s, v = self.s, self.s.vocab_share
        return self.matmul(f"{p}.out_emb.y", s.sharded_tokens, s.d, v, [x, ("out_emb.w", v * s.d)],
                           s.sharded_tokens * v, [dep])

    def loss_and_head_backward(self, p: str, x: Tensor, logits: Tensor, dep: int) -> tuple[Tensor, int, int]:
        """Loss, its gradient, and the output projection's backward; returns (dx, op, dw op)."""
        s, v = self.s, self.s.vocab_share
        loss = (f"{p}.loss", s.hidden)
        op = self.g.comp(f"{p}.loss", NORM_OPS_PER_ELEMENT * s.hidden, "E", [logits], loss, [dep])
        dlogits = (f"{p}.loss.dy", s.hidden)
        op = self.g.comp(f"{p}.loss.dy", NORM_OPS_PER_ELEMENT * s.hidden, "E", [loss], dlogits, [op])
        _, dw = self.matmul(f"{p}.out_emb.dw", s.sharded_tokens, s.d, v, [dlogits, x], v * s.d, [op])
        dx, op = self.matmul(f"{p}.out_emb.dx", s.sharded_tokens, s.d, v,
                             [dlogits, ("out_emb.w", v * s.d)], s.hidden, [op])
        dx, op = self.vocab_reduce(f"{p}.out_emb.dx", dx, op)
        return dx, op, dw

    # ---- one transformer block, forward ----
    def block_forward(self, p: str, layer: int, x: Tensor, dep: int,
                      kv_cache: Tensor | None = None) -> tuple[Tensor, int, dict[str, Tensor]]:
        """Attention then FFN, each pre-normed with a residual; returns (y, last op, saved)."""
        s, d, w = self.s, self.s.d, self.weights(layer)
        t = s.tokens
        n1, op = self.norm(f"{p}.input_norm", x, dep)
        n1g, op = self.enter_tp(f"{p}.attn", n1, [op])
        qkv, op_qkv = self.matmul(f"{p}.attn.qkv", t, d, s.qkv_width, [n1g, w["wqkv"]], t * s.qkv_width, [op])
        q = (f"{p}.attn.q", t * s.q_width)
        k = (f"{p}.attn.k", t * s.kv_width)
        v = (f"{p}.attn.v", t * s.kv_width)
        op_q = self.g.comp(q[0], q[1], "SLICE", [qkv], q, [op_qkv])
        op_k = self.g.comp(k[0], k[1], "SLICE", [qkv], k, [op_qkv])
        op_v = self.g.comp(v[0], v[1], "SLICE", [qkv], v, [op_qkv])
        if self.sp_on:  # every sequence shard needs all keys and values (ring/all-gather CP)
            op_k = self.g.coll(f"{p}.attn.k.allgather_sp", ALL_GATHER, "sp", k[1], [k], [op_k])
            op_v = self.g.coll(f"{p}.attn.v.allgather_sp", ALL_GATHER, "sp", v[1], [v], [op_v])
        ctx = (f"{p}.attn.context", t * s.q_width)
        if kv_cache is None:  # training: STAGE's fused attention kernel
            attn_ops = t * s.qkv_width
            op = self.g.comp(ctx[0], attn_ops, "CUSTOM", [q, k, v], ctx, [op_q, op_k, op_v])
        else:  # inference: q.k^T and p.v over the whole context held in the KV cache
            attn_ops = 2 * t * s.context * s.q_width
            op = self.g.comp(ctx[0], attn_ops, "CUSTOM", [q, k, v, kv_cache], ctx, [op_q, op_k, op_v])
        o, op = self.matmul(f"{p}.attn.o", t, s.q_width, d, [ctx, w["wo"]], t * d, [op])
        o, op = self.leave_tp(f"{p}.attn.o", o, [op])
        r1, op = self.residual(f"{p}.attn_res", o, x, [op, dep])
        n2, op = self.norm(f"{p}.post_attn_norm", r1, op)
        ffn_out, op, saved_ffn = self.ffn_forward(p, layer, n2, op)
        y, op = self.residual(f"{p}.ffn_res", ffn_out, r1, [op])
        saved = {"x": x, "n1": n1, "q": q, "k": k, "v": v, "ctx": ctx, "r1": r1, "n2": n2, **saved_ffn}
        return y, op, saved

    def ffn_forward(self, p: str, layer: int, n2: Tensor, dep: int) -> tuple[Tensor, int, dict[str, Tensor]]:
        s, d, w, t = self.s, self.s.d, self.weights(layer), self.s.tokens
        if self.cfg.model == "moe":
            return self.moe_forward(p, n2, dep, w)
        n2g, op = self.enter_tp(f"{p}.ffn", n2, [dep])
        h, op_h = self.matmul(f"{p}.ffn.h1", t, d, s.ff_width, [n2g, w["w1"]], t * s.ff_width, [op])
        saved = {"h1": h}
        if "w3" in w:  # SwiGLU: gate and up projections, multiplied element-wise
            up, op_up = self.matmul(f"{p}.ffn.h3", t, d, s.ff_width, [n2g, w["w3"]], t * s.ff_width, [op])
            act = (f"{p}.ffn.act", t * s.ff_width)
            op_h = self.g.comp(act[0], 2 * act[1], "E", [h, up], act, [op_h, op_up])
            saved.update(h3=up, act=act)
            h = act
        out, op = self.matmul(f"{p}.ffn.down", t, s.ff_width, d, [h, w["w2"]], t * d, [op_h])
        out, op = self.leave_tp(f"{p}.ffn.down", out, [op])
        return out, op, saved

    def moe_forward(self, p: str, n2: Tensor, dep: int, w: dict[str, Tensor]) -> tuple[Tensor, int, dict]:
        """Router, token dispatch over ep (all-to-all), the local experts, combine (all-to-all)."""
        s, d, cfg = self.s, self.s.d, self.cfg
        t = s.sharded_tokens
        routed = t * cfg.kexperts  # token copies sent to experts (balanced load)
        _, op = self.matmul(f"{p}.moe.router", t, d, cfg.experts, [n2, w["router"]], t * cfg.experts, [dep])
        disp = (f"{p}.moe.dispatched", routed * d)
        if cfg.ep > 1:
            op = self.g.coll(f"{p}.moe.dispatch", ALL_TO_ALL, "ep", routed * d, [n2], [op])
        h1, op1 = self.matmul(f"{p}.moe.h1", routed, d, s.ff_width, [disp, w["w1"]], routed * s.ff_width, [op])
        h3, op3 = self.matmul(f"{p}.moe.h3", routed, d, s.ff_width, [disp, w["w3"]], routed * s.ff_width, [op])
        act = (f"{p}.moe.act", routed * s.ff_width)
        op = self.g.comp(act[0], 2 * act[1], "E", [h1, h3], act, [op1, op3])
        out, op = self.matmul(f"{p}.moe.down", routed, s.ff_width, d, [act, w["w2"]], routed * d, [op])
        if self.tp_on:
            op = self.g.coll(f"{p}.moe.down.reduce_tp", ALL_REDUCE, "tp", out[1], [out], [op])
        if cfg.ep > 1:
            op = self.g.coll(f"{p}.moe.combine", ALL_TO_ALL, "ep", routed * d, [out], [op])
        y = (f"{p}.moe.y", s.hidden)
        op = self.g.comp(y[0], routed * d, "A", [out], y, [op])
        return y, op, {"disp": disp, "h1": h1, "h3": h3, "act": act}

    # ---- one transformer block, backward ----
    def block_backward(self, p: str, layer: int, dy: Tensor, dep: int, saved: dict[str, Tensor]
                       ) -> tuple[Tensor, int, list[int]]:
        """Gradients of a block (STAGE's op set); returns (dx, last op, weight-gradient ops)."""
        s, d, w, t = self.s, self.s.d, self.weights(layer), self.s.tokens
        dn2, op, wgrads = self.ffn_backward(p, layer, dy, dep, saved)
        dr1 = (f"{p}.post_attn_norm.dy", s.hidden)
        op = self.g.comp(dr1[0], s.hidden, "A", [dn2, dy], dr1, [op])
        dr1n = (f"{p}.post_attn_norm.dx", s.hidden)
        op_r1 = self.g.comp(dr1n[0], NORM_OPS_PER_ELEMENT * s.hidden, "E", [dr1, saved["r1"]], dr1n, [op])
        # attention output projection
        do, op = self.enter_tp(f"{p}.attn.do", dr1n, [op_r1])
        dctx, op_dctx = self.matmul(f"{p}.attn.dctx", t, d, s.q_width, [do, w["wo"]], t * s.q_width, [op])
        op_dwo = self.weight_grad(p, w["wo"], t, d, s.q_width, [do, saved["ctx"]], [op])
        # attention kernel backward: 2x its forward work for each of q, k, v
        gathered = self.cfg.sp  # dk, dv cover the whole gathered sequence
        dq = (f"{p}.attn.dq", t * s.q_width)
        dk = (f"{p}.attn.dk", t * s.kv_width * gathered)
        dv = (f"{p}.attn.dv", t * s.kv_width * gathered)
        kernel_in = [dctx, saved["q"], saved["k"], saved["v"]]
        op_dq = self.g.comp(dq[0], 2 * t * s.qkv_width, "CUSTOM", kernel_in, dq, [op_dctx])
        op_dk = self.g.comp(dk[0], 2 * t * s.qkv_width, "CUSTOM", kernel_in, dk, [op_dctx])
        op_dv = self.g.comp(dv[0], 2 * t * s.qkv_width, "CUSTOM", kernel_in, dv, [op_dctx])
        if self.sp_on:  # return each shard's key/value gradients to the shard that owns them
            op_dv = self.g.coll(f"{p}.attn.dv.reduce_sp", REDUCE_SCATTER, "sp", dv[1], [dv], [op_dv])
            op_dk = self.g.coll(f"{p}.attn.dk.reduce_sp", REDUCE_SCATTER, "sp", dk[1], [dk], [op_dk])
        dkv = (f"{p}.attn.dkv", 2 * t * s.kv_width)
        op = self.g.comp(dkv[0], dkv[1], "SLICE", [dv, dk], dkv, [op_dv, op_dk])
        dqkv = (f"{p}.attn.dqkv", t * s.qkv_width)
        op_dqkv = self.g.comp(dqkv[0], dqkv[1], "SLICE", [dkv, dq], dqkv, [op, op_dq])
        # fused qkv projection: the weight gradient needs the gathered normed input again; as
        # STAGE, that all-gather may start as soon as the input exists (during the forward)
        n1g, op_g = self.enter_tp(f"{p}.attn.dwqkv", saved["n1"], [self.g.producer[saved["n1"][0]]])
        op_dwqkv = self.weight_grad(p, w["wqkv"], t, d, s.qkv_width, [dqkv, n1g], [op_g, op_dqkv])
        dn1, op = self.matmul(f"{p}.attn.dx", t, s.qkv_width, d, [dqkv, w["wqkv"]], t * d, [op_dqkv])
        dn1, op = self.leave_tp(f"{p}.attn.dx", dn1, [op])
        dx1 = (f"{p}.input_norm.dy", s.hidden)
        op = self.g.comp(dx1[0], s.hidden, "A", [dn1, dr1n], dx1, [op, op_r1])
        dx = (f"{p}.input_norm.dx", s.hidden)
        op = self.g.comp(dx[0], NORM_OPS_PER_ELEMENT * s.hidden, "E", [dx1, saved["x"]], dx, [op])
        return dx, op, [op_dwqkv, op_dwo, *wgrads]

    def ffn_backward(self, p: str, layer: int, dy: Tensor, dep: int, saved: dict[str, Tensor]
                     ) -> tuple[Tensor, int, list[int]]:
        s, d, w, t = self.s, self.s.d, self.weights(layer), self.s.tokens
        if self.cfg.model == "moe":
            return self.moe_backward(p, dy, dep, saved, w)
        dyg, op_dy = self.enter_tp(f"{p}.ffn.dy", dy, [dep])
        h = saved.get("act", saved["h1"])
        op_dw2 = self.weight_grad(p, w["w2"], t, s.ff_width, d, [dyg, h], [op_dy])
        dh, op_dh = self.matmul(f"{p}.ffn.dh", t, d, s.ff_width, [dyg, w["w2"]], t * s.ff_width, [op_dy])
        n2g, op_g = self.enter_tp(f"{p}.ffn.dw1", saved["n2"], [self.g.producer[saved["n2"][0]]])
        wgrads = [op_dw2]
        dins = [(f"{p}.ffn.dh", t * s.ff_width)]
        if "w3" in w:
            dgate = (f"{p}.ffn.dgate", t * s.ff_width)
            dup = (f"{p}.ffn.dup", t * s.ff_width)
            op_g1 = self.g.comp(dgate[0], 2 * dgate[1], "E", [dh, saved["h3"]], dgate, [op_dh])
            op_u1 = self.g.comp(dup[0], 2 * dup[1], "E", [dh, saved["h1"]], dup, [op_dh])
            op_dw3 = self.weight_grad(p, w["w3"], t, d, s.ff_width, [dup, n2g], [op_u1, op_g])
            _, op_dx3 = self.matmul(f"{p}.ffn.dx3", t, s.ff_width, d, [dup, w["w3"]], t * d, [op_u1])
            wgrads.append(op_dw3)
            dins, op_dh = [dgate], op_g1
        op_dw1 = self.weight_grad(p, w["w1"], t, d, s.ff_width, [dins[0], n2g], [op_dh, op_g])
        dx, op = self.matmul(f"{p}.ffn.dx", t, s.ff_width, d, [dins[0], w["w1"]], t * d, [op_dh])
        if "w3" in w:
            op = self.g.comp(f"{p}.ffn.dx_sum", t * d, "A", [dx, (f"{p}.ffn.dx3", t * d)], (f"{p}.ffn.dx_sum", t * d),
                             [op, op_dx3])
        dx, op = self.leave_tp(f"{p}.ffn.dx", dx, [op])
        return dx, op, [*wgrads, op_dw1]

    def moe_backward(self, p: str, dy: Tensor, dep: int, saved: dict, w: dict[str, Tensor]
                     ) -> tuple[Tensor, int, list[int]]:
        s, d, cfg = self.s, self.s.d, self.cfg
        t = s.sharded_tokens
        routed = t * cfg.kexperts
        op = dep
        if cfg.ep > 1:
            op = self.g.coll(f"{p}.moe.d_combine", ALL_TO_ALL, "ep", routed * d, [dy], [op])
        dout = (f"{p}.moe.dout", routed * d)
        dw2 = self.weight_grad(p, w["w2"], routed, s.ff_width, d, [dout, saved["act"]], [op])
        dact, op = self.matmul(f"{p}.moe.dact", routed, d, s.ff_width, [dout, w["w2"]], routed * s.ff_width, [op])
        dh = (f"{p}.moe.dh", 2 * routed * s.ff_width)
        op = self.g.comp(dh[0], 2 * dh[1], "E", [dact, saved["h1"], saved["h3"]], dh, [op])
        dw1 = self.weight_grad(p, w["w1"], routed, d, s.ff_width, [dh, saved["disp"]], [op])
        dw3 = self.weight_grad(p, w["w3"], routed, d, s.ff_width, [dh, saved["disp"]], [op])
        ddisp, op = self.matmul(f"{p}.moe.ddisp", routed, 2 * s.ff_width, d, [dh, w["w1"], w["w3"]],
                                routed * d, [op])
        if self.tp_on:
            op = self.g.coll(f"{p}.moe.ddisp.reduce_tp", ALL_REDUCE, "tp", routed * d, [ddisp], [op])
        if cfg.ep > 1:
            op = self.g.coll(f"{p}.moe.d_dispatch", ALL_TO_ALL, "ep", routed * d, [ddisp], [op])
        drouter = self.weight_grad(p, w["router"], t, d, cfg.experts, [dy, saved["disp"]], [op])
        dx = (f"{p}.moe.dx", s.hidden)
        op = self.g.comp(dx[0], routed * d, "A", [ddisp], dx, [op, drouter])
        return dx, op, [dw1, dw3, dw2, drouter]
