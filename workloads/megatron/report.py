"""What a Megatron-LM user reads off a run: iteration time, model TFLOP/s per GPU, MFU, and
memory per GPU against the GPU's capacity.

TFLOP/s per GPU is Megatron's own figure: the paper's FLOP count of one step (with the
recomputation counted when full recomputation is on, as the SC'21 tables count it) over the
step time and the GPU count. MFU counts the model's FLOPs without recomputation against the
GPU's dense peak. Memory per GPU (the fullest pipeline stage: the first, unless an uneven split)
is split into weights, gradients, optimizer, activations and FP8 buffers as Megatron-LM
allocates them (:mod:`~simpy_astra.workloads.megatron.memory`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from simpy_astra.report.widths import PLAIN_WIDTH, first_fitting
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import Gpu
from simpy_astra.workloads.megatron.memory import parts_bytes


def gib(capacity: float) -> str:
    """A GPU's memory as the cluster gives it: ``80``, ``40.5``, ``0.25`` (rounded to a whole
    GiB, 0.25 read "of 0 GiB")."""
    return f"{capacity:,.0f}" if capacity == round(capacity) else f"{capacity:,.4g}"


#: what shrinks each part of a GPU's memory, as Megatron-LM's flags do it (fits 80 columns)
CURES = {
    "activations": "recomputation, a smaller micro-batch, more TP/PP",
    "optimizer": "the distributed optimizer, more DP, more TP/PP",
    "weights": "more tensor or pipeline parallelism (TP/PP)",
    "gradients": "more tensor or pipeline parallelism (TP/PP)",
    "fp8_buffers": "more tensor or pipeline parallelism (TP/PP)",
}


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

    def lines(self, width: int = PLAIN_WIDTH) -> list[str]:
        """The answer: the headline (step time, throughput), then memory against capacity;
        each fits 80 columns at realistic figures (TFLOP/s is Megatron's count, the
        recomputation included: the module's docstring). A headline the words between its
        figures would take past 80 (a small model's 300,000 tokens/s per GPU) says "per GPU"
        once, first: every figure stays, to 10^6 tokens/s per GPU at any step time. Printed
        ``width`` columns wide (COLUMNS=60) the memory line takes fewer words; the headline keeps
        every figure whatever the width (the answer is what a reader or a script takes from
        stdout's first line: a figure that vanished at COLUMNS=60 read as a figure not made)."""
        fits = "fits" if self.fits else "DOES NOT FIT"
        step, flops = step_time(self.iteration_time_ns), f"{self.tflops_per_gpu:,.1f} TFLOP/s"
        tokens, mfu = f"{self.tokens_per_s_per_gpu:,.0f} tokens/s", f"MFU {self.mfu * 100:.1f}%"
        width = min(width, PLAIN_WIDTH)
        wordings = (f"iteration time {step}, {flops} and {tokens} per GPU, {mfu}",
                    f"iteration time {step}; per GPU {flops}, {tokens}, {mfu}")
        memory, capacity = self._memory_text(), gib(self.capacity_gib)
        return [first_fitting(wordings),  # for 80 columns, whatever the width
                first_fitting((f"memory per GPU about {memory} GiB of {capacity} GiB ({fits})",
                               f"memory per GPU {memory} of {capacity} GiB ({fits})"), width)]

    def fit_advice(self) -> list[str]:
        """For a job that does not fit: what its memory is made of, largest first, and what
        shrinks the largest part ("DOES NOT FIT" alone left the user to guess); else nothing."""
        if self.fits:
            return []
        parts = sorted(self.memory_parts_gib.items(), key=lambda kv: -kv[1])
        largest = parts[0][0]
        cure = CURES.get(largest, CURES["weights"])
        made = ", ".join(f"{name.replace('_', ' ')} {value:,.1f}" for name, value in parts)
        return [*textwrap.wrap(f"made of (GiB): {made}", 80, initial_indent="  ", subsequent_indent="    "),
                f"  to fit, shrink {largest.replace('_', ' ')}: {cure}"]

    def _memory_text(self) -> str:
        """The memory to one decimal, or to as many more as it takes to stand on the side of the
        capacity the verdict says (80.04 GiB over 80 read "80.0 GiB of 80 GiB (DOES NOT FIT)")."""
        exact = self.memory_gib == self.capacity_gib
        text = f"{self.memory_gib:,.1f}"
        for places in range(1, 7):
            text = f"{self.memory_gib:,.{places}f}"
            shown = float(text.replace(",", ""))
            if (shown <= self.capacity_gib) == self.fits and (shown != self.capacity_gib or exact):
                break
        return text

    def as_dict(self) -> dict:
        return {"iteration_time_ns": self.iteration_time_ns, "tflops_per_gpu": round(self.tflops_per_gpu, 3),
                "mfu": round(self.mfu, 5), "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 3),
                "memory_per_gpu_gib": round(self.memory_gib, 3),
                "memory_gib": {k: round(v, 3) for k, v in self.memory_parts_gib.items()},
                "memory_capacity_gib": self.capacity_gib, "fits": int(self.fits)}


def step_time(ns: int) -> str:
    """A step's time to 3 decimals in the largest unit it fills (s, ms, us): seconds alone
    printed a 0.4 ms step as 0.000 s, and steps of 20.4 and 20.0 ms alike."""
    for scale, unit in ((1e9, "s"), (1e6, "ms")):
        if ns >= scale:
            return f"{ns / scale:,.3f} {unit}"
    return f"{ns / 1e3:,.3f} us"


def figures(job: MegatronJob, gpu: Gpu, iteration_time_ns: int) -> TrainingFigures:
    seconds = iteration_time_ns / 1e9
    tflops = job.model_flops() / (seconds * job.gpus) / 1e12 if seconds > 0 else 0.0
    mfu = job.model_flops_no_recompute() / (seconds * job.gpus * gpu.peak_flops(job.fp8)) if seconds > 0 else 0.0
    tokens = job.global_batch * job.seq / (seconds * job.gpus) if seconds > 0 else 0.0
    parts = {name: value / 2**30 for name, value in parts_bytes(job).items()}
    return TrainingFigures(iteration_time_ns, tflops, mfu, tokens, parts, gpu.hbm_gib)
