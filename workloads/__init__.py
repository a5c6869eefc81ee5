"""Workload inputs for simpy-astra: Chakra execution-trace (ET) schema, reader and writer."""
