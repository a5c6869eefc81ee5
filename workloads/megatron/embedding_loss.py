"""The ends of the model on one GPU: the embedding (first chunk of the first stage) and the
final layer norm, logits and vocabulary-parallel cross entropy (last chunk of the last stage).
"""

from __future__ import annotations

from simpy_astra.workloads.megatron.kernels import streaming_seconds
from simpy_astra.workloads.megatron.linear_kernels import ALL_REDUCE, REDUCE_SCATTER, LinearKernels
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder


class EmbeddingAndLoss(LinearKernels):
    """The embedding's and the loss's kernels and collectives (mixed into
    :class:`~simpy_astra.workloads.megatron.layers.ChunkModel`)."""

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
