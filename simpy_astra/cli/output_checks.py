"""Every file a run will write, checked before it starts (not after minutes of it): paths the
system accepts, folders that can be written, outputs that are neither one another nor one of
the run's inputs. Each error names the flag or field."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from simpy_astra.errors import InputError

if TYPE_CHECKING:
    from simpy_astra.report.log_folder import LogFolder


def _name_fits(path: str, flag: str) -> None:
    """A path the OS accepts: no name over 255 bytes, no NUL (else the run would fail at the end)."""
    from simpy_astra.config.file_text import short_path

    if "\0" in path or any(len(os.fsencode(part)) > 255 for part in path.split(os.sep)) \
            or len(os.fsencode(os.path.abspath(path))) >= 4096:
        raise InputError(f"{flag}: {short_path(path)} is not a path the system accepts (a name over 255 "
                         f"bytes, a path over 4096, or a NUL character)")


def _not_stdout(path: str, flag: str, kind: str) -> None:
    """``-`` is stdout to many tools; here it would be a file or folder named '-' in the working folder."""
    if path == "-":
        raise InputError(f"{flag}: '-' would be a {kind} named '-' here, not stdout (stdout carries the answer); "
                         f"give a {kind} path")


def _given(path: str | None, flag: str, kind: str) -> bool:
    """Whether an output ``path`` was given (None: not asked for), refusing one no ``kind``
    could be written at: empty, ``-``, or a name the system does not accept."""
    if path is None:
        return False
    if not path:
        raise InputError(f"{flag}: must be a {kind} path (got an empty string)")
    _not_stdout(path, flag, kind)
    _name_fits(path, flag)
    return True


def _not_a_sweeps(path: str, flag: str) -> None:
    """Refuse a file of a sweep's results folder (one holding sweep.json): ``--json-out
    out/results.csv`` or ``--plots out`` (breakdown.png) replaced the sweep's file in silence."""
    from simpy_astra.config.file_text import short_path

    folder, name = os.path.split(os.path.realpath(path))
    shown = os.path.dirname(short_path(path)) or "."
    if os.path.basename(folder) == "points" and os.path.isfile(os.path.join(os.path.dirname(folder), "sweep.json")):
        raise InputError(f"{flag}: {short_path(path)} is in the folder of a sweep's point scenarios ({shown}); "
                         f"write the output to another path")
    from simpy_astra.sweep.result_names import SWEEP_FILES

    if name in SWEEP_FILES and os.path.isfile(os.path.join(folder, "sweep.json")):
        raise InputError(f"{flag}: {short_path(path)} would replace the {name} of the sweep whose results are in "
                         f"{shown}; write the output to another path")


def _writable_file(path: str | None, flag: str, made: tuple[str | None, ...] = ()) -> None:
    """Refuse an output file that cannot be written, before the run (not after minutes of it).
    A file in a folder not there yet that a folder output of the run makes, with its parents
    (``--json-out out/f.json`` beside ``--plots out`` or ``--plots out/plots``), is written once
    it is made; that folder is checked."""
    if not _given(path, flag, "file"):
        return
    from simpy_astra.infra import files

    folder = os.path.realpath(os.path.dirname(path) or ".")
    if not os.path.exists(folder) and any(f and (os.path.realpath(f) + os.sep).startswith(folder + os.sep)
                                          for f in made):
        return
    files.check_output(path, flag)  # a FIFO, a device, one of the run's inputs, a missing folder
    _not_a_sweeps(path, flag)


def writable_dir(path: str | None, flag: str) -> None:
    """A folder that exists and is writable, or can be made (its nearest existing parent is)."""
    if not _given(path, flag, "folder"):
        return
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing.rstrip(os.sep)) or "."
    if os.path.islink(existing) and not os.path.exists(existing):  # the run ended on "(File exists)"
        raise InputError(f"{flag}: cannot write into {path}: {existing} is a symlink that leads nowhere (a loop, or "
                         f"to a missing path); give a folder, or mend the link")
    if not os.path.isdir(existing):
        raise InputError(f"{flag}: cannot write into {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag}: cannot write into {path}: permission denied on {existing}")
    # os.access says yes to root everywhere, also in /proc and /sys, where nothing can be made:
    # only trying tells before the run (else the run ends on "cannot write into")
    import errno

    from simpy_astra.infra.files import os_problem

    probe = os.path.join(existing, f".simpy-astra.{os.getpid()}.probe")
    try:
        os.mkdir(probe)
    except FileExistsError:
        return
    except OSError as exc:
        problem = "accepts no new folders" if exc.errno == errno.ENOENT else os_problem(exc)
        raise InputError(f"{flag}: cannot write into {path} ({existing}: {problem}); choose a folder you "
                         f"can write") from None
    os.rmdir(probe)


def distinct_outputs(outputs: list[tuple[str | None, str]], folders: list[tuple[str | None, str]]) -> None:
    """Refuse two outputs on one file (``--json-out`` and ``--trace-out`` alike, ``--json-out``
    inside ``--csv-out``'s folder as nodes.csv): the later writer would replace the earlier's
    file, and the run would report both written. A folder output (``--csv-out``, ``--plots``)
    at or under a file another flag writes is refused too: neither exists yet, so each passes
    its own check, and the run failed after its minutes, the file written, the folder not."""
    owner: dict[str, str] = {}
    for path, flag in outputs:
        if not path or os.path.realpath(path) == os.devnull:
            continue
        real = os.path.realpath(path)
        if real in owner:
            raise InputError(f"{flag}: {path} is also the file {owner[real]} writes; give each output its "
                             f"own path")
        owner.setdefault(real, flag)
    for folder, flag in folders:
        real = os.path.realpath(folder) if folder else None
        for file, writer in owner.items() if real else ():
            if real == file or real.startswith(file + os.sep):
                where = "" if real == file else f" under {os.path.relpath(file)},"
                raise InputError(f"{flag}: {folder} is a folder{where} where {writer} writes a file; give "
                                 f"each output its own path")


def check_outputs(inputs, json_out: str | None, csv_out: str | None, trace_out: str | None,
                  plots: str | None = None, log: LogFolder | None = None) -> None:
    """Every file a run will write, checked before it starts; each error names the flag or field.
    An output that is one of the run's inputs is refused: every file read (configs, presets,
    workload), every module imported (plug-ins, builders, models; :mod:`simpy_astra.infra.files`
    keeps the list), and an ET rank although a folded run reads only some of them."""
    import re

    prefixes = {os.path.realpath(p) for p in (inputs.workload_prefix, *(j.workload_prefix for j in inputs.jobs or ()))
                if p}
    for path, flag in ((json_out, "--json-out"), (trace_out, "--trace-out")):
        m = re.fullmatch(r"(.*)\.\d+\.et", os.path.realpath(path)) if path else None
        if m and m.group(1) in prefixes:
            raise InputError(f"{flag}: {path} is one of this run's inputs (a workload ET rank); write the "
                             f"output to another path")
    from simpy_astra.infra import files
    from simpy_astra.plugins import remember_imported_code

    remember_imported_code()  # builder, plug-in and model modules are inputs too
    in_folders = [(csv_out, name, "--csv-out") for name in ("nodes.csv", "npus.csv", "layers.csv")]
    if plots is not None:
        from simpy_astra.report.plots import PLOT_NAMES

        in_folders += [(plots, name, "--plots") for name in PLOT_NAMES]
    logs = [(log.log_path, "--logging-folder"), (log.err_path, "--logging-folder")] if log is not None else []
    distinct_outputs([(json_out, "--json-out"), (trace_out, "--trace-out"), *logs,
                       *((os.path.join(folder, name), flag) for folder, name, flag in in_folders if folder)],
                      [(csv_out, "--csv-out"), (plots, "--plots")])
    writable_dir(csv_out, "--csv-out")
    writable_dir(plots, "--plots")
    _writable_file(json_out, "--json-out", (csv_out, plots))
    if plots is not None:
        from simpy_astra.report.plots import require_matplotlib

        require_matplotlib()
    _writable_file(trace_out, "--trace-out", (csv_out, plots))
    for folder, name, flag in in_folders:  # the files a folder flag writes: not an input, not a FIFO
        if folder is not None and os.path.isdir(folder):
            files.check_output(os.path.join(folder, name), flag)
            _not_a_sweeps(os.path.join(folder, name), flag)
    cfg = inputs.system
    if cfg.track_local_mem:
        prefix = cfg.local_mem_trace_filename
        _apart_from_traces(prefix, inputs, [(json_out, "--json-out"), (trace_out, "--trace-out"), *logs])
        folder = os.path.dirname(prefix) or "."
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
            raise InputError.at(cfg.source, "local-mem-trace-filename",
                                f"is {prefix!r}, but folder {folder} does not exist or is not writable")
        for path in files.numbered_files(prefix, ".json").values():  # the traces a run replaces
            files.check_output(path, "local-mem-trace-filename")
    if log is not None:
        log.check()  # log.log and err.log, now that the inputs are read


def _apart_from_traces(prefix: str, inputs, outputs: list[tuple[str | None, str]]) -> None:
    """An output file that is one of the local-memory traces (``PREFIX.N.json``, one per NPU) the
    run writes is refused: one would replace the other, and the run would say it wrote both."""
    import re

    trace = re.compile(re.escape(os.path.realpath(prefix)) + r"\.(\d+)\.json")
    for path, flag in outputs:
        m = trace.fullmatch(os.path.realpath(path)) if path and not inputs.jobs else None
        if m and int(m.group(1)) < inputs.network.total_npus:
            raise InputError(f"{flag}: {path} is also NPU {int(m.group(1))}'s local-memory trace (the system's "
                             f"local-mem-trace-filename {os.path.basename(prefix)!r}); give each output its own path")
