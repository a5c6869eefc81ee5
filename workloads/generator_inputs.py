"""What a generator of the user's reads besides its parameters, as digests for its cache key:
its code (its module and the user's modules loaded beside it) and the files its parameters
name. Traces cached without them ran on after an edited helper or input file."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simpy_astra.infra import files
from simpy_astra.infra.registry_names import definition
from simpy_astra.plugins import is_users_file, shown


def source_digest(fn: Callable[..., Any]) -> str:
    """A digest of the file that defines ``fn`` and of every module of the user's loaded from
    its folder tree (the package it sits in, a ``shapes.py`` beside it that it imports): ""
    when it has no file."""
    try:
        path = inspect.getsourcefile(definition(fn))  # an object's or a partial's function too
    except TypeError:
        path = None
    if not path or not os.path.isfile(path):
        return ""
    root = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(root, "__init__.py")):  # the folder its top package sits in
        root = os.path.dirname(root)
    sources = {os.path.abspath(path)}
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if isinstance(source, str) and source.endswith(".py") and os.path.abspath(source).startswith(root + os.sep) \
                and is_users_file(source) and os.path.isfile(source):
            sources.add(os.path.abspath(source))
    digest = hashlib.sha256()
    for source in sorted(sources):
        digest.update(os.path.relpath(source, root).encode() + b"\0" + Path(source).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def named_files_digest(params: Any) -> str:
    """A digest of the contents of every regular file a string among ``params`` names (as the
    generator opens it, from the working directory): a generator reads its inputs itself."""
    named = {value for value in files.path_like_strings(params) if os.path.isfile(value)}
    digest = hashlib.sha256()
    for path in sorted(named):
        st = os.stat(path)  # a file past the trace bound (a data set) by its size and time, not read whole
        said = files.digest_16(path, "input file", files.TRACE_LIMIT_BYTES) if st.st_size <= files.TRACE_LIMIT_BYTES \
            else f"{st.st_size}:{st.st_mtime_ns}"
        digest.update(path.encode() + b"\0" + said.encode())
    return digest.hexdigest()[:16] if named else ""


def held_digest(fn: Callable[..., Any]) -> str:
    """A digest of what a generator that is an object holds (a callable instance, a partial, a
    bound method's object): "" for a function. Its repr alone, its address cut, names only the
    class of an object whose class writes no repr of its own: two objects of one class, or one
    changed from Python, had one key and ran the first one's traces."""
    if inspect.isroutine(fn) and not inspect.ismethod(fn):
        return ""
    return hashlib.sha256(_held(fn, 0).encode()).hexdigest()[:16]


def _held(value: Any, depth: int) -> str:
    """``value`` as text that shows its state: a random generator by its state, an object of a
    default repr (or a dataclass, or a class of the user's, whose repr need not show all it
    holds) by its attributes, an array (numpy's, or any with ``dtype``, ``shape`` and
    ``tolist``) and a pandas table by their contents, a partial by what it binds, a bound
    method by its object, containers by their items."""
    if depth > 6:  # deeper state is read by its repr alone
        return shown(value)
    inner = functools.partial(_held, depth=depth + 1)
    if isinstance(value, functools.partial):
        keywords = {k: inner(v) for k, v in value.keywords.items()}
        return f"partial({inner(value.func)}, {[inner(a) for a in value.args]}, {keywords})"
    if inspect.ismethod(value):
        return f"{shown(value.__func__)} of {inner(value.__self__)}"
    if isinstance(value, list | tuple | set | frozenset):
        items = [inner(v) for v in value]
        return f"{type(value).__name__}({sorted(items) if isinstance(value, set | frozenset) else items})"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{inner(k)}: {inner(v)}' for k, v in value.items())}}}"
    state = _random_state(value)
    if state is not None:  # a random generator's repr names its kind alone, not its seed
        return f"{type(value).__name__}({inner(state)})"
    if all(hasattr(value, name) for name in ("to_numpy", "shape", "index")) and not isinstance(value, type):
        # a pandas table or series: its repr is a summary past 60 rows; its labels and contents
        labels = [inner(getattr(value, name).to_numpy()) for name in ("columns", "index") if hasattr(value, name)]
        return f"{type(value).__name__}({inner(value.to_numpy())}, {labels})"
    if all(hasattr(value, name) for name in ("dtype", "shape", "tolist")) and not isinstance(value, type):
        # an array (numpy's; a tensor without tobytes by its items): its repr is a summary past
        # 1,000 items, so its contents are read (an array of objects by its items: their bytes are
        # addresses)
        held = hashlib.sha256(value.tobytes()).hexdigest() if hasattr(value, "tobytes") and value.dtype != object \
            else inner(value.tolist())
        return f"{type(value).__name__}({value.dtype}, {value.shape}, {held})"
    if (type(value).__repr__ is object.__repr__ or dataclasses.is_dataclass(value) or _users_class(type(value))) \
            and not isinstance(value, type):
        # (a dataclass's repr holds its fields' reprs: an array's summary among them)
        state = dict(getattr(value, "__dict__", {}))
        state.update({n: getattr(value, n) for n in _slots(type(value)) if hasattr(value, n)})
        return f"{shown(value)}({', '.join(f'{k}={inner(v)}' for k, v in sorted(state.items()))})"
    return shown(value)


def _random_state(value: Any) -> Any:
    """The state of a random generator (Python's ``random.Random``, numpy's ``Generator`` or
    ``RandomState``), else None: two seeded alike draw alike, two seeded apart do not."""
    if isinstance(value, type):
        return None
    if isinstance(value, random.Random):
        return value.getstate()
    if hasattr(value, "bit_generator"):  # numpy's Generator
        return value.bit_generator.state
    if all(hasattr(value, name) for name in ("get_state", "randint", "seed")):  # numpy's RandomState
        return value.get_state()
    return None


def _users_class(cls: type) -> bool:
    """``cls`` is the user's own (its module a file of theirs, or their ``__main__``): its repr,
    written by them, may leave out what its objects hold."""
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return cls.__module__ == "__main__" or isinstance(source, str) and is_users_file(source)


def _slots(cls: type) -> list[str]:
    """The ``__slots__`` names of ``cls`` and its bases."""
    return [n for c in cls.__mro__ for n in ([c.__slots__] if isinstance(getattr(c, "__slots__", ()), str)
                                             else getattr(c, "__slots__", ())) if n not in ("__dict__", "__weakref__")]
