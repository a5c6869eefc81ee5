"""Symmetry folding: simulate each orbit of equivalent NPUs once.

NPU ids are points of the network's coordinate grid (dimension 0 varies fastest). A
translation ``h`` moves NPU ``r`` to ``r + h`` in one of three frames (``frames``). If

* the congestion-unaware delay between any two NPUs is unchanged by ``h`` (rings, switches
  and fully connected dimensions are; an explicit graph usually is not), and
* the trace of NPU ``r + h`` is the trace of NPU ``r`` with every peer and every
  communicator group moved by ``h``, for every ``r`` (``keys``),

then NPU ``r + h`` does at every tick what NPU ``r`` does, with ids moved by ``h``. The
translations with that property form a group ``H`` (``search``); each orbit ``r + H`` is
simulated once, by its lowest id, and every other member reports its representative's
figures (``run``); a generated workload's rank summary stands in for its traces, so only
the representatives' traces are written and read. Messages to a non-representative are delivered to its representative in
the representative's frame (``network``). Whether folding may apply at all, and which
translations each dimension's delays and algorithms allow, is decided before any trace is
read (``setup``); a collective algorithm states the frames it commutes with
(:class:`~simpy_astra.collectives.base.CollectiveAlgorithm`), and ``tests/test_fold_claims.py``
checks every registered algorithm's claims by simulating it folded and unfolded. On the
congestion-aware and packet backends links fold too: one live link (port) per orbit of links
(``links``, ``packet``), for the translations that move every link and route onto a link
and a route.
"""

from simpy_astra.folding.frames import (
    Folding,
    Frame,
    IdShifts,
    XorIds,
    delay_invariant_shifts,
    delay_invariant_xors,
)
from simpy_astra.folding.keys import KeyCache, RankClasses, RankKey, rank_key, summary_key
from simpy_astra.folding.network import FoldedNetwork, tag_clash
from simpy_astra.folding.run import (
    NOTE_FROM_NPUS,
    FoldOutcome,
    OrbitReports,
    fold_requested,
    fold_run,
    load_traces,
    read_traces,
)
from simpy_astra.folding.search import find_folding, find_id_shift_folding, find_xor_folding
from simpy_astra.folding.setup import FoldSetup, trusted_claims

__all__ = [
    "trusted_claims",
    "fold_run",
    "NOTE_FROM_NPUS", "FoldOutcome", "FoldSetup", "FoldedNetwork", "Folding", "Frame", "IdShifts", "KeyCache",
    "OrbitReports", "RankClasses", "RankKey", "XorIds", "delay_invariant_shifts", "delay_invariant_xors",
    "find_folding", "find_id_shift_folding", "find_xor_folding", "fold_requested", "load_traces", "rank_key",
    "read_traces", "summary_key", "tag_clash",
]
