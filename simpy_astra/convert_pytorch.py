"""``simpy-astra convert pytorch``: PyTorch execution traces to Chakra ETs that run here.

    simpy-astra convert pytorch --host HOST.json [--device KINETO.json] --rank R --output PREFIX
    simpy-astra convert pytorch --host HOST_DIR [--device KINETO_DIR] --output PREFIX

The host trace is what ``torch.profiler.ExecutionTraceObserver`` writes (Chakra calls it the
host execution trace); the optional device trace is the Kineto (``torch.profiler``) trace of
the same rank. The work is MLCommons' own tools (the ``mlc-chakra`` package, extra
``.[pytorch]``): its trace linker joins host and device traces (GPU kernels, durations,
collectives) and its PyTorch converter writes the Chakra protobuf ET. We then make the result
run here: the communicator groups that PyTorch recorded in the trace's ``## process_group:init
##`` node get positive integer ids: a ``pg_name`` that is not one already (PyTorch may name
groups) is renamed to its id in the collectives and in that METADATA node, which the simulator
reads as ASTRA-sim does; the world group (``ranks: []``) is ``0``, all NPUs. The groups are
also written as ``PREFIX.json`` (``--comm-group-configuration`` or the scenario's
``comm_groups``). Nodes are otherwise mlc-chakra's, byte for byte.

A directory holds one trace per rank; a file's rank is the last number in its name
(``rank3.json``, ``host_et.3.json``), and ``--device DIR`` files are paired with host files by
that number. Each rank becomes ``PREFIX.{rank}.et``.

Linking a device trace also needs PARAM's ``et_replay``, which mlc-chakra imports but is not on
PyPI (see the one-line error for the install command).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
from typing import Any

from simpy_astra.errors import InputError

MISSING_EXTRA = "convert pytorch needs MLCommons' Chakra tools: pip install 'simpy-astra[pytorch]' (mlc-chakra)"
PG_INIT = "process_group:init"


def _require_chakra() -> None:
    try:
        import chakra.src.converter.pytorch_converter  # noqa: F401
    except ImportError:
        raise InputError(MISSING_EXTRA) from None


def process_groups(host_trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The process groups a host trace's ``## process_group:init ##`` node lists (empty if none)."""
    for node in host_trace.get("nodes", []):
        if PG_INIT in str(node.get("name", "")):
            values = (node.get("inputs") or {}).get("values") or []
            if not values:
                return []
            try:
                groups = json.loads(values[0]) if isinstance(values[0], str) else values[0]
            except ValueError:
                raise InputError(f"node {node.get('id')}: '{node.get('name')}' does not hold the process "
                                 f"groups as JSON") from None
            return [g for g in groups if isinstance(g, dict)]
    return []


def group_ids(groups: list[dict[str, Any]]) -> tuple[dict[str, int], dict[int, list[int]]]:
    """(pg_name -> group id, group id -> ranks) for our comm-group JSON.

    A group without ranks (PyTorch writes ``ranks: []`` for the default, world group) maps to
    0, which means all NPUs. Others keep their name when it is a positive integer not taken yet
    and get the next free id otherwise, in the order the trace lists them.
    """
    names: dict[str, int] = {}
    members: dict[int, list[int]] = {}
    pending = []
    for g in groups:
        name, ranks = str(g.get("pg_name", "")), g.get("ranks") or []
        if not ranks:
            names[name] = 0
        elif re.fullmatch(r"[1-9][0-9]*", name) and int(name) not in members:
            names[name] = int(name)
            members[int(name)] = [int(r) for r in ranks]
        else:
            pending.append((name, ranks))
    next_id = 1
    for name, ranks in pending:
        if name in names:
            continue
        while next_id in members:
            next_id += 1
        names[name] = next_id
        members[next_id] = [int(r) for r in ranks]
    return names, members


def link(rank: int, host: str, device: str, output: str) -> None:
    """mlc-chakra's trace linker: host + Kineto device trace -> one host + device JSON."""
    try:
        from chakra.src.trace_link.trace_linker import TraceLinker
    except ImportError as exc:
        if "et_replay" in str(exc):
            raise InputError("--device: linking needs PARAM's et_replay, which is not on PyPI: pip install "
                             "'git+https://github.com/facebookresearch/param.git#subdirectory=et_replay'") from None
        raise InputError(MISSING_EXTRA) from None
    TraceLinker().link(rank, host, device, output)


def convert_json(trace_json: str, output_et: str) -> None:
    """mlc-chakra's PyTorch converter: a host (+ device) JSON trace -> a Chakra protobuf ET."""
    _require_chakra()
    import logging

    from chakra.src.converter.pytorch_converter import PyTorchConverter

    quiet = logging.getLogger().level
    logging.getLogger().setLevel(max(quiet, logging.WARNING))  # its debug log is per node
    try:
        PyTorchConverter().convert(trace_json, output_et, False)
    except (ValueError, KeyError) as exc:
        text = " ".join(str(exc).split())
        raise InputError(f"{trace_json}: mlc-chakra cannot convert this trace ({type(exc).__name__}: "
                         f"{text[:300]})") from None
    finally:
        logging.getLogger().setLevel(quiet)


def _renamed_pg_list(values: str, names: dict[str, int]) -> str:
    """A METADATA node's ``inputs.values`` (``['[{"pg_name": ...}, ...]']``, as mlc-chakra writes
    it) with every ``pg_name`` replaced by its group id."""
    import ast

    try:
        outer = ast.literal_eval(values)
        groups = json.loads(outer[0])
    except (ValueError, SyntaxError, IndexError, TypeError):
        return values  # not a process-group list: leave it
    for g in groups:
        if isinstance(g, dict) and str(g.get("pg_name", "")) in names:
            g["pg_name"] = str(names[str(g["pg_name"])])
    return str([json.dumps(groups)])


def rename_groups(et_in: str, et_out: str, names: dict[str, int]) -> int:
    """Copy an ET, setting each ``pg_name`` (collectives' attributes and the process-group list
    of the METADATA node, which the simulator reads as ASTRA-sim does) to its group id; returns
    how many nodes changed."""
    from chakra.schema.protobuf.et_def_pb2 import GlobalMetadata
    from chakra.schema.protobuf.et_def_pb2 import Node as ChakraNode
    from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage

    changed = 0
    with open(et_in, "rb") as src, open(et_out, "wb") as dst:
        meta = GlobalMetadata()
        decodeMessage(src, meta)
        encodeMessage(dst, meta)
        node = ChakraNode()
        while decodeMessage(src, node):
            before = node.SerializeToString()
            for attr in node.attr:
                if attr.name == "pg_name" and attr.string_val in names:
                    attr.string_val = str(names[attr.string_val])
            if PG_INIT in node.name and node.inputs.values:
                node.inputs.values = _renamed_pg_list(node.inputs.values, names)
            changed += node.SerializeToString() != before
            encodeMessage(dst, node)
            node = ChakraNode()
    return changed


def convert_rank(host: str, device: str | None, rank: int, prefix: str, workdir: str) -> dict[int, list[int]]:
    """Write ``PREFIX.{rank}.et``; returns the communicator groups of this rank's trace."""
    try:
        with open(host) as f:
            host_trace = json.load(f)
    except OSError as exc:
        raise InputError(f"--host: cannot read {host} ({exc.strerror or exc})") from None
    except ValueError:
        raise InputError(f"--host: {host} is not JSON; expected a PyTorch execution trace") from None
    if not isinstance(host_trace, dict) or "nodes" not in host_trace or "schema" not in host_trace:
        raise InputError(f"--host: {host} is not a PyTorch execution trace (no 'schema' and 'nodes')")
    names, groups = group_ids(process_groups(host_trace))
    trace = host
    if device is not None:
        trace = os.path.join(workdir, f"linked.{rank}.json")
        link(rank, host, device, trace)
    raw = os.path.join(workdir, f"raw.{rank}.et")
    convert_json(trace, raw)
    out = f"{prefix}.{rank}.et"
    if any(str(gid) != name for name, gid in names.items()):
        rename_groups(raw, out, names)
    else:
        shutil.copyfile(raw, out)
    return groups


def _rank_of(path: str) -> int | None:
    numbers = re.findall(r"\d+", os.path.basename(path))
    return int(numbers[-1]) if numbers else None


def _by_rank(folder: str, flag: str) -> dict[int, str]:
    files: dict[int, str] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith(".json") or not os.path.isfile(path):
            continue
        rank = _rank_of(name)
        if rank is None:
            raise InputError(f"{flag}: {path} has no rank number in its name (e.g. rank0.json)")
        if rank in files:
            raise InputError(f"{flag}: {files[rank]} and {path} are both rank {rank}")
        files[rank] = path
    if not files:
        raise InputError(f"{flag}: {folder} holds no .json traces")
    return files


def convert(host: str, device: str | None, prefix: str, rank: int | None = None) -> tuple[list[int], str | None]:
    """Convert one rank (files) or every rank (directories); returns (ranks, comm-group JSON or None)."""
    _require_chakra()
    if os.path.isdir(host):
        hosts = _by_rank(host, "--host")
        if device is not None and not os.path.isdir(device):
            raise InputError("--device: give a directory too when --host is a directory")
        devices = _by_rank(device, "--device") if device is not None else {}
        missing = sorted(set(hosts) - set(devices)) if device is not None else []
        if missing:
            raise InputError(f"--device: no device trace for rank(s) {missing} in {device}")
        if rank is not None:
            hosts = {rank: hosts[rank]} if rank in hosts else {}
            if not hosts:
                raise InputError(f"--rank {rank}: {host} has no trace for that rank")
    else:
        if rank is None:
            rank = _rank_of(host) if _rank_of(host) is not None else 0
        hosts, devices = {rank: host}, ({rank: device} if device is not None else {})
    folder = os.path.dirname(prefix)
    if folder:
        os.makedirs(folder, exist_ok=True)
    groups: dict[int, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="simpy-astra-pytorch-") as work:
        for r, path in sorted(hosts.items()):
            for gid, members in convert_rank(path, devices.get(r), r, prefix, work).items():
                if groups.setdefault(gid, members) != members:
                    raise InputError(f"--host: ranks disagree on process group {gid}: {groups[gid]} vs {members}")
    groups_path = None
    if groups:
        groups_path = f"{prefix}.json"
        with open(groups_path, "w") as f:
            json.dump({str(k): v for k, v in sorted(groups.items())}, f, indent=1)
    return sorted(hosts), groups_path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="simpy-astra convert pytorch",
                                description="Convert PyTorch execution traces (optionally linked with Kineto "
                                            "traces) to Chakra ETs with MLCommons' mlc-chakra.")
    p.add_argument("--host", required=True, help="PyTorch execution trace (JSON), or a directory of them")
    p.add_argument("--device", default=None, help="Kineto trace of the same rank, or a directory of them")
    p.add_argument("--rank", type=int, default=None,
                   help="rank of the trace (default: the last number in its file name, else 0)")
    p.add_argument("--output", required=True, help="ET prefix: writes PREFIX.{rank}.et (and PREFIX.json)")
    args = p.parse_args(argv)
    ranks, groups = convert(args.host, args.device, args.output, args.rank)
    shown = f"{args.output}.{ranks[0]}.et" if len(ranks) == 1 else f"{args.output}.{{{ranks[0]}..{ranks[-1]}}}.et"
    print(f"wrote {shown}" + (f" and {groups} (communicator groups)" if groups else ""))
    return 0
