"""The names of NCCL's algorithms that a scenario's ``cluster:`` keys may give, apart from
the tuning model (:mod:`simpy_astra.engine.nccl_tuning`) that times them: the scenario
reader checks the names on every run, and the model's tables load only with a cluster."""

#: the all-reduce's algorithms (each with its fitted ``nccl_<algo>_efficiency``)
ALGORITHMS = ("ring", "tree", "nvls")
#: the algorithms a scenario may force (``nccl_algo``, as ``NCCL_ALGO``: each for the collectives
#: that have it), and those of them only the tuning model times (a forced ring is also played as
#: messages)
FORCEABLE = (*ALGORITHMS, "pat")
MODEL_ONLY = ("tree", "nvls", "pat")
#: the rule a sweep's point breaks where NCCL has no forced algorithm for a collective (NCCL 2.24
#: on stops there, as a real job would): an invalid point, not a failure of the simulator
NO_FORCED_ALGORITHM = "NCCL has no forced algorithm here"
