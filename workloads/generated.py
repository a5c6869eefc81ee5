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
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simpy_astra.errors import AboutFile, InputError, Param, Parts, spelt
from simpy_astra.infra import files
from simpy_astra.plugins import (
    NOT_LOADED_HINT,
    PluginError,
    import_object,
    origin,
    user_code_problem,
)
from simpy_astra.workloads.chakra.node import EtError
from simpy_astra.workloads.chakra.reader import SUMMARY_SUFFIX
from simpy_astra.workloads.generator_inputs import named_files_digest, source_digest
from simpy_astra.workloads.trace_output import OUTPUT


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
        has its errors worded in the scenario's fields, as :func:`materialise` words them."""
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
    if not isinstance(name, str) or not name:
        raise ValueError(f"a generator's name must be a non-empty string (got {name!r})")
    if not callable(fn):
        raise TypeError(f"generator '{name}': {fn!r} is not a function fn(params, prefix)")
    taken = GENERATORS.get(name)
    theirs = getattr(taken.fn, "users", None) if taken is not None else None
    if taken is not None and (theirs is None or origin(theirs) != origin(fn)):
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
    its parameters name: an edited helper module or data file must not run the old traces."""
    return f"{origin(fn)} {source_digest(fn)} {named_files_digest(params)}"


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
            raise PluginError(f"{who} returned {groups!r}; it must return None or the "
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


class NotGenerated(Exception):
    """A check of the inputs alone (``sweep --list``) met a slow generator whose traces are
    not cached: the check stops there rather than generate them."""


@dataclass(frozen=True)
class GeneratedWorkload:
    prefix: str  # ET prefix: PREFIX.{npu}.et
    comm_groups: str | None  # comm-group JSON path, if the generator wrote one


def cache_root() -> str:
    return os.environ.get("SIMPY_ASTRA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                               "simpy-astra")


def folder_digest(root: Path) -> str:
    """A hash of every ``.py`` file under ``root``, by relative path and content."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def code_digest() -> str:
    """The generators' code (this package, about 3 ms to read once a process): a trace cached
    by one version of the code is never read by another, even where a change to it forgot
    its generator's version bump."""
    return folder_digest(Path(__file__).resolve().parent)


def cache_entry_name(path: str) -> str | None:
    """``generate NAME`` when ``path`` is a file of a generated workload's cached traces (a
    message names the workload as the scenario wrote it, not the cache's file), else None."""
    folder = os.path.dirname(os.path.realpath(path))
    if os.path.dirname(folder) != os.path.realpath(os.path.join(cache_root(), "workloads")):
        return None
    return "generate " + os.path.basename(folder).rsplit("-", 1)[0]


#: what mends a file a user's generator wrote that does not read
USERS_FIX = "fix the generator (its traces are made anew once it is edited)"


def corrupt_entry_fix(prefix: str) -> str:
    """What mends a file of our generators' cached traces at ``prefix`` that does not read."""
    return f"; it is a corrupt workload cache entry: delete {os.path.dirname(prefix)} to generate it again"


def in_cache_entry(exc: Exception, prefix: str) -> Exception:
    """``exc`` (about a file of the traces at ``prefix``: an input or ET error, one line),
    saying how to mend a cache entry when the traces are the workload cache's."""
    folder = os.path.dirname(os.path.realpath(prefix))
    if os.path.dirname(folder) != os.path.realpath(os.path.join(cache_root(), "workloads")):
        return exc
    text = f"{exc}{corrupt_entry_fix(prefix)}"
    named = InputError(text) if isinstance(exc, InputError) else type(exc)(text)
    return named.keeping_parts(exc) if isinstance(named, AboutFile) and isinstance(exc, AboutFile) else named


def as_scenarios_error(exc: Exception, prefix: str, prepared: Prepared | None) -> Exception:
    """``exc``, about a file of the generated traces at ``prefix`` (one of the cache's), as the
    scenario names the workload (``s.yaml: workload.generate``): a user's generator wrote that
    file, so the fix is in the generator (deleting the entry would write it again; an edited
    generator's traces are cached apart). Ours are left as they are: a file of theirs that does
    not read is a corrupt cache entry, and their words say which to delete."""
    folder = os.path.dirname(prefix)
    if prepared is None or not isinstance(exc, InputError | EtError) or exc.file is None or exc.problem is None:
        return exc
    if not exc.file.startswith(folder + os.sep) or not prepared.entry.by_user:  # ours: a corrupt entry, to delete
        return exc
    words = (f"{prepared.where}.generate: generator '{prepared.generator}' wrote {os.path.basename(exc.file)}, "
             f"which cannot run ({exc.problem}); {USERS_FIX}")
    return InputError(words) if isinstance(exc, InputError) else EtError(words)


def _unwritable_cache(folder: str, problem: str) -> InputError:
    """The workload cache's folder (holding ``folder``) could not take the traces: its fix."""
    line = f"workload cache {files.show(os.path.dirname(folder))}: {problem}; set SIMPY_ASTRA_CACHE to a folder you " \
           "can write, with space for the traces"
    return InputError(line).with_parts(line)


def cache_key(name: str, version: str, params: dict[str, Any]) -> str:
    text = json.dumps({"generator": name, "version": version, "code": code_digest(), "params": params},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def materialise(spec: dict[str, Any] | Prepared, where: str = "workload", lazy: bool = False,
                checking: bool = False) -> GeneratedWorkload:
    """Generate (or find in the cache) the workload a ``{generate: NAME, ...}`` mapping names
    (or its job, :func:`prepare` d already).

    ``lazy``: for a generator that writes single ranks, write only the comm groups and the
    rank summary now; a run writes the ranks it needs (:class:`LazyTraces`). ``checking``: only
    the inputs are being checked; a slow generator's traces not in the cache raise
    :class:`NotGenerated` instead of being generated."""
    try:
        prepared = spec if isinstance(spec, Prepared) else prepare(spec, None, where)
        return _materialise(prepared, where, lazy, checking)
    except InputError as exc:  # reworded, of the same class (a sweep tells invalid jobs apart)
        raise exc.reworded(as_fields(exc, where)) from None
    except PluginError as exc:  # a user generator's own error: where it was named, then its words
        raise PluginError(f"{where}.generate: {exc}", exc.original) from None
    except (TypeError, ValueError, OverflowError) as exc:  # a parameter of a type no check foresaw
        name = spec.generator if isinstance(spec, Prepared) else spec.get("generate")
        raise InputError(f"{where}: generate {name}: invalid parameters ({type(exc).__name__}: {exc})") from None


def as_fields(error: InputError, where: str) -> str:
    """A generator's error (worded for ``simpy-astra generate``'s flags) in a scenario's terms:
    ``--size: must be ...`` -> ``scenario.yaml: workload.size: must be ...``, so the user is
    not sent to a flag they never gave. An error that keeps its parts (:attr:`InputError.parts`)
    is spelt from them; a line written whole is never taken apart (a value may read as a flag):
    as written when it names its place (a file's error, or the scenario's), else after ``where``."""
    scenario, _, key = where.rpartition(": ")
    if not key.isidentifier():  # ``where`` is a file (a text workload's), not a scenario field
        return error.message
    if error.parts is not None:
        return in_fields(error.parts, where)
    named = error.message.startswith(f"{scenario}: " if scenario else key)
    return error.message if error.file is not None or named else f"{where}: {error.message}"


def in_fields(parts: Parts, where: str) -> str:
    """``parts`` as a line of the scenario's workload mapping at ``where`` (``s.yaml: workload``):
    a parameter first is the line's field (``s.yaml: workload.size: ...``), text first is about
    the whole mapping (``s.yaml: workload: ...``); each parameter is spelt as its field."""
    key = where.rpartition(": ")[2]
    first, *rest = parts
    if not key.isidentifier():  # a file's, not a scenario's: the command line's spelling
        return spelt(parts, lambda p: p.flag)
    head = f"{where}.{first.name}" if isinstance(first, Param) else f"{where}: {first}"
    return head + spelt(tuple(rest), lambda p: f"{key}.{p.name}")


def file_name(name: str) -> str:
    """A generator's name as a file name (``pkg.mod:fn`` -> ``pkg.mod_fn``; ours unchanged)."""
    return re.sub(r"[^\w.-]", "_", name)


def _generate_into(name: str, entry: GeneratorEntry, params: dict[str, Any], job: Any, folder: str) -> None:
    """Run the generator into a temporary folder beside ``folder``, renamed into place when
    complete (a killed run leaves no half entry)."""
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{file_name(name)}-", dir=os.path.dirname(folder))
    try:
        fn = entry.summary if entry.summary is not None and entry.ranks is not None else entry.fn
        groups = fn(job, os.path.join(tmp, file_name(name)))
        with open(os.path.join(tmp, "done.json"), "w") as f:  # ranks: to tell an entry that lost a file
            json.dump({"generator": name, "params": params, "comm_groups": os.path.basename(groups) if groups
                       else None, "ranks": generated_ranks(os.path.join(tmp, file_name(name)))}, f)
        try:
            os.rename(tmp, folder)
        except OSError:  # another worker finished the same trace first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _materialise(prepared: Prepared, where: str, lazy: bool, checking: bool = False) -> GeneratedWorkload:
    name, entry, params, job = prepared.generator, prepared.entry, prepared.params, prepared.job
    if entry.cache_params is not None:
        params = entry.cache_params(params, where)
        if entry.prepare is None:
            job = params
    folder = os.path.join(cache_root(), "workloads", f"{file_name(name)}-{cache_key(name, entry.version, params)}")
    done = os.path.join(folder, "done.json")
    if not os.path.exists(done) and checking and entry.slow:
        raise NotGenerated(name)
    if not os.path.exists(done):
        try:
            _generate_into(name, entry, params, job, folder)
        except OSError as exc:  # the cache's disk or folder, not the user's workload
            raise _unwritable_cache(folder, f"cannot write ({files.os_problem(exc)})") from None
        except InputError as exc:  # our generator's --output, here the cache's folder
            if not exc.parts or exc.parts[0] != OUTPUT:
                raise
            raise _unwritable_cache(folder, spelt(exc.parts[1:], lambda p: p.flag).removeprefix(": ")) from None
    try:
        doc = json.loads(files.read_text(done, "workload cache entry"))
        groups_name, written = doc["comm_groups"], doc.get("ranks")  # an entry from before has no ranks
        if groups_name is not None and not isinstance(groups_name, str):
            raise ValueError(f"comm_groups is {groups_name!r}")
    except (InputError, OSError, ValueError, KeyError, TypeError) as exc:  # edited, truncated, or a disk fault
        raise InputError.in_file(done, f"comm_groups: corrupt workload cache entry ({type(exc).__name__}: "
                                       f"{exc}); delete {folder} to generate it again") from None
    prefix = os.path.join(folder, file_name(name))
    if isinstance(written, int) and (found := generated_ranks(prefix)) != written:  # not the scenario's fault
        raise InputError(f"{folder}: corrupt workload cache entry: its generator wrote {written} ranks' "
                         f"traces and {found} are there now; delete {folder} to generate it again")
    if not lazy:
        source = lazy_traces(prefix, prepared)
        if source is not None:
            source.ensure(range(source.npus))
    return GeneratedWorkload(
        prefix=prefix,
        comm_groups=os.path.join(folder, groups_name) if groups_name else None,
    )



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
