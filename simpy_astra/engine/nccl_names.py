"""The names of NCCL's algorithms that a scenario's ``cluster:`` keys may give, apart from
the tuning model (:mod:`simpy_astra.engine.nccl_tuning`) that times them: the scenario
reader checks the names on every run, and the model's tables load only with a cluster."""

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER

#: NCCL's broadcast (``ncclFuncBroadcast``): only NCCL's model times it, on a cluster preset. No
#: system algorithm runs one (ASTRA-sim has none: it replays a trace's broadcast from its
#: recorded duration, and so does every run NCCL's model does not time)
BROADCAST = "broadcast"

#: the all-reduce's algorithms (each with its fitted ``nccl_<algo>_efficiency``)
ALGORITHMS = ("ring", "tree", "nvls")
#: the algorithms a scenario may force (``nccl_algo``, as ``NCCL_ALGO``: each for the collectives
#: that have it), and those of them only the tuning model times (a forced ring is also played as
#: messages)
FORCEABLE = (*ALGORITHMS, "pat")
MODEL_ONLY = ("tree", "nvls", "pat")
#: tuning.cc: the algorithms NCCL times for each collective (CollNet, needing SHARP switches,
#: is not modelled): the tree is the all-reduce's alone, PAT the all-gather's and the
#: reduce-scatter's alone (2.23 on), and a broadcast runs the ring alone (``if ((coll ==
#: ncclFuncBroadcast || coll == ncclFuncReduce) && a != NCCL_ALGO_RING) continue``, every release
#: from 2.18 to 2.30); the scenario reader names them in its warnings
COLLECTIVE_ALGORITHMS = {ALL_REDUCE: ALGORITHMS, REDUCE_SCATTER: ("ring", "nvls", "pat"),
                         ALL_GATHER: ("ring", "nvls", "pat"), BROADCAST: ("ring",)}
#: the rule a sweep's point breaks where NCCL has no forced algorithm for a collective (NCCL 2.24
#: on stops there, as a real job would): an invalid point, not a failure of the simulator
NO_FORCED_ALGORITHM = "NCCL has no forced algorithm here"
