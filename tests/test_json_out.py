"""``--json-out`` identifies itself: version, backend, the inputs' content, units in names (issue 39)."""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import version
from pathlib import Path

from simpy_astra.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "default.yaml"
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"


def sha256(*paths: Path, named: bool = False) -> str:
    sha = hashlib.sha256()
    for p in paths:
        if named:
            sha.update(p.name.encode() + b"\0")
        sha.update(p.read_bytes())
    return sha.hexdigest()


def test_json_out_names_version_backend_and_inputs_by_content(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["run", str(DEFAULT), "--quiet", "--network-backend", "congestion_aware", "--json-out", str(out)]) == 0
    capsys.readouterr()
    data = json.loads(out.read_text())
    assert data["simpy_astra_version"] == version("simpy-astra")
    assert data["backend"] == "congestion_aware"  # the override, not the scenario's field
    ets = [Path(f"{STEP}.{rank}.et") for rank in range(8)]
    assert data["inputs"] == [
        {"path": str(DEFAULT), "sha256": sha256(DEFAULT)},
        {"path": f"{STEP}.*.et", "files": 8, "sha256": sha256(*ets, named=True)},
    ]


def test_every_time_has_an_ns_name_and_the_old_names_stay(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["run", str(DEFAULT), "--quiet", "--json-out", str(out)]) == 0
    capsys.readouterr()
    npu = json.loads(out.read_text())["npus"]["0"]
    # the reference's figures for the default step: 142,780 ns, 25,000 ns of GPU time
    assert npu["finished_ns"] == npu["finished_cycles"] == npu["wall_time_ns"] == 142_780
    assert npu["exposed_comm_ns"] == npu["exposed_comm_cycles"] == 142_780 - 25_000
    assert npu["gpu_time_ns"] == npu["gpu_time"] == 25_000
    assert npu["comm_time_ns"] == npu["comm_time"] == 117_780
    assert "_ns names replace finished_cycles" in json.loads(out.read_text())["units"]


def test_the_astra_form_digests_its_config_files_and_an_edit_changes_them(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4, "local-mem-bw": 50,
        "all-reduce-implementation": ["ring"]}))
    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    flags = [f"--workload-configuration={STEP}", "--system-configuration=sys.json",
             "--network-configuration=net.yml", "--remote-memory-configuration=mem.json", "--json-out=f.json"]
    assert main(flags) == 0

    def digests() -> dict[str, str]:
        return {Path(i["path"]).name: i["sha256"] for i in json.loads(Path("f.json").read_text())["inputs"]}

    first = digests()
    assert first["net.yml"] == sha256(net) and first["sys.json"] == sha256(tmp_path / "sys.json")
    assert set(first) == {"step.*.et", "sys.json", "net.yml", "mem.json"}
    net.write_text(net.read_text().replace("500.0", "600.0"))
    assert main(flags) == 0
    capsys.readouterr()
    second = digests()
    assert second["net.yml"] != first["net.yml"] and second["sys.json"] == first["sys.json"]


def test_a_scenarios_named_files_and_plugins_are_digested(tmp_path, capsys, monkeypatch):
    import shutil
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_algos", raising=False)
    shutil.copy(ROOT / "examples" / "my_algos.py", tmp_path / "my_algos.py")
    with (tmp_path / "my_algos.py").open("a") as f:  # a plug-in registers what it brings
        f.write("\nfrom simpy_astra import collectives\n\ncollectives.register('simple_ring', SIMPLE_RING)\n")
    (tmp_path / "net.yml").write_text("topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]\n")
    (tmp_path / "s.yaml").write_text(
        f"workload: {STEP}\nnetwork: net.yml\nplugins: [my_algos]\n"
        "system: {preferred-dataset-splits: 4, all-reduce-implementation: [ring]}\n")
    assert main(["run", "s.yaml", "--quiet", "--json-out", "f.json"]) == 0
    capsys.readouterr()
    names = {Path(i["path"]).name: i["sha256"] for i in json.loads(Path("f.json").read_text())["inputs"]}
    assert names["my_algos.py"] == sha256(tmp_path / "my_algos.py")
    assert names["net.yml"] == sha256(tmp_path / "net.yml") and "s.yaml" in names


def test_json_out_names_the_code_that_made_it(tmp_path, capsys):
    """The version stays 0.1.0 while the code under it changes, so a figure's JSON could not say
    which code made it. ``simulator`` carries the SHA-256 of every source file the package runs
    or reads, computed here from the checkout's folders: each file's name in the package, its
    length and its bytes, in name order (setup.cfg installs collectives/, topologies/ and
    workloads/ inside simpy_astra)."""
    out = tmp_path / "f.json"
    assert main(["run", str(DEFAULT), "--quiet", "--json-out", str(out)]) == 0
    capsys.readouterr()
    folders = {"simpy_astra": ROOT / "simpy_astra", **{f"simpy_astra/{name}": ROOT / name
                                                       for name in ("collectives", "topologies", "workloads")}}
    files = {f"{package}/{path.relative_to(folder).as_posix()}": path.read_bytes()
             for package, folder in folders.items() for path in folder.rglob("*")
             if path.suffix in {".py", ".yaml", ".yml", ".json"} and "__pycache__" not in path.parts}
    assert "simpy_astra/cli/run_reports.py" in files and "simpy_astra/collectives/ring.py" in files
    by_hand = hashlib.sha256()
    for name in sorted(files):
        by_hand.update(f"{name}\0{len(files[name])}\0".encode() + files[name])
    assert json.loads(out.read_text())["simulator"] == {"version": version("simpy-astra"),
                                                         "source_sha256": by_hand.hexdigest()}
