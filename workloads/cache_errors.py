"""What mends a file of the workload cache that does not read: a user's generator wrote it (the
generator is to fix), or it is a corrupt entry of ours (to delete); and how a message names
such a file (as the scenario wrote the workload, not as the cache's path)."""

from __future__ import annotations

import os

from simpy_astra.errors import AboutFile, InputError
from simpy_astra.workloads.chakra.node import EtError
from simpy_astra.workloads.generator_registry import Prepared
from simpy_astra.workloads.trace_cache import cache_root


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
