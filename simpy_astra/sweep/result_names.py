"""The names of a sweep's results: each point's figures, which expressions may use, and
results.csv's other columns (apart from the sweep YAML's reading, which refuses axes called
by them, and the store, which writes them)."""

from __future__ import annotations

from simpy_astra.engine.memory_tracker import CATEGORIES
from simpy_astra.report.breakdown_columns import SWEEP_COLUMNS

# figures every point reports (see point.py); expressions may use them
# peak_memory_gb's parts: what the NPU with the largest peak holds then (memory_tracker.CATEGORIES)
PEAK_PARTS = tuple(f"peak_{c}_gb" for c in CATEGORIES)
#: the parts of a Megatron point's memory per GPU (TrainingFigures' memory_gib keys), each a
#: ``memory_<part>_gib`` column; "total" is the part of a report that does not split its memory
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "fp8_buffers", "total")
#: a generated Megatron job's own figures (workloads/megatron/report.py TrainingFigures.as_dict)
TRAINING_NAMES = ("iteration_time_ns", "tflops_per_gpu", "mfu", "tokens_per_s_per_gpu", "memory_per_gpu_gib",
                  *(f"memory_{p}_gib" for p in MEMORY_PARTS), "memory_capacity_gib", "fits")
# the last NPU's time by part (report/breakdown.py), summing to finish_ns; new names go last
# (a results.csv from before them resumes: its header is a subsequence of ours)
RESULT_NAMES = ("finish_ns", "exposed_comm_ns", "compute_ns", "comm_ns", "peak_memory_gb", *PEAK_PARTS,
                *SWEEP_COLUMNS, "cost_usd", "wall_s", *TRAINING_NAMES)
#: results.csv's columns that are neither an axis's nor a figure (store.py writes them)
ROW_COLUMNS = ("key", "status", "error", "warnings", "inputs_sha256", "same_run_as", "row_sha256")
DEFAULT_OBJECTIVE = "finish_ns"
DEFAULT_REPORT = ("finish_ns", "exposed_comm_ns", "compute_ns", "peak_memory_gb", "wall_s")
#: a Megatron job's figures of which more is better (a bare ``minimise:`` of one is warned of)
HIGHER_IS_BETTER = ("tflops_per_gpu", "mfu", "tokens_per_s_per_gpu")
#: a sweep of Megatron jobs answers in the job's own figures (``run`` prints them first)
MEGATRON_REPORT = ("iteration_time_ns", "tflops_per_gpu", "mfu", "memory_per_gpu_gib", "wall_s")
#: the files a sweep keeps in its --out folder (store.py, best.py, plots.py), beside its
#: point scenarios in points/: what another command's output there would replace
SWEEP_FILES = ("results.csv", "sweep.json", "best.json", "sweep.lock", "time.png", "split.png",
               "breakdown.png", "memory.png", "time_memory.png")
