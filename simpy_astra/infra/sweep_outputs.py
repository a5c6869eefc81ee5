"""A file of a sweep's results folder (results.csv, sweep.json, best.json) given to ``run`` or
``sweep`` as its input: said to be what it is, with the command that uses it, not as its
every key being no scenario field. Recognised by its neighbour sweep.json or its own keys
(a copy outside the folder), so config and sweep readers share it without importing a sweep."""

from __future__ import annotations

import os
import shlex
from typing import Any

from simpy_astra.errors import InputError


def _folder(path: str) -> str:
    return os.path.dirname(path) or "."


def _arg(path: Any) -> str:
    """``path`` as a shell word (a folder with a space is one argument)."""
    return shlex.quote(str(path))


def refuse_sweep_output(path: str, doc: Any, wanted: str) -> None:
    """Raise if ``path`` (read as ``doc``) is one of a sweep's outputs; ``wanted``: "scenario" or
    "sweep", what the command reads."""
    folder = _folder(path)
    if isinstance(doc, dict) and {"sweep", "fingerprint", "simulator"} <= set(doc):
        raise InputError(f"{path}: is the record a sweep keeps in its --out folder, not a {wanted}; resume "
                         f"that sweep with: simpy-astra sweep {_arg(doc['sweep'])} --out {_arg(folder)}")
    if isinstance(doc, dict) and {"sweep", "minimise", "best"} <= set(doc):
        best = doc["best"].get("key") if isinstance(doc["best"], dict) else None
        point = os.path.join(folder, "points", f"{best}.yaml")
        then = (f"run its best point with: simpy-astra run {_arg(point)}" if best and os.path.isfile(point)
                else "it names its best point's key; points/KEY.yaml beside it is that point's scenario")
        raise InputError(f"{path}: is a sweep's answer (best.json), not a {wanted}; {then}")
    if os.path.basename(path) == "results.csv" and os.path.isfile(os.path.join(folder, "sweep.json")):
        raise InputError(f"{path}: is a sweep's results table, not a {wanted}; each row's scenario is "
                         f"{os.path.join(folder, 'points', 'KEY.yaml')} (KEY: the row's key)")
