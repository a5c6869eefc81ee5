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
24 / 16: ``attention_core._ROPE_UNFUSED_FORWARD``, ``_BACKWARD``), a query-key layer norm 4 / 6.
A bias's gradient reads the output gradient once (none with ``--disable-bias-linear``).
The kernels and collectives of a layer's parts are priced by the classes it is made of:
:mod:`~simpy_astra.workloads.megatron.linear_kernels` (shapes, linear layers, MLP),
:mod:`~simpy_astra.workloads.megatron.attention_core`,
:mod:`~simpy_astra.workloads.megatron.mixture_of_experts` and
:mod:`~simpy_astra.workloads.megatron.embedding_loss`.
"""

from __future__ import annotations

from collections.abc import Sequence

from simpy_astra.workloads.megatron.attention_core import AttentionCore
from simpy_astra.workloads.megatron.batch_fetch import BatchFetch
from simpy_astra.workloads.megatron.embedding_loss import EmbeddingAndLoss
from simpy_astra.workloads.megatron.job import LayerKind, MegatronJob
from simpy_astra.workloads.megatron.kernels import TE_MODULE_HOST_US, Gpu
from simpy_astra.workloads.megatron.linear_kernels import ALL_GATHER
from simpy_astra.workloads.megatron.mixture_of_experts import MixtureOfExperts
from simpy_astra.workloads.megatron.steps import Step
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder


class ChunkModel(AttentionCore, MixtureOfExperts, EmbeddingAndLoss, BatchFetch):
    """Steps of one micro-batch through ``layers`` transformer layers (plus the embedding on
    the first chunk of the first stage, the logits and loss on the last one)."""

    # ------------------------------------------------------------------ a layer
    def _te_host(self, b: _Builder, backward: bool) -> None:
        """Transformer Engine's Python around one block's two linear modules (Megatron-Core's
        TE spec: ``linear_qkv`` and ``linear_fc1`` are ``TELayerNormColumnParallelLinear``,
        ``linear_proj`` and ``linear_fc2`` ``TERowParallelLinear``), beyond their launches,
        where the block starts: the host spends it there, before the block's kernels."""
        if self.job.transformer_engine:
            b.host(2 * TE_MODULE_HOST_US.of(backward) * 1e-6)

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
        self._te_host(b, backward=False)
        self._tp_in(b, "mlp.allgather")
        if moe:
            self._moe_forward(b)
            self._tp_out(b, "mlp.allreduce")
        else:
            self._tp_out(b, "mlp.allreduce", self._mlp_forward(b, self.ffn))
        b.add("elementwise", self._stream(n * h, bda))

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
        self._te_host(b, backward=True)
        self._tp_in(b, "attn.bwd.allgather")
        self._linear_bwd(b, self.q_width, h)
        self._attention(b, True, layer.cp_comm)
        self._query_key_kernels(b, backward=True)
        self._input_grad(b, h, self.q_width + 2 * self.kv_width, "attn.bwd.allreduce")
        b.add("elementwise", self._stream(n * h, 6))  # input layer norm

    # ------------------------------------------------------------------ a chunk
    def forward(self, layers: Sequence[LayerKind], first: bool, last: bool) -> list[Step]:
        """One micro-batch's forward through the chunk's ``layers``."""
        b = _Builder()
        job = self.job
        self.fetch_batch(b, first, last)
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
            self.report_loss(b)
        return b.done("forward")

    def recompute(self, layers: Sequence[LayerKind]) -> list[Step]:
        """What the backward recomputes before it runs: the ``layers`` whole (full
        recomputation), or the attention core of each (selective). Never the embedding:
        Megatron checkpoints inside the transformer block (``ParallelTransformer``,
        Megatron-Core's ``TransformerBlock._checkpointed_forward``), whose input the
        embedding computed once."""
        b = _Builder()
        job = self.job
        if job.recompute == "full":
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


def middle_chunk(job: MegatronJob, gpu: Gpu) -> tuple[ChunkModel, tuple[LayerKind, ...]]:
    """The model on ``gpu`` and the layers of chunk 0 of stage 1 (a middle one, no embedding
    or loss; stage 0 at pp 1): a micro-batch's passes through it are those every stage's
    layers run."""
    return ChunkModel(job, gpu), job.chunk_kinds(min(1, job.pp - 1), 0)
