"""A run's knob that its workload never reads: refused in a scenario (our format), named in a
warning in ASTRA-sim's flag form (whose scripts pass it), never ignored without a word."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from simpy_astra.cli.main import main

HERE = os.path.dirname(os.path.abspath(__file__))
TORUS = os.path.join(HERE, "..", "scenarios", "torus3d_all_reduce.yaml")
PREFIX = os.path.join(HERE, "..", "scenarios", "workloads", "all_reduce_64npus_4MB", "ar")


def _scenario(tmp_path, workload, **extra):
    doc = yaml.safe_load(open(TORUS))
    doc.update(workload=workload, **extra)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("workload", [os.path.abspath(PREFIX), {"generate": "microbench", "collective": "all_reduce",
                                                                 "size": 1048576, "num_npus": 64}])
def test_num_passes_beside_a_workload_that_is_no_text_file_is_refused(tmp_path, capsys, workload):
    # 3 passes of the ET prefix gave the one pass's 67,172 ns
    scenario = _scenario(tmp_path, workload, num_passes=3)
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {scenario}: field 'num_passes'") and ".txt" in err[0], err


def test_num_passes_of_one_beside_an_et_prefix_runs(tmp_path, capsys):
    assert main(["run", str(_scenario(tmp_path, os.path.abspath(PREFIX), num_passes=1)), "--quiet"]) == 0


def _flags(tmp_path, *extra):
    doc = yaml.safe_load(open(TORUS))
    (tmp_path / "net.yml").write_text(yaml.safe_dump(doc["network"]))
    (tmp_path / "sys.json").write_text(json.dumps(doc["system"]))
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    return [f"--workload-configuration={os.path.abspath(PREFIX)}", f"--system-configuration={tmp_path / 'sys.json'}",
            f"--network-configuration={tmp_path / 'net.yml'}",
            f"--remote-memory-configuration={tmp_path / 'mem.json'}", "--quiet", *extra]


def test_num_passes_flag_beside_an_et_prefix_is_named_in_a_warning(tmp_path, capsys):
    assert main(_flags(tmp_path, "--num-passes", "3")) == 0
    err = capsys.readouterr().err
    assert "warning: --num-passes 3 is accepted but changes nothing" in err and ".txt" in err


@pytest.mark.parametrize("passes", ["0", "-2"])
def test_num_passes_flag_under_one_is_refused(tmp_path, capsys, passes):
    assert main(_flags(tmp_path, "--num-passes", passes)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--num-passes" in err[0], err


@pytest.mark.parametrize("value", ["maybe", "yes please", ""])
def test_a_rendezvous_that_is_neither_true_nor_false_is_refused(tmp_path, capsys, value):
    # it was read as true (a warning that the handshake is not modelled) whatever it said
    assert main(_flags(tmp_path, "--rendezvous-protocol", value)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rendezvous-protocol" in err[0] and "true or false" in err[0], err
