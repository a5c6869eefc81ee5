"""A thirtieth hunt: the Megatron launcher front end, run's odd arguments, sweeps, cluster
presets, calibrate and validate, attacked for wrong successes, tracebacks and misleading lines.
Each test failed before its fix."""

from __future__ import annotations

import pytest

from tests.scenario_files import TINY_GPT_ARGS, error_lines, launched_as_alone, megatron_scenario


@pytest.mark.parametrize(("launcher", "gpus", "starts"), [
    ("torchrun --nnodes 2:2 --nproc_per_node 8", 8, "16 GPUs (--nnodes 2:2 x --nproc_per_node 8)"),
    ("torchrun --nnodes=1:2 --nproc_per_node=8", 32, "8 to 16 GPUs (--nnodes 1:2 x --nproc_per_node 8)"),
    ("srun -N 2-2 --ntasks-per-node 8 python", 8, "16 GPUs (-N 2-2 x --ntasks-per-node 8)"),
    ("torchrun --nnodes 2 --nproc_per_node gpu", 8, "2 nodes (--nnodes 2 x --nproc_per_node gpu), 16 GPUs"),
    ("mpiexec.hydra -n 32 python", 16, "32 GPUs (-n 32)"),
    ("/usr/bin/mpirun.openmpi -np 32 python", 16, "32 GPUs (-np 32)")])
def test_an_elastic_range_a_word_count_or_an_mpis_own_name_is_still_held_to_the_job(tmp_path, capsys, launcher,
                                                                                     gpus, starts):
    # before: each ran the job's count in silence: a count as a range (torchrun's elastic
    # --nnodes 2:2, which is 2; Slurm's -N 2-2), or a word (--nproc_per_node gpu: a node's GPUs)
    # voided every other count the line gave, and mpirun installed as mpiexec.hydra or
    # mpirun.openmpi was not read as a launcher at all (1.952 ms on 16 H100s for 32 started)
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}", preset="dgx-h100", gpus=gpus)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert line.startswith(f"error: {path}: workload.args: the pasted launcher starts {starts}"), line
    assert f"but the job runs on {gpus} ({path}: cluster.gpus)" in line and line.endswith("or drop the launcher's words")


def test_an_elastic_range_is_held_to_a_nodes_gpus_too(tmp_path, capsys):
    # before: --nnodes 1:4 voided --nproc_per_node 4, which the H100 preset's 8 a node is not
    path = megatron_scenario(tmp_path, f"torchrun --nnodes 1:4 --nproc_per_node 4 pretrain_gpt.py {TINY_GPT_ARGS}",
                             preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "starts 4 GPUs a node (--nnodes 1:4 x --nproc_per_node 4), but the cluster's nodes hold 8; give " \
           "cluster.gpus_per_node: 4" in line, line


@pytest.mark.parametrize("launcher", ["torchrun --nnodes 1:4 --nproc_per_node 8", "torchrun --nnodes 2:2 "
                                      "--nproc_per_node 8", "torchrun --nnodes 2 --nproc_per_node gpu",
                                      "srun -N 2-2 --ntasks-per-node 8 python", "mpiexec.hydra -n 16 -ppn 8 python"])
def test_a_launcher_whose_range_or_word_holds_the_job_runs_as_the_arguments_alone(tmp_path, capsys, launcher):
    with_launcher, alone = launched_as_alone(tmp_path, capsys, f"{launcher} pretrain_gpt.py")
    assert with_launcher == alone


def test_a_launcher_that_turns_pxn_off_is_refused_and_its_default_runs(tmp_path, capsys):
    # before: NCCL_PXN_DISABLE=1 ran in silence, where a preset's cross-rail message is timed on
    # PXN's route (simpy_astra/network/rails.py), the route that setting turns off
    path = megatron_scenario(tmp_path, f"NCCL_PXN_DISABLE=1 torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py "
                                       f"{TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "the pasted launcher sets NCCL_PXN_DISABLE (NCCL_PXN_DISABLE=1), which changes how long NCCL's " \
           "collectives take" in line and "PXN" in line.rpartition(";")[0], line
    with_launcher, alone = launched_as_alone(tmp_path, capsys, "mpirun -x NCCL_PXN_DISABLE=0 -np 16 python "
                                                               "pretrain_gpt.py")
    assert with_launcher == alone


@pytest.mark.parametrize(("flag", "written", "fix"), [
    ("--hidden-size", "1,024", "; write 1024 (Megatron-LM's int() reads no thousands separators)"),
    ("--hidden-size", "0x100", "; write 256 (Megatron-LM's int() reads decimal digits only)"),
    ("--seq-length", "4k", "; write the count in full, 4096 (k as 1,024) or 4000 (k as 1,000) (Megatron-LM's int() "
                           "reads no unit)"),
    ("--seq-length", "2Ki", "; write the count in full, 2048 (K as 1,024) (Megatron-LM's int() reads no unit)"),
    ("--train-samples", "1e6", "; write 1000000 (Megatron-LM's int() refuses it too)"),
    ("--train-samples", "1M", "; write the count in full, 1048576 (M as 1,048,576) or 1000000 (M as 1,000,000) "
                              "(Megatron-LM's int() reads no unit)")])
def test_a_count_written_as_a_person_writes_it_is_told_the_integer(tmp_path, capsys, flag, written, fix):
    # before: "argument --hidden-size: invalid int value: '1,024'" and no fix (only a float such
    # as 256.0, of a modelled flag, named the integer; --train-samples 1e6 named none either)
    args = TINY_GPT_ARGS.replace(f"{flag} 128 ", "") + f" {flag} {written}"
    (line,) = error_lines(capsys, ["run", megatron_scenario(tmp_path, args), "--quiet"])
    assert line.endswith(f"invalid int value: '{written}'{fix}"), line


def test_a_sweep_axis_of_a_count_with_a_unit_is_told_the_integer(tmp_path, capsys):
    # before: "--tensor-model-parallel-size 2k: invalid int value; fix the value", no value named
    from tests.scenario_files import megatron_sweep

    path = megatron_sweep(tmp_path, {"workload.args.--tensor-model-parallel-size": ["2k", 4]})
    (line,) = error_lines(capsys, ["sweep", path, "--list"])
    assert "--tensor-model-parallel-size 2k: invalid int value; write the count in full, 2048 (k as 1,024) or 2000" \
           in line, line


@pytest.mark.parametrize(("cluster", "told"), [
    ({"preset": "dgx-h100"}, "cluster.gpus: is missing; give the job's GPU count (gpus: 16"),
    ({"preset": "dgx-h100", "gpus": None}, "cluster.gpus: is missing; give the job's GPU count (gpus: 16"),
    ({"gpus": 8}, "cluster.preset: is missing; name the machine, one of dgx-a100-40gb, dgx-a100-80gb, dgx-h100, or a "
                  "preset file of your own (preset: ./my-cluster.yaml)")])
def test_a_cluster_field_left_out_is_told_what_to_give(tmp_path, capsys, cluster, told):
    # before: "cluster.gpus: must be a positive integer (got None)", of a field nobody wrote
    # None in, and no fix named
    from tests.scenario_files import write_yaml

    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": TINY_GPT_ARGS}, "cluster": cluster})
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert line.startswith(f"error: {path}: {told}") and "None" not in line, line


@pytest.mark.parametrize("line", ["srun -N 2 bash -c 'torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py ARGS'",
                                  'srun -N 2 /bin/sh -lc "cd /workspace && torchrun --nproc_per_node 8 --nnodes 2 '
                                  'pretrain_gpt.py ARGS"'])
def test_a_launch_line_run_by_a_shells_dash_c_is_read_inside_its_quotes(tmp_path, capsys, line):
    # before: "'srun' comes before any flag (Megatron's argparse: unrecognized arguments: srun)":
    # the command bash -c runs is one quoted word, so no script was found in the line
    from tests.scenario_files import headline_and_warnings

    written = headline_and_warnings(capsys, megatron_scenario(tmp_path, line.replace("ARGS", TINY_GPT_ARGS), "a.yaml",
                                                              preset="dgx-h100", gpus=16))
    assert written == headline_and_warnings(capsys, megatron_scenario(tmp_path, TINY_GPT_ARGS, "b.yaml",
                                                                      preset="dgx-h100", gpus=16))
    wrong = megatron_scenario(tmp_path, line.replace("--nnodes 2", "--nnodes 4").replace("ARGS", TINY_GPT_ARGS),
                              preset="dgx-h100", gpus=16)
    (refused,) = error_lines(capsys, ["run", wrong, "--quiet"])
    assert "the pasted launcher starts 32 GPUs (--nproc_per_node 8 x --nnodes 4)" in refused, refused


def test_generate_megatrons_words_run_by_a_shells_dash_c_are_read_inside_its_quotes(tmp_path, capsys):
    # before: "'bash' comes before any flag": the words after -- are a list, the command bash
    # -c runs one of them
    from simpy_astra.cli.main import main

    command = f"torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py {TINY_GPT_ARGS}"
    out = str(tmp_path / "t" / "p")
    (line,) = error_lines(capsys, ["generate", "megatron", "--gpus", "16", "--output", out, "--", "bash", "-c", command])
    assert "the pasted launcher starts 32 GPUs (--nproc_per_node 8 x --nnodes 4), but the job runs on 16" in line, line
    fits = command.replace("--nnodes 4", "--nnodes 2")
    assert main(["generate", "megatron", "--gpus", "16", "--output", out, "--", "bash", "-c", fits]) == 0


def test_a_small_models_headline_keeps_every_figure_within_80_columns(tmp_path, capsys):
    # before: "iteration time 79.273 ms, 349.8 TFLOP/s and 13,227,475 tokens/s per GPU, MFU
    # 35.4%", 82 columns in a pipe: a small model's tokens/s per GPU run past the line
    import re

    from simpy_astra.cli.main import main
    from simpy_astra.simulation import Simulation

    args = ("--num-layers 1 --hidden-size 128 --num-attention-heads 1 --seq-length 16384 --max-position-embeddings "
            "16384 --micro-batch-size 64 --global-batch-size 512 --bf16 --vocab-size 128 --use-flash-attn")
    path = megatron_scenario(tmp_path, args, preset="dgx-h100")
    assert main(["run", path, "--quiet"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    sim = Simulation.from_scenario(path)
    sim.run()
    job = sim.training()
    tokens = 512 * 16384 / 8 / (job.iteration_time_ns / 1e9)  # the global batch's tokens a GPU a second
    assert len(line) <= 80 and tokens > 10**7, line
    figures = [float(f.replace(",", "")) for f in re.findall(r"\d[\d,]*(?:\.\d+)?", line)]
    assert figures == [round(job.iteration_time_ns / 1e6, 3), round(job.tflops_per_gpu, 1), round(tokens),
                       round(job.mfu * 100, 1)], line


@pytest.mark.parametrize("launcher", ["env -u NCCL_ALGO torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py",
                                      "env --unset=NCCL_PROTO torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py"])
def test_a_launcher_that_unsets_an_nccl_variable_runs_nccls_choice(tmp_path, capsys, launcher):
    # before: refused as setting NCCL_ALGO: env -u removes it, leaving NCCL's own choice, the
    # one the simulator runs; a variable set beside it is still refused
    with_launcher, alone = launched_as_alone(tmp_path, capsys, launcher)
    assert with_launcher == alone
    path = megatron_scenario(tmp_path, f"env -u NCCL_ALGO NCCL_PROTO=LL torchrun --nproc_per_node 8 --nnodes 2 "
                                       f"pretrain_gpt.py {TINY_GPT_ARGS}", "c.yaml", preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "the pasted launcher sets NCCL_PROTO (NCCL_PROTO=LL)" in line, line


@pytest.mark.parametrize(("launcher", "starts"), [
    ("horovodrun -np 32 -H a:8,b:8 python", "32 GPUs (-np 32)"),
    ("accelerate launch --num_processes 32 --num_machines 2", "32 GPUs (--num_processes 32 x --num_machines 2)"),
    ("flux run -N2 -n32 python", "32 GPUs (-N 2 x -n 32)"),
    ("aprun -n 32 -N 8 python", "32 GPUs (-n 32 x -N 8)")])
def test_the_other_common_launchers_counts_are_held_to_the_job(tmp_path, capsys, launcher, starts):
    # before: horovodrun, accelerate launch, flux run and Cray's aprun were no launcher read
    # here: their words were dropped, 32 processes started ran as the job's 16 GPUs in silence
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert f"the pasted launcher starts {starts}, but the job runs on 16" in line, line
    fits = launcher.replace("32", "16")
    with_launcher, alone = launched_as_alone(tmp_path, capsys, f"{fits} pretrain_gpt.py")
    assert with_launcher == alone


@pytest.mark.parametrize(("flag", "written"), [("--lr", "1e\u22124"), ("--lr", "\u22121e-4"),
                                               ("--hidden-dropout", "1e\u22122")])
def test_a_number_pasted_with_a_minus_sign_is_told_the_character_to_retype(tmp_path, capsys, flag, written):
    # before: "argument --lr: invalid float value: '1e-4'" (its '-' U+2212, as a PDF's table
    # prints it), no fix, and the line shows what looks like a valid number
    (line,) = error_lines(capsys, ["run", megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} {flag} {written}"), "--quiet"])
    assert line.endswith(f"invalid float value: '{written}' (its '\u2212' is U+2212 MINUS SIGN, not ASCII: retype it)"), \
        line
