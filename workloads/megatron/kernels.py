"""How long one GPU kernel takes: GEMMs by shape, memory-bound kernels by bytes moved.

A roofline at peak is wrong by 1.5-2.5x for transformer training: real GEMMs lose to tile and
wave quantisation over the SMs, to the pipeline fill of a short reduction dimension and to
the memory system for skinny shapes, and a large share of a layer's time is kernels that only
stream memory (softmax, dropout, layer norm, GeLU, bias, residual adds). This module prices
each of those from the GPU's datasheet figures (:class:`Gpu`) and sustained efficiencies:

- ``tensor_efficiency``: the fraction of tensor-core peak one SM sustains in a GEMM's main
  loop on a large tile (clock throttling under load, instruction issue, synchronisation);
  ``fp8_efficiency`` the same of the FP8 peak (FP8 GEMMs lose more of theirs: twice the
  operations a cycle in the same power, and per-tensor scales applied in the epilogue).
- ``memory_efficiency``: the fraction of HBM bandwidth a streaming kernel sustains.

Another, ``attention_efficiency``, is the fraction of the tensor-core peak a fused attention
kernel (FlashAttention, cuDNN's fused attention) sustains over its products: its softmax's
exponentials on the special-function units, the online rescaling between the two products
and the backward's accumulation of query gradients all run inside its loop.

A GEMM ``C[m, n] = A[m, k] B[k, n]`` (``batch`` times) is cut into output tiles; each SM runs
one tile at a time, so the tiles run in ``ceil(tiles / SMs)`` waves. A tile of ``tm x tn``
streams ``(tm + tn)`` operand elements per step of k from L2, so its rate is the smaller of
the SM's tensor rate and its L2 bandwidth times the tile's intensity; its main loop also pays
a fixed fill and drain of ``GEMM_PIPELINE_K`` steps of k. The library picks the tile with the
least time (as cuBLAS's heuristics do); the whole GEMM is never faster than moving its
operands through HBM once. Every kernel also pays ``launch_us`` (the gap between back-to-back
kernels on one stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Gpu:
    """One GPU's figures (a preset's ``gpu:``); every field is a datasheet value except the
    sustained efficiencies (:mod:`simpy_astra.workloads.megatron.kernels`)."""

    name: str
    sms: int
    #: dense tensor-core peak for fp16/bf16, TFLOP/s
    tensor_tflops: float
    #: dense fp8 peak (0: no fp8), TFLOP/s
    fp8_tflops: float
    hbm_gb_s: float  # 10^9 B/s (a preset may write hbm_gbps)
    hbm_gib: float  # memory capacity
    l2_gb_s: float  # L2 bandwidth to the SMs, 10^9 B/s (a preset may write l2_gbps)
    tensor_efficiency: float
    #: the FP8 GEMMs' share of the FP8 peak (0 when the GPU has no FP8)
    fp8_efficiency: float
    memory_efficiency: float
    attention_efficiency: float
    launch_us: float

    def peak_flops(self, fp8: bool = False) -> float:
        return (self.fp8_tflops if fp8 and self.fp8_tflops else self.tensor_tflops) * 1e12


#: output tile shapes a GEMM library chooses among (CUTLASS / cuBLAS tensor-core tiles)
GEMM_TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))

#: SMs that communication kernels hold while a collective runs beside compute: NCCL runs one
#: CTA per channel (16 channels is its usual count on NVSwitch) and Transformer Engine's
#: userbuffers overlap takes 16 SMs by default; the compute beside it has the rest
COMM_SMS = 16

#: steps of k a tile's software pipeline spends filling and draining (multistage kernels keep
#: 3-4 stages of 32 elements of k in flight: CUTLASS's Ampere default is 3 stages x 32)
GEMM_PIPELINE_K = 96


class PassFigures(NamedTuple):
    """One figure of a forward pass and one of its backward."""

    forward: float
    backward: float

    def of(self, backward: bool) -> float:
        """The backward's figure if ``backward``, else the forward's."""
        return self.backward if backward else self.forward


#: host time PyTorch spends to issue one kernel of a Megatron layer in eager mode (Python,
#: the dispatcher, autograd's bookkeeping, the launch call): a micro-batch whose kernels
#: run faster than the host issues them waits for the host
HOST_US_PER_KERNEL = 10.0

#: host time a Transformer Engine linear module (``Linear``, ``LayerNormLinear``) spends beyond
#: its kernels' HOST_US_PER_KERNEL, in a forward pass and in a backward one, in us: its Python
#: (quantizer and workspace set-up, argument checks, autograd ``Function`` bookkeeping). TE's
#: own measurement on GB200 (TransformerEngine PR #3523, BF16, CPU time a call: Linear 51.2 us
#: forward and 276.5 forward + backward, LayerNormLinear 65.3 and 349.0), scaled to a DGX
#: H100's Xeon 8480C by the ratio TE issue #2053 measured for ``torch.nn.Linear``'s forward
#: (13.48 us there, 37.08 on GB200): forward 18.6 and 23.7 us for one and two kernels (6 us
#: beyond them on average), backward 81.9 and 103.1 us for two and three (67 us beyond). An
#: isolated backward also pays autograd's per-call start, so the backward figure is an upper
#: bound; older TE releases paid more (the same PR's "before": 13% to 28% more)
TE_MODULE_HOST_US = PassFigures(forward=6.0, backward=67.0)


def host_seconds(kernels: int) -> float:
    """Time the host needs to issue ``kernels`` kernels."""
    return kernels * HOST_US_PER_KERNEL * 1e-6


def gemm_seconds(gpu: Gpu, m: int, n: int, k: int, batch: int = 1, element_bytes: int = 2,
                 fp8: bool = False) -> float:
    """Time of ``batch`` GEMMs of ``m x k`` by ``k x n`` on ``gpu``."""
    if min(m, n, k, batch) <= 0:
        return 0.0
    efficiency = gpu.fp8_efficiency if fp8 and gpu.fp8_tflops else gpu.tensor_efficiency
    per_sm_flops = gpu.peak_flops(fp8) * efficiency / gpu.sms
    l2_per_sm = gpu.l2_gb_s * 1e9 / gpu.sms
    best = math.inf
    for tm, tn in GEMM_TILES:
        intensity = 2 * tm * tn / ((tm + tn) * element_bytes)  # FLOP per byte read from L2
        rate = min(per_sm_flops, l2_per_sm * intensity)
        tile_s = 2.0 * tm * tn * (k + GEMM_PIPELINE_K) / rate
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        waves = math.ceil(tiles / gpu.sms)
        best = min(best, waves * tile_s)
    moved = (m * k + k * n + m * n) * batch * element_bytes
    return max(best, streaming_seconds(gpu, moved, launch=False)) + gpu.launch_us * 1e-6


def sharing_sms(gpu: Gpu, seconds: float) -> float:
    """Compute that runs beside a collective's kernels: the SMs they hold are not the
    compute's (as if the compute ran on ``sms - COMM_SMS`` SMs)."""
    return seconds * gpu.sms / max(1, gpu.sms - COMM_SMS)


def beside_seconds(gpu: Gpu, compute_s: float, comm_s: float) -> float:
    """Compute of ``compute_s`` (alone) that starts beside a collective whose kernels hold
    ``COMM_SMS`` SMs for ``comm_s``: it runs on the rest while they run and on every SM after,
    so only the window costs it (an NCCL call returns its SMs when it ends, unlike Transformer
    Engine's overlapped GEMMs, which are launched on fewer SMs for their whole length)."""
    shared = sharing_sms(gpu, compute_s)
    if shared <= comm_s:
        return shared
    return compute_s + comm_s - comm_s * compute_s / shared


def streaming_seconds(gpu: Gpu, moved_bytes: float, launch: bool = True) -> float:
    """Time of a kernel that reads and writes ``moved_bytes`` of HBM in all (memory bound)."""
    t = moved_bytes / (gpu.hbm_gb_s * 1e9 * gpu.memory_efficiency)
    return t + (gpu.launch_us * 1e-6 if launch else 0.0)


#: query and key rows of one fused-attention tile (FlashAttention-2 and cuDNN's fused
#: attention run 128-row blocks for head dimensions up to 128)
ATTENTION_TILE = 128

#: keys' worth of a fused-attention CTA's time spent outside its loop: before its first
#: product it loads its query tile and the first key/value tile (double-buffered, so the
#: loop hides every later load), after its last it rescales and writes its output tile
#: (the backward: its dK/dV tile): about one tile of keys each side
ATTENTION_PIPELINE_KV = 2 * ATTENTION_TILE


def causal_fraction(seq: int) -> float:
    """Share of a causal score matrix's tiles a fused kernel computes: with ``n = seq /
    ATTENTION_TILE`` blocks a side it runs the ``n (n + 1) / 2`` on or below the diagonal,
    ``1/2 + ATTENTION_TILE / (2 seq)`` of them. Context parallelism's load-balanced chunks
    (rank ``i`` holds chunks ``i`` and ``2 cp - 1 - i``) give every rank the same share."""
    return min(1.0, 0.5 + ATTENTION_TILE / (2 * seq))


def flash_attention_seconds(gpu: Gpu, batch_heads: int, q_len: int, kv_len: int, head_dim: int,
                            causal: bool, backward: bool, seq: int | None = None) -> float:
    """A fused attention kernel (FlashAttention): each CTA takes ``ATTENTION_TILE`` query rows
    of one head and loops over the keys, the score tile kept on chip (the s x s matrix never
    reaches HBM), so its time is its products at ``attention_efficiency`` of the tensor peak,
    in waves of CTAs over the SMs. Forward: two products (QK^T, PV); backward: five
    (recomputed QK^T, dV, dP, dQ, dK). A causal mask skips the tiles above the diagonal of
    the ``seq``-long sequence (:func:`causal_fraction`). Each CTA also pays its fill and
    drain, :data:`ATTENTION_PIPELINE_KV` keys' worth (why short sequences run below the
    long-sequence rate). Never faster than reading Q, K, V and writing O once (and their
    gradients in the backward)."""
    products = 5 if backward else 2
    share = causal_fraction(seq or kv_len) if causal else 1.0
    per_sm_flops = gpu.peak_flops() * gpu.attention_efficiency / gpu.sms
    ctas = math.ceil(q_len / ATTENTION_TILE) * batch_heads
    cta_s = products * 2.0 * ATTENTION_TILE * (kv_len * share + ATTENTION_PIPELINE_KV) * head_dim / per_sm_flops
    element_bytes = 2  # bf16: Transformer Engine's fused attention runs in 16 bits under FP8 too
    moved = batch_heads * head_dim * element_bytes * (2 * q_len + 2 * kv_len) * (2 if backward else 1)
    work = math.ceil(ctas / gpu.sms) * cta_s
    return max(work, streaming_seconds(gpu, moved, launch=False)) + gpu.launch_us * 1e-6
