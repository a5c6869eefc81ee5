"""One micro-batch through one model chunk on one GPU, as Megatron-LM's kernels run it.

A chunk's forward, recomputation and backward are each a list of steps
(:mod:`~simpy_astra.workloads.megatron.steps`): a compute step is the kernels between two
collectives (their times summed, and split by kind: ``gemm``, ``attention``,
``elementwise``); a collective step is one NCCL call. Every count is per GPU: ``T`` tokens of the micro-batch on
this GPU (``b s / cp``), the layer's weights split over ``tp``, and with sequence parallelism
the layer norms, dropouts and residual adds on ``T / tp`` tokens.

Bytes per element of the memory-bound kernels (fp16/bf16 tensors, 1-byte dropout masks),
forward / backward: layer norm 4 / 6, fused bias-dropout-add 7 / 5 (6 / 4 at
``--hidden-dropout 0``: no mask), fused bias-GeLU 4 / 6 (unfused 8 / 10), SwiGLU 6 / 10
(unfused 10 / 24), fused scale-mask-softmax 4 / 6 (unfused: see
``_softmax_kernels``), attention dropout 5 / 5 (none at ``--attention-dropout 0``), the
context's transpose 4 / 4, rotary embeddings on the queries and keys fused 4 / 4 (unfused
24 / 16: ``_ROPE_UNFUSED``), a query-key layer norm 4 / 6.
A bias's gradient reads the output gradient once (none with ``--disable-bias-linear``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simpy_astra.workloads.megatron import context_parallel
from simpy_astra.workloads.megatron.job import LayerKind, MegatronJob
from simpy_astra.workloads.megatron.kernels import (
    TE_MODULE_HOST_US,
    Gpu,
    flash_attention_seconds,
    gemm_seconds,
    streaming_seconds,
)
from simpy_astra.workloads.megatron.steps import Step
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder

# Chakra collective kinds
ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 6, 7
#: bytes an element of ffn that SwiGLU's unfused kernels move (``--no-bias-swiglu-fusion``:
#: Megatron-Core's ``glu``, ``silu(x1) * x2``): forward, SiLU reads x1 and writes its output
#: (4) and the product reads both and writes one (6); backward, the product's gradient reads
#: the incoming gradient, SiLU's output and x2 and writes two (10), SiLU's reads the gradient
#: and x1 and writes one (6), and the chunk's gradient concatenates both halves (8)
_UNFUSED_SWIGLU_FWD, _UNFUSED_SWIGLU_BWD = 10, 24
#: a rank's experts run one by one (SequentialMLP) summed kernel by kernel up to this many; past
#: it, as copies of one (real models hold at most a few hundred: DeepSeek-V3's 256)
SUMMED_EXPERTS = 1024
#: unfused rotary embedding (``rope_utils._apply_rotary_pos_emb_bshd``), bytes and kernels an
#: element of q or k each way: forward ``t * cos`` 4, ``_rotate_half``'s negated half 2 and
#: concatenation 4, ``* sin`` 4, the sum 6, the final concatenation 4; backward the two
#: products' gradients 4 + 4, the negation's 2 and the two paths summed 6
_ROPE_UNFUSED = {False: (24, 6), True: (16, 4)}


class ChunkModel:
    """Steps of one micro-batch through ``layers`` transformer layers (plus the embedding on
    the first chunk of the first stage, the logits and loss on the last one)."""

    def __init__(self, job: MegatronJob, gpu: Gpu):
        self.job = job
        self.gpu = gpu
        self.e = job.element_bytes
        self.tokens = job.micro_batch * job.seq // job.cp  # T
        tp = job.tp
        self.norm_tokens = self.tokens // tp if job.sequence_parallel else self.tokens
        self.q_width = job.heads * job.head_dim // tp
        self.kv_width = max(1, job.kv_heads // tp) * job.head_dim
        self.ffn = job.ffn_hidden // tp
        self.heads = job.heads // tp

    # ------------------------------------------------------------------ kernels
    def _gemm(self, m: int, n: int, k: int, batch: int = 1) -> float:
        """A GEMM in the training precision (attention, logits, router)."""
        return gemm_seconds(self.gpu, m, n, k, batch, self.e)

    def _linear(self, m: int, n: int, k: int, groups: int = 1) -> float:
        """A GEMM of a linear layer (``groups`` of them in one grouped kernel): with
        ``--fp8-format`` Transformer Engine runs it on fp8 operands (1 B an element) at the
        GPU's fp8 rate; the output layer and attention stay in bf16."""
        if self.job.fp8:
            return gemm_seconds(self.gpu, m, n, k, groups, 1, fp8=True)
        return self._gemm(m, n, k, groups)

    def _stream(self, elements: float, bytes_per_element: float) -> float:
        return streaming_seconds(self.gpu, elements * bytes_per_element * self.e / 2)

    def _fp8_cast(self, b: _Builder, elements: int, fused: bool = False) -> None:
        """An fp8 GEMM reads its input (or output gradient) cast to fp8 in both layouts (the
        transpose feeds the weight gradient): Transformer Engine's cast-transpose kernel reads
        2 B and writes 2 x 1 B an element and records the tensor's amax for its scaling.
        Where TE fuses the cast into the kernel before (the layer norm of LayerNormLinear, the
        activation of LayerNormMLP: ``fused``) that kernel writes the fp8 pair instead of its
        bf16 output and the cast costs nothing.

        With current scaling (``--fp8-recipe tensorwise``) the scale is the tensor's own amax,
        known only once the whole tensor is read: an unfused cast first reads the tensor for its
        amax (2 B more, 6 B an element), and a fused one is split -- the kernel before writes
        its bf16 output with the amax and a separate cast reads it (4 B; TE's
        ``FUSED_NORM_AMAX_FP8`` and its activations' ``quantize_with_amax``)."""
        job = self.job
        if not job.fp8:
            return
        fused = fused and job.transformer_engine
        if job.fp8_current_scaling:
            b.add("elementwise", streaming_seconds(self.gpu, elements * (4 if fused else 6)))
        elif not fused:
            b.add("elementwise", streaming_seconds(self.gpu, elements * 4))

    def _linear_fwd(self, b: _Builder, n_in: int, n_out: int, fused_cast: bool = False) -> float:
        """``fused_cast``: the input is the layer norm's output, cast where the norm runs (on
        this rank's 1/tp of the tokens with sequence parallelism, before the all-gather)."""
        self._fp8_cast(b, (self.norm_tokens if fused_cast else self.tokens) * n_in, fused_cast)
        seconds = self._linear(self.tokens, n_out, n_in)
        b.add("gemm", seconds)
        return seconds

    def _linear_bwd(self, b: _Builder, n_in: int, n_out: int, bias: bool = True) -> None:
        """Input gradient (dgrad) and weight gradient (wgrad) of one linear layer."""
        self._fp8_cast(b, self.tokens * n_out)
        b.add("gemm", self._linear(self.tokens, n_in, n_out))
        b.wait("dgrad.wait")  # the output gradient's all-gather (SP) ran beside the dgrad only
        b.wgrad("gemm", self._linear(n_in, n_out, self.tokens))
        self._accumulate(b, n_in * n_out)
        if bias and self.job.bias_linear:
            b.wgrad("elementwise", self._stream(self.tokens * n_out, 2))

    def _accumulate(self, b: _Builder, params: int) -> None:
        """Weight gradients added into the gradient buffer: a kernel per weight unless the
        weight-gradient GEMM accumulates into it (gradient accumulation fusion)."""
        if self.job.gradient_accumulation_fusion:
            return
        b.wgrad("elementwise", streaming_seconds(self.gpu, params * (2 * self.job.grad_bytes + self.e)))

    def _query_key_kernels(self, b: _Builder, backward: bool) -> None:
        """Before the attention core, on this rank's queries and keys: the query-key layer
        norms (``--qk-layernorm``, over each head) and the rotary embedding (one fused kernel
        a tensor each way, or PyTorch's separate ones with ``--no-rope-fusion``)."""
        job, qk = self.job, self.tokens * (self.q_width + self.kv_width)
        if job.qk_layernorm:
            b.add("elementwise", self._stream(qk, 6 if backward else 4), 2)
        if job.rope:
            per_element, kernels = _ROPE_UNFUSED[backward] if job.rope == "unfused" else (4, 1)
            b.add("elementwise", self._stream(qk, per_element), 2 * kernels)

    # ------------------------------------------------------------------ attention core
    def _attention(self, b: _Builder, backward: bool, cp_comm: str) -> None:
        """The attention core, with context parallelism's exchanges (by ``cp_comm``) around it
        (:mod:`~simpy_astra.workloads.megatron.context_parallel`)."""
        job, t = self.job, self.tokens
        q_bytes, kv_bytes = t * self.q_width * self.e, t * 2 * self.kv_width * self.e
        context_parallel.before(b, job, cp_comm, q_bytes, kv_bytes, backward)
        shape = context_parallel.attention_shape(job, cp_comm, self.heads)
        bh, q_len, kv_len = shape.batch_heads, shape.q_len, shape.kv_len
        if job.flash_attention:
            b.add("attention", flash_attention_seconds(self.gpu, bh, q_len, kv_len, job.head_dim,
                                                       causal=True, backward=backward, seq=job.seq))
            self._attention_after(b, backward, cp_comm)
            return
        scores = bh * q_len * kv_len
        if not backward:
            b.add("attention", self._gemm(q_len, kv_len, job.head_dim, bh))
            kernels = self._softmax_kernels(backward=False)
            b.add("elementwise", sum(self._stream(scores, moved) for moved in kernels), len(kernels))
            if job.attention_dropout:
                b.add("elementwise", self._stream(scores, 5))  # dropout
            b.add("attention", self._gemm(q_len, job.head_dim, kv_len, bh))
            b.add("elementwise", self._stream(t * self.q_width, 4))  # context transpose
        else:
            b.add("elementwise", self._stream(t * self.q_width, 4))
            b.add("attention", 2 * self._gemm(q_len, kv_len, job.head_dim, bh), 2)  # d(probs), d(V)
            if job.attention_dropout:
                b.add("elementwise", self._stream(scores, 5))  # dropout
            kernels = self._softmax_kernels(backward=True)
            b.add("elementwise", sum(self._stream(scores, moved) for moved in kernels), len(kernels))
            b.add("attention", 2 * self._gemm(q_len, job.head_dim, kv_len, bh), 2)  # d(Q), d(K)
        self._attention_after(b, backward, cp_comm)

    def _softmax_kernels(self, backward: bool) -> list[int]:
        """Bytes a score moves in each kernel of scale, mask and softmax (forward or backward).

        The fused kernel reads and writes each score once: ``[4]`` (backward ``[6]``).
        PyTorch's fallback (``FusedScaleMaskSoftmax.forward_torch_softmax``) runs its steps one
        kernel each on ``x``-byte scores (4 when fp16/bf16 scores are copied to fp32, else 2):
        the copy to fp32 (6), the query-key layer scaling's multiply (2x), the in-place mask
        (2x), the softmax (2x) and the copy back (6); autograd runs them backward, the
        softmax's gradient reading its output too (3x). 2021's fp16 default is 36 B forward
        and 40 backward in five kernels each; today's unfused bf16 8 and 10 in two."""
        job = self.job
        if job.fused_softmax_runs():
            return [6 if backward else 4]
        fp32_copy = job.softmax_fp32_copy()
        x = 4 if fp32_copy else 2  # bytes of a 16-bit score (fp32 runs: _stream doubles them)
        steps = [2 * x] if job.query_key_layer_scaling else []
        steps += [2 * x, 3 * x if backward else 2 * x]  # mask, softmax
        return [6, *steps, 6] if fp32_copy else steps

    def _attention_after(self, b: _Builder, backward: bool, cp_comm: str) -> None:
        t = self.tokens
        context_parallel.after(b, self.job, cp_comm, t * self.q_width * self.e, t * 2 * self.kv_width * self.e,
                               backward)

    # ------------------------------------------------------------------ a layer
    def _tp_in(self, b: _Builder, label: str) -> None:
        """Before a column-parallel GEMM: the sequence-parallel all-gather of its input."""
        if self.job.sequence_parallel:
            b.comm(label, ALL_GATHER, self.norm_tokens * self.job.hidden * self.e,
                   overlap=self.job.tp_comm_overlap)

    def _tp_out(self, b: _Builder, label: str, gemm_s: float = 0.0) -> None:
        """After a row-parallel GEMM (already added, ``gemm_s`` of it): the all-reduce
        (reduce-scatter with sequence parallelism) of its partial output. With
        ``--tp-comm-overlap`` Transformer Engine splits the GEMM into tp chunks and reduces
        each chunk's output while the next chunk computes: the first chunk's GEMM runs alone,
        the last chunk's collective is exposed, the rest run side by side."""
        job = self.job
        if job.tp == 1:
            return
        size = self.tokens * job.hidden * self.e
        kind = REDUCE_SCATTER if job.sequence_parallel else ALL_REDUCE
        if job.tp_comm_overlap and gemm_s > 0:
            later = gemm_s * (job.tp - 1) / job.tp
            b.add("gemm", -later, kernels=0)
            b.comm(label, kind, size * (job.tp - 1) // job.tp, overlap=True)
            b.add("gemm", later, kernels=0)
            b.comm(label + ".last", kind, size // job.tp)
            return
        b.comm(label, kind, size, overlap=job.tp_comm_overlap)

    def _te_host(self, b: _Builder, backward: bool) -> None:
        """Transformer Engine's Python around a layer's four linear modules (Megatron-Core's
        TE spec: ``linear_qkv`` and ``linear_fc1`` are ``TELayerNormColumnParallelLinear``,
        ``linear_proj`` and ``linear_fc2`` ``TERowParallelLinear``), beyond their launches."""
        if self.job.transformer_engine:
            b.host(4 * TE_MODULE_HOST_US[backward] * 1e-6)

    def layer_forward(self, b: _Builder, layer: LayerKind) -> None:
        job, h, n, moe = self.job, self.job.hidden, self.norm_tokens, layer.moe
        b.add("elementwise", self._stream(n * h, 4))  # input layer norm
        self._te_host(b, backward=False)
        self._tp_in(b, "attn.allgather")
        self._linear_fwd(b, h, self.q_width + 2 * self.kv_width, fused_cast=True)
        b.wait("qkv.wait")  # an overlapped all-gather (--tp-comm-overlap) runs beside its GEMM only
        self._query_key_kernels(b, backward=False)
        self._attention(b, False, layer.cp_comm)
        self._tp_out(b, "attn.allreduce", self._linear_fwd(b, self.q_width, h))
        bda = (7 if job.bias_dropout_fusion else 13) - (not job.hidden_dropout)  # no mask written at p = 0
        b.add("elementwise", self._stream(n * h, bda))
        b.add("elementwise", self._stream(n * h, 4))  # post-attention layer norm
        self._tp_in(b, "mlp.allgather")
        if moe:
            self._moe_forward(b)
            self._tp_out(b, "mlp.allreduce")
        else:
            self._tp_out(b, "mlp.allreduce", self._mlp_forward(b, self.ffn))
        b.add("elementwise", self._stream(n * h, bda))

    def _mlp_forward(self, b: _Builder, ffn: int, tokens: int | None = None, groups: int = 1) -> float:
        """The MLP's kernels (``groups`` experts of ``tokens`` each in grouped kernels);
        returns the time of its last (row-parallel) GEMM."""
        job, h = self.job, self.job.hidden
        t = self.tokens if tokens is None else tokens
        self._fp8_cast(b, (self.norm_tokens if tokens is None else t) * h * groups, fused=True)  # after the norm
        b.add("gemm", self._linear(t, (2 if job.swiglu else 1) * ffn, h, groups))
        b.wait("fc1.wait")  # an overlapped all-gather (--tp-comm-overlap) runs beside its GEMM only
        if job.swiglu:  # fused: both halves read, the product written (3 x 2 B an element of ffn)
            b.add("elementwise", self._stream(t * ffn * groups, 6 if job.bias_gelu_fusion else _UNFUSED_SWIGLU_FWD
                                              + (8 if job.bias_linear else 0)))  # the bias added to both halves
        else:
            b.add("elementwise", self._stream(t * ffn * groups, 4 if job.bias_gelu_fusion else 8))
        self._fp8_cast(b, t * ffn * groups, fused=True)
        seconds = self._linear(t, h, ffn, groups)
        b.add("gemm", seconds)
        return seconds

    # ------------------------------------------------------------------ mixture of experts
    def _routed(self) -> tuple[int, int, int]:
        """(token copies this GPU's experts process, local experts, an expert's width here):
        routing is taken as balanced, so each of the ep ranks gets its experts' share of
        ``T x topk`` copies; with expert tp = 1 the tp ranks split the tokens instead."""
        job = self.job
        copies = self.tokens * job.topk // (job.tp if job.etp == 1 else 1)
        return max(1, copies), job.experts // job.ep, job.moe_ffn // job.etp

    def _dispatch(self, b: _Builder, gathered: bool, label: str) -> None:
        """Megatron's default token dispatcher (``MoEAllGatherTokenDispatcher``) with ep > 1:
        every rank's tokens all-gathered over the expert-parallel ranks before the experts
        (each then picks the copies routed to its own), their outputs reduce-scattered back
        after; a backward runs the reverse (the reduce-scatter's is an all-gather). The
        gathered set is ep x the tokens a rank routes (``copies / topk``): ep - 1 of those
        arrive and leave, against the all-to-all's ``topk (ep - 1) / ep``. ``gathered``: the
        ranks hold the gathered set and reduce-scatter it back (else they gather it)."""
        job = self.job
        if job.ep == 1 or job.moe_alltoall:
            return
        shard = max(1, self._routed()[0] // job.topk) * job.hidden * self.e
        if gathered:
            b.comm(label, REDUCE_SCATTER, shard * job.ep, dim="ep")
        else:
            b.comm(label, ALL_GATHER, shard, dim="ep")

    def _moe_forward(self, b: _Builder) -> None:
        job, h, e = self.job, self.job.hidden, self.e
        copies, local, ffn = self._routed()
        b.add("gemm", self._gemm(self.tokens, job.experts, h))  # router
        b.add("elementwise", streaming_seconds(self.gpu, self.tokens * job.experts * 12))  # softmax, top-k
        self._dispatch(b, False, "moe.dispatch.allgather")
        b.add("elementwise", self._stream(copies * h, 4))  # permute
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.dispatch.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        self._each_expert(b, local, lambda into, groups: self._mlp_forward(into, ffn, max(1, copies // local), groups))
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.combine.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        b.add("elementwise", self._stream(copies * h, 6))  # unpermute and weigh
        self._dispatch(b, True, "moe.combine.reducescatter")
        if job.shared_ffn:
            self._mlp_forward(b, job.shared_ffn // job.tp)

    def _each_expert(self, b: _Builder, local: int, kernels: Callable[[_Builder, int], object]) -> None:
        """``kernels(builder, groups)`` for each MLP kernel of the rank's experts. Past
        :data:`SUMMED_EXPERTS` one by one they are alike: the first runs in place (a wait it
        closes), the rest are charged as copies of the second (10^7 experts took minutes)."""
        groups = self._expert_kernels(local)
        if len(groups) <= SUMMED_EXPERTS:
            for n in groups:
                kernels(b, n)
            return
        kernels(b, 1)
        one = _Builder(_Builder() if b.weights is not None else None)
        kernels(one, 1)
        b.add_copies(one, len(groups) - 1)

    def _expert_kernels(self, local: int) -> list[int]:
        """The experts each MLP kernel of a rank runs: all ``local`` in one grouped GEMM with
        ``--moe-grouped-gemm`` (GroupedMLP; Transformer Engine's GroupedLinear runs them on
        concurrent streams, which shares the SMs' waves the same way), else one after another
        (SequentialMLP, Megatron's default): each expert's few tiles fill a wave on their own."""
        return [local] if self.job.moe_grouped_gemm else [1] * local

    def _mlp_backward_gemms(self, b: _Builder, ffn: int, tokens: int, groups: int = 1) -> None:
        """An MLP's backward without its input-gradient collective (experts, shared expert)."""
        job, h = self.job, self.job.hidden
        w = 2 if job.swiglu else 1
        for n_in, n_out in ((ffn, h), (h, w * ffn)):
            self._fp8_cast(b, tokens * n_out * groups)
            b.add("gemm", self._linear(tokens, n_in, n_out, groups))
            b.wgrad("gemm", self._linear(n_in, n_out, tokens, groups))
            self._accumulate(b, n_in * n_out * groups)
        swiglu = 10 if job.bias_gelu_fusion else _UNFUSED_SWIGLU_BWD
        b.add("elementwise", self._stream(tokens * ffn * groups, swiglu if job.swiglu else 6))

    def _moe_backward(self, b: _Builder) -> None:
        job, h, e = self.job, self.job.hidden, self.e
        copies, local, ffn = self._routed()
        if job.shared_ffn:
            self._mlp_backward_gemms(b, job.shared_ffn // job.tp, self.tokens)
        self._dispatch(b, False, "moe.combine.bwd.allgather")
        b.add("elementwise", self._stream(copies * h, 6))  # unpermute's backward
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.combine.bwd.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        self._each_expert(b, local, lambda into, groups: self._mlp_backward_gemms(into, ffn, max(1, copies // local),
                                                                                  groups))
        if job.ep > 1 and job.moe_alltoall:
            b.comm("moe.dispatch.bwd.alltoall", ALL_TO_ALL, copies * h * e, dim="ep")
        b.add("elementwise", self._stream(copies * h, 4))  # permute's backward
        self._dispatch(b, True, "moe.dispatch.bwd.reducescatter")
        router = self._gemm(self.tokens, job.experts, h)  # each priced as the forward's product
        b.add("gemm", router)  # router dgrad
        b.wgrad("gemm", router)  # router wgrad

    def moe_parameters(self) -> tuple[int, int]:
        """(dense, expert) parameters an MoE layer adds over a dense one's attention, per GPU."""
        job, h = self.job, self.job.hidden
        _, local, ffn = self._routed()
        w = 3 if job.swiglu else 2
        return h * job.experts + w * h * job.shared_ffn // job.tp, local * w * h * ffn

    def layer_backward(self, b: _Builder, layer: LayerKind) -> None:
        """The backward of one layer. The input gradient of a column-parallel GEMM is
        all-reduced over tp (reduce-scattered with sequence parallelism); with the async
        all-reduce it runs beside that GEMM's weight-gradient GEMM."""
        h, n, moe = self.job.hidden, self.norm_tokens, layer.moe
        bda = 5 - (not self.job.hidden_dropout)  # no mask read at p = 0
        b.add("elementwise", self._stream(n * h, bda))  # bias-dropout-add
        self._te_host(b, backward=True)
        self._tp_in(b, "mlp.bwd.allgather")  # output gradient of the row-parallel GEMM (SP)
        if moe:
            self._moe_backward(b)
            self._input_grad_collective(b, "mlp.bwd.allreduce")
        else:
            self._mlp_backward(b)
        b.add("elementwise", self._stream(n * h, 6))  # layer norm
        b.add("elementwise", self._stream(n * h, bda))  # bias-dropout-add
        self._tp_in(b, "attn.bwd.allgather")
        self._linear_bwd(b, self.q_width, h)
        self._attention(b, True, layer.cp_comm)
        self._query_key_kernels(b, backward=True)
        self._input_grad(b, h, self.q_width + 2 * self.kv_width, "attn.bwd.allreduce")
        b.add("elementwise", self._stream(n * h, 6))  # input layer norm

    def _input_grad_collective(self, b: _Builder, label: str) -> None:
        job = self.job
        if job.tp > 1:
            kind = REDUCE_SCATTER if job.sequence_parallel else ALL_REDUCE
            b.comm(label, kind, self.tokens * job.hidden * self.e)

    def _mlp_backward(self, b: _Builder) -> None:
        job, h = self.job, self.job.hidden
        self._linear_bwd(b, self.ffn, h)
        if job.swiglu:
            b.add("elementwise", self._stream(self.tokens * self.ffn, 10 if job.bias_gelu_fusion else _UNFUSED_SWIGLU_BWD))
            self._input_grad(b, h, 2 * self.ffn, "mlp.bwd.allreduce")
        else:
            b.add("elementwise", self._stream(self.tokens * self.ffn, 6 if job.bias_gelu_fusion else 10))
            self._input_grad(b, h, self.ffn, "mlp.bwd.allreduce")

    def _input_grad(self, b: _Builder, n_in: int, n_out: int, label: str) -> None:
        """The backward of a column-parallel linear layer. With sequence parallelism its
        input was kept as this rank's 1/tp shard, so the backward all-gathers it again for
        the weight gradient, beside the input-gradient GEMM (Korthikanti et al., 4.2.2)."""
        job = self.job
        if job.sequence_parallel:
            b.comm(label.replace("allreduce", "input.allgather"), ALL_GATHER,
                   self.norm_tokens * job.hidden * self.e, overlap=True)
        self._fp8_cast(b, self.tokens * n_out)
        b.add("gemm", self._linear(self.tokens, n_in, n_out))  # dgrad
        wgrad = self._linear(n_in, n_out, self.tokens)
        if job.bias_linear:
            b.wgrad("elementwise", self._stream(self.tokens * n_out, 2))  # bias gradient
        if job.tp == 1:
            b.wgrad("gemm", wgrad)
            self._accumulate(b, n_in * n_out)
            return
        size = self.tokens * job.hidden * self.e
        kind = REDUCE_SCATTER if job.sequence_parallel else ALL_REDUCE
        overlap = job.async_tp_allreduce or job.tp_comm_overlap
        b.comm(label, kind, size, overlap=overlap)
        b.wgrad("gemm", wgrad)
        self._accumulate(b, n_in * n_out)
        b.wait(label + ".wait")  # Megatron waits for the input gradient's collective after the wgrad

    # ------------------------------------------------------------------ embedding and loss
    def embedding_forward(self, b: _Builder) -> None:
        h = self.job.hidden
        dropout = 7 - (not self.job.hidden_dropout)  # its mask: none at p = 0
        b.add("elementwise", self._stream(self.tokens * h, 4 + dropout))  # gather, add positions, dropout
        if self.job.tp > 1 and not self.job.sequence_parallel:
            b.comm("embedding.allreduce", ALL_REDUCE, self.tokens * h * self.e)
        elif self.job.sequence_parallel:
            b.comm("embedding.reducescatter", REDUCE_SCATTER, self.tokens * h * self.e)

    def embedding_backward(self, b: _Builder) -> None:
        job, h = self.job, self.job.hidden
        b.add("elementwise", self._stream(self.tokens * h, 5))
        b.wgrad("elementwise", streaming_seconds(self.gpu, job.vocab // job.tp * h * 4))  # zeroed gradient
        b.wgrad("elementwise", streaming_seconds(self.gpu, self.tokens * h * (self.e + 8)))  # scatter-add

    def _cross_entropy_bytes(self) -> tuple[int, int]:
        """HBM bytes a logit costs the vocabulary-parallel cross entropy, forward and backward.
        Unfused (``VocabParallelCrossEntropy``, Megatron-LM 2021 to today), six fp32 kernels:
        the cast (2 B read, 4 written), the max (4), the max subtracted in place (4 + 4), the
        exp in place (4 + 4), its sum (4), the division by the sum in place (4 + 4): 38 B; the
        softmax scaled in place and cast back to 16 bits, 14 B. ``--cross-entropy-loss-fusion`` runs Megatron-Core's three
        fused forward kernels (``fused_cross_entropy.py``): the fp32 copy with its max (2 B
        read, 4 written), the shifted exp with its sum in place (4 + 4), the division by the
        sum in place (4 + 4): 22 B; and one backward kernel that scales the saved softmax in
        place and writes the bf16 gradient (4 + 4 + 2): 10 B."""
        return (22, 10) if self.job.cross_entropy_fusion else (38, 14)

    def loss_forward(self, b: _Builder) -> None:
        job, h, v = self.job, self.job.hidden, self.job.vocab // self.job.tp
        b.add("elementwise", self._stream(self.norm_tokens * h, 4))  # final layer norm
        self._tp_in(b, "logits.allgather")
        b.add("gemm", self._gemm(self.tokens, v, h))
        b.add("elementwise", streaming_seconds(self.gpu, self.tokens * v * self._cross_entropy_bytes()[0]))
        if job.tp > 1:
            for what in ("max", "sum", "target"):
                b.comm(f"loss.{what}.allreduce", ALL_REDUCE, self.tokens * 4)

    def loss_backward(self, b: _Builder) -> None:
        job, h, v = self.job, self.job.hidden, self.job.vocab // self.job.tp
        b.add("elementwise", streaming_seconds(self.gpu, self.tokens * v * self._cross_entropy_bytes()[1]))
        b.add("gemm", self._gemm(self.tokens, h, v))
        b.wgrad("gemm", self._gemm(h, v, self.tokens))
        self._accumulate(b, h * v)
        if job.tp > 1:
            size = self.tokens * h * self.e
            if job.sequence_parallel:
                b.comm("logits.bwd.reducescatter", REDUCE_SCATTER, size)
            else:
                b.comm("logits.bwd.allreduce", ALL_REDUCE, size)
        b.add("elementwise", self._stream(self.norm_tokens * h, 6))

    # ------------------------------------------------------------------ a chunk
    def forward(self, layers: Sequence[LayerKind], first: bool, last: bool) -> list[Step]:
        """One micro-batch's forward through the chunk's ``layers``."""
        b = _Builder()
        job = self.job
        if first:
            b.params(job.embedding_params)
            self.embedding_forward(b)
        for layer in layers:
            fp8 = self.layer_fp8_weights(layer.moe)
            for params, dim in self.layer_grads(layer.moe):
                b.params(params, dim, fp8[dim])
            self.layer_forward(b, layer)
        if last:
            b.params(job.output_params)
            self.loss_forward(b)
        return b.done("forward")

    def recompute(self, layers: Sequence[LayerKind], first: bool) -> list[Step]:
        """What the backward recomputes before it runs: the ``layers`` whole (full
        recomputation), or the attention core of each (selective)."""
        b = _Builder()
        job = self.job
        if job.recompute == "full":
            if first:
                self.embedding_forward(b)
            for i, layer in enumerate(layers):
                unit_starts = job.recompute_method == "block" or i % max(1, job.recompute_layers) == 0
                if job.distribute_saved_activations and unit_starts:  # the unit's input, kept as 1/tp
                    b.comm("recompute.input.allgather", ALL_GATHER, self.tokens // job.tp * job.hidden * self.e)
                self.layer_forward(b, layer)
        elif job.recompute == "selective" and (job.transformer_engine or not job.flash_attention):
            # Megatron-Core checkpoints the core attention whatever its kernel (Transformer
            # Engine's fused attention is run forward again); the 2021 code skips it for flash
            for layer in layers:
                self._attention(b, False, layer.cp_comm)
        return b.done("recompute")

    def backward(self, layers: Sequence[LayerKind], first: bool, last: bool) -> list[Step]:
        """One micro-batch's backward through the chunk: input and weight gradients."""
        return self._backward(_Builder(), layers, first, last)

    def backward_split(self, layers: Sequence[LayerKind], first: bool,
                       last: bool) -> tuple[list[Step], list[Step]]:
        """The backward as a schedule that splits it runs it (zero-bubble schedules): the
        input gradients, which the previous stage waits for, then, as a task of its own, the
        weight gradients (their GEMMs, bias gradients, accumulation and embedding gradient)
        with the markers of the gradients they complete. An input-gradient collective that
        ran beside a weight-gradient GEMM has nothing beside it here."""
        weights = _Builder()
        return self._backward(_Builder(weights), layers, first, last), weights.done("wgrad")

    def _backward(self, b: _Builder, layers: Sequence[LayerKind], first: bool, last: bool) -> list[Step]:
        job = self.job
        if last:
            self.loss_backward(b)
            b.grads(job.output_params)
        for layer in reversed(layers):  # the last layer's gradient first
            self.layer_backward(b, layer)
            for params, dim in self.layer_grads(layer.moe):
                b.grads(params, dim)
        if first:
            self.embedding_backward(b)
            b.grads(job.embedding_params)
        return b.done("backward")

    def layer_parameters(self) -> int:
        """Parameters of one dense layer on one GPU."""
        job, h = self.job, self.job.hidden
        qkv = h * (self.q_width + 2 * self.kv_width)
        mlp = (3 if job.swiglu else 2) * h * self.ffn
        return qkv + self.q_width * h + mlp + job.layer_norm_params

    def layer_fp8_weights(self, moe: bool) -> dict[str, int]:
        """Of :meth:`layer_grads`, by group, the weights of the layer's Transformer Engine
        linear modules (QKV, projection, the MLP's or the shared and routed experts'): all but
        the layer norms and the router."""
        norms = self.job.layer_norm_params
        if not moe:
            return {"dp": self.layer_parameters() - norms, "edp": 0}
        dense, experts = self.layer_grads(moe)[0][0], self.moe_parameters()[1]
        return {"dp": dense - norms - self.job.hidden * self.job.experts, "edp": experts}  # less the router

    def layer_grads(self, moe: bool) -> list[tuple[int, str]]:
        """(parameters, the group that syncs their gradients) of one layer on one GPU: an MoE
        layer's experts are synced over the expert-data-parallel group ``edp``."""
        if not moe:
            return [(self.layer_parameters(), "dp")]
        dense, experts = self.moe_parameters()
        mlp = (3 if self.job.swiglu else 2) * self.job.hidden * self.ffn
        return [(self.layer_parameters() - mlp + dense, "dp"), (experts, "edp")]
