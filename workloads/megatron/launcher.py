"""A launcher pasted before ``pretrain_gpt.py`` (torchrun, mpirun, srun, deepspeed; horovodrun,
``accelerate launch``, Cray's aprun, ``flux run`` and LSF's jsrun): the GPUs it
starts and the NCCL settings it exports, read from the words the command line was split into
once (:func:`~simpy_astra.workloads.megatron.command_line.launch_line`), and the one place that
holds them to the job. Its words are not Megatron-LM's and are dropped before those are read,
so a count unlike the job's, or an exported ``NCCL_ALGO``, ran as the job's in silence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simpy_astra.errors import InputError

#: a pasted launcher's flags that give the job's GPUs, by launcher: (its whole count, its count
#: a node, its nodes). torchrun's per node defaults to 1; mpirun's -N is Open MPI's --npernode
_FLAGS = {
    "torchrun": ((), ("--nproc_per_node", "--nproc-per-node"), ("--nnodes",)),
    "mpirun": (("-np", "--np", "-n", "-c"), ("-npernode", "--npernode", "-N", "-ppn", "--ppn", "--map-by"), ()),
    "srun": (("-n", "--ntasks"), ("--ntasks-per-node",), ("-N", "--nodes")),
    "deepspeed": ((), ("--num_gpus", "--num-gpus"), ("--num_nodes", "--num-nodes")),
    "horovodrun": (("-np", "--num-proc"), (), ()),
    "accelerate": (("--num_processes", "--num-processes"), (), ("--num_machines", "--num-machines")),
    "aprun": (("-n", "--pes"), ("-N", "--pes-per-node"), ()),
    "flux": (("-n", "--ntasks"), ("--tasks-per-node",), ("-N", "--nodes")),
    # LSF: resource sets (-n) of -a tasks each, -r of them a host; or -p tasks in all
    "jsrun": (("-n", "--nrs", "-p", "--np"), ("-r", "--rs_per_host"), ()),
}
#: a launcher's flags that give no count alone: jsrun's tasks a resource set (1 by default),
#: which its sets' counts multiply; DeepSpeed's host list (``--include host-a:0,1@host-b``)
_OTHER_FLAGS = {"jsrun": ("-a", "--tasks_per_rs"), "deepspeed": ("--include", "-i")}
#: jsrun's counts of resource sets, which its tasks a set multiply
_RESOURCE_SETS = ("-n", "--nrs", "-r", "--rs_per_host")
#: the words that start each launcher (``python -m torch.distributed.run`` starts torchrun)
_NAMES = {"torchrun": "torchrun", "torch.distributed.launch": "torchrun", "torch.distributed.run": "torchrun",
          "mpirun": "mpirun", "mpiexec": "mpirun", "orterun": "mpirun", "srun": "srun", "deepspeed": "deepspeed",
          **{name: name for name in ("horovodrun", "accelerate", "aprun", "flux", "jsrun")}}  # accelerate launch, flux run

#: NCCL's variables that change how long a collective takes, each -> the fix: a launcher exports
#: them (``mpirun -x NCCL_ALGO=Tree``, ``srun --export=ALL,NCCL_PROTO=Simple``, ``NCCL_ALGO=Tree
#: torchrun``), and the simulator runs NCCL's choice unless the cluster says otherwise. Logging,
#: interface names and CUDA_DEVICE_MAX_CONNECTIONS=1 (which Megatron-LM asks for) are accepted.
_TIMING_ENVIRONMENT = {
    "NCCL_ALGO": "give cluster.nccl_algo instead (ring, tree, nvls, ...)",
    "NCCL_NVLS_ENABLE": "give cluster.nvls instead",
    **dict.fromkeys(("NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS",
                     "NCCL_NTHREADS", "NCCL_BUFFSIZE", "NCCL_COLLNET_ENABLE", "NCCL_P2P_DISABLE",
                     "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE"),
                    "it is not modelled (the simulator runs NCCL's own choice)"),
    "NCCL_PXN_DISABLE": "it is not modelled (a preset's cross-rail messages take NCCL's default route, PXN: "
                        "simpy_astra/network/rails.py)",
}
#: NCCL's own value of a variable above, what it does unset (its guide: P2P, SHM, IB and PXN are
#: disabled, CollNet enabled, by 1): exported so (``mpirun -x NCCL_IB_DISABLE=0``), it changes nothing;
#: nor does any exported empty (``NCCL_ALGO=``): NCCL reads an empty number as unset (``ncclLoadParam``:
#: ``strlen(str) > 0``) and an empty list as no change (``parseList`` in tuning.cc finds no token)
_NCCL_OWN_VALUES = {"NCCL_IB_DISABLE": "0", "NCCL_P2P_DISABLE": "0", "NCCL_SHM_DISABLE": "0",
                    "NCCL_COLLNET_ENABLE": "0", "NCCL_PXN_DISABLE": "0"}
#: a variable named in a word: ``NAME=value``, ``-x NAME``, ``--export=ALL,NAME=value``
_VARIABLE = re.compile(r"(?:^|[=,])([A-Z][A-Z0-9_]*)(?=$|[=,])")
#: MPICH's and Intel MPI's flags that give a variable's name, then its value as the next word
_NAME_THEN_VALUE = ("-genv", "-env")
#: Open MPI's ``--map-by ppr:N:node`` (N processes a node; ``:PE=4`` and the like may follow)
_PROCESSES_A_NODE = re.compile(r"ppr:(\d+):node\b")
#: a one-letter count option with its value written on, as getopt reads it (``srun -N2 -n16``,
#: ``mpiexec -n32``)
_ATTACHED = re.compile(r"(-[A-Za-z])(\d+)")


def launcher_of(word: str) -> str | None:
    """The launcher ``word`` starts (``torchrun``, ``/usr/bin/mpirun``, ``mpiexec.hydra``;
    ``torch.distributed.run`` after ``python -m`` starts torchrun), or None. An MPI's
    ``mpirun``/``mpiexec`` is also installed under its implementation's name (``mpiexec.hydra``,
    ``mpirun.openmpi``, ``mpiexec.mpich``): the same program and flags."""
    name = word.rpartition("/")[2]
    return _NAMES.get(name) or (_NAMES[name.partition(".")[0]] if name.partition(".")[0] in _MPI else None)


def is_launcher(word: str) -> bool:
    """``word`` starts a launcher (:func:`launcher_of`)."""
    return launcher_of(word) is not None


#: the MPI launchers installed under an implementation's suffix too
_MPI = ("mpirun", "mpiexec", "orterun")

#: a count as a range of what it may be (lowest, highest): an elastic ``--nnodes 1:4`` or
#: Slurm's ``-N 2-4`` runs on any count within; ``2:2`` is 2
Count = tuple[int, int]
#: a count flag the launcher was not given (torchrun's then default to 1), unlike one given a word
_ABSENT: Count = (-1, -1)
_ONE: Count = (1, 1)


@dataclass(frozen=True)
class Launch:
    """The GPUs a pasted launcher starts in all, a node, and its nodes, each a :data:`Count`, or
    None where it names none (or gives a word, ``gpu``), and how it says so
    (``--nproc_per_node 8 x --nnodes 4``)."""

    total: Count | None
    per_node: Count | None
    nodes: Count | None
    how: str


def read(launcher: list[str]) -> Launch | None:
    """What ``launcher`` (the words before ``pretrain_gpt.py``) starts; None where no launcher
    is pasted or it names no count. A count it gives as a word (``--nproc_per_node gpu``) is
    unknown, not absent: the others still count. Of launchers nested (``srun ... torchrun
    ...``) the last, which starts the workers, counts."""
    kind, found = None, {}
    for i, word in enumerate(launcher):
        started = launcher_of(word)
        if started:
            kind, found = started, {}
            continue
        given = _flag_and_value(kind, launcher, i) if kind else None
        if given is not None:
            found[given[0]] = given[1]
    if not kind or not found:
        return None
    counts = {flag: _count(flag, value) for flag, value in found.items()}
    if kind == "jsrun":  # a resource set's count times its tasks a set (-a, 1 by default)
        tasks = next((counts[f] for f in _OTHER_FLAGS[kind] if f in counts), _ONE)
        counts.update({f: None if c is None or tasks is None else (c[0] * tasks[0], c[1] * tasks[1])
                       for f, c in counts.items() if f in _RESOURCE_SETS})
    hosts = next((found[f] for f in _OTHER_FLAGS["deepspeed"] if f in found), None) if kind == "deepspeed" else None
    if hosts is not None:
        return _included(hosts, " x ".join(f"{flag} {found[flag]}" for flag in found))
    total, per_node, nodes = (next((counts[f] for f in flags if f in counts), _ABSENT) for flags in _FLAGS[kind])
    if kind == "torchrun":  # its defaults: one node, one process on it
        per_node, nodes = (_ONE if c is _ABSENT else c for c in (per_node, nodes))
    total, per_node, nodes = (None if c is _ABSENT else c for c in (total, per_node, nodes))
    if total is None and per_node is not None and nodes is not None:
        total = (per_node[0] * nodes[0], per_node[1] * nodes[1])
    if per_node is None and total is not None and nodes and nodes[0] == nodes[1] and total[0] == total[1] \
            and total[0] % nodes[0] == 0:
        per_node = (total[0] // nodes[0],) * 2  # srun -N 4 -n 16: 4 a node, as torchrun's
    return Launch(total, per_node, nodes, " x ".join(f"{flag} {found[flag]}" for flag in found))


def _flag_and_value(kind: str, launcher: list[str], i: int) -> tuple[str, str] | None:
    """The count flag of launcher ``kind`` that ``launcher[i]`` gives, and its value as written
    (``--nnodes=2``, ``-np 16``, srun's ``-N2``); None for another word, or Open MPI's
    ``--map-by`` that gives no processes a node (``socket``)."""
    attached = _ATTACHED.fullmatch(launcher[i])
    flag, eq, value = (attached.group(1), "=", attached.group(2)) if attached else launcher[i].partition("=")
    if not any(flag in names for names in (*_FLAGS[kind], _OTHER_FLAGS.get(kind, ()))):
        return None
    value = value if eq else (launcher[i + 1] if i + 1 < len(launcher) else "")
    return None if flag == "--map-by" and not _PROCESSES_A_NODE.match(value) else (flag, value)


def _count(flag: str, value: str) -> Count | None:
    """The count ``value`` gives (``ppr:8:node`` of ``--map-by``: 8; an elastic ``1:4`` or
    Slurm's ``2-4``: 1 to 4), None where it is no count (``gpu``)."""
    if flag == "--map-by":
        return (int(_PROCESSES_A_NODE.match(value).group(1)),) * 2
    ends = _RANGE.fullmatch(value)
    if ends is None:
        return None
    low, high = int(ends.group(1)), int(ends.group(2) or ends.group(1))
    return (low, high) if low <= high else None


#: a count as a launcher writes it: ``8``, or a range, ``1:4`` (torchrun) or ``2-4`` (Slurm)
_RANGE = re.compile(r"(\d+)(?:[:-](\d+))?")


def _included(hosts: str, how: str) -> Launch:
    """What DeepSpeed's ``--include`` starts: its hosts (``@`` between them), each on the GPUs it
    lists (``host:0,1``) or, listing none, on all of its node's. A mix is left uncounted."""
    slots = [spec.partition(":")[2] for spec in hosts.split("@")]
    if all(slots):
        counts = [len(listed.split(",")) for listed in slots]
        per_node = (counts[0],) * 2 if len(set(counts)) == 1 else None
        return Launch((sum(counts),) * 2, per_node, (len(counts),) * 2, how)
    return Launch(None, None, None if any(slots) else (len(slots),) * 2, how)


def _exported_value(launcher: list[str], i: int, name: str) -> str | None:
    """The value ``launcher[i]`` gives the variable ``name`` (``NAME=0``, ``-genv NAME 0``), None
    where it names the variable alone (``-x NAME`` exports the caller's, unknown here)."""
    given = re.search(rf"(?:^|[=,]){name}=([^,]*)", launcher[i])
    if given:
        return given.group(1)
    if launcher[i] == name and 0 < i < len(launcher) - 1 and launcher[i - 1] in _NAME_THEN_VALUE:
        return launcher[i + 1]
    return None


def check(launcher: list[str], gpus: int, gpus_per_node: int | None, where: str, gpus_where: str | None) -> None:
    """Refuse a pasted launcher that starts another count of GPUs than the job's ``gpus``, or
    (where the cluster's ``gpus_per_node`` is known) another count a node, or only nodes that
    hold another count (``srun -N 4`` of a job that fills 2); or that exports an NCCL setting
    that changes a collective's time (:data:`_TIMING_ENVIRONMENT`)."""
    launch = read(launcher)
    if launch is not None:
        _check_counts(launch, gpus, gpus_per_node, where, gpus_where or "its GPU count")
    for i, word in enumerate(launcher):
        if _unset(launcher, i):  # env -u NCCL_ALGO: NCCL's own choice, as the simulator runs it
            continue
        name = next((n for n in _VARIABLE.findall(word) if n in _TIMING_ENVIRONMENT
                     and not _nccls_own(n, _exported_value(launcher, i, n))), None)
        if name is not None:
            raise InputError(f"{where}: the pasted launcher sets {name} ({word}), which changes how long NCCL's "
                             f"collectives take and is not read from here; {_fix(name, launcher, i)}, and drop "
                             f"it from the launcher's words")


def _fix(name: str, launcher: list[str], i: int) -> str:
    """What to give for ``name`` exported by ``launcher[i]``: an ``NCCL_ALGO`` list NCCL reads
    per collective or as several (``allreduce:tree;broadcast:ring``, ``Ring,Tree``, ``^NVLS``)
    has no ``cluster.nccl_algo`` to stand for it, which forces one algorithm on every collective."""
    given = launcher[i].partition(f"{name}=")[2] if f"{name}=" in launcher[i] else _exported_value(launcher, i, name)
    if name == "NCCL_ALGO" and given and any(mark in given for mark in ":;,^"):
        return (f"cluster.nccl_algo forces one algorithm on every collective, and NCCL_ALGO={given} (a list, per "
                f"collective or excluding) is not modelled: leave nccl_algo out for NCCL's own choice, or force one")
    return _TIMING_ENVIRONMENT[name]


def _check_counts(launch: Launch, gpus: int, gpus_per_node: int | None, where: str, gpus_where: str) -> None:
    """:func:`check`'s counts: the GPUs ``launch`` starts in all, a node, or on its nodes alone
    (a node's GPUs each, the launcher's default), against the job's and the cluster's; an
    elastic count holds any of its range."""
    job = f"the job runs on {gpus:,} ({gpus_where})"
    if launch.total is not None and not launch.total[0] <= gpus <= launch.total[1]:
        raise InputError(f"{where}: the pasted launcher starts {_shown(launch.total)} GPUs ({launch.how}), but {job}; "
                         f"make them one count, or drop the launcher's words")
    if gpus_per_node is None:
        return
    if launch.per_node is not None and not launch.per_node[0] <= gpus_per_node <= launch.per_node[1]:
        raise InputError(f"{where}: the pasted launcher starts {_shown(launch.per_node)} GPUs a node ({launch.how}), "
                         f"but the cluster's nodes hold {gpus_per_node}; give cluster.gpus_per_node: "
                         f"{launch.per_node[0]}, or drop the launcher's words")
    if launch.total is None and launch.nodes is not None:
        filled = (launch.nodes[0] * gpus_per_node, launch.nodes[1] * gpus_per_node)  # a node's GPUs each, its default
        if not filled[0] <= gpus <= filled[1]:
            raise InputError(f"{where}: the pasted launcher starts {_shown(launch.nodes)} nodes ({launch.how}), "
                             f"{_shown(filled)} GPUs at the cluster's {gpus_per_node} a node, but {job}; make them "
                             f"one count, or drop the launcher's words")


def _shown(count: Count) -> str:
    """``16``, or an elastic range as ``8 to 32``."""
    return f"{count[0]:,}" if count[0] == count[1] else f"{count[0]:,} to {count[1]:,}"


def _nccls_own(name: str, value: str | None) -> bool:
    """``value``, exported as ``name``, leaves NCCL's own setting (None: unknown, ``-x NAME``)."""
    return value is not None and value in ("", _NCCL_OWN_VALUES.get(name))


def _unset(launcher: list[str], i: int) -> bool:
    """``launcher[i]`` names a variable ``env`` removes (``env -u NAME``, ``env --unset=NAME``)."""
    word = launcher[i]
    return word.startswith("--unset=") or (i > 0 and launcher[i - 1] in ("-u", "--unset") and "=" not in word
                                            and "env" in (w.rpartition("/")[2] for w in launcher[:i - 1]))
