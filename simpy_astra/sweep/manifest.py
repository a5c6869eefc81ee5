"""The sweep's ``sweep.json``: which sweep, simulator and inputs made the folder's results.

It records the sweep's fingerprint and a digest of every file it names: a second start with the
same folder refuses to mix in results of a different base scenario or different axes, or of
another simulator (its version and source digest, :mod:`simpy_astra.infra.source_digest`), and
learns which rows were made from other contents of a file than the file has now.
"""

from __future__ import annotations

import json
import os
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.source_digest import simulator_identity
from simpy_astra.sweep.out_writes import cannot_write, remove_quietly
from simpy_astra.sweep.row_checks import grown
from simpy_astra.sweep.spec import SweepSpec


def manifest_of(spec: SweepSpec, columns: list[str], digests: dict[str, str],
                input_sets: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What sweep.json records: the sweep, its fingerprint, this simulator, the columns, every
    named file's digest (``digests``), and each inputs digest's files (``input_sets``)."""
    return {"sweep": os.path.abspath(spec.path), "fingerprint": spec.fingerprint(),
            "simulator": simulator_identity(), "columns": columns, "files": digests,
            "input_sets": input_sets}


def read_manifest(out_dir: str, spec: SweepSpec, columns: list[str]) -> tuple[dict[str, str], Any]:
    """The folder's sweep.json belongs to this sweep (``columns``: the ones it writes); returns
    the file digests it recorded and the simulator that made the folder's rows, as recorded
    (None: none recorded)."""
    manifest, csv_path = os.path.join(out_dir, "sweep.json"), os.path.join(out_dir, "results.csv")
    if not os.path.exists(manifest):
        if os.path.exists(csv_path):
            raise InputError(f"{csv_path}: results without {manifest} (it records which sweep they "
                             f"belong to); move results.csv away or choose another --out")
        return {}, None
    try:
        with open(manifest) as f:
            theirs = json.load(f)
        if not isinstance(theirs, dict):
            raise ValueError("not a mapping")
    except (OSError, ValueError) as exc:
        raise InputError(f"{manifest}: cannot be read ({exc}); delete {out_dir} to start over, or "
                         f"choose another --out") from None
    if theirs.get("fingerprint") != spec.fingerprint() or not grown(list(theirs.get("columns") or []), columns):
        raise InputError(
            f"--out {out_dir}: holds results of a different sweep ({theirs.get('sweep')}: "
            f"its base scenario or axes differ from {spec.path}); use another --out, or "
            f"delete {out_dir} to start over")
    recorded = theirs.get("files") or {}
    digests = {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}
    return digests, theirs.get("simulator")


def write_manifest(out_dir: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` as the folder's sweep.json, whole or not at all."""
    manifest = files.write_target(os.path.join(out_dir, "sweep.json"))  # a link survives
    try:
        with open(manifest + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(manifest + ".tmp", manifest)
    except OSError as exc:
        remove_quietly(manifest + ".tmp")
        raise cannot_write(manifest, exc) from None


def check_simulator(out_dir: str, theirs: Any, row_count: int) -> None:
    """Refuse to add this simulator's results to rows another one made in ``out_dir``
    (``theirs``: the simulator sweep.json recorded, its version or source not this one's): the
    table would mix two models."""
    ours = simulator_identity()
    if not row_count or theirs == ours:
        return
    if isinstance(theirs, dict) and theirs.get("source_sha256"):
        made_by = (f"simpy-astra {theirs.get('version')}, source {str(theirs['source_sha256'])[:12]}; this is "
                   f"{ours['version']}, source {ours['source_sha256'][:12]}")
    else:
        made_by = "its sweep.json names none: written before sweeps recorded theirs"
    raise InputError(f"--out {out_dir}: its {row_count} result(s) were made by another simulator ({made_by}); "
                     f"this one's would be mixed in with them: give another --out, or delete {out_dir} "
                     f"to run every point again with this simulator")
