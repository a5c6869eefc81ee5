"""Megatron-LM arguments read as Megatron reads them: its validity rules refused as
InvalidConfigurationError (one per family), malformed values and words as InputError naming
the argument, and the cost bound answered before anything is built."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.generator import job_and_gpu

BASE = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


def _refused(args: str, gpus: int = 8) -> InvalidConfigurationError:
    with pytest.raises(InvalidConfigurationError) as info:
        parse(args, gpus, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "\n" not in message
    return info.value


@pytest.mark.parametrize("extra,gpus,rule", [
    (" --tensor-model-parallel-size 3", 6, "heads divisible by tp"),
    (" --num-attention-heads 12", 8, "hidden divisible by heads"),
    (" --group-query-attention --num-query-groups 3", 8, "heads divisible by query groups"),
    (" --num-attention-heads 24 --hidden-size 1536 --group-query-attention --num-query-groups 6 "
     "--tensor-model-parallel-size 4", 8, "query groups divisible by tp"),
    (" --tensor-model-parallel-size 4", 6, "gpus divisible by tp x pp x cp"),
    (" --seq-length 1023 --context-parallel-size 2", 8, "sequence divisible by 2 x cp"),
    (" --max-position-embeddings 512", 8, "position embeddings cover the sequence"),
    (" --pipeline-model-parallel-size 8 --num-layers 12", 8, "layers divisible by pp"),
    (" --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 3 --num-layers 8", 8,
     "stage layers divisible by chunk layers"),
    (" --pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 2 --DDP-impl local", 8,
     "interleaving needs pipeline stages"),
    (" --pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 2 --global-batch-size 4", 8,
     "interleaved micro-batches divisible by pp"),
    (" --global-batch-size 12", 8, "global batch divisible by micro-batch x dp"),
    (" --fp16", 8, "one precision"),
    (" --DDP-impl torch", 8, "fp32 gradient accumulation needs local DDP"),
    (" --recompute-granularity full", 8, "full recomputation needs a method"),
    (" --recompute-granularity selective --recompute-method uniform", 8, "selective recomputation takes no method"),
    (" --activations-checkpoint-method uniform --recompute-activations", 8, "one release's recomputation names"),
    (" --activations-checkpoint-method block --recompute-num-layers 2", 8, "one release's recomputation names"),
    (" --activations-checkpoint-method uniform --distribute-checkpointed-activations", 8,
     "distributed activations need tp and recomputation"),
    (" --tensor-model-parallel-size 2 --distribute-checkpointed-activations", 8,
     "distributed activations need tp and recomputation"),
    (" --tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity full --recompute-method uniform "
     "--recompute-num-layers 1 --distribute-saved-activations", 8, "distributed activations exclude sequence parallelism"),
    (" --tensor-model-parallel-size 2 --tp-comm-overlap", 8, "tp overlap needs sequence parallelism"),
    (" --overlap-param-gather --overlap-grad-reduce", 8, "param gather overlap needs the distributed optimizer"),
    (" --num-experts 6 --expert-model-parallel-size 4", 8, "experts divisible by ep"),
    (" --expert-model-parallel-size 2", 8, "expert parallelism needs experts"),
    # Megatron lays the expert groups out with or without experts (their optimizer shards once
    # divided by 1 // 2 = 0 here)
    (" --expert-tensor-parallel-size 2", 1, "expert layout divides the stage"),
    (" --num-experts 4 --moe-router-topk 1", 8, "top-1 routing needs pre-softmax"),
    (" --context-parallel-size 2 --cp-comm-type a2a+p2p", 8, "a2a+p2p needs hierarchical cp sizes"),
    (" --context-parallel-size 2 --transformer-impl local", 8, "context parallelism needs Transformer Engine"),
    (" --context-parallel-size 2 --DDP-impl local", 8, "context parallelism needs Transformer Engine"),
    (" --context-parallel-size 2 --attention-backend unfused", 8, "context parallelism needs fused attention"),
    (" --defer-embedding-wgrad-compute", 8, "deferred embedding gradients need pp and fusion"),
    # megatron/training/arguments.py validate_args
    (" --position-embedding-type relative --transformer-impl local", 8,
     "relative position embeddings need Transformer Engine"),
    (" --position-embedding-type mrope", 8, "mrope needs its sections"),
    (" --no-position-embedding", 8, "no --no-position-embedding"),
    (" --attention-backend local", 8, "local attention backend needs the local spec"),
    (" --context-parallel-size 2 --cp-comm-type p2p a2a", 8, "one cp comm type or one a layer"),
    # Transformer Engine's AttnFuncWithCPAndQKVOA2A (one key/value head a tp rank with 2 groups at tp 2)
    (" --context-parallel-size 2 --cp-comm-type a2a --tensor-model-parallel-size 2 --group-query-attention "
     "--num-query-groups 2", 8, "a2a context parallelism splits heads"),
    (" --accumulate-allreduce-grads-in-fp32 --main-grads-dtype bf16", 8,
     "fp32 gradient accumulation needs fp32 main gradients"),
    # 2021's names with FP8, which no Megatron-LM of theirs had (see _fp8_era)
    (" --fp8-format hybrid --checkpoint-activations", 8, "fp8 needs a Megatron-LM with fp8"),
    (" --fp8-format hybrid --activations-checkpoint-method uniform", 8, "fp8 needs a Megatron-LM with fp8"),
    (" --fp8-format hybrid --DDP-impl local", 8, "fp8 needs a Megatron-LM with fp8"),
    # megatron/core/optimizer/distrib_optimizer.py DistributedOptimizer.__init__
    (" --optimizer sgd --use-distributed-optimizer", 8, "distributed optimizer needs Adam"),
    # megatron/core/optimizer/__init__.py get_megatron_optimizer; optimizer_config.py OptimizerConfig.__post_init__
    (" --use-precision-aware-optimizer", 8, "precision-aware optimizer needs the distributed optimizer"),
    (" --use-precision-aware-optimizer --use-distributed-optimizer --optimizer sgd", 8,
     "precision-aware optimizer is Adam"),
    (" --exp-avg-dtype bf16", 8, "optimizer dtypes need the precision-aware optimizer"),
    (" --main-grads-dtype bf16", 8, "optimizer dtypes need the precision-aware optimizer"),
    # megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__
    (" --moe-ffn-hidden-size 512", 8, "expert width needs experts"),
    (" --num-experts 4 --moe-router-enable-expert-bias", 8, "expert bias needs sigmoid scores"),
    (" --num-experts 4 --tensor-model-parallel-size 2", 8, "expert biases need etp 1"),
    (" --num-experts 4 --disable-bias-linear --moe-shared-expert-intermediate-size 512 --moe-shared-expert-overlap", 8,
     "shared expert overlap needs all-to-all"),
])
def test_megatron_refuses_and_so_do_we(extra, gpus, rule):
    error = _refused(BASE + extra, gpus)
    assert error.rule == rule
    assert "Megatron" in str(error) or "a token cannot" in str(error)


def test_what_megatron_accepts_is_accepted():
    # today's Megatron-LM sub-shards key/value heads when tp exceeds the query groups
    job = parse(BASE.replace("16 ", "32 ", 1) + " --group-query-attention --num-query-groups 8 "
                "--tensor-model-parallel-size 16 --num-attention-heads 32", 16, WHERE)
    assert job.kv_heads == 8 and job.tp == 16
    # Megatron turns sequence parallelism off at tp 1 (a warning, not an error)
    assert not parse(BASE + " --sequence-parallel", 8, WHERE).sequence_parallel
    assert parse(BASE + " --num-experts 4 --moe-router-topk 1 --moe-router-pre-softmax", 8, WHERE).topk == 1


@pytest.mark.parametrize("extra", [
    " --position-embedding-type relative",  # Transformer Engine's layers, today's default
    " --position-embedding-type rope --no-position-embedding",
    " --no-position-embedding --DDP-impl local",  # 2023-02 to 07 (with --DDP-impl): no position table
    " --attention-backend flash",
    " --num-layers 2 --context-parallel-size 2 --cp-comm-type p2p p2p",  # one type a layer
    " --context-parallel-size 2 --cp-comm-type a2a --group-query-attention --num-query-groups 2",
    " --accumulate-allreduce-grads-in-fp32 --main-grads-dtype fp32",
    " --fp8-format hybrid --DDP-impl local --transformer-impl transformer_engine",  # Megatron-LM of 2023-08-24
    " --fp8-format hybrid",
    " --optimizer sgd",
    " --use-precision-aware-optimizer --use-distributed-optimizer --exp-avg-dtype bf16 --main-grads-dtype bf16",
    " --optimizer sgd --use-distributed-optimizer --DDP-impl local",  # 2022-02 to 2023-05: SGD was sharded too
    " --moe-ffn-hidden-size 512 --moe-layer-freq 2",  # a dense model between MoE layers: ignored, not refused
    " --num-experts 4 --moe-router-enable-expert-bias --moe-router-score-function sigmoid",
    # (MoE at tp > 1 needs sequence parallelism: moe_layer.py MoELayer.forward)
    " --num-experts 4 --tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --sequence-parallel",
    " --num-experts 4 --tensor-model-parallel-size 2 --disable-bias-linear --sequence-parallel",
    " --num-experts 4 --disable-bias-linear --moe-shared-expert-intermediate-size 512 --moe-shared-expert-overlap "
    "--moe-token-dispatcher-type alltoall",
])
def test_the_other_side_of_each_new_rule_is_accepted(extra):
    assert parse(BASE + extra, 8, WHERE).num_layers >= 2


def test_the_distributed_optimizer_of_2022_needed_local_ddp():
    fp32 = BASE.replace(" --bf16", "")  # bf16 with --DDP-impl torch is refused first
    assert _refused(fp32 + " --DDP-impl torch --use-distributed-optimizer").rule == "distributed optimizer needs local DDP"
    assert parse(fp32 + " --DDP-impl local --use-distributed-optimizer", 8, WHERE).distributed_optimizer


def test_tp_comm_overlap_is_transformer_engines_and_megatrons_own_layers_ignore_it():
    """``--tp-comm-overlap`` is read only by Transformer Engine's layers (Megatron-Core's
    ``extensions/transformer_engine.py``, its userbuffers); with ``--transformer-impl local``
    Megatron accepts the flag and its own linear layers run their collectives whole."""
    args = BASE + " --tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap"
    assert parse(args, 8, WHERE).tp_comm_overlap
    assert not parse(args + " --transformer-impl local", 8, WHERE).tp_comm_overlap


def test_fp8_needs_a_gpu_with_fp8_units():
    a100 = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c")
    h100 = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c")
    args = BASE + " --fp8-format hybrid"
    with pytest.raises(InvalidConfigurationError, match="FP8 tensor cores") as info:
        job_and_gpu({"args": args, "gpus": 8, "gpu": a100.gpu}, "s.yaml: workload")
    assert info.value.rule == "fp8 needs fp8 hardware"
    job, _gpu = job_and_gpu({"args": args, "gpus": 8, "gpu": h100.gpu}, "s.yaml: workload")
    assert job.fp8
    # Megatron's own layers (--transformer-impl local) compute in bf16 inside TE's fp8_autocast,
    # which touches only TE modules; the autocast still refuses a GPU without FP8
    local = args + " --transformer-impl local --use-distributed-optimizer --fp8-param-gather"
    job, _gpu = job_and_gpu({"args": local, "gpus": 8, "gpu": h100.gpu}, "s.yaml: workload")
    assert job.fp8_requested and not job.fp8 and not job.fp8_param_gather
    with pytest.raises(InvalidConfigurationError, match="FP8 tensor cores"):
        job_and_gpu({"args": local, "gpus": 8, "gpu": a100.gpu}, "s.yaml: workload")


@pytest.mark.parametrize("extra,says", [
    (" --global-batch-size -8", "argument --global-batch-size: must be an integer >= 1 (got -8)"),
    (" --ffn-hidden-size -1", "argument --ffn-hidden-size: must be an integer >= 1 (got -1)"),
    (" --vocab-size 0", "argument --vocab-size: must be an integer >= 1 (got 0)"),
    (" --kv-channels -64", "argument --kv-channels: must be an integer >= 1 (got -64)"),
    (" --pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size -1",
     "argument --virtual-pipeline-model-parallel-size: must be an integer >= 1 (got -1)"),
    (" --hidden-size 12k", "argument --hidden-size: invalid int value: '12k'"),
    (" \u2013tensor-model-parallel-size 4", "starts with an en dash, not two ASCII hyphens; type "
                                            "--tensor-model-parallel-size"),
    (" \u2014tensor-model-parallel-size 4", "starts with an em dash"),
    (" -tensor-model-parallel-size 4", "has one dash; Megatron-LM's flags take two: --tensor-model-parallel-size"),
    (" --use-cpu-initialization 4", "'4' follows --use-cpu-initialization, which takes no value"),
    (" --sequence-parallel 4", "'4' follows --sequence-parallel, which takes no value"),
    (" --lr 0.1 0.2", "'0.2' follows --lr '0.1', which takes one value"),
    (" --structured-logs x", "does not know whether it takes values, and 'x' follows it"),
    # under an accepted prefix, a word no Megatron-LM has is refused as its argparse refuses it
    (" --log-frobnicate x", "--log-frobnicate is not an argument of Megatron-LM's pretrain_gpt.py"),
    (" --use-flash-atten", "did you mean --use-flash-attn?"),
    (" --fp32-residual-connection", "is a Megatron-LM argument that may change a step's time and is not modelled"),
    # Megatron overlaps dist_muon's parameter gather without the distributed optimizer: not a
    # rule of Megatron's, an optimizer not modelled
    (" --overlap-param-gather --overlap-grad-reduce --optimizer dist_muon",
     "--optimizer dist_muon: only adam and sgd are modelled"),
])
def test_malformed_arguments_are_input_errors_naming_the_argument(extra, says):
    with pytest.raises(InputError) as info:
        parse(BASE + extra, 8, WHERE)
    assert not isinstance(info.value, InvalidConfigurationError)
    assert str(info.value).startswith(WHERE + ": ") and says in str(info.value)


def test_a_pasted_launch_script_is_read_as_the_shell_would():
    script = ("torchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --num-layers 4 \\\n    --hidden-size\u00a01024 \\\n"
              "    --num-attention-heads 16 --seq-length 1024 \\\n    --micro-batch-size 1 --bf16 \\\n"
              "    --tensor-model-parallel-size 2 --data-path 0.5 a 0.5 b --split 969,30,1 --use-cpu-initialization")
    job = parse(script, 8, WHERE)
    assert (job.num_layers, job.hidden, job.tp) == (4, 1024, 2)
    as_yaml_list = yaml.safe_load("[--num-layers, 4, --hidden-size, 1024, --num-attention-heads, 16, "
                                  "--seq-length, 1024, --micro-batch-size, 1]")
    assert parse(as_yaml_list, 8, WHERE).num_layers == 4


def test_a_command_line_too_long_for_a_launch_script_is_refused_before_argparse_reads_it():
    """argparse's time grows with the square of the words: 4,000 repeats of one flag took 0.5 s
    and 200,000 (a line pasted in a loop, 3 MB) would take about 20 minutes. More than 4,096
    words, or a string of more than 2^20 characters, is refused by count, as words or a list."""
    from simpy_astra.workloads.megatron.command_line import MAX_WORDS

    repeated = " --num-layers 2" * (MAX_WORDS // 2)  # 4,096 words with BASE's: the limit passed
    with pytest.raises(InputError, match=f"^{WHERE}: more than 4,096 words, .*each flag once"):
        parse(BASE + repeated, 8, WHERE)
    with pytest.raises(InputError, match="more than 4,096 words"):
        parse(BASE.split() + repeated.split(), 8, WHERE)
    with pytest.raises(InputError, match="more than 4,096 words"):  # counted before empty entries drop out
        parse(BASE.split() + [""] * MAX_WORDS + ["--num-layers", "3"], 8, WHERE)
    with pytest.raises(InputError, match="3,000,000 characters, more than a launch script's arguments hold"):
        parse(BASE + " " * (3_000_000 - len(BASE)), 8, WHERE)
    assert parse(BASE + " --num-layers 2" * 100, 8, WHERE).num_layers == 2  # repeats: the last wins


@pytest.mark.parametrize("extra,gpus,says", [
    (" --num-layers 1000000", 8, "18,000,064 trace nodes"),
    (f" --num-experts {2**63 - 1}", 8, "PiB per GPU"),  # 2**63: past int64, refused by its range
    (" --global-batch-size 100000000", 8, "trace nodes (12,500,000 micro-batches"),
    (" --hidden-size 1000000000 --num-attention-heads 16", 8, "PiB per GPU"),
    ("", 1_000_000_000, "1,000,000,000 GPUs are more than this simulator builds (262,144"),
    ("", 2**63, "9,223,372,036,854,775,808 GPUs"),
])
def test_the_cost_bound_refuses_with_its_figure(extra, gpus, says):
    with pytest.raises(InputError) as info:
        parse(BASE + extra, gpus, WHERE)
    assert says in str(info.value) and str(info.value).startswith(WHERE)


def _scenario(tmp_path, args: str, preset: str = "dgx-a100-80gb", gpus: int = 8) -> str:
    path = tmp_path / "scen.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": args},
                                    "cluster": {"preset": preset, "gpus": gpus}}))
    return str(path)


def test_a_scenario_names_its_file_and_field_and_keeps_the_rule(tmp_path):
    path = _scenario(tmp_path, BASE + " --tensor-model-parallel-size 3", gpus=6)
    with pytest.raises(InvalidConfigurationError) as info:
        load_scenario(path)
    assert info.value.rule == "heads divisible by tp"
    assert str(info.value).startswith(f"{path}: workload.args: --num-attention-heads 16")
    with pytest.raises(InvalidConfigurationError, match=f"^{path}: workload.args: --fp8-format"):
        load_scenario(_scenario(tmp_path, BASE + " --fp8-format hybrid"))


@pytest.mark.parametrize("extra,gpus,says", [
    (" --fp8-format hybrid", 8, "workload.args: --fp8-format needs a GPU with FP8 tensor cores"),
    (" --hidden-size 12k", 8, "workload.args: argument --hidden-size: invalid int value: '12k'"),
    (" --hidden-size 1000000000", 8, "workload.args: about "),
    ("", 1_000_000_000, "cluster.gpus: 1,000,000,000"),
])
def test_the_cli_prints_one_line_and_exits_2(tmp_path, extra, gpus, says):
    path = _scenario(tmp_path, BASE + extra, gpus=gpus)
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", path, "--quiet"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {path}: {says}") and done.stderr.count("\n") == 1


def test_megatron_flags_on_the_command_line_get_the_hint_and_generate_names_its_flags(tmp_path):
    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "simpy_astra", *argv], capture_output=True, text=True,
                              timeout=120)

    before = cli("generate", "megatron", "--gpus", "8", "--output", str(tmp_path / "x"), "--num-layers", "4")
    assert before.returncode == 2 and "--num-layers: unknown flag; it is a Megatron-LM argument" in before.stderr
    assert "after --" in before.stderr
    bad = cli("generate", "megatron", "--gpus", "8", "--output", str(tmp_path / "x"), "--", *BASE.split(),
              "--tensor-model-parallel-size", "3")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: generate megatron: arguments after --: 8 GPUs are not a multiple")


@pytest.mark.parametrize("own, says", [
    (["--gpus", "0"], "error: --gpus: must be a positive integer"),
    (["--gpus", "12"], "error: --gpus: 12 GPUs do not fill whole nodes of 8"),
    (["--gpus", "8", "--preset", "dgx-b300"], "error: --preset: 'dgx-b300' is not a preset"),
])
def test_generate_megatron_blames_its_own_flags(tmp_path, capsys, own, says):
    """Its cluster errors named '--preset.gpus' and '--preset.preset', flags that do not exist."""
    from simpy_astra.cli.main import main

    assert main(["generate", "megatron", *own, "--output", str(tmp_path / "x"), "--", *BASE.split()]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1, err


def test_a_refused_job_crosses_a_process_boundary_with_its_rule():
    """A sweep runs points in worker processes: the error comes back pickled."""
    import pickle

    error = _refused(BASE + " --fp16")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is InvalidConfigurationError and back.rule == "one precision" and str(back) == str(error)


def test_a_step_past_the_horizon_blames_the_scenario_and_the_gpu(tmp_path):
    """The slowest GPU a preset may state (0.001 TFLOP/s, HBM and L2 at 0.001 GB/s) under a
    large model: L2 feeds each SM's GEMM tile under a million FLOP/s, so one micro-batch's
    backward through two layers of width 65,536 on 8.4M tokens takes about 5e16 us, past the
    9.2e15 us simulated time can hold (2^63 ns). The run is refused naming the scenario's
    workload and the GPU, before any trace file exists (not as a cached trace's node)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "workload": {"generate": "megatron",
                     "args": "--num-layers 2 --hidden-size 65536 --num-attention-heads 64 --seq-length 131072 "
                             "--max-position-embeddings 131072 --micro-batch-size 64 --bf16"},
        "cluster": {"preset": "dgx-h100", "gpus": 8,
                    "gpu": {"tensor_tflops": 0.001, "hbm_gbps": 0.001, "l2_gbps": 0.001}}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--quiet"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{scenario}: workload: the model's dimensions and batch on the H100-SXM5-80GB give a compute step of" \
        in done.stderr and "past the horizon" in done.stderr and "raise cluster.gpu.l2_gb_s: 0.001 (what its gemm kernels run at)" in done.stderr
    assert not list((tmp_path / "cache").rglob("*.et"))
