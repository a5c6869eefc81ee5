"""The commands beside run, misused as a researcher would: a flag that would change nothing, or
ask for what the inputs cannot give, is one line naming it and exit status 2, never a run that
quietly did something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.cli.main import main

A100 = Path(__file__).parent / "data" / "nccl" / "dgx-a100-superbench"


def _error_of(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _calibrate(tmp_path: Path, *extra: str) -> list[str]:
    return ["calibrate", str(A100 / "all_reduce.log"), "--network", str(A100 / "network.yml"),
            "--out", str(tmp_path / "o"), *extra]


def test_no_ll128_without_an_nccl_algo_fit_is_refused(tmp_path, capsys):
    # it only tells --nccl-algo's fit which protocols NCCL runs: alone it changed nothing
    line = _error_of(capsys, _calibrate(tmp_path, "--nccl-no-ll128", "ring"))
    assert "--nccl-no-ll128" in line and "--nccl-algo" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("every", ["15", "100"])
def test_a_hold_out_that_holds_nothing_out_is_refused(tmp_path, capsys, every):
    # the log has 14 sizes from 1 MiB (1 MiB .. 8 GiB): every 15th holds none of them out, and
    # validate --holdout would then score only fitted rows
    line = _error_of(capsys, _calibrate(tmp_path, "--hold-out-every", every))
    assert f"--hold-out-every {every}" in line and "all_reduce.log" in line and "14 sizes" in line
    assert not (tmp_path / "o").exists()


def test_a_hold_out_of_every_14th_holds_out_the_last(tmp_path, capsys):
    assert main(_calibrate(tmp_path, "--hold-out-every", "14")) == 0
    assert "fitted on 13 sizes" in capsys.readouterr().out
