"""Our own host + Kineto linker, for where mlc-chakra's cannot run (it needs PARAM's et_replay).

Kineto (``torch.profiler``) records the same operators as the host trace plus the GPU kernels
they launched. The join, in three steps:
- a host node and Kineto's ``cpu_op`` event of the same call share the record-function id
  (host attribute ``rf_id``, Kineto ``args["Record function id"]``); traces without it are
  joined by the k-th call of each operator name;
- a ``cpu_op`` and the CUDA runtime calls it made share ``args["External id"]``;
- a launch and its kernel share ``args["correlation"]`` (kernels also carry the External id).
The result is the host trace with one node per kernel (``cat``, ``exclusive_dur`` in us,
``stream``, ``pg_name``, the launcher's inputs and outputs, its ``ctrl_deps`` on the launcher):
the format mlc-chakra's own linker writes, so mlc-chakra's converter reads it too. NCCL kernels
also keep Kineto's recorded message (``in_msg_nelems``, ``msg_dtype``) so the host's size is
confirmed.
"""

from __future__ import annotations

import json
import math
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.horizon import HORIZON_MICROS
from simpy_astra.workloads.pytorch.collectives import RECORD
from simpy_astra.workloads.pytorch.host_trace import HostTrace, backend_names, process_groups

KERNEL_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "hip_runtime")


def load_kineto(path: str) -> list[dict[str, Any]]:
    """The ``traceEvents`` of a Kineto JSON trace."""
    text = files.read_text(path, "Kineto device trace", files.TRACE_LIMIT_BYTES)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise InputError(f"{path}: is not JSON ({exc}); expected a Kineto trace (torch.profiler)") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise InputError(f"{path}: is not a Kineto trace: expected a JSON object with 'traceEvents'")
    complete = []
    for index, event in enumerate(events):
        if isinstance(event, dict) and event.get("ph", "X") == "X":
            _check_event(f"{path}: traceEvents[{index}] ({json.dumps(event.get('name'))[:60]})", event)
            complete.append(event)
    return complete


def _check_event(where: str, event: dict[str, Any]) -> None:
    """What linking reads of an event, of the shape torch.profiler writes it: ids that are
    numbers or strings, a kernel's start and length in finite us and its stream a number (a
    string, NaN or a list stopped conversion as an internal error)."""
    args = _args(event)
    for key in ("External id", "correlation"):
        value = args.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | str)):
            raise InputError(f"{where}: args '{key}' must be an id, a number as torch.profiler writes it (got "
                             f"{json.dumps(value)[:60]})")
    if event.get("cat") not in KERNEL_CATS:
        return
    start, length = event.get("ts", 0), event.get("dur", 0)
    if isinstance(start, bool) or not isinstance(start, int | float) or not math.isfinite(start):
        raise InputError(f"{where}: 'ts' must be the kernel's start, a finite number of us (got "
                         f"{json.dumps(start)[:60]})")
    if isinstance(length, bool) or not isinstance(length, int | float) or not 0 <= length <= HORIZON_MICROS:
        raise InputError(f"{where}: 'dur' must be a number of us from 0 to {HORIZON_MICROS} (the simulated time's "
                         f"horizon; got {json.dumps(length)[:60]})")
    stream = args.get("stream", 0)
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise InputError(f"{where}: args 'stream' must be the CUDA stream's number (got {json.dumps(stream)[:60]})")


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _host_of_cpu_ops(trace: HostTrace, cpu_ops: list[dict[str, Any]]) -> dict[Any, int]:
    """Kineto External id -> host node id."""
    by_rf = {n.attrs["rf_id"]: n.id for n in trace.nodes.values() if isinstance(n.attrs.get("rf_id"), int)}
    found: dict[Any, int] = {}
    unmatched = []
    for op in cpu_ops:
        rf = _args(op).get("Record function id")
        if isinstance(rf, int) and rf in by_rf:
            found[_args(op).get("External id")] = by_rf[rf]
        else:
            unmatched.append(op)
    has_ids = any(isinstance(_args(op).get("Record function id"), int) for op in cpu_ops)
    if unmatched and not has_ids:  # no record-function ids: the k-th call of a name is the k-th of that name
        calls: dict[str, list[int]] = {}
        for node in trace.nodes.values():
            calls.setdefault(node.name, []).append(node.id)
        used: dict[str, int] = {}
        for op in sorted(unmatched, key=lambda e: e.get("ts", 0)):
            name = str(op.get("name", ""))
            k = used.get(name, 0)
            if k < len(calls.get(name, [])):
                found[_args(op).get("External id")] = calls[name][k]
                used[name] = k + 1
    return found


def _kernel_attrs(rf_id: object) -> list[dict[str, Any]]:
    """The attributes every host-trace node carries (mlc-chakra's converter reads them)."""
    values = {"rf_id": rf_id if isinstance(rf_id, int) else 0, "fw_parent": 0, "seq_id": -1, "scope": 0,
              "tid": 0, "fw_tid": 0, "op_schema": ""}
    return [{"name": k, "type": "string" if k == "op_schema" else "int64", "value": v} for k, v in values.items()]


def link(trace: HostTrace, device_path: str) -> dict[str, Any]:
    """The host trace of ``trace`` with the device trace's kernels as nodes (see module doc)."""
    events = load_kineto(device_path)
    cpu_ops = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in _args(e)]
    host_of = _host_of_cpu_ops(trace, cpu_ops)
    launches = {_args(e).get("correlation"): _args(e).get("External id")
                for e in events if e.get("cat") in LAUNCH_CATS and "correlation" in _args(e)}
    kernels = sorted((e for e in events if e.get("cat") in KERNEL_CATS), key=lambda e: e.get("ts", 0))
    if kernels and not host_of:
        raise InputError(f"{device_path}: no operator of the device trace matches one of {trace.path} "
                         f"(by 'Record function id' or name); expected the Kineto trace of the same rank and step")
    groups = process_groups(trace)
    backends = backend_names(groups)
    raw_nodes = [n.raw for n in trace.nodes.values()]
    next_id = max(trace.nodes) + 1
    for kernel in kernels:
        args = _args(kernel)
        ext = args.get("External id", launches.get(args.get("correlation")))
        if ext not in host_of:
            ext = launches.get(args.get("correlation"))
        host_id = host_of.get(ext)
        if host_id is None:
            continue  # launched outside the recorded step
        launcher = trace.nodes[host_id]
        node: dict[str, Any] = {
            "id": next_id, "name": str(kernel.get("name", "kernel")), "ctrl_deps": host_id,
            "inputs": launcher.raw.get("inputs", {"values": [], "shapes": [], "types": []}),
            "outputs": launcher.raw.get("outputs", {"values": [], "shapes": [], "types": []}),
            "attrs": _kernel_attrs(launcher.attrs.get("rf_id", 0)), "cat": kernel.get("cat"), "ts": int(kernel.get("ts", 0)),
            "exclusive_dur": int(round(float(kernel.get("dur", 0)))),
            "inclusive_dur": int(round(float(kernel.get("dur", 0)))),
            "stream": int(args.get("stream", 0) or 0),
        }
        if "nccl" in node["name"].lower():
            record = launcher if launcher.name == RECORD else trace.nodes.get(launcher.parent)
            pg = args.get("Process Group Name")
            if pg is None and record is not None and record.name == RECORD:
                pg = record.attrs.get("pg_name")
                if pg is None:
                    ints = [v for v in record.values() if isinstance(v, int) and not isinstance(v, bool)]
                    pg = next((backends[v] for v in ints if v in backends), None)
            node["pg_name"] = str(pg if pg is not None else "0")
            if isinstance(args.get("In msg nelems"), int):
                node["in_msg_nelems"] = args["In msg nelems"]
                node["msg_dtype"] = str(args.get("dtype", ""))
        raw_nodes.append(node)
        next_id += 1
    return {**trace.meta, "nodes": raw_nodes}
