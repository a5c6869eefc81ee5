"""Extensions written from the docs alone, eighth round: the real-job side. A researcher's own
cluster preset (another node size, NICs, leaves and oversubscription), a GPU of their own under
a Megatron-LM job, a sweep over their presets and Megatron arguments under constraints on
memory and MFU, a Python script comparing two layouts, a report over ``--json-out``'s training
block, NCCL's ``nccl_algo``/``nvls`` knobs, calibration on an nccl-tests log written here and
carried into a preset, and a link model of one's own on a preset's network. Each is checked
against a figure derived here from what docs/megatron.md, docs/sweeps.md and
docs/calibration.md state (the routes' costs, NCCL's ring and tree bandwidths, Megatron's FLOP
count, Korthikanti et al.'s memory), never against the tool's own output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.researcher_folder import researcher_folder
from tests.scenario_files import error_lines, megatron_scenario, megatron_sweep, write_yaml

GIB = 2**30
MIB = 2**20

#: the researcher's own node: 4 GPUs on a switch of 100 GiB/s, 2 us a side; 800 Gb/s of NICs
#: a node at full efficiency (one NIC a GPU: a rail of 800 / 8 / 4 = 25 GB/s), 4 us a side; a
#: leaf per node and a 2:1 spine
NODE = {"gpus": 4, "nvls": False, "nvlink_gib_s": 100, "nvlink_latency_ns": 2000, "inter_node_gbit_s": 800,
        "inter_node_efficiency": 1.0, "inter_node_latency_ns": 4000, "nodes_per_leaf": 1, "oversubscription": 2,
        "nccl_latency_scale": 1, "nccl_launch_us": 5}
#: the researcher's own GPU: an A100's figures under a name of their own
GPU = {"name": "MyGPU-1", "sms": 108, "tensor_tflops": 312, "fp8_tflops": 0, "hbm_gb_s": 2039, "hbm_gib": 80,
       "l2_gb_s": 7219, "tensor_efficiency": 0.75, "memory_efficiency": 0.65, "fp8_efficiency": 0,
       "attention_efficiency": 0.55, "launch_us": 3.0}
RAIL_B_S = 800e9 / 8 / 4  # one GPU's NIC, bytes/s
NVLINK_B_S = 100 * GIB


def _preset(folder: Path, name: str = "my-cluster.yaml", gpu: dict | None = None, **node) -> str:
    """The researcher's preset file (docs/megatron.md: copy one, edit it, name it as a path)."""
    write_yaml(folder, {"gpu": {**GPU, **(gpu or {})}, "node": {**NODE, **node}}, name)
    return f"./{name}"


def _microbench(folder: Path, preset: str, gpus: int, name: str = "s.yaml", **fields) -> str:
    """A scenario of one microbenchmark on the preset; ``fields`` are the generator's and the cluster's."""
    cluster = {k: fields.pop(k) for k in list(fields) if k in ("nccl_algo", "nvls", "oversubscription",
                                                                "nodes_per_leaf")}
    return write_yaml(folder, {"workload": {"generate": "microbench", "num_npus": gpus, **fields},
                               "cluster": {"preset": preset, "gpus": gpus, **cluster}}, name)


def _json(folder: Path, scenario: str, *flags: str) -> dict:
    out = folder / "figures.json"
    assert main(["run", scenario, "--quiet", "--json-out", str(out), *flags]) == 0
    return json.loads(out.read_text())


def _step_ns(folder: Path, scenario: str, *flags: str) -> int:
    return _json(folder, scenario, *flags)["iteration_time_ns"]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    with researcher_folder(tmp_path, monkeypatch, {}) as here:
        yield here


# ---------------------------------------------------------------- a preset of one's own: routes


@pytest.mark.parametrize(("src", "dst", "leaves", "expected_ns"), [
    # same node: through the switch, 2 x nvlink_latency_ns + S / nvlink
    (0, 1, 1, 2 * 2000 + MIB / NVLINK_B_S * 1e9),
    # other node, same rail, one leaf: 2 x inter_node_latency_ns + S / rail
    (1, 5, 2, 2 * 4000 + MIB / RAIL_B_S * 1e9),
    # other node, other rail (PXN), one leaf: both latencies at the rail's bandwidth
    (1, 6, 2, 2 * 2000 + 2 * 4000 + MIB / RAIL_B_S * 1e9),
    # PXN across the 2:1 spine (a leaf a node): the rail's bandwidth halved
    (1, 6, 1, 2 * 2000 + 2 * 4000 + MIB / (RAIL_B_S / 2) * 1e9),
])
def test_a_send_on_ones_own_four_gpu_node_preset_takes_its_route(folder, src, dst, leaves, expected_ns):
    preset = _preset(folder)
    scenario = _microbench(folder, preset, 8, collective="send_recv", size=MIB, src=src, dst=dst,
                           nodes_per_leaf=leaves)
    assert _step_ns(folder, scenario) == pytest.approx(expected_ns, abs=2)


@pytest.mark.parametrize(("nics_gbit_s", "rail_b_s"), [(None, 1600e9 / 8 / 4 * 0.94), (800, 800e9 / 8 / 4 * 0.94)])
def test_nodes_of_four_on_a_shipped_preset_keep_its_nic_total_unless_told(folder, nics_gbit_s, rail_b_s):
    """`gpus_per_node: 4` on dgx-a100-80gb: each rail is the node's 1,600 Gb/s over 4 GPUs
    (twice the preset's) unless the scenario gives the smaller node's NICs, 4 x 200 Gb/s."""
    fields = {"gpus_per_node": 4} | ({"inter_node_gbit_s": nics_gbit_s} if nics_gbit_s else {})
    scenario = write_yaml(folder, {"workload": {"generate": "microbench", "num_npus": 8, "collective": "send_recv",
                                                "size": MIB, "src": 0, "dst": 4},
                                   "cluster": {"preset": "dgx-a100-80gb", "gpus": 8, **fields}})
    assert _step_ns(folder, scenario) == pytest.approx(2 * 5000 + MIB / rail_b_s * 1e9, abs=2)


def test_a_ring_across_an_oversubscribed_spine_takes_its_nics_at_that_share(folder):
    """8 GPUs on two nodes of 4 under two leaves, NCCL's ring forced: its bandwidth is n / (2 (n -
    1)) x min(NVLink, k rails / oversubscription), k = 4 members a node; 1 GiB's bandwidth term
    doubles from 1:1 to 2:1 and the latency (NCCL's Simple ring across nodes) stays."""
    preset = _preset(folder)
    times = {}
    for ratio in (1, 2):
        scenario = _microbench(folder, preset, 8, collective="all_reduce", size=GIB, nccl_algo="ring",
                               oversubscription=ratio)
        times[ratio] = _step_ns(folder, scenario)
    for ratio, t_ns in times.items():
        bandwidth_b_s = min(NVLINK_B_S, 4 * RAIL_B_S / ratio)
        floor_ns = 2 * 7 / 8 * GIB / bandwidth_b_s * 1e9
        assert floor_ns <= t_ns <= floor_ns + 200_000
    assert times[2] - times[1] == pytest.approx(2 * 7 / 8 * GIB / (4 * RAIL_B_S) * 1e9, abs=2)


def test_a_preset_of_ones_own_that_leaves_out_a_needed_node_key_is_told_which_are_needed(folder, capsys):
    """A node may leave out its leaves, spine and NCCL fits (docs/megatron.md): the error for a
    needed key lists the needed ones, not every key a node may have."""
    write_yaml(folder, {"gpu": GPU, "node": {k: v for k, v in NODE.items() if k != "inter_node_latency_ns"}},
               "short.yaml")
    scenario = _microbench(folder, "./short.yaml", 4, collective="all_reduce", size=MIB)
    [line] = error_lines(capsys, ["run", scenario])
    assert "short.yaml: node: missing inter_node_latency_ns" in line
    assert "inter_node_efficiency" in line and "nccl_ring_efficiency" not in line
    assert "nvls, nodes_per_leaf" in line  # nvls may be left out too (the GPU's name decides it)


def test_generate_megatron_takes_ones_own_preset_by_its_path_as_its_help_says(folder, capsys):
    with pytest.raises(SystemExit):
        main(["generate", "megatron", "--help"])
    assert "or the path of your own" in " ".join(capsys.readouterr().out.split())
    preset = _preset(folder, gpus=8)
    assert main(["generate", "megatron", "--gpus", "8", "--preset", preset, "--output", "out/gpt", "--",
                 *GPT.split()]) == 0
    assert sorted(p.name for p in (folder / "out").glob("gpt.*.et")) == [f"gpt.{r}.et" for r in range(8)]


@pytest.mark.parametrize(("scenario_key", "named", "fix"), [
    (False, "cluster.preset: ./my-cluster.yaml: node.oversubscription:", "cluster: {oversubscription: 1} for this run"),
    (True, "cluster.oversubscription:", "leave out oversubscription"),
])
def test_a_presets_own_spine_on_the_packet_backend_is_named_where_it_was_written(folder, capsys, scenario_key,
                                                                                named, fix):
    """The packet backend plays the rails as a full fat tree: a 2:1 spine is refused, named in
    the preset's file when the preset says it (it was named as the scenario's key, which the
    scenario did not have)."""
    fields = {"oversubscription": 2} if scenario_key else {}
    scenario = _microbench(folder, _preset(folder), 8, collective="send_recv", size=MIB, src=1, dst=6, **fields)
    [line] = error_lines(capsys, ["run", scenario, "--network-backend", "packet"])
    assert f"s.yaml: {named} a spine of 2:1" in line and fix in line


# ---------------------------------------------------------------- NCCL's knobs on one's own node


def test_forced_ring_and_tree_on_one_node_of_ones_own_take_their_bandwidths(folder):
    """One node of 4: the ring runs at n / (2 (n - 1)) x NVLink (1 GiB: 15 ms exactly on 100
    GiB/s), the tree (a chain in a node) at 0.92 / 2 x NVLink; each adds only its latency."""
    preset = _preset(folder)
    for algo, bandwidth_b_s in (("ring", 4 / 6 * NVLINK_B_S), ("tree", 0.46 * NVLINK_B_S)):
        scenario = _microbench(folder, preset, 4, collective="all_reduce", size=GIB, nccl_algo=algo)
        floor_ns = GIB / bandwidth_b_s * 1e9
        assert floor_ns <= _step_ns(folder, scenario) <= floor_ns + 60_000, algo


def test_nvls_on_a_node_of_ones_own_named_gpu_runs_nccls_estimate(folder):
    """A GPU of one's own name on NVSwitch-3, said with the node's `nvls: true`: 8 GPUs of a node
    whose NVLink is an H100's 370 GiB/s (397.3 GB/s) run NVLS at NCCL's estimate, 8 x min(40 x
    0.85 x 7/8 x 2, 60) x 8/14 = 272 GB/s (docs/megatron.md; 9 x 40 GB/s within the NVLink)."""
    preset = _preset(folder, gpus=8, nvls=True, nvlink_gib_s=370)
    scenario = _microbench(folder, preset, 8, collective="all_reduce", size=GIB, nccl_algo="nvls")
    floor_ns = GIB / (8 * min(40 * 0.85 * 7 / 8 * 2, 60) * 8 / 14 * 1e9) * 1e9
    assert floor_ns <= _step_ns(folder, scenario) <= floor_ns + 60_000


def test_nvls_forced_on_ones_own_node_without_it_names_the_preset_key(folder, capsys):
    preset = _preset(folder)
    scenario = _microbench(folder, preset, 4, collective="all_reduce", size=MIB, nccl_algo="nvls")
    [line] = error_lines(capsys, ["run", scenario])
    assert "cluster.nccl_algo: nvls needs NVSwitch-3" in line and "my-cluster.yaml: node.nvls is false" in line
    # on nodes that have it, a data-parallel group of one GPU a node (pp 4 in each node of 4 under
    # Megatron's tp-pp-dp order; tp 1, so no get_batch broadcast stops NVLS first) has no NVLS
    tp4 = megatron_scenario(folder, GPT + " --pipeline-model-parallel-size 4 --use-tp-pp-dp-mapping", "tp4.yaml",
                            preset=preset, nccl_algo="nvls", nvls=True)
    [line] = error_lines(capsys, ["run", tp4])
    assert "no nvls for a group of 2 GPUs with one on each of 2 nodes" in line


# ---------------------------------------------------------------- a GPU of one's own under Megatron

#: a GPT of 4 layers (h 2048, 16 heads, s 2048, V 32000) on 8 GPUs, micro-batch 2, batch 16
GPT = ("--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 2 "
       "--global-batch-size 16 --bf16 --vocab-size 32000")


def megatron_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int, layer_passes: int = 3) -> float:
    """Megatron's count (SC'21): 24 B s l h^2 (1 + s/6h) a pass over the layers (three without
    recomputation, four with it) and 6 B s h V for the logits: ``72 B s l h^2 (1 + s/6h + V/12lh)``."""
    return layer_passes * 24 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden)) + 6 * batch * seq * hidden * vocab


def test_ones_own_gpu_sets_mfus_peak_and_the_memory_it_is_held_to(folder):
    """`gpu:` beside the preset: MFU is Megatron's count without recomputation over the step and
    the GPUs' dense peak (here 200 TFLOP/s), and the capacity is the GPU's own 24 GiB."""
    scenario = megatron_scenario(folder, GPT, preset=_preset(folder, gpus=8),
                                 gpu={"name": "MyGPU-2", "tensor_tflops": 200, "hbm_gib": 24})
    training = _json(folder, scenario)["training"]
    seconds = training["iteration_time_ns"] / 1e9
    flops = megatron_flops(16, 2048, 4, 2048, 32000)
    assert training["mfu"] == pytest.approx(flops / (seconds * 8 * 200e12), abs=1e-5)
    assert training["tflops_per_gpu"] == pytest.approx(flops / (seconds * 8) / 1e12, abs=1e-3)
    assert training["tokens_per_s_per_gpu"] == pytest.approx(16 * 2048 / (seconds * 8), abs=1e-3)
    assert training["memory_capacity_gib"] == 24


def test_full_recomputation_counts_a_fourth_pass_in_tflops_and_not_in_mfu(folder):
    args = GPT + " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
    scenario = megatron_scenario(folder, args, preset=_preset(folder, gpus=8))
    training = _json(folder, scenario)["training"]
    seconds = training["iteration_time_ns"] / 1e9
    assert training["tflops_per_gpu"] == pytest.approx(
        megatron_flops(16, 2048, 4, 2048, 32000, layer_passes=4) / (seconds * 8) / 1e12, abs=1e-3)
    assert training["mfu"] == pytest.approx(megatron_flops(16, 2048, 4, 2048, 32000) / (seconds * 8 * 312e12),
                                            abs=1e-5)


def test_halving_ones_gpus_tensor_peak_leaves_its_gemms_above_their_flops_at_that_rate(folder):
    """A GEMM's main loop runs at tensor_tflops x tensor_efficiency at best: the critical GPU's
    compute.gemm is at least its share of the layers' matrix FLOPs at that rate (a lower bound
    by hand), and at half the peak it is longer."""
    gemm_ns = {}
    for peak in (312, 156):
        scenario = megatron_scenario(folder, GPT, preset=_preset(folder, gpus=8), gpu={"tensor_tflops": peak})
        document = _json(folder, scenario)
        critical = max(document["npus"].values(), key=lambda npu: npu["finished_ns"])
        gemm_ns[peak] = critical["breakdown_ns"]["compute.gemm"]
        # one replica (dp 8: 2 sequences of 2,048 tokens): 3 passes of 24 s l h^2 a sequence
        # over the layers' GEMMs, plus the logits' 6 s h V
        flops = 2 * (3 * 24 * 2048 * 4 * 2048**2 + 6 * 2048 * 2048 * 32000)
        assert gemm_ns[peak] >= flops / (peak * 1e12 * 0.75) * 1e9
    assert gemm_ns[156] > 1.5 * gemm_ns[312]


def test_fp8_on_ones_own_gpu_is_held_to_its_fp8_peak_and_keeps_each_weights_two_copies(folder, capsys):
    """`--fp8-format` needs `gpu.fp8_tflops` above 0 (refused on the A100 figures); given 624
    TFLOP/s, MFU is the count over that peak, and the FP8 buffers are each layer matrix's FP8
    copy and its transpose, 2 x 12 h^2 bytes a layer (docs/megatron.md, *Memory*)."""
    args = GPT + " --fp8-format hybrid"
    refused = megatron_scenario(folder, args, "a100.yaml", preset=_preset(folder, gpus=8))
    [line] = error_lines(capsys, ["run", refused])
    assert "--fp8-format needs a GPU with FP8" in line and "gpu.fp8_tflops is 0" in line
    scenario = megatron_scenario(folder, args, preset=_preset(folder, gpus=8),
                                 gpu={"fp8_tflops": 624, "fp8_efficiency": 0.6})
    training = _json(folder, scenario)["training"]
    seconds = training["iteration_time_ns"] / 1e9
    assert training["mfu"] == pytest.approx(megatron_flops(16, 2048, 4, 2048, 32000) / (seconds * 8 * 624e12),
                                            abs=1e-5)
    assert training["memory_gib"]["fp8_buffers"] == pytest.approx(4 * 2 * 12 * 2048**2 / GIB, abs=6e-4)


# ---------------------------------------------------------------- --json-out's training block


def test_the_memory_parts_are_megatrons_bytes_and_korthikantis_activations(folder):
    """tp 2 without sequence parallelism, one micro-batch in flight (pp 1), bf16 (2 + 4 + 12 B a
    parameter), fused attention (no a s^2 term): a layer's activations s b h (10 + 24/t), the
    embedding's mask s b h, the final norm's and the output layer's inputs 4 s b h whole and
    the logits 4 s b V / t (docs/megatron.md, *Memory*)."""
    layers, h, s, b, t, vocab = 4, 2048, 2048, 2, 2, 32000
    scenario = megatron_scenario(folder, GPT + " --tensor-model-parallel-size 2", preset=_preset(folder, gpus=8))
    training = _json(folder, scenario)["training"]
    # a tp rank's parameters: QKV, FC1 (and their biases) and the projection and FC2 split over
    # tp; the row-parallel biases and two layer norms whole; the embedding split, the learned
    # positions and the final norm whole
    layer = 12 * h * h // t + 7 * h // t + 6 * h
    params = layers * layer + vocab * h // t + s * h + 2 * h
    activations = layers * s * b * h * (10 + 24 / t) + s * b * h + 4 * s * b * h + 4 * s * b * vocab / t
    expected = {"weights": 2 * params, "gradients": 4 * params, "optimizer": 12 * params, "activations": activations}
    for part, value in expected.items():
        assert training["memory_gib"][part] == pytest.approx(value / GIB, abs=6e-4), part
    assert training["memory_per_gpu_gib"] == pytest.approx(sum(expected.values()) / GIB, abs=2e-3)
    assert training["fits"] == 1
    # the distributed optimizer shards the fp32 master and moments over dp = 8 / 2
    sharded = megatron_scenario(folder, GPT + " --tensor-model-parallel-size 2 --use-distributed-optimizer",
                                "dist.yaml", preset=_preset(folder, gpus=8))
    assert _json(folder, sharded)["training"]["memory_gib"]["optimizer"] == pytest.approx(12 * params / 4 / GIB,
                                                                                          abs=6e-4)


def test_a_report_over_the_json_figures_of_a_pipeline(folder):
    """A report of one's own over `--json-out` (docs/reports.md): each GPU's parts add up to its
    finish, the last finish is the iteration time, the memory's parts add up to the memory per
    GPU, and tokens/s is the batch's tokens over the step and the GPUs."""
    scenario = megatron_scenario(folder, GPT + " --pipeline-model-parallel-size 2", preset=_preset(folder, gpus=8))
    document = _json(folder, scenario)
    for npu in document["npus"].values():
        assert sum(npu["breakdown_ns"].values()) == npu["finished_ns"]
    assert max(npu["finished_ns"] for npu in document["npus"].values()) == document["iteration_time_ns"] \
        == document["training"]["iteration_time_ns"]
    training = document["training"]
    assert sum(training["memory_gib"].values()) == pytest.approx(training["memory_per_gpu_gib"], abs=2e-3)
    assert training["tokens_per_s_per_gpu"] == pytest.approx(16 * 2048 / (training["iteration_time_ns"] / 1e9 * 8),
                                                             abs=1e-3)
    assert any(npu["breakdown_ns"].get("bubble", 0) > 0 for npu in document["npus"].values())


# ---------------------------------------------------------------- a sweep over one's own presets


def test_a_sweep_over_ones_own_presets_and_tp_under_memory_and_mfu_constraints(folder):
    """Two presets of one's own (the second's tensor peak halved) by tp 1, 2 and 4, the 8-layer
    GPT at pp 2 on 16 GPUs: every row's MFU is Megatron's count over its own preset's peak (the
    vocabulary padded to 128 x tp: 32,256 at tp 4), and each constraint's best is the fastest row
    that meets it."""
    fast, slow = _preset(folder, "fast.yaml", gpus=8), _preset(folder, "slow.yaml", {"tensor_tflops": 156}, gpus=8)
    args = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
            "--max-position-embeddings 1024 --micro-batch-size 2 --global-batch-size 64 "
            "--pipeline-model-parallel-size 2 --bf16 --vocab-size 32000")
    sweep = megatron_sweep(folder, {"cluster.preset": [fast, slow], "workload.args.tensor-model-parallel-size": [1, 2, 4]},
                           args, {"preset": fast, "gpus": 16},
                           constraints=["memory_per_gpu_gib < 1.5", "mfu > 0.2"])
    assert main(["sweep", sweep, "--out", str(folder / "out")]) == 0
    import csv

    rows = list(csv.DictReader((folder / "out" / "results.csv").open()))
    assert len(rows) == 6
    for row in rows:
        tp = int(row["workload.args.tensor-model-parallel-size"])
        peak = 312e12 if row["cluster.preset"] == fast else 156e12
        vocab = math.ceil(32000 / (128 * tp)) * 128 * tp
        seconds = int(row["iteration_time_ns"]) / 1e9
        assert float(row["mfu"]) == pytest.approx(megatron_flops(64, 1024, 8, 1024, vocab) / (seconds * 16 * peak),
                                                  abs=1e-5)
    best = json.loads((folder / "out" / "best.json").read_text())
    for constraint, meets in (("memory_per_gpu_gib < 1.5", lambda r: float(r["memory_per_gpu_gib"]) < 1.5),
                              ("mfu > 0.2", lambda r: float(r["mfu"]) > 0.2)):
        fastest = min((r for r in rows if meets(r)), key=lambda r: int(r["iteration_time_ns"]))
        assert best["best_under"][constraint]["key"] == fastest["key"]


# ---------------------------------------------------------------- a script of one's own


COMPARE = '''"""Two layouts of one job compared from Python (docs/cosimulation.md, docs/reports.md)."""
from simpy_astra.simulation import Simulation


def compare(scenarios):
    rows = {}
    for name, path in scenarios.items():
        sim = Simulation.from_scenario(path)
        sim.run()
        rows[name] = sim.training().as_dict()
    return rows
'''


def test_a_script_compares_two_layouts_by_their_training_figures(tmp_path, monkeypatch):
    """The documented `sim.training()` gives a script what `--json-out`'s training block holds:
    tp 1 against tp 2, the same FLOPs, so MFU x step time is one figure for both."""
    with researcher_folder(tmp_path, monkeypatch, {"compare": COMPARE}) as here:
        preset = _preset(here, gpus=8)
        paths = {f"tp{tp}": megatron_scenario(here, f"{GPT} --tensor-model-parallel-size {tp}", f"tp{tp}.yaml",
                                              preset=preset) for tp in (1, 2)}
        import compare

        rows = compare.compare(paths)
        for name, path in paths.items():
            assert rows[name] == _json(here, path)["training"]
        flops = megatron_flops(16, 2048, 4, 2048, 32000)
        for row in rows.values():
            assert row["mfu"] * row["iteration_time_ns"] / 1e9 * 8 * 312e12 == pytest.approx(flops, rel=1e-4)


def test_training_figures_before_the_run_or_of_a_workload_without_them(folder):
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(megatron_scenario(folder, GPT, preset=_preset(folder, gpus=8)))
    with pytest.raises(ValueError, match="before every NPU has finished"):
        sim.training()
    bench = Simulation.from_scenario(_microbench(folder, _preset(folder), 4, "b.yaml", collective="all_reduce",
                                                 size=MIB))
    bench.run()
    assert bench.training() is None


# ---------------------------------------------------------------- calibration into a preset


def _nccl_tests_log(path: Path, busbw_gb_s: float, fixed_us: float, sizes: range) -> None:
    """An all_reduce_perf table of 8 GPUs whose every size takes ``fixed_us`` + 2 (n - 1)/n x S /
    busbw, as nccl-tests prints it."""
    lines = ["# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20",
             "#", "# Using devices"]
    lines += [f"#   Rank  {r} Pid 1 on localhost device  {r} [0x00] MyGPU-1" for r in range(8)]
    lines += ["#", "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw"
              "  error", "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)"]
    for power in sizes:
        size = 2**power
        t_us = fixed_us + 2 * 7 / 8 * size / (busbw_gb_s * 1e3)
        algbw = size / t_us / 1e3
        cells = f"{t_us:8.1f} {algbw:7.2f} {algbw * 1.75:7.2f}    N/A"
        lines.append(f"{size:>12} {size // 4:>13}   float     sum {cells} {cells}")
    path.write_text("\n".join([*lines, "# Avg bus bandwidth    : 100", "#"]) + "\n")


def test_calibrate_reads_a_logs_bus_bandwidth_as_the_switchs_and_its_fixed_cost_as_latency(folder, capsys):
    """A log of 200 GB/s of bus bandwidth and 20 us a call: on `[Switch 8]` the fitted bandwidth
    is that bus bandwidth (186.26 GiB/s), and halving-doubling's 6 steps of two hops pay the 20
    us: 6 (2 L + 10) = 20,000 ns, L = 1,661.7 ns (the log's times kept to 0.1 us)."""
    _nccl_tests_log(folder / "ar.log", 200, 20, range(20, 31))
    write_yaml(folder, {"topology": ["Switch"], "npus_count": [8], "bandwidth": [100.0], "latency": [500.0]},
               "net.yml")
    assert main(["calibrate", "ar.log", "--network", "net.yml", "--out", "cal"]) == 0
    import yaml

    fitted = yaml.safe_load((folder / "cal" / "network.yml").read_text())
    assert fitted["bandwidth"][0] == pytest.approx(200e9 / GIB, rel=2e-4)
    assert fitted["latency"][0] == pytest.approx((20_000 / 6 - 10) / 2, rel=2e-3)
    assert main(["validate", "ar.log", "--network", "cal/network.yml", "--system", "cal/system.json",
                 "--out", "cal"]) == 0
    assert "max 0.1%" in capsys.readouterr().out


def test_nccls_ring_fitted_on_ones_own_log_carried_into_ones_own_preset(folder, capsys):
    """`calibrate --nccl-algo ring:...` on the log above, its `nccl.json` written into the node
    of one's own preset as docs/calibration.md says: the preset's ring then runs the log's bus
    bandwidth (a 1 GiB all-reduce on 8 GPUs: 2 x 7/8 x 2^30 / 200 GB/s plus its latency) and
    gives the log's own times back."""
    _nccl_tests_log(folder / "ar.log", 200, 20, range(20, 31))
    write_yaml(folder, {"topology": ["Switch"], "npus_count": [8], "bandwidth": [100.0], "latency": [500.0]},
               "net.yml")
    assert main(["calibrate", "ar.log", "--network", "net.yml", "--out", "cal", "--nccl-algo", "ring:67108864"]) == 0
    said = capsys.readouterr().out
    assert "no size of the log is up to 4 KiB" in said  # not "fitted on sizes up to 4 KiB"
    assert all(len(line) <= 80 for line in said.splitlines() if "fixed cost" in line)  # pipes in 80 columns
    nccl = json.loads((folder / "cal" / "nccl.json").read_text())
    node = {"gpus": 8, "nvlink_gib_s": 100, "nccl_launch_us": nccl["launch_us"],
            "nccl_ring_efficiency": nccl["efficiency"]["ring"], "nccl_latency_scale": nccl["latency_scale"]["ring"]}
    ll128 = nccl["protocols"]["ring LL128 in a node"]
    node |= {"nccl_node_ll128_bandwidth_scale": ll128["bandwidth"], "nccl_node_ll128_latency_scale": ll128["latency"]}
    preset = _preset(folder, **node)
    for size, logged_us in ((8 * MIB, 20 + 1.75 * 8 * MIB / 200e3), (256 * MIB, 20 + 1.75 * 256 * MIB / 200e3),
                            (GIB, 20 + 1.75 * GIB / 200e3)):
        scenario = _microbench(folder, preset, 8, collective="all_reduce", size=size)
        assert _step_ns(folder, scenario) / 1e3 == pytest.approx(logged_us, rel=1e-3), size


# ---------------------------------------------------------------- a link model of one's own


PACED = '''"""Every item waits gap_ns before it starts (simpy_astra/network/README.md's link contract)."""
from simpy_astra.network.link import LinkElement


class PacedLink(LinkElement):
    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int = 0):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
        self.gap_ns = gap_ns

    def hold_ns(self, item):
        return self.gap_ns
'''


def test_ones_own_link_model_on_a_presets_network_pays_each_link_and_its_gap(tmp_path, monkeypatch):
    """GPU 1 to GPU 6 of one's own preset on congestion_aware (store and forward): PXN's route
    is NVLink twice (to GPU 2 through the switch) and the rail twice, each link paid whole, and
    a paced link adds its gap on each of the four."""
    with researcher_folder(tmp_path, monkeypatch, {"paced": PACED}) as here:
        from paced import PacedLink

        from simpy_astra.simulation import Simulation

        preset = _preset(here)
        scenario = _microbench(here, preset, 8, collective="send_recv", size=MIB, src=1, dst=6, nodes_per_leaf=2)
        links_ns = 2 * (2000 + int(MIB / NVLINK_B_S * 1e9)) + 2 * (4000 + int(MIB / RAIL_B_S * 1e9))
        for kwargs, expected_ns in (({}, links_ns), ({"link_model": PacedLink, "link_params": {"gap_ns": 50}},
                                                     links_ns + 4 * 50)):
            sim = Simulation.from_scenario(scenario, backend="congestion_aware", **kwargs)
            assert max(r.finished_ns for r in sim.run()) == pytest.approx(expected_ns, abs=4)


@pytest.mark.parametrize(("model", "other"), [("link", "switch"), ("switch", "link")])
def test_a_link_model_alone_under_network_beside_a_cluster_says_how_to_run_one(tmp_path, monkeypatch, capsys,
                                                                               model, other):
    """The fix names Simulation's keywords for the model given (``switch_model=`` for a switch's)."""
    with researcher_folder(tmp_path, monkeypatch, {"paced": PACED}) as here:
        preset = _preset(here)
        scenario = write_yaml(here, {"workload": {"generate": "microbench", "num_npus": 8, "collective": "send_recv",
                                                  "size": MIB, "src": 1, "dst": 6},
                                     "cluster": {"preset": preset, "gpus": 8},
                                     "network": {f"{model}-model": {"class": "paced:PacedLink", "gap_ns": 50}},
                                     "backend": "congestion_aware"})
        [line] = error_lines(capsys, ["run", scenario])
        assert "network:" in line and "replaces the preset's whole network" in line
        assert f"{model}-model alone" in line and f"{model}_model=" in line and f"{other}_model=" not in line
