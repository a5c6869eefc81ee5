"""One-collective microbenchmarks: every NPU runs a single all-reduce / all-gather / ... node.

The traces match the ones ASTRA-sim's microbenchmark generator scripts write (schema version
``0.0.4``, node id = NPU rank, name ``{collective}_{N}npus_{size}``, attributes ``is_cpu_op``,
``comm_type``, ``comm_size``), byte for byte when the size is a whole number of MiB or KiB.
"""

from __future__ import annotations

from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    COMM_COLL_NODE,
    REDUCE_SCATTER,
)
from simpy_astra.workloads.trace_output import TraceFiles, check_npu_count, check_prefix

COLLECTIVES: dict[str, int] = {
    "all_reduce": ALL_REDUCE,
    "all_gather": ALL_GATHER,
    "reduce_scatter": REDUCE_SCATTER,
    "all_to_all": ALL_TO_ALL,
}
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


def write_microbench(collective: str, size_bytes: int, num_npus: int, prefix: str) -> None:
    """Write ``prefix.{npu}.et`` for every NPU: one collective node each."""
    if collective not in COLLECTIVES:
        raise InputError(f"--collective: {collective!r} is not one of {', '.join(COLLECTIVES)}")
    if not 1 <= size_bytes <= INT64_MAX:
        raise InputError(f"--size: must be a number of bytes from 1 to {INT64_MAX} (Chakra's 64-bit "
                         f"comm_size; got {size_bytes})")
    if num_npus < 1:
        raise InputError(f"--num-npus: must be >= 1 (got {num_npus})")
    check_npu_count(num_npus, "--num-npus")
    check_prefix(prefix)
    name = f"{collective}_{num_npus}npus_{size_label(size_bytes)}"
    attrs = {"is_cpu_op": False, "comm_type": COLLECTIVES[collective], "comm_size": size_bytes}
    with TraceFiles() as files:
        files.makedirs(prefix)
        for npu in range(num_npus):
            node = make_node(npu, name, COMM_COLL_NODE, attrs=attrs)
            try:
                write_et(files.add(f"{prefix}.{npu}.et"), [node], version=MICROBENCH_SCHEMA_VERSION)
            except OSError as exc:
                raise InputError(f"--output: cannot write {prefix}.{npu}.et ({exc.strerror or exc})") from None


def _int_param(params: dict[str, Any], key: str) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"--{key.replace('_', '-')}: must be an integer (got {value!r})")
    return value


def generate(params: dict[str, Any], prefix: str) -> None:
    """Scenario generator: ``{generate: microbench, collective: all_reduce, size: 1048576, num_npus: 8}``."""
    unknown = set(params) - {"collective", "size", "num_npus"}
    if unknown:
        raise InputError(f"workload: generate microbench does not take {sorted(map(str, unknown))}; "
                         f"use collective, size, num_npus")
    collective = params.get("collective")
    if not isinstance(collective, str):
        raise InputError(f"--collective: must be one of {', '.join(COLLECTIVES)} (got {collective!r})")
    write_microbench(collective, _int_param(params, "size"),
                     _int_param(params, "num_npus"), prefix)


def main(argv: list[str]) -> int:
    """``simpy-astra generate microbench --collective C --size BYTES --num-npus N --output PREFIX``."""
    p = ArgumentParser(prog="simpy-astra generate microbench",
                                description="Write a one-collective Chakra ET per NPU.")
    p.add_argument("--collective", required=True, choices=sorted(COLLECTIVES))
    p.add_argument("--size", type=int, required=True, help="collective size in bytes")
    p.add_argument("--num-npus", type=int, required=True)
    p.add_argument("--output", required=True, help="ET prefix: writes PREFIX.{npu}.et")
    args = p.parse_args(argv)
    write_microbench(args.collective, args.size, args.num_npus, args.output)
    print(f"wrote {args.output}.{{0..{args.num_npus - 1}}}.et ({args.collective}, {args.size} bytes)")
    return 0
