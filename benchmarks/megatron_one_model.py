"""docs/megatron.md's tables of one model's variants, predicted: Korthikanti et al.'s full
against selective recomputation, SC'21's layouts (Figures 13-15) and its other sweeps
(Figures 11, 12, 16, 17, 18), the zero-bubble schedules against 1F1B, the layouts the
unfused softmax's fallback moves most, Korthikanti's runs again with fp16 main gradients (the
prose's side figures) and a Qwen3-30B-A3B-like MoE with and without ``--moe-grouped-gemm``.

Each point runs as ``benchmarks/megatron_sc21.py`` runs a row (a scenario of ``workload:
{generate: megatron, args}`` on ``dgx-a100-80gb``, the MoE's on ``dgx-h100``, through ``python -m simpy_astra run FILE
--json-out OUT --quiet``), with the configurations of ``tests/test_megatron.py``,
``tests/test_megatron_layouts.py``, ``tests/test_megatron_sc21_figures.py`` and
``tests/test_zero_bubble_v.py`` (the fallback's and the 16-stage schedules', the docs').
Prints each table in the docs' format, with the figures the docs' prose quotes under it. The
published figures are the papers'; the rest is the model's.

    python benchmarks/megatron_one_model.py [--tables korthikanti,korthikanti-fp16,layouts,figures,
        zero-bubble,fallback,moe]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable

from megatron_sc21 import predict, spearman


class Runner:
    """Runs points in one scratch folder, each once (a table may quote a point twice)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.seen: dict[tuple, dict] = {}

    def run(self, args: str, gpus: int, schedule: str | None = None, cluster: tuple = ()) -> dict:
        """``cluster``: (key, value) pairs over ``predict``'s DGX A100 (``preset``, ...)."""
        key = (args, gpus, schedule, cluster)
        if key not in self.seen:
            row = {"model": f"p{len(self.seen)}", "args": args, "gpus": gpus, "schedule": schedule, **dict(cluster)}
            self.seen[key] = predict(row, self.folder)[0]
        return self.seen[key]

    def step_s(self, args: str, gpus: int, schedule: str | None = None, cluster: tuple = ()) -> float:
        return self.run(args, gpus, schedule, cluster)["iteration_time_ns"] / 1e9


def last_npu(data: dict) -> dict:
    """The breakdown (ms by part, ``finish`` its step) of the NPU that finishes last."""
    npu = max(data["npus"].values(), key=lambda n: n["finished_ns"])
    return {**{part: ns / 1e6 for part, ns in npu["breakdown_ns"].items()}, "finish": npu["finished_ns"] / 1e6}


def missed(is_missed: bool) -> str:
    """The docs' mark on a trend the prediction does not follow."""
    return " (**missed**)" if is_missed else ""


def series(values: list[float], digits: int = 2, best: float | None = None) -> str:
    """``1.23, **0.98**, ...``: the docs' list of points, ``best`` in bold."""
    return ", ".join(f"**{v:.{digits}f}**" if v == best else f"{v:.{digits}f}" for v in values)


# --- Korthikanti et al., MLSys 2023: Tables 3 (configurations), 4 (a 22B layer) and 5 (steps)
#: the paper's Megatron-LM (2022-05): --DDP-impl local (its default) beside sequence parallelism's
#: names says that release: its layers (async all-reduce, gradient-accumulation fusion) and its
#: pipeline sends (1/tp from each GPU, all-gathered, without sequence parallelism). It fused the
#: weight gradients only into fp32 main gradients (bf16's, or fp16's with the flag below); the
#: paper says "mixed precision"; its dp-8 sync (Section 6.3: +1.32 s) and 22B layers (Table 4)
#: sit closer to fp32 gradients (fp16's: +0.31 s against fp32's +0.61, and 0.27 ms a 22B layer
#: more for the unfused additions, 3.0-4.1% over Table 4 where they are 1.7-3.1%)
K_2022 = ("--seq-length 2048 --max-position-embeddings 2048 --tensor-model-parallel-size 8 --fp16 "
          "--accumulate-allreduce-grads-in-fp32 --DDP-impl local")
K_FULL = "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
K_SELECTIVE = "--recompute-activations --sequence-parallel"
def model_22b(layers: int) -> str:
    return f"--num-layers {layers} --hidden-size 6144 --num-attention-heads 64"


#: Section 6: "We use the interleaving schedule with three interleaving stages (m = 3) for the
#: 175B and 530B models" (12 and 3 layers a stage: 4 and 1 a chunk; 1T's 2 a stage are not
#: interleaved; that release exchanged an interleaved step's tensors in blocking calls).
K_INTERLEAVED = "--num-layers-per-virtual-pipeline-stage"
#: name, GPUs, model, micro-batch, batch, pp, published full and selective seconds (Table 5)
K_MODELS = [("22B", 8, model_22b(48), 4, 4, 1, 1.42, 1.10),
            ("175B", 64, f"--num-layers 96 --hidden-size 12288 --num-attention-heads 96 {K_INTERLEAVED} 4",
             1, 64, 8, 18.13, 13.75),
            ("530B", 280, f"--num-layers 105 --hidden-size 20480 --num-attention-heads 128 {K_INTERLEAVED} 1",
             1, 280, 35, 49.05, 37.83),
            ("1T", 512, "--num-layers 128 --hidden-size 25600 --num-attention-heads 160", 1, 512, 64, 94.42, 71.49)]
#: Section 6.3: the 530B model at 8-way data parallelism (2,240 GPUs, batch 2,240, gradients
#: all-reduced after the backward) steps 39.15 s, against 37.83 s without
K_530B_DP8 = (2240, 39.15)
#: Table 4: a 22B layer's forward and backward (ms) in each mode
K_LAYER_MODES = [("none", "", 19.6), ("sequence parallel", "--sequence-parallel", 19.0), ("full", K_FULL, 27.2),
                 ("selective", "--recompute-activations", 20.9), ("selective + sequence parallel", K_SELECTIVE, 20.3)]


def korthikanti(r: Runner, line: str = K_2022, layers_line: str | None = None) -> dict[str, float]:
    """Prints the table and per-layer figures for ``line`` (the release's flags) and
    ``layers_line`` (the per-layer runs'); returns the figures the fp16 comparison quotes: each
    step, the dp-8 sync and the 22B layers' ms."""
    out: dict[str, float] = {}
    # Table 4's layers: its baseline has none of 2022's names (--DDP-impl alone reads as 2021's
    # release), so today's local layers, the same kernels; one stage sends nothing
    layers_line = layers_line or line.replace("--DDP-impl local", "--transformer-impl local")
    print("| Model | published full / selective | predicted | full vs published | selective vs published |")
    print("|---|---|---|---|---|")
    for name, gpus, model, mbs, gbs, pp, pub_full, pub_sel in K_MODELS:
        base = (f"{model} {line} --micro-batch-size {mbs} --global-batch-size {gbs} "
                f"--pipeline-model-parallel-size {pp}")
        full, sel = r.step_s(f"{base} {K_FULL}", gpus), r.step_s(f"{base} {K_SELECTIVE}", gpus)
        out[f"{name} full"], out[f"{name} selective"] = full, sel
        digits = 3 if full < 10 else 2
        label = f"{name} ({gpus} GPUs)" if name == "22B" else f"{name} ({gpus})"
        print(f"| {label} | {pub_full:.2f} / {pub_sel:.2f} = {pub_full / pub_sel:.3f} | {full / sel:.3f} "
              f"({full / sel / (pub_full / pub_sel) - 1:+.1%}) | {full:.{digits}f} s, {full / pub_full - 1:+.1%} | "
              f"{sel:.{digits}f} s, {sel / pub_sel - 1:+.1%} |")
    gpus, published = K_530B_DP8
    _name, _gpus, model, mbs, _gbs, pp, _full, _sel = K_MODELS[2]
    step = r.step_s(f"{model} {line} --micro-batch-size {mbs} --global-batch-size {gpus} "
                    f"--pipeline-model-parallel-size {pp} {K_SELECTIVE}", gpus)
    out["dp-8 sync"] = step - out["530B selective"]
    print(f"530B selective at dp 8 ({gpus} GPUs, Section 6.3): {step:.2f} s against {published:.2f} "
          f"({step / published - 1:+.1%})")
    model, layer = K_MODELS[0][2], f"{layers_line} --micro-batch-size 4 --global-batch-size 4"
    plain, sp = r.step_s(f"{model} {layer}", 8), r.step_s(f"{model} {layer} --sequence-parallel", 8)
    print(f"22B: sequence parallelism's gain a layer (48-layer steps' difference / 48) {(plain - sp) / 48 * 1e3:.2f} ms "
          "(Table 4: 19.6 - 19.0 = 0.6 ms)")
    print("22B a layer (48-layer step less 24-layer step, optimizer left out, / 24), ms, against Table 4:")
    for mode, flags, published in K_LAYER_MODES:
        busy = []
        for layers in (48, 24):
            data = r.run(f"{model_22b(layers)} {layer} {flags}", 8)
            busy.append(data["iteration_time_ns"] / 1e6 - last_npu(data).get("compute.optimizer", 0.0))
        per_layer = out[f"22B layer {mode}"] = (busy[0] - busy[1]) / 24
        print(f"  {mode:>29}: {per_layer:5.2f} against {published:4.1f} ({per_layer / published - 1:+.1%})")
    return out


def korthikanti_fp16(r: Runner) -> None:
    """The docs' side figures: the same runs with fp16 main gradients (no
    ``--accumulate-allreduce-grads-in-fp32``: that release then added each weight gradient by a
    kernel of its own), against the fp32 gradients the table states."""
    fp32 = korthikanti(r)
    print("### the same with fp16 main gradients (the layers as 2022's release: today's fuses fp16 too)")
    line = K_2022.replace(" --accumulate-allreduce-grads-in-fp32", "")
    fp16 = korthikanti(r, line, line)
    # "none" carries no 2022 name: with --DDP-impl alone it reads as 2021's release
    modes = [(mode, published) for mode, _flags, published in K_LAYER_MODES if mode != "none"]
    longer = [fp16[f"22B layer {mode}"] - fp32[f"22B layer {mode}"] for mode, _p in modes]
    over = [fp16[f"22B layer {mode}"] / published - 1 for mode, published in modes]
    print(f"fp16 against fp32 main gradients: 175B selective {fp16['175B selective']:.2f} s, full "
          f"{fp16['175B full']:.2f} s; 22B selective {fp16['22B selective']:.3f} s, full "
          f"{fp16['22B full']:.3f} s; a 22B layer {min(longer):.2f}-{max(longer):.2f} ms longer, "
          f"{min(over):.1%}-{max(over):.1%} over Table 4; dp-8 sync {fp16['dp-8 sync']:.2f} s against "
          f"{fp32['dp-8 sync']:.2f} s (published 1.32 s)")


# --- SC'21 (Narayanan et al.): the scripts' CONFIG.sh and Figures 11-18
SC21 = ("--seq-length 2048 --max-position-embeddings 2048 --DDP-impl local --fp16 --loss-scale 8192 "
        "--clip-grad 1.0")
RECOMPUTE = "--activations-checkpoint-method uniform"
GPT3_175B = "--num-layers 96 --hidden-size 12288 --num-attention-heads 96"
INTERLEAVED = "--num-layers-per-virtual-pipeline-stage 2"
MODEL_162B = "--num-layers 32 --hidden-size 20480 --num-attention-heads 128"
MODEL_5_9B = "--num-layers 32 --hidden-size 3840 --num-attention-heads 32"
MODEL_91B = "--num-layers 32 --hidden-size 15360 --num-attention-heads 128"
MODEL_145B = "--num-layers 80 --hidden-size 12288 --num-attention-heads 96"


def layout(tp: int, pp: int, mbs: int, gbs: int) -> str:
    return (f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} "
            f"--micro-batch-size {mbs} --global-batch-size {gbs}")


def layouts(r: Runner) -> None:
    """Each figure at every batch its script offers (``run_figure_13.sh``: 32, 128; ``_14``: 32,
    512 and the caption's third, 128; ``_15``: 32, 128, 512), with Spearman's rho of the
    predicted steps against the order the paper states (Figures 14 and 15: slower at every step
    of the list; Figure 13 states only its fastest point)."""
    print("| Figure (model, batch) | layouts | predicted step, s | the paper's order |")
    print("|---|---|---|---|")
    for gbs, label in ((32, "t x p = 32x2, 16x4, 8x8, 4x16, 2x32"), (128, "the same")):
        steps = [r.step_s(f"{MODEL_162B} {SC21} {RECOMPUTE} {layout(tp, 64 // tp, 1, gbs)}", 64)
                 for tp in (32, 16, 8, 4, 2)]
        order = "fastest at t = 8, one server" if gbs == 32 else "the same"
        print(f"| 13 (162.2B, {gbs}) | {label} | {series(steps, best=min(steps))} | "
              f"{order}{missed(min(steps) != steps[2])} |")
    for figure, label, points, order in ((14, "t = 1, p = 2 to 32", [(1, p) for p in (2, 4, 8, 16, 32)],
                                          "slower as p grows"),
                                         (15, "p = 1, t = 2 to 32", [(t, 1) for t in (2, 4, 8, 16, 32)],
                                          "slower as t grows")):
        for gbs in (32, 128, 512):
            steps = [r.step_s(f"{MODEL_5_9B} {SC21} {RECOMPUTE} {layout(tp, pp, 1, gbs)}", 64) for tp, pp in points]
            rho = spearman(list(range(len(steps))), steps)
            print(f"| {figure} (5.9B, {gbs}) | {label if gbs == 32 else 'the same'} | {series(steps)} | "
                  f"{order if gbs == 32 else 'the same'} (rho {rho:+.1f}) |")


def figures(r: Runner) -> None:
    print("| Figure (model, GPUs) | points | predicted | the paper's trend |")
    print("|---|---|---|---|")
    for gbs in (8, 128):
        tflops = [r.run(f"{layout(8, p, 1, gbs)} --num-layers {3 * p} --hidden-size 20480 --num-attention-heads 128 "
                        f"{SC21} {RECOMPUTE}", 8 * p)["training"]["tflops_per_gpu"] for p in (1, 2, 4, 8)]
        if gbs == 8:
            print(f"| 11 (t = 8, 3 layers of h 20,480 a stage, 8p) | p = 1, 2, 4, 8 at batch 8 | "
                  f"{series(tflops, 1)} TFLOP/s per GPU | falls as p grows |")
        else:
            print(f"| 11 | the same at batch 128 | {series(tflops, 1)} | falls much less |")
    batches = (12, 24, 36, 48, 60)
    fig12 = [f"{GPT3_175B} {layout(8, 12, 1, b)} {SC21} {RECOMPUTE}" for b in batches]
    plain = [r.step_s(a, 96) for a in fig12]
    inter = [r.step_s(f"{a} {INTERLEAVED}", 96) for a in fig12]
    print(f"| 12 (175B, 96; t 8, p 12) | batch 12, 24, 36, 48, 60: not interleaved | {series(plain)} s | |")
    lead = "**" if all(i < p for i, p in zip(inter, plain, strict=True)) else ""
    print(f"| 12 | interleaved (2 layers a virtual stage) | {lead}{series(inter)}{lead} | "
          "faster at every batch, less so as it grows |")
    fig16 = {gbs: [r.step_s(f"{MODEL_91B} {layout(8, 8, mbs, gbs)} {SC21} {RECOMPUTE}", 64) for mbs in (1, 2, 4, 8)]
             for gbs in (512, 128)}
    print(f"| 16 (91B, 64; t 8, p 8) | micro-batch 1, 2, 4, 8 at batch 512 | "
          f"{series(fig16[512], best=min(fig16[512]))} s | "
          f"best strictly inside{missed(min(fig16[512]) in (fig16[512][0], fig16[512][-1]))} |")
    print(f"| 16 | the same at batch 128 | {series(fig16[128], best=min(fig16[128]))} | "
          f"the same{missed(min(fig16[128]) in (fig16[128][0], fig16[128][-1]))} |")
    with_r, without = [], []
    for gbs in (1, 8, 32, 256):
        base = f"{MODEL_145B} {layout(8, 16, 1, gbs)} {SC21}"
        with_r.append(r.step_s(f"{base} {RECOMPUTE}", 128))
        without.append(r.run(base, 128))
    memory = ", ".join(f"{d['training']['memory_per_gpu_gib']:.1f}" for d in without)
    print(f"| 17 (145B, 128; t 8, p 16) | batch 1, 8, 32, 256 with recomputation | {series(with_r)} s | "
          "slower, up to about a third |")
    print(f"| 17 | without | {series([d['iteration_time_ns'] / 1e9 for d in without])} s ({memory} GiB) | "
          f"does not fit at large batch{missed(bool(without[-1]['training']['fits']))} |")
    no_sg = [r.step_s(f"{a} {INTERLEAVED} --no-scatter-gather-tensors-in-pipeline", 96) for a in fig12]
    gains = [n / s - 1 for n, s in zip(no_sg, inter, strict=True)]
    print(f"| 18 (175B, 96, interleaved) | batch 12, 24, 36, 48, 60: with scatter/gather | {series(inter)} s | |")
    print(f"| 18 | without (`--no-scatter-gather-tensors-in-pipeline`) | {series(no_sg)} "
          f"({min(gains):+.1%} to {max(gains):+.1%}) | slower, more at large batch, up to about 11% |")
    _figure_prose(r, fig16[128], without[-1], inter[-1], gains)


def _figure_prose(r: Runner, fig16_128: list[float], fig17_256: dict, fig18_60: float, gains: list[float]) -> None:
    """The figures the prose under the table quotes."""
    print(f"16 at batch 128: micro-batch 2 against 1 {fig16_128[1] / fig16_128[0] - 1:+.1%}")
    parts = [last_npu(r.run(f"{MODEL_91B} {layout(8, 8, mbs, 128)} {SC21} {RECOMPUTE}", 64)) for mbs in (1, 2)]
    busy = [p["finish"] - p.get("bubble", 0.0) for p in parts]
    print(f"   busy (step less bubble) a sample, micro-batch 2 against 1: {busy[1] / busy[0] - 1:+.1%}; "
          f"GEMMs {parts[1]['compute.gemm'] / parts[0]['compute.gemm'] - 1:+.1%}; bubble share "
          f"{parts[0].get('bubble', 0) / parts[0]['finish']:.1%} and {parts[1].get('bubble', 0) / parts[1]['finish']:.1%}")
    m = fig17_256["training"]["memory_gib"]
    print(f"17 without recomputation at batch 256: {fig17_256['training']['memory_per_gpu_gib']:.1f} GiB "
          f"({m['weights'] + m['gradients'] + m['optimizer']:.1f} of weights, gradients and optimizer, "
          f"{m['activations']:.1f} of activations)")
    # Section 5.6: recomputation at large batch is "up to 2x higher than the best throughput
    # achieved without activation recomputation (for a smaller batch size)": which batch is that?
    def per_s(gbs: int, flags: str) -> float:
        return gbs / r.step_s(f"{MODEL_145B} {layout(8, 16, 1, gbs)} {SC21} {flags}", 128)
    with_256 = per_s(256, RECOMPUTE)
    ratios = ", ".join(f"batch {b} {with_256 / per_s(b, ''):.2f}x" for b in (8, 16, 32))
    print(f"   recomputation at batch 256 ({with_256:.2f} sequences/s) against none at {ratios}")
    part = last_npu(r.run(f"{GPT3_175B} {layout(8, 12, 1, 60)} {SC21} {RECOMPUTE} {INTERLEAVED}", 96))
    busy = sum(v for k, v in part.items() if k.startswith("compute.") and k != "compute.optimizer")
    chunk = (busy + part.get("comm.tp", 0.0)) / (60 * 4)  # 60 micro-batches x 4 chunks a stage
    print(f"18: gain grows by {(gains[-1] - gains[0]) * 100:.2f} points; a chunk's forward and backward "
          f"(compute and tp all-reduces) {chunk:.1f} ms at batch 60 ({fig18_60:.2f} s)")


# --- zero-bubble schedules (Qi et al., ICLR 2024)
V_PIPE = ("--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
          "--pipeline-model-parallel-size 4 --bf16 --vocab-size 128")
DEEP = ("--num-layers 64 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --micro-batch-size 1 "
        "--global-batch-size 128 --pipeline-model-parallel-size 16 --bf16")
TWO_CHUNKS = "--virtual-pipeline-model-parallel-size 2"


def _three(r: Runner, args: str, gpus: int) -> list[dict]:
    """ZB-V, ZB-H1 and interleaved 1F1B (two chunks a stage) on ``args``."""
    return [r.run(f"{args} {TWO_CHUNKS}", gpus, "zb-v"), r.run(args, gpus, "zb-h1"),
            r.run(f"{args} {TWO_CHUNKS}", gpus, "interleaved-1f1b")]


def zero_bubble(r: Runner) -> None:
    h1_args = f"{V_PIPE} --global-batch-size 16 --tensor-model-parallel-size 2"  # 8 micro-batches a replica
    h1, one = r.step_s(h1_args, 16, "zb-h1"), r.step_s(h1_args, 16)
    print(f"ZB-H1, tp 2 x pp 4 x dp 2 (4 layers a stage, 8 micro-batches a replica): {h1:.3f} s against 1F1B's "
          f"{one:.3f} ({1 - h1 / one:.1%} faster)")
    for m in (8, 32):
        v, zh1, inter = (d["iteration_time_ns"] / 1e9 for d in _three(r, f"{V_PIPE} --global-batch-size {m}", 4))
        print(f"ZB-V, 4 stages, {m} micro-batches: {v:.3f} s against ZB-H1's {zh1:.3f} and interleaved 1F1B's "
              f"{inter:.3f}")
    for tp, vocab in ((1, 128), (2, 128), (2, 51200)):
        runs = _three(r, f"{DEEP} --tensor-model-parallel-size {tp} --vocab-size {vocab}", 16 * tp)
        v, zh1, inter = (d["iteration_time_ns"] / 1e9 for d in runs)
        (bv, tv), (bh, th) = ((p.get("bubble", 0.0), p.get("comm.tp", 0.0)) for p in map(last_npu, runs[:2]))
        print(f"ZB-V, 64 layers (h 4096) at tp {tp} x pp 16, 128 micro-batches, vocabulary {vocab}: {v:.2f} s "
              f"against ZB-H1's {zh1:.2f} and interleaved 1F1B's {inter:.2f}; bubble {bv:.0f} ms against {bh:.0f}, "
              f"comm.tp {tv:.0f} against {th:.0f}")


# --- the unfused softmax where the fused kernel does not take the shape (2021 names)
SC21_NAMES = "--checkpoint-activations --DDP-impl local --fp16 --loss-scale 8192"


def fallback(r: Runner) -> None:
    """The layouts docs/megatron.md names after SC'21's Table 2: more heads a GPU or a longer
    sequence than Megatron's fused scale-mask-softmax takes."""
    def seq(s: int) -> str:
        return f"--seq-length {s} --max-position-embeddings {s}"

    gpt3 = f"{GPT3_175B} {SC21_NAMES} {seq(2048)} {layout(16, 4, 1, 1536)}"
    print(f"175B at tp 16 x pp 4, micro-batch 1, batch 1,536 on 1,536 GPUs: {r.step_s(gpt3, 1536):.2f} s")
    for mbs in (1, 4):
        args = f"--num-layers 40 --hidden-size 5120 --num-attention-heads 40 {SC21_NAMES} {seq(2048)} {layout(8, 1, mbs, 64)}"
        print(f"13B at tp 8, micro-batch {mbs}, batch 64 on 64 GPUs: {r.step_s(args, 64):.2f} s")
    args = f"--num-layers 32 --hidden-size 4096 --num-attention-heads 32 {SC21_NAMES} {seq(4096)} {layout(4, 1, 1, 64)}"
    print(f"6.7B at sequence 4,096, tp 4, micro-batch 1, batch 64 on 64 GPUs: {r.step_s(args, 64):.2f} s")


# --- a fine-grained mixture of experts, its local experts one after another or grouped
#: Qwen3-30B-A3B's shape (its Hugging Face config: 48 layers, h 2048, 32 heads over 4 key-value
#: groups of width 128, 128 experts of width 768 at top-8, vocabulary 151,936) at sequence 4,096
#: and batch 512, ep 8 over 64 H100s (dp 64), bf16, the distributed optimizer, the all-to-all
#: dispatcher; docs/megatron.md quotes its step with and without --moe-grouped-gemm
MOE_QWEN3 = ("--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --group-query-attention "
             "--num-query-groups 4 --kv-channels 128 --seq-length 4096 --max-position-embeddings 4096 "
             "--vocab-size 151936 --bf16 --swiglu --disable-bias-linear --normalization RMSNorm "
             "--position-embedding-type rope --num-experts 128 --moe-ffn-hidden-size 768 --moe-router-topk 8 "
             "--expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall --micro-batch-size 1 "
             "--global-batch-size 512 --use-distributed-optimizer")
MOE_CLUSTER = (("preset", "dgx-h100"), ("inter_node_gbit_s", 3200))


def moe(r: Runner) -> None:
    sequential = r.step_s(MOE_QWEN3, 64, cluster=MOE_CLUSTER)
    grouped = r.step_s(f"{MOE_QWEN3} --moe-grouped-gemm", 64, cluster=MOE_CLUSTER)
    print(f"Qwen3-30B-A3B-like MoE on 64 H100s, ep 8: {sequential:.2f} s a step with SequentialMLP, "
          f"{grouped:.2f} s with --moe-grouped-gemm ({grouped / sequential - 1:+.1%})")


TABLES: dict[str, Callable[[Runner], object]] = {"korthikanti": korthikanti, "korthikanti-fp16": korthikanti_fp16,
                                                 "layouts": layouts, "figures": figures,
                                               "zero-bubble": zero_bubble, "fallback": fallback, "moe": moe}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", default=",".join(TABLES), help=f"comma-separated, of {', '.join(TABLES)} (default all)")
    a = p.parse_args()
    chosen = [t.strip() for t in a.tables.split(",") if t.strip()]
    unknown = [t for t in chosen if t not in TABLES]
    if unknown or not chosen:
        p.error(f"--tables: {', '.join(unknown) or 'none given'}: pick from {', '.join(TABLES)}")
    with tempfile.TemporaryDirectory() as folder:
        runner = Runner(folder)
        for name in chosen:
            print(f"## {name}", flush=True)
            TABLES[name](runner)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
