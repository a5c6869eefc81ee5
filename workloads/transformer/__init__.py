"""The transformer generator (``simpy-astra generate transformer``, ``generate: transformer`` in a
scenario): LLM training and inference traces for dp x tp x pp x sp (x ep), STAGE's knobs.

Module by module: ``config`` (knobs, presets, checks), ``layers`` (each layer's ops, FLOPs,
tensors and collectives), ``schedule`` (micro-batches, 1F1B pipeline, gradient sync,
optimizer), ``memory`` (what each op holds), ``graph`` (NPU layout, comm groups), ``writer``
(ET files) and ``generator`` (the command line and the scenario entry point).
"""
