"""The Megatron-LM generator (``generate: megatron`` in a scenario, ``simpy-astra generate
megatron``): a training step from ``pretrain_gpt.py``'s arguments on a cluster preset.

Module by module: ``arguments`` (the command line as users write it, read word by word by
``command_line`` with ``megatron_flags``, Megatron's own refusals in ``rules``, the cost
``bounds``), ``memory`` (memory per GPU by part, as Megatron allocates it), ``kernels`` (GPU kernel
times: GEMMs by shape, memory-bound kernels by bytes), ``layers`` (one micro-batch through a
model chunk: steps of compute and tensor-parallel collectives), ``schedule`` (1F1B and
interleaved 1F1B, pipeline sends, gradient sync, optimizer; the rank layout and groups),
``generator`` (the registry entry and the command), ``report`` (Megatron's figures of a run).
"""
