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

The folder is locked (``fcntl.flock`` on ``DIR/sweep.lock``) while a sweep uses it: a second
sweep on the same folder would otherwise replace results.csv under the first one, which would
go on appending to the deleted file. The lock dies with the process, even under ``kill -9``;
a sweep that ends (done, stopped, or failed, e.g. on a full disk) removes the file too. A
write that fails leaves no temporary file behind, and its error names the file.
A results.csv this sweep cannot read (edited header, a corrupt or edited row) is refused, never
rewritten: only a torn last line (a killed run's half-written row) is dropped.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import hashlib
import io
import json
import math
import os
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.source_digest import simulator_identity
from simpy_astra.sweep.inputs import InputSnapshot
from simpy_astra.sweep.result_names import RESULT_NAMES
from simpy_astra.sweep.same_run import SameRun
from simpy_astra.sweep.spec import Point, SweepSpec, inputs_digest

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
LOCK_NAME = "sweep.lock"
#: figures that are yes (1) or no (0): ``fits``, whether a Megatron job's memory fits its GPU
FLAG_NAMES = ("fits",)
# the figure a finished point always has (what the plots and the default objective need)
REQUIRED_OK = ("finish_ns",)


def csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str | int | float):
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


def _cannot_write(path: str, exc: OSError) -> InputError:
    return InputError(f"--out: cannot write {path} ({exc.strerror or exc}); choose a folder you can write")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class FolderLock:
    """An exclusive, non-blocking lock on the output folder for this process's lifetime."""

    def __init__(self, out_dir: str) -> None:
        self.path = os.path.join(out_dir, LOCK_NAME)
        self.fd = -1
        while self.fd < 0:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise _cannot_write(self.path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise InputError(f"--out {out_dir}: another sweep (pid {holder}) is using this folder; wait "
                                 f"for it to finish or stop it, or choose another --out") from None
            if self._still_named(fd):
                self.fd = fd
            else:  # the sweep before removed the file between our open and our lock: again
                os.close(fd)
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:  # a full disk: the lock holds without the pid in it
            if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                self.release()
                raise _cannot_write(self.path, exc) from None

    def _still_named(self, fd: int) -> bool:
        """Whether ``fd`` is the file at ``self.path`` (not one a releasing sweep unlinked)."""
        try:
            st, named = os.fstat(fd), os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (named.st_dev, named.st_ino)

    def release(self) -> None:
        """Remove the lock file, then unlock (in this order: a sweep that opened the file just
        before sees it gone once it gets the lock, and tries again)."""
        if self.fd >= 0:
            _remove(self.path)
            os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = -1


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
            earlier, made_by = self._check_manifest(spec)
            rows, header, torn = self._read_rows()
            self._check_simulator(made_by, len(rows))
            self._check_coordinates(rows, [*(points or ()), *(s.point for s in same_runs or ())])
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
            raise _cannot_write(getattr(exc, "filename", None) or out_dir, exc) from None
        except BaseException:
            self.lock.release()
            raise
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns)

    def _manifest(self, spec: SweepSpec) -> dict[str, Any]:
        input_sets = {self.point_inputs[k]: {f: self.files[f] for f in fs if f in self.files}
                      for k, fs in self.point_files.items()}
        return {"sweep": os.path.abspath(spec.path), "fingerprint": spec.fingerprint(),
                "simulator": simulator_identity(), "columns": self.columns, "files": self.files,
                "input_sets": input_sets}

    def _check_simulator(self, theirs: Any, row_count: int) -> None:
        """Refuse to add this simulator's results to rows another one made (``theirs``: the
        simulator sweep.json recorded, its version or source not this one's): the table would
        mix two models."""
        ours = simulator_identity()
        if not row_count or theirs == ours:
            return
        if isinstance(theirs, dict) and theirs.get("source_sha256"):
            made_by = (f"simpy-astra {theirs.get('version')}, source {str(theirs['source_sha256'])[:12]}; this is "
                       f"{ours['version']}, source {ours['source_sha256'][:12]}")
        else:
            made_by = "its sweep.json names none: written before sweeps recorded theirs"
        raise InputError(f"--out {self.out_dir}: its {row_count} result(s) were made by another simulator ({made_by}); "
                         f"this one's would be mixed in with them: give another --out, or delete {self.out_dir} "
                         f"to run every point again with this simulator")

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
            row = {"key": same.point.key, **{c: csv_value(v) for c, v in same.point.coordinates.items()},
                   "status": "same", WARNINGS_COLUMN: same.why, SAME_COLUMN: same.runs_as}
            self.rows[same.point.key] = {**row, DIGEST_COLUMN: row_digest(row)}
        return bool(stale or added)

    def _grown(self, columns: list[str]) -> bool:
        """Columns of a folder from before a result column was added: it resumes (its rows leave
        the new column empty). The order must be ours too: a header with two columns swapped
        would otherwise relabel every row's values (ranking best.json by the wrong figure)."""
        return set(columns) <= set(self.columns) and set(self.columns) - set(columns) <= OPTIONAL_COLUMNS \
            and columns == [c for c in self.columns if c in set(columns)]

    def _misplaced(self, header: list[str]) -> str:
        """What is wrong with ``header``, named by column: the first one this sweep does not write
        (matched against the others, a renamed column blamed the next), else the first one out
        of place."""
        from simpy_astra.infra.files import show

        for i, got in enumerate(header):
            if got not in self.columns:
                return f"column {i + 1} is '{show(got)}', not one this sweep writes"
        expected = [c for c in self.columns if c in set(header)]
        for i, (got, want) in enumerate(zip(header, expected, strict=False)):
            if got != want:
                return f"column {i + 1} is '{got}' where this sweep writes '{want}'"
        missing = [c for c in self.columns if c not in set(header) and c not in OPTIONAL_COLUMNS]
        return f"column '{missing[0]}' is missing" if missing else "the columns differ"

    def _check_manifest(self, spec: SweepSpec) -> tuple[dict[str, str], Any]:
        """The folder's sweep.json belongs to this sweep; returns the file digests it recorded
        and the simulator that made the folder's rows, as recorded (None: none recorded)."""
        manifest = os.path.join(self.out_dir, "sweep.json")
        if not os.path.exists(manifest):
            if os.path.exists(self.csv_path):
                raise InputError(f"{self.csv_path}: results without {manifest} (it records which sweep they "
                                 f"belong to); move results.csv away or choose another --out")
            return {}, None
        try:
            with open(manifest) as f:
                theirs = json.load(f)
            if not isinstance(theirs, dict):
                raise ValueError("not a mapping")
        except (OSError, ValueError) as exc:
            raise InputError(f"{manifest}: cannot be read ({exc}); delete {self.out_dir} to start over, or "
                             f"choose another --out") from None
        if theirs.get("fingerprint") != spec.fingerprint() or not self._grown(list(theirs.get("columns") or [])):
            raise InputError(
                f"--out {self.out_dir}: holds results of a different sweep ({theirs.get('sweep')}: "
                f"its base scenario or axes differ from {spec.path}); use another --out, or "
                f"delete {self.out_dir} to start over")
        recorded = theirs.get("files") or {}
        digests = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
        return digests, theirs.get("simulator")

    def _write_manifest(self, spec: SweepSpec) -> None:
        manifest = files.write_target(os.path.join(self.out_dir, "sweep.json"))  # a link survives
        try:
            with open(manifest + ".tmp", "w") as f:
                json.dump(self._manifest(spec), f, indent=1)
            os.replace(manifest + ".tmp", manifest)
        except OSError as exc:
            _remove(manifest + ".tmp")
            raise _cannot_write(manifest, exc) from None

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
        if not header or header != self.columns and not self._grown(header):
            got = self._misplaced(header) if header else "an empty file"
            raise InputError(f"{self.csv_path}: header: does not match this sweep ({got}); it was edited "
                             f"or truncated: restore it, or move it away to start over; it is left as it is")
        columns = header
        rows: dict[str, dict[str, str]] = {}
        lines_of: dict[str, int] = {}
        for values in reader:
            number = reader.line_num
            if not values:
                continue  # a blank line holds no point
            problem = self._row_problem(values, columns)
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

    def _check_coordinates(self, rows: dict[str, dict[str, str]], points) -> None:
        """Each row's coordinates are its key's: an edited value (dp 8 made 4) would give the key's
        figures to coordinates that were never run, in the summary and the plots."""
        # a row under a key no point has, with a point's coordinates: its key was edited (or
        # made another way); it stayed beside the point's own row, two rows of one point
        by_coordinates = {tuple(csv_value(v) for v in p.coordinates.values()): p for p in points}
        columns, keys = (list(points[0].coordinates) if points else []), {p.key for p in points}
        for key, row in rows.items():
            twin = None if key in keys else by_coordinates.get(tuple(row.get(c) for c in columns))
            if twin is not None:
                raise InputError(f"{self.csv_path}: line {self._lines[key]}: key: {key!r} is not the key of its "
                                 f"coordinates ({twin.key}); fix or delete that line (its point then runs "
                                 f"again); the file is left as it is")
        for p in points:
            row = rows.get(p.key)
            for column, value in p.coordinates.items() if row is not None else ():
                if column in row and row[column] != csv_value(value):
                    raise InputError(f"{self.csv_path}: line {self._lines[p.key]}: {column}: {row[column]!r} is not "
                                     f"the value of its key {p.key} ({csv_value(value)}); fix or delete that line "
                                     f"(its point then runs again); the file is left as it is")

    @staticmethod
    def _row_problem(values: list[str], columns: list[str]) -> str | None:
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
        if row.get(DIGEST_COLUMN) and row[DIGEST_COLUMN] != row_digest(row):
            return (f"was changed after the sweep wrote it ({DIGEST_COLUMN} does not match its values: a figure "
                    f"edited, or a spreadsheet's rewriting of its numbers)")
        return None

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
            _remove(tmp)
            raise _cannot_write(target, exc) from None

    def done(self, key: str) -> bool:
        return key in self.rows

    def append(self, key: str, coordinates: dict[str, Any], figures: dict[str, Any]) -> None:
        row = {"key": key, **{c: csv_value(v) for c, v in coordinates.items()},
               **{n: csv_value(figures.get(n)) for n in (*RESULT_NAMES, *STATUS_COLUMNS, WARNINGS_COLUMN)},
               INPUTS_COLUMN: self.point_inputs.get(key, "")}
        row[DIGEST_COLUMN] = row_digest(row)
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
            raise _cannot_write(self.csv_path, exc) from None
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
            raise _cannot_write(self.csv_path, exc) from None
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


def figures_of(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row's figures as numbers (None where empty)."""
    out: dict[str, Any] = {}
    for name in RESULT_NAMES:
        text = row.get(name, "")
        out[name] = parse_figure(text)
    out["status"], out["error"] = row.get("status", ""), row.get("error", "")
    out[WARNINGS_COLUMN] = row.get(WARNINGS_COLUMN, "")
    return out
