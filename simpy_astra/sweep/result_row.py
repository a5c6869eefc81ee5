"""A results.csv row: its columns, its values as the sweep writes them, its digest, and its
figures read back as numbers."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from simpy_astra.sweep.result_names import RESULT_NAMES

STATUS_COLUMNS = ("status", "error")
#: the warnings a point's run gave, joined with " | " (a folder from before it had no such column)
WARNINGS_COLUMN = "warnings"
#: the digest of the inputs a row was made from (a folder from before it had no such column)
INPUTS_COLUMN = "inputs_sha256"
#: a point that runs another's step: that point's key, whose row holds the run's figures
SAME_COLUMN = "same_run_as"
#: a digest of the row's other values as the sweep wrote them (:func:`row_digest`): a figure
#: edited by hand is refused, not ranked as a run's (a row from before it has none)
DIGEST_COLUMN = "row_sha256"
OPTIONAL_COLUMNS = {*RESULT_NAMES, WARNINGS_COLUMN, INPUTS_COLUMN, SAME_COLUMN, DIGEST_COLUMN}
#: invalid: a point Megatron refuses (validity.py); same: a point that runs another's step
STATUSES = ("ok", "error", "invalid", "same")
#: figures that are yes (1) or no (0): ``fits``, whether a Megatron job's memory fits its GPU
FLAG_NAMES = ("fits",)
# the figure a finished point always has (what the plots and the default objective need)
REQUIRED_OK = ("finish_ns",)


#: a null coordinate's cell: as the sweep file, the summary and every point's label write it (an
#: empty cell is a figure a point has not). A folder an earlier version wrote, with an empty
#: cell there, is refused as another simulator's (:func:`~simpy_astra.sweep.manifest.check_simulator`)
NULL_CELL = "null"


def coordinate_cell(value: Any) -> str:
    """A point's coordinate as results.csv keeps it: null as :data:`NULL_CELL`, else :func:`csv_value`."""
    return NULL_CELL if value is None else csv_value(value)


def csv_value(value: Any) -> str:
    """A cell: empty for None (a figure a point has not); true and false as the sweep file,
    the labels and the summary write them (they were Python's True and False)."""
    if value is None:
        return ""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value)


#: what a row's digest leaves out: itself, and the host's time (two runs of a sweep give the
#: same file but for ``wall_s``; its digest would make them differ in two columns)
_UNDIGESTED = (DIGEST_COLUMN, "wall_s")


def row_digest(row: dict[str, str]) -> str:
    """The digest of a row's values as the sweep wrote them (:data:`_UNDIGESTED` aside); empty
    values are left out, so a column a later version adds leaves an earlier row's digest as it was."""
    written = {column: value for column, value in row.items() if column not in _UNDIGESTED and value}
    return hashlib.sha256(json.dumps(written, sort_keys=True).encode()).hexdigest()


def parse_figure(text: str) -> int | float | None:
    """A results.csv figure: empty -> None, else an int or a finite float (ValueError otherwise)."""
    if text == "":
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def figures_of(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row's figures as numbers (None where empty)."""
    out: dict[str, Any] = {}
    for name in RESULT_NAMES:
        text = row.get(name, "")
        out[name] = parse_figure(text)
    out["status"], out["error"] = row.get("status", ""), row.get("error", "")
    out[WARNINGS_COLUMN] = row.get(WARNINGS_COLUMN, "")
    return out
