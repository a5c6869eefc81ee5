"""A pipeline schedule of one's own (docs/megatron.md): 1F1B with every weight gradient moved
to the end of the step; examples/weights_last.yaml runs it."""

from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import Kind, Task


def weights_last(stage, pp, micro_batches, chunks):
    """1F1B with each backward split: input gradients where 1F1B has its backwards, then
    every weight gradient (memory: every micro-batch's activations are held to the end)."""
    order = [Task(Kind.BACKWARD_INPUT, t.micro_batch, 0) if t.kind is Kind.BACKWARD else t
             for t in registry.schedule("1f1b")(stage, pp, micro_batches, 1)]
    return order + [Task(Kind.BACKWARD_WEIGHT, m, 0) for m in range(micro_batches)]
