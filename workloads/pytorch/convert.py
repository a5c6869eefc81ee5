"""``simpy-astra convert pytorch``: PyTorch execution traces to Chakra ETs that run here.

    simpy-astra convert pytorch --host HOST.json [--device KINETO.json] --rank R --output PREFIX
    simpy-astra convert pytorch --host HOST_DIR [--device KINETO_DIR] --output PREFIX

Which path a rank takes (the CLI prints it):
- ``host trace``: our own reader writes the ET from the host trace alone: compute nodes for the
  operators, a COMM_COLL_NODE (or COMM_SEND/RECV_NODE) for every collective PyTorch recorded,
  with the recorded size. mlc-chakra finds collectives only through linked GPU kernels, so on a
  host-only trace it would write no communication at all.
- ``own linker + mlc-chakra``: with ``--device`` our linker (:mod:`.kineto`) joins host and
  Kineto traces (mlc-chakra's needs PARAM's et_replay, not on PyPI) and, when mlc-chakra is
  installed (extra ``.[pytorch]``) and every communication is a collective whose NCCL kernel
  was linked, mlc-chakra's converter writes the ET from the linked trace: GPU kernels with their
  durations, collectives from NCCL kernels. A ``--host`` trace that is already linked (it holds
  kernel nodes) goes to mlc-chakra directly.
- ``own linker + host trace``: otherwise (no mlc-chakra, a collective Kineto missed, a send or
  receive, which mlc-chakra writes without its peer): our writer, with kernel durations as
  compute times and each NCCL kernel confirming its collective's size.

Process groups (``## process_group:init ##``) get integer ids: the world group is 0 (all NPUs),
a name that is not a number is renumbered, and non-world groups are written as ``PREFIX.json``
(ASTRA-sim's ``{"group_id": [ranks]}``). A directory holds one trace per rank (a file's rank is
the last number in its name, e.g. ``rank_3.json``); ranks whose collectives differ in count,
order or size are reported by file and node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError
from simpy_astra.infra import files as door
from simpy_astra.workloads.chakra import write_et
from simpy_astra.workloads.pytorch import mlc
from simpy_astra.workloads.pytorch.collectives import Collective
from simpy_astra.workloads.pytorch.graph import build_rank_graph, comm_kernels
from simpy_astra.workloads.pytorch.host_trace import HostTrace, group_ids, load_host_trace, process_groups
from simpy_astra.workloads.pytorch.kineto import link
from simpy_astra.workloads.trace_output import MAX_TRACE_NPUS, TraceFiles, check_prefix

PATH_HOST = "host trace"
PATH_OWN_LINKED = "own linker + host trace"
PATH_MLC = "own linker + mlc-chakra"


def _rank_of(path: str) -> int | None:
    numbers = re.findall(r"\d+", os.path.basename(path))
    return int(numbers[-1]) if numbers else None


def _by_rank(folder: str, flag: str) -> dict[int, str]:
    """Rank -> trace of every ``*.json`` in ``folder``: ranks 0..N-1, none missing, each a
    readable regular file (a symlink loop or a FIFO is an error, not a file skipped)."""
    files: dict[int, str] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise InputError(f"{flag}: cannot list {folder} ({door.os_problem(exc)})") from None
    for name in names:
        path = os.path.join(folder, name)
        if not name.endswith(".json"):
            continue
        door.check_input(path, f"{flag} trace")
        rank = _rank_of(name)
        if rank is None:
            raise InputError(f"{flag}: {path} has no rank number in its name (e.g. rank_0.json)")
        if rank in files:
            raise InputError(f"{flag}: {files[rank]} and {path} are both rank {rank}")
        files[rank] = path
    if not files:
        raise InputError(f"{flag}: {folder} holds no .json traces")
    return files


def _no_gaps(files: dict[int, str], folder: str, flag: str) -> None:
    """Every rank 0..N-1 present: a job converted without rank 1 would not be the job."""
    missing = sorted(set(range(max(files) + 1)) - set(files))
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        raise InputError(f"{flag}: {folder} has no trace for rank(s) {shown} (it holds {len(files)} "
                         f"traces, ranks {min(files)}..{max(files)}); expected ranks 0..N-1, or pick one "
                         f"with --rank")


def convert_rank(host: str, device: str | None, rank: int, prefix: str,
                 workdir: str) -> tuple[HostTrace, list[Collective], dict[int, list[int]], str]:
    """Write ``PREFIX.{rank}.et``; returns (trace, its communications, its groups, path taken)."""
    trace = load_host_trace(host)
    names, members = group_ids(process_groups(trace))
    linked_path = host
    if device is not None:
        linked_path = os.path.join(workdir, f"linked.{rank}.json")
        with open(linked_path, "w") as f:
            json.dump(link(trace, device), f)
        trace = load_host_trace(linked_path)
        trace.path = host  # errors name the user's file
    graph = build_rank_graph(trace, rank, names, members)  # also checks every collective
    out = f"{prefix}.{rank}.et"
    if mlc_applies(trace, graph.collectives) and mlc.available():
        raw = os.path.join(workdir, f"raw.{rank}.et")
        mlc.convert_json(linked_path, raw)
        if any(str(gid) != name for name, gid in names.items()):
            mlc.rename_groups(raw, out, names)
        else:
            shutil.copyfile(raw, out)
        return trace, graph.collectives, members, PATH_MLC
    write_et(out, graph.nodes)
    return trace, graph.collectives, members, PATH_OWN_LINKED if trace.kernels else PATH_HOST


def mlc_applies(trace: HostTrace, comms: list[Collective]) -> bool:
    """mlc-chakra writes a communication only for a linked NCCL kernel, and a send or receive
    without its peer rank: it applies when the trace is linked and every communication is a
    collective whose kernel was linked; otherwise it would drop communication, so we write."""
    if not trace.kernels:
        return False
    return all(c.kind == "coll" and comm_kernels(trace, c) for c in comms)


def check_ranks_agree(ranks: dict[int, tuple[HostTrace, list[Collective]]],
                      members: dict[int, list[int]], names: dict[str, int]) -> None:
    """Every member of a group must run that group's collectives alike: count, order, size."""
    per_group: dict[int, dict[int, list[Collective]]] = {}
    for rank, (_, colls) in ranks.items():
        for c in colls:
            if c.kind == "coll":
                gid = names.get(c.pg_name, 0)
                per_group.setdefault(gid, {r: [] for r in ranks
                                           if gid == 0 or r in members.get(gid, [])})
                per_group[gid].setdefault(rank, []).append(c)
    for gid, by_rank in sorted(per_group.items()):
        (first, ref), *others = sorted(by_rank.items())
        first_trace = ranks[first][0]
        for rank, colls in others:
            trace = ranks[rank][0]
            for i, (a, b) in enumerate(zip(ref, colls, strict=False)):
                if a.signature()[:2] != b.signature()[:2]:
                    raise trace.error(trace.nodes[b.node_id],
                                      f"collective #{i + 1} of group {gid} is {b.name} of {b.size_bytes} B, but "
                                      f"rank {first} ({first_trace.path}) runs {a.name} of {a.size_bytes} B "
                                      f"there (node {a.node_id}); expected the ranks of one job")
            if len(ref) != len(colls):
                more, fewer = (first, rank) if len(ref) > len(colls) else (rank, first)
                raise InputError(f"{ranks[fewer][0].path}: rank {fewer} runs {min(len(ref), len(colls))} "
                                 f"collectives of group {gid} but rank {more} ({ranks[more][0].path}) runs "
                                 f"{max(len(ref), len(colls))}; expected the ranks of one job")


def convert(host: str, device: str | None, prefix: str,
            rank: int | None = None) -> tuple[list[int], str | None, dict[int, str]]:
    """Convert one rank (files) or every rank (directories).

    Returns (ranks, comm-group JSON or None, rank -> path taken).
    """
    if rank is not None and not 0 <= rank < MAX_TRACE_NPUS:
        raise InputError(f"--rank: must be from 0 to {MAX_TRACE_NPUS - 1} (got {rank}); a run reads PREFIX.0.et "
                         f"to PREFIX.(n-1).et, one a rank of the job")
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
            _no_gaps(hosts, host, "--host")
    else:
        if rank is None:
            rank = _rank_of(host) if _rank_of(host) is not None else 0
        hosts, devices = {rank: host}, ({rank: device} if device is not None else {})
    check_prefix(prefix)
    groups: dict[int, list[int]] = {}
    done: dict[int, tuple[HostTrace, list[Collective]]] = {}
    paths: dict[int, str] = {}
    all_names: dict[str, int] = {}
    groups_path = None
    # a rank that fails (or ranks that disagree) leave no half-written set of traces behind
    with TraceFiles() as files, tempfile.TemporaryDirectory(prefix="simpy-astra-pytorch-") as work:
        files.makedirs(prefix)
        for r, path in sorted(hosts.items()):
            files.add(f"{prefix}.{r}.et")
            trace, colls, members, taken = convert_rank(path, devices.get(r), r, prefix, work)
            done[r], paths[r] = (trace, colls), taken
            all_names.update(group_ids(process_groups(trace))[0])
            for gid, ranks in members.items():
                if groups.setdefault(gid, ranks) != ranks:
                    raise InputError(f"{path}: ranks disagree on process group {gid}: {groups[gid]} vs {ranks}")
        check_ranks_agree(done, groups, all_names)
        if groups:
            groups_path = files.add(f"{prefix}.json")
            with open(groups_path, "w") as f:
                json.dump({str(k): v for k, v in sorted(groups.items())}, f, indent=1)
    return sorted(hosts), groups_path, paths


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="simpy-astra convert pytorch",
                                description="Convert PyTorch execution traces (optionally with Kineto traces) "
                                            "to Chakra ETs, collectives included.")
    p.add_argument("--host", required=True, role="input", help="PyTorch execution trace (JSON), or a directory of them")
    p.add_argument("--device", default=None, help="Kineto trace of the same rank, or a directory of them")
    p.add_argument("--rank", type=int, default=None,
                   help="rank of the trace, 0 to 65535 (default: the last number in its file name, else 0)")
    p.add_argument("--output", required=True, help="ET prefix: writes PREFIX.{rank}.et (and PREFIX.json)")
    args = p.parse_args(argv)
    ranks, groups, paths = convert(args.host, args.device, args.output, args.rank)
    shown = f"{args.output}.{ranks[0]}.et" if len(ranks) == 1 else f"{args.output}.{{{ranks[0]}..{ranks[-1]}}}.et"
    taken = ", ".join(sorted(set(paths.values())))
    print(f"wrote {shown} ({taken})" + (f" and {groups} (communicator groups)" if groups else ""))
    return 0
