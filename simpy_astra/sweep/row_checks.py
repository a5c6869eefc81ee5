"""What a results.csv read back must be: a header this sweep writes (or an earlier version's),
rows whose fields, statuses, figures and digests are the sweep's own, and coordinates that are
their keys'. A file that fails is refused with its line named, never rewritten."""

from __future__ import annotations

from simpy_astra.errors import InputError
from simpy_astra.sweep.result_names import RESULT_NAMES
from simpy_astra.sweep.result_row import (
    DIGEST_COLUMN,
    FLAG_NAMES,
    OPTIONAL_COLUMNS,
    REQUIRED_OK,
    STATUSES,
    coordinate_cell,
    parse_figure,
    row_digest,
)


def grown(columns: list[str], ours: list[str]) -> bool:
    """Columns of a folder from before a result column was added (``ours``: this sweep's): it
    resumes (its rows leave the new column empty). The order must be ours too: a header with two
    columns swapped would otherwise relabel every row's values (ranking best.json by the wrong
    figure)."""
    return set(columns) <= set(ours) and set(ours) - set(columns) <= OPTIONAL_COLUMNS \
        and columns == [c for c in ours if c in set(columns)]


def misplaced(header: list[str], ours: list[str]) -> str:
    """What is wrong with ``header`` (``ours``: this sweep's columns), named by column: the
    first one this sweep does not write (matched against the others, a renamed column blamed
    the next), else the first one out of place."""
    from simpy_astra.infra.files import show

    for i, got in enumerate(header):
        if got not in ours:
            return f"column {i + 1} is '{show(got)}', not one this sweep writes"
    expected = [c for c in ours if c in set(header)]
    for i, (got, want) in enumerate(zip(header, expected, strict=False)):
        if got != want:
            return f"column {i + 1} is '{got}' where this sweep writes '{want}'"
    missing = [c for c in ours if c not in set(header) and c not in OPTIONAL_COLUMNS]
    return f"column '{missing[0]}' is missing" if missing else "the columns differ"


def row_problem(values: list[str], columns: list[str]) -> str | None:
    """What is wrong with a row's ``values`` under ``columns`` (one line), or None."""
    if len(values) != len(columns):
        return f"has {len(values)} fields, the header {len(columns)}"
    row = dict(zip(columns, values, strict=True))
    if not row["key"]:
        return "key: is empty"
    if row.get("status") not in STATUSES:
        return f"status: must be one of {', '.join(STATUSES)} (got {row.get('status')!r})"
    for name in RESULT_NAMES:
        try:
            value = parse_figure(row.get(name, ""))
        except ValueError:
            return f"{name}: must be a finite number or empty (got {row[name]!r})"
        # no time, memory, rate or count is below 0 (an edited -5 was crowned best); ASTRA-sim's
        # exposed communication is finish minus compute, left as the run gave it
        if value is not None and value < 0 and name != "exposed_comm_ns":
            return f"{name}: must be a number >= 0 or empty (got {row[name]!r})"
        # a run writes 1 or 0; any other number read as "fits" (best.py), 2 crowned best
        if name in FLAG_NAMES and value not in (None, 0, 1):
            return f"{name}: must be 1 (yes), 0 (no) or empty (got {row[name]!r})"
    if row["status"] == "ok":
        missing = [n for n in REQUIRED_OK if n in row and row[n] == ""]
        if missing:
            return f"{missing[0]}: is empty in a point marked ok"
    return None


def check_digests(csv_path: str, lines: dict[str, int], rows: dict[str, dict[str, str]]) -> None:
    """Each row's values are the ones the sweep wrote (its digest), so a figure edited by hand is
    refused rather than ranked as a run's. Checked after :func:`row_problem` and
    :func:`check_coordinates`, whose messages name what was edited where they can."""
    for key, row in rows.items():
        if row.get(DIGEST_COLUMN) and row[DIGEST_COLUMN] != row_digest(row):
            raise InputError(f"{csv_path}: line {lines[key]}: was changed after the sweep wrote it ({DIGEST_COLUMN} "
                             f"does not match its values: a figure edited, or a spreadsheet's rewriting of its "
                             f"numbers); fix or delete that line (its point then runs again); the file is left as it is")


def check_coordinates(csv_path: str, lines: dict[str, int], rows: dict[str, dict[str, str]], points) -> None:
    """Each row's coordinates are its key's: an edited value (dp 8 made 4) would give the key's
    figures to coordinates that were never run, in the summary and the plots. ``lines``: each
    row's line in ``csv_path``."""
    # a row under a key no point has, with a point's coordinates: its key was edited (or
    # made another way); it stayed beside the point's own row, two rows of one point
    by_coordinates = {tuple(coordinate_cell(v) for v in p.coordinates.values()): p for p in points}
    columns, keys = (list(points[0].coordinates) if points else []), {p.key for p in points}
    for key, row in rows.items():
        twin = None if key in keys else by_coordinates.get(tuple(row.get(c) for c in columns))
        if twin is not None:
            raise InputError(f"{csv_path}: line {lines[key]}: key: {key!r} is not the key of its "
                             f"coordinates ({twin.key}); fix or delete that line (its point then runs "
                             f"again); the file is left as it is")
    for p in points:
        row = rows.get(p.key)
        for column, value in p.coordinates.items() if row is not None else ():
            if column in row and row[column] != coordinate_cell(value):
                raise InputError(f"{csv_path}: line {lines[p.key]}: {column}: {row[column]!r} is not "
                                 f"the value of its key {p.key} ({coordinate_cell(value)}); fix or delete that line "
                                 f"(its point then runs again); the file is left as it is")
