"""Around one simulation: one workload on every NPU, several jobs on one network, co-simulation,
observing, the checks made before time starts and the stall report when it cannot go on."""
