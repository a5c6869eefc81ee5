"""A float for a Megatron flag of integers is refused in a sweep, as ``run`` refuses it: ``[[8.0, 2]]``
was written as ``8 2`` and ran, while the same 8.0 in a scenario's ``workload.args`` stops ``run``
(Megatron-LM's argparse reads these flags with ``type=int``, and ``int('8.0')`` raises)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.errors import InputError
from simpy_astra.sweep.spec import load_sweep

ARGS = ["--num-layers", 4, "--hidden-size", 1024, "--num-attention-heads", 16, "--seq-length", 512,
        "--micro-batch-size", 1, "--global-batch-size", 32, "--bf16", "--context-parallel-size", 16,
        "--cp-comm-type", "a2a+p2p"]
HCP = "workload.args.hierarchical-context-parallel-sizes"
TP = "workload.args.tensor-model-parallel-size"


def _sweep(tmp_path: Path, axes: dict) -> str:
    doc = {"base": {"workload": {"generate": "megatron", "args": ARGS},
                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}, "axes": axes}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_the_outside_fact_megatrons_int_refuses_an_integral_float_word():
    with pytest.raises(ValueError):
        int("8.0")


@pytest.mark.parametrize("axes, words", [
    ({HCP: [[8.0, 2]]}, f"axes: {HCP}: --hierarchical-context-parallel-sizes takes integers, not 8.0;"),
    ({HCP: {"values": [[8, 2.0]], "as": "h"}}, "takes integers, not 2.0;"),
    ({HCP: [[8.5, 2]]}, "takes integers, not 8.5;"),
    ({TP: [2, 2.0]}, f"axes: {TP}: --tensor-model-parallel-size takes integers, not 2.0;"),  # was one point, tp 2
    ({TP: [4.0]}, "takes integers, not 4.0;"),
    ({"b": {"named": {"x": {TP: 2.0}}}}, "axes: b: named: x: --tensor-model-parallel-size takes integers"),
    ({TP: {"from": 1, "to": 2, "step": 0.5}}, "takes integers, and a range with step 0.5 counts in floats"),
])
def test_a_float_for_a_flag_of_integers_is_one_line_naming_the_file_the_axis_and_the_fix(tmp_path, axes, words):
    path = _sweep(tmp_path, axes)
    with pytest.raises(InputError) as caught:
        load_sweep(path)
    message = caught.value.message
    assert message.startswith(f"{path}: axes: ") and words in message and "\n" not in message, message
    fix = message.rsplit("; ", 1)[1]
    assert fix in ("write [8, 2] (Megatron-LM's int() refuses it too)", "write 2 (Megatron-LM's int() refuses it too)",
                   "write 4 (Megatron-LM's int() refuses it too)", "write 8 or 9 (Megatron-LM's int() refuses it too)",
                   "write from, to and step as integers (e.g. {from: 1, to: 8, step: 1})"), fix


@pytest.mark.parametrize("word, value", [("8.0", 8.0), ("8.5", 8.5), ("1e3", 1e3)])
def test_a_sweep_axis_and_run_name_the_same_fix_for_one_float(tmp_path, word, value):
    """The sweep built its own fix text (``give whole numbers`` for 8.5, where ``run`` said
    ``write 8 or 9``); both now end in the one rule's fix."""
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InputError) as by_run:
        parse([*map(str, ARGS), "--tensor-model-parallel-size", word], 16, "s.yaml: workload.args")
    with pytest.raises(InputError) as by_sweep:
        load_sweep(_sweep(tmp_path, {TP: [value]}))
    fix = by_run.value.message.split(f"'{word}'", 1)[1]
    assert fix.startswith("; write ") and by_sweep.value.message.endswith(fix), (by_run.value.message, fix)


def test_run_refuses_the_same_float_in_workload_args(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron",
                                                     "args": [*ARGS, "--hierarchical-context-parallel-sizes", 8.0,
                                                              2]},
                                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}))
    assert main(["run", str(scenario), "--quiet"]) == 2
    assert "invalid int value: '8.0'" in capsys.readouterr().err


def test_integers_and_floats_for_a_flag_of_floats_still_sweep(tmp_path):
    spec = load_sweep(_sweep(tmp_path, {HCP: [[8, 2], "4 4"], "workload.args.attention-dropout": [0, 0.5, 1.0]}))
    points = spec.points()
    assert len(points) == 6
    assert {p.coordinates[HCP] for p in points} == {"8 2", "4 4"}
