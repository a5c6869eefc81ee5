"""A twenty-sixth hunt: inputs a careless or hostile researcher gives (files in another
encoding, empty values, misspelt paths, stray environment values, a network graph with parts
that do nothing). Each test failed before its fix: a wrong success, a traceback, or a
message naming no place or no fix."""

from __future__ import annotations

import csv

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, default_with, error_lines, write_yaml


def test_a_scenario_in_latin1_names_the_line_column_and_the_fix(tmp_path, capsys):
    # before: 'is not UTF-8 text (byte 31)': a byte offset, and no fix
    path = tmp_path / "s.yaml"
    text = write_yaml(tmp_path, default_with(name="cafe"))
    path.write_bytes(open(text).read().replace("name: cafe", "name: café").encode("latin-1"))
    line = next(n for n, t in enumerate(path.read_bytes().split(b"\n"), 1) if t.startswith(b"name:"))
    assert error_lines(capsys, ["run", str(path)]) == [
        f"error: {path}: is not UTF-8 text (line {line}, column 10: byte 0xe9); save it as UTF-8 (iconv -f "
        f"WINDOWS-1252 -t UTF-8 for an editor's Latin-1 or Windows-1252); expected the scenario YAML file"]


@pytest.mark.parametrize("codec", ["UTF-16LE", "UTF-16BE"])
def test_a_scenario_in_utf16_without_a_byte_order_mark_names_its_encoding(tmp_path, capsys, codec):
    # before: 'invalid YAML: unacceptable character #x0000: special characters are not allowed in
    # "<unicode string>", position 1' (PyYAML's words, no line, no fix)
    path = tmp_path / "s.yaml"
    path.write_bytes((SCENARIOS / "default.yaml").read_text().encode(codec.lower()))
    assert error_lines(capsys, ["run", str(path)]) == [
        f"error: {path}: is {codec} text without a byte-order mark (every other byte is 0), not UTF-8; save it as "
        f"UTF-8 (iconv -f {codec} -t UTF-8); expected the scenario YAML file"]


@pytest.mark.parametrize(("char", "name"), [("\0", "a NUL byte"), ("\x07", "a control character")])
def test_a_control_character_in_yaml_names_its_line_and_column(tmp_path, capsys, char, name):
    # before: '... special characters are not allowed in "<unicode string>", position 716'
    path = tmp_path / "s.yaml"
    path.write_text(f"name: a{char}b\n" + (SCENARIOS / "default.yaml").read_text().split("\nname:", 1)[1]
                    .split("\n", 1)[1])
    assert error_lines(capsys, ["run", str(path)]) == [
        f"error: {path}: invalid YAML at line 1, column 8: character U+{ord(char):04X} ({name}) cannot be in "
        f"YAML text; delete it (a binary file, or one pasted with control characters?)"]


def test_a_text_workload_in_latin1_names_the_line_and_the_fix(tmp_path, capsys):
    # before: 'not a text file': untrue of a layer name typed in Latin-1
    path = tmp_path / "w.txt"
    path.write_bytes(b"DATA\n1\nconv\xe9 -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 100 1\n")
    err = error_lines(capsys, ["convert", "text", "--input", str(path), "--output", str(tmp_path / "w"),
                               "--num-npus", "4", "--num-passes", "1"])
    assert err == [f"error: {path}: is not UTF-8 text (line 3, column 5: byte 0xe9); save it as UTF-8 (iconv -f "
                   f"WINDOWS-1252 -t UTF-8 for an editor's Latin-1 or Windows-1252); expected an ASTRA-sim 1.0 "
                   f"text workload"]


@pytest.mark.parametrize(("axis", "why", "meant"), [
    ("sytem.preferred-dataset-splits", "fail on it", "system.preferred-dataset-splits"),
    ("netwrk.bandwidth", "fail on it", "network.bandwidth"),
    ("network.bandwith.0", "run the same", "network.bandwidth.0"),
    ("system.preferred-dataset-split", "run the same", "system.preferred-dataset-splits"),
])
def test_a_misspelt_axis_is_told_the_whole_path_it_meant(tmp_path, capsys, axis, why, meant):
    # before: 'sytem.preferred-dataset-splits' was asked 'did you mean 'system'?' (a path that
    # sets the whole system), and said every point would run the same, though the run refuses
    # the unknown top-level key at every point
    write_yaml(tmp_path, default_with(), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {axis: [1, 2]}}, "sweep.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: axes: {axis}: '{axis}' names no field of the scenario (every point would {why}); did "
        f"you mean '{meant}'?"]


def test_a_misspelt_job_field_of_an_axis_is_told_the_whole_path(tmp_path, capsys):
    job = {"name": "a", "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1024,
                                     "num_npus": 8}, "placement": "contiguous"}
    base = {key: value for key, value in default_with().items() if key != "workload"}
    write_yaml(tmp_path, {**base, "jobs": [job]}, "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"jobs.0.worklod.size": [1, 2]}}, "sweep.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"])[-1].endswith(
        "did you mean 'jobs.0.workload.size'?")


def _transformer(**params) -> dict:
    """A small Llama-style training step on the default scenario's 8 NPUs (dp 4 x tp 2)."""
    return {"generate": "transformer", "model": "llama", "dp": 4, "tp": 2, "dmodel": 256, "dff": 512,
            "head": 4, "kvhead": 2, "num_stacks": 2, "seq": 128, "batch": 8, "micro_batch": 4, **params}


@pytest.mark.parametrize(("workload", "key"), [
    (_transformer(seq=None), "seq"),
    ({"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 8, "src": None}, "src"),
])
def test_a_generator_parameter_written_empty_is_refused_not_run_at_its_default(tmp_path, capsys, workload, key):
    # before: 'seq:' with its value forgotten (YAML's null) ran the transformer at seq 1024, in
    # silence, where a cluster key written so is refused
    path = write_yaml(tmp_path, default_with(workload=workload))
    generator = workload["generate"]
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.{key}: is empty (null); write its value (or leave the key out, where generate "
        f"{generator} has a default for it)"]


def test_a_null_generator_parameter_on_a_sweep_axis_leaves_it_at_its_default(tmp_path, capsys):
    # null leaves our generator's parameter out (docs/sweeps.md), as on a cluster axis
    write_yaml(tmp_path, default_with(workload=_transformer()), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"workload.seq": [None, 1024]}}, "sweep.yaml")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out")]) == 0
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert len(rows) == 3 and all(",ok," in row for row in rows[1:]), rows


@pytest.mark.parametrize(("workload", "key", "meant"), [
    (_transformer(**{"micro-batch": 4}), "micro-batch", "micro_batch"),
    ({"generate": "microbench", "collective": "all_reduce", "sizes": 1024, "num_npus": 8}, "sizes", "size"),
    ({"generate": "microbench", "collective": "all_reduce", "size": 1024, "num-npus": 8}, "num-npus", "num_npus"),
])
def test_a_generator_parameter_misspelt_is_told_the_one_it_meant(tmp_path, capsys, workload, key, meant):
    # before: "generate microbench does not take ['sizes']; use collective, size, ...", or the
    # transformer's list of 24 names, for the flag's own spelling micro-batch
    path = write_yaml(tmp_path, default_with(workload=workload))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.{key}: generate {workload['generate']} takes no parameter '{key}'; did you "
        f"mean '{meant}'?"]


SPACE = "it starts or ends with a space: remove it"


@pytest.mark.parametrize(("cache", "problem"), [
    ("  ", SPACE), (" cache", SPACE), ("cache ", SPACE),
    # review of ed643c9: spaces alone were refused; $HOME/cache from an env file (docker's
    # --env-file, systemd's EnvironmentFile= expand nothing) made a folder '$HOME' in silence
    ("$HOME/cache", "$HOME is a shell's variable, which no shell expands here: write {home}/cache"),
])
def test_a_cache_path_with_shell_words_is_refused_naming_the_variable(tmp_path, capsys, monkeypatch, cache, problem):
    # before: SIMPY_ASTRA_CACHE="  " made a folder named by two spaces in the working folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", cache)
    path = write_yaml(tmp_path, default_with(workload={"generate": "microbench", "collective": "all_reduce",
                                                       "size": 1024, "num_npus": 8}))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload: SIMPY_ASTRA_CACHE: is {cache!r}: {problem.format(home=tmp_path / 'home')} (or "
        f"unset it for ~/.cache/simpy-astra)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("value", "traceback"), [("0", False), ("off", False), ("1", True)])
def test_traceback_switch_reads_zero_as_off(tmp_path, capsys, monkeypatch, value, traceback):
    # before: SIMPY_ASTRA_TRACEBACK=0 printed the traceback (any text was 'on'), unlike the
    # other switches, which read 0/off as off
    import simpy_astra.cli.run as run

    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(run, "_simulate", bug)
    monkeypatch.setenv("SIMPY_ASTRA_TRACEBACK", value)
    path = write_yaml(tmp_path, default_with())
    if traceback:
        with pytest.raises(RuntimeError):
            main(["run", path, "--quiet"])
        return
    assert main(["run", path, "--quiet"]) != 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "RuntimeError: a bug" in err[0], err


def test_traceback_switch_of_another_word_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_TRACEBACK", "please")
    assert error_lines(capsys, ["run", write_yaml(tmp_path, default_with()), "--quiet"]) == [
        "error: SIMPY_ASTRA_TRACEBACK: must be 1/on or 0/off (got 'please'); unset it for the default (a bug's one "
        "error line, no traceback)"]


def _star(switches: list[str]) -> dict:
    """The default scenario's 8 NPUs under one switch s0, ``switches`` listed."""
    graph = {"switches": switches, "links": [[npu, "s0"] for npu in range(8)]}
    return {"topology": ["Graph"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0], "graph": graph}


def test_a_listed_switch_no_link_names_is_refused(tmp_path, capsys):
    # before: a switch listed but left out of every link (a typo in the links) ran in silence
    path = write_yaml(tmp_path, default_with(network=_star(["s0", "spine"]), backend="congestion_aware"))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: network: field 'graph.switches' lists 'spine', which no link in graph.links names; link "
        f"it, or remove it"]
    assert main(["run", write_yaml(tmp_path, default_with(network=_star(["s0"]), backend="congestion_aware")),
                 "--quiet"]) == 0


@pytest.mark.parametrize(("field", "backend"), [("link-model", "congestion_unaware"), ("switch-model", "packet")])
def test_an_element_model_beside_another_backend_is_told_the_fix(tmp_path, capsys, field, backend):
    # before: '... is read by the congestion_aware backend only, not packet': no fix
    network = {**DEFAULT["network"], field: "ecn" if field == "link-model" else "delay"}
    path = write_yaml(tmp_path, default_with(network=network, backend=backend))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: network: field '{field}' is read by the congestion_aware backend only, not {backend}; set "
        f"backend: congestion_aware (or --network-backend congestion_aware), or remove it"]


@pytest.mark.parametrize(("written", "problem"), [
    ("$HOME/traces/step", "$HOME is a shell's variable, which no shell expands here: write {home}/traces/step"),
    ("${HOME}/traces/step", "$HOME is a shell's variable, which no shell expands here: write {home}/traces/step"),
    ("$NO_SUCH_VARIABLE_H26/step", "$NO_SUCH_VARIABLE_H26 is a shell's variable, which no shell expands here: "
                                   "write the path itself"),
    (" traces/step", "it starts or ends with a space: remove it"),
])
def test_a_path_written_as_a_shell_reads_it_is_told_the_fix(tmp_path, capsys, monkeypatch, written, problem):
    # before: 'SCENARIO_FOLDER/$HOME/traces/step.0.et: the ET file for NPU 0 does not exist'
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NO_SUCH_VARIABLE_H26", raising=False)
    path = write_yaml(tmp_path, default_with(workload=written))
    said = problem.format(home=tmp_path / "home")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {path}: field 'workload' is {written!r}: {said}"]


def test_a_preset_or_base_path_written_as_a_shell_reads_it_is_told_the_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": "--num-layers 2"},
                                 "cluster": {"preset": "$HOME/my.yaml", "gpus": 8}})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: cluster.preset: '$HOME/my.yaml': $HOME is a shell's variable, which no shell expands "
        f"here: write {tmp_path}/home/my.yaml"]
    write_yaml(tmp_path, default_with(), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml ", "axes": {"network.bandwidth": [1, 2]}}, "sweep.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: base: 'base.yaml ': it starts or ends with a space: remove it"]


def test_a_file_literally_named_with_a_dollar_is_read(tmp_path, capsys):
    folder = tmp_path / "$HOME"
    folder.mkdir()
    for rank in range(8):
        (folder / f"step.{rank}.et").write_bytes((SCENARIOS / f"{DEFAULT['workload']}.{rank}.et").read_bytes())
    path = write_yaml(tmp_path, default_with(workload="$HOME/step"))
    assert main(["run", path, "--quiet"]) == 0


def test_an_indexed_axis_on_an_aliased_list_sets_that_field_alone(tmp_path, capsys):
    # before: 'latency: *bw' shared the list 'bandwidth: &bw [500.0]' named, so the point
    # network.bandwidth.0=100 ran at latency 100 too (103,300 ns, faster than at 500 GB/s)
    text = (f"workload: {SCENARIOS / DEFAULT['workload']}\n" + yaml.safe_dump({"system": DEFAULT["system"]})
            + "network:\n  topology: [Ring]\n  npus_count: [8]\n  bandwidth: &bw [500.0]\n  latency: *bw\n")
    (tmp_path / "base.yaml").write_text(text)
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"network.bandwidth.0": [100.0]}}, "sweep.yaml")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out")]) == 0
    swept = next(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    alone = write_yaml(tmp_path, default_with(network={**DEFAULT["network"], "bandwidth": [100.0],
                                                       "latency": [500.0]}), "alone.yaml")
    capsys.readouterr()
    assert main(["run", alone, "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"iteration time {int(swept['finish_ns']):,} ns")
    point = next((tmp_path / "out" / "points").iterdir()).read_text()
    assert "*id" not in point and "&id" not in point


def test_a_job_started_too_late_to_finish_is_told_its_start_not_the_bandwidth(tmp_path, capsys):
    # before: 'network: NPU 0 would finish at 9.223e+18 ns ...; raise the bandwidth or shrink
    # the sizes', for a job whose own 94,720 ns fit easily from 0
    job = {"name": "a", "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20,
                                     "num_npus": 4}, "npus": [0, 1, 2, 3]}
    base = {key: value for key, value in default_with().items() if key != "workload"}
    alone = write_yaml(tmp_path, {**base, "jobs": [job]}, "alone.yaml")
    assert main(["run", alone, "--quiet"]) == 0
    took = int(capsys.readouterr().out.split()[2].replace(",", ""))
    horizon = 2**63 - 1
    late = write_yaml(tmp_path, {**base, "jobs": [{**job, "start_ns": horizon - took // 2}]})
    err = error_lines(capsys, ["run", late, "--quiet"])[-1]
    assert err.startswith(f"error: {late}: jobs[0].start_ns: job a starts at {horizon - took // 2:,} ns and "
                          f"runs {took:,} ns, past 2^63 ns"), err
    assert err.endswith(f"; start it at most {horizon - took:,} ns"), err


def test_a_sweep_null_on_a_users_generator_parameter_is_given_to_it_as_run_gives_it():
    # review of ce8c7c6: a sweep's null left out every key beside 'generate', so a user's
    # generator got no key from the sweep where run gives it the scenario's 'key: null'; ours
    # refuse a null, so there the sweep's null leaves the key out (docs/sweeps.md)
    from simpy_astra.sweep.base_scenario import set_path
    from simpy_astra.workloads.generator_registry import GENERATORS, register

    register("review_gen_user", lambda params, prefix: None)
    try:
        users = {"workload": {"generate": "review_gen_user", "depth": 3}}
        set_path(users, "workload.depth", None, "s.yaml")
    finally:
        GENERATORS.pop("review_gen_user")
    assert users["workload"] == {"generate": "review_gen_user", "depth": None}
    ours = {"workload": {"generate": "microbench", "size": 1024}}
    set_path(ours, "workload.size", None, "s.yaml")
    assert ours["workload"] == {"generate": "microbench"}


def test_a_plain_path_is_not_looked_up_for_shell_words(monkeypatch, tmp_path):
    # review of ed35598: every path a scenario, preset or sweep base names was looked up twice
    # on disk (the path and its .0.et) before the text showed no $NAME and no outer space
    from simpy_astra.config import path_words

    def looked(path):
        raise AssertionError(f"looked up {path}")

    monkeypatch.setattr(path_words.os.path, "lexists", looked)
    assert path_words.shell_words("traces/x", str(tmp_path)) is None


def test_a_job_started_too_late_is_told_so_in_one_short_line_from_python_too():
    # review of 5bb1f22: the line ran 242 characters beside its file (the NPU, its finish in
    # e-notation and the horizon twice), and a job made in Python (no scenario place) was
    # named '.start_ns'
    from types import SimpleNamespace

    from simpy_astra.infra.horizon import HORIZON_NS, finish_past_horizon

    start = HORIZON_NS - 1000
    scenario = SimpleNamespace(name="a", start_ns=start, where="s.yaml: jobs[0]")
    err = str(finish_past_horizon(None, 0, start + 94_720, job=scenario))
    assert err.endswith(f"start it at most {HORIZON_NS - 94_720:,} ns") and len(err) <= 200, (len(err), err)
    python = SimpleNamespace(name="a", start_ns=start, where="")
    assert str(finish_past_horizon(None, 0, start + 94_720, job=python)).startswith("job a: start_ns: job a "), err

