"""A sweep's folder records which simulator made its rows (version and source digest), and a
resume by another simulator is refused naming the folder and the fix: the package version
stayed 0.1.0 while the code changed, so a folder written by an older tree was resumed silently
and its table mixed two models' figures."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import simpy_astra
from simpy_astra.infra import source_digest
from tests.test_sweep import bandwidth_sweep, cli, kept, one_error


def _tree(root: Path, nested: bool, line: str = "X = 1\n") -> dict[str, str]:
    """A package laid out as the source tree has it (``nested`` False: collectives/ beside
    simpy_astra/) or as a wheel installs it (inside simpy_astra/): package -> its folder."""
    top = root / "simpy_astra"
    sub = {name: (top if nested else root) / name.rsplit(".", 1)[1] for name in source_digest.PACKAGES[1:]}
    for folder in (top, *sub.values()):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (top / "engine.py").write_text(line)
    (sub["simpy_astra.collectives"] / "ring.py").write_text("RING = 2\n")
    (sub["simpy_astra.collectives"] / "README.md").write_text("docs\n")
    (top / "config").mkdir()
    (top / "config" / "preset.yaml").write_text("gpus: 8\n")
    return {"simpy_astra": str(top), **{k: str(v) for k, v in sub.items()}}


def _digest(monkeypatch, dirs: dict[str, str]) -> str:
    monkeypatch.setattr(source_digest, "_package_dir", dirs.__getitem__)
    source_digest.source_sha256.cache_clear()
    try:
        return source_digest.source_sha256()
    finally:
        source_digest.source_sha256.cache_clear()


def test_the_digest_is_every_source_files_name_and_contents_in_either_layout(tmp_path, monkeypatch):
    flat = _digest(monkeypatch, _tree(tmp_path / "flat", nested=False))
    # by hand: each file's name in the package, its length and its bytes, in name order
    want = hashlib.sha256()
    for name, data in sorted({"simpy_astra/__init__.py": b"", "simpy_astra/engine.py": b"X = 1\n",
                              "simpy_astra/config/preset.yaml": b"gpus: 8\n",
                              "simpy_astra/collectives/__init__.py": b"", "simpy_astra/collectives/ring.py":
                              b"RING = 2\n", "simpy_astra/topologies/__init__.py": b"",
                              "simpy_astra/workloads/__init__.py": b""}.items()):
        want.update(f"{name}\0{len(data)}\0".encode() + data)
    assert flat == want.hexdigest()
    assert _digest(monkeypatch, _tree(tmp_path / "wheel", nested=True)) == flat  # installed: the same
    assert _digest(monkeypatch, _tree(tmp_path / "edited", nested=False, line="X = 2\n")) != flat
    docs = _tree(tmp_path / "docs", nested=False)
    Path(docs["simpy_astra.collectives"], "README.md").write_text("other docs\n")
    assert _digest(monkeypatch, docs) == flat  # prose changes nothing a run does


def test_a_sweep_refuses_to_resume_rows_another_simulator_made(tmp_path, capsys):
    out = tmp_path / "out"
    first = bandwidth_sweep(tmp_path)
    assert cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    manifest = json.loads((out / "sweep.json").read_text())
    ours = manifest["simulator"]
    assert ours == {"version": simpy_astra.__version__, "source_sha256": source_digest.source_sha256()}
    assert len(ours["source_sha256"]) == 64
    results = (out / "results.csv").read_bytes()
    assert cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0  # the same one resumes

    manifest["simulator"] = {"version": "0.1.0", "source_sha256": "ab" * 32}
    (out / "sweep.json").write_text(json.dumps(manifest))
    code, err = cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, f"--out {out}: its 3 result(s) were made by another simulator (simpy-astra 0.1.0, source "
                   f"abababababab; this is {ours['version']}, source {ours['source_sha256'][:12]}); this one's "
                   f"would be mixed in with them: give another --out, or delete {out} to run every point again "
                   f"with this simulator")
    assert (out / "results.csv").read_bytes() == results and kept(out) == {("25", "ok"), ("50", "ok"), ("100", "ok")}

    del manifest["simulator"]  # a folder from before sweeps recorded their simulator
    (out / "sweep.json").write_text(json.dumps(manifest))
    code, err = cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, "(its sweep.json names none: written before sweeps recorded theirs)", f"delete {out} to run")

    (out / "results.csv").unlink()  # no rows: nothing to mix, the folder is this simulator's now
    (out / "sweep.json").write_text(json.dumps(manifest))
    assert cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    assert json.loads((out / "sweep.json").read_text())["simulator"] == ours
