"""The attention core of a layer on one GPU: the query-key kernels before it (query-key layer
norms, rotary embeddings), flash attention or the unfused score kernels (scale, mask, softmax,
dropout), and context parallelism's exchanges around it
(:mod:`~simpy_astra.workloads.megatron.context_parallel`).
"""

from __future__ import annotations

from typing import NamedTuple

from simpy_astra.workloads.megatron import context_parallel
from simpy_astra.workloads.megatron.kernels import flash_attention_seconds
from simpy_astra.workloads.megatron.linear_kernels import LinearKernels
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder


class _ElementwisePass(NamedTuple):
    """Memory-bound kernels of one pass: bytes each moves an element, and how many there are."""

    bytes_per_element: int
    kernels: int


#: unfused rotary embedding (``rope_utils._apply_rotary_pos_emb_bshd``), an element of q or k:
#: forward ``t * cos`` 4 bytes, ``_rotate_half``'s negated half 2 and concatenation 4, ``* sin``
#: 4, the sum 6, the final concatenation 4; backward the two products' gradients 4 + 4, the
#: negation's 2 and the two paths summed 6
_ROPE_UNFUSED_FORWARD = _ElementwisePass(bytes_per_element=24, kernels=6)
_ROPE_UNFUSED_BACKWARD = _ElementwisePass(bytes_per_element=16, kernels=4)
#: the fused kernel (``fused_apply_rotary_pos_emb``), either pass: reads and writes each element once
_ROPE_FUSED = _ElementwisePass(bytes_per_element=4, kernels=1)


class AttentionCore(LinearKernels):
    """The attention core's kernels (mixed into :class:`~simpy_astra.workloads.megatron.layers.ChunkModel`)."""

    def _query_key_kernels(self, b: _Builder, backward: bool) -> None:
        """Before the attention core, on this rank's queries and keys: the query-key layer
        norms (``--qk-layernorm``, over each head) and the rotary embedding (one fused kernel
        a tensor each way, or PyTorch's separate ones with ``--no-rope-fusion``)."""
        job, qk = self.job, self.tokens * (self.q_width + self.kv_width)
        if job.qk_layernorm:
            b.add("elementwise", self._stream(qk, 6 if backward else 4), 2)
        if job.rope:
            rope = _ROPE_FUSED if job.rope != "unfused" else _ROPE_UNFUSED_BACKWARD if backward else _ROPE_UNFUSED_FORWARD
            b.add("elementwise", self._stream(qk, rope.bytes_per_element), 2 * rope.kernels)

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
