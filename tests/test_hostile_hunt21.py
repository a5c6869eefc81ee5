"""A twenty-first hunt: Megatron-LM command lines as launch scripts write them, cluster presets
named by odd paths, nccl-tests logs in the wrong units, outputs and workloads under broken
links, and sweeps over Megatron's flags. Each test failed before its fix: a silent wrong fit, a
run of something else, or an error that named neither the cause nor the fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT as DEFAULT_DOC
from tests.scenario_files import (
    SCENARIOS,
    TINY_GPT_ARGS,
    error_lines,
    megatron_scenario,
    megatron_sweep,
    write_yaml,
)

ROOT = Path(__file__).resolve().parents[1]
NCCL = ROOT / "tests" / "data" / "nccl" / "dgx-a100-superbench"
PRESETS = ROOT / "simpy_astra" / "config" / "clusters"


def _headline(capsys, path: str) -> str:
    assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _scaled_log(tmp_path: Path, factor: float) -> Path:
    """The DGX A100 all-reduce log with every time column multiplied by ``factor`` (1e-3: a
    log converted to milliseconds), the bandwidths as nccl-tests printed them."""
    out = []
    for line in (NCCL / "all_reduce.log").read_text().splitlines():
        words = line.split()
        if len(words) >= 12 and words[0].isdigit() and words[1].isdigit():
            words[4] = f"{float(words[4]) * factor:.6g}"
            words[8] = f"{float(words[8]) * factor:.6g}"
            line = "  ".join(words)
        out.append(line)
    path = tmp_path / "all_reduce.log"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.parametrize(("factor", "unit"), [(1e-3, "ms"), (1e3, "ns")])
def test_a_log_whose_times_are_in_other_units_is_refused_not_fitted(tmp_path, capsys, factor, unit):
    # before: a log in ms fitted NVLink at 253,660 GiB/s and 1.2 ns in silence ("geomean error
    # 2.7%"): the fit reads microseconds, and the algbw column nccl-tests prints beside each time
    # (size / time) said otherwise on every row
    log = _scaled_log(tmp_path, factor)
    err = error_lines(capsys, ["calibrate", str(log), "--network", str(NCCL / "network.yml"),
                               "--out", str(tmp_path / "fit")])
    assert len(err) == 1 and err[0].startswith(f"error: {log}:50: out-of-place time "), err
    assert f"(the time reads as in {unit}, not us)" in err[0] and "algbw = size / time" in err[0]
    assert not (tmp_path / "fit").exists()


@pytest.mark.parametrize("name", ["mine.YAML", "my-cluster"])
def test_a_preset_copy_without_the_yaml_suffix_is_read(tmp_path, capsys, name):
    # before: "'./my-cluster' is not a preset (dgx-a100-40gb, ...) nor a YAML file", of a file
    # that is the preset's own copy
    shutil.copy(PRESETS / "dgx-a100-80gb.yaml", tmp_path / name)
    copy = _headline(capsys, megatron_scenario(tmp_path, preset=f"./{name}", name="copy.yaml"))
    assert copy == _headline(capsys, megatron_scenario(tmp_path))


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: p.mkdir(), "is a directory, not a regular file; expected the cluster preset YAML"),
    (lambda p: p.symlink_to(p.name), "is a symlink loop (too many levels of symbolic links); expected the cluster "
                                     "preset YAML"),
])
def test_a_preset_path_that_is_no_file_says_what_it_is(tmp_path, capsys, make, said):
    # before: "'.../presets' is not a preset (...) nor a YAML file" for a folder or a symlink loop
    make(tmp_path / "presets")
    path = megatron_scenario(tmp_path, preset=str(tmp_path / "presets"))
    assert error_lines(capsys, ["run", path]) == [f"error: {path}: cluster.preset: {tmp_path / 'presets'}: {said}"]


def _default_with_workload(tmp_path: Path, workload: str) -> str:
    return write_yaml(tmp_path, {**DEFAULT_DOC, "workload": workload})


@pytest.mark.parametrize(("make", "what"), [
    (lambda p: p.symlink_to(p.name), "a symlink loop"),
    (lambda p: p.symlink_to(p.parent / "nowhere"), "a symlink to nothing"),
    (lambda p: p.write_text("x"), "a regular file, not a folder"),
])
def test_a_workload_under_a_broken_folder_says_so(tmp_path, capsys, make, what):
    # before: "traces/step.0.et: the ET file for NPU 0 does not exist ... (0 consecutive file(s)
    # found)", of a folder that is a symlink to itself, to nothing, or a file
    make(tmp_path / "traces")
    prefix = tmp_path / "traces" / "sub" / "step"
    path = _default_with_workload(tmp_path, str(prefix))
    err = error_lines(capsys, ["run", path])
    assert err == [f"error: {tmp_path / 'traces'}: is {what}, so no ET file of the workload {prefix} can be under "
                   f"it; {'mend the link or ' if 'symlink' in what else ''}point the workload at its files' folder"]


def test_an_empty_calibrate_out_folder_is_named_as_empty(capsys):
    # before: "--out: cannot create folder  (its folder accepts no new folders)"
    argv = ["calibrate", str(NCCL / "all_reduce.log"), "--network", str(NCCL / "network.yml"), "--out", ""]
    assert error_lines(capsys, argv) == ["error: --out: must be a folder path (got an empty string)"]


def test_an_empty_sweep_out_is_not_told_it_is_missing(capsys):
    # before: "sweep: --out DIR is required", of an --out given (as '')
    err = error_lines(capsys, ["sweep", str(SCENARIOS / "sweeps" / "quick.yaml"), "--out", ""])
    assert err == ["error: --out: must be a folder path (got an empty string); the folder for results.csv and "
                   "best.json"]


@pytest.mark.parametrize("link_to", ["self", "nowhere"])
def test_generate_under_a_link_that_leads_nowhere_says_so(tmp_path, capsys, monkeypatch, link_to):
    # before: "--output: cannot create the folder 'traces' (File exists)"
    monkeypatch.chdir(tmp_path)
    os.symlink("traces" if link_to == "self" else "nowhere", "traces")
    err = error_lines(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                               "--num-npus", "4", "--output", "traces/sub/ar"])
    assert err == ["error: --output: cannot create the folder 'traces': it is a symlink that leads nowhere (a loop, or "
                   "to a missing path); mend the link, or give another prefix"]


@pytest.mark.parametrize(("extra", "word", "what"), [
    ("--tensor-model-parallel-size $1", "$1", "--tensor-model-parallel-size $1: "),
    ('--tensor-model-parallel-size "$2"', "$2", "--tensor-model-parallel-size $2: "),
    ("--tensor-model-parallel-size `nproc`", "`nproc`", "--tensor-model-parallel-size `nproc`: "),
    ('"$@"', "$@", ""),
    ("$*", "$*", ""),
])
def test_a_launch_scripts_own_arguments_left_unexpanded_are_named(tmp_path, capsys, extra, word, what):
    # before: "invalid int value: '$1'", or "'$@' follows --vocab-size '32000', which takes one
    # value": the script's arguments (pretrain_gpt.py ... "$@") and `command` were not told
    # apart from a typo, as $TP and ${TP} are
    path = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} {extra}")
    fix = "value" if what else "arguments"
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: workload.args: {what}{word!r} is left for a shell to expand, and nothing expands it here; "
        f"write the {fix} it stands for"]


@pytest.mark.parametrize("mark", ["\u200b", "\u00ad", "\u2060", "\ufeff"])
def test_a_mark_of_no_width_inside_a_flag_is_dropped(tmp_path, capsys, mark):
    # before: a zero-width space a web page put inside a long flag split it in two ("--tensor-
    # model- is not an argument ...; did you mean --test-mode?"), a soft hyphen or word joiner
    # was a misspelling to retype, though none shows on the page
    marked = _headline(capsys, megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} --tensor-model-{mark}parallel-size 2"))
    assert marked == _headline(capsys, megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} --tensor-model-parallel-size 2",
                                                         "plain.yaml"))


def test_a_line_separator_between_words_is_a_space(tmp_path, capsys):
    # before: "'\u2028' follows --seq-length '128', which takes one value"
    args = TINY_GPT_ARGS.replace(" --bf16", "\u2028--bf16")
    assert _headline(capsys, megatron_scenario(tmp_path, args)) == _headline(
        capsys, megatron_scenario(tmp_path, name="plain.yaml"))


@pytest.mark.parametrize(("field", "said"), [
    ({"megatron": {"args": TINY_GPT_ARGS}}, "a Megatron-LM job is written workload: {generate: megatron, args: "
                                            "'--num-layers ...'} beside cluster: {preset: NAME, gpus: N}"),
    ({"nccl_algo": "ring"}, "it is a field of cluster:, so move it there (cluster: {preset: NAME, gpus: N, "
                            "nccl_algo: ...})"),
    ({"gpus": 16}, "it is a field of cluster:, so move it there (cluster: {preset: NAME, gpus: N})"),
    ({"args": "--bf16"}, "it is a field of workload:, so move it there (workload: {generate: megatron, args: "
                         "'...'})"),
])
def test_a_top_level_key_of_the_cluster_or_the_workload_is_told_where_it_goes(tmp_path, capsys, field, said):
    # before: "field 'megatron' is not a scenario field; known: backend, cluster, comm_groups, ...",
    # sixteen keys and not where the key belongs
    doc = {**yaml.safe_load(Path(megatron_scenario(tmp_path)).read_text()), **field}
    path = write_yaml(tmp_path, doc)
    key = next(iter(field))
    assert error_lines(capsys, ["run", path]) == [f"error: {path}: field '{key}' is not a scenario field; {said}"]
    sweep = write_yaml(tmp_path, {"base": doc, "axes": {"cluster.gpus": [8]}}, "sweep.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: base: field '{key}' is not a scenario field; {said}"]


@pytest.mark.parametrize(("flag", "opposite"), [
    ("--add-bias-linear", "--disable-bias-linear"),
    ("--gradient-accumulation-fusion", "--no-gradient-accumulation-fusion"),
    ("--bias-swiglu-fusion", "--no-bias-swiglu-fusion"),
])
def test_a_default_no_megatron_names_is_refused_as_its_argparse_refuses_it(tmp_path, capsys, flag, opposite):
    # before: each ran in silence, doing nothing, though no Megatron-LM has it (its argparse
    # exits: unrecognized arguments), and '--disable-bias-linear --add-bias-linear' ran without
    # biases, the later flag ignored
    path = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} --disable-bias-linear {flag}")
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: workload.args: {flag} is not an argument of Megatron-LM's pretrain_gpt.py that this "
        f"simulator knows; Megatron-LM has only its opposite, {opposite}: what that turns off is on by default, so "
        f"leave {flag} out"]


def test_a_space_after_an_equals_sign_is_named(tmp_path, capsys):
    # before: "'2' follows --tensor-model-parallel-size '--tensor-model-parallel-size=', which
    # takes one value", which reads as if 2 were a second value
    path = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} --tensor-model-parallel-size= 2")
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: workload.args: '2' follows '--tensor-model-parallel-size=', whose value after the '=' is "
        f"empty; write --tensor-model-parallel-size=2 or --tensor-model-parallel-size 2 (Megatron's argparse: "
        f"unrecognized arguments: 2)"]


TP_AXIS = {"workload.args.tensor-model-parallel-size": [1, 2, 4]}


def test_a_constraint_on_a_flag_no_point_sets_says_it_is_null(tmp_path, capsys):
    # before: "it compares recompute_granularity, whose values are numbers (None), with the
    # string 'full': a number and a string are never equal": the flag is unset, not a number
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=["recompute_granularity == 'full'"])
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: constraints: 'recompute_granularity == 'full'' leaves no point to run: it compares "
        f"recompute_granularity, which is null at every point (nothing sets it), with 'full': never equal; set it "
        f"in the base or on an axis, or compare it with == null"]


def test_an_axis_of_words_with_a_null_is_not_called_numbers(tmp_path, capsys):
    # before: "nccl_algo, whose values are numbers ('ring')": its first point's null was read
    # as a number
    sweep = megatron_sweep(tmp_path, {"cluster.nccl_algo": [None, "ring"]}, constraints=["nccl_algo == 3"])
    err = error_lines(capsys, ["sweep", sweep, "--list"])
    assert len(err) == 1 and "nccl_algo, whose values are strings ('ring'), with the number 3" in err[0], err


@pytest.mark.parametrize("constraint", ["hidden_size / (tp - 1) > 100", "hidden_size % (tp - 1) == 0"])
def test_a_constraint_dividing_by_zero_names_the_point(tmp_path, capsys, constraint):
    # before: "'...' cannot be evaluated (ZeroDivisionError: division by zero)", Python's words,
    # naming neither the point nor the fix
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=[constraint])
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: constraints: '{constraint}' divides by zero at the point tp=1; leave that point out first "
        f"(e.g. 'x != 0 and ...', whose 'and' stops there)"]
    guarded = megatron_sweep(tmp_path, TP_AXIS, constraints=[f"tp != 1 and {constraint}"])
    assert main(["sweep", guarded, "--list"]) == 0
    assert "tp=1" not in capsys.readouterr().out


@pytest.mark.parametrize(("axis", "said"), [
    (None, "the axis is written empty (YAML reads it as null); give its values, e.g. [1, 2], or [null] for one "
           "point that leaves the field out"),
    ({"values": None, "as": "t"}, "values: written empty (YAML reads it as null); give the axis's values, e.g. "
                                  "[1, 2], or [null] for one point that leaves the field out"),
])
def test_an_axis_written_empty_is_refused_not_run_as_one_null_point(tmp_path, capsys, axis, said):
    # before: 'workload.args.tensor-model-parallel-size:' with its values forgotten was a sweep
    # of one point, tp=null, the flag left out; an empty list was refused already
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": axis})
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: axes: workload.args.tensor-model-parallel-size: {said}"]


@pytest.mark.parametrize(("cut", "said"), [
    (3000, "truncated result row: needs time, algbw and busbw (out-of-place) after the type columns"),
    (2500, "truncated result row: the in-place columns stop after 1 of time, algbw, busbw"),
])
def test_a_log_cut_mid_row_says_so_and_what_to_remove(tmp_path, capsys, cut, said):
    # before: the line and "truncated result row" alone, though the row is the file's last:
    # a log cut short (a killed job, a partial copy), whose rows above are whole
    log = tmp_path / "cut.log"
    log.write_bytes((NCCL / "all_reduce.log").read_bytes()[:cut])
    line = len(log.read_text().splitlines())
    err = error_lines(capsys, ["calibrate", str(log), "--network", str(NCCL / "network.yml"), "--out",
                               str(tmp_path / "fit")])
    assert err == [f"error: {log}:{line}: {said}; the log ends here, cut mid-row (a job killed or a copy cut "
                   f"short?): remove this line to fit the rows above it"]


def test_experts_in_no_layer_of_the_pattern_are_warned_of(tmp_path, capsys):
    # before: --num-experts 4 with --moe-layer-freq '[0]*2' ran the dense step in silence (the
    # pattern gives no layer experts): a sweep over num-experts drew a flat line
    from tests.wrapped_lines import plain

    moe = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} --num-experts 4 --moe-layer-freq '[0]*2'")
    assert main(["run", moe, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert plain(captured.err).strip().splitlines() == [
        f"warning: {moe}: workload.args: --num-experts 4 changes nothing: --moe-layer-freq's pattern puts experts "
        f"in no layer (all 0s), so every layer keeps its dense MLP, as in Megatron-LM; put a 1 where a layer has "
        f"experts, or remove --num-experts"]
    assert captured.out == _headline(capsys, megatron_scenario(tmp_path, name="dense.yaml"))


def test_a_sweep_over_a_preset_copy_without_the_yaml_suffix_reads_it_beside_the_sweep(tmp_path, capsys):
    # before: the point was marked 'will fail: ... './my-cluster' is not a preset ... nor a YAML
    # file' (a relative value without .yaml was not resolved beside the sweep file either)
    shutil.copy(PRESETS / "dgx-h100.yaml", tmp_path / "my-cluster")
    sweep = megatron_sweep(tmp_path, {"cluster.preset": ["dgx-h100", "./my-cluster"]})
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out
    assert "preset=./my-cluster" in out and "will fail" not in out, out


@pytest.mark.parametrize(("extra", "why"), [
    ("--account-for-embedding-in-pipeline-split", "at --pipeline-model-parallel-size 1: one stage holds every "
                                                  "layer, the embedding and the loss"),
    ("--use-tp-pp-dp-mapping", "at --pipeline-model-parallel-size 1: without pp, tp-cp-ep-pp-dp and tp-cp-ep-dp-pp "
                               "order the ranks alike"),
    ("--no-overlap-p2p-communication", "without the interleaved schedule"),
    ("--accumulate-allreduce-grads-in-fp32", "without --fp16: Megatron accumulates and reduces bf16's (and fp32's) "
                                             "gradients in fp32 already"),
])
def test_a_flag_that_changes_nothing_at_this_layout_is_warned_of(tmp_path, capsys, extra, why):
    # before: each ran the step without it in silence (Megatron takes them so): a sweep over
    # one drew a flat line
    from tests.wrapped_lines import plain

    path = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} {extra}")
    assert main(["run", path, "--quiet"]) == 0
    captured = capsys.readouterr()
    warnings = plain(captured.err).strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith(
        f"warning: {path}: workload.args: {extra} changes nothing {why}"), warnings
    assert captured.out == _headline(capsys, megatron_scenario(tmp_path, name="plain.yaml"))


@pytest.mark.parametrize(("argv", "what"), [
    (lambda p: ["calibrate", str(p), "--network", str(NCCL / "network.yml"), "--out", str(p.parent / "fit")],
     "nccl-tests log"),
    (lambda p: ["run", str(p)], "scenario YAML file"),
])
def test_a_gzipped_input_is_told_to_be_decompressed(tmp_path, capsys, argv, what):
    # before: a log fetched as .gz was "no nccl-tests result table", a gzipped scenario "is not
    # UTF-8 text (byte 1)": neither said what the file is
    import gzip

    source = NCCL / "all_reduce.log" if "log" in what else SCENARIOS / "default.yaml"
    packed = tmp_path / source.name
    packed.write_bytes(gzip.compress(source.read_bytes()))
    assert error_lines(capsys, argv(packed)) == [
        f"error: {packed}: is gzip-compressed, not text; decompress it (gunzip) and give the file it holds; "
        f"expected the {what}"]


def test_a_typo_of_ten_million_experts_is_priced_without_a_kernel_each(tmp_path, capsys, monkeypatch):
    # before: --num-experts 9999999 (a key held down) priced each of a rank's experts' kernels one
    # by one, sixty million GEMMs: the run did not answer for minutes. Past SUMMED_EXPERTS the
    # experts are charged as copies of one, which gives the sum to the nanosecond (below)
    import simpy_astra.workloads.megatron.linear_kernels as linear_kernels
    import simpy_astra.workloads.megatron.mixture_of_experts as mixture_of_experts

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    priced = []
    real = linear_kernels.gemm_seconds
    monkeypatch.setattr(linear_kernels, "gemm_seconds", lambda *a, **k: priced.append(1) or real(*a, **k))
    args = f"{TINY_GPT_ARGS} --num-experts 3000 --moe-router-topk 1 --moe-router-pre-softmax"
    assert main(["run", megatron_scenario(tmp_path, args), "--quiet"]) == 0
    assert len(priced) < 1000, len(priced)
    copies = capsys.readouterr().out
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache-summed"))
    monkeypatch.setattr(mixture_of_experts, "SUMMED_EXPERTS", 10**6)
    assert main(["run", megatron_scenario(tmp_path, args, "summed.yaml"), "--quiet"]) == 0
    assert capsys.readouterr().out == copies


def test_a_launch_line_given_as_a_yaml_list_drops_its_launcher_as_a_string_does(tmp_path, capsys):
    # before: args: [torchrun, --nproc_per_node, 8, pretrain_gpt.py, --num-layers, ...] was
    # "'torchrun' comes before any flag", though the same line as one string runs
    listed = ["torchrun", "--nproc_per_node", 8, "pretrain_gpt.py", *TINY_GPT_ARGS.split()]
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": listed},
                                 "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, "listed.yaml")
    assert _headline(capsys, path) == _headline(capsys, megatron_scenario(tmp_path))


def test_a_base_that_is_a_results_csv_says_what_it_holds_and_that_a_cluster_may_stand_in(tmp_path, capsys):
    # before: "the base scenario must be a mapping with workload (or jobs), system, network",
    # of a results.csv named as the base, and of a Megatron base, which needs no system or network
    (tmp_path / "results.csv").write_text("key,tp,finish_ns\nabc,1,100\n")
    sweep = write_yaml(tmp_path, {"base": "results.csv", "axes": {"cluster.gpus": [8]}}, "sweep.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: base: results.csv holds a str, not fields; a base scenario is a mapping with workload: (or "
        f"jobs:) and either cluster: {{preset: NAME, gpus: N}} or system: and network:"]


def test_generate_under_a_folder_that_takes_no_folders_says_so(capsys):
    # before: "--output: cannot create the folder '/proc/x' (No such file or directory)", of the
    # very folder it was making; --out and --json-out there say that the folder takes none
    err = error_lines(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                               "--num-npus", "4", "--output", "/proc/simpy-astra-hunt21/ar"])
    assert len(err) == 1 and "No such file or directory" not in err[0], err
    if os.geteuid() == 0:  # as a user, /proc refuses with 'permission denied' first
        assert err == ["error: --output: cannot create the folder '/proc/simpy-astra-hunt21' (its folder accepts no "
                       "new folders)"]


@pytest.mark.parametrize(("constraint", "said"), [
    ("gpus == 16", "(gpus is a field of cluster:, which an expression reads only from an axis: sweep cluster.gpus)"),
    ("lr > 0", "(--lr cannot change a step's time, so no expression reads it)"),
])
def test_a_constraint_on_a_cluster_field_or_an_untimed_flag_says_why_it_is_unknown(tmp_path, capsys, constraint,
                                                                                   said):
    # before: "uses unknown name(s) ['gpus']; known: ..." and some fifty names, none of them the
    # reason: the cluster's GPU count is no axis here, and --lr is read and ignored
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=[constraint])
    err = error_lines(capsys, ["sweep", sweep, "--list"])
    name = constraint.split()[0]
    assert len(err) == 1 and err[0].startswith(
        f"error: {sweep}: constraints[0]: '{constraint}' uses unknown name(s) ['{name}'] {said}; known: "), err
