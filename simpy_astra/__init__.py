"""simpy-astra: a SimPy simulator of distributed ML training, figure-compatible with ASTRA-sim 2.0."""

__version__ = "0.1.0"
