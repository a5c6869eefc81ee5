"""A twenty-fifth hunt: the newest features (a cluster's GPU overrides, NCCL's algorithm forced,
route latencies, folding, sweeps' alike points) fed bad, odd and extreme inputs. Each test
failed before its fix: a wrong success, a traceback, or a message naming no fix."""

from __future__ import annotations

from simpy_astra.cli.main import main
from tests.scenario_files import megatron_sweep


def test_sweep_list_marks_fp8_on_a_gpu_without_fp8_units_invalid(tmp_path, capsys):
    # before: --list showed the A100's --fp8-format point as one that runs; it was refused only
    # when run ("fp8 needs fp8 hardware"), the rule Megatron's arguments alone cannot tell
    sweep = megatron_sweep(tmp_path, {"workload.args.--fp8-format": [None, "hybrid"]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16})
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 points, 1 invalid (each breaks a rule named below; they will not run)"
    assert out[2].endswith("fp8_format=hybrid  invalid") and not out[1].endswith("invalid")
    assert out[3] == "invalid: 1 point(s) break the rule 'fp8 needs fp8 hardware'"
    # on an H100 it runs
    sweep = megatron_sweep(tmp_path, {"workload.args.--fp8-format": [None, "hybrid"]})
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")
