"""The generators a scenario may name (``workload: {generate: NAME, ...}``), one registry.

An entry says how to generate, prepare and lay out its job; a user's function joins by
:func:`register` (or by naming it ``package.module:function``), and :func:`prepare` turns a
scenario's mapping into the job, parsed once.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from simpy_astra.errors import InputError, Param, Parts
from simpy_astra.infra.registry_names import origin, same_definition, spellable
from simpy_astra.plugins import (
    NOT_LOADED_HINT,
    PluginError,
    call_makes,
    import_object,
    shown,
    user_code_problem,
)
from simpy_astra.workloads.generator_inputs import held_digest, named_files_digest, source_digest
from simpy_astra.workloads.generator_words import as_fields, in_fields


@dataclass(frozen=True)
class GeneratorEntry:
    """A registered generator: the function and a version that invalidates old cache entries.

    ``path_params`` name parameters that are files (resolved from the scenario's folder);
    ``cache_params(params, where)`` may add to the parameters before they key the cache (e.g.
    an input file's digest, so an edited file is generated anew).
    """

    fn: Callable[[Any, str], str | None]
    version: str
    path_params: tuple[str, ...] = ()
    cache_params: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    #: module whose ``main(argv) -> int`` is ``simpy-astra generate NAME`` (None: scenarios only)
    command: str | None = None
    #: ``summary(job, prefix) -> groups path or None``: writes the comm groups and the rank
    #: summary (``PREFIX.ranks.json``), no trace; with ``ranks`` the generator can be lazy
    summary: Callable[[Any, str], str | None] | None = None
    #: ``ranks(job, prefix, ranks)``: writes ``PREFIX.{rank}.et`` for just those ranks
    ranks: Callable[[Any, str, list[int]], None] | None = None
    #: ``prepare(params, cluster, where) -> (params, job)``: the parameters parsed once into a
    #: typed, frozen job, and the parameters as they key the cache (with what a scenario's
    #: ``cluster`` gives, None without one); without it the job is the parameters
    prepare: Callable[[dict[str, Any], Any, str], tuple[dict[str, Any], Any]] | None = None
    #: ``layout(job) -> WorkloadLayout``: its ranks, network blocks and groups' dimensions,
    #: known before any trace is written
    layout: Callable[[Any], WorkloadLayout] | None = None
    #: ``report(job, iteration_time_ns)``: the figures a training job reports of itself
    #: (``lines()`` and ``as_dict()``, e.g. Megatron's TFLOP/s and MFU); None: none
    report: Callable[[Any, int], Any] | None = None
    #: its ``args`` parameter is a framework's command line (Megatron-LM's flags), whose flags
    #: a sweep's ``workload.args.<flag>`` axes edit
    command_line_args: bool = False
    #: it runs only beside a scenario's ``cluster:`` (which gives its GPUs), so never as one of ``jobs:``
    needs_cluster: bool = False
    #: its compute nodes carry FLOPs for a system's roofline to time, not durations (a cluster's
    #: system, which takes each node's duration, would give every kernel 1 ns)
    roofline_compute: bool = False
    #: its traces may load or store remote memory; when not, a ``remote_memory`` beside it on
    #: a cluster is refused (it would change nothing: its tensors live in the GPU's memory)
    writes_remote_memory: bool = True
    #: generating takes minutes (SCALE-Sim simulates every layer): ``sweep --list`` checks a
    #: point without running it (:class:`NotGenerated`) unless its traces are cached
    slow: bool = False

    @property
    def by_user(self) -> bool:
        """Whether a user's function generates (:func:`register`): a file of its traces that does
        not read is the generator's to fix; one of ours is a corrupt cache entry, to delete."""
        return getattr(self.fn, "users", None) is not None
    #: ``params()``: the parameter names it takes, so that a sweep axis on another is refused
    #: once, before any point runs (None: not known, e.g. a user's generator)
    params: Callable[[], tuple[str, ...]] | None = None


@dataclass(frozen=True)
class WorkloadLayout:
    """What a generated job's layout tells the scenario loader before any trace is written."""

    #: ranks of the job, where its parameters fix them (the network must have as many NPUs)
    ranks: int | None = None
    #: a cluster's GPUs written as network dimensions, in rank order (None: one block)
    blocks: list[int] | None = None
    #: communicator group id -> its parallel dimension ("tp", "dp", ...), for breakdowns
    dimensions: dict[int, str] = field(default_factory=dict)
    #: what the framework would warn of the job and run on, one line each: written whole, naming its
    #: place (Megatron's), or parts (:data:`~simpy_astra.errors.Parts`) a scenario spells with its fields
    warnings: tuple[str | Parts, ...] = ()
    #: the job sends a message a network plays one by one (a point-to-point send, an
    #: all-to-all), which reads its routes' latencies; False: every exchange is an all-reduce,
    #: reduce-scatter or all-gather (a cluster's analytical backend times those by NCCL's
    #: model). True where not known
    plays_messages: bool = True
    #: the (sender, receiver) ranks of every message the network plays one by one, where the
    #: generator lists them (None: not listed, so every route's latency is taken as read)
    played_pairs: tuple[tuple[int, int], ...] | None = None
    #: the job issues an all-gather or a reduce-scatter (NCCL runs PAT for them on a group of one
    #: GPU a node, reading every fitted share); False: it issues neither. True where not known
    gathers: bool = True
    #: each all-gather and reduce-scatter runs over every rank at once (a microbenchmark's), so
    #: its group holds a whole node's GPUs and NCCL runs PAT for it only at one GPU a node
    gathers_on_every_rank: bool = False


@dataclass(frozen=True)
class Prepared:
    """A generator's job, parsed once: what a scenario's workload mapping becomes."""

    generator: str
    #: the parameters as they key the cache
    params: dict[str, Any]
    #: the typed job (the parameters themselves for a generator without ``prepare``)
    job: Any
    #: where the mapping was written (``s.yaml: workload``), for errors met reading it later
    where: str = field(default="workload", compare=False)

    @property
    def entry(self) -> GeneratorEntry:
        return GENERATORS[self.generator]

    def layout(self) -> WorkloadLayout:
        """The job's layout; a generator that reads its parameters here (the transformer's)
        has its errors worded in the scenario's fields, as :func:`materialise` words them.
        Made once: loading a scenario asks for it four times, and a Megatron job's lists every
        message it plays (a sweep's ``--list`` loads every point)."""
        return self._layout

    @cached_property
    def _layout(self) -> WorkloadLayout:
        layout = self.entry.layout
        if layout is None:
            return WorkloadLayout()
        try:
            found = layout(self.job)
        except InputError as exc:
            raise exc.reworded(as_fields(exc, self.where)) from None
        return replace(found, warnings=tuple(line if isinstance(line, str) else in_fields(line, self.where)
                                             for line in found.warnings))


def register(name: str, fn: Callable[[dict[str, Any], str], str | None], version: str = "1") -> GeneratorEntry:
    """Make a scenario's ``workload: {generate: name, ...}`` run ``fn(params, prefix)`` (a
    plug-in's generator, docs/generators.md): ``params`` is the mapping without ``generate`` (beside
    a ``cluster:``, with the cluster's GPU count as ``num_npus`` unless the mapping gives one);
    ``fn`` writes ``prefix.{rank}.et`` for ranks 0..N-1 and returns the path of a comm-group
    JSON it wrote beside them, or None. Traces are cached by name, ``version``, the parameters,
    ``fn``'s own name, the source of its module and of the user's modules loaded beside it, and the
    files its parameters name, so an edited generator, helper or input file is run again. A name already given
    to another generator (``microbench``, another module's) is a ValueError."""
    spellable(name, "generator")
    if not callable(fn):
        raise TypeError(f"generator '{name}': {shown(fn, 120)} is not a function fn(params, prefix)")
    if call_makes(fn):
        raise TypeError(f"generator '{name}' is a generator or async function (it yields or awaits): a "
                        f"workload generator is a plain function fn(params, prefix) that writes the ET files, then "
                        f"returns None or the path of the comm-group JSON it wrote (docs/generators.md)")
    taken = GENERATORS.get(name)
    theirs = getattr(taken.fn, "users", None) if taken is not None else None
    if taken is not None and (theirs is None or not same_definition(theirs, fn)):
        owner = "simpy-astra's own generator" if theirs is None else origin(theirs)
        raise ValueError(f"generator name '{name}' is already taken by {owner}; register {origin(fn)} under "
                         f"another name")
    entry = GeneratorEntry(_users_generator(name, fn), str(version), prepare=_cluster_npus,
                           cache_params=lambda params, where: {**params, CODE_KEY: _code_key(fn, params)})
    GENERATORS[name] = entry
    return entry


def _cluster_npus(params: dict[str, Any], cluster: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A user's generator beside a scenario's ``cluster:`` gets ``num_npus``, the cluster's GPU
    count, unless its mapping gives one (as ``microbench`` does): without it the generator
    could not know how many ranks to write (the scenario loader checks that they agree)."""
    if cluster is None or "num_npus" in params:
        return params, params
    params = {**params, "num_npus": cluster.gpus}
    return params, params


#: the cache key's entry for a user generator's source (never handed to the generator)
CODE_KEY = "__generator_source__"


def _code_key(fn: Callable[..., Any], params: dict[str, Any]) -> str:
    """Which function (``module:qualname``: another one of the same file registered under the
    name must not reuse the first one's traces), the digest of its code and that of the files
    its parameters name: an edited helper module or data file must not run the old traces. A
    generator that is an object (a callable instance, a partial, a bound method) adds what it
    holds (:func:`held_digest`): two objects of one class, or one changed from Python, write
    other traces."""
    held = held_digest(fn)  # none for a function: its key as before, its cached traces still found
    return f"{origin(fn)} {source_digest(fn)} {named_files_digest(params)}{f' {held}' if held else ''}"


def _users_generator(name: str, fn: Callable[..., Any]) -> Callable[[dict[str, Any], str], str | None]:
    """``fn`` with its errors reported as its author's, and what it returns and writes checked:
    the comm-group path (a file it wrote beside ``prefix``) or None, and ``prefix.0.et``."""
    who = f"generator '{name}'" if name == origin(fn) else f"generator '{name}' ({origin(fn)})"

    def run(params: dict[str, Any], prefix: str) -> str | None:
        params = {k: v for k, v in params.items() if k != CODE_KEY}
        try:
            groups = fn(params, prefix)
        except InputError as exc:  # its own words, as written: a scenario names it by its generate field
            exc.with_parts(Param("generate"), f": {exc.message}")  # never its own parts: its message is its word
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's generator failed: say so
            raise PluginError(user_code_problem(who, exc), exc) from None
        folder = os.path.dirname(prefix)
        if groups is not None and not (isinstance(groups, str | os.PathLike) and os.path.isfile(groups)
                                       and os.path.dirname(os.path.abspath(groups)) == os.path.abspath(folder)):
            raise PluginError(f"{who} returned {shown(groups, 120)}; it must return None or the "
                              f"path of the comm-group JSON it wrote beside its ET files (prefix + '.json')")
        if not os.path.isfile(f"{prefix}.0.et"):
            raise PluginError(f"{who} wrote no {os.path.basename(prefix)}.0.et; it must "
                              f"write prefix.{{rank}}.et for ranks 0..N-1 (simpy_astra.workloads.chakra.write_et)")
        return None if groups is None else os.fspath(groups)

    run.users = fn  # type: ignore[attr-defined]
    return run


def _users_lookup(name: str, where: str) -> None:
    """Register the generator a ``package.module:function`` name points at (once)."""
    try:
        register(name, import_object(name))
    except (PluginError, TypeError, ValueError) as exc:
        raise InputError(f"{where}.generate: {exc}") from None


def prepare(spec: dict[str, Any], cluster: Any = None, where: str = "workload") -> Prepared:
    """The job a ``{generate: NAME, ...}`` mapping names, parsed once (errors name ``where``)."""
    params = dict(spec)
    name = params.pop("generate", None)
    if isinstance(name, str) and name not in GENERATORS and ":" in name:
        _users_lookup(name, where)
    if not isinstance(name, str) or name not in GENERATORS:
        known = ", ".join(sorted(GENERATORS)) or "none registered"
        loaded = f"; {NOT_LOADED_HINT}" if isinstance(name, str) and name.isidentifier() else ""
        raise InputError(f"{where}.generate: must name a generator, one of {known}, or a function of your "
                         f"own as package.module:function (got {name!r}){loaded}")
    entry = GENERATORS[name]
    if entry.prepare is None:
        return Prepared(name, params, params, where)
    params, job = entry.prepare(params, cluster, where)
    return Prepared(name, params, job, where)


def _lazy(module: str, function: str) -> Callable[..., Any]:
    """A generator that imports its module on first use (keeps scenario loading light)."""

    def run(params: dict[str, Any], *more: Any) -> Any:
        return getattr(importlib.import_module(module), function)(params, *more)

    return run


def _names(module: str, attribute: str) -> Callable[[], tuple[str, ...]]:
    """The parameter names a generator module lists in ``attribute``, imported when asked."""
    return lambda: tuple(getattr(importlib.import_module(module), attribute))


def _typed(module: str, version: str, **kwargs: Any) -> GeneratorEntry:
    """A lazy generator module with a typed job: ``generate``, ``write_summary``,
    ``write_ranks``, ``prepare``, ``layout`` and ``report``."""
    return _module(module, version, summary=_lazy(module, "write_summary"), ranks=_lazy(module, "write_ranks"),
                   prepare=_lazy(module, "prepare"), layout=_lazy(module, "layout"),
                   report=_lazy(module, "report"), **kwargs)


def _module(module: str, version: str, command: bool = True, **kwargs: Any) -> GeneratorEntry:
    """A generator module's entry: ``generate(params, prefix)``, and ``main(argv)`` for
    ``simpy-astra generate`` when ``command``."""
    return GeneratorEntry(_lazy(module, "generate"), version, command=module if command else None, **kwargs)


# name -> generator: the one registry, read by scenarios (``generate: NAME``) and by the
# ``generate`` command; a new generator module adds its line here. Bump a version when its
# traces change (old cache entries are then ignored).
GENERATORS: dict[str, GeneratorEntry] = {
    # 2: send_recv's receive names its stream, p2p
    "microbench": _module("simpy_astra.workloads.microbench", "2",
                          prepare=_lazy("simpy_astra.workloads.microbench", "prepare"), writes_remote_memory=False,
                          layout=_lazy("simpy_astra.workloads.microbench", "layout"),
                          params=_names("simpy_astra.workloads.microbench", "PARAMS")),
    # ASTRA-sim 1.0 layer files: a scenario may name one; its command is ``convert text``
    "text": _module("simpy_astra.workloads.text_workload", "1", command=False),
    # params: the CLI flags with underscores (dp, tp, pp, sp, ep, preset, micro_batch, ...)
    # 4: cache folders hold a rank summary and only the ranks runs needed (3: every rank)
    "transformer": _module("simpy_astra.workloads.transformer.generator", "4",
                           summary=_lazy("simpy_astra.workloads.transformer.generator", "write_summary"),
                           ranks=_lazy("simpy_astra.workloads.transformer.generator", "write_ranks"),
                           layout=_lazy("simpy_astra.workloads.transformer.generator", "layout"),
                           roofline_compute=True, params=_names("simpy_astra.workloads.transformer.config", "PARAM_NAMES")),
    # params: args (pretrain_gpt.py's arguments), gpus, gpu (a scenario's cluster: fills both)
    "megatron": _typed("simpy_astra.workloads.megatron.generator", "15", command_line_args=True,
                       needs_cluster=True, writes_remote_memory=False,
                       params=_names("simpy_astra.workloads.megatron.generator", "PARAMS")),
    # params: the CLI flags with underscores (mnk, parallel, num_npus, array, dataflow, sram, ...);
    # SCALE-Sim compute times for GEMM layers (extra .[gemm])
    "gemm": _module("simpy_astra.workloads.gemm", "1", path_params=("mnk",),
                    cache_params=_lazy("simpy_astra.workloads.gemm", "prepare"), slow=True,
                    layout=_lazy("simpy_astra.workloads.gemm", "layout"),
                    params=_names("simpy_astra.workloads.gemm", "GIVEN_PARAMS")),
}


def resolve_paths(spec: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """``spec`` with its generator's file parameters made absolute from ``base_dir``."""
    name = spec.get("generate")
    entry = GENERATORS.get(name) if isinstance(name, str) else None
    if entry is None:
        return spec
    out = dict(spec)
    for key in entry.path_params:
        value = out.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            out[key] = os.path.normpath(os.path.join(base_dir, value))
    return out
