"""``convert pytorch``: Chakra's public PyTorch execution trace, converted with mlc-chakra, made
to run here, compared node for node with mlc-chakra's own converter, and simulated.

The conversion tests need the ``.[pytorch]`` extra (mlc-chakra) and skip with the reason
without it; process-group handling and the missing-extra error are checked everywhere.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from simpy_astra.cli.main import main as cli_main
from simpy_astra.convert_pytorch import MISSING_EXTRA, group_ids, process_groups
from simpy_astra.workloads.chakra import read_et

SAMPLE_TGZ = Path(__file__).resolve().parent / "data" / "chakra" / "1.0.2-chakra.0.0.4.tgz"
SAMPLE_NAME = "1.0.2-chakra.0.0.4.json"


def _chakra_problem() -> str | None:
    try:
        import chakra.src.converter.pytorch_converter  # noqa: F401
    except ImportError:
        return "mlc-chakra is not installed (pip install 'simpy-astra[pytorch]')"
    return None


needs_chakra = pytest.mark.skipif(_chakra_problem() is not None, reason=str(_chakra_problem()))


def sample(tmp_path: Path) -> dict:
    with tarfile.open(SAMPLE_TGZ) as tar:
        member = tar.getmember(SAMPLE_NAME)
        return json.load(tar.extractfile(member))


def write(tmp_path: Path, name: str, trace: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(trace))
    return path


def with_gpu_collectives(trace: dict, pg_name: str, groups: list[dict] | None = None) -> dict:
    """The sample as a linked host + device trace would show it: each ``nccl:all_gather`` is a
    GPU kernel (``cat``, an ``ncclDevKernel`` name, a duration) of process group ``pg_name``."""
    out = copy.deepcopy(trace)
    for node in out["nodes"]:
        if node["name"] == "nccl:all_gather":
            node.update(name="ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                        cat="kernel", exclusive_dur=20, inclusive_dur=20, ts=node["id"], stream=7,
                        pg_name=pg_name)
        if groups is not None and "process_group:init" in node["name"]:
            node["inputs"]["values"] = [json.dumps(groups)]
    return out


def mlc_chakra_reference(trace_json: Path, out: Path) -> list:
    from chakra.src.converter.pytorch_converter import PyTorchConverter

    PyTorchConverter().convert(str(trace_json), str(out), False)
    return read_et(str(out))


def fields(node, renamed: bool = False) -> tuple:
    """What a node is; ``renamed``: without the group names our converter renumbers."""
    attrs = {k: v for k, v in node.attrs.items() if not (renamed and k == "pg_name")}
    inputs = node.inputs_values if not (renamed and node.type == 1) else None  # METADATA: the pg list
    return node.id, node.name, node.type, node.deps, node.duration_micros, inputs, attrs


def simulate(prefix: Path, tmp_path: Path, npus: int, groups: Path | None = None) -> dict:
    scenario = {
        "workload": str(prefix),
        "system": {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10,
                   "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": 50,
                   "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
                   "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]},
        "network": {"topology": ["Ring"], "npus_count": [npus], "bandwidth": [50.0], "latency": [500.0]},
    }
    if groups is not None:
        scenario["comm_groups"] = str(groups)
    path = tmp_path / "scenario.yaml"
    path.write_text(json.dumps(scenario))  # JSON is YAML
    out = tmp_path / "figures.json"
    assert cli_main(["run", str(path), "--quiet", "--json-out", str(out)]) == 0
    return json.loads(out.read_text())["npus"]


# ---------------------------------------------------------------- no mlc-chakra needed
def test_process_groups_of_the_sample():
    groups = process_groups(sample(Path()))
    assert [(g["pg_name"], g["ranks"], g["group_size"]) for g in groups] == [("0", [], 2)]
    assert group_ids(groups) == ({"0": 0}, {})  # the world group: pg 0, all NPUs, no JSON entry


def test_group_ids_keep_numbers_and_number_names():
    groups = [{"pg_name": "0", "ranks": []}, {"pg_name": "3", "ranks": [0, 1]},
              {"pg_name": "tp", "ranks": [2, 3]}, {"pg_name": "dp", "ranks": [0, 2]}]
    assert group_ids(groups) == ({"0": 0, "3": 3, "tp": 1, "dp": 2}, {3: [0, 1], 1: [2, 3], 2: [0, 2]})


def test_missing_extra_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "chakra.src.converter.pytorch_converter", None)
    host = write(tmp_path, "host.json", sample(tmp_path))
    assert cli_main(["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {MISSING_EXTRA}"


# ---------------------------------------------------------------- with mlc-chakra
@needs_chakra
def test_sample_converts_like_mlc_chakra_node_for_node_and_simulates(tmp_path):
    host = write(tmp_path, SAMPLE_NAME, sample(tmp_path))
    assert cli_main(["convert", "pytorch", "--host", str(host), "--rank", "0",
                     "--output", str(tmp_path / "pt")]) == 0
    meta, ours = read_et(str(tmp_path / "pt.0.et"))
    ref_meta, ref = mlc_chakra_reference(host, tmp_path / "ref.et")
    assert meta == ref_meta and len(ours) == len(ref) == 262
    assert [fields(n) for n in ours] == [fields(n) for n in ref]
    assert (tmp_path / "pt.0.et").read_bytes() == (tmp_path / "ref.et").read_bytes()
    assert not (tmp_path / "pt.json").exists()  # only the world group
    # the trace is rank 0 of two running the same program: rank 1 runs the same ET
    shutil.copyfile(tmp_path / "pt.0.et", tmp_path / "pt.1.et")
    npus = simulate(tmp_path / "pt", tmp_path, 2)
    assert set(npus) == {"0", "1"} and all(n["finished_cycles"] > 0 for n in npus.values())


@needs_chakra
def test_collectives_and_named_groups_run_here(tmp_path):
    """The sample with its all-gathers as GPU kernels of a process group named 'tp' on ranks
    [0, 1]: our ETs carry pg_name '1' and PREFIX.json {"1": [0, 1]}; otherwise mlc-chakra's nodes."""
    groups = [{"pg_name": "0", "ranks": [], "group_size": 2}, {"pg_name": "tp", "ranks": [0, 1], "group_size": 2}]
    trace = with_gpu_collectives(sample(tmp_path), "tp", groups)
    folder = tmp_path / "traces"
    folder.mkdir()
    write(folder, "rank0.json", trace)
    write(folder, "rank1.json", trace)
    assert cli_main(["convert", "pytorch", "--host", str(folder), "--output", str(tmp_path / "pt")]) == 0
    assert json.loads((tmp_path / "pt.json").read_text()) == {"1": [0, 1]}
    _, ours = read_et(str(tmp_path / "pt.1.et"))
    _, ref = mlc_chakra_reference(folder / "rank1.json", tmp_path / "ref.et")
    assert [fields(n, renamed=True) for n in ours] == [fields(n, renamed=True) for n in ref]
    pg_list = next(n for n in ours if n.type == 1).inputs_values
    assert '"pg_name": "1"' in pg_list and '"tp"' not in pg_list
    colls = [n for n in ours if n.type == 7]  # COMM_COLL_NODE
    assert len(colls) == 10
    assert {n.attrs["pg_name"][1] for n in colls} == {"1"}
    assert {n.attrs["pg_name"][1] for n in ref if n.type == 7} == {"tp"}
    npus = simulate(tmp_path / "pt", tmp_path, 2, tmp_path / "pt.json")
    assert all(n["comm_time"] > 0 for n in npus.values())


@needs_chakra
def test_device_linking_without_et_replay_is_a_one_line_error(tmp_path, capsys):
    try:
        import et_replay  # noqa: F401
        pytest.skip("et_replay is installed, so linking would run")
    except ImportError:
        pass
    host = write(tmp_path, "host.json", sample(tmp_path))
    device = write(tmp_path, "kineto.json", {"traceEvents": []})
    assert cli_main(["convert", "pytorch", "--host", str(host), "--device", str(device),
                     "--output", str(tmp_path / "pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --device: linking needs PARAM's et_replay") and "\n" not in err
