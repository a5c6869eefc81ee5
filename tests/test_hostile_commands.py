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


def _gemm(tmp_path: Path, *extra: str) -> list[str]:
    mnk = tmp_path / "layers.csv"
    mnk.write_text("Layer,m,n,k\nfc1,64,64,64\n")
    return ["generate", "gemm", "--mnk", str(mnk), "--parallel", "DATA", "--num-npus", "4",
            "--output", str(tmp_path / "g" / "gm"), *extra]


@pytest.mark.parametrize("clock", ["nan", "inf", "1e-300", "1e300"])
def test_a_gemm_clock_that_is_no_clock_is_refused(tmp_path, capsys, clock):
    # nan and 1e-300 were internal errors (int of nan, a duration past 64 bits), inf wrote every
    # layer as the 1 us floor
    line = _error_of(capsys, _gemm(tmp_path, "--clock-ghz", clock))
    assert "--clock-ghz" in line
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("clock", [".nan", ".inf"])
def test_a_gemm_scenario_clock_that_is_no_clock_is_refused(tmp_path, capsys, clock):
    # .nan was 'invalid parameters (ValueError: cannot convert float NaN to integer)', .inf ran
    (tmp_path / "layers.csv").write_text("Layer,m,n,k\nfc1,64,64,64\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        f"workload: {{generate: gemm, mnk: layers.csv, parallel: DATA, num_npus: 4, clock_ghz: {clock}}}\n"
        "system: {scheduling-policy: LIFO, endpoint-delay: 10, active-chunks-per-dimension: 1, "
        "preferred-dataset-splits: 1, collective-optimization: baseline, all-reduce-implementation: [ring], "
        "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
        "all-to-all-implementation: [direct]}\n"
        "network: {topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500]}\n")
    line = _error_of(capsys, ["run", str(scenario), "--quiet"])
    assert line.startswith(f"error: {scenario}: ") and "clock_ghz" in line.replace(str(tmp_path), "")


@pytest.mark.parametrize("extra, words", [
    # packages split the NPUs of HYBRID_* only: DATA and MODEL never read them
    (("--num-packages", "2"), "--num-packages"),
    # --format text writes no ET, so no iterations: ASTRA-sim 1.0 takes the passes when it runs
    (("--format", "text", "--num-passes", "5"), "--num-passes"),
])
def test_a_gemm_flag_its_output_never_reads_is_refused(tmp_path, capsys, extra, words):
    line = _error_of(capsys, _gemm(tmp_path, *extra))
    assert words in line
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("extra, field", [
    # the dense models build no experts: the traces were byte for byte those without the flag
    (("--experts", "16"), "experts"),
    (("--kexperts", "4"), "kexperts"),
    # an inference step has no backward to run a block's forward again in: byte for byte the same
    (("--phase", "decode", "--activation-recompute", "1"), "activation_recompute"),
    (("--phase", "prefill", "--activation-recompute", "1"), "activation_recompute"),
])
def test_a_transformer_flag_its_model_never_reads_is_refused(tmp_path, capsys, extra, field):
    line = _error_of(capsys, ["generate", "transformer", "--num-stacks", "2", *extra,
                              "--output", str(tmp_path / "t" / "w")])
    assert f"'{field}'" in line
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("algos, words", [
    # the second ring fit replaced the first: 1 MiB .. 64 MiB were then timed by the fit on 128 MiB up
    (["ring:1048576:67108864", "ring:134217728"], "ring twice"),
    # NCCL runs one algorithm a size: both were fitted on every size from 1 MiB (tree to ring's times)
    (["ring:1048576", "tree:1048576"], "overlap"),
    (["ring:1048576:268435456", "tree:134217728"], "overlap"),
])
def test_nccl_algo_ranges_that_claim_a_size_twice_are_refused(tmp_path, capsys, algos, words):
    extra = [arg for algo in algos for arg in ("--nccl-algo", algo)]
    line = _error_of(capsys, _calibrate(tmp_path, *extra))
    assert "--nccl-algo" in line and words in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("rank", ["-1", "65536"])
def test_a_pytorch_rank_no_run_reads_is_refused(tmp_path, capsys, rank):
    # --rank -1 wrote PREFIX.-1.et, which no run reads (ranks are 0 .. n-1), and 65,536 is past
    # the most trace files a job is written as
    import tarfile

    sample = Path(__file__).parent / "data" / "chakra" / "1.0.2-chakra.0.0.4.tgz"
    with tarfile.open(sample) as tar:
        tar.extract("1.0.2-chakra.0.0.4.json", tmp_path, filter="data")
    line = _error_of(capsys, ["convert", "pytorch", "--host", str(tmp_path / "1.0.2-chakra.0.0.4.json"),
                              "--rank", rank, "--output", str(tmp_path / "t" / "pt")])
    assert "--rank" in line
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("word", ["nan", "-nan", "inf", "1.2.3"])
def test_an_nccl_row_with_no_number_where_one_belongs_says_so(tmp_path, capsys, word):
    # it was 'truncated result row', though the row had every column
    text = (A100 / "all_reduce.log").read_text().replace("    74.78   14.02", f"    {word}   14.02", 1)
    log = tmp_path / "bad.log"
    log.write_text(text)
    argv = ["calibrate", str(log), "--network", str(A100 / "network.yml"), "--out", str(tmp_path / "o")]
    line = _error_of(capsys, argv)
    assert "bad.log:37:" in line and repr(word) in line and "truncated" not in line and "time" in line


@pytest.mark.parametrize(("argv", "fixed"), [
    (["--plugin", "my_algos", "run", "s.yaml", "--quiet"], "--plugin my_algos: a command's flags go after it: "
                                                           "simpy-astra run s.yaml --quiet --plugin my_algos"),
    (["--quiet", "sweep", "sweep.yaml"], "--quiet: a command's flags go after it: simpy-astra sweep sweep.yaml --quiet"),
    (["--network-backend", "packet", "s.yaml"], "--network-backend packet: a command's flags go after it: "
                                                "simpy-astra run s.yaml --network-backend packet"),
])
def test_a_flag_before_its_command_says_where_it_goes(capsys, argv, fixed):
    """Read as ASTRA-sim's flag form, '--plugin my_algos run s.yaml' stopped on the four
    --*-configuration flags it lacks, which said nothing about the command coming first."""
    assert _error_of(capsys, argv) == f"error: {fixed}"


def test_astra_sims_form_missing_an_input_still_names_the_flags(capsys):
    line = _error_of(capsys, ["--system-configuration=s.yaml", "--network-configuration=n.yml"])
    assert "--workload-configuration" in line and "flags go after" not in line
