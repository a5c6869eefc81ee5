"""What a generator of the user's reads besides its parameters, as digests for its cache key:
its code (its module and the user's modules loaded beside it) and the files its parameters
name. Traces cached without them ran on after an edited helper or input file."""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simpy_astra.infra import files
from simpy_astra.infra.registry_names import definition
from simpy_astra.plugins import is_users_file


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
