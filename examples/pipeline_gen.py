"""A workload generator of one's own (docs/generators.md, "A generator of your own"): a
pipeline of ``stages`` NPUs; stage s computes ``compute_us``, then sends ``size`` bytes to stage
s+1, which receives them before it computes."""

from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE


def pipeline(params, prefix):
    stages, size, compute_us = params["stages"], params["size"], params["compute_us"]
    for s in range(stages):
        nodes, after = [], []
        if s > 0:  # node 0: receive the activation from the stage before
            nodes.append(make_node(0, "recv", COMM_RECV_NODE, attrs={
                "is_cpu_op": False, "comm_src": s - 1, "comm_size": size, "comm_tag": 1}))
            after = [0]
        nodes.append(make_node(1, "forward", COMP_NODE, deps=after, duration_micros=compute_us,
                               attrs={"is_cpu_op": False}))
        if s < stages - 1:  # node 2: send it on
            nodes.append(make_node(2, "send", COMM_SEND_NODE, deps=[1], attrs={
                "is_cpu_op": False, "comm_dst": s + 1, "comm_size": size, "comm_tag": 1}))
        write_et(f"{prefix}.{s}.et", nodes)
    return None  # no comm-group JSON: every collective (none here) is on all NPUs
