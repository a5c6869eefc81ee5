"""What a generated Megatron step may cost the simulator, checked before anything is built.

A typo of a few digits (``--num-layers 1000000``, ``--global-batch-size 100000000``,
``cluster.gpus: 1000000000``) would otherwise spend minutes and gigabytes building a trace
before any error. The estimate is arithmetic on the arguments, so it answers at once:

- GPUs: at most :data:`~simpy_astra.config.cluster_fields.MAX_GPUS`, the cluster's own bound (the rank
  layout and its communicator groups hold a few entries per GPU);
- trace nodes: a step holds up to :data:`NODES_PER_LAYER_PASS` nodes for each layer each
  micro-batch passes through (forward, recompute, backward; 9 to 17 measured, MoE and
  sequence parallelism the most), over all pipeline stages; at most :data:`MAX_NODES`, about
  1 KB each to build and simulate (the SC'21 1T row: about a million nodes, 934 MB), so
  about 4 GB;
- memory per GPU: at most :data:`MAX_GPU_BYTES` (1 PiB, ten thousand times any GPU's HBM);
  beyond it a tensor's size no longer fits the 64-bit fields of a Chakra trace.
"""

from __future__ import annotations

from simpy_astra.config.cluster_fields import MAX_GPUS
from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.memory import parts_bytes
from simpy_astra.workloads.trace_output import MAX_TRACE_NODES

MAX_NODES = MAX_TRACE_NODES
NODES_PER_LAYER_PASS = 18
MAX_GPU_BYTES = 2**50


def check_gpus(gpus: int, where: str) -> None:
    if gpus > MAX_GPUS:
        raise InputError(f"{where}: {gpus:,} GPUs are more than this simulator builds ({MAX_GPUS:,}: a rank "
                         f"layout and communicator groups per GPU); use fewer GPUs")


def trace_nodes(job: MegatronJob) -> int:
    """About how many nodes the step's traces hold (all pipeline stages)."""
    return job.micro_batches * job.num_layers * NODES_PER_LAYER_PASS + job.pp * 64


def check_job(job: MegatronJob, where: str) -> None:
    nodes = trace_nodes(job)
    if nodes > MAX_NODES:
        raise InputError(f"{where}: the step would hold about {nodes:,} trace nodes ({job.micro_batches:,} "
                         f"micro-batches per replica x {job.num_layers:,} layers), more than the bound of "
                         f"{MAX_NODES:,} (about 4 GB to simulate); use fewer layers or a smaller global batch")
    gpu_bytes = sum(parts_bytes(job).values())
    if gpu_bytes > MAX_GPU_BYTES:
        raise InputError(f"{where}: about {gpu_bytes / 2**50:,.0f} PiB per GPU (weights, optimizer and activations), "
                         f"beyond the bound of 1 PiB that this simulator's traces can describe; check --hidden-size, "
                         f"--num-experts, --max-position-embeddings and the batch and sequence sizes")
