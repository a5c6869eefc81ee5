"""Microbenchmark generator: the same bytes as ASTRA-sim's generator scripts, and runnable from scenarios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.microbench import size_label, write_microbench
from tests.conftest import REFERENCE

ROOT = Path(__file__).resolve().parents[1]
MICRO = REFERENCE / "workloads" / "microbench"


def _sets() -> list[str]:
    return sorted(f"{p.parent.name}/{p.name}" for p in MICRO.glob("*/*")) if MICRO.is_dir() else ["none/1npus_1MB"]


@pytest.mark.parametrize("set_name", _sets())
def test_byte_identical_to_reference_microbenchmarks(set_name: str, reference_dir: Path, tmp_path: Path) -> None:
    collective, folder = set_name.split("/")
    npus, size = folder.split("_")
    num_npus = int(npus.removesuffix("npus"))
    size_bytes = int(size[:-2]) * (1024 if size.endswith("KB") else 1024 * 1024)
    write_microbench(collective, size_bytes, num_npus, str(tmp_path / collective))
    for rank in range(num_npus):
        ref = MICRO / collective / folder / f"{collective}.{rank}.et"
        assert (tmp_path / f"{collective}.{rank}.et").read_bytes() == ref.read_bytes(), ref


def test_size_labels() -> None:
    # binary units as in ASTRA-sim's folder names; sizes that are not whole KiB stay in bytes
    assert [size_label(b) for b in (65536, 1048576, 64 << 20, 1536, 1000)] == \
           ["64KB", "1MB", "64MB", "1536B", "1000B"]


def test_cli_writes_one_file_per_npu(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "generate", "microbench", "--collective",
                           "all_to_all", "--size", "4096", "--num-npus", "4", "--output",
                           str(tmp_path / "a2a" / "a2a")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "a2a").iterdir()) == [f"a2a.{r}.et" for r in range(4)]


def test_scenario_generate_microbench_gives_reference_figures(reference_dir: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    case = json.loads((reference_dir / "cases" / "grid_ca_all_reduce_1MB_fc8_direct.json").read_text())
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    scenario = {
        "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 8},
        "system": str(reference_dir / case["system"]),
        "network": str(reference_dir / case["network"]),
        "backend": case["backend"],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    reports = Simulation(load_scenario(str(path))).run()
    assert {str(r.npu_id): r.finished_cycles for r in reports} == \
           {npu: figures["finished_cycles"] for npu, figures in case["expected"].items()}


@pytest.mark.parametrize("params, match", [
    ({"collective": "broadcast", "size": 8, "num_npus": 2}, "'broadcast' is not one of"),
    ({"collective": "all_reduce", "size": "1MB", "num_npus": 2}, r"workload\.size: must be an integer \(got '1MB'\)"),
    ({"collective": "all_reduce", "size": 8, "num_npus": 2, "dims": 1}, r"does not take \['dims'\]"),
])
def test_bad_generator_parameters(params: dict, match: str, tmp_path: Path, monkeypatch) -> None:
    from simpy_astra.workloads.generated import materialise

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(InputError, match=match):
        materialise({"generate": "microbench", **params})


# ------------------------------------------------------------------ send_recv: one transfer
GIB = 1 << 30


def _send_recv_times(tmp_path: Path, network: dict, backend: str, src: int, dst: int, size: int) -> dict[int, int]:
    """Finish time per NPU of ``generate microbench --collective send_recv`` run on ``network``."""
    from tests.sim_helpers import BASE_SYSTEM

    prefix = tmp_path / "p2p" / "p2p"
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "generate", "microbench", "--collective",
                           "send_recv", "--src", str(src), "--dst", str(dst), "--size", str(size),
                           "--num-npus", str(8), "--output", str(prefix)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {prefix}.{{0..7}}.et ({src} -> {dst}, {size} bytes)"
    path = tmp_path / f"{backend}.yaml"
    path.write_text(yaml.safe_dump({"workload": str(prefix), "system": BASE_SYSTEM, "network": network,
                                    "backend": backend}))
    return {r.npu_id: r.finished_cycles for r in Simulation(load_scenario(str(path))).run()}


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_send_recv_times_one_transfer_through_a_switch(tmp_path: Path, backend: str) -> None:
    size, bw, lat = 3_000_000, 25.0, 700.0
    network = {"topology": ["Switch"], "npus_count": [8], "bandwidth": [bw], "latency": [lat]}
    times = _send_recv_times(tmp_path, network, backend, 5, 2, size)
    ser = size / (bw * GIB / 1e9)  # bytes / (bytes per ns)
    # two links (up to the switch, down to NPU 2): unaware pays the wire once, aware per link
    expected = int(2 * lat + ser) if backend == "congestion_unaware" else 2 * int(lat + ser)
    assert times[5] == times[2] == expected
    assert all(times[n] == 0 for n in range(8) if n not in (2, 5))  # the others idle


@pytest.mark.parametrize("params, match", [
    ({"collective": "send_recv", "size": 8, "num_npus": 4, "src": 0}, r"workload\.dst: workload\.collective send_recv needs"),
    ({"collective": "send_recv", "size": 8, "num_npus": 4, "src": 0, "dst": 4}, r"workload\.dst: must be an NPU from 0 to 3"),
    ({"collective": "send_recv", "size": 8, "num_npus": 4, "src": 1, "dst": 1}, r"workload\.dst: must differ from workload\.src"),
    ({"collective": "all_reduce", "size": 8, "num_npus": 4, "src": 1}, r"workload\.src: only workload\.collective send_recv"),
])
def test_bad_send_recv_parameters(params: dict, match: str, tmp_path: Path, monkeypatch) -> None:
    from simpy_astra.workloads.generated import materialise

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(InputError, match=match):
        materialise({"generate": "microbench", **params})


def test_a_value_that_looks_like_a_flag_is_quoted_as_given(tmp_path: Path, monkeypatch) -> None:
    """A scenario's error names the parameter as its field from the error's parts: the value
    the user wrote is quoted as written, not taken for a flag and renamed ('workload.all_reduce'
    when the generator's text was taken apart)."""
    from simpy_astra.workloads.generated import materialise

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(InputError) as caught:
        materialise({"generate": "microbench", "collective": "--all-reduce", "size": 8, "num_npus": 2},
                    where="s.yaml: workload")
    assert caught.value.message.startswith("s.yaml: workload.collective: '--all-reduce' is not one of all_reduce")
