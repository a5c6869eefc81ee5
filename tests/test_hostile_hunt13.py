"""A thirteenth hunt for inputs that ran as something other than what they say: each is now
refused before the run in one line naming the file, the field and the fix, or runs with a
warning that says what it changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, error_lines, write_yaml
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.wrapped_lines import plain

SMALL_GPT = {"generate": "transformer", "model": "gpt", "dp": 8, "dmodel": 256, "dff": 1024, "head": 4,
             "num_stacks": 2, "seq": 64, "batch": 8, "dvocal": 1000}


def _with_workload(workload: dict | str, **fields) -> dict:
    """The default scenario's system (with a roofline, which generated compute needs) and
    network around ``workload``."""
    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900}
    return {"workload": workload, "system": system, "network": DEFAULT["network"], **fields}


def test_a_kvhead_beside_a_gpt_model_is_said_to_change_nothing(tmp_path, capsys):
    # gpt (STAGE's dense model) keeps a key/value head per query head: kvhead 1 ran as 4 heads
    # without a word, its traces byte for byte those without it, and a sweep over kvhead gave
    # a flat line; STAGE's own command lines pass kvhead so, hence a warning, not an error
    path = write_yaml(tmp_path, _with_workload(dict(SMALL_GPT, kvhead=1)))
    assert main(["run", path, "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert err == [f"warning: {path}: workload.kvhead: (1) changes nothing: a gpt model (STAGE's dense) has a "
                   f"key/value head per query head (4), as STAGE's has; use workload.model llama for "
                   f"grouped-query attention, or remove kvhead"], err
    # kvhead equal to head says what gpt does: no warning; generate says it as run does
    assert main(["run", write_yaml(tmp_path, _with_workload(dict(SMALL_GPT, kvhead=4))), "--quiet"]) == 0
    assert plain(capsys.readouterr().err) == ""
    assert main(["generate", "transformer", "--kvhead", "2", "--dp", "8", "--num-stacks", "1", "--dmodel", "64",
                 "--dff", "64", "--head", "4", "--batch", "8", "--output", str(tmp_path / "w")]) == 0
    assert plain(capsys.readouterr().err).startswith("warning: generate transformer: 'kvhead' (2) changes nothing")


def _megatron(tmp_path: Path, extra: str) -> str:
    """A Megatron job of ``ARGS`` and ``extra`` on 8 A100s (dp 8, global batch 16)."""
    return write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": f"{ARGS} {extra}"},
                                 "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}})


@pytest.mark.parametrize("extra, said", [
    ("--rampup-batch-size abc", "argument --rampup-batch-size: takes three integers, START INCREMENT SAMPLES (got 1: "
                                "abc; Megatron: expected the following format"),
    ("--rampup-batch-size 8 8", "takes three integers, START INCREMENT SAMPLES (got 2: 8 8;"),
    ("--rampup-batch-size 8 x 100", "argument --rampup-batch-size: invalid int value: 'x'"),
    ("--rampup-batch-size 3 5 100", "--rampup-batch-size 3 5 100 does not climb to --global-batch-size 16 in whole "
                                    "steps of 5 (Megatron: expected global batch size interval (13) to be divisible"),
    ("--rampup-batch-size 16 8 100", "does not climb to --global-batch-size 16"),
    ("--rampup-batch-size 4 4 100", "a batch of the ramp is not a multiple of --micro-batch-size 1 x data-parallel "
                                    "size 8 = 8"),
    ("--rampup-batch-size 8 8 100 --train-iters 10",
     "--rampup-batch-size with --train-iters (Megatron: expected no batch-size rampup for iteration-based training)"),
])
def test_a_batch_size_ramp_megatron_refuses_is_refused(tmp_path, capsys, extra, said):
    # every one ran, timing the step at --global-batch-size as if the ramp were not there,
    # where Megatron-LM stops on it (its format, iteration-based training, the ramp's asserts)
    path = _megatron(tmp_path, extra)
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload.args: ") and said in err[0], err


def test_a_batch_size_ramp_says_which_step_is_simulated(tmp_path, capsys):
    # accepted in silence: the figures read as the ramp's, where the step timed is one past it
    assert main(["run", _megatron(tmp_path, "--rampup-batch-size 8 8 1000 --train-samples 100000"), "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert [line for line in err if "rampup" in line] == [
        f"warning: {tmp_path / 's.yaml'}: workload.args: --rampup-batch-size: the step simulated is one past the ramp, "
        f"at --global-batch-size 16; the first 1,000 samples run in smaller batches (from 8), which take less time "
        f"a step"], err


MICROBENCH = {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 8}


def test_packet_settings_on_a_backend_that_reads_none_are_said_to_change_nothing(tmp_path, capsys):
    # packet-size 512 on the analytical or the aware backend ran as without it, in silence
    network = {**DEFAULT["network"], "packet-size": 512}
    path = write_yaml(tmp_path, _with_workload(MICROBENCH, network=network))
    for backend in ("congestion_unaware", "congestion_aware"):
        assert main(["run", path, "--quiet", "--network-backend", backend]) == 0
        err = plain(capsys.readouterr().err).strip().splitlines()
        assert err == [f"warning: {path}: network: field 'packet-size' is accepted but changes nothing on the "
                       f"{backend} backend: only the packet backend splits messages into packets and buffers them "
                       f"in switches; run with --network-backend packet, or remove it"], err
    assert main(["run", path, "--quiet", "--network-backend", "packet"]) == 0
    assert plain(capsys.readouterr().err) == ""
    # ASTRA-sim's flag form reads the same network YAML alike (its figures are untouched)
    (tmp_path / "net.yml").write_text(yaml.safe_dump({**DEFAULT["network"], "switch-buffer": 65536}))
    (tmp_path / "sys.json").write_text(json.dumps(DEFAULT["system"]))
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    assert main(["generate", "microbench", "--collective", "all_reduce", "--size", "1048576", "--num-npus", "8",
                 "--output", str(tmp_path / "ar")]) == 0
    capsys.readouterr()
    assert main([f"--workload-configuration={tmp_path / 'ar'}", f"--system-configuration={tmp_path / 'sys.json'}",
                 f"--network-configuration={tmp_path / 'net.yml'}",
                 f"--remote-memory-configuration={tmp_path / 'mem.json'}", "--quiet"]) == 0
    assert plain(capsys.readouterr().err).startswith(f"warning: {tmp_path / 'net.yml'}: field 'switch-buffer' is accepted "
                                              f"but changes nothing on the congestion_unaware backend")


@pytest.mark.parametrize("implementation, warned", [(["ring"], True), (["ring", "ring"], False),
                                                    (["oneRing"], False)])
def test_an_implementation_list_shorter_than_the_network_says_it_runs_on_part_of_it(
        tmp_path, capsys, implementation, warned):
    # a 4 x 2 network's all-reduce under [ring] reduced over 4 of the 8 NPUs (ASTRA-sim reads
    # a shorter list so, and the figures stay the reference's) without a word: a smaller
    # collective's time, printed as the step's
    system = {**DEFAULT["system"], "all-reduce-implementation": implementation}
    network = {"topology": ["Ring", "Ring"], "npus_count": [4, 2], "bandwidth": [50, 50], "latency": [500, 500]}
    path = write_yaml(tmp_path, {"workload": MICROBENCH, "system": system, "network": network})
    assert main(["run", path, "--quiet"]) == 0
    err = plain(capsys.readouterr().err)
    said = (f"warning: {path}: system: field 'all-reduce-implementation' lists 1 algorithm(s), but the network has 2 "
            f"dimensions: as in ASTRA-sim, the workload's all-reduces run over the first 1 only, 4 of the 8 NPUs; "
            f"give one per dimension (e.g. [ring, ring]) to run them over every NPU")
    assert err.strip().splitlines() == ([said] if warned else []), err


@pytest.mark.parametrize("extra, said", [
    ("--fp8-format hybrid", "--fp8-format hybrid changes nothing with Megatron's own layers (--transformer-impl local): "
                            "Transformer Engine's fp8_autocast casts only its own modules, so the step runs in bf16"),
    ("--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap",
     "--tp-comm-overlap changes nothing with Megatron's own layers (--transformer-impl local): only Transformer "
     "Engine's layers overlap their tensor-parallel communication"),
])
def test_a_transformer_engine_flag_on_megatrons_own_layers_says_it_changes_nothing(tmp_path, capsys, extra, said):
    # Megatron takes both in silence and runs without them, as the step here did: a sweep over
    # either with --transformer-impl local drew a flat line, read as a finding
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": f"{ARGS} --transformer-impl local {extra}"},
                                 "cluster": {"preset": "dgx-h100", "gpus": 8}})
    assert main(["run", path, "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {path}: workload.args: {said}"), err
    # on Transformer Engine's layers (today's default) both act, and nothing is said
    doc = yaml.safe_load(Path(path).read_text())
    doc["workload"]["args"] = doc["workload"]["args"].replace(" --transformer-impl local", "")
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
    assert plain(capsys.readouterr().err) == ""


@pytest.mark.parametrize("extra, said", [
    ("--num-query-groups 2", "--num-query-groups changes nothing without --group-query-attention: Megatron keeps a "
                             "key/value head per query head"),
    ("--moe-grouped-gemm --moe-router-topk 4", "--moe-router-topk and --moe-grouped-gemm change nothing without "
                                               "--num-experts: the model is dense"),
    ("--recompute-method block --recompute-num-layers 1", "--recompute-method and --recompute-num-layers change "
                                                          "nothing without --recompute-granularity"),
    ("--checkpoint-num-layers 2", "--checkpoint-num-layers changes nothing without --checkpoint-activations"),
    ("--sgd-momentum 0.5", "--sgd-momentum changes nothing with --optimizer adam"),
    ("--cp-comm-type a2a", "--cp-comm-type changes nothing at --context-parallel-size 1"),
])
def test_a_megatron_argument_read_only_beside_another_says_it_changes_nothing(tmp_path, capsys, extra, said):
    # Megatron-LM takes each in silence without the argument that reads it, and so did the
    # step here: --num-query-groups 2 without --group-query-attention ran (and was priced,
    # memory too) as full multi-head attention, a sweep over it drew a flat line
    assert main(["run", _megatron(tmp_path, extra), "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {tmp_path / 's.yaml'}: workload.args: {said}"), err


def test_a_default_spelt_out_or_an_argument_that_is_read_says_nothing(tmp_path, capsys):
    for extra in ("--cp-comm-type p2p --moe-router-topk 2", "--group-query-attention --num-query-groups 2",
                  "--optimizer sgd --sgd-momentum 0.5"):
        assert main(["run", _megatron(tmp_path, extra), "--quiet"]) == 0
        assert capsys.readouterr().err == "", extra


def test_replay_only_over_communication_without_durations_says_the_network_is_left_out(tmp_path, capsys):
    # replay-only replays every node from its duration_micros (as ASTRA-sim does): a generated
    # all-reduce, which records none, took no time and the step printed 1 ns without a word
    system = {**DEFAULT["system"], "replay-only": 1}
    path = write_yaml(tmp_path, {"workload": MICROBENCH, "system": system, "network": DEFAULT["network"]})
    assert main(["run", path, "--quiet"]) == 0
    out, err = capsys.readouterr()
    err = plain(err)
    assert out.startswith("iteration time 1 ns"), out
    assert err.strip().splitlines() == [
        f"warning: the workload (generate microbench): 1 of 1 communication nodes record no duration "
        f"(duration_micros 0), and {path}: system has replay-only on, which replays every node from its duration "
        f"(as ASTRA-sim does), so they take no time and the network is left out; set replay-only: 0 to simulate "
        f"them"], err


def test_one_job_under_jobs_is_not_told_of_jobs_that_share_the_network(tmp_path, capsys):
    # a scenario whose jobs: held one job on half the network was told 'several jobs share the
    # network' and 'the jobs do not interfere there', of jobs that are not there
    job = {"name": "a", "workload": dict(MICROBENCH, num_npus=4)}
    path = write_yaml(tmp_path, {"system": DEFAULT["system"], "network": DEFAULT["network"], "jobs": [job]})
    assert main(["run", path]) == 0  # not --quiet, which prints no notes (test_console_round4)
    err = capsys.readouterr().err
    assert "several jobs" not in err and "interfere" not in err, err
    assert "note: symmetry folding is off: a scenario with jobs: runs unfolded" in err, err


def _five_dimensions(tmp_path: Path, workload: dict | str) -> str:
    """A 2 x 2 x 2 x 2 x 2 ring network, a ring per dimension."""
    system = {**DEFAULT["system"], "all-reduce-implementation": ["ring"] * 5}
    network = {"topology": ["Ring"] * 5, "npus_count": [2] * 5, "bandwidth": [50] * 5, "latency": [500] * 5}
    return write_yaml(tmp_path, {"workload": workload, "system": system, "network": network})


def test_a_collective_without_involved_dim_runs_over_every_dimension_past_four(tmp_path, capsys):
    # ASTRA-sim's default involved_dim is four dimensions, all in; on five its fifth was left out
    # without a word: the all-reduce ran over 16 of the 32 NPUs, its time that of a 4-D network
    times = []
    for dims in (4, 5):
        path = _five_dimensions(tmp_path, dict(MICROBENCH, num_npus=2 ** 5))
        doc = yaml.safe_load(Path(path).read_text())
        for key in ("topology", "npus_count", "bandwidth", "latency"):
            doc["network"][key] = doc["network"][key][:dims]
        doc["system"]["all-reduce-implementation"] = ["ring"] * dims
        doc["workload"]["num_npus"] = 2 ** dims
        assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
        times.append(int(capsys.readouterr().out.split()[2].replace(",", "")))
    assert times[1] > times[0], times  # one more dimension's phases


def test_an_involved_dim_shorter_than_the_collectives_dimensions_is_refused(tmp_path, capsys):
    # [true] on a 2-D network ran the all-reduce on dimension 0 alone, as if the second were
    # not involved (ASTRA-sim reads past the list's end)
    from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE
    from simpy_astra.workloads.chakra.writer import make_node, write_et

    for rank in range(8):
        write_et(str(tmp_path / f"ar.{rank}.et"), [make_node(1, "ar", COMM_COLL_NODE, attrs={
            "comm_type": ALL_REDUCE, "comm_size": 1 << 20, "involved_dim": [True]})])
    system = {**DEFAULT["system"], "all-reduce-implementation": ["ring", "ring"]}
    network = {"topology": ["Ring", "Ring"], "npus_count": [4, 2], "bandwidth": [50, 50], "latency": [500, 500]}
    path = write_yaml(tmp_path, {"workload": "ar", "system": system, "network": network})
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert err == [f"error: {tmp_path / 'ar.0.et'}: node 1: involved_dim lists 1 dimension(s), but this all-reduce "
                   f"runs over 2 (all-reduce-implementation in {path}: system); ASTRA-sim reads past the list's end; "
                   f"give one entry per dimension"], err


def test_communicator_groups_no_collective_names_are_said_to_change_nothing(tmp_path, capsys):
    # the default scenario's traces name no group: groups given beside them were dropped in
    # silence, and the all-reduce ran over all 8 NPUs where the user meant two groups of 4
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = str(SCENARIOS / doc["workload"])
    doc["comm_groups"] = {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert err == [f"warning: {doc['workload']}.0.et: no collective names a communicator group (pg_name), so the 2 "
                   f"group(s) given (1, 2) change nothing: every collective runs over all NPUs, as in ASTRA-sim; give "
                   f"the collectives a pg_name, or leave the groups out"], err
    del doc["comm_groups"]
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
    assert plain(capsys.readouterr().err) == ""
