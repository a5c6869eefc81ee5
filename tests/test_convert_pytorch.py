"""``convert pytorch`` on Chakra's public PyTorch execution trace: its 10 all-gathers become
collective nodes of the recorded sizes and it simulates; mlc-chakra is compared where it runs.

The mlc-chakra tests need the ``.[pytorch]`` extra and skip with the reason without it; the
host-trace conversion, process groups and linking are checked everywhere.
"""

from __future__ import annotations

import copy
import csv
import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from simpy_astra.cli.main import main as cli_main
from simpy_astra.workloads.chakra import read_et
from simpy_astra.workloads.pytorch.host_trace import group_ids, process_groups

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


def simulate(prefix: Path, tmp_path: Path, npus: int, groups: Path | None = None,
             csv_out: Path | None = None) -> dict:
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
    extra = ["--csv-out", str(csv_out)] if csv_out is not None else []
    assert cli_main(["run", str(path), "--quiet", "--json-out", str(out), *extra]) == 0
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


def test_host_only_conversion_needs_no_mlc_chakra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "chakra.src.converter.pytorch_converter", None)
    host = write(tmp_path, "host.json", sample(tmp_path))
    assert cli_main(["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")]) == 0
    assert sum(n.type == 7 for n in read_et(str(tmp_path / "pt.0.et"))[1]) == 10


# counted by hand in the sample: the thread's 91 direct callees are the process-group list, 70
# operators, 10 c10d::allgather_ and 10 record_param_comms 'wait'; each all-gather's
# record_param_comms (these ids) sends one float tensor ([.., numel 1, 4 bytes, ..]): 4 B
SAMPLE_ALL_GATHERS = [30, 61, 90, 119, 147, 175, 203, 231, 259, 287]


def test_sample_converts_with_its_ten_all_gathers_and_simulates(tmp_path):
    host = write(tmp_path, SAMPLE_NAME, sample(tmp_path))
    assert cli_main(["convert", "pytorch", "--host", str(host), "--rank", "0",
                     "--output", str(tmp_path / "pt")]) == 0
    _, nodes = read_et(str(tmp_path / "pt.0.et"))
    assert len(nodes) == 81
    assert [n.type for n in nodes].count(4) == 70 and [n.type for n in nodes].count(1) == 1
    colls = [n for n in nodes if n.type == 7]  # COMM_COLL_NODE
    assert [n.id for n in colls] == SAMPLE_ALL_GATHERS
    assert {(n.attrs["comm_type"][1], n.attrs["comm_size"][1], n.attrs["pg_name"][1]) for n in colls} == \
        {(2, 4, "0")}  # ALL_GATHER of 4 B on the world group
    assert not (tmp_path / "pt.json").exists()  # only the world group
    # the trace is rank 0 of two running the same program: rank 1 runs the same ET
    shutil.copyfile(tmp_path / "pt.0.et", tmp_path / "pt.1.et")
    npus = simulate(tmp_path / "pt", tmp_path, 2, csv_out=tmp_path / "csv")
    assert set(npus) == {"0", "1"} and all(n["comm_time"] > 0 for n in npus.values())
    with open(tmp_path / "csv" / "nodes.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["type"] == "COMM_COLL"]
    assert len(rows) == 20 and {r["name"] for r in rows} == {"nccl:all_gather 4 B"}
    assert sorted({int(r["node_id"]) for r in rows}) == SAMPLE_ALL_GATHERS


# ---------------------------------------------------------------- with mlc-chakra
@needs_chakra
def test_mlc_chakra_alone_finds_no_collective_in_the_sample(tmp_path):
    """Why the host-only path is ours: mlc-chakra writes 262 nodes and no communication; our
    compute nodes are among its nodes, same id and name."""
    host = write(tmp_path, SAMPLE_NAME, sample(tmp_path))
    _, ref = mlc_chakra_reference(host, tmp_path / "ref.et")
    assert len(ref) == 262 and not [n for n in ref if n.type in (5, 6, 7)]
    assert cli_main(["convert", "pytorch", "--host", str(host), "--rank", "0",
                     "--output", str(tmp_path / "pt")]) == 0
    theirs = {n.id: n.name for n in ref}
    ours = [n for n in read_et(str(tmp_path / "pt.0.et"))[1] if n.type in (1, 4)]
    assert len(ours) == 71 and all(theirs.get(n.id) == n.name for n in ours)


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


def test_device_trace_links_without_et_replay(tmp_path):
    """Our linker joins host and Kineto traces, so PARAM's et_replay is not needed: a Kineto
    trace without kernels leaves the host-trace conversion as it was."""
    host = write(tmp_path, "host.json", sample(tmp_path))
    device = write(tmp_path, "kineto.json", {"traceEvents": []})
    assert cli_main(["convert", "pytorch", "--host", str(host), "--device", str(device),
                     "--output", str(tmp_path / "pt")]) == 0
    assert sum(n.type == 7 for n in read_et(str(tmp_path / "pt.0.et"))[1]) == 10
