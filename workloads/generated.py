"""Workloads generated on demand from parameters, cached on disk by those parameters.

A scenario may name a generator instead of ET files::

    workload:
      generate: transformer      # a key of GENERATORS
      preset: llama2-7b          # everything else is the generator's parameters
      dp: 2

A generator is ``fn(job, prefix: str) -> str | None``: it writes ``prefix.{npu}.et`` and
returns the path of a comm-group JSON it wrote, or None. ``job`` is what its entry's
``prepare(params, cluster, where)`` made of the parameters, parsed once per scenario (the
parameters themselves for a generator without one); the scenario loader and the run ask the entry
for the job's ``layout`` and ``report`` and never test which generator it is. Generated traces are
cached under ``$SIMPY_ASTRA_CACHE`` (default ``~/.cache/simpy-astra``) in a folder named by a hash
of the generator name, its ``VERSION``, the generators' code and the parameters, so a sweep
generates each trace once; workers racing on a trace build it privately, the first rename wins.

A generator that can write single ranks (``summary`` and ``ranks``) is materialised lazily
for a run: its folder first holds the comm groups and a *rank summary* (``PREFIX.ranks.json``,
see :class:`LazyTraces`), from which folding is decided without reading any trace; then only
the ranks the run simulates are written. The cache grows with the NPUs simulated, not with
the cluster; the other ranks are written on demand (``--fold-symmetry off``, or
:func:`materialise` with ``lazy=False``, for export).

This module hands on the names of its parts: the registry (``generator_registry``), the cache
(``trace_cache``, with ``cache_errors``), lazily written ranks (``rank_summary``) and a
generator's errors in a scenario's words (``generator_words``).
"""


from __future__ import annotations

from simpy_astra.workloads.cache_errors import (
    USERS_FIX,
    as_scenarios_error,
    cache_entry_name,
    corrupt_entry_fix,
    in_cache_entry,
)
from simpy_astra.workloads.generator_registry import (
    CODE_KEY,
    GENERATORS,
    GeneratorEntry,
    Prepared,
    WorkloadLayout,
    prepare,
    register,
    resolve_paths,
)
from simpy_astra.workloads.generator_words import as_fields, in_fields
from simpy_astra.workloads.rank_summary import LazyTraces, generated_ranks, lazy_traces, write_summary
from simpy_astra.workloads.trace_cache import (
    GeneratedWorkload,
    NotGenerated,
    cache_key,
    cache_root,
    code_digest,
    file_name,
    folder_digest,
    materialise,
)

__all__ = ["CODE_KEY", "GENERATORS", "USERS_FIX", "GeneratedWorkload", "GeneratorEntry", "LazyTraces",
           "NotGenerated", "Prepared", "WorkloadLayout", "as_fields", "as_scenarios_error", "cache_entry_name",
           "cache_key", "cache_root", "code_digest", "corrupt_entry_fix", "file_name", "folder_digest",
           "generated_ranks", "in_cache_entry", "in_fields", "lazy_traces", "materialise", "prepare", "register",
           "resolve_paths", "write_summary"]
