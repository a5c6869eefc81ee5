"""``convert pytorch`` on host traces written here (the JSON PyTorch's ExecutionTraceObserver
writes, a few nodes each, with PyTorch 2.3's collective attributes), with Kineto traces, with
several ranks, and on bad traces. Expected node sets and sizes are counted by hand below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.cli.main import main as cli_main
from simpy_astra.workloads.chakra import read_et
from simpy_astra.workloads.chakra.types import (
    ALL_GATHER,
    ALL_REDUCE,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    METADATA_NODE,
)
from simpy_astra.workloads.pytorch import mlc
from simpy_astra.workloads.pytorch.convert import convert

SCHEMA = "1.0.3-chakra.0.0.4"
GROUPS = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [], "group_size": 2},
          {"pg_name": "tp", "pg_desc": "tensor_parallel", "backend_config": "cuda:nccl", "ranks": [0, 1],
           "group_size": 2}]


def tensor(tid: int, numel: int, elem_bytes: int) -> list:
    return [tid, tid + 1000, 0, numel, elem_bytes, "cuda:0"]


def op(nid: int, name: str, parent: int, inputs: list | None = None, outputs: list | None = None,
       attrs: dict | None = None, rf_id: int | None = None) -> dict:
    """A node as ExecutionTraceObserver writes it (tensor lists typed ``Tensor(...)``)."""
    def args(values: list | None) -> dict:
        values = values or []
        kinds = ["Tensor(float)" if isinstance(v, list) else "Int" if isinstance(v, int) else "String"
                 for v in values]
        return {"values": values, "shapes": [[] for _ in values], "types": kinds}

    base = {"rf_id": rf_id if rf_id is not None else nid, "fw_parent": 0, "seq_id": -1, "scope": 0, "tid": 1,
            "fw_tid": 0, "op_schema": ""}
    base.update(attrs or {})
    return {"id": nid, "name": name, "ctrl_deps": parent, "inputs": args(inputs), "outputs": args(outputs),
            "attrs": [{"name": k, "type": "string", "value": v} for k, v in base.items()]}


def comms(name: str, in_nelems: int | None, dtype: str, pg: str) -> dict:
    attrs = {"collective_name": name, "dtype": dtype, "pg_name": pg, "pg_desc": "", "pg_size": 2,
             "out_msg_nelems": in_nelems, "in_split_size": "[]", "out_split_size": "[]",
             "global_rank_start": 0, "global_rank_stride": 1}
    if in_nelems is not None:
        attrs["in_msg_nelems"] = in_nelems
    return attrs


def host_trace(rank: int = 0, allreduce_nelems: int | None = 1024, extra_allgather: bool = False,
               p2p: bool = True) -> dict:
    """Rank ``rank`` of a 2-rank job: a matmul, an all-reduce on group 'tp' of its output,
    a wait, a relu reading the all-reduced tensor, an all-gather on the world group, and (with
    ``p2p``) a send to / receive from the other rank."""
    peer = 1 - rank
    kind = "send" if rank == 0 else "recv"
    nodes = [
        op(1, "[pytorch|profiler|execution_trace|thread]", 0),
        op(2, "## process_group:init ##", 1, [json.dumps(GROUPS)]),
        op(3, "aten::mm", 1, [tensor(10, 4, 4), tensor(11, 4, 4)], [tensor(100, 1024, 2)]),
        op(4, "c10d::allreduce_", 1, [tensor(100, 1024, 2)], [tensor(100, 1024, 2)]),
        op(5, "record_param_comms", 4, [tensor(100, 1024, 2), 7, rank, "allreduce"], [tensor(100, 1024, 2)],
           comms("allreduce", allreduce_nelems, "BFloat16", "tp")),
        op(6, "nccl:all_reduce", 5, [tensor(100, 1024, 2)]),
        op(7, "record_param_comms", 1, [7, rank, "wait"], [], comms("wait", 0, "Byte", "tp")),
        op(8, "aten::relu", 1, [tensor(100, 1024, 2)], [tensor(101, 1024, 2)]),
        op(9, "c10d::allgather_", 1, [tensor(102, 1024, 4)], [tensor(103, 2048, 4)]),
        op(10, "record_param_comms", 9, [tensor(102, 1024, 4), 8, rank, "all_gather"], [tensor(103, 2048, 4)],
           comms("all_gather", 1024, "Float", "0")),
        op(11, f"c10d::{kind}", 1, [tensor(104, 256, 2)], [tensor(104, 256, 2)]),
        op(12, "record_param_comms", 11, [tensor(104, 256, 2), 9, peer, kind], [tensor(104, 256, 2)],
           comms(kind, 256, "Half", "0")),
    ]
    if not p2p:
        nodes = nodes[:-2]
    if extra_allgather:
        nodes.append(op(13, "c10d::allgather_", 1, [tensor(105, 8, 4)], [tensor(106, 16, 4)]))
        nodes.append(op(14, "record_param_comms", 13, [tensor(105, 8, 4), 10, rank, "all_gather"],
                        [tensor(106, 16, 4)], comms("all_gather", 8, "Float", "0")))
    return {"schema": SCHEMA, "pid": 1, "time": "2026-01-01 00:00:00", "start_ts": 0, "finish_ts": 1,
            "nodes": nodes}


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def by_id(et: Path) -> dict:
    return {n.id: n for n in read_et(str(et))[1]}


def attr(node, name: str):
    return node.attrs[name][1]


# hand-counted: the thread's direct callees (2..12) less the wait (7) and the callees' callees;
# the collectives take the id of their record_param_comms node
EXPECTED_TYPES = {2: METADATA_NODE, 3: COMP_NODE, 5: COMM_COLL_NODE, 8: COMP_NODE, 10: COMM_COLL_NODE,
                  12: COMM_SEND_NODE}


def test_host_only_trace_has_its_collectives_with_recorded_sizes(tmp_path):
    host = write(tmp_path / "host.json", host_trace())
    assert cli_main(["convert", "pytorch", "--host", str(host), "--rank", "0",
                     "--output", str(tmp_path / "pt")]) == 0
    nodes = by_id(tmp_path / "pt.0.et")
    assert {i: n.type for i, n in nodes.items()} == EXPECTED_TYPES
    allreduce, allgather, send = nodes[5], nodes[10], nodes[12]
    # 1024 BFloat16 elements = 2048 B on group 'tp' (renumbered 1); 1024 floats = 4096 B in
    assert (attr(allreduce, "comm_type"), attr(allreduce, "comm_size"), attr(allreduce, "pg_name")) == \
        (ALL_REDUCE, 2048, "1")
    assert (attr(allgather, "comm_type"), attr(allgather, "comm_size"), attr(allgather, "pg_name")) == \
        (ALL_GATHER, 4096, "0")
    assert (attr(send, "comm_src"), attr(send, "comm_dst"), attr(send, "comm_size")) == (0, 1, 512)
    # the all-reduce waits for the matmul that wrote its input; the relu reads its output
    assert 3 in allreduce.deps and set(nodes[8].deps) == {3, 5}
    assert allgather.deps == (8, 5) and send.deps == (8, 10)
    assert json.loads((tmp_path / "pt.json").read_text()) == {"1": [0, 1]}
    assert '"pg_name": "1"' in nodes[2].inputs_values


def kineto(gemm_us: float = 125.4, nccl_nelems: int = 1024, all_gather: bool = False) -> dict:
    """Rank 0's Kineto trace: the matmul's GEMM kernel, the all-reduce's NCCL kernel and (with
    ``all_gather``) the all-gather's."""
    def cpu(name, rf, ext, ts):
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": 5,
                "args": {"External id": ext, "Record function id": rf}}

    def launch(corr, ext, ts):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 2,
                "args": {"correlation": corr, "External id": ext}}

    return {"traceEvents": [
        cpu("aten::mm", 3, 30, 10), launch(300, 30, 11),
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "ts": 20, "dur": gemm_us,
         "args": {"correlation": 300, "External id": 30, "stream": 7}},
        cpu("record_param_comms", 5, 50, 200), cpu("nccl:all_reduce", 6, 60, 201), launch(600, 60, 202),
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, "
         "unsigned long, ncclWork*)", "ts": 210, "dur": 40.0,
         "args": {"correlation": 600, "External id": 60, "stream": 20, "In msg nelems": nccl_nelems,
                  "Out msg nelems": nccl_nelems, "dtype": "BFloat16", "Process Group Name": "tp"}},
    ] + ([
        cpu("record_param_comms", 10, 100, 300), launch(1000, 100, 301),
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, "
         "ncclWork*)", "ts": 310, "dur": 30.0,
         "args": {"correlation": 1000, "External id": 100, "stream": 20, "In msg nelems": 1024,
                  "Out msg nelems": 2048, "dtype": "Float", "Process Group Name": "0"}},
    ] if all_gather else [])}


def test_host_and_kineto_link_with_our_linker(tmp_path, monkeypatch):
    monkeypatch.setattr(mlc, "available", lambda: False)  # our writer, whatever is installed
    host = write(tmp_path / "host.json", host_trace())
    device = write(tmp_path / "kineto.json", kineto())
    _, _, paths = convert(str(host), str(device), str(tmp_path / "pt"), 0)
    assert paths == {0: "own linker + host trace"}
    nodes = by_id(tmp_path / "pt.0.et")
    assert {i: n.type for i, n in nodes.items()} == EXPECTED_TYPES
    assert nodes[3].duration_micros == 125  # the GEMM kernel's 125.4 us
    assert nodes[8].duration_micros == 0  # the relu launched no kernel in this trace
    assert attr(nodes[5], "comm_size") == 2048  # confirmed by the kernel: 1024 x BFloat16


def test_kernel_that_disagrees_on_size_is_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mlc, "available", lambda: False)
    host = write(tmp_path / "host.json", host_trace())
    device = write(tmp_path / "kineto.json", kineto(nccl_nelems=512))
    assert cli_main(["convert", "pytorch", "--host", str(host), "--device", str(device),
                     "--output", str(tmp_path / "pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {host}: node '5 (record_param_comms)': collective 'allreduce' is 2048 B")
    assert "1024 B" in err and "\n" not in err


def test_mlc_chakra_is_not_used_where_it_would_drop_communication(tmp_path, monkeypatch):
    """A send (mlc-chakra writes it without its peer) or a collective without a linked kernel
    (mlc-chakra would drop it): our writer takes the linked trace."""
    monkeypatch.setattr(mlc, "available", lambda: True)
    host = write(tmp_path / "host.json", host_trace())  # a send; an all-gather without kernel
    device = write(tmp_path / "kineto.json", kineto())
    assert convert(str(host), str(device), str(tmp_path / "pt"), 0)[2] == {0: "own linker + host trace"}
    host = write(tmp_path / "host.json", host_trace(p2p=False))
    assert convert(str(host), str(device), str(tmp_path / "pt"), 0)[2] == {0: "own linker + host trace"}


@pytest.mark.skipif(not mlc.available(), reason="mlc-chakra is not installed (pip install 'simpy-astra[pytorch]')")
def test_linked_trace_goes_to_mlc_chakra_and_agrees_with_ours(tmp_path, monkeypatch):
    """Where both apply (a linked trace, every collective with its kernel): mlc-chakra's
    converter, fed by our linker, writes the same collectives (type, bytes, group, order) and
    the same kernel time as our writer."""
    host = write(tmp_path / "host.json", host_trace(p2p=False))
    device = write(tmp_path / "kineto.json", kineto(all_gather=True))
    _, _, paths = convert(str(host), str(device), str(tmp_path / "mlc"), 0)
    assert paths == {0: "own linker + mlc-chakra"}
    theirs = list(by_id(tmp_path / "mlc.0.et").values())
    monkeypatch.setattr(mlc, "available", lambda: False)
    convert(str(host), str(device), str(tmp_path / "own"), 0)
    ours = list(by_id(tmp_path / "own.0.et").values())

    def colls(nodes):
        return [(attr(n, "comm_type"), attr(n, "comm_size"), attr(n, "pg_name")) for n in nodes
                if n.type == COMM_COLL_NODE]

    # 1024 BFloat16 = 2048 B on 'tp' (group 1); 1024 floats = 4096 B on the world group
    assert colls(theirs) == colls(ours) == [(ALL_REDUCE, 2048, "1"), (ALL_GATHER, 4096, "0")]
    assert sum(n.duration_micros for n in theirs if n.type == COMP_NODE) == 125
    assert sum(n.duration_micros for n in ours if n.type == COMP_NODE) == 125


def test_folder_of_ranks_converts_in_one_call(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    write(folder / "rank_0.json", host_trace(0))
    write(folder / "rank_1.json", host_trace(1))
    assert cli_main(["convert", "pytorch", "--host", str(folder), "--output", str(tmp_path / "job")]) == 0
    r0, r1 = by_id(tmp_path / "job.0.et"), by_id(tmp_path / "job.1.et")
    assert {i: n.type for i, n in r1.items()} == {**EXPECTED_TYPES, 12: COMM_RECV_NODE}
    assert (attr(r0[12], "comm_src"), attr(r0[12], "comm_dst")) == (0, 1)
    assert (attr(r1[12], "comm_src"), attr(r1[12], "comm_dst")) == (0, 1)
    assert attr(r0[12], "comm_tag") == attr(r1[12], "comm_tag")
    scenario = {
        "workload": str(tmp_path / "job"), "comm_groups": str(tmp_path / "job.json"),
        "system": {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10,
                   "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": 50,
                   "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
                   "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]},
        "network": {"topology": ["Ring"], "npus_count": [2], "bandwidth": [50.0], "latency": [500.0]},
    }
    path = write(tmp_path / "scenario.yaml", scenario)
    assert cli_main(["run", str(path), "--quiet", "--json-out", str(tmp_path / "fig.json")]) == 0
    npus = json.loads((tmp_path / "fig.json").read_text())["npus"]
    assert all(n["comm_time"] > 0 for n in npus.values())


def test_ranks_that_disagree_are_named(tmp_path, capsys):
    folder = tmp_path / "traces"
    folder.mkdir()
    write(folder / "rank_0.json", host_trace(0))
    write(folder / "rank_1.json", host_trace(1, allreduce_nelems=2048))
    assert cli_main(["convert", "pytorch", "--host", str(folder), "--output", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {folder / 'rank_1.json'}: node '5 (record_param_comms)': collective #1 of "
                          f"group 1 is allreduce of 4096 B, but rank 0")
    assert not list(tmp_path.glob("job*"))  # no half-written set of traces
    write(folder / "rank_1.json", host_trace(1, extra_allgather=True))
    assert cli_main(["convert", "pytorch", "--host", str(folder), "--output", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {folder / 'rank_0.json'}: rank 0 runs 1 collectives of group 0 but rank 1 "
                   f"({folder / 'rank_1.json'}) runs 2; expected the ranks of one job")


@pytest.mark.parametrize("content, expected", [
    ("{not json", "is not JSON"),
    ({"schema": "1.0.1", "nodes": []}, "field 'schema' is '1.0.1'; expected a Chakra host trace schema"),
    ({"traceEvents": []}, "is not a PyTorch execution trace"),
])
def test_bad_traces_are_one_line_errors(tmp_path, capsys, content, expected):
    host = write(tmp_path / "bad.json", content)
    assert cli_main(["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {host}: ") and expected in err and "\n" not in err


def test_collective_without_sizes_names_the_node(tmp_path, capsys):
    trace = host_trace(allreduce_nelems=None)
    for node in trace["nodes"]:  # and no tensor to measure
        if node["id"] == 5:
            node["inputs"] = {"values": [7, 0, "allreduce"], "shapes": [[], [], []], "types": ["Int", "Int", "String"]}
    host = write(tmp_path / "host.json", trace)
    assert cli_main(["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {host}: node '5 (record_param_comms)': collective 'allreduce' has no size: expected "
                   f"attributes 'in_msg_nelems' and 'dtype' (PyTorch 2.3+) or input tensors")


def test_c10d_collective_without_record_param_comms_is_read_from_its_tensors(tmp_path):
    """A backend that records no record_param_comms: the c10d:: operator's tensors give the size
    (allreduce_ of 256 floats: 1024 B; allgather_ of 2 x 8 floats from 8 floats in: 32 B)."""
    trace = host_trace(p2p=False)
    trace["nodes"] = [n for n in trace["nodes"] if n["name"] not in ("record_param_comms", "nccl:all_reduce")]
    replaced = {4: op(4, "c10d::allreduce_", 1, [[tensor(100, 256, 4)]], [[tensor(100, 256, 4)]]),
                9: op(9, "c10d::allgather_", 1, [[[tensor(107, 8, 4), tensor(108, 8, 4)]],
                                                 [tensor(102, 8, 4)], "<Object>", -1])}
    trace["nodes"] = [replaced.get(n["id"], n) for n in trace["nodes"]]
    host = write(tmp_path / "host.json", trace)
    convert(str(host), None, str(tmp_path / "pt"), 0)
    nodes = by_id(tmp_path / "pt.0.et")
    assert {i: n.type for i, n in nodes.items()} == {2: METADATA_NODE, 3: COMP_NODE, 4: COMM_COLL_NODE,
                                                     8: COMP_NODE, 9: COMM_COLL_NODE}
    assert (attr(nodes[4], "comm_type"), attr(nodes[4], "comm_size")) == (ALL_REDUCE, 1024)
    assert (attr(nodes[9], "comm_type"), attr(nodes[9], "comm_size")) == (ALL_GATHER, 32)


def test_device_trace_of_another_run_is_one_line_error(tmp_path, capsys):
    host = write(tmp_path / "host.json", host_trace())
    events = kineto()["traceEvents"]
    for e in events:
        if e["cat"] == "cpu_op":
            e["args"]["Record function id"] += 1000
            e["name"] = "other::" + e["name"]
    device = write(tmp_path / "kineto.json", {"traceEvents": events})
    assert cli_main(["convert", "pytorch", "--host", str(host), "--device", str(device),
                     "--output", str(tmp_path / "pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {device}: no operator of the device trace matches one of {host}")
    write(tmp_path / "kineto.json", "[1, 2")
    assert cli_main(["convert", "pytorch", "--host", str(host), "--device", str(device),
                     "--output", str(tmp_path / "pt")]) == 2
    assert capsys.readouterr().err.strip().startswith(f"error: {device}: is not JSON")


def test_kineto_without_record_function_ids_joins_by_call_order(tmp_path, monkeypatch):
    monkeypatch.setattr(mlc, "available", lambda: False)
    events = kineto()["traceEvents"]
    for e in events:
        e["args"].pop("Record function id", None)
    host = write(tmp_path / "host.json", host_trace())
    device = write(tmp_path / "kineto.json", {"traceEvents": events})
    convert(str(host), str(device), str(tmp_path / "pt"), 0)
    assert by_id(tmp_path / "pt.0.et")[3].duration_micros == 125  # aten::mm's GEMM, first call of its name


def test_collective_on_an_undescribed_group_names_the_node(tmp_path, capsys):
    trace = host_trace()
    for node in trace["nodes"]:
        if node["id"] == 10:
            node["attrs"] = [a if a["name"] != "pg_name" else dict(a, value="ep") for a in node["attrs"]]
    host = write(tmp_path / "host.json", trace)
    assert cli_main(["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {host}: node '10 (record_param_comms)': process group 'ep' of collective 'all_gather' is not "
        f"listed by '## process_group:init ##'; expected a group the trace describes")


def test_operator_with_kernels_and_a_collective_keeps_its_compute(tmp_path, monkeypatch):
    """c10d::allreduce_ also launched a 3 us copy kernel: a compute node (its id) of 3 us comes
    before the all-reduce, which waits for it."""
    monkeypatch.setattr(mlc, "available", lambda: False)
    events = kineto()["traceEvents"] + [
        {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "ts": 190, "dur": 30,
         "args": {"External id": 40, "Record function id": 4}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 191, "dur": 1,
         "args": {"correlation": 400, "External id": 40}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 195, "dur": 3.0,
         "args": {"correlation": 400, "External id": 40, "stream": 7}}]
    host = write(tmp_path / "host.json", host_trace())
    device = write(tmp_path / "kineto.json", {"traceEvents": events})
    convert(str(host), str(device), str(tmp_path / "pt"), 0)
    nodes = by_id(tmp_path / "pt.0.et")
    assert {i: n.type for i, n in nodes.items()} == {**EXPECTED_TYPES, 4: COMP_NODE}
    assert nodes[4].duration_micros == 3 and nodes[4].deps == (3,) and nodes[5].deps[0] == 4


def test_folders_of_host_and_kineto_traces_pair_by_rank(tmp_path, monkeypatch):
    monkeypatch.setattr(mlc, "available", lambda: False)
    hosts, devices = tmp_path / "et", tmp_path / "kineto"
    hosts.mkdir()
    devices.mkdir()
    for rank, gemm_us in ((0, 125.4), (1, 80.0)):
        write(hosts / f"rank_{rank}.json", host_trace(rank))
        write(devices / f"kineto_rank_{rank}.json", kineto(gemm_us))
    _, _, paths = convert(str(hosts), str(devices), str(tmp_path / "job"))
    assert paths == {0: "own linker + host trace", 1: "own linker + host trace"}
    assert by_id(tmp_path / "job.0.et")[3].duration_micros == 125
    assert by_id(tmp_path / "job.1.et")[3].duration_micros == 80


# -- issue 40: every number of a trace checked; a caller cycle is an error, not endless
@pytest.mark.parametrize("numel, words", [(-5, "numel -5"), (2**63, "0 .. 2^63-1 bytes")])
def test_tensor_sizes_out_of_range_are_refused(tmp_path, capsys, numel, words):
    trace = host_trace()
    trace["nodes"][4]["inputs"]["values"][0] = tensor(100, numel, 2)
    trace["nodes"][3]["inputs"]["values"][0] = tensor(100, numel, 2)
    path = write(tmp_path / "rank0.json", trace)
    assert cli_main(["convert", "pytorch", "--host", str(path), "--output", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rank0.json" in err[0] and words in err[0], err
    assert not list(tmp_path.glob("job*"))


def test_a_ctrl_deps_cycle_is_refused(tmp_path, capsys):
    trace = host_trace()
    trace["nodes"][2]["ctrl_deps"] = 4  # mm called by allreduce_, which mm calls
    trace["nodes"][3]["ctrl_deps"] = 3
    path = write(tmp_path / "rank0.json", trace)
    assert cli_main(["convert", "pytorch", "--host", str(path), "--output", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ctrl_deps" in err[0] and "comes back to it" in err[0], err
