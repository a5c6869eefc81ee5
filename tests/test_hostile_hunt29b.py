"""Hunt 29b: what landed on 2026-12-02 (hunt 29, the launcher module, the sweep's parse-once
and frozen worker heap, round 15) attacked for wrong successes and wrong refusals. Each test
failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenario_files import TINY_GPT_ARGS, error_lines, launched_as_alone, megatron_scenario
from tests.test_extensions_round15 import compute_change_of, r15  # noqa: F401 - r15: the fixture

#: a generator object of a plain class (no dataclass, no __repr__ of its own): its repr is
#: CPython's default, which names the class only once its address is cut
PLAIN = '''from r15 import halves


class Halves:
    """r15.halves with its compute time held by the object."""

    def __init__(self, compute_us):
        self.compute_us = compute_us

    def __call__(self, params, prefix):
        return halves({**params, "compute_us": self.compute_us}, prefix)


OBJ = Halves(3)
GEN = SHAPE
'''


@pytest.mark.parametrize("shape", ["OBJ", "OBJ.__call__", "__import__('functools').partial(Halves.__call__, OBJ)"])
def test_a_plain_generator_objects_state_changed_from_python_writes_new_traces(r15: Path, shape) -> None:  # noqa: F811
    # before: the cache key held the object's repr without its address, '<gen29b.Halves object>',
    # the same for compute_us 3 and 5: the second run read the first's traces (the same figure);
    # a bound method's object was not read at all, a partial's by its default repr
    assert compute_change_of(r15, "gen29b", PLAIN.replace("SHAPE", shape), "OBJ") == 2000


@pytest.mark.parametrize(("written", "meant"), [("dgxh100", "dgx-h100"), ("DGX H100", "dgx-h100"),
                                                ("dgx-h100-80gb", "dgx-h100"), ("dgx-a100 80GB", "dgx-a100-80gb"),
                                                ("dgxa100", "dgx-a100-40gb or dgx-a100-80gb")])
def test_a_preset_written_without_its_dashes_or_with_its_memory_is_told_its_name(tmp_path, capsys, written, meant):
    # before: told 'for another machine, give its own preset file' (4076692), as dgx-h200 is: a
    # shipped machine's name without its dash, with a space, or with its memory appended as the
    # A100s' names have it, was taken for a machine none of the presets is
    path = megatron_scenario(tmp_path, preset=written)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert line.endswith(f"nor a YAML file; did you mean {meant}?"), line
    for other in ("dgx-h200", "h200", "dgx-h100-nvl"):  # another machine: no preset named
        (line,) = error_lines(capsys, ["run", megatron_scenario(tmp_path, preset=other), "--quiet"])
        assert "for another machine, give its own preset file" in line, line


@pytest.mark.parametrize("launcher", ["python -m pretrain_gpt", "python3 -u -m pretrain_gpt",
                                      "torchrun --nproc_per_node 8 --nnodes 2 -m pretrain_gpt",
                                      "srun -m block:block -N 2 python -m pretrain_gpt"])
def test_a_launch_line_running_the_script_as_a_module_runs(tmp_path, capsys, launcher):
    # before: "'python' comes before any flag (Megatron's argparse: unrecognized arguments:
    # python)", no fix named: a script run as a module (python -m, torchrun -m, as the one in
    # Megatron-LM's folder runs) was not found, so no launcher word was dropped
    with_launcher, alone = launched_as_alone(tmp_path, capsys, launcher)
    assert with_launcher == alone


@pytest.mark.parametrize("launcher", ["python -m pretrain_bert", "torchrun --nproc_per_node 8 --nnodes 2 -m "
                                      "megatron_lm.pretrain_t5"])
def test_a_module_of_another_models_script_is_refused(tmp_path, capsys, launcher):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "this simulates pretrain_gpt.py's GPT model only" in line, line
