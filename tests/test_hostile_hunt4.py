"""A fourth hunt for inputs that ran as something other than what they say: each is now simulated
as Megatron-LM runs it, or refused in one line naming the file, the field and the fix."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


@pytest.mark.parametrize("lengths", ["--seq-length 2048 --encoder-seq-length 512",
                                     "--encoder-seq-length 512 --seq-length 2048",
                                     "--seq-length=1024 --encoder-seq-length=1024"])
def test_seq_length_beside_encoder_seq_length_is_refused(lengths):
    # Megatron-LM (every release, validate_args): if args.seq_length is not None:
    # assert args.encoder_seq_length is None; the two names were one argument here, and the
    # later silently won (a step of 512 tokens priced for a line that says 2048)
    with pytest.raises(InvalidConfigurationError) as info:
        parse(f"{BASE} {lengths} --max-position-embeddings 2048", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "\n" not in message
    assert info.value.rule == "one sequence-length name" and "--seq-length alone" in message


def test_encoder_seq_length_alone_is_the_sequence():
    # Megatron: else: assert args.encoder_seq_length is not None; args.seq_length = args.encoder_seq_length
    assert parse(BASE + " --encoder-seq-length 512", 8, WHERE).seq == 512
    assert parse(BASE + " --seq-length 512 --seq-length 1024", 8, WHERE).seq == 1024  # argparse: the last


def _megatron_sweep(tmp_path, axes: dict, args: str) -> str:
    import yaml

    base = {"workload": {"generate": "megatron", "args": args}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"base": base, "axes": axes}, sort_keys=False))
    return str(path)


@pytest.mark.parametrize("switch", ["no-overlap-p2p-communication", "moe-grouped-gemm"])
def test_an_axis_turning_an_accepted_switch_on_and_off_sweeps_it(tmp_path, switch):
    # a Megatron-LM switch the simulator accepts without modelling it (megatron_flags.SWITCHES)
    # was refused as taking a value: "--no-overlap-p2p-communication takes a value (e.g.
    # --no-overlap-p2p-communication 4); true fits only a switch"
    from simpy_astra.sweep.spec import load_sweep

    args = BASE + " --seq-length 1024 --global-batch-size 16 --pipeline-model-parallel-size 2 " \
                  "--num-virtual-stages-per-pipeline-rank 2"
    points = load_sweep(_megatron_sweep(tmp_path, {f"workload.args.{switch}": [True, False]}, args)).points()
    on, off = (p.scenario["workload"]["args"].split() for p in points)
    assert f"--{switch}" in on and f"--{switch}" not in off
    parse(" ".join(off), 16, WHERE)
    if switch == "no-overlap-p2p-communication":
        # Megatron: without p2p overlap, interleaving needs more than two stages
        with pytest.raises(InvalidConfigurationError) as info:
            parse(" ".join(on), 16, WHERE)
        assert info.value.rule == "interleaving needs pipeline stages"
    else:
        parse(" ".join(on), 16, WHERE)


@pytest.mark.parametrize("tokenizer", ["--tokenizer-type Llama2Tokenizer --tokenizer-model /data/llama2.model",
                                       "--tokenizer-type=HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3-8B",
                                       "--tokenizer-type NullTokenizer"])
def test_a_tokenizer_whose_vocabulary_is_in_its_file_needs_the_vocab_size(tokenizer):
    # Megatron sizes the embedding and output layer by the tokenizer's own vocabulary
    # (build_tokenizer: padded_vocab_size = vocab_size_with_padding(tokenizer.vocab_size)):
    # Llama 2's 32,000 or Llama 3's 128,256 tokens; they were priced as GPT-2's 50,257
    from simpy_astra.errors import InputError

    with pytest.raises(InputError) as info:
        parse(f"{BASE} --seq-length 1024 {tokenizer}", 8, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE + ": ") and "\n" not in message
    assert "--tokenizer-type" in message and "--vocab-size" in message


def test_the_vocab_size_or_gpt2s_tokenizer_gives_the_vocabulary():
    llama2 = parse(f"{BASE} --seq-length 1024 --tokenizer-type Llama2Tokenizer --tokenizer-model t.model "
                   "--vocab-size 32000", 8, WHERE)
    assert llama2.vocab == 32000  # 250 x 128
    gpt2 = parse(f"{BASE} --seq-length 1024 --tokenizer-type GPT2BPETokenizer --vocab-file v.json "
                 "--merge-file m.txt", 8, WHERE)
    assert gpt2.vocab == 50304  # GPT-2's 50,257 padded to 393 x 128


JOB_ARGS = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")


def _cluster_scenario(tmp_path, cluster: dict, **extra):
    import yaml

    doc = {"workload": {"generate": "megatron", "args": JOB_ARGS},
           "cluster": {"preset": "dgx-a100-80gb", "gpus": 32, **cluster}, **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


OWN_NETWORK = {"topology": ["Switch", "Switch"], "npus_count": [8, 4], "bandwidth": [250.0, 23.0],
               "latency": [500.0, 3000.0]}


@pytest.mark.parametrize("cluster, extra, words", [
    # NCCL's all-reduce model (its fitted launch cost, efficiencies, latency scale) times the
    # all-reduce on the analytical backend only: on the congestion-aware one the step was 0.022 s
    # with nccl_launch_us 500 and ring efficiency 0.1 as without them (analytical: 0.012 s -> 0.066 s)
    ({"nccl_launch_us": 500}, {"backend": "congestion_aware"}, "congestion_aware"),
    ({"nccl_ring_efficiency": 0.1}, {"backend": "packet"}, "packet"),
    # a network of the scenario's own replaces the preset's, and NCCL's model with it
    ({"nccl_latency_scale": 3}, {"network": OWN_NETWORK}, "network"),
    # ... and the preset's leaves and spine
    ({"oversubscription": 4, "nodes_per_leaf": 1}, {"network": OWN_NETWORK}, "network"),
])
def test_a_cluster_key_the_run_never_reads_is_refused(tmp_path, capsys, cluster, extra, words):
    from simpy_astra.cli.main import main

    scenario = _cluster_scenario(tmp_path, cluster, **extra)
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    key = sorted(cluster)[0]
    assert len(err) == 1 and err[0].startswith(f"error: {scenario}: cluster.{key}"), err
    assert words in err[0] and f"remove {key}" in err[0]


def test_the_nccl_fit_on_the_analytical_backend_is_read(tmp_path, capsys):
    from simpy_astra.cli.main import main

    assert main(["run", str(_cluster_scenario(tmp_path, {"nccl_launch_us": 500})), "--quiet"]) == 0
    assert main(["run", str(_cluster_scenario(tmp_path, {}, network=OWN_NETWORK)), "--quiet"]) == 0


@pytest.mark.parametrize("preset", ["dgx-a100-80gb", "dgx-h100"])
def test_a_roofline_timed_workload_on_a_cluster_without_a_roofline_is_refused(tmp_path, capsys, preset):
    # generate transformer writes FLOPs for a system's roofline (as STAGE does); a cluster's
    # system times compute by each node's duration, so every kernel took 1 ns: Llama 2 7B on
    # 16 GPUs printed 70.2 ms on A100s and 34.1 ms on H100s, all of it communication
    import yaml

    from simpy_astra.cli.main import main

    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "transformer", "preset": "llama2-7b", "dp": 16},
                                        "cluster": {"preset": preset, "gpus": 16}}))
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {scenario}: workload"), err
    assert "roofline" in err[0] and "megatron" in err[0]


@pytest.mark.parametrize("workload", [
    {"generate": "microbench", "collective": "all_reduce", "size": 1048576},
    {"generate": "microbench", "collective": "send_recv", "size": 1048576, "src": 0, "dst": 31},
])
def test_gpu_figures_beside_a_workload_that_times_no_kernel_on_the_gpu_are_refused(tmp_path, capsys, workload):
    # a microbenchmark has no compute: 85,917 ns at tensor_tflops 10 as at the A100's 312
    import yaml

    from simpy_astra.cli.main import main

    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": workload, "cluster": {"preset": "dgx-a100-80gb", "gpus": 32,
                                                                          "gpu": {"tensor_tflops": 10}}}))
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {scenario}: cluster.gpu:"), err
    assert "megatron" in err[0] and "remove gpu" in err[0]


def test_gpu_figures_beside_a_megatron_job_are_read(tmp_path, capsys):
    from simpy_astra.cli.main import main

    assert main(["run", str(_cluster_scenario(tmp_path, {})), "--quiet"]) == 0
    assert main(["run", str(_cluster_scenario(tmp_path, {"gpu": {"tensor_tflops": 10}})), "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] != out[1]


def test_traces_on_a_file_system_without_room_name_sizes_that_differ(tmp_path, monkeypatch):
    # a few MB of traces under /proc (no free space) said "need about 0.0 GB but '/proc' has 0.0 GB free"
    import shutil
    from collections import namedtuple

    from simpy_astra.errors import InputError
    from simpy_astra.workloads.trace_output import check_free_space

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _folder: usage(0, 0, 0))
    with pytest.raises(InputError) as info:
        check_free_space(str(tmp_path / "t" / "x"), 3_400_000)
    assert "3.4 MB" in str(info.value) and "no free space" in str(info.value)
    monkeypatch.setattr(shutil, "disk_usage", lambda _folder: usage(0, 0, 2_500_000_000))
    with pytest.raises(InputError) as info:
        check_free_space(str(tmp_path / "t" / "x"), 12_000_000_000)
    assert "12.0 GB" in str(info.value) and "2.5 GB free" in str(info.value)


@pytest.mark.parametrize("flag", ["--data-parallel-size=2", "--data-parallel-size 2", "--log-every-step",
                                  "--lr-schedule=cosine"])
def test_a_word_no_megatron_lm_has_under_a_no_effect_prefix_is_refused(flag):
    # Megatron-LM has no --data-parallel-size (dp is gpus / (tp x pp x cp)); its argparse stops on
    # it as unrecognized. Under the accepted prefix --data- it ran silently with dp 16, and without
    # the = the error's own fix ("write --data-parallel-size=2") led there
    from simpy_astra.errors import InputError

    with pytest.raises(InputError) as info:
        parse(f"{BASE} --seq-length 1024 {flag}", 16, WHERE)
    assert "is not an argument of Megatron-LM" in str(info.value) and flag.split("=")[0].split()[0] in str(info.value)


def test_megatron_lms_own_flags_under_a_no_effect_prefix_are_accepted():
    job = parse(f"{BASE} --seq-length 1024 --data-cache-path /c --lr-decay-style cosine --tokenizer-model t.model "
                "--log-throughput --eval-iters 10 --rotary-base 10000 --vocab-size 32000", 16, WHERE)
    assert job.dp == 16


def test_a_partial_system_beside_a_cluster_says_it_replaces_the_presets(tmp_path, capsys):
    # system: beside cluster: replaces the preset's system whole; one key alone was refused as
    # "preferred-dataset-splits is missing", which sent users adding fields one at a time
    from simpy_astra.cli.main import main

    path = tmp_path / "s.yaml"
    path.write_text("workload: {generate: microbench, collective: all_to_all, size: 1048576}\n"
                    "cluster: {preset: dgx-h100, gpus: 16}\n"
                    "system: {all-to-all-group-implementation: ring}\n")
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: system: beside cluster: it replaces the preset's whole system" in err
    assert "leave system out" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,expected", [
    (["convert"], "convert: give the format to convert from; use one of text, pytorch"),  # was "unknown format 'nothing'"
    (["generate"], "generate: give the kind of workload to generate; use one of microbench"),
])
def test_a_command_without_its_kind_asks_for_it(argv, expected, capsys):
    from simpy_astra.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "'nothing'" not in err


def test_a_sweep_base_that_is_a_folder_names_the_sweep_and_its_field(tmp_path, capsys):
    from simpy_astra.cli.main import main

    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {tmp_path}\naxes:\n  cluster.gpus: [8]\n")
    assert main(["sweep", str(sweep), "--list"]) == 2
    assert f"{sweep}: base: {tmp_path} is a directory; name the base scenario file in it" in capsys.readouterr().err


def test_a_megatron_argument_refused_by_name_is_named_so_as_a_sweep_axis(tmp_path, capsys):
    # --multi-latent-attention is Megatron's, not modelled: it was called "not a Megatron-LM argument"
    from simpy_astra.cli.main import main

    sweep = tmp_path / "s.yaml"
    sweep.write_text("base:\n  workload: {generate: megatron, args: '--num-layers 2 --hidden-size 64 "
                     "--num-attention-heads 4 --seq-length 32 --micro-batch-size 1'}\n"
                     "  cluster: {preset: dgx-a100-80gb, gpus: 8}\n"
                     "axes:\n  workload.args.multi-latent-attention: [true, false]\n")
    assert main(["sweep", str(sweep), "--list"]) == 2
    err = capsys.readouterr().err
    assert "--multi-latent-attention is not modelled (multi-latent attention); leave it out" in err
