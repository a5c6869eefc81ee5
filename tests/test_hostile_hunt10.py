"""A tenth hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or stated) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

from simpy_astra.cli.main import main
from tests.test_hostile_hunt7 import ARGS
from tests.test_hostile_hunt8 import _scenario


def _run(capsys, path) -> tuple[str, list[str]]:
    """A run's headline (stdout) and its warning lines."""
    assert main(["run", str(path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    return out.strip(), [line for line in err.splitlines() if line.startswith("warning:")]


def _megatron(tmp_path, args: str, name: str = "s.yaml", **workload):
    return _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args, **workload},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, name)


def test_sequence_parallel_at_tp_1_is_turned_off_with_megatrons_warning(tmp_path, capsys):
    # Megatron-LM's validate_args: at tensor_model_parallel_size 1 it warns "Disabling sequence
    # parallelism because tensor model parallelism is disabled" and sets sequence_parallel False.
    # The step was the same as without the flag, and nothing said so
    plain = _run(capsys, _megatron(tmp_path, ARGS, "a.yaml"))
    path = _megatron(tmp_path, ARGS + " --sequence-parallel", "b.yaml")
    headline, warnings = _run(capsys, path)
    assert plain[1] == [] and headline == plain[0]
    assert warnings == [f"warning: {path}: workload.args: --sequence-parallel with --tensor-model-parallel-size 1: "
                        f"Megatron turns it off ('Disabling sequence parallelism because tensor model parallelism "
                        f"is disabled') and runs without it, as this step does; remove --sequence-parallel, or set "
                        f"tp 2 or more"]
    assert _run(capsys, _megatron(tmp_path, ARGS + " --sequence-parallel --tensor-model-parallel-size 2",
                                  "c.yaml"))[1] == []


def test_generate_megatron_says_the_same_warning(tmp_path, capsys):
    out = tmp_path / "t" / "m"
    out.parent.mkdir()
    assert main(["generate", "megatron", "--gpus", "8", "--output", str(out), "--",
                 *ARGS.split(), "--sequence-parallel"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: generate megatron: arguments after --: --sequence-parallel with "
                   "--tensor-model-parallel-size 1: Megatron turns it off ('Disabling sequence parallelism because "
                   "tensor model parallelism is disabled') and runs without it, as this step does; remove "
                   "--sequence-parallel, or set tp 2 or more"], err
