"""A fifteenth hunt for inputs that ran as something other than what they say: each is now
refused before the run in one line naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, error_lines, write_yaml
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.wrapped_lines import plain

SMALL = ["--num-stacks", "1", "--dmodel", "64", "--dff", "64", "--head", "4", "--batch", "8"]


def _base(tmp_path: Path) -> str:
    """The default scenario, its workload's path made absolute, as a sweep's base."""
    return write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")


def test_a_transformer_of_one_npu_is_refused_after_its_other_flags(tmp_path, capsys):
    # generate transformer at its default dp 1 wrote w.0.et, which no run takes (every network
    # has 2 or more NPUs); a bad flag beside it is still the one told
    argv = ["generate", "transformer", *SMALL, "--output", str(tmp_path / "t" / "w")]
    assert error_lines(capsys, argv) == [
        "error: generate transformer: --dp x --tp x --pp x --sp is 1 NPU, and no run takes a 1-NPU trace (every "
        "network has 2 or more NPUs); give --dp 2 or more (or --tp, --pp)"]
    assert not (tmp_path / "t").exists()
    assert "'micro_batch' (3) must divide batch (8)" in error_lines(capsys, [*argv, "--micro-batch", "3"])[0]
    assert main([*argv, "--tp", "2"]) == 0
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["w.0.et", "w.1.et", "w.json"]


@pytest.mark.parametrize("m, n, k, shown", [
    (99_999_999_999, 64, 64, "(24999999999x64x64) is about 1,600,000,000,960 SCALE-Sim cycles"),
    (10 ** 23, 64, 64, "SCALE-Sim cycles"),
    (1024, 1024, 1024, "(256x1024x1024) is about 4,456,448 SCALE-Sim cycles"),
])
def test_a_gemm_layer_past_what_scalesim_can_time_is_refused_naming_it(tmp_path, capsys, m, n, k, shown):
    # m = 1e11 ended on 'internal error MemoryError: Unable to allocate 5.82 TiB', m = 1e23 on
    # numpy's 'Maximum allowed dimension exceeded', and 1024^3 on an 8x8 array ran past 15
    # minutes (SCALE-Sim steps about 10,000 cycles a second)
    (tmp_path / "layers.csv").write_text(f"Layer,m,n,k\nfc1,{m},{n},{k}\n")
    argv = ["generate", "gemm", "--mnk", str(tmp_path / "layers.csv"), "--parallel", "DATA", "--num-npus", "4",
            "--array", "8x8", "--output", str(tmp_path / "g" / "g")]
    err = error_lines(capsys, argv)
    assert len(err) == 1 and err[0].startswith("error: layer fc1: its fwd GEMM on one NPU (") and shown in err[0], err
    assert err[0].endswith("SCALE-Sim cycles on the 8x8 array, past the 1,000,000 timed (minutes each, or GBs of "
                           "tables); split the layer, or spread it over more NPUs")
    assert not (tmp_path / "g").exists()


def test_a_gemm_scenarios_too_large_layer_names_the_scenario(tmp_path, capsys):
    (tmp_path / "layers.csv").write_text("Layer,m,n,k\nfc1,64,64,64\nfc2,8,100000000,100000000\n")
    gemm = {"generate": "gemm", "mnk": "layers.csv", "parallel": "DATA", "num_npus": 8, "array": "8x8"}
    system = {**DEFAULT["system"], "local-mem-bw": 50}
    path = write_yaml(tmp_path, {"workload": gemm, "system": system, "network": DEFAULT["network"]})
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload: layer fc2: its fwd GEMM on one NPU "
                                               f"(1x100000000x100000000) is about "), err


@pytest.mark.parametrize("field, value, got", [("name", ["a", "b"], "list"), ("description", {"x": 1}, "dict")])
def test_a_label_that_is_not_text_is_refused_in_a_scenario_and_a_sweep(tmp_path, capsys, field, value, got):
    # a scenario's name: [a, b] (a sweep axis's form) ran once, the same scenario, and a sweep's
    # description: [a, b] was accepted alike: neither is read by any run
    path = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), **{field: value}))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field '{field}' is the scenario's label, one line of text (got a {got}); several values to "
        f"run are a sweep's axes: over fields a run reads (sweep --help)"]
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), field: value, "axes": {"network.bandwidth": [10, 20]}},
                       "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: field '{field}' is the sweep's label, one line of text (got a {got}); several values to "
        f"run are a sweep's axes: over fields a run reads (sweep --help)"]
    assert main(["sweep", write_yaml(tmp_path, {"base": _base(tmp_path), field: "ring sizes", "axes": {
        "network.bandwidth": [10, 20]}}, "sw.yaml"), "--list"]) == 0


def test_the_version_flag_with_more_after_it_is_refused(capsys):
    # --version extra printed the version and exited 0, the rest never read
    assert error_lines(capsys, ["--version", "extra"]) == [
        "error: --version: takes nothing after it (got extra); give --version alone"]
    assert main(["--version"]) == 0


def test_a_megatron_flag_given_twice_with_other_values_is_told_which_one_runs(tmp_path, capsys):
    # '--tensor-model-parallel-size 2 ... --tensor-model-parallel-size 4' ran at tp 4 without a
    # word (argparse keeps the later, as Megatron-LM's does: a warning, as launch scripts append
    # overrides so)
    doc = {"workload": {"generate": "megatron", "args": f"{ARGS} --tensor-model-parallel-size 2 "
                                                         f"--tensor-model-parallel-size=4"},
           "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}
    path = write_yaml(tmp_path, doc)
    assert main(["run", path, "--quiet"]) == 0
    assert plain(capsys.readouterr().err).strip().splitlines() == [
        f"warning: {path}: workload.args: --tensor-model-parallel-size is given twice, 2 then 4: Megatron-LM's argparse "
        f"keeps the later (4), as this step does; remove the one you do not mean"]
    # the same value twice says nothing
    doc["workload"]["args"] = f"{ARGS} --tensor-model-parallel-size 2 --tensor-model-parallel-size 2"
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
    assert plain(capsys.readouterr().err) == ""


@pytest.mark.parametrize("field, value, where, text", [
    ("minimise", "peak_memory_gb", "minimise", "peak_memory_gb"),
    ("report", ["finish_ns", "peak_weights_gb"], "report[1]", "peak_weights_gb"),
    ("constraints", ["peak_memory_gb < 10"], "constraints", "peak_memory_gb < 10"),
    ("memory_cap_gb", 10, "memory_cap_gb", "peak_memory_gb <= 10"),
])
def test_a_memory_figure_in_a_sweep_that_measures_no_memory_is_refused_before_the_run(tmp_path, capsys, field,
                                                                                      value, where, text):
    # minimise: peak_memory_gb ran every point, then ended on 'gave no number for any of the 2
    # finished points'; a report column was empty, and a constraint held no point to it: only a
    # run with track-local-mem on (or a Megatron job) measures memory, as hunt 14 found for mfu
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {"network.bandwidth": [10, 20]}, field: value},
                       "sw.yaml")
    name = text.split()[0]
    assert error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "out")]) == [
        f"error: {sweep}: {where}: '{text}' reads {name}, which only a run with system track-local-mem: 1 (or a "
        f"Megatron job) measures, and no point of this sweep sets it, so it would be empty for every point; set "
        f"track-local-mem: 1 in the base's system, or use finish_ns, exposed_comm_ns, ..."]
    assert not (tmp_path / "out").exists()
    # one point that tracks memory is enough
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {"system.track-local-mem": [0, 1]}, field: value},
                       "sw.yaml")
    assert main(["sweep", sweep, "--list"]) == 0


@pytest.mark.parametrize("text", ["finish_ns", "bandwidth - 10", "max(bandwidth, 20)", "-bandwidth", "1"])
def test_a_constraint_that_is_a_number_is_refused(tmp_path, capsys, text):
    # 'finish_ns' (a figure, not a test) held wherever it was not 0: every point was kept without
    # a word; 'bandwidth - 10' dropped only bandwidth 10, as if it were 'bandwidth != 10'
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {"network.bandwidth": [10, 20]},
                                  "constraints": [text]}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: constraints[0]: '{text}' is a number, not a test: it would hold wherever it is not 0; write "
        f"a comparison, such as '{text} > 0' or '{text} <= 100'"]
    # tests, and a bare axis name (a switch's axis may be one), are constraints
    for ok in ("finish_ns > 0", "not bandwidth == 10", "bandwidth > 10 and finish_ns < 1e9", "bandwidth"):
        sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {"network.bandwidth": [10, 20]},
                                      "constraints": [ok]}, "sw.yaml")
        assert main(["sweep", sweep, "--list"]) == 0, ok


def test_a_minimise_that_names_nothing_is_refused(tmp_path, capsys):
    # minimise: 1 ran every point and crowned the first listed, all of them tied
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {"network.bandwidth": [10, 20]}, "minimise": "1"},
                       "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "out")]) == [
        f"error: {sweep}: minimise: '1' names no figure or axis, so every point would tie and the first be called "
        f"best; minimise a figure, such as finish_ns"]
    assert not (tmp_path / "out").exists()


def test_a_link_too_fast_for_the_packet_backends_rates_is_refused(tmp_path, capsys):
    # bandwidth: [1e300] on the packet backend ended on 'internal error ValueError: cannot
    # convert float NaN to integer (this is a simpy-astra bug)'; the other backends time it
    network = dict(DEFAULT["network"], bandwidth=[1e300])
    path = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), network=network))
    assert error_lines(capsys, ["run", path, "--quiet", "--network-backend", "packet"]) == [
        f"error: {path}: network: field 'bandwidth[0]' is past 1e+15 GB/s per link, which the packet backend does not "
        f"time (its summed rates overflow; got 1e+300); give a link's real bandwidth, or use the congestion_aware "
        f"backend"]
    assert main(["run", path, "--quiet", "--network-backend", "congestion_aware"]) == 0


@pytest.mark.parametrize("field, value, said", [
    ("network", {"npus_count": [1.5]}, "network: field 'npus_count[0]' must be an integer > 1 (got 1.5); write 2"),
    ("network", {"npus_count": [1.0]}, "network: field 'npus_count[0]' must be an integer > 1 (got 1.0)"),
    ("num_queues_per_dim", 0.5, "field 'num_queues_per_dim': must be an integer from 1 to 4096 (got 0.5); write 1"),
    ("network", {"packet-size": 0.25}, "network: field 'packet-size' must be a whole number of bytes > 0 (got 0.25); "
                                       "write 1"),
])
def test_the_integer_to_write_is_one_the_field_takes(tmp_path, capsys, field, value, said):
    # npus_count: [1.5] was told 'write 1 or 2' and num_queues_per_dim: 0.5 'write 0 or 1': the
    # first of each is refused in turn
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]))
    doc[field] = dict(DEFAULT["network"], **value) if field == "network" else value
    path = write_yaml(tmp_path, doc)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {path}: {said}"]


def test_a_cluster_count_of_a_fraction_is_told_a_positive_integer(tmp_path, capsys):
    doc = {"workload": {"generate": "megatron", "args": ARGS},
           "cluster": {"preset": "dgx-a100-80gb", "gpus": 8, "gpu": {"sms": 0.5}}}
    path = write_yaml(tmp_path, doc)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: cluster.gpu.sms: must be a positive integer (got 0.5); write 1"]


def test_axis_values_that_set_the_scenario_alike_run_once(tmp_path, capsys):
    # ring and [ring] on a 1-dimension network (a scalar fills every dimension) listed, and ran,
    # two points of one scenario; best.json then crowned one of two equal rows
    sweep = write_yaml(tmp_path, {"base": _base(tmp_path), "axes": {
        "system.all-reduce-implementation": ["ring", ["ring"], "direct"]}}, "sw.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "2 points"
    assert " ".join(captured.err.split()) == (
        'warning: axes: all_reduce_implementation=["ring"] sets the scenario as all_reduce_implementation=ring '
        'does; it runs once, as all_reduce_implementation=ring')


@pytest.mark.parametrize("argv, said", [
    (["generate", "microbench", "--collective", "all_reduce", "--size", "1e3", "--num-npus", "4"],
     "error: simpy-astra generate microbench: argument --size: invalid int value: '1e3'; write 1000 (see simpy-astra "
     "generate microbench --help)"),
    (["generate", "transformer", "--dp", "2.5"], "error: generate transformer: argument --dp: invalid int value: "
                                                 "'2.5'; write 2 or 3"),
    (["generate", "megatron", "--gpus", "8.0"], "error: simpy-astra generate megatron: argument --gpus: invalid int "
                                                "value: '8.0'; write 8 (see simpy-astra generate megatron --help)"),
])
def test_a_float_for_a_flag_of_integers_is_told_the_integer(tmp_path, capsys, argv, said):
    # '--size 1e3' said only "invalid int value: '1e3'"; a Megatron argument (and every YAML
    # field) names the integer to write
    assert error_lines(capsys, [*argv, "--output", str(tmp_path / "t" / "x")]) == [said]
    assert not (tmp_path / "t").exists()


def test_a_number_hundreds_of_digits_long_is_shortened_in_an_error(tmp_path, capsys):
    # num_stacks: 1e200 written out as an integer made a line of 749 characters, and the
    # injection scale's 1e300 one of 300 digits; 40 or more digits now show their first and count
    gpt = {"generate": "transformer", "dp": 8, "num_stacks": 10 ** 200}
    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900}
    path = write_yaml(tmp_path, {"workload": gpt, "system": system, "network": DEFAULT["network"]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.num_stacks: (100,000,000,000,000,... (201 digits)) x micro-batches (1: batch / "
        f"micro_batch) would be about 8,000,000,000,000,00... (202 digits) trace nodes, more than the bound of "
        f"4,000,000 (about 4 GB to simulate); use fewer num_stacks or a larger micro_batch"]
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), injection_scale=1e300)
    err = error_lines(capsys, ["run", write_yaml(tmp_path, doc), "--quiet"])
    assert len(err) == 1 and len(err[0]) < 400 and "gives 1e+301 ns, past the int ASTRA-sim keeps" in err[0], err
    # 39 digits are shown whole
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), num_queues_per_dim=10 ** 38)
    assert f"(got {10 ** 38})" in error_lines(capsys, ["run", write_yaml(tmp_path, doc), "--quiet"])[0]


def test_a_system_written_as_null_is_refused(tmp_path, capsys):
    # 'system:' with nothing after it (YAML null) ended on 'internal error AssertionError: no
    # message (this is a simpy-astra bug)'; network: and workload: null were refused by name
    path = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), system=None))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field 'system' must be a file path or a mapping (got None)"]


def test_an_output_path_that_is_a_dangling_symlink_is_refused_before_the_run(tmp_path, capsys):
    # --csv-out (or --plots) on a symlink to a missing path ran the whole step, then ended on
    # 'cannot write into link (File exists)'; --json-out replaced the link with a file of its own
    # (now a file output is written through the link: its missing folder is named)
    (tmp_path / "link").symlink_to(tmp_path / "missing" / "out")
    default = str(SCENARIOS / "default.yaml")
    for flag in ("--csv-out", "--plots"):
        assert error_lines(capsys, ["run", default, "--quiet", flag, str(tmp_path / "link")]) == [
            f"error: {flag}: cannot write into {tmp_path / 'link'}: {tmp_path / 'link'} is a symlink that leads "
            f"nowhere (a loop, or to a missing path); give a folder, or mend the link"]
    assert error_lines(capsys, ["run", default, "--quiet", "--json-out", str(tmp_path / "link")]) == [
        f"error: --json-out: cannot write {tmp_path / 'missing' / 'out'}: {tmp_path / 'missing'} does not "
        f"exist (make it first)"]
    assert (tmp_path / "link").is_symlink() and not (tmp_path / "missing").exists()


def test_a_sweep_or_calibrate_out_that_is_a_dangling_symlink_says_so(tmp_path, capsys):
    # sweep --out and calibrate --out on a symlink to a missing path were refused before the
    # run, but said only 'cannot create link (File exists)': the name exists, as a link
    (tmp_path / "link").symlink_to(tmp_path / "missing" / "out")
    link = tmp_path / "link"
    said = f"error: --out: {link} is a symlink to nothing, not a folder; name a folder"
    sweep = str(SCENARIOS / "sweeps" / "quick.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--out", str(link), "--no-plots"]) == [said]
    a100 = Path(__file__).parent / "data" / "nccl" / "dgx-a100-superbench"
    assert error_lines(capsys, ["calibrate", str(a100 / "all_reduce.log"), "--network", str(a100 / "network.yml"),
                                "--out", str(link)]) == [said]
    assert link.is_symlink() and not (tmp_path / "missing").exists()
