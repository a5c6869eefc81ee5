"""Each micro-batch's own work outside the layers: fetching its batch (``get_batch``) at the
start of a chunk's forward, and reporting its loss after the loss, as each era's
``pretrain_gpt.py`` runs them.

- 2021-2022 (``6985e58``, ``mpu.broadcast_data``): every chunk of every stage fetches the
  batch. Tensor-parallel rank 0 copies the sizes to the GPU, broadcasts them over the tp group
  and reads them back (``sizes_cuda.cpu()``: the host waits for the GPU), copies the tokens
  (``b (s + 1)`` int64) up and broadcasts them; then ``get_ltor_masks_and_position_ids`` builds
  a causal ``s x s`` mask (``torch.ones`` in fp32, ``torch.tril``, ``< 0.5``), the loss mask
  and the positions, with tokens and labels made contiguous. The last stage's ``loss_func``
  all-reduces the loss over the data-parallel group each micro-batch
  (``average_losses_across_data_parallel_group``).
- Today (r0.8 ``get_batch_on_this_tp_rank``): only the chunk with the embedding and the one
  with the loss fetch; rank 0 copies each tensor up (``non_blocking``) and broadcasts it over
  the tp group: tokens and positions (first), labels and loss mask (last). No synchronisation.
  Not the ``b x s x s`` bool attention mask r0.8's dataset builds by default (``--no-create-
  attention-mask-in-dataloader`` drops it): at 1M tokens it would be a terabyte, so the long
  runs that were measured had it off, and Megatron-Bridge's loader, which a held-out table
  ran (``gpt_step.get_batch_from_iterator``), skips it and loads each rank's batch without a
  broadcast (left out: docs/megatron.md). The loss's NaN check (``--check-for-nan-in-loss-and-grad``: r0.8's
  ``assert not loss[0].isnan()``, today's ``rerun_state_machine.validate_result``) reads a CUDA
  tensor on the host: the host waits for the whole forward before it issues the backward.

A broadcast is written as Chakra's BROADCAST of its bytes: on a cluster preset NCCL's model
times it as NCCL's ring broadcast (:mod:`simpy_astra.engine.nccl_tuning`); elsewhere it is
replayed, as ASTRA-sim replays one, for the ``duration_micros`` the trace records (its bytes
once over the tp ring's link: :meth:`~simpy_astra.workloads.megatron.schedule.StageSchedule.
collective`). The host-to-device copies are
launches here; their bytes cross PCIe, which no preset describes (a 2,048-token micro-batch's
tokens are 16 KiB: left out).
"""

from __future__ import annotations

from simpy_astra.workloads.megatron.kernels import streaming_seconds
from simpy_astra.workloads.megatron.linear_kernels import ALL_REDUCE, BROADCAST, LinearKernels
from simpy_astra.workloads.megatron.steps import StepBuilder as _Builder

#: ``_MAX_DATA_DIM`` int64 sizes a key (``mpu/data.py``): one key, ``text``
_SIZES_BYTES = 5 * 8
#: host launches of 2021's loss report: the product with the mask, its sum, the mask's sum,
#: the division, the clone and the concatenation, the average's division, and the division
#: by the number of micro-batches (``pretrain_gpt.loss_func``, ``schedules.forward_step``)
_LOSS_REPORT_KERNELS_2021 = 8
#: today's: the product with the mask, its sum, the mask's sum and its cast, the concatenation,
#: the NaN check, the division by the micro-batches or tokens
_LOSS_REPORT_KERNELS = 7


class BatchFetch(LinearKernels):
    """``get_batch``'s and the loss report's kernels, collectives and host waits (mixed into
    :class:`~simpy_astra.workloads.megatron.layers.ChunkModel`)."""

    def _small(self, b: _Builder, moved_bytes: float = 0.0, kernels: int = 1) -> None:
        """``kernels`` memory-bound kernels (or copies) moving ``moved_bytes`` in all, each
        paying its launch gap on the GPU and its launch on the host."""
        seconds = streaming_seconds(self.gpu, moved_bytes, launch=False) + kernels * self.gpu.launch_us * 1e-6
        b.add("elementwise", seconds, kernels=kernels)

    def _broadcast(self, b: _Builder, label: str, size_bytes: int) -> None:
        if self.job.tp > 1:
            b.comm(f"batch.{label}.broadcast", BROADCAST, size_bytes)

    def fetch_batch(self, b: _Builder, first: bool, last: bool) -> None:
        """``get_batch`` before a chunk's forward (which chunks fetch: the module's docstring)."""
        job = self.job
        tokens = job.micro_batch * job.seq
        if job.legacy:
            self._small(b)  # the sizes copied up
            self._broadcast(b, "sizes", _SIZES_BYTES)
            b.sync("batch.sizes.cpu")
            self._small(b)  # the tokens copied up
            self._broadcast(b, "tokens", job.micro_batch * (job.seq + 1) * 8)
            # ones, tril and < 0.5 over an s x s fp32 mask (4 + 8 + 5 B an element); labels
            # and tokens made contiguous (16 B a token each), the loss mask (4), the positions
            self._small(b, job.seq * job.seq * 17 + tokens * 36 + job.seq * 8, kernels=7)
            return
        if not (first or last):
            return
        sent = [("tokens", 8), ("positions", 8)] * first + [("labels", 8), ("loss_mask", 4)] * last
        for label, element_bytes in sent:
            self._small(b)  # copied up on tp rank 0
            self._broadcast(b, label, tokens * element_bytes)

    def report_loss(self, b: _Builder) -> None:
        """After the loss (the last chunk's forward): 2021's all-reduce of the loss over the
        data-parallel group, or today's NaN check, which waits for the forward."""
        job = self.job
        if job.legacy:
            self._small(b, kernels=_LOSS_REPORT_KERNELS_2021)
            if job.dp > 1:
                b.comm("loss.report.allreduce", ALL_REDUCE, 4, dim="dp")
            return
        self._small(b, kernels=_LOSS_REPORT_KERNELS)
        if job.loss_nan_check:
            b.sync("loss.isnan")
