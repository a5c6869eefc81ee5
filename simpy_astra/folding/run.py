"""Folding at the level of a run: which traces to read, and the figures of orbit members.

:func:`load_traces` decides the folding, from a generator's rank summary when the workload
has one (no trace is read, and only the representatives' traces are written and read) or
else from the traces themselves (:func:`read_traces`, through a reader it is given, so it
knows nothing of files); it also words, in one line, why a run folds less than it might.
:class:`OrbitReports` gives every orbit member its representative's figures when the
representative finishes. A folded run that does not finish cleanly is diagnosed by running
it again unfolded (:class:`~simpy_astra.simulation.Simulation` does that, as only it can
build a run).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from simpy_astra.engine.statistics import NpuReport
from simpy_astra.errors import InputError
from simpy_astra.folding.frames import Folding, Frame, IdShifts, XorIds
from simpy_astra.folding.group_keys import GroupKeys
from simpy_astra.folding.keys import KeyCache, RankClasses, RankKey, rank_key, summary_key
from simpy_astra.folding.network import tag_clash
from simpy_astra.folding.search import find_folding, find_id_shift_folding, find_xor_folding
from simpy_astra.folding.setup import FoldSetup
from simpy_astra.infra.decoded_traces import DecodedTraces
from simpy_astra.infra.switches import env_switch
from simpy_astra.network.backends import BACKENDS
from simpy_astra.workloads.chakra import EtError, et_path, has_rank_summary, read_et
from simpy_astra.workloads.trace_output import MAX_TRACE_NODES

FOLD_DEFAULT = True

#: a run that simulates at least this many NPUs says, before it starts, why it did not fold
#: further (smaller runs cost little either way, and stay quiet)
NOTE_FROM_NPUS = 64

#: the most trace nodes a run with a generated workload simulates, the generators' own bound
#: (about 1 KB each: 4 GB); an unfolded 16,384-GPU step holds ten times as many and would fill
#: a machine's memory before its first event
MAX_SIMULATED_NODES = MAX_TRACE_NODES

#: rank -> (trace path, decoded nodes)
TraceReader = Callable[[int], tuple[str, list]]
#: (frame, group order) -> (rank -> its key in that frame, None = cannot fold)
KeySource = Callable[[Frame, "str | None"], Callable[[int], "RankKey | None"]]


def fold_requested(fold_symmetry: bool | None) -> bool:
    """Whether symmetry folding may be used: the inputs' switch, else SIMPY_ASTRA_FOLD, else on."""
    if fold_symmetry is not None:
        return fold_symmetry
    env = env_switch("SIMPY_ASTRA_FOLD")
    return FOLD_DEFAULT if env is None else env


def fold_asked(fold_symmetry: bool | None) -> bool:
    """Whether folding was asked for in words (``fold_symmetry: true``, ``--fold-symmetry on``
    or SIMPY_ASTRA_FOLD=1), not only left on by default: such a run says why it did not fold,
    however few NPUs it has (:data:`NOTE_FROM_NPUS` keeps the default quiet)."""
    if fold_symmetry is not None:
        return fold_symmetry
    return env_switch("SIMPY_ASTRA_FOLD") is True


def resolve_fold(inputs: Any) -> Any:
    """For a front end that runs no user script (``run``, sweep points): ``inputs`` with the
    default folding (:func:`fold_requested`) made explicit, so congestion-aware and packet
    links fold too."""
    if inputs.fold_symmetry is None:
        return replace(inputs, fold_symmetry=fold_requested(None))
    return inputs


@dataclass
class FoldOutcome:
    """What the search found and, when it fell short, why (for the one-line note)."""

    folding: Folding | None = None
    #: the first reason a frame did not fold (further), in words
    why: list[str] | None = None
    #: kinds of rank in the grid frame (distinct keys): a folding leaving more NPUs is partial
    kinds: int | None = None
    #: kinds of program, when known (a generator's rank summary: its classes); no folding
    #: leaves fewer NPUs, so one leaving more is partial too
    programs: int | None = None

    def __post_init__(self) -> None:
        if self.why is None:
            self.why = []

    def note(self, total_npus: int) -> str | None:
        """One line for a run that folds less than it might; None when it folds fully."""
        simulated = total_npus if self.folding is None else len(self.folding.representatives)
        reason = self.why[0] if self.why else "no translation keeps the run"
        if self.folding is None:
            return f"symmetry folding off: {reason}; simulating {simulated:,} of {total_npus:,} NPUs"
        if self.kinds is not None and simulated > self.kinds:
            kinds = f"{self.kinds:,} kind{'s' if self.kinds != 1 else ''} of rank"
            return (f"symmetry folding partial ({kinds}): {reason}; simulating "
                    f"{simulated:,} of {total_npus:,} NPUs")
        if self.programs is not None and simulated > self.programs:
            programs = f"{self.programs:,} program{'s' if self.programs != 1 else ''}"
            return (f"symmetry folding partial ({programs}): shifts of the network's "
                    f"dimensions map only some ranks of one program onto each other, as their groups "
                    f"and peers lie (do npus_count's dimensions follow the workload's parallel axes?); "
                    f"simulating {simulated:,} of {total_npus:,} NPUs")
        return None


def search(n: int, fold: FoldSetup, key_in: KeySource, groups: dict[int, tuple[int, ...]],
           keep: Callable[[int], None] | None = None, least: int = 1) -> FoldOutcome:
    """The folding of ``n`` ranks whose keys ``key_in`` gives, frames tried cheapest first:
    the grid, then id shifts, then XOR, each only when it could leave fewer NPUs than the
    folding found so far. ``keep(rank)`` is told of each rank that is the first of its kind
    in the grid frame (the trace reader keeps those: representatives come from them).
    ``least``: no folding in any frame leaves fewer NPUs (a rank summary's programs), so once
    one leaves that many the other frames are not searched (at 16,384 NPUs the XOR search
    keyed every rank again, a fifth of the run's start-up, to find nothing better)."""
    out = FoldOutcome()
    why = out.why

    def left() -> int:
        return n if out.folding is None else len(out.folding.representatives)

    rotate = "rotate" if fold.rotate_groups else None
    ranks = RankClasses()
    grid_moves = any(a != {0} for a in fold.allowed)
    if not grid_moves:
        why.append("no shift of any network dimension keeps its delays")
    grid_key = key_in(fold.grid, rotate)
    for i in range(n if grid_moves else 0):
        key = grid_key(i)
        if key is None:  # in every frame
            why[:] = [f"rank {i}'s trace names a group or peer that cannot be compared across ranks"]
            return out
        if key.uses_dims and all(a == {0} for a in fold.with_dims):
            why.append("collectives on the network's dimensions use an algorithm that does not "
                       "commute with their shifts")
            grid_moves = False  # no grid translation moves the dimension rings' algorithms
            break
        if ranks.add(i, key) and keep is not None:
            keep(i)
    if grid_moves:
        out.kinds = len(ranks.classes)
        ranks.classes.clear()  # the keys themselves are no longer needed
        out.folding = find_folding(fold.grid, ranks, fold.allows(ranks), why)
        if fold.id_shifts and not ranks.uses_dims and left() > least:
            # id shifts only when they leave fewer NPUs: candidates fail on the first
            # ranks they move, so this usually reads only a few traces again
            ids = IdShifts(n)
            fewer = find_id_shift_folding(ids, left(), fold.id_shift_allowed, key_in(ids, rotate))
            out.folding = fewer or out.folding
    if fold.xor_possible and left() > max(least, 1):
        xor = XorIds(n)
        fewer = find_xor_folding(xor, left(), fold.xor_generators(), fold.xor_dims,
                                 key_in(xor, "xor" if fold.xor_groups else None))
        out.folding = fewer or out.folding
    if out.folding is not None:
        out.folding.groups = groups
        clash = tag_clash(out.folding, ranks.uses_dims)
        if clash is not None:
            why[:] = [clash]
            out.folding = None
    return out


def read_traces(total_npus: int, read: TraceReader, fold: FoldSetup | None,
                groups: dict[int, tuple[int, ...]], parse_groups: Callable[[str], Any],
                outcome: FoldOutcome | None = None,
                ) -> tuple[dict[int, tuple[str, list]], Folding | None]:
    """(path, decoded nodes) of every NPU that will be simulated, and the folding found.

    When folding may apply (``fold`` is not None), each rank is decoded once to compare it
    with the others and kept only if it is the first of its kind: an orbit member is never
    simulated, so its nodes are dropped at once (a rank that turns out to be needed after all
    is read again). ``outcome``, if given, receives what :func:`search` found."""
    n = total_npus
    if fold is None:
        return {i: read(i) for i in range(n)}, None
    key_cache = KeyCache()
    kept: dict[int, tuple[str, list]] = {}
    last: dict[int, tuple[str, list]] = {}  # the trace just keyed, which ``keep`` may keep

    def key_in(frame: Frame, group_order: str | None) -> Callable[[int], RankKey | None]:
        """A rank's key in ``frame`` (its trace read again unless kept)."""
        def key(rank: int) -> RankKey | None:
            trace = kept.get(rank) or read(rank)
            last.clear()
            last[rank] = trace
            return rank_key(rank, trace[1], frame, groups, parse_groups, group_order, key_cache)
        return key

    found = search(n, fold, key_in, groups, keep=lambda rank: kept.__setitem__(rank, last[rank]))
    if outcome is not None:
        outcome.folding, outcome.why, outcome.kinds = found.folding, found.why, found.kinds
    folding = found.folding
    wanted = range(n) if folding is None else folding.representatives
    return {i: kept.get(i) or last.get(i) or read(i) for i in wanted}, folding


def fold_from_summary(source: Any, fold: FoldSetup, groups: dict[int, tuple[int, ...]]) -> FoldOutcome:
    """The folding of a lazily generated workload, from its rank summary alone
    (:class:`~simpy_astra.workloads.rank_summary.LazyTraces`): no trace is read."""
    classes, kinds, slots = source.classes, source.kinds, source.slots

    def key_in(frame: Frame, group_order: str | None) -> Callable[[int], RankKey | None]:
        group_keys = GroupKeys(frame, group_order)

        def key(rank: int) -> RankKey | None:
            c = classes[rank]
            return summary_key(rank, c, kinds[c], slots[rank], frame, groups, group_keys, fold.timed_sets)
        return key

    # a rank's key starts with its class (its program), the same in every frame
    return search(source.npus, fold, key_in, groups, least=len(set(classes)))


def load_traces(prefix: str, total_npus: int, fold: FoldSetup | None, groups: dict[int, tuple[int, ...]],
                parse_groups: Callable[[str], Any], outcome: FoldOutcome, prepared: Any = None,
                where: str = "", why_off: str = "folding is off",
                decoded: DecodedTraces | None = None) -> tuple[dict[int, tuple[str, list]], Folding | None]:
    """(path, decoded nodes) of every NPU a run simulates, and the folding found.

    A lazily generated workload (it has a rank summary) is folded from the summary, and only
    the ranks simulated are written (if not yet) and read; otherwise every ET file is read
    (:func:`read_traces`); ``prepared``: the generated job, if the run holds it (its ranks are
    then written from it). Decoded records and attributes are shared between ranks. A
    generated run past :data:`MAX_SIMULATED_NODES` is refused naming ``where`` (the scenario's
    field; default the traces' prefix) and, when it does not fold, ``why_off``. ``decoded``:
    traces the size checks decoded already, taken instead of decoded again."""
    caches: tuple[dict, dict, dict] = ({}, {}, {})  # shared by all ranks (see read_et)

    def read(rank: int) -> tuple[str, list]:
        path = et_path(prefix, rank)
        nodes = decoded.take(path) if decoded is not None else None
        if nodes is not None:
            return path, nodes
        try:
            return path, read_et(path, attr_cache=caches[0], attrs_cache=caches[1], record_cache=caches[2])[1]
        except (InputError, EtError) as exc:  # a trace the cache holds: the user never wrote it; delete it
            from simpy_astra.workloads.generated import in_cache_entry

            raise in_cache_entry(exc, prefix) from None

    if not has_rank_summary(prefix):  # ET files: the generators' registry is not needed
        return read_traces(total_npus, read, fold, groups, parse_groups, outcome)
    # deferred: only generated workloads need the registry (and its front ends)
    from simpy_astra.workloads.generated import lazy_traces

    source = lazy_traces(prefix, prepared)
    assert source is not None
    if source.npus != total_npus:
        raise InputError(f"{prefix}: the generated workload has {source.npus} NPUs but the network has "
                         f"{total_npus}; make the generator's parallelism match npus_count")
    if fold is not None:
        found = fold_from_summary(source, fold, groups)
        outcome.folding, outcome.why, outcome.kinds = found.folding, found.why, found.kinds
        outcome.programs = len(set(source.classes))
    wanted = range(total_npus) if outcome.folding is None else outcome.folding.representatives
    source.ensure(wanted[:1])
    first = read(wanted[0])
    why = "it does not fold" if fold is not None else why_off
    _check_size(len(first[1]), len(wanted), total_npus, why, where or prefix)
    source.ensure(wanted)
    traces = {i: first if i == wanted[0] else read(i) for i in wanted}
    if decoded is not None:
        decoded.release()  # traces the run does not simulate: not held past its build
    return traces, outcome.folding


def _check_size(first_nodes: int, simulated: int, total_npus: int, why: str, where: str) -> None:
    """Refuse, before the other traces are written, a run of more than
    :data:`MAX_SIMULATED_NODES` nodes (estimated as the first simulated NPU's times their count)."""
    nodes = first_nodes * simulated
    if nodes <= MAX_SIMULATED_NODES:
        return
    raise InputError(f"{where}: the run would simulate {simulated:,} of {total_npus:,} NPUs ({why}): about "
                     f"{nodes:,} trace nodes ({first_nodes:,} for one NPU), more than the bound of "
                     f"{MAX_SIMULATED_NODES:,} (about 4 GB of memory and disk); let it fold, or use fewer GPUs or "
                     f"micro-batches")


class OrbitReports:
    """Hands out a finished representative's report once per orbit member.

    Reports of one tick are held until the clock moves on and then given out in NPU-id
    order: a folded run cannot know the order its orbit members would have finished in within
    the tick. With ``folding`` None (an unfolded cluster preset's run, which keeps no
    ASTRA-sim order) each NPU stands for itself, so that both runs print the same lines in the
    same order. With ``hold``, all are held until :meth:`flush` (a run that may yet turn out
    not to be symmetric)."""

    def __init__(self, folding: Folding | None, emit: Callable[[NpuReport], None], hold: bool = False) -> None:
        self.folding = folding
        self.emit = emit
        self.hold = hold
        self._pending: list[NpuReport] = []

    def finished(self, report: NpuReport) -> None:
        """A representative finished: so did its whole orbit, with the same figures."""
        pending = self._pending
        if pending and not self.hold and pending[0].finished_cycles != report.finished_cycles:
            self.flush()
        for member in [report.npu_id] if self.folding is None else self.folding.orbit(report.npu_id):
            pending.append(report if member == report.npu_id else report.for_npu(member))

    def settle(self) -> None:
        """The run stopped between instants (``run(until=...)``): give out what is held, unless
        the run may yet be done again unfolded (``hold``)."""
        if not self.hold:
            self.flush()

    def flush(self) -> None:
        for report in sorted(self._pending, key=lambda r: (r.finished_cycles, r.npu_id)):
            self.emit(report)
        self._pending.clear()


def fold_run(inputs: Any, dims: list, groups: dict[int, tuple[int, ...]],
             parse_groups: Callable[[str], Any]) -> tuple[dict[int, tuple[str, list]], Folding | None, str | None]:
    """A run's traces, its folding, and why it folds less than it might (one line, or None).

    Folding is tried when the inputs ask for it (:func:`fold_requested`) and can apply
    (:meth:`FoldSetup.for_run`, from what the backend declares and the network file: decided before
    the network is built, which a folded run builds with one link per orbit); ``inputs`` is
    the run's :class:`~simpy_astra.config.inputs.SimulationInputs`. Links (congestion-aware
    and packet) fold only when ``fold_symmetry`` is explicitly true (see :func:`resolve_fold`)."""
    total_npus = math.prod(t.npus_count for t in dims)
    outcome = FoldOutcome()
    fold = None
    backend = BACKENDS[inputs.backend]
    rails = inputs.network.rails
    unlike = None if rails is None or rails.symmetric else (
        f"cluster.oversubscription {rails.oversubscription:g}:1 over leaves of {rails.nodes_per_leaf} "
        f"node{'s' if rails.nodes_per_leaf != 1 else ''} makes "
        f"GPUs under different leaves unlike; leave it out to fold")
    if unlike is not None and fold_requested(inputs.fold_symmetry):
        # asked for (fold_symmetry: true, --fold-symmetry on): it had folded, each GPU given one leaf's figures
        outcome.why = [unlike]
    elif backend.folds == "links" and inputs.fold_symmetry is None and fold_requested(None):
        # a co-simulation script may change links, fail switches or add traffic mid-run, which
        # a folded run's orbit links cannot take: a Simulation built from Python folds them
        # only when asked (the command line and sweep points, which run no script, ask)
        outcome.why = [f"a script may change links mid-run: {inputs.backend.replace('_', '-')} links fold "
                       f"only with fold_symmetry: true"]
    elif fold_requested(inputs.fold_symmetry):
        fold = FoldSetup.for_run(backend, inputs.network, inputs.system, inputs.remote_memory, dims,
                                 outcome.why)
    why_off = unlike or "folding is off: fold_symmetry: false, --fold-symmetry off or SIMPY_ASTRA_FOLD=0"
    prepared = inputs.workload.prepared
    traces, folding = load_traces(inputs.workload_prefix, total_npus, fold, groups, parse_groups, outcome,
                                  prepared, getattr(prepared, "where", ""), why_off, inputs.workload.decoded)
    note = outcome.note(total_npus) if fold is not None or outcome.why else None
    return traces, folding, note
