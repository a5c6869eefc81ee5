"""The base of a chunk's model: its shapes on one GPU, and the kernels of its linear layers
with the tensor-parallel collectives around them (Megatron's column- and row-parallel
linear layers and the MLP they make), as :class:`~simpy_astra.workloads.megatron.layers.ChunkModel`
and its parts (attention core, mixture of experts, embedding and loss) price them.
"""

from __future__ import annotations

from simpy_astra.workloads.chakra import types
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import Gpu, gemm_seconds, streaming_seconds
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder

# Chakra's collective kinds, read here by the Megatron modules (its numbers, not a copy of them)
ALL_REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER = (
    types.ALL_REDUCE, types.ALL_GATHER, types.BROADCAST, types.ALL_TO_ALL, types.REDUCE_SCATTER)
#: bytes an element of ffn that SwiGLU's unfused kernels move (``--no-bias-swiglu-fusion``:
#: Megatron-Core's ``glu``, ``silu(x1) * x2``): forward, SiLU reads x1 and writes its output
#: (4) and the product reads both and writes one (6); backward, the product's gradient reads
#: the incoming gradient, SiLU's output and x2 and writes two (10), SiLU's reads the gradient
#: and x1 and writes one (6), and the chunk's gradient concatenates both halves (8)
_UNFUSED_SWIGLU_FWD, _UNFUSED_SWIGLU_BWD = 10, 24


class LinearKernels:
    """A chunk's shapes on one GPU (``T`` tokens, the layer's widths split over ``tp``) and
    the kernels and collectives of its tensor-parallel linear layers."""

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

    # ------------------------------------------------------------------ tensor-parallel collectives
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
