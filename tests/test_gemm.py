"""``generate gemm``: the tutorial's m,n,k layers timed by SCALE-Sim.

Shapes, collectives and the text format are checked everywhere; the SCALE-Sim tests (one
layer against SCALE-Sim run directly, the DLRM MLP scenario end to end, a sweep over array
sizes) need the ``.[gemm]`` extra and skip with the reason without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main as cli_main
from simpy_astra.errors import InputError
from simpy_astra.workloads import gemm, gemm_layers, scalesim_timing

ROOT = Path(__file__).resolve().parents[1]
DLRM_CSV = ROOT / "scenarios" / "gemm" / "dlrm_mlp.csv"
DLRM_SCENARIO = ROOT / "scenarios" / "gemm_dlrm_mlp.yaml"
ONE_LAYER = "Layer,m,n,k\nMLP_Bottom_0,1024,128,512\n"  # the tutorial's mnk_inputs/test.csv


def _scalesim_problem() -> str | None:
    try:
        import numpy
        import scalesim  # noqa: F401
    except ImportError:
        return "SCALE-Sim is not installed (pip install 'simpy-astra[gemm]')"
    if tuple(int(x) for x in numpy.__version__.split(".")[:2]) >= (2, 4):
        return f"scalesim 3.0 fails under NumPy {numpy.__version__} (the [gemm] extra pins numpy<2.4)"
    return None


needs_scalesim = pytest.mark.skipif(_scalesim_problem() is not None, reason=str(_scalesim_problem()))


@pytest.fixture(scope="module")
def scalesim_cache(tmp_path_factory):
    """One SCALE-Sim cycle cache for the module: later tests reuse earlier tests' GEMMs."""
    old = os.environ.get("SIMPY_ASTRA_CACHE")
    os.environ["SIMPY_ASTRA_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield os.environ["SIMPY_ASTRA_CACHE"]
    if old is None:
        del os.environ["SIMPY_ASTRA_CACHE"]
    else:
        os.environ["SIMPY_ASTRA_CACHE"] = old


# ---------------------------------------------------------------- no SCALE-Sim needed
def test_reads_the_tutorial_dlrm_mlp():
    layers = gemm_layers.read_mnk(str(DLRM_CSV))
    assert [(x.name, x.m, x.n, x.k) for x in layers][:2] == [("MLP_Bottom_0", 1024, 128, 512),
                                                           ("MLP_Bottom_1", 1024, 512, 512)]
    assert len(layers) == 7


@pytest.mark.parametrize("strategy, fwd, comms", [
    # P = 16 NPUs, Q = 2 packages, R = 8 per package, 2-byte elements; layer 1024 x 128 x 512
    ("DATA", (64, 128, 512), [("NONE", 0), ("NONE", 0), ("ALLREDUCE", 128 * 512 * 2)]),
    ("MODEL", (1024, 8, 512), [("ALLGATHER", 1024 * 128 * 2 // 16), ("REDUCESCATTER", 1024 * 512 * 2),
                               ("NONE", 0)]),
    ("HYBRID_DATA_MODEL", (512, 16, 512), [("ALLGATHER", 16384), ("REDUCESCATTER", 1024 * 512 * 2 // 2),
                                           ("ALLREDUCE", 512 * 128 * 2 // 8)]),
    ("HYBRID_MODEL_DATA", (128, 64, 512), [("ALLGATHER", 16384), ("REDUCESCATTER", 1024 * 512 * 2 // 8),
                                           ("ALLREDUCE", 128 * 512 * 2 // 2)]),
])
def test_shapes_and_collectives_follow_the_tutorial_generator(strategy, fwd, comms):
    layer = gemm_layers.GemmLayer("L", 1024, 128, 512)
    shapes = gemm_layers.pass_gemms(layer, strategy, 16, 2)
    m, n, k = fwd
    assert shapes == {"fwd": (m, n, k), "ig": (m, k, n), "wg": (k, n, m)}  # (M, N, K) each
    got = gemm_layers.collectives(layer, strategy, 16, 2, 2)
    assert [got[p] for p in gemm_layers.PASSES] == comms


def test_et_compute_times_are_cycles_over_the_clock_in_whole_microseconds():
    assert [gemm.cycles_to_micros(c, 1.0) for c in (10111, 4847, 400, 1500)] == [10, 5, 1, 2]
    assert gemm.cycles_to_micros(10111, 0.5) == 20


def test_text_format_is_the_generators():
    layer = gemm_layers.GemmLayer("MLP_Bottom_0", 1024, 128, 512)
    w = gemm.GemmWorkload("DATA", (layer,), ({"fwd": 10, "ig": 11, "wg": 12},),
                          (gemm_layers.collectives(layer, "DATA", 16, 1, 2),))
    assert w.text() == "DATA\n1\nMLP_Bottom_0\t-1\t10\tNONE\t0\t11\tNONE\t0\t12\tALLREDUCE\t131072\t100\tDATA"


@pytest.mark.parametrize("text, problem", [
    ("name,a,b,c\nL,1,2,3\n", "header"),
    ("Layer,m,n,k\nL,1,x,3\n", "integers"),
    ("Layer,m,n,k\nL,1,0,3\n", ">= 1"),
    ("Layer,m,n,k\n", "no layers"),
])
def test_bad_mnk_files_are_one_line_errors(tmp_path, text, problem):
    path = tmp_path / "l.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=problem):
        gemm_layers.read_mnk(str(path))


def test_bad_flags_are_one_line_errors():
    with pytest.raises(InputError, match="--array"):
        scalesim_timing.ArraySpec.parse("32by32")
    with pytest.raises(InputError, match="--sram"):
        scalesim_timing.ArraySpec.parse("32x32", sram="1,2")
    with pytest.raises(InputError, match="empty shard"):
        gemm_layers.pass_gemms(gemm_layers.GemmLayer("L", 8, 4, 4), "MODEL", 16, 1)


def test_missing_extra_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "scalesim", None)  # import scalesim now fails
    mnk = tmp_path / "l.csv"
    mnk.write_text(ONE_LAYER)
    code = cli_main(["generate", "gemm", "--mnk", str(mnk), "--parallel", "DATA", "--num-npus", "4",
                     "--output", str(tmp_path / "w")])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"error: {scalesim_timing.MISSING_EXTRA}"


# ---------------------------------------------------------------- with SCALE-Sim
@needs_scalesim
def test_one_layer_cycles_equal_scalesim_run_directly(tmp_path, scalesim_cache):
    """MLP_Bottom_0 on 16 data-parallel NPUs, 32x32 ws: our three compute times are the cycles
    SCALE-Sim prints when given the tutorial generator's own (convolution-form) topology rows."""
    mnk = tmp_path / "test.csv"
    mnk.write_text(ONE_LAYER)
    assert cli_main(["generate", "gemm", "--mnk", str(mnk), "--parallel", "DATA", "--num-npus", "16",
                     "--array", "32x32", "--dataflow", "ws", "--format", "text", "--output",
                     str(tmp_path / "ours")]) == 0
    cols = (tmp_path / "ours.txt").read_text().splitlines()[2].split("\t")
    ours = [int(cols[2]), int(cols[5]), int(cols[8])]

    from scalesim.scale_sim import scalesim

    cfg = tmp_path / "google32.cfg"
    cfg.write_text(scalesim_timing.ArraySpec.parse("32x32", "ws").config_text())
    topo = tmp_path / "topo.csv"  # name, ifmap h, ifmap w, filter h, filter w, channels, filters, stride
    topo.write_text("Layer name,ifmap height,ifmap width,filter height,filter width,channels,num filter,strides,\n"
                    "fwd,64,512,1,512,1,128,1,\n"      # m/P x k . k x n
                    "inp_grad,64,128,1,128,1,512,1,\n"  # m/P x n . n x k
                    "weight_grad,512,64,1,64,1,128,1,\n")  # k x m/P . m/P x n
    layout = tmp_path / "layout.csv"
    layout.write_text(scalesim_timing.LAYOUT_HEADER)
    sim = scalesim(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topo), layout=str(layout))
    sim.run_scale(top_path=str(tmp_path / "direct"))
    direct = scalesim_timing.read_compute_report(str(tmp_path / "direct" / "simpy_astra" / "COMPUTE_REPORT.csv"))
    assert ours == direct
    assert ours[0] == 10111  # SCALE-Sim 3.0.0's count for this layer


@needs_scalesim
def test_dlrm_mlp_scenario_runs_end_to_end(tmp_path, scalesim_cache):
    doc = yaml.safe_load(DLRM_SCENARIO.read_text())
    doc["workload"]["mnk"] = str(DLRM_CSV)
    doc["workload"]["array"] = "128x128"  # the shipped 32x32 takes SCALE-Sim about a minute
    scenario = tmp_path / "dlrm.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    out = tmp_path / "f.json"
    assert cli_main(["run", str(scenario), "--quiet", "--json-out", str(out)]) == 0
    npus = json.loads(out.read_text())["npus"]
    assert len(npus) == 16
    # every NPU computes each layer's forward, input- and weight-gradient GEMM for SCALE-Sim's cycles
    from simpy_astra.workloads.generated import materialise, resolve_paths

    prefix = materialise(resolve_paths(doc["workload"], str(tmp_path))).prefix
    lines = Path(prefix + ".txt").read_text().splitlines()[2:]
    cols = [line.split("\t") for line in lines]
    # cycles at 1 GHz in whole microseconds; like Chakra, the first layer has no input gradient
    us = [gemm.cycles_to_micros(int(c[i]), 1.0) for n, c in enumerate(cols) for i in (2, 5, 8) if n or i != 5]
    compute = 1000 * sum(us)
    assert all(n["gpu_time"] == compute for n in npus.values())
    assert all(n["finished_cycles"] > compute for n in npus.values())  # plus the all-reduces


@needs_scalesim
def test_sweep_axis_over_array_sizes(tmp_path, scalesim_cache):
    pytest.importorskip("simpleeval")
    from simpy_astra.cli.sweep import main as sweep_main

    mnk = tmp_path / "test.csv"
    mnk.write_text(ONE_LAYER)
    base = yaml.safe_load(DLRM_SCENARIO.read_text())
    base["workload"]["mnk"] = "test.csv"  # relative to the sweep's folder
    sweep = tmp_path / "arrays.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": {"workload.array": ["32x32", "64x64"]}}))
    out = tmp_path / "out"
    assert sweep_main([str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    import csv

    with open(out / "results.csv", newline="") as f:
        rows = {r["workload.array"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"32x32", "64x64"} and all(r["status"] == "ok" for r in rows.values())
    # forward 10111 and weight gradient 4847 cycles at 1 GHz (a first layer has no input gradient)
    assert int(rows["32x32"]["compute_ns"]) == (10 + 5) * 1000
    assert int(rows["64x64"]["compute_ns"]) < int(rows["32x32"]["compute_ns"])
