"""A sixteenth hunt for inputs that ran as something other than what they say, or ended on a
traceback: each is now refused in one line naming the file, the field and the fix, or runs
with a warning that says what it changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, error_lines, megatron_scenario, write_yaml
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.wrapped_lines import plain


def _megatron(tmp_path: Path, args: str = ARGS, name: str = "s.yaml", **cluster) -> str:
    return megatron_scenario(tmp_path, args, name, **{"preset": "dgx-h100", "gpus": 16, **cluster})


@pytest.mark.parametrize("key, said", [
    ("nccl_algo", "write ring, tree, nvls or pat, or leave the key out for NCCL's choice of ring, tree, NVLS or "
                  "PAT"),
    ("nvls", "write true or false, or leave the key out for NVLS as the GPU's name implies"),
])
def test_a_cluster_choice_written_empty_is_refused(tmp_path, capsys, key, said):
    # 'nccl_algo:' with its value never typed (YAML null) ran as NCCL's choice, while every other
    # cluster field written so was refused ('inter_node_gbit_s: must be a positive number')
    path = _megatron(tmp_path, **{key: None})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {path}: cluster.{key}: is empty (null); {said}"]


def test_null_on_a_sweeps_nccl_algo_axis_leaves_it_out(tmp_path, capsys):
    # a sweep's null still means the field left out, so NCCL's choice is a point beside forced ones
    base = _megatron(tmp_path, name="base.yaml", nccl_algo="tree")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"cluster.nccl_algo": [None, "ring"]}}, "sw.yaml")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert [row.split(",")[1] for row in rows] == ["cluster.nccl_algo", "null", "ring"]  # null written so
    assert "error" not in capsys.readouterr().err


def test_a_flag_that_changes_no_timing_given_twice_is_told_which_one_megatron_keeps(tmp_path, capsys):
    # '--lr 1e-4 ... --lr 3e-4' said nothing, while a timing flag given so is warned of (hunt 15):
    # Megatron-LM's argparse keeps the later of either kind, which the user may not mean
    path = _megatron(tmp_path, f"{ARGS} --lr 1e-4 --seed 1 --lr=3e-4 --data-path 1 /a 2 /b --data-path /c")
    assert main(["run", path, "--quiet"]) == 0
    assert plain(capsys.readouterr().err).strip().splitlines() == [
        f"warning: {path}: workload.args: {flag} is given twice, {first} then {then}: Megatron-LM's argparse keeps "
        f"the later ({then}), which changes no step's time; remove the one you do not mean"
        for flag, first, then in (("--lr", "1e-4", "3e-4"), ("--data-path", "1 /a 2 /b", "/c"))]
    # the same value twice, or a switch twice, says nothing
    assert main(["run", _megatron(tmp_path, f"{ARGS} --lr 1e-4 --lr 1e-4 --no-load-optim --no-load-optim"),
                 "--quiet"]) == 0
    assert plain(capsys.readouterr().err) == ""


def _jobs(tmp_path: Path, first: dict) -> str:
    """Job a (``first``'s workload) on NPU 0, and an 8-NPU all-reduce job b, on a 16-NPU ring."""
    bench = {"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 8}
    network = dict(DEFAULT["network"], npus_count=[16])
    return write_yaml(tmp_path, {"jobs": [{"name": "a", "workload": first, "npus": [0]},
                                          {"name": "b", "workload": bench, "npus": list(range(8, 16))}],
                                 "system": {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900},
                                 "network": network})


@pytest.mark.parametrize("first", [
    {"generate": "transformer", "dp": 1, "dmodel": 64, "dff": 64, "head": 4, "num_stacks": 1, "seq": 64,
     "batch": 8},
    "one/w",  # a prefix with one ET file alike
])
def test_a_job_of_one_npu_is_refused(tmp_path, capsys, first):
    # a transformer job at dp 1 ran and printed its time ('exposed comm 0 ns'), while generate
    # transformer, and a microbench job of num_npus 1, refuse one NPU: no run takes such a trace
    if isinstance(first, str):
        (tmp_path / "one").mkdir()
        (tmp_path / "one" / "w.0.et").write_bytes((SCENARIOS / f"{DEFAULT['workload']}.0.et").read_bytes())
    path = _jobs(tmp_path, first)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[0].workload: has 1 rank, and no run takes a 1-NPU trace: it sends nothing over the "
        f"network the jobs share; give it 2 or more ranks (a generator's dp, tp, pp or num_npus)"]


@pytest.mark.parametrize("name, said", [
    ("dgx-a100", "'dgx-a100' is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a YAML file; did you mean "
                 "dgx-a100-40gb or dgx-a100-80gb?"),
    ("DGX_H100", "'DGX_H100' is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a YAML file; did you mean "
                 "dgx-h100?"),
    ("dgx-h200", "'dgx-h200' is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a YAML file; for another "
                 "machine, give its own preset file (preset: ./my-cluster.yaml, a shipped preset's fields with its "
                 "figures)"),  # (hunt 29: the fix named)
    ("dgx-h100.yaml", "'dgx-h100.yaml' is no file here; the preset is named dgx-h100 (without .yaml; a file name is "
                      "a copy of your own)"),
])
def test_a_misspelt_preset_is_told_the_presets_it_may_mean(tmp_path, capsys, name, said):
    # 'dgx-a100' listed the presets without saying which two it is short for, and 'dgx-h100.yaml'
    # said only that no such file was beside the scenario; another GPU (h200) is never suggested
    path = _megatron(tmp_path, preset=name)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {path}: cluster.preset: {said}"]


def _shell(redirect: str, *argv: str) -> subprocess.CompletedProcess:
    """``python -m simpy_astra ARGV`` started by a shell with ``redirect`` (``>&-``, ...)."""
    return subprocess.run(["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "simpy_astra", *argv],
                          capture_output=True, text=True, timeout=120, check=False)


DEFAULT_PATH = str(SCENARIOS / "default.yaml")


def test_standard_output_closed_is_refused_before_the_run():
    # '>&-' ended on a traceback (AttributeError: 'NoneType' object has no attribute 'flush')
    # after the whole run; the answer goes to standard output, so the run never starts
    for argv in (["run", DEFAULT_PATH, "--quiet"], ["--help"]):
        done = _shell(">&-", *argv)
        assert (done.returncode, done.stderr.splitlines()) == (2, [
            "error: standard output is closed (>&-), and the command writes its answer there; give > FILE, or "
            "> /dev/null to drop it"])


def test_standard_error_closed_drops_the_diagnostics_and_runs():
    # '2>&-' printed the answer, then 'internal error AttributeError: ... isatty' and exit 1
    done = _shell("2>&-", "run", DEFAULT_PATH)
    assert done.returncode == 0 and done.stdout.splitlines()[0].startswith("sys[0] finished, 142780 cycles")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["run", DEFAULT_PATH], ["run", DEFAULT_PATH, "--quiet"], ["--help"], ["--version"]])
def test_standard_output_that_refuses_bytes_is_named(argv):
    # '> /dev/full' (a full disk) said 'internal error OSError: [Errno 28] No space left on device
    # (this is a simpy-astra bug ...)'; --help ended on a traceback, --version on status 120
    done = _shell("> /dev/full", *argv)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (2, [
        "error: cannot write to standard output: no space left on the device; free some space or choose another "
        "path"]), done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


@pytest.mark.parametrize("words, said", [
    ("--tensor-model-parallel-size ${TP}", "--tensor-model-parallel-size ${TP}: '${TP}'"),
    ("--tensor-model-parallel-size=$TP", "--tensor-model-parallel-size $TP: '$TP'"),
    ("--global-batch-size $((GBS*2))", "--global-batch-size $((GBS*2)): '$((GBS*2))'"),
    ("--lr $LR", "--lr $LR: '$LR'"),
    ("--lr-decay-style $STYLE", "--lr-decay-style $STYLE: '$STYLE'"),
])
def test_a_shell_variable_left_in_megatron_args_is_named(tmp_path, capsys, words, said):
    # '--tensor-model-parallel-size ${TP}' pasted from a launch script was told only "invalid int
    # value: '${TP}'", as if the user had typed a wrong number
    path = _megatron(tmp_path, f"{ARGS} {words}")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: {said} is left for a shell to expand, and nothing expands it here; write the "
        f"value it stands for"]


def test_a_shell_variable_in_place_of_arguments_is_named(tmp_path, capsys):
    # '... --bf16 $EXTRA_ARGS' said "'$EXTRA_ARGS' follows --bf16, which takes no value"
    path = _megatron(tmp_path, f"{ARGS} $EXTRA_ARGS")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: '$EXTRA_ARGS' is left for a shell to expand, and nothing expands it here; "
        f"write the arguments it stands for"]
    # a path flag's variable changes no step's time: accepted, as its path is
    assert main(["run", _megatron(tmp_path, f"{ARGS} --data-path $DATA_PATH --save $CKPT --save-interval 100"),
                 "--quiet"]) == 0


@pytest.mark.parametrize("tail, said", [
    ("--bf16   # small model", "'#' starts a shell comment, which nothing reads here; remove it to the line's end"),
    ("--data-path /a /b  # --num-layers 8 was too slow",  # the comment's flag was read as given: 8 layers ran
     "'#' starts a shell comment, which nothing reads here; remove it to the line's end"),
    ("--bf16 2>&1 | tee log.txt", "'2>&1' is a shell redirection, pipe or separator, which nothing reads here; "
                                  "remove it and what follows"),
    ("--data-path /a > log.txt", "'>' is a shell redirection, pipe or separator, which nothing reads here; remove it "
                                 "and what follows"),
    ("--bf16 ; echo done", "';' is a shell redirection, pipe or separator, which nothing reads here; remove it and "
                           "what follows"),
])
def test_shell_syntax_pasted_with_megatron_args_is_named(tmp_path, capsys, tail, said):
    # each was told "'#' follows --bf16, which takes no value" (or after a flag of paths, taken
    # as its paths without a word); a shell reads them, and no shell reads a scenario's args
    path = _megatron(tmp_path, f"{ARGS} {tail}")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {path}: workload.args: {said}"]


def test_a_launch_scripts_variable_assignment_is_named(tmp_path, capsys):
    path = _megatron(tmp_path, f'GPT_ARGS="{ARGS}"')
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload.args: 'GPT_ARGS=--num-layers 2 ") and \
        err[0].endswith("' is a shell assignment, which nothing reads here; give the arguments it holds alone"), err


def test_a_transformer_default_blamed_is_called_a_default(tmp_path, capsys):
    # model: llama with head: 4 was told "'kvhead' (8) must divide head (4)" of a kvhead the
    # scenario never wrote (the generator's default), which the user then looked for in vain
    llama = {"generate": "transformer", "model": "llama", "dp": 8, "dmodel": 64, "dff": 64, "head": 4,
             "num_stacks": 1, "seq": 64, "batch": 8}
    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900}
    path = write_yaml(tmp_path, {"workload": llama, "system": system, "network": DEFAULT["network"]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.kvhead: (8) must divide head (4) and match tp (1); kvhead is its default here, not "
        f"given: set kvhead"]
    # given, it is blamed as given
    path = write_yaml(tmp_path, {"workload": {**llama, "kvhead": 3}, "system": system, "network": DEFAULT["network"]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.kvhead: (3) must divide head (4) and match tp (1)"]


def test_a_sweep_axis_naming_a_job_by_its_name_is_told_its_index(tmp_path, capsys):
    # 'jobs.b.start_ns' was told only that jobs needs an index 0..1 after it
    base = str(SCENARIOS / "two_llm_jobs_fat_tree.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"jobs.b.start_ns": [0, 50000]}}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: axes: jobs.b.start_ns: 'jobs' is a list of 2, so 'jobs.b.start_ns' needs an index 0..1 after "
        f"it (got 'b'); 'b' is the name of item 1: write 'jobs.1.start_ns'"]


@pytest.mark.parametrize("value", ["abc", "2", "yes-please"])
def test_a_progress_switch_of_another_word_is_refused_as_the_fold_switch_is(capsys, monkeypatch, value):
    # SIMPY_ASTRA_PROGRESS=yes-please was read as unset (no progress in a pipe, and no word why),
    # while SIMPY_ASTRA_FOLD=maybe was refused naming its words
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", value)
    assert error_lines(capsys, ["run", DEFAULT_PATH, "--quiet"]) == [
        f"error: SIMPY_ASTRA_PROGRESS: must be 1/on or 0/off (got {value!r}); unset it for the default (progress "
        f"lines on a terminal only)"]
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "Off")
    assert main(["run", DEFAULT_PATH, "--quiet"]) == 0


@pytest.mark.parametrize("key", ["maximise", "maximize", "max"])
def test_a_sweep_asked_to_maximise_is_told_to_minimise_the_negative(tmp_path, capsys, key):
    # maximise: mfu was told "did you mean 'minimise'?", which, taken, crowns the worst point
    base = _megatron(tmp_path, name="base.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"cluster.gpus": [16, 32]}, key: "mfu"}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: field '{key}' is not a sweep field; a sweep minimises: to maximise mfu, write minimise: "
        f"-(mfu)"]


def test_a_sweep_named_as_a_sweeps_base_is_told_so(tmp_path, capsys):
    # base: other_sweep.yaml said 'the base scenario must be a mapping with workload (or jobs)'
    base = _megatron(tmp_path, name="base.yaml")
    inner = write_yaml(tmp_path, {"base": base, "axes": {"cluster.gpus": [16, 32]}}, "inner.yaml")
    sweep = write_yaml(tmp_path, {"base": inner, "axes": {"cluster.gpus": [16, 32]}}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: base: {inner} is a sweep (it has axes:), not a scenario; name a scenario (such as its base, "
        f"{base}), and put the axes in this sweep"]


@pytest.mark.parametrize("flag, meant", [
    ("--tp", "--tensor-model-parallel-size"), ("--dist-opt", "--use-distributed-optimizer"),
    ("--TENSOR-MODEL-PARALLEL-SIZE", "--tensor-model-parallel-size"), ("--NUM_LAYERS", "--num-layers"),
])
def test_a_megatron_flag_by_its_short_name_or_in_capitals_is_told_the_flag(tmp_path, capsys, flag, meant):
    # '--tp 2' (what a sweep's expressions call it) and '--TENSOR-MODEL-PARALLEL-SIZE 2' were told
    # they are no argument, with no 'did you mean': the closest spelling is far from either
    value = "" if meant.startswith("--use") else " 2"
    path = _megatron(tmp_path, f"{ARGS} {flag}{value}")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: {flag} is not an argument of Megatron-LM's pretrain_gpt.py that this "
        f"simulator knows; did you mean {meant}?"]


def test_a_sweep_axis_on_a_short_name_is_told_the_flags_path(tmp_path, capsys):
    sweep = write_yaml(tmp_path, {"base": _megatron(tmp_path, name="base.yaml"),
                                  "axes": {"workload.args.tp": [2, 4]}}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: axes: workload.args.tp: 'workload.args.tp': --tp is not a Megatron-LM argument this "
        f"simulator reads; did you mean 'workload.args.tensor-model-parallel-size'?"]


def test_gloo_as_the_distributed_backend_is_refused_as_not_modelled(tmp_path, capsys):
    # '--distributed-backend gloo' was accepted as changing no step's time and timed as NCCL's
    # collectives; nccl (the default) still is accepted
    path = _megatron(tmp_path, f"{ARGS} --distributed-backend gloo")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: --distributed-backend gloo is not modelled (gloo's collectives, staged through "
        f"the hosts; this simulator times NCCL's, the default nccl); remove it (see simpy-astra generate megatron "
        f"--help)"]
    assert main(["run", _megatron(tmp_path, f"{ARGS} --distributed-backend nccl"), "--quiet"]) == 0


def _grouped(tmp_path: Path, group: dict) -> str:
    """A transformer on the default ring, timed by the roofline, with ``group`` as its npu-groups."""
    gpt = {"generate": "transformer", "dp": 8, "dmodel": 64, "dff": 64, "head": 4, "num_stacks": 1, "seq": 64,
           "batch": 8}
    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900, "npu-groups": [group]}
    return write_yaml(tmp_path, {"workload": gpt, "system": system, "network": DEFAULT["network"]})


def test_an_npu_group_of_npus_alone_is_refused(tmp_path, capsys):
    # npu-groups: [{npus: [0, 1]}] ran as if the group were not there
    path = _grouped(tmp_path, {"npus": [0, 1]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: system: field 'npu-groups[0]' gives npus only, so its NPUs keep the system's own hardware and "
        f"it changes nothing; give peak-perf, local-mem-bw or memory-capacity, or remove the group"]


def test_an_npu_groups_memory_capacity_without_memory_tracking_is_warned_of(tmp_path, capsys):
    # memory-capacity is checked against the memory track-local-mem measures; without it the
    # group's capacity said nothing, however small
    path = _grouped(tmp_path, {"npus": [0, 1], "memory-capacity": 10})
    assert main(["run", path, "--quiet"]) == 0
    assert plain(capsys.readouterr().err).strip().splitlines() == [
        f"warning: {path}: system: field 'npu-groups[0].memory-capacity' changes nothing here: only a run with "
        f"track-local-mem: 1 measures the memory it is checked against"]


def test_a_quoted_pipeline_layout_starting_with_a_stage_bar_is_its_flags_value(tmp_path, capsys):
    # a layout's stages are split by |: '|Ett|ttL', quoted in a script, is the layout's value (its
    # own check judges it), while a bare | after a modelled flag's values is the shell's pipe
    args = f"{ARGS.replace('--num-layers 2', '--num-layers 4')} --pipeline-model-parallel-size 2"
    path = _megatron(tmp_path, f"{args} --pipeline-model-parallel-layout '|Ett|ttL'")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: --pipeline-model-parallel-layout '|Ett|ttL' has 3 chunks, not a multiple of "
        f"--pipeline-model-parallel-size 2 (Megatron: the length of pipeline_model_parallel_layout must be divisible "
        f"by pipeline_model_parallel_size)"]
    path = _megatron(tmp_path, f"{args} --cp-comm-type p2p | tee log.txt")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: '|' is a shell redirection, pipe or separator, which nothing reads here; "
        f"remove it and what follows"]


def test_a_sweep_on_a_cluster_no_scheduler_answers_leaves_nothing_made(tmp_path, capsys):
    # '--cluster BAD_ADDRESS' made the --out folder (results.csv, sweep.json) and printed
    # 'sweep ...: running 2 on cluster' and '0 already in .../results.csv' before its error:
    # the scheduler is asked first, and what the sweep made goes again
    pytest.importorskip("distributed")
    sweep = write_yaml(tmp_path, {"base": DEFAULT_PATH, "axes": {"network.bandwidth": [25, 50]}}, "sw.yaml")
    said = ("error: --cluster BAD_ADDRESS: cannot connect to a Dask scheduler (missing port number in address "
            "'BAD_ADDRESS'); start one with 'dask scheduler' and workers with 'dask worker ADDRESS'")
    out = tmp_path / "new" / "out"
    assert error_lines(capsys, ["sweep", sweep, "--out", str(out), "--cluster", "BAD_ADDRESS"]) == [said]
    assert not (tmp_path / "new").exists()
    # a folder that was there stays, as it was: empty
    (tmp_path / "mine").mkdir()
    assert error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "mine"), "--cluster", "BAD_ADDRESS"]) == [said]
    assert list((tmp_path / "mine").iterdir()) == []


def test_a_sweep_on_a_cluster_without_dask_leaves_nothing_made(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: its import fails
    sweep = write_yaml(tmp_path, {"base": DEFAULT_PATH, "axes": {"network.bandwidth": [25, 50]}}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "out"), "--cluster", "tcp://h:8786"]) == [
        "error: --cluster needs Dask: pip install 'simpy-astra[sweep]'"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, said", [
    (["convert", "pytorch", "--input", "t.json"], "--input: unknown flag; did you mean --host? (it takes the input here)"),
    (["convert", "pytorch", "--source=t.json"], "--source: unknown flag; did you mean --host? (it takes the input here)"),
    (["convert", "pytorch", "-i", "t.json"], "-i: unknown flag; did you mean --host? (it takes the input here)"),
    (["convert", "text", "--src", "m.txt"], "--src: unknown flag; did you mean --input?"),
    (["generate", "megatron", "--prefix", "p"], "--prefix: unknown flag; did you mean --output?"),
])
def test_a_flag_named_for_the_input_or_output_is_told_the_flag_that_takes_it(capsys, argv, said):
    # 'convert pytorch --input t.json' was told "did you mean --output?" (the nearest spelling,
    # the opposite of what it meant), while --host takes the trace there
    prog = f"simpy-astra {argv[0]} {argv[1]}"
    assert error_lines(capsys, argv) == [f"error: {prog}: {said} (see {prog} --help)"]


def test_a_value_given_twice_on_an_axis_is_warned_of(tmp_path, capsys):
    # 'cluster.gpus: [16, 16]' (a typo for [16, 32]) ran one point without a word
    base = _megatron(tmp_path, name="base.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"cluster.gpus": [16, 16, 32],
                                                         "workload.args.num-layers": [2, "2"]}}, "sw.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("2 points")  # 16 and 32 GPUs
    assert " ".join(err.split()) == (
        "warning: axes: cluster.gpus: 16 and 16 are one value, which runs once; give each value once "
        'warning: axes: workload.args.num-layers: 2 and "2" are one value, which runs once; give each value once')
