"""Our own formats are strict: an unknown scenario, job or sweep key is an error naming the
nearest known one, a YAML merge key is refused by name, and a job name that would break the
output's lines is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.config.scenario import SCENARIO_KEYS
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMP_NODE

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"],
          "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
          "all-to-all-implementation": ["ring"], "collective-optimization": "baseline"}
NETWORK = "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n"


def _scenario(folder: Path, body: str) -> Path:
    for rank in range(2):
        write_et(str(folder / f"w.{rank}.et"), [make_node(0, "c", COMP_NODE, duration_micros=5)])
    path = folder / "s.yaml"
    path.write_text(f"system: {json.dumps(SYSTEM)}\nremote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n" + body)
    return path


def _one_error(capsys, argv, *words) -> None:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and err[0].startswith("error: "), err
    for word in words:
        assert word in err[0], (word, err[0])


@pytest.mark.parametrize("body, words", [
    (f"workload: W\n{NETWORK.replace('network', 'netwrok')}", ("'netwrok'", "did you mean 'network'")),
    (f"workload: W\n{NETWORK}fold_symetry: false\n", ("'fold_symetry'", "did you mean 'fold_symmetry'")),
    (f"workload: W\n{NETWORK}zzzz: 1\n", ("'zzzz'", "not a scenario field", "known: ")),
])
def test_unknown_scenario_key_is_an_error(tmp_path, capsys, body, words):
    path = _scenario(tmp_path, body.replace("W", str(tmp_path / "w")))
    _one_error(capsys, ["run", str(path), "--quiet"], *words)


def test_unknown_job_key_is_an_error(tmp_path, capsys):
    path = _scenario(tmp_path, f"{NETWORK}jobs:\n  - {{name: a, workload: {tmp_path / 'w'}, npus: [0, 1], "
                               f"start: 5}}\n")
    _one_error(capsys, ["run", str(path), "--quiet"], "jobs[0]", "'start'", "not a job field")


@pytest.mark.parametrize("name", ["a\\nsys[0] finished, 1 cycles", "a\\tb", "a\\u0007", " a"])
def test_job_name_that_would_break_the_output_is_refused(tmp_path, capsys, name):
    path = _scenario(tmp_path, f'{NETWORK}jobs:\n  - {{name: "{name}", workload: {tmp_path / "w"}, '
                               f'npus: [0, 1]}}\n')
    _one_error(capsys, ["run", str(path), "--quiet"], "jobs[0].name", "printable")


@pytest.mark.parametrize("key, near", [("axis", "axes"), ("minimize", "minimise")])
def test_unknown_sweep_key_is_an_error(tmp_path, capsys, key, near):
    base = _scenario(tmp_path, f"workload: {tmp_path / 'w'}\n{NETWORK}")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base: {base}\naxes: {{network.bandwidth: [1, 2]}}\n{key}: x\n")
    _one_error(capsys, ["sweep", str(sweep), "--list"], f"'{key}'", "not a sweep field", f"did you mean '{near}'")


def test_unknown_key_in_a_sweep_base_is_an_error(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base:\n  workload: {tmp_path / 'w'}\n  {NETWORK.replace('network', 'netwrk')}"
                     f"axes: {{backend: [congestion_unaware]}}\n")
    _one_error(capsys, ["sweep", str(sweep), "--list"], "base", "'netwrk'", "did you mean 'network'")


@pytest.mark.parametrize("text", [
    "base: &b {topology: [Ring], npus_count: [2]}\nnetwork:\n  <<: *b\n  bandwidth: [50]\n  latency: [500]\n",
])
def test_yaml_merge_key_is_refused_by_name(tmp_path, capsys, text):
    path = _scenario(tmp_path, f"workload: {tmp_path / 'w'}\n" + text)
    _one_error(capsys, ["run", str(path), "--quiet"], "merge key (<<)", "line ")


def test_known_keys_include_the_cluster_field_being_added():
    assert {"workload", "network", "jobs", "cluster"} <= SCENARIO_KEYS


MEGATRON_ARGS = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1 "
                 "--global-batch-size 2 --bf16 --vocab-size 128")


@pytest.mark.parametrize("key, value", [("gpus", 64), ("gpu", {"sms": 1})])
def test_a_gpu_field_in_a_megatron_workload_beside_a_cluster_is_refused(tmp_path, capsys, key, value):
    """The cluster gives the GPU count and the GPU; a ``workload.gpus: 64`` beside
    ``cluster.gpus: 2`` was dropped without a word and the run simulated 2 GPUs."""
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": MEGATRON_ARGS, key: value},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}}))
    _one_error(capsys, ["run", str(path), "--quiet"], str(path), f"workload.{key}", f"cluster.{key}")


@pytest.mark.parametrize("cluster", ["cluster:\n", "cluster: null\n", "cluster: ~\n"])
def test_an_empty_cluster_is_refused_as_the_cluster_not_as_a_missing_system(tmp_path, capsys, cluster):
    """``cluster:`` left empty was read as no cluster, and the error blamed a 'system' the
    user never meant to write."""
    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{generate: megatron, args: '{MEGATRON_ARGS}'}}\n{cluster}")
    _one_error(capsys, ["run", str(path), "--quiet"], str(path), "cluster:", "preset: NAME, gpus: N")


def test_num_passes_beside_a_cluster_is_refused(tmp_path, capsys):
    """num_passes repeats an ASTRA-sim 1.0 text workload; a cluster's job ignored it and
    printed one iteration's figures as if it had run five."""
    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{generate: megatron, args: '{MEGATRON_ARGS}'}}\n"
                    f"cluster: {{preset: dgx-a100-80gb, gpus: 2}}\nnum_passes: 5\n")
    _one_error(capsys, ["run", str(path), "--quiet"], str(path), "num_passes", "one training iteration")


PRESET = Path(__file__).resolve().parents[1] / "simpy_astra" / "config" / "clusters" / "dgx-a100-80gb.yaml"


def _preset_scenario(folder: Path, preset_text: str) -> Path:
    (folder / "my.yaml").write_text(preset_text)
    path = folder / "s.yaml"
    path.write_text(f"workload: {{generate: megatron, args: '{MEGATRON_ARGS}'}}\n"
                    f"cluster: {{preset: ./my.yaml, gpus: 2}}\n")
    return path


def test_an_unknown_top_level_key_in_a_preset_is_an_error(tmp_path, capsys):
    """A preset is our own format: 'gpu_overrides:' beside gpu and node was read by no one."""
    path = _preset_scenario(tmp_path, PRESET.read_text() + "nodes:\n  gpus: 4\n")
    _one_error(capsys, ["run", str(path), "--quiet"], str(tmp_path / "my.yaml"), "'nodes'", "did you mean 'node'")


@pytest.mark.parametrize("name", ["[A100]", "''", "null", '"A100\\nsys[0] finished, 1 cycles"', "5"])
def test_a_gpu_name_that_is_not_one_line_of_text_is_refused(tmp_path, capsys, name):
    """The name picks NVLS (H100 and later) and is printed: a list, null or a line break in it
    ran as an A100 without a word."""
    path = _preset_scenario(tmp_path, PRESET.read_text().replace("name: A100-SXM4-80GB", f"name: {name}"))
    _one_error(capsys, ["run", str(path), "--quiet"], str(tmp_path / "my.yaml"), "gpu.name")


def test_a_megatron_job_among_jobs_is_refused_without_sending_the_user_in_a_circle(tmp_path, capsys):
    """It said 'needs a cluster: beside it'; a cluster beside jobs: is refused ('give it with
    workload (one job), not with jobs'): each error's fix led to the other."""
    path = _scenario(tmp_path, f"{NETWORK}jobs:\n  - {{name: a, workload: {{generate: megatron, args: "
                               f"'{MEGATRON_ARGS}'}}, npus: [0, 1]}}\n")
    _one_error(capsys, ["run", str(path), "--quiet"], "jobs[0].workload", "generate megatron",
               "its own scenario with cluster:")
