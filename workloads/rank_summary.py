"""A generated trace written lazily: its rank summary (``PREFIX.ranks.json``) first, then the
ranks a run needs, each when first needed (:class:`LazyTraces`)."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.workloads.chakra.reader import SUMMARY_SUFFIX
from simpy_astra.workloads.generator_registry import GENERATORS, Prepared, prepare


class LazyTraces:
    """A generated trace whose ranks are written when first needed, and its rank summary.

    The summary gives each rank a class (ranks of one class have the same trace but for the
    communicator groups and peers they name: a pipeline stage) and the values of its class's
    slots, in the order its trace first names them: a group id (kind "g") or a peer NPU
    ("p"). Two ranks whose summaries agree once made relative to each rank have traces that
    agree the same way, so folding is decided from the summary alone
    (:func:`simpy_astra.folding.summary_key`)."""

    def __init__(self, prefix: str, doc: dict[str, Any], prepared: Prepared | None = None) -> None:
        self.prefix = prefix
        #: the job the ranks are written from: the run's own, else prepared from the summary
        self._prepared = prepared
        self.generator: str = doc["generator"]
        self.params: dict[str, Any] = doc["params"]
        self.npus: int = int(doc["npus"])
        self.classes: list[int] = doc["classes"]
        #: per class, the kind of each slot ("g" group, "p" peer)
        self.kinds: list[str] = doc["kinds"]
        #: per rank, the value of each of its class's slots
        self.slots: list[list[int]] = doc["slots"]
        if len(self.classes) != self.npus or len(self.slots) != self.npus or self.generator not in GENERATORS:
            raise ValueError("the summary does not list every rank, or names no known generator")

    def ensure(self, ranks) -> None:
        """Write the ET files of ``ranks`` that do not exist yet."""
        missing = [r for r in ranks if not os.path.exists(f"{self.prefix}.{r}.et")]
        if missing:
            write = GENERATORS[self.generator].ranks
            assert write is not None
            prepared = self._prepared
            if prepared is None or prepared.generator != self.generator or \
                    json.dumps(prepared.params, sort_keys=True) != json.dumps(self.params, sort_keys=True):
                prepared = prepare({"generate": self.generator, **self.params}, None, self.prefix)
            write(prepared.job, self.prefix, missing)


def generated_ranks(prefix: str) -> int:
    """How many ranks a generated workload at ``prefix`` has: its rank summary's count, else
    its ET files ``PREFIX.0.et`` on."""
    source = lazy_traces(prefix)
    if source is not None:
        return source.npus
    ranks = files.numbered_files(prefix)
    return next(n for n in itertools.count() if n not in ranks)  # PREFIX.0.et, .1.et, ... to the first gap


def lazy_traces(prefix: str, prepared: Prepared | None = None) -> LazyTraces | None:
    """The lazily generated trace at ``prefix``, or None (plain ET files); ``prepared``: its
    job, if the caller holds it (then it is not parsed again)."""
    path = prefix + SUMMARY_SUFFIX
    if not os.path.exists(path):
        return None
    try:
        return LazyTraces(prefix, json.loads(files.read_text(path, "rank summary")), prepared)
    except (InputError, OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError.in_file(path, f"corrupt rank summary ({type(exc).__name__}: {exc}); delete "
                                       f"{os.path.dirname(path)} to generate it again") from None


def write_summary(prefix: str, generator: str, params: dict[str, Any], classes: list[int],
                  kinds: list[str], slots: list[list[int]]) -> None:
    """Write ``PREFIX.ranks.json`` (read back by :func:`lazy_traces`)."""
    with open(prefix + SUMMARY_SUFFIX, "w") as f:
        json.dump({"generator": generator, "params": params, "npus": len(classes), "classes": classes,
                   "kinds": kinds, "slots": slots}, f, separators=(",", ":"))
