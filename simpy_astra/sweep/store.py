"""The sweep's output folder: results.csv appended point by point, and what is already done.

Every finished point is one CSV row, written and flushed (and fsynced) as soon as the point
finishes, so an interrupted sweep loses only the points that were running. Each row records
the inputs it was made from (``inputs_sha256``: one digest of the contents of every file the
point used; ``sweep.json``'s ``input_sets`` maps it to each file's own digest). ``sweep.json``
also records the sweep's fingerprint and a digest of every file it names: a second start with
the same folder runs only the points without a row, refuses to mix in results of a different
base scenario or different axes, or of another simulator (its version and source digest,
:mod:`simpy_astra.infra.source_digest`), and runs again the rows made from other contents of a file
than the file has now (an edited config or plug-in), saying which file changed. A point that
runs another's step (:mod:`simpy_astra.sweep.same_run`) has a row pointing at that point's
(status ``same``, ``same_run_as``), and each row records a digest of what the sweep wrote in
it (``row_sha256``), so a figure edited by hand is refused rather than ranked as a run's.

The folder is locked while a sweep uses it (:mod:`simpy_astra.sweep.folder_lock`). A write
that fails leaves no temporary file behind, and its error names the file. A results.csv this
sweep cannot read (edited header, a corrupt or edited row: :mod:`simpy_astra.sweep.row_checks`)
is refused, never rewritten: only a torn last line (a killed run's half-written row) is dropped.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.stopping import signals_held
from simpy_astra.sweep.folder_lock import LOCK_NAME, FolderLock
from simpy_astra.sweep.inputs import InputSnapshot
from simpy_astra.sweep.manifest import check_simulator, manifest_of, read_manifest, write_manifest
from simpy_astra.sweep.out_writes import cannot_write, remove_quietly
from simpy_astra.sweep.result_names import RESULT_NAMES
from simpy_astra.sweep.result_row import (
    DIGEST_COLUMN,
    INPUTS_COLUMN,
    SAME_COLUMN,
    STATUS_COLUMNS,
    WARNINGS_COLUMN,
    coordinate_cell,
    csv_value,
    row_digest,
)
from simpy_astra.sweep.row_checks import check_coordinates, check_digests, grown, misplaced, row_problem
from simpy_astra.sweep.same_run import SameRun
from simpy_astra.sweep.spec import Point, SweepSpec, inputs_digest


class ResultsStore:
    """``points``: the sweep's points, whose inputs each row records (without them, rows record
    none and none is run again); ``same_runs``: the points that run one of theirs' step, each
    given a row pointing at it."""

    def __init__(self, out_dir: str, spec: SweepSpec, points: list[Point] | None = None,
                 retry_failed: bool = False, same_runs: list[SameRun] | None = None) -> None:
        self.out_dir = out_dir
        self.csv_path = os.path.join(out_dir, "results.csv")
        self.columns = ["key", *(a.column for a in spec.axes), *RESULT_NAMES, *STATUS_COLUMNS, WARNINGS_COLUMN,
                        INPUTS_COLUMN, SAME_COLUMN, DIGEST_COLUMN]
        #: what rerunning rows made from other contents says (one line), or None
        self.rerun_note: str | None = None
        #: each row's line in results.csv (for errors that name it)
        self._lines: dict[str, int] = {}
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise InputError(f"--out: {out_dir} is a file, not a folder; choose a folder")
        files.make_folder(out_dir, "--out")  # a symlink to nothing said only 'File exists'
        for name in (LOCK_NAME, "results.csv", "sweep.json", "best.json"):  # no FIFO, device, input
            files.check_output(os.path.join(out_dir, name), "--out")
        self.lock = FolderLock(out_dir)  # before anything in the folder is read or written
        try:
            #: every named input: its contents' digest (``files``) and its stat, as the sweep starts
            self.inputs = InputSnapshot.take(spec.named_files(), spec.module_folders)
            self.files = self.inputs.digests
            self.point_files = {p.key: spec.files_of(p) for p in points or ()}
            #: point key -> the digest of the inputs it uses now (what a new row records)
            self.point_inputs = {k: inputs_digest({f: self.files[f] for f in fs if f in self.files})
                                 for k, fs in self.point_files.items()}
            earlier, made_by = read_manifest(out_dir, spec, self.columns)
            rows, header, torn = self._read_rows()
            check_simulator(out_dir, made_by, len(rows))
            check_coordinates(self.csv_path, self._lines, rows, [*(points or ()), *(s.point for s in same_runs or ())])
            check_digests(self.csv_path, self._lines, rows)
            self.rows: dict[str, dict[str, str]] = dict(rows)
            self._drop_rows_of_other_inputs(earlier)
            if retry_failed:
                self.rows = {k: r for k, r in self.rows.items() if r.get("status") in ("ok", "same")}
            pointed = self._point_same_runs(same_runs or (), {p.key for p in points or ()})
            # a kill between the two must leave a folder the next start reads right: on a first
            # start the manifest comes first (results.csv without it is refused); on a resume
            # results.csv does (its rows now record their inputs, which the old manifest judged)
            first_start = not os.path.exists(os.path.join(out_dir, "sweep.json"))
            if first_start:
                self._write_manifest(spec)
            if torn or len(self.rows) < len(rows) or header != self.columns or pointed:
                self._rewrite()  # a torn last line, rows run again, a new file, a grown header, new pointers
            if not first_start:
                self._write_manifest(spec)
            self._file = open(self.csv_path, "a", newline="")
        except OSError as exc:
            self.lock.release()
            raise cannot_write(getattr(exc, "filename", None) or out_dir, exc) from None
        except BaseException:
            self.lock.release()
            raise
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)

    def _write_manifest(self, spec: SweepSpec) -> None:
        input_sets = {self.point_inputs[k]: {f: self.files[f] for f in fs if f in self.files}
                      for k, fs in self.point_files.items()}
        write_manifest(self.out_dir, manifest_of(spec, self.columns, self.files, input_sets))

    def _drop_rows_of_other_inputs(self, earlier: dict[str, str]) -> None:
        """Drop (so run again) every row made from other contents of its files than they have
        now; a row from before rows recorded their inputs is judged by the digests the folder's
        sweep.json recorded (``earlier``)."""
        stale = []
        for key, row in self.rows.items():
            if key not in self.point_inputs:
                continue
            made_from = row.get(INPUTS_COLUMN) or ""
            if not made_from and all(f in earlier for f in self.point_files[key]):
                made_from = inputs_digest({f: earlier[f] for f in self.point_files[key]})
                row[INPUTS_COLUMN] = made_from
            if made_from != self.point_inputs[key]:
                stale.append(key)
        if not stale:
            return
        used = {f for key in stale for f in self.point_files[key]}
        changed = sorted(f for f in used if earlier.get(f) != self.files.get(f)) or sorted(used)
        more = f" (and {len(changed) - 1} more file(s))" if len(changed) > 1 else ""
        self.rerun_note = (f"note: {len(stale)} row(s) of {self.csv_path} were made from other contents of "
                           f"{changed[0]}{more} than it has now: running them again")
        for key in stale:
            del self.rows[key]

    def _point_same_runs(self, same_runs: Any, point_keys: set[str]) -> bool:
        """Give each point that runs another's step a row pointing at that point's (a row its
        own run made, from before it was found alike, is kept), and drop the pointers of
        points that no longer do; whether any row changed."""
        now = {same.point.key: same for same in same_runs if same.point.key not in point_keys}
        stale = [key for key, row in self.rows.items() if row.get("status") == "same"
                 and (key not in now or row.get(SAME_COLUMN) != now[key].runs_as)]
        for key in stale:
            del self.rows[key]
        added = [same for key, same in now.items() if key not in self.rows]
        for same in added:
            row = {"key": same.point.key, **{c: coordinate_cell(v) for c, v in same.point.coordinates.items()},
                   "status": "same", WARNINGS_COLUMN: same.why, SAME_COLUMN: same.runs_as}
            self.rows[same.point.key] = {**row, DIGEST_COLUMN: row_digest(row)}
        return bool(stale or added)

    def _read_rows(self) -> tuple[dict[str, dict[str, str]], list[str] | None, bool]:
        """The rows of results.csv, its header (None without a file), and whether its last line
        was torn by a killed run."""
        if not os.path.exists(self.csv_path):
            return {}, None, False
        try:
            # utf-8-sig: an editor's "UTF-8 with BOM" (Excel) puts U+FEFF before 'key'
            with open(self.csv_path, newline="", encoding="utf-8-sig") as f:
                text = f.read()
        except UnicodeDecodeError:
            raise InputError(f"{self.csv_path}: is not UTF-8 text; it was not written by a sweep (move it "
                             f"away or choose another --out)") from None
        complete = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
        torn = complete != text
        limit = csv.field_size_limit(max(csv.field_size_limit(), len(complete) + 1))
        try:  # a field as long as the file: rows quote errors, which quote the arguments
            return self._parse_rows(complete, torn)
        except csv.Error as exc:
            raise InputError(f"{self.csv_path}: cannot be read as CSV ({exc}); it was edited: restore it, or "
                             f"move it away to start over; it is left as it is") from None
        finally:
            csv.field_size_limit(limit)

    def _parse_rows(self, complete: str, torn: bool) -> tuple[dict[str, dict[str, str]], list[str] | None, bool]:
        reader = csv.reader(io.StringIO(complete, newline=""))
        header = next(reader, None)
        if not header or header != self.columns and not grown(header, self.columns):
            got = misplaced(header, self.columns) if header else "an empty file"
            raise InputError(f"{self.csv_path}: header: does not match this sweep ({got}); it was edited "
                             f"or truncated: restore it, or move it away to start over; it is left as it is")
        columns = header
        rows: dict[str, dict[str, str]] = {}
        lines_of: dict[str, int] = {}
        for values in reader:
            number = reader.line_num
            if not values:
                continue  # a blank line holds no point
            problem = row_problem(values, columns)
            key = values[0] if values else ""
            if problem is None and key in rows:
                problem = f"key: {key} repeats line {lines_of[key]}"
            if problem:
                raise InputError(f"{self.csv_path}: line {number}: {problem}; fix or delete that line (its "
                                 f"point then runs again); the file is left as it is")
            rows[key] = dict(zip(columns, values, strict=True))
            lines_of[key] = number
        self._lines = lines_of
        return rows, header, torn

    def _rewrite(self) -> None:
        target = files.write_target(self.csv_path)  # a link to results.csv survives, as with >
        tmp = target + ".tmp"
        try:
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=self.columns)
                writer.writeheader()
                writer.writerows(self.rows.values())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            remove_quietly(tmp)
            raise cannot_write(target, exc) from None

    def done(self, key: str) -> bool:
        return key in self.rows

    def append(self, key: str, coordinates: dict[str, Any], figures: dict[str, Any]) -> None:
        row = {"key": key, **{c: coordinate_cell(v) for c, v in coordinates.items()},
               **{n: csv_value(figures.get(n)) for n in (*RESULT_NAMES, *STATUS_COLUMNS, WARNINGS_COLUMN)},
               INPUTS_COLUMN: self.point_inputs.get(key, "")}
        row[DIGEST_COLUMN] = row_digest(row)
        with signals_held():  # a stop comes after the row is both written and counted
            try:
                self._writer.writerow(row)
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as exc:  # e.g. the disk filled up: stop, with every earlier row saved
                try:  # what did not fit stays unwritten: a later flush must not add it after the cut
                    self._file.buffer.raw.close()
                except (OSError, ValueError):
                    pass
                self._drop_torn_row()
                raise cannot_write(self.csv_path, exc) from None
            self.rows[key] = row

    def in_sweep_order(self, keys: list[str]) -> None:
        """Rewrite results.csv with its rows in the order of ``keys`` (the sweep's points; rows of
        other keys after them, as they were). Rows are appended as points finish, an order that
        parallel workers and resumed runs make vary: two runs of one sweep then gave files that
        differ though every figure agreed."""
        order = {key: i for i, key in enumerate(keys)}
        ordered = sorted(self.rows, key=lambda key: order.get(key, len(order)))
        if ordered == list(self.rows):
            return
        self.rows = {key: self.rows[key] for key in ordered}
        self._file.close()
        self._rewrite()
        try:  # a row appended after this goes to the new file, not the replaced one
            self._file = open(self.csv_path, "a", newline="")
        except OSError as exc:
            raise cannot_write(self.csv_path, exc) from None
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)

    def _drop_torn_row(self) -> None:
        """After a failed append: cut results.csv back to its last whole line (the next start
        would drop a torn row anyway; a reader of the file meanwhile should not see one)."""
        try:
            with open(self.csv_path, "rb+") as f:
                data = f.read()
                f.truncate(data.rfind(b"\n") + 1)
        except OSError:
            pass

    def close(self) -> None:
        """Close results.csv and unlock the folder (its lock file goes too)."""
        try:
            self._file.close()
        except (OSError, ValueError):  # a row that did not fit the disk: append reported it
            pass
        finally:
            self.lock.release()
