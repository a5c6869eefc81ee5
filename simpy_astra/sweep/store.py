"""The sweep's output folder: results.csv appended point by point, and what is already done.

Every finished point is one CSV row, written and flushed (and fsynced) as soon as the point
finishes, so an interrupted sweep loses only the points that were running. ``sweep.json``
records the sweep's fingerprint: a second start with the same folder runs only the points
without a row, and refuses to mix in results of a different base scenario or different axes.
"""

from __future__ import annotations

import csv
import json
import os
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.spec import RESULT_NAMES, SweepSpec

STATUS_COLUMNS = ("status", "error")


def csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value)


class ResultsStore:
    def __init__(self, out_dir: str, spec: SweepSpec, retry_failed: bool = False) -> None:
        self.out_dir = out_dir
        self.csv_path = os.path.join(out_dir, "results.csv")
        self.columns = ["key", *(a.column for a in spec.axes), *RESULT_NAMES, *STATUS_COLUMNS]
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            raise InputError(f"--out: cannot create {out_dir} ({exc.strerror or exc})") from None
        self._check_manifest(spec)
        self.rows: dict[str, dict[str, str]] = self._read_rows()
        if retry_failed:
            self.rows = {k: r for k, r in self.rows.items() if r.get("status") == "ok"}
        self._rewrite()  # drops a torn last line from a killed run, and retried failures
        self._file = open(self.csv_path, "a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)

    def _check_manifest(self, spec: SweepSpec) -> None:
        manifest = os.path.join(self.out_dir, "sweep.json")
        mine = {"sweep": os.path.abspath(spec.path), "fingerprint": spec.fingerprint(),
                "columns": self.columns}
        if os.path.exists(manifest):
            with open(manifest) as f:
                theirs = json.load(f)
            # a folder from before a result column was added resumes (its rows leave it empty)
            grown = set(theirs.get("columns") or ()) <= set(self.columns) and \
                set(self.columns) - set(theirs.get("columns") or ()) <= set(RESULT_NAMES)
            if theirs.get("fingerprint") != mine["fingerprint"] or not grown:
                raise InputError(
                    f"--out {self.out_dir}: holds results of a different sweep ({theirs.get('sweep')}: "
                    f"its base scenario or axes differ from {spec.path}); use another --out, or "
                    f"delete {self.out_dir} to start over")
        with open(manifest, "w") as f:
            json.dump(mine, f, indent=1)

    def _read_rows(self) -> dict[str, dict[str, str]]:
        if not os.path.exists(self.csv_path):
            return {}
        with open(self.csv_path, newline="") as f:
            text = f.read()
        complete = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
        reader = csv.DictReader(complete.splitlines())
        return {row["key"]: row for row in reader
                if row.get("key") and None not in row and None not in row.values()}

    def _rewrite(self) -> None:
        tmp = self.csv_path + ".tmp"
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows.values())
        os.replace(tmp, self.csv_path)

    def done(self, key: str) -> bool:
        return key in self.rows

    def append(self, key: str, coordinates: dict[str, Any], figures: dict[str, Any]) -> None:
        row = {"key": key, **{c: csv_value(v) for c, v in coordinates.items()},
               **{n: csv_value(figures.get(n)) for n in (*RESULT_NAMES, *STATUS_COLUMNS)}}
        self._writer.writerow(row)
        self._file.flush()
        os.fsync(self._file.fileno())
        self.rows[key] = row

    def close(self) -> None:
        self._file.close()


def figures_of(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row's figures as numbers (None where empty)."""
    out: dict[str, Any] = {}
    for name in RESULT_NAMES:
        text = row.get(name, "")
        out[name] = None if text == "" else (float(text) if "." in text or "e" in text else int(text))
    out["status"], out["error"] = row.get("status", ""), row.get("error", "")
    return out
