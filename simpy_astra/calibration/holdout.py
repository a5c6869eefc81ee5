"""Keep fitting and testing apart: which logged sizes a calibration saw, and the errors on the rest.

A prediction is only worth what it scores on rows the fit never saw. ``calibrate`` records
every row it fitted in ``calibration.json`` (per log: its checksum and the line numbers), and
can hold out every N-th size of each log (``--hold-out-every N``); ``validate --holdout
calibration.json`` then marks each simulated row fitted or held out and reports, per log and
role, the geomean |error| from 1 MiB and the worst size, so a figure from the fit is never
read as a prediction.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from simpy_astra.calibration.inputs import read_record
from simpy_astra.calibration.model import MIB
from simpy_astra.calibration.report import gm_abs_error, human_size
from simpy_astra.errors import InputError
from simpy_astra.infra import files


def digest(path: str) -> str:
    """The first 16 hex digits of the file's SHA-256: a log is recognised by content, not name."""
    return files.digest_16(path, "nccl-tests log", files.LOG_LIMIT_BYTES)


def held_out_rows(logs: list, every: int, min_size: int) -> frozenset[tuple[str, int]]:
    """(path, line) of every ``every``-th size of each log from ``min_size`` up, starting with
    the second: with 2, a log of 1, 2, 4, ... MiB fits 1, 4, 16 MiB and predicts 2, 8, 32 MiB,
    so every held-out size lies between fitted ones and the largest decides nothing alone. A log
    with fewer sizes than ``every`` would have none held out, and validate --holdout would score
    fitted rows only: refused."""
    if every == 0:
        return frozenset()
    if every < 2:
        raise InputError(f"--hold-out-every must be 0 (fit every size) or at least 2 (got {every})")
    out = set()
    for log in logs:
        large = [r for r in log.rows if r.size_bytes >= min_size]
        if 0 < len(large) < every:
            fix = (f"use an N from 2 to {len(large)}" if len(large) >= 2 else "lower --min-size")
            raise InputError(f"--hold-out-every {every}: {log.path} has {len(large)} size{'' if len(large) == 1 else 's'} of at least {min_size} "
                             f"bytes, so none would be held out; {fix}")
        out.update((log.path, r.line) for i, r in enumerate(large) if i % every == every - 1)
    return frozenset(out)


def fit_record(logs: list, held_out: frozenset[tuple[str, int]], min_size: int,
               in_place: bool = False) -> list[dict[str, Any]]:
    """Per log, the lines the fit used (``fitted_lines``), what they measured (``fitted_rows``:
    size and time, so a copy of the log edited since is still known by its rows) and the lines
    it was denied."""
    out = []
    for log in logs:
        rows = [r for r in log.rows if r.size_bytes >= min_size and (log.path, r.line) not in held_out]
        denied = [r.line for r in log.rows if (log.path, r.line) in held_out]
        out.append({"path": log.path, "sha256_16": digest(log.path), "fitted_lines": [r.line for r in rows],
                    "fitted_rows": [[r.size_bytes, r.inplace_time_us if in_place else r.time_us] for r in rows],
                    "held_out_lines": denied})
    return out


def load_fitted_lines(path: str, in_place: bool = False) -> dict[str, set[int]]:
    """checksum -> fitted line numbers, from a ``calibration.json`` written by ``calibrate``, of
    a fit on the times validate compares (``in_place``): the rows of an out-of-place fit were
    scored 'fitted' against in-place times they were never fitted to."""
    doc = read_record(path, "--holdout", "calibration record", "calibration.json")
    times, wanted = (doc.get("times") if isinstance(doc, dict) else None), "in-place" if in_place else "out-of-place"
    if times in ("in-place", "out-of-place") and times != wanted:
        fix = "drop --in-place" if in_place else "add --in-place"
        raise InputError(f"{path}: --holdout: its fit is of the {times} times and validate compares the {wanted} "
                         f"ones, so its fitted rows would be scored on times they were not fitted to; {fix} (or "
                         f"calibrate on the {wanted} times)")
    if times is not None and times not in ("in-place", "out-of-place"):  # was taken for either
        raise InputError.at(path, "times", f"expected 'in-place' or 'out-of-place', as calibrate writes it "
                                           f"(got {times!r}); was the record edited? calibrate again")
    logs = doc.get("logs") if isinstance(doc, dict) else None
    if not isinstance(logs, list) or not all(isinstance(x, dict) and "sha256_16" in x for x in logs):
        raise InputError.at(path, "logs", "expected calibrate's list of fitted logs (write it with "
                                          "simpy-astra calibrate)")
    out = FittedLines()
    for i, entry in enumerate(logs):
        lines, sha = entry.get("fitted_lines"), entry["sha256_16"]
        if not isinstance(lines, list):
            raise InputError.at(path, "fitted_lines", "missing: this calibration.json predates held-out "
                                                      "records; calibrate again")
        # int() took '37.9' apart as 37 and True as line 1, and 'abc' or a list was an internal error
        if not isinstance(sha, str) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
                                               for x in lines):
            raise InputError.at(path, f"logs[{i}]", "expected the log's checksum (sha256_16, a string) and its "
                                                    "fitted_lines (line numbers >= 1) as calibrate writes them; "
                                                    "was the record edited? calibrate again")
        out.setdefault(sha, set()).update(lines)
        out.measured |= _fitted_rows(entry, path, i)
        if isinstance(entry.get("path"), str):
            out.paths[os.path.realpath(entry["path"])] = sha
    values = doc.get("fitted")
    if isinstance(values, dict):
        out.network = {key: values[key] for key in ("bandwidth", "latency") if isinstance(values.get(key), list)}
    out.source = path
    return out


def _fitted_rows(entry: dict, path: str, i: int) -> set[tuple]:
    """(collective, GPUs, size, time) of each row a log's entry says the fit used (none in a
    record from before ``fitted_rows``)."""
    rows = entry.get("fitted_rows", [])
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(x, int | float) and not isinstance(x, bool)
                                                        for x in r) for r in rows):
        raise InputError.at(path, f"logs[{i}].fitted_rows", "expected [size, time] of each fitted row, as "
                                                            "calibrate writes them; was the record edited? "
                                                            "calibrate again")
    return {(entry.get("collective"), entry.get("gpus"), size, time) for size, time in rows}


class FittedLines(dict[str, set[int]]):
    """checksum -> fitted line numbers, ``measured``: what each fitted row measured (a log
    edited since, its lines moved or a row changed, keeps the rows it shares with the fit),
    and ``paths``: the checksum of each log the record names, by its real path (to tell a
    log that changed since it was fitted)."""

    def __init__(self) -> None:
        super().__init__()
        self.measured: set[tuple] = set()
        self.paths: dict[str, str] = {}
        self.network: dict[str, list] = {}  # the fitted network's bandwidth and latency lists
        self.source = ""  # the record's path


def other_network(network: dict[str, Any], network_path: str, fitted: FittedLines) -> list[str]:
    """A warning when ``network`` is not the one the record's fit wrote (another fit's
    network.yml, or one edited since): its 'fitted' rows were fitted to other values, so the
    split into fitted and held-out sizes scores nothing of this network."""
    for key, then in fitted.network.items():
        now = network.get(key)
        if not isinstance(now, list) or len(now) != len(then) or not all(
                isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, rel_tol=1e-6)
                for a, b in zip(now, then, strict=True)):
            return [f"{network_path}: {key} is {now}, but {fitted.source} fitted {then}: its 'fitted' rows were "
                    f"fitted to another network; give the network.yml calibrate wrote beside it, or drop --holdout"]
    return []


def changed_logs(logs: list, fitted: FittedLines) -> list[str]:
    """A warning per log the calibration fitted at this path with other contents: a row edited
    since counts as held out (and, in a record without ``fitted_rows``, every row, the fit's
    scored as predictions) without a word."""
    out = []
    for log in logs:
        then = fitted.paths.get(os.path.realpath(log.path))
        if then is not None and (now := digest(log.path)) != then and now not in fitted:
            counted = ("its rows are known by the size and time the fit used, and a row edited since counts as "
                       "held out" if fitted.measured else "every size counts as held out, those it fitted too")
            out.append(f"{log.path}: changed since the calibration fitted it (checksum {then}, now {now}), so "
                       f"{counted}; validate the log it fitted, or calibrate again")
    return out


def mark(results: list, logs: list, fitted: FittedLines) -> None:
    """Set each point's ``held_out``: True unless the calibration fitted that row, at that line
    of that log or with its measurement (a copy of the log cleaned of its chatter since, whose
    every row counted as held out: the fit's rows scored as predictions)."""
    for res, log in zip(results, logs, strict=True):
        lines = fitted.get(digest(log.path), set())
        for p in res.points:
            p.held_out = p.line not in lines and (res.collective, res.ranks, p.size_bytes,
                                                  p.measured_us) not in fitted.measured


@dataclass
class HoldoutRow:
    """One log's points of one role: how well they are matched, and where worst."""

    log: str
    collective: str
    ranks: int
    role: str  # "fitted" or "held out"
    points: int  # sizes >= min_size with a simulated time
    geomean: float  # of |error|, floored like validate's (report.gm_abs_error)
    worst_size: int
    worst_error: float  # signed

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def holdout_rows(results: list, min_size: int = MIB) -> list[HoldoutRow]:
    out = []
    for r in results:
        for role, flag in (("fitted", False), ("held out", True)):
            pts = [p for p in r.points if p.held_out is flag and p.error is not None and p.size_bytes >= min_size]
            if not pts:
                continue
            worst = max(pts, key=lambda p: abs(p.error))
            out.append(HoldoutRow(r.path, r.collective, r.ranks, role, len(pts),
                                  gm_abs_error([p.error for p in pts]), worst.size_bytes, worst.error))
    return out


def holdout_lines(rows: list[HoldoutRow]) -> list[str]:
    """One line per log and role, held-out ones first within a log; a log the calibration
    fitted at every size says so (its held-out line would be missing without a word)."""
    lines = []
    held = {h.log for h in rows if h.role == "held out"}
    for h in sorted(rows, key=lambda h: (h.log, h.role != "held out")):
        # the log's folder and name ('hgx-h100-2node-ib/all_reduce.log'); a log in the working
        # folder has none ('/cleaned.log' read as a file at the root)
        name = os.path.join(os.path.basename(os.path.dirname(h.log)), os.path.basename(h.log))
        if h.role == "fitted" and h.log not in held:
            lines.append(f"HELD OUT {name}: none, the calibration fitted every size >= 1 MiB (calibrate with "
                         f"--hold-out-every N to hold some out)")
        lines.append(f"{'HELD OUT' if h.role == 'held out' else 'fitted  '} {name}: {h.collective} on {h.ranks} "
                     f"GPUs, {h.points} sizes >= 1 MiB: geomean error {100 * h.geomean:.1f}%, worst "
                     f"{human_size(h.worst_size)} ({100 * h.worst_error:+.1f}%)")
    return lines


def report_holdout(results: list, logs: list, fitted: FittedLines) -> list[HoldoutRow]:
    """``validate --holdout``: mark the points from the calibration record's fitted lines
    (:func:`load_fitted_lines`, read before the simulations), then score each role."""
    mark(results, logs, fitted)
    return holdout_rows(results)
