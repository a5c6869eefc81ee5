"""Memory held against published formulas, STAGE's traces, and its own parts (issue 18).

- Parameters, gradients and Adam state per NPU, derived here from the model shape, for gpt and
  llama shapes under tp / pp / dp / FSDP (and mixed precision), against the tensors a
  ``physical`` trace keeps (a static read of one NPU's ET file).
- Activation memory per transformer layer against Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models" (MLSys 2023), Table 2, on eight configurations.
- ``--memory-accounting stage-3a7f49c`` against the STAGE reference cases' peak memory (st1,
  st4, st5, st6: within 1%; they are exact).
- ``--memory-accounting stage`` (the STAGE the lab used: its template generator before commit
  93cacd6) on a reduced model against a hand-derived peak, and (slow) on the lab's two
  published points.
- The breakdown at the peak adds up to the tracker's peak, in the report and in --json-out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.engine.memory_tracker import CATEGORIES, tensor_category
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import read_et
from simpy_astra.workloads.transformer.generator import generate

UNITS = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}


def inventory(path: str) -> tuple[dict[str, int], set[str]]:
    """Every tensor one NPU's trace names (name -> bytes) and the names some node writes."""
    sizes: dict[str, int] = {}
    written: set[str] = set()
    for node in read_et(path)[1]:
        for attr in ("inputs", "outputs"):
            values = node.get_string_list(attr) if node.has_attr(attr) else []
            for i in range(0, len(values), 2):
                sizes[values[i]] = int(values[i + 1])
                if attr == "outputs":
                    written.add(values[i])
    return sizes, written


def total(sizes: dict[str, int], keep) -> int:
    return sum(size for name, size in sizes.items() if keep(name))


# ---------------------------------------------------------------- parameters, gradients, optimizer
SHAPE = dict(dmodel=256, dff=1024, head=4, seq=128, batch=8, num_stacks=4, dvocal=1000)


@pytest.mark.parametrize("extra", [
    dict(model="gpt"),
    dict(model="gpt", dp=2, tp=2),
    dict(model="gpt", tp=2, pp=2, tpsp=0),
    dict(model="llama", kvhead=2, dp=2, tp=2, pp=2),
    dict(model="gpt", dp=2, weight_sharded=1),
    dict(model="llama", kvhead=2, dp=4, tp=2, weight_sharded=1),
    dict(model="llama", kvhead=2, tp=2, pp=2, mixed_precision=1),
])
def test_parameters_gradients_optimizer_per_npu(tmp_path: Path, extra: dict) -> None:
    params = dict(SHAPE, **extra)
    generate(params, str(tmp_path / "w"))
    d, f, v, layers = params["dmodel"], params["dff"], params["dvocal"], params["num_stacks"]
    dp, tp, pp = params.get("dp", 1), params.get("tp", 1), params.get("pp", 1)
    fsdp = params.get("weight_sharded", 0) == 1
    kv = d if params["model"] == "gpt" else d // params["head"] * params["kvhead"]  # GQA for llama
    # no biases, untied input/output embeddings (STAGE's dense model); gpt: up and down
    # projections, llama: SwiGLU's gate, up and down
    block = 2 * d * d + 2 * d * kv + (2 if params["model"] == "gpt" else 3) * d * f
    # Megatron splits the vocabulary over tp; with Megatron sequence parallelism (tpsp, the
    # default) our embeddings -- like STAGE's -- are replicated over tp and split the tokens
    # instead. FSDP shards the blocks only, as STAGE's weight sharding does.
    vocab_share = v if (params.get("tpsp", 1) and tp > 1) else v // tp
    elem = 2 if params.get("mixed_precision") else 1  # bf16 weights and gradients
    adam = 12 if params.get("mixed_precision") else 2  # fp32 moments + master copy, or 2 moments
    for rank in {0, dp * tp * (pp - 1)}:  # the first and the last pipeline stage
        stage = rank // (dp * tp)
        emb = vocab_share * d * ((stage == 0) + (stage == pp - 1))
        params_here = layers // pp * block // tp // (dp if fsdp else 1) + emb
        sizes, written = inventory(str(tmp_path / f"w.{rank}.et"))
        # what the step starts with: the weights (FSDP: the shard) and the Adam state
        weights = total(sizes, lambda n, w=written: n.startswith("weight/") and n not in w)
        optimizer = total(sizes, lambda n: n.startswith("optim/"))
        # after the gradient sync: one gradient per kept weight (FSDP: the shard)
        gradients = total(sizes, lambda n: n.startswith("grad/") and n.endswith(".grad.final"))
        # before it, each block's full (tp-shard) weight gradient, accumulated over micro-batches
        buffers = total(sizes, lambda n: n.startswith("grad/L") and n.endswith(".grad") and n.count(".") > 1)
        for measured, expected in ((weights, elem * params_here), (gradients, elem * params_here),
                                   (optimizer, adam * params_here),
                                   (buffers, elem * (layers // pp) * block // tp)):
            assert abs(measured - expected) <= 0.05 * expected, (rank, measured, expected)


# ---------------------------------------------------------------- activations (Korthikanti et al.)
ACT = dict(model="gpt", dmodel=256, dff=1024, head=8, seq=128, batch=4, num_stacks=4, dvocal=1000)


def korthikanti_bytes(s: int, b: int, h: int, a: int, t: int, mode: str) -> float:
    """Table 2: activation bytes per layer with 2-byte activations and 1-byte dropout masks."""
    return {"none": s * b * h * (34 + 5 * a * s / h),
            "tensor": s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
            "tensor+sequence": s * b * h / t * (34 + 5 * a * s / h),
            "full recompute": 2 * s * b * h}[mode]


def our_model_bytes(s: int, b: int, h: int, a: int, t: int, mode: str) -> float:
    """The paper's count less what STAGE's dense model (hence ours) deliberately lacks:

    - no dropout: two 1-byte masks of s*b*h per layer (after attention and after the MLP; split
      over t only with sequence parallelism), and the attention-probability dropout mask;
    - a fused attention kernel (STAGE's, flash-attention-like): no s x s scores, softmax output
      or its dropout are kept, i.e. the whole 5*a*s^2*b term;
    - no separate GeLU: the MLP's up projection (4h wide) feeds the down projection directly,
      so only the GeLU input (8 s*b*h bytes, split over t) is kept, not also its output.
    Full recompute keeps only each layer's input, as in the paper."""
    sbh = s * b * h
    paper = korthikanti_bytes(s, b, h, a, t, mode)
    if mode == "full recompute":
        return paper
    split = t if mode != "none" else 1
    masks = 2 * sbh / (t if mode == "tensor+sequence" else 1)
    scores = 5 * a * s * s * b / split
    gelu_output = 8 * sbh / split
    return paper - masks - scores - gelu_output


@pytest.mark.parametrize("extra,mode", [
    (dict(), "none"),
    (dict(dp=2), "none"),
    (dict(tp=2, tpsp=0), "tensor"),
    (dict(tp=4, tpsp=0), "tensor"),
    (dict(tp=2), "tensor+sequence"),
    (dict(tp=4), "tensor+sequence"),
    (dict(activation_recompute=1), "full recompute"),
    (dict(tp=4, activation_recompute=1), "full recompute"),
])
def test_activation_memory_per_layer_matches_korthikanti(tmp_path: Path, extra: dict, mode: str) -> None:
    params = dict(ACT, **extra)
    generate(params, str(tmp_path / "w"))
    sizes, _ = inventory(str(tmp_path / "w.0.et"))
    # layer 1's saved activations (its output is layer 2's input, the LayerNorm input the
    # paper counts per layer); the generator counts one byte per element, the paper two
    kept = total(sizes, lambda n: n.startswith("act/mb0.L1.") and ".recompute." not in n)
    t = params.get("tp", 1)
    s, b, h, a = params["seq"], params["batch"] // params.get("dp", 1), params["dmodel"], params["head"]
    expected = our_model_bytes(s, b, h, a, t, mode) / 2
    if params.get("activation_recompute") and t > 1:
        expected /= t  # with Megatron sequence parallelism the kept input is the t-th shard
    assert abs(kept - expected) <= 0.05 * expected, (kept, expected, kept / expected)
    # and the paper's own figure is what our model adds back (the test is not vacuous)
    assert korthikanti_bytes(s, b, h, a, t, mode) >= 2 * kept


# ---------------------------------------------------------------- STAGE accounting
def stage_params(reference_dir: Path, name: str) -> dict:
    flags = json.loads((reference_dir / "workloads/stage/STAGE_CONFIGS.json").read_text())[name]["stage_flags"]
    return {k: int(v) for k, v in flags.items()}


def peak_of(text: str) -> float:
    value, unit = text.split()
    return float(value) * UNITS[unit]


def run_case(reference_dir: Path, case: str, prefix: Path, groups: str) -> list:
    spec = json.loads((reference_dir / f"cases/{case}.json").read_text())
    cwd = os.getcwd()
    os.chdir(reference_dir)
    try:
        inputs = inputs_from_astra_flags(workload=str(prefix), system=spec["system"], network=spec["network"],
                                         remote_memory=spec["remote_memory"], comm_groups=groups,
                                         backend=spec["backend"])
        return spec, Simulation(inputs).run()
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("case", ["stage_cu_st1_dp2tp2_d1024_s2_fc4", "stage_cu_st4_sanity16_dp2tp2pp2sp2_sw16s",
                                  "stage_cu_st5_l70b_dp8tp8_s8_ring4x4x4s", "stage_cu_st6_l70b_dp4tp4sp4_s8_ring4x4x4s"])
def test_stage_accounting_gives_stage_peak_memory(reference_dir: Path, tmp_path: Path, case: str) -> None:
    """STAGE's own flags (st4 with its no-op --activation_recompute 1): our recompute still
    runs, but under stage accounting it holds no memory, as in STAGE's traces."""
    name = json.loads((reference_dir / f"cases/{case}.json").read_text())["meta"]["stage_cfg"]
    groups = generate(dict(stage_params(reference_dir, name), memory_accounting="stage-3a7f49c"),
                      str(tmp_path / "w"))
    spec, reports = run_case(reference_dir, case, tmp_path / "w", groups)
    for r in reports:
        expected = peak_of(spec["expected"][str(r.npu_id)]["peak_memory"])
        assert abs(peak_of(r.peak_memory) - expected) <= 0.01 * expected, (r.npu_id, r.peak_memory, expected)
        assert abs(sum(r.memory_breakdown.values()) - peak_of(r.peak_memory)) <= 0.005 * expected


LLAMA70B = dict(model="gpt", dvocal=32000, dmodel=8192, dff=28672, head=64, num_stacks=80, batch=512, seq=1024,
                dp=8, tp=1, sp=8, activation_recompute=1)
GPT175B = dict(model="gpt", dvocal=50257, dmodel=12288, dff=49152, head=96, num_stacks=96, batch=512, seq=1024,
               dp=4, tp=8, sp=2, activation_recompute=1)


def run_lab_point(tmp_path: Path, params: dict, system_no: int) -> list:
    """Generate ``params`` and simulate it on the lab's System 1 or 2 (issue 18)."""
    groups = generate(params, str(tmp_path / "w"))
    peak_perf, mem_bw, link_bw = {1: (450, 3000, 100), 2: (45, 300, 2000)}[system_no]
    ring = ["ring"] * 3
    system = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 4,
              "preferred-dataset-splits": 10, "collective-optimization": "localBWAware", "track-local-mem": 1,
              "roofline-enabled": 1, "peak-perf": peak_perf, "local-mem-bw": mem_bw,
              "all-reduce-implementation": ring, "all-gather-implementation": ring,
              "reduce-scatter-implementation": ring, "all-to-all-implementation": ring}
    (tmp_path / "sys.json").write_text(json.dumps(system))
    (tmp_path / "net.yml").write_text("topology: [Ring, Ring, Ring]\nnpus_count: [4, 4, 4]\n"
                                      f"bandwidth: [{link_bw}, {link_bw}, {link_bw}]\nlatency: [50, 50, 50]\n")
    (tmp_path / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    inputs = inputs_from_astra_flags(workload=str(tmp_path / "w"), system=str(tmp_path / "sys.json"),
                                     network=str(tmp_path / "net.yml"), remote_memory=str(tmp_path / "mem.json"),
                                     comm_groups=groups, backend="congestion_unaware")
    return Simulation(inputs).run()


SLOW = pytest.mark.skipif(not os.environ.get("SIMPY_ASTRA_SLOW"), reason="about a minute: set SIMPY_ASTRA_SLOW=1")


@SLOW
def test_stage_3a7f49c_accounting_at_the_lab_llama_point(tmp_path: Path) -> None:
    """The lab's llama70b at dp8 tp1 sp8 with recompute on System 1: STAGE 3a7f49c's own trace
    (generated with STAGE's main.py, simulated here) peaks at 500.44 GB; so does ours."""
    reports = run_lab_point(tmp_path, dict(LLAMA70B, memory_accounting="stage-3a7f49c"), 1)
    assert {r.peak_memory for r in reports} == {"500.44 GB"}


# The lab's STAGE (its template main.py at 8e6e087, --activation_recompute 1, the lab's flags
# with --din/--dout for the vocabulary) traces, simulated here on the lab's systems, peak at
# these bytes on every NPU (scenarios/sweeps/results/README.md):
STAGE_TEMPLATE_PEAK = {"llama70b": 67_022_880_768, "gpt175b": 42_297_322_496}  # 62.42 GB, 39.39 GB
# The published figures; they are met in decimal GB (1e9 B), not in ASTRA-sim's 2^30 B GB
PUBLISHED_GB = {"llama70b": 67.0, "gpt175b": 42.74}


@SLOW
@pytest.mark.parametrize("point", ["llama70b", "gpt175b"])
def test_stage_accounting_gives_the_lab_published_peaks(tmp_path: Path, point: str) -> None:
    params, system_no = {"llama70b": (LLAMA70B, 1), "gpt175b": (GPT175B, 2)}[point]
    reports = run_lab_point(tmp_path, dict(params, memory_accounting="stage"), system_no)
    peak = max(peak_of(r.peak_memory) for r in reports)
    assert abs(peak - STAGE_TEMPLATE_PEAK[point]) <= 0.02 * STAGE_TEMPLATE_PEAK[point], peak
    assert abs(peak / 1e9 - PUBLISHED_GB[point]) <= 0.03 * PUBLISHED_GB[point], peak / 1e9


def test_stage_accounting_on_a_reduced_model(tmp_path: Path) -> None:
    """A 4-layer gpt at dp2 with recompute, in STAGE's template accounting, derived by hand:
    1 B per weight element and no Adam state, no output projection (wo), collectives write
    nothing. The peak falls in layer 0's backward, after its FFN weight gradients and before
    its attention one: all weights, the gradients of layers 1..3, layer 0's FFN and the output
    embedding; the input tokens, the embedding output, layer 0's attention checkpoint and the
    six tensors its recomputed forward still holds; FFN dh and layer 1's input gradient."""
    d, dff, layers, vocab, batch, seq, dp = 256, 1024, 4, 1000, 8, 128, 2
    groups = generate(dict(model="gpt", dvocal=vocab, dmodel=d, dff=dff, head=4, num_stacks=layers, batch=batch,
                           seq=seq, dp=dp, activation_recompute=1, memory_accounting="stage"), str(tmp_path / "w"))
    ring = ["ring"]
    system = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
              "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "track-local-mem": 1,
              "roofline-enabled": 1, "peak-perf": 100, "local-mem-bw": 1000, "all-reduce-implementation": ring,
              "all-gather-implementation": ring, "reduce-scatter-implementation": ring,
              "all-to-all-implementation": ring}
    (tmp_path / "sys.json").write_text(json.dumps(system))
    (tmp_path / "net.yml").write_text("topology: [Ring]\nnpus_count: [2]\nbandwidth: [100]\nlatency: [50]\n")
    (tmp_path / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    inputs = inputs_from_astra_flags(workload=str(tmp_path / "w"), system=str(tmp_path / "sys.json"),
                                     network=str(tmp_path / "net.yml"), remote_memory=str(tmp_path / "mem.json"),
                                     comm_groups=groups, backend="congestion_unaware")
    tokens = batch // dp * seq
    hidden = tokens * d
    per_layer = 3 * d * d + 2 * d * dff  # wqkv, w1, w2: no wo
    weights = layers * per_layer + 2 * vocab * d
    grads = (layers - 1) * per_layer + 2 * d * dff + vocab * d
    acts = tokens * vocab + hidden + hidden + 6 * hidden
    transient = tokens * dff + hidden
    sizes, _ = inventory(str(tmp_path / "w.0.et"))
    assert not any(n.startswith(("optim/", "comm/")) for n in sizes)
    for r in Simulation(inputs).run():
        assert r.memory_breakdown == dict(weights=weights, gradients=grads, optimizer=0, activations=acts,
                                          transient=transient, communication=0, other=0)
        assert r.peak_memory == "8.16 MB" and weights + grads + acts + transient == 8_554_496


def test_stage_accounting_tensor_lists_with_tp_and_sp(tmp_path: Path) -> None:
    """dp2 tp2 sp2 under the lab STAGE's accounting, read statically off NPU 0's trace: no Adam
    state, no communication buffers (collectives write nothing), ``wo`` and its gradient of
    size 0, and the never-written weights are the tp shard of wqkv, w1, w2 per layer plus both
    embeddings (which our generator, unlike STAGE's templates, does not split by tp)."""
    d, dff, layers, vocab, tp = 256, 1024, 4, 1000, 2
    generate(dict(model="gpt", dvocal=vocab, dmodel=d, dff=dff, head=4, num_stacks=layers, batch=8, seq=128,
                  dp=2, tp=tp, sp=2, activation_recompute=1, memory_accounting="stage"), str(tmp_path / "w"))
    sizes, written = inventory(str(tmp_path / "w.0.et"))
    assert not any(n.startswith(("optim/", "comm/")) for n in sizes)
    assert {n: v for n, v in sizes.items() if ".wo" in n} == {
        **{f"weight/L{i}.wo": 0 for i in range(layers)}, **{f"grad/L{i}.wo.grad": 0 for i in range(layers)}}
    assert total(sizes, lambda n: n.startswith("weight/") and n not in written) == (
        layers * (3 * d * d + 2 * d * dff) // tp + 2 * vocab * d)
    for node in read_et(str(tmp_path / "w.0.et"))[1]:
        if node.type == 7:  # COMM_COLL_NODE
            assert not (node.has_attr("outputs") and node.get_string_list("outputs"))


# ---------------------------------------------------------------- the breakdown itself
def test_breakdown_adds_up_to_the_peak_in_report_and_json(reference_dir: Path, tmp_path: Path) -> None:
    groups = generate(dict(SHAPE, model="gpt", dp=2, tp=2), str(tmp_path / "w"))
    spec, reports = run_case(reference_dir, "stage_cu_st1_dp2tp2_d1024_s2_fc4", tmp_path / "w", groups)
    sizes, written = inventory(str(tmp_path / "w.0.et"))
    for r in reports:
        parts = r.memory_breakdown
        assert list(parts) == list(CATEGORIES) and parts["other"] == 0
        peak = sum(parts.values())
        assert abs(peak - peak_of(r.peak_memory)) <= 0.005 * peak  # the printed figure is rounded
        d = r.as_dict()
        assert d["peak_memory_bytes"] == peak and d["peak_memory_breakdown_bytes"] == parts
        # weights and Adam state live through the step: all of them are there at the peak
        assert parts["weights"] == total(sizes, lambda n: n.startswith("weight/") and n not in written)
        assert parts["optimizer"] == total(sizes, lambda n: n.startswith("optim/"))
        assert parts["activations"] > 0


def test_stage_names_are_read_by_their_conventions() -> None:
    assert tensor_category("weight/L0.wqkv") == "weights"
    assert tensor_category("transformer.0._sharded_weight@0Dmodel") == (("weights", 0.2), ("optimizer", 0.8))
    assert tensor_category("mb0.transformer.0._mha.wo_backward@0D") == "weights"
    assert tensor_category("mb0.transformer.0.mha.dwqkv@0D") == "gradients"
    assert tensor_category("mb0.transformer.0.ffn.x0@0D", never_written=True) == "communication"
    assert tensor_category("mb0.transformer.0.input_norm.x@0D", never_written=True) == "activations"
    assert tensor_category("mb0.transformer.0.mha.dqkv@0D") == "transient"
    assert tensor_category("mb0.transformer.0.mha.q@0D") == "activations"
    assert tensor_category("some tensor") == "other"
