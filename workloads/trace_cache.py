"""The workload cache: generated traces on disk, in a folder named by a hash of the generator,
its version, the generators' code and the parameters, so a sweep generates each trace once;
workers racing on a trace build it privately, the first rename wins."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpy_astra.errors import InputError, spelt
from simpy_astra.infra import files
from simpy_astra.plugins import PluginError
from simpy_astra.workloads.generator_registry import GeneratorEntry, Prepared, prepare
from simpy_astra.workloads.generator_words import as_fields
from simpy_astra.workloads.rank_summary import generated_ranks, lazy_traces
from simpy_astra.workloads.trace_output import OUTPUT


class NotGenerated(Exception):
    """A check of the inputs alone (``sweep --list``) met a slow generator whose traces are
    not cached: the check stops there rather than generate them."""


@dataclass(frozen=True)
class GeneratedWorkload:
    prefix: str  # ET prefix: PREFIX.{npu}.et
    comm_groups: str | None  # comm-group JSON path, if the generator wrote one


def cache_root() -> str:
    """``$SIMPY_ASTRA_CACHE``, a leading ``~`` read as the home folder as a shell would (a value
    quoted in a script or an env file keeps it, and made a folder named ``~`` in the working
    one), else ``~/.cache/simpy-astra``. A value with spaces around it (``export
    SIMPY_ASTRA_CACHE=" "``, a line of an env file) is refused: it made a folder named by
    the spaces in the working one, in silence."""
    value = os.environ.get("SIMPY_ASTRA_CACHE") or ""
    if value != value.strip():
        raise InputError(f"SIMPY_ASTRA_CACHE: {value!r} starts or ends with a space, so the cache would be a "
                         f"folder named with it; remove the spaces, or unset it for ~/.cache/simpy-astra")
    return os.path.expanduser(value or os.path.join("~", ".cache", "simpy-astra"))


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
