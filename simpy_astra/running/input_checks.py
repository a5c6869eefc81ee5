"""Checks across inputs, made once before time starts: each file alone was validated when it
was read; these look at two of them together (a workload against the network, compute
nodes against the system's roofline)."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.config.system import SystemConfig
from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.topologies import GraphTopology
from simpy_astra.workloads.chakra import et_path, has_rank_summary
from simpy_astra.workloads.chakra.types import (
    BROADCAST,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
)


def _near_prefix(prefix: str) -> str:
    """'; did you mean P?' for the workload prefix beside ``prefix`` that it nearly spells
    (``step.`` or ``step.0`` for ``step``, whose files are step.0.et ...), else ''."""
    folder, name = os.path.split(prefix)
    try:
        with os.scandir(folder or ".") as entries:
            found = sorted({e.name[:-len(".0.et")] for e in entries if e.name.endswith(".0.et")})
    except OSError:  # no such folder: the message names the path already
        return ""
    near = difflib.get_close_matches(name, found, n=1)
    return f"; did you mean {os.path.join(folder, near[0])}?" if near else ""


def check_et_count(prefix: str, n: int, network: str) -> None:
    """One ET file per NPU: ``PREFIX.0.et`` .. ``PREFIX.{n-1}.et``, and no more (a lazily
    generated workload writes its files when a run needs them, and checks its NPU count then)."""
    if has_rank_summary(prefix):
        return
    found = 0
    while os.path.exists(et_path(prefix, found)):
        found += 1
    if found < n and os.path.islink(et_path(prefix, found)):  # ls lists it, yet it cannot be read
        _dead_link(et_path(prefix, found), found)
    if not found and os.path.isdir(prefix):  # the traces' folder, not their prefix
        _folder_given(prefix)
    problem = files.rank_file_problem(prefix) if not found else None  # one rank's file, not their prefix
    if problem:
        raise InputError(problem)
    if not found:
        _folder_unreadable(prefix)
    if found < n:
        where = "" if found or os.path.isabs(prefix) else f"; relative paths resolve from {os.getcwd()}"
        raise InputError.in_file(et_path(prefix, found), f"the ET file for NPU {found} does not exist; the "
                         f"network {network} has {n} NPUs, so the workload needs one file per NPU, "
                         f"{et_path(prefix, 0)} .. {et_path(prefix, n - 1)} "
                         f"({found} consecutive file(s) found{where}){'' if found else _near_prefix(prefix)}")
    if found == n:  # a later rank after a gap (PREFIX.{n+1}.et) would be silently left out
        later = sorted(r for r in files.numbered_files(prefix) if r > n)
        if later:
            raise InputError.in_file(et_path(prefix, n),f"missing, but {et_path(prefix, later[0])} exists: the "
                             f"network {network} has {n} NPUs and the workload's files have a gap; remove "
                             f"the later file(s) or add the missing ones")
    if found > n:
        extra = et_path(prefix, n) + (f" .. {et_path(prefix, found - 1)}" if found > n + 1 else "")
        raise InputError.in_file(et_path(prefix, n),f"the workload has {found} ET files but the network "
                         f"{network} has {n} NPUs; remove {extra} or change npus_count")


def _folder_given(folder: str) -> None:
    """A workload named by its folder: the prefix of the ET files in it is wanted (``.0.et``
    appended to a folder names no file)."""
    try:
        names = sorted(name[: -len(".0.et")] for name in os.listdir(folder) if name.endswith(".0.et"))
    except OSError:
        names = []
    hint = (f"give {files.show(os.path.join(folder, names[0]))} (for {names[0]}.0.et ...)" if names
            else "it holds no PREFIX.0.et file")
    raise InputError(f"{files.show(folder)}: is a folder; a workload is the prefix of its ET files, PREFIX for "
                     f"PREFIX.0.et, PREFIX.1.et ...: {hint}")


def _folder_unreadable(prefix: str) -> None:
    """A prefix under a symlink loop, a dead link or a file: said so, not 'the ET file for NPU 0
    does not exist', which sent the user looking for files where no folder can hold any. A
    folder that is simply missing keeps that message (it names the files wanted)."""
    import errno
    import stat

    folder = os.path.dirname(prefix)
    while folder and not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not folder:
        return
    try:
        mode = os.stat(folder).st_mode
    except OSError as exc:
        what = "a symlink loop" if exc.errno == errno.ELOOP else "a symlink to nothing"
        raise InputError(f"{files.show(folder)}: is {what}, so no ET file of the workload {files.show(prefix)} can "
                         f"be under it; mend the link or point the workload at its files' folder") from None
    if not stat.S_ISDIR(mode):
        raise InputError(f"{files.show(folder)}: is {files.non_regular_kind(mode) or 'a regular file'}, not a "
                         f"folder, so no ET file of the workload {files.show(prefix)} can be under it; point the "
                         f"workload at its files' folder")


def _dead_link(path: str, npu: int) -> None:
    """A rank's file that is a symlink to nothing, or to itself: said so, not 'does not exist'."""
    import errno

    try:
        os.stat(path)
    except OSError as exc:
        problem = "leads back to itself (a symlink loop)" if exc.errno == errno.ELOOP else "does not exist"
        raise InputError(f"{files.show(path)}: the ET file for NPU {npu} is a symlink to "
                         f"{files.show(os.readlink(path))}, which {problem}; point it at the rank's "
                         f"file") from None


def start_warnings(npus: list, cfg: SystemConfig, dims: list[int], inputs: SimulationInputs,
                   topologies: list) -> list[str]:
    """What a run's inputs together would have it do in silence, said before time starts
    (``topologies``: the network's dimensions as topology objects)."""
    return [line for line in (compute_without_roofline(npus, cfg), replay_without_durations(npus, cfg),
                              replayed_broadcasts(npus, cfg, inputs), unused_comm_groups(npus, inputs),
                              *short_implementation_lists(npus, cfg, dims, inputs.comm_groups),
                              switchless_switch_model(inputs, topologies))
            if line]


def switchless_switch_model(inputs: SimulationInputs, topologies: list) -> str | None:
    """A warning when the network names a switch model (``switch-model:``, ``switch_model=``)
    and none of its dimensions has a switch (a ``[Ring]``, ``FullyConnected``, a Graph that names
    none): no switch is built, so the model changed nothing, where the run said nothing of it."""
    from simpy_astra.network.fabric import Fabric

    net = inputs.network
    if net.switch_model is None or any(Fabric.switches_per_instance(topo) for topo in topologies):
        return None
    names = [topo.name for topo in topologies]  # as the network YAML names them (a user's class: its own)
    # a Graph has the switches it lists, so "a Graph dimension has one" is untrue of this one
    where = ("its graph names none; a switch is one of graph.switches, or a networkx graph's node of kind: switch"
             if any(isinstance(topo, GraphTopology) for topo in topologies)
             else "a Switch dimension has one, and so does a Graph that names switches")
    return (f"{net.model_field('switch_model')} ({net.switch_model}) changes nothing: the topology "
            f"[{', '.join(names)}] has no switch for it to serve ({where}); leave it out, or give the network "
            f"a switch")


def replayed_broadcasts(npus: list, cfg: SystemConfig, inputs: SimulationInputs) -> str | None:
    """A warning when a BROADCAST collective records no duration: ASTRA-sim does not simulate
    broadcasts, it replays them from ``duration_micros`` (1 ns when 0), and so do we, so a
    1 MiB broadcast ran in 1 ns without a word. Replay-only says so already; a cluster preset
    whose NCCL model times broadcasts replays none (the warning said 1 ns of a broadcast timed
    at 44 us); checked on one simulated NPU (cheap)."""
    if cfg.replay_only or not npus or _nccl_times_broadcasts(inputs):
        return None
    timeless, casts = _without_duration(
        npus, lambda n: n.type == COMM_COLL_NODE and n.attrs.get("comm_type", (None, None))[1] == BROADCAST)
    if not timeless:
        return None
    return (f"{_workload_name(npus[0])}: {timeless} of {casts} BROADCAST collective(s) record no duration "
            f"(duration_micros 0); as in ASTRA-sim, a broadcast is not simulated but replayed from its duration, "
            f"so each takes 1 ns and its bytes never cross the network; give it a duration_micros, or an all-gather")


def _nccl_times_broadcasts(inputs: SimulationInputs) -> bool:
    """NCCL's model times every broadcast of the run (the NPU's ``_broadcast``): a preset's
    timer is built. Whatever custom collective the system gives all-gathers or a node, NCCL runs
    a broadcast by its own ring (a custom all-gather or a per-node one was said to leave
    broadcasts replayed in 1 ns, where they were timed)."""
    return inputs.network.nccl is not None


def _without_duration(npus: list, picked: Callable[[Any], bool]) -> tuple[int, int]:
    """(how many record no duration, how many) of the first simulated NPU's nodes that ``picked``
    picks: a replayed node without ``duration_micros`` takes no time (one NPU: cheap)."""
    nodes = [n for n in npus[0].nodes.values() if picked(n)]
    return sum(1 for n in nodes if not n.duration_micros), len(nodes)


def unused_comm_groups(npus: list, inputs: SimulationInputs) -> str | None:
    """A warning when communicator groups are given (a comm-group JSON, a scenario's
    ``comm_groups``) and no collective of the workload names one (``pg_name``): as in ASTRA-sim
    every collective then runs over all NPUs, and the groups change nothing. Only for traces
    the user brought (a generator names its own groups), one job (jobs bring their own)."""
    if not inputs.comm_groups or inputs.jobs is not None or inputs.workload.prepared is not None:
        return None
    for npu in npus:  # stops at the first collective that names a group
        if any(n.type == COMM_COLL_NODE and n.attrs.get("pg_name", (None, ""))[1] not in ("", "0")
               for n in npu.nodes.values()):
            return None
    ids = sorted(inputs.comm_groups)
    shown = ", ".join(map(str, ids[:3])) + (", ..." if len(ids) > 3 else "")
    return (f"{_workload_name(npus[0]) if npus else 'the workload'}: no collective names a communicator group "
            f"(pg_name), so the {len(ids)} group(s) given ({shown}) change nothing: every collective runs over all "
            f"NPUs, as in ASTRA-sim; give the collectives a pg_name, or leave the groups out")


def replay_without_durations(npus: list, cfg: SystemConfig) -> str | None:
    """A warning when ``replay-only`` replays communication nodes that record no duration: as
    in ASTRA-sim, every node then takes its ``duration_micros``, so a collective, send or
    receive without one takes no time and the step's figure leaves the network out (a
    generated microbenchmark's all-reduce ran in 1 ns). Checked on one simulated NPU (cheap)."""
    if not cfg.replay_only or not npus:
        return None
    timeless, comm = _without_duration(npus, lambda n: n.type in (COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE))
    if not timeless:
        return None
    return (f"{_workload_name(npus[0])}: {timeless} of {comm} communication nodes record no duration (duration_micros 0), "
            f"and {cfg.source} has replay-only on, which replays every node from its duration (as ASTRA-sim does), so "
            f"they take no time and the network is left out; set replay-only: 0 to simulate them")


def short_implementation_lists(npus: list, cfg: SystemConfig, dims: list[int],
                               groups: Mapping[int, Sequence[int]] | None = None) -> list[str]:
    """A warning per collective kind the workload runs over every NPU whose system list names
    fewer algorithms than the network has dimensions: ASTRA-sim runs it on the first dimensions
    only (one logical dimension per entry), so a 4 x 2 network's all-reduce under ``[ring]``
    reduces over 4 NPUs, its figures those of a smaller collective. Kept, as the reference's
    figures are; checked on one simulated NPU's nodes (cheap), those without a named group
    or whose group (of ``groups``) holds every NPU, which runs as they do (a subset's group
    runs on a ring of its own), and without a custom algorithm."""
    if len(dims) < 2 or not npus:
        return []
    whole = {str(gid) for gid, members in (groups or {}).items() if len(members) == math.prod(dims)}
    # deferred: the engine's tables and the registry are needed only past the checks above
    from simpy_astra.collectives import resolve
    from simpy_astra.engine.npu_communication import COLLECTIVE_KINDS

    out, seen = [], set()
    for node in npus[0].nodes.values():
        kind = COLLECTIVE_KINDS.get(node.attrs.get("comm_type", (None, None))[1])
        names = cfg.implementations.get(kind) or () if node.type == COMM_COLL_NODE else ()
        if kind in seen or not 0 < len(names) < len(dims) or kind in cfg.custom_implementations \
                or cfg.per_node_custom or node.attrs.get("pg_name", (None, ""))[1] not in ("", "0", *whole):
            continue
        involved = node.attrs.get("involved_dim", (None, [True] * len(dims)))[1]
        if not any(list(involved)[len(names):len(dims)]):
            continue  # the node itself leaves the other dimensions out
        if any(choice is None or choice.spans_all_npus for choice in map(resolve, names)):
            continue  # oneRing and its like span every NPU (an unknown name is refused when run)
        seen.add(kind)
        key, reach = kind.replace("_", "-") + "-implementation", math.prod(dims[:len(names)])
        out.append(f"{cfg.source}: field '{key}' lists {len(names)} algorithm(s), but the network has {len(dims)} "
                   f"dimensions: as in ASTRA-sim, the workload's {kind.replace('_', '-')}s run over the first "
                   f"{len(names)} only, {reach} of the {math.prod(dims)} NPUs; give one per dimension (e.g. "
                   f"[{', '.join([names[-1]] * len(dims))}]) to run them over every NPU")
    return out


def compute_without_roofline(npus: list, cfg: SystemConfig) -> str | None:
    """A warning when compute nodes carry FLOPs but no duration and the roofline is off.

    Generated traces (transformer, GEMM without SCALE-Sim) describe compute by
    ``num_ops``/``tensor_size`` and leave ``duration_micros`` at 0; replayed, each such node
    takes 1 ns and the step time means nothing. Checked on one simulated NPU (cheap)."""
    if cfg.roofline_enabled or cfg.replay_only or not npus:
        return None
    npu = npus[0]
    comp = [n for n in npu.nodes.values() if n.type == COMP_NODE]
    timeless = sum(1 for n in comp if not n.duration_micros and n.has_attr("num_ops"))
    if not timeless:
        return None
    return (f"{_workload_name(npu)}: {timeless} of {len(comp)} compute nodes have FLOPs (num_ops) but no duration, "
            f"and {cfg.source} has no roofline model, so each takes 1 ns and compute time means "
            f"nothing; set roofline-enabled: 1 with peak-perf (TFLOP/s) and local-mem-bw (GB/s)")


def _workload_name(npu) -> str:
    """The workload an NPU's nodes come from: its ET file, or a generated one's generator (its
    file in the cache is no name the user gave)."""
    # deferred: the registry is loaded only for these warnings
    from simpy_astra.workloads.generated import cache_entry_name

    generated = cache_entry_name(npu.source)
    return f"the workload ({generated})" if generated else npu.source


def check_paths(method: str, **paths: Any) -> None:
    """Refuse a path argument of ``Simulation.method`` that is no path, naming it: None was read
    as an empty path, 3 and b"..." failed inside pathlib, naming no argument. (None for
    ``comm_groups`` is no groups, as "empty" is.)"""
    for name, path in paths.items():
        if path is None and name == "comm_groups":
            continue
        if not isinstance(path, str | os.PathLike) or isinstance(os.fspath(path), bytes):
            raise TypeError(f"Simulation.{method}({name}=...): expected a file path, a str or os.PathLike "
                            f"(got {path!r})")


def checked_path(method: str, path: Any) -> Any:
    """``path``, the one path argument of ``Simulation.method``, once :func:`check_paths` took it."""
    check_paths(method, path=path)
    return path
