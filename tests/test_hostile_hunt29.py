"""A twenty-ninth hunt: pasted launch lines, and the other front doors, wrong in new ways. Each
test failed before its fix: a wrong success (a job other than the one written), a traceback, or
a message naming no place or no fix."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS, error_lines, megatron_scenario


@pytest.mark.parametrize(("script", "model"), [
    ("pretrain_bert.py", "BERT"), ("/workspace/Megatron-LM/pretrain_t5.py", "T5"),
    ("pretrain_mamba.py", "Mamba"), ("pretrain_vlm.py", "vision-language")])
def test_a_pasted_line_running_another_models_script_is_refused(tmp_path, capsys, script, model):
    # before: the script's name was dropped with the launcher's words, so a BERT, T5 or Mamba
    # job ran as pretrain_gpt.py's GPT, in silence (1.842 ms, as the GPT job)
    path = megatron_scenario(tmp_path, f"torchrun --nproc_per_node 8 --nnodes 2 {script} {TINY_GPT_ARGS}",
                             preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    name = script.rpartition("/")[2]
    assert line.startswith(f"error: {path}: workload.args: {name} trains ") and model in line, line
    assert line.endswith("this simulates pretrain_gpt.py's GPT model only; give its arguments to pretrain_gpt.py"), line
    for gpt in ("pretrain_gpt.py", "/opt/Megatron-LM/pretrain_gpt.py", "my_wrapper.py"):
        fine = megatron_scenario(tmp_path, f"torchrun --nproc_per_node 8 --nnodes 2 {gpt} {TINY_GPT_ARGS}",
                                 "fine.yaml", preset="dgx-h100", gpus=16)
        assert main(["run", fine, "--quiet"]) == 0


def _nccl_log(tmp_path, edit) -> tuple[str, str]:
    """An H100 all-reduce log edited by ``edit`` (its text -> the new text), and its network."""
    from pathlib import Path

    logs = Path(__file__).resolve().parent / "data" / "nccl" / "hgx-h100-2node-ib"
    (tmp_path / "bad.log").write_text(edit((logs / "all_reduce.log").read_text()))
    return str(tmp_path / "bad.log"), str(logs / "network.yml")


def _row_twice(text: str) -> str:
    row = next(line for line in text.splitlines() if line.split()[:1] == ["1048576"])
    return text.replace(row, f"{row}\n{row}")


def test_a_nccl_row_pasted_twice_is_refused_not_fitted_twice(tmp_path, capsys):
    # before: 'fitted on 16 sizes' of the log's 15: the row, repeated with its own time, counted
    # twice in the fit and its scores (a repeat with another time was refused)
    log, network = _nccl_log(tmp_path, _row_twice)
    assert error_lines(capsys, ["calibrate", log, "--network", network, "--out", str(tmp_path / "cal")]) == [
        f"error: {log}:64: size 1048576 is also on line 63 of this table, with the same time (71.93 us): a line "
        f"pasted twice? keep one"]



@pytest.mark.parametrize(("counts", "shape"), [([4, 4], "4 x 4"), ([16], "16"), ([4, 8], "4 x 4")])
@pytest.mark.parametrize("command", ["calibrate", "validate"])
def test_a_network_whose_dimensions_split_a_logged_host_is_refused(tmp_path, capsys, counts, shape, command):
    # before: the H100 log's two hosts of 8 (its Rank lines: bm-h100-01, bm-h100-02) fitted on
    # a 4 x 4 network in silence, its second dimension taking pairs inside a host and across
    # alike: 970 GiB/s and 131 GiB/s, where [8, 2] fits 607 and 82
    from pathlib import Path

    import yaml

    logs = Path(__file__).resolve().parent / "data" / "nccl" / "hgx-h100-2node-ib"
    network = tmp_path / "net.yml"
    network.write_text(yaml.safe_dump({"topology": ["Switch"] * len(counts), "npus_count": counts,
                                       "bandwidth": [370.0, 50.0][:len(counts)],
                                       "latency": [500.0, 2000.0][:len(counts)]}))
    log = str(logs / "all_reduce.log")
    extra = ["--system", str(tmp_path / "none.json")] if command == "validate" else []
    (tmp_path / "none.json").write_text('{"all-reduce-implementation": ["ring"]}')
    lines = error_lines(capsys, [command, log, "--network", str(network), *extra, "--out", str(tmp_path / "o")])
    assert lines[-1] == (
        f"error: {log}: the log's 16 GPUs sit 8 to a host (its Rank lines), but the network's dimensions ({shape}) "
        f"do not end at a host's GPUs; give --network's npus_count [8, 2] (or dimensions within a host whose "
        f"product is 8)"), lines


@pytest.mark.parametrize("path_flag", ["--tokenizer-model /data/tok.py", "--load /ckpt/run.py --save-interval 100",
                                       "--data-path=/data/corpus.py"])
def test_a_value_ending_in_py_is_no_launch_scripts_name(tmp_path, capsys, path_flag):
    # before: the first word ending in .py was taken for pretrain_gpt.py, so every flag before it
    # was dropped as a launcher's: --tensor-model-parallel-size 2 ran at tp 1, in silence
    from tests.scenario_files import headline_and_warnings

    tp2 = f"--tensor-model-parallel-size 2 {TINY_GPT_ARGS}"
    written = headline_and_warnings(capsys, megatron_scenario(tmp_path, f"--tensor-model-parallel-size 2 {path_flag} "
                                                                        f"{TINY_GPT_ARGS}", "a.yaml"))
    assert written == headline_and_warnings(capsys, megatron_scenario(tmp_path, tp2, "b.yaml"))
    pasted = f"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 {path_flag} {TINY_GPT_ARGS}"
    assert headline_and_warnings(capsys, megatron_scenario(tmp_path, pasted, "c.yaml")) == written


def test_a_fitted_log_cleaned_since_keeps_its_fitted_rows_out_of_the_held_out_score(tmp_path, capsys):
    # before: the H100 log with its MPI chatter cut out (its lines moved, its checksum new) was
    # scored 'HELD OUT ... 15 sizes, geomean error 5.4%': its 10 fitted rows among the
    # predictions, where the 5 held out score 6.6%
    from pathlib import Path

    logs = Path(__file__).resolve().parent / "data" / "nccl" / "hgx-h100-2node-ib"
    log, network = logs / "all_reduce.log", str(logs / "network.yml")
    assert main(["calibrate", str(log), "--network", network, "--out", str(tmp_path / "cal"),
                 "--hold-out-every", "3"]) == 0
    text = log.read_text()
    cleaned = tmp_path / "cleaned.log"
    cleaned.write_text(text[:text.index("-----")] + text[text.index("# nThread"):])
    scored = []
    for given in (log, cleaned):
        capsys.readouterr()
        assert main(["validate", str(given), "--network", str(tmp_path / "cal" / "network.yml"), "--system",
                     str(tmp_path / "cal" / "system.json"), "--holdout", str(tmp_path / "cal" / "calibration.json"),
                     "--out", str(tmp_path / "v")]) == 0
        out = capsys.readouterr().out.replace("\n  ", " ")  # a wrapped line's continuation joined back
        scored.append([line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(("HELD OUT", "fitted"))])
    assert scored[1] == scored[0] and len(scored[0]) == 2 and "5 sizes" in scored[0][0], scored


def test_a_log_named_without_its_folder_is_not_shown_at_the_root(tmp_path, capsys, monkeypatch):
    # before: 'HELD OUT /all_reduce.log: ...', a path at the root, for a log given as all_reduce.log
    from pathlib import Path

    logs = Path(__file__).resolve().parent / "data" / "nccl" / "hgx-h100-2node-ib"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "all_reduce.log").write_text((logs / "all_reduce.log").read_text())
    assert main(["calibrate", "all_reduce.log", "--network", str(logs / "network.yml"), "--out", "cal",
                 "--hold-out-every", "3"]) == 0
    capsys.readouterr()
    assert main(["validate", "all_reduce.log", "--network", "cal/network.yml", "--system", "cal/system.json",
                 "--holdout", "cal/calibration.json", "--out", "v"]) == 0
    roles = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("HELD OUT", "fitted"))]
    assert [line.split(":")[0] for line in roles] == ["HELD OUT all_reduce.log", "fitted   all_reduce.log"], roles


def test_a_missing_algorithm_list_is_worded_with_its_article(tmp_path, capsys):
    # before: "field 'all-reduce-implementation' is missing, but the workload runs a all_reduce
    # collective"
    from tests.scenario_files import DEFAULT, default_with, write_yaml

    system = {key: value for key, value in DEFAULT["system"].items() if key != "all-reduce-implementation"}
    path = write_yaml(tmp_path, default_with(system=system))
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "the workload runs an all_reduce collective; add e.g." in line, line


@pytest.mark.parametrize(("written", "meant"), [("dp <= 8", "'data_parallel_size' for 'dp'"),
                                                ("tp * pp <= 4", "'pipeline_model_parallel_size' for 'pp'")])
def test_a_megatron_short_name_no_axis_is_called_is_told_its_long_name(tmp_path, capsys, written, meant):
    # before: "uses unknown name(s) ['dp']; known: ..." (or "did you mean 'cp'") and no fix:
    # the short names are the axes' names, and a base's own flags go by their long ones
    from tests.scenario_files import megatron_sweep

    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2]}, constraints=[written])
    (line,) = error_lines(capsys, ["sweep", path, "--list"])
    assert f"uses unknown name(s) {sorted({'dp', 'pp'} & set(written.split()))}; did you mean {meant}?" in line, line


def test_a_system_number_in_quotes_is_told_to_lose_them(tmp_path, capsys):
    # before: "field 'preferred-dataset-splits' must be an integer >= 1 (got "4")", no fix named,
    # where a cluster's '16' is told to lose its quotes (a sweep's system axis of '4' failed so)
    import json

    from tests.scenario_files import DEFAULT, default_with, write_yaml

    path = write_yaml(tmp_path, default_with(system={**DEFAULT["system"], "preferred-dataset-splits": "4"}))
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "(got \"4\"); write 4 without quotes (in quotes, YAML reads it as text)" in line, line
    (tmp_path / "sys.json").write_text(json.dumps({**DEFAULT["system"], "endpoint-delay": "10"}))
    path = write_yaml(tmp_path, default_with(system=str(tmp_path / "sys.json")))
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert line.endswith("(got \"10\"); write 10 without quotes (in quotes, JSON reads it as text)"), line


def test_a_preset_name_near_none_is_told_to_give_a_preset_file(tmp_path, capsys):
    # before: "'dgx-h200' is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a YAML
    # file", no fix named for a machine none of the presets is
    path = megatron_scenario(tmp_path, preset="dgx-h200")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: cluster.preset: 'dgx-h200' is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a "
        f"YAML file; for another machine, give its own preset file (preset: ./my-cluster.yaml, a shipped preset's "
        f"fields with its figures)"]
