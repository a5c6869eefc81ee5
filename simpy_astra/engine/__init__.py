"""The simulated machine: SimPy events, NPUs and their system layer, collectives' phases,
the NCCL timing of cluster presets, and the figures each NPU keeps."""
