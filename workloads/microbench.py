"""One-collective microbenchmarks: every NPU runs a single all-reduce / all-gather / ... node.

The traces match the ones ASTRA-sim's microbenchmark generator scripts write (schema version
``0.0.4``, node id = NPU rank, name ``{collective}_{N}npus_{size}``, attributes ``is_cpu_op``,
``comm_type``, ``comm_size``), byte for byte when the size is a whole number of MiB or KiB.

``send_recv`` (ours) times one point-to-point transfer without writing a collective: NPU
``src`` sends ``size`` bytes to NPU ``dst`` (a send node; ``dst`` a matching receive, tag 0)
and every other NPU runs one INVALID node, which finishes at once. Both ends finish when the
message arrives: on the congestion-unaware backend ``trunc(summed route latency + size /
slowest link bandwidth)``, on the congestion-aware one ``sum over links of trunc(latency +
size / bandwidth)`` (store and forward).
"""

from __future__ import annotations

from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError, Param, bytes_fix, integer_fix
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    INVALID_NODE,
    REDUCE_SCATTER,
)
from simpy_astra.workloads.generated import WorkloadLayout
from simpy_astra.workloads.trace_output import (
    MAX_TRACE_NPUS,
    TraceFiles,
    check_npu_count,
    check_prefix,
    unwritable,
)

COLLECTIVES: dict[str, int] = {
    "all_reduce": ALL_REDUCE,
    "all_gather": ALL_GATHER,
    "reduce_scatter": REDUCE_SCATTER,
    "all_to_all": ALL_TO_ALL,
}
#: point to point, ours: one send from --src to --dst
SEND_RECV = "send_recv"
KINDS = (*COLLECTIVES, SEND_RECV)
MICROBENCH_SCHEMA_VERSION = "0.0.4"

INT64_MAX = 2**63 - 1  # comm_size is an int64 attribute
KIB = 1024
MIB = 1024 * 1024


def size_label(size_bytes: int) -> str:
    """``64KB`` / ``1MB`` as in ASTRA-sim's example folders (binary units); plain ``B`` otherwise."""
    if size_bytes % MIB == 0:
        return f"{size_bytes // MIB}MB"
    if size_bytes % KIB == 0:
        return f"{size_bytes // KIB}KB"
    return f"{size_bytes}B"


def write_microbench(collective: str, size_bytes: int, num_npus: int, prefix: str,
                     src: int | None = None, dst: int | None = None) -> None:
    """Write ``prefix.{npu}.et`` for every NPU: one collective node each, or for
    ``send_recv`` a send on ``src``, its receive on ``dst`` and an idle node elsewhere."""
    if collective not in KINDS:
        raise InputError.of_params(Param("collective"), f": {collective!r} is not one of {', '.join(KINDS)}")
    if not 1 <= size_bytes <= INT64_MAX:
        raise InputError.of_params(Param("size"), f": must be a number of bytes from 1 to {INT64_MAX} (Chakra's "
                                                  f"64-bit comm_size; got {size_bytes})")
    check_npu_count(num_npus, Param("num_npus"))
    _check_ends(collective, num_npus, src, dst)
    check_prefix(prefix)
    name = f"{collective}_{num_npus}npus_{size_label(size_bytes)}"
    with TraceFiles() as files:
        files.makedirs(prefix)
        for npu in range(num_npus):
            node = _node(npu, name, collective, size_bytes, src, dst)
            try:
                write_et(files.add(f"{prefix}.{npu}.et"), [node], version=MICROBENCH_SCHEMA_VERSION)
            except OSError as exc:
                raise unwritable(f"cannot write {prefix}.{npu}.et ({exc.strerror or exc})") from None


def _check_ends(collective: str, num_npus: int, src: int | None, dst: int | None) -> None:
    """``send_recv`` needs two different NPUs; the collectives take neither."""
    if collective != SEND_RECV:
        if src is not None or dst is not None:
            raise InputError.of_params(Param("src" if src is not None else "dst"), ": only ", Param("collective"),
                                       f" {SEND_RECV} takes ", Param("src"), " and ", Param("dst"),
                                       " (a collective runs on every NPU)")
        return
    for flag, npu in (("src", src), ("dst", dst)):
        if npu is None:
            raise InputError.of_params(Param(flag), ": ", Param("collective"), f" {SEND_RECV} needs ", Param("src"),
                                       " and ", Param("dst"), " (the two NPUs)")
        if isinstance(npu, bool) or not isinstance(npu, int) or not 0 <= npu < num_npus:
            raise InputError.of_params(Param(flag), f": must be an NPU from 0 to {num_npus - 1} (got {npu!r})")
    if src == dst:
        raise InputError.of_params(Param("dst"), ": must differ from ", Param("src"),
                                   f" (both are {src}); an NPU does not send to itself")


def _node(npu: int, name: str, collective: str, size_bytes: int, src: int | None, dst: int | None):
    """NPU ``npu``'s one node."""
    if collective != SEND_RECV:
        attrs = {"is_cpu_op": False, "comm_type": COLLECTIVES[collective], "comm_size": size_bytes}
        return make_node(npu, name, COMM_COLL_NODE, attrs=attrs)
    if npu == src:
        attrs = {"is_cpu_op": False, "comm_dst": dst, "comm_size": size_bytes, "comm_tag": 0}
        return make_node(npu, name, COMM_SEND_NODE, attrs=attrs)
    if npu == dst:
        # its stream says it waits for the transfer (comm.p2p), not for a pipeline stage (bubble)
        attrs = {"is_cpu_op": False, "comm_src": src, "comm_size": size_bytes, "comm_tag": 0, "comm_stream": "p2p"}
        return make_node(npu, name, COMM_RECV_NODE, attrs=attrs)
    return make_node(npu, "idle", INVALID_NODE)


def _int_param(params: dict[str, Any], key: str) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError.of_params(Param(key), f": must be an integer (got {value!r}){integer_fix(value)}"
                                               f"{bytes_fix(value) if key == 'size' else ''}")
    return value


def prepare(params: dict[str, Any], cluster: Any, where: str = "workload") -> tuple[dict[str, Any], dict[str, Any]]:
    """Registry entry: beside a scenario's ``cluster:`` the GPU count is the NPU count, so
    ``num_npus`` may be left out (given, the scenario loader checks that the two agree)."""
    if cluster is None or "num_npus" in params:
        return params, params
    if cluster.gpus > MAX_TRACE_NPUS:  # the count is the cluster's: blame it, not num_npus left out
        scenario = where.rpartition(": ")[0]
        raise InputError(f"{scenario + ': ' if scenario else ''}cluster.gpus: {cluster.gpus:,} GPUs would write "
                         f"{cluster.gpus:,} microbenchmark trace files; at most {MAX_TRACE_NPUS:,} are written "
                         f"(simulate fewer GPUs)")
    params = {**params, "num_npus": cluster.gpus}
    return params, params


def layout(params: dict[str, Any]) -> WorkloadLayout:
    """Registry entry: whether the network plays its exchange message by message (a send, an
    all-to-all), reading its routes' latencies (a cluster's analytical backend times the other
    collectives by NCCL's model), and whether it gathers (an all-gather or reduce-scatter, over
    every NPU). A kind not known does both (its error is told when generating)."""
    collective = params.get("collective")
    kind = COLLECTIVES.get(collective) if isinstance(collective, str) else None
    return WorkloadLayout(plays_messages=kind in (None, ALL_TO_ALL), gathers=kind in (ALL_GATHER, REDUCE_SCATTER) or kind is None and collective != SEND_RECV,
                          gathers_on_every_rank=True)


#: the parameters a scenario's ``{generate: microbench, ...}`` takes
PARAMS = ("collective", "size", "num_npus", "src", "dst")


def generate(params: dict[str, Any], prefix: str) -> None:
    """Scenario generator: ``{generate: microbench, collective: all_reduce, size: 1048576, num_npus: 8}``
    (``collective: send_recv`` with ``src`` and ``dst``; beside a ``cluster:``, ``num_npus`` is
    its GPU count)."""
    unknown = set(params) - set(PARAMS)
    if unknown:
        problem = (f"generate microbench does not take {sorted(map(str, unknown))}; use collective, size, num_npus "
                   f"(and src, dst for send_recv)")
        raise InputError(f"workload: {problem}").with_parts(problem)
    collective = params.get("collective")
    if not isinstance(collective, str):
        raise InputError.of_params(Param("collective"), f": must be one of {', '.join(KINDS)} (got {collective!r})")
    ends = {key: _int_param(params, key) for key in ("src", "dst") if key in params}
    write_microbench(collective, _int_param(params, "size"),
                     _int_param(params, "num_npus"), prefix, **ends)


def main(argv: list[str]) -> int:
    """``simpy-astra generate microbench --collective C --size BYTES --num-npus N --output PREFIX``
    (``--collective send_recv --src A --dst B``: one transfer from NPU A to NPU B)."""
    p = ArgumentParser(prog="simpy-astra generate microbench",
                                description="Write a one-collective (or one-transfer) Chakra ET per NPU.")
    p.add_argument("--collective", required=True, choices=sorted(KINDS), metavar="KIND",
                   help=f"{', '.join(COLLECTIVES)}, or {SEND_RECV}: one transfer from --src to --dst")
    p.add_argument("--size", type=int, required=True, help="collective (or transfer) size in bytes")
    p.add_argument("--num-npus", type=int, required=True)
    p.add_argument("--src", type=int, help="send_recv: the NPU that sends")
    p.add_argument("--dst", type=int, help="send_recv: the NPU that receives")
    p.add_argument("--output", required=True, help="ET prefix: writes PREFIX.{npu}.et")
    args = p.parse_args(argv)
    write_microbench(args.collective, args.size, args.num_npus, args.output, args.src, args.dst)
    what = f"{args.src} -> {args.dst}" if args.collective == SEND_RECV else args.collective
    print(f"wrote {args.output}.{{0..{args.num_npus - 1}}}.et ({what}, {args.size} byte{'' if args.size == 1 else 's'})")
    return 0
