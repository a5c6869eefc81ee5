"""What a Megatron-LM user reads off a run: iteration time, model TFLOP/s per GPU, MFU, and
memory per GPU against the GPU's capacity.

TFLOP/s per GPU is Megatron's own figure: the paper's FLOP count of one step (with the
recomputation counted when full recomputation is on, as the SC'21 tables count it) over the
step time and the GPU count. MFU counts the model's FLOPs without recomputation against the
GPU's dense peak. Memory per GPU (the stage that holds the most): weights, gradients and
Adam's state (mixed precision: 2 + 4 (fp32 gradient buffer with bf16, else 2) + 12 B per
parameter, the 12 B split over data-parallel ranks with the distributed optimizer), and
activations after Korthikanti et al. (MLSys 2023): per layer ``s b h (34 + 5 a s / h)`` bytes
split over tp (its Table 2), only each layer's input (``2 s b h``) with full recomputation,
for the micro-batches in flight on the first stage (``pp``, and ``(1 + (pp - 1) / (pp v))``
times that with v chunks).
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy_astra.config.cluster import Gpu
from simpy_astra.workloads.megatron.arguments import MegatronJob


@dataclass(frozen=True)
class TrainingFigures:
    """The figures of one simulated step; ``as_dict()`` is ``--json-out``'s ``training`` block
    and a sweep point's training columns (the key names are an interface: keep them)."""

    iteration_time_ns: int
    tflops_per_gpu: float
    mfu: float
    tokens_per_s_per_gpu: float
    #: memory of the fullest GPU by part (``weights``, ``gradients``, ``optimizer``,
    #: ``activations``, ...), GiB; the total is their sum
    memory_parts_gib: dict[str, float]
    capacity_gib: float

    @property
    def memory_gib(self) -> float:
        return sum(self.memory_parts_gib.values())

    @property
    def fits(self) -> bool:
        return self.memory_gib <= self.capacity_gib

    def lines(self) -> list[str]:
        """The answer: the headline (step time, throughput), then memory against capacity."""
        fits = "fits" if self.fits else "DOES NOT FIT"
        return [f"iteration time {self.iteration_time_ns / 1e9:.3f} s, {self.tflops_per_gpu:.1f} TFLOP/s "
                f"per GPU (Megatron's count), MFU {self.mfu * 100:.1f}%, "
                f"{self.tokens_per_s_per_gpu:,.0f} tokens/s per GPU",
                f"memory per GPU about {self.memory_gib:.1f} GiB of {self.capacity_gib:.0f} GiB ({fits})"]

    def as_dict(self) -> dict:
        return {"iteration_time_ns": self.iteration_time_ns, "tflops_per_gpu": round(self.tflops_per_gpu, 3),
                "mfu": round(self.mfu, 5), "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 3),
                "memory_per_gpu_gib": round(self.memory_gib, 3),
                "memory_gib": {k: round(v, 3) for k, v in self.memory_parts_gib.items()},
                "memory_capacity_gib": self.capacity_gib, "fits": int(self.fits)}


def memory_bytes(job: MegatronJob) -> float:
    """Bytes on the GPU of the first pipeline stage (the most activations in flight)."""
    per_gpu_params = job.parameters() / (job.tp * job.pp)
    grad = 4 if job.precision in ("bf16", "fp32") else job.element_bytes
    optimizer = 12 / (job.dp * job.cp if job.distributed_optimizer else 1)
    states = per_gpu_params * (job.element_bytes + grad + optimizer)
    s, b, h, a = job.seq // job.cp, job.micro_batch, job.hidden, job.heads
    layers = job.num_layers / job.pp
    if job.recompute == "full":
        per_layer = 2 * s * b * h / (job.tp if job.sequence_parallel else 1)
        working = s * b * h * (34 + 5 * a * s / h) / job.tp  # one layer recomputed at a time
    elif job.recompute == "selective" or job.flash_attention:
        per_layer, working = 34 * s * b * h / job.tp, 0.0
    else:
        per_layer, working = s * b * h * (34 + 5 * a * s / h) / job.tp, 0.0
    in_flight = min(job.pp, job.micro_batches)
    if job.virtual_stages > 1:
        in_flight *= 1 + (job.pp - 1) / (job.pp * job.virtual_stages)
    return states + per_layer * layers * in_flight + working


def figures(job: MegatronJob, gpu: Gpu, iteration_time_ns: int) -> TrainingFigures:
    seconds = iteration_time_ns / 1e9
    tflops = job.model_flops() / (seconds * job.gpus) / 1e12 if seconds > 0 else 0.0
    mfu = job.model_flops_no_recompute() / (seconds * job.gpus * gpu.peak_flops(job.fp8)) if seconds > 0 else 0.0
    tokens = job.global_batch * job.seq / (seconds * job.gpus) if seconds > 0 else 0.0
    parts = {"total": memory_bytes(job) / 2**30}
    return TrainingFigures(iteration_time_ns, tflops, mfu, tokens, parts, gpu.hbm_gib)
