"""How large a Chrome trace (``--trace-out``) or a ``nodes.csv`` (``--csv-out``) will be, known
before the run, and the NPUs a trace shows.

A trace holds one event per workload node each NPU runs (plus chunk phases, for collectives
the system layer splits): a 1,536-GPU Megatron step is ten million events, more than a
browser can open, and writing them took minutes after the run. The size is bounded below from
the traces' node counts before time starts (a generated workload's from one rank per class,
as a folded run reads; ET files from the built run), so a trace that cannot be opened is
refused at once, in one line that gives its size and how to select NPUs (``--trace-npus``).
``nodes.csv`` has a row per node of each NPU simulated (a folded run's orbits once each, with
``npus.csv`` naming the NPU simulated for each): one past the same limit is refused alike, saying how
many rows of how many NPUs it would hold. Before the build, when the run may fold, each
program's rows are counted once (a folded run's orbits each run one of them: a bound below the
file); once built, the NPUs it simulates.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

from simpy_astra.errors import InputError, non_ascii
from simpy_astra.infra.decoded_traces import DecodedTraces

#: the largest trace written: Perfetto's UI holds a trace in the browser's memory, typically
#: 2 GB, at 2-4x the file's size (perfetto.dev, "Visualising large traces"); chrome://tracing
#: stopped at 256 MB
LIMIT_BYTES = 10**9

#: one node's event without its name and with every number one digit long
#: (:func:`simpy_astra.report.timeline.trace_events`): the fewest bytes it takes
_EVENT = len(json.dumps({"ph": "X", "name": "", "cat": "compute", "pid": 0, "tid": 0, "ts": 0, "dur": 0,
                         "args": {"node_id": 0, "start_ns": 0, "end_ns": 0}}, separators=(",", ":"))) + 1
#: an NPU's process name and sort index
_NPU = 2 * len(json.dumps({"ph": "M", "name": "process_sort_index", "pid": 0, "args": {"sort_index": 0}},
                          separators=(",", ":")))


def node_bytes(nodes: Iterable) -> int:
    """The fewest bytes the events of ``nodes`` (one NPU's) take in a trace."""
    return sum(_EVENT + len(json.dumps(n.name)) - 2 + len(str(n.id)) - 1 for n in nodes)


def csv_measure(nodes: Iterable) -> tuple[int, int]:
    """(the fewest bytes, the rows) of the ``nodes.csv`` rows of ``nodes`` (one NPU's): every
    number one digit."""
    nodes = list(nodes)
    # by column, each a pass in C (a Python expression per node took 0.2 s of a 1,536-GPU step)
    names = sum(map(len, map(attrgetter("name"), nodes)))
    ids = sum(map(len, map(str, map(attrgetter("id"), nodes))))
    kinds = Counter(map(attrgetter("type"), nodes))
    types = sum(len(next(n for n in nodes if n.type == kind).type_label) * count for kind, count in kinds.items())
    return _ROW * len(nodes) + names + ids + types, len(nodes)


#: a ``nodes.csv`` row without its name, node id and type, its numbers one digit each
_ROW = len("0,,,,0,0,0,0,0,0\n")


#: an NPU id or a range of them, FIRST-LAST
_RANGE = re.compile(r"([0-9]+)(?:\s*-\s*([0-9]+))?")


def parse_npus(text: str, total: int) -> list[int]:
    """``--trace-npus``: NPU ids and ranges (``0-7,64``) of a run of ``total`` NPUs, sorted."""
    chosen: set[int] = set()
    for part in text.split(","):
        # ASCII digits only: int() also reads '1_0' as 10, '+1' and other scripts' digits
        m = _RANGE.fullmatch(part.strip())
        if m is None:
            raise InputError(f"--trace-npus: {part.strip()!r}{non_ascii(part)} is no NPU id or range; give ids and "
                             f"ranges such as 0-7,64")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo > hi:
            raise InputError(f"--trace-npus: {part.strip()!r} runs backwards; give FIRST-LAST with FIRST <= "
                             f"LAST, such as {hi}-{lo}")
        if hi >= total:
            raise InputError(f"--trace-npus: {part.strip()!r} is past this run's {total:,} NPUs (0-{total - 1})")
        chosen.update(range(lo, hi + 1))
    return sorted(chosen)


def check_size(per_npu: dict[int, int], selected: list[int] | None) -> None:
    """Refuse a trace whose events (``per_npu``: NPU -> its nodes' bytes) exceed the limit."""
    npus = sorted(per_npu) if selected is None else selected
    size = sum(per_npu.get(i, 0) + _NPU for i in npus)
    if size <= LIMIT_BYTES:
        return
    first = per_npu.get(npus[0], 0) + _NPU
    few = max(1, min(8, LIMIT_BYTES // max(first, 1)))
    which = "all" if selected is None else "the"
    raise InputError(f"--trace-out: the trace of {which} {len(npus):,} NPUs would be at least {_gb(size)} "
                     f"(its nodes' events alone), past the {_gb(LIMIT_BYTES)} a browser opens; select NPUs "
                     f"with --trace-npus (--trace-npus 0-{few - 1}: about {_gb(few * first)})")


def check_csv_size(per_npu: dict[int, tuple[int, int]], total_npus: int) -> None:
    """Refuse a ``nodes.csv`` whose rows (``per_npu``: each NPU whose rows it lists -> their
    bytes and count) exceed the limit; ``total_npus``: the NPUs ``npus.csv`` maps to them."""
    size, rows = sum(b for b, _ in per_npu.values()), sum(n for _, n in per_npu.values())
    if size <= LIMIT_BYTES:
        return
    every = len(per_npu) == total_npus  # unfolded: folding would list each orbit's rows once
    listed = (f"each node of all {total_npus:,} NPUs" if every else
              f"each node of {len(per_npu):,} NPUs, each standing for its orbit of the {total_npus:,}")
    fewer = ("run fewer NPUs, or let the run fold (a folded run lists each orbit's rows once)" if every else
             "run fewer NPUs")  # folded already: its orbits' rows are the fewest it can list
    raise InputError(f"--csv-out: nodes.csv would be at least {_gb(size)} ({rows:,} rows, {listed}), past "
                     f"{_gb(LIMIT_BYTES)}; leave out --csv-out (the per-NPU figures are in --json-out), or "
                     f"{fewer}")


def _gb(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"


def lazy_node_bytes(prefix: str, prepared, measure: Callable[[list], Any] = node_bytes,
                    ranks: list[int] | None = None, decoded: DecodedTraces | None = None) -> dict[int, Any] | None:
    """Each NPU's events' fewest bytes (``measure`` of its nodes: :func:`node_bytes`, or
    :func:`csv_measure`) for a generated workload (it has a rank summary), from one rank of each
    class (written if not yet, as a folded run does); None for ET files. ``ranks``: those NPUs
    only, reading only their classes' traces (each read took 0.1 s at GPT-3-175B's size).
    ``decoded``: the traces decoded so far, used and added to, so that the other check and
    the run's build do not decode them again."""
    measured = _per_class(prefix, prepared, measure, ranks, decoded)
    if measured is None:
        return None
    per_class, classes, wanted = measured
    return {rank: per_class[classes[rank]] for rank in wanted}


def _per_class(prefix: str, prepared, measure: Callable[[list], Any], ranks: list[int] | None,
               decoded: DecodedTraces | None) -> tuple[dict[int, Any], list[int], Iterable[int]] | None:
    """(class -> ``measure`` of its nodes, each rank's class, the ranks asked for) of a generated
    workload, or None for ET files (:func:`lazy_node_bytes`)."""
    from simpy_astra.workloads import chakra
    from simpy_astra.workloads.generated import lazy_traces

    source = lazy_traces(prefix, prepared)
    if source is None:
        return None
    wanted = range(len(source.classes)) if ranks is None else ranks
    first: dict[int, int] = {}
    for rank in wanted:
        first.setdefault(source.classes[rank], rank)
    source.ensure(sorted(first.values()))
    if decoded is None:
        decoded = DecodedTraces()
    per_class = {}
    for kind, rank in first.items():
        path = chakra.et_path(prefix, rank)
        nodes = decoded.held(path)
        if nodes is None:
            nodes = chakra.read_et(path)[1]
            decoded.keep(path, nodes)
        per_class[kind] = measure(nodes)
    return per_class, source.classes, wanted


def check_before_build(inputs, trace_out: str | None, trace_npus: str | None, csv_out: str | None = None) -> bool:
    """Refuse ``--trace-npus`` without ``--trace-out``, NPUs past the run's, and a generated
    workload's trace or nodes.csv past the limit; True when the sizes were checked (else the
    built run's are)."""
    if trace_out is None and trace_npus is not None:
        raise InputError("--trace-npus: selects the NPUs --trace-out writes; give --trace-out too, or leave "
                         "out --trace-npus")
    if trace_out is None and csv_out is None:
        return True
    from simpy_astra.workloads.chakra import has_rank_summary

    prefix, prepared = inputs.workload_prefix, inputs.workload.prepared
    if inputs.jobs or not has_rank_summary(prefix):  # ET files: counted once the run is built
        return False
    if trace_out is not None:
        selected = None if trace_npus is None else parse_npus(trace_npus, inputs.network.total_npus)
        check_size(lazy_node_bytes(prefix, prepared, ranks=selected, decoded=inputs.workload.decoded), selected)
    if csv_out is not None:
        from simpy_astra.folding.run import fold_requested

        per_class, classes, _ = _per_class(prefix, prepared, csv_measure, None, inputs.workload.decoded)
        if fold_requested(inputs.fold_symmetry):  # each orbit runs a program: each program's rows at least once
            check_csv_size({kind: per_class[kind] for kind in set(classes)}, len(classes))
        else:  # every NPU its own rows
            check_csv_size({rank: per_class[kind] for rank, kind in enumerate(classes)}, len(classes))
    return True


def check_built(sim, trace_npus: str | None, trace_out: bool = True, csv_out: bool = False) -> None:
    """The size checks on a built run (the nodes of every NPU it simulates read), before time
    starts: the trace's of ET files, nodes.csv's of any run (a folded one's orbits now known)."""
    if trace_out:
        selected = None if trace_npus is None else parse_npus(trace_npus, sim.total_npus)
        check_size({npu.device_id: node_bytes(npu.nodes.values()) for npu in sim.npus}, selected)
    if csv_out:
        check_csv_size({npu.device_id: csv_measure(npu.nodes.values()) for npu in sim.npus}, sim.total_npus)


def selected_npus(trace_npus: str | None, total: int) -> list[int] | None:
    """The NPUs a trace shows: ``--trace-npus``'s, else None (all)."""
    return None if trace_npus is None else parse_npus(trace_npus, total)
