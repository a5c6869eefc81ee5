"""First contact: ``--version``, ``--help`` on every command and kind, and ASTRA-sim's flags
that are accepted and do nothing (issue 39)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpy_astra.cli.convert import FORMATS
from simpy_astra.cli.main import SUBCOMMANDS, main
from simpy_astra.workloads.generated import GENERATORS
from tests.wrapped_lines import unwrapped

ROOT = Path(__file__).resolve().parents[1]
KINDS = [name for name, entry in GENERATORS.items() if entry.command]


def help_of(capsys, *argv: str) -> str:
    """What ``simpy-astra ARGV --help`` prints; it must exit 0 (argparse exits, others return)."""
    try:
        code = main([*argv, "--help"])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


COMMANDS = [[], ["run"], *([name] for name in SUBCOMMANDS), *(["generate", k] for k in KINDS),
            *(["convert", f] for f in FORMATS)]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "top")
def test_help_on_every_command_and_kind_exits_0_in_plain_text(capsys, monkeypatch, argv):
    monkeypatch.setenv("COLUMNS", "80")
    text = help_of(capsys, *argv)
    assert text.startswith("usage: simpy-astra")
    assert "``" not in text and "::\n" not in text  # RST marks are for docs, not the terminal


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "top")
def test_every_help_line_fits_80_columns(capsys, monkeypatch, argv):
    """At COLUMNS=80 (and so in a pipe) no line of any --help is longer than 80 characters
    (issue 39: run's schema, calibrate's and validate's backend choices, microbench's
    collectives and the transformer's memory modes ran past it)."""
    monkeypatch.setenv("COLUMNS", "80")
    text = help_of(capsys, *argv)
    long = [line for line in text.splitlines() if len(line) > 80]
    assert not long, long


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "top")
def test_every_help_line_fits_a_40_column_terminal(capsys, monkeypatch, argv):
    """At COLUMNS=40 (the narrowest argparse is told) every line fits but a word no line can
    hold and nothing may cut: one of Megatron's flag names (``--check-weight-hash-across-dp-
    replicas-interval``) alone on its line. Before: comments set at column 35 went one word a
    line past the edge, usage lines under a long prog, paths, lists of choices, the kinds'
    table (80 columns whatever the terminal) and the overview's usage ran past it."""
    monkeypatch.setenv("COLUMNS", "40")
    text = help_of(capsys, *argv)
    long = [line for line in text.splitlines()
            if len(line) > 40 and not re.fullmatch(r"--[a-z0-9-]+,?", line.strip())]
    assert not long, long


@pytest.mark.parametrize("argv", [["calibrate"], ["validate"]])
def test_a_long_list_of_choices_is_spelled_out_in_the_flags_help(capsys, monkeypatch, argv):
    from simpy_astra.network import BACKENDS

    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(help_of(capsys, *argv).split())
    assert "[--backend NAME]" in text and "[--plugin MODULE]" in text
    assert "; ".join(f"{name} ({spec.help})" for name, spec in BACKENDS.items()) + "; or a plug-in's" in text


def test_generate_and_convert_help_list_their_kinds(capsys):
    text = help_of(capsys, "generate")
    assert [ln.split()[0] for ln in text.splitlines() if ln.startswith("  ") and ln[2] != " "] == KINDS
    assert "LLM training / inference traces" in text  # the transformer module's own first line
    text = help_of(capsys, "convert")
    assert [ln.split()[0] for ln in text.splitlines() if ln.startswith("  ") and ln[2] != " "] == list(FORMATS)


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"simpy-astra {version('simpy-astra')} ") and out.count("\n") == 1


def test_run_help_lists_every_backend(capsys):
    from simpy_astra.network import BACKENDS

    text = " ".join(help_of(capsys, "run").split())
    assert len(BACKENDS) == 3
    for name in BACKENDS:
        assert f"{name} (" in text
    text = " ".join(help_of(capsys).split())  # the ASTRA-sim form too
    assert all(f"{name} (" in text for name in BACKENDS)


def test_transformer_help_describes_every_flag_with_its_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one flag per line
    text = help_of(capsys, "generate", "transformer")
    flags = {m.group(1): m.group(2) for m in re.finditer(r"^  (--[a-z-]+) [^ ]+ +(.*)$", text, re.M)}
    # the defaults of STAGE (and of workloads/transformer/config.py), checked by hand
    assert flags["--dmodel"] == "hidden size (default 8192)"
    assert flags["--num-stacks"] == "transformer blocks (default 80)"
    assert flags["--micro-batch"].endswith("(default -1)")
    assert flags["--tpsp"].endswith("(default 1)") and flags["--weight-sharded"].endswith("(default 0)")
    assert "(default gpt)" in flags["--model"] and "(default train)" in flags["--phase"]
    assert len(flags) >= 23 and all(flags.values())  # every flag described
    assert "--micro_batch" not in text.split("options:")[1].split("\n\n")[0]  # one spelling listed


def test_underscore_spellings_still_work_and_mistypes_name_the_listed_flag(tmp_path, capsys):
    small = ["--dp", "2", "--dmodel", "64", "--dff", "128", "--head", "4", "--kvhead", "4", "--batch", "8",
             "--num_stacks", "2", "--micro_batch", "4", "--model_type", "llama"]
    assert main(["generate", "transformer", *small, "--output", str(tmp_path / "t")]) == 0
    assert (tmp_path / "t.0.et").exists()
    capsys.readouterr()
    assert main(["generate", "transformer", "--micro_btch", "4", "--output", str(tmp_path / "u")]) == 2
    assert "did you mean --micro-batch?" in capsys.readouterr().err


def _astra_flags(tmp_path: Path) -> list[str]:
    (tmp_path / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4, "local-mem-bw": 50,
        "all-reduce-implementation": ["ring"]}))
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    return [f"--workload-configuration={ROOT}/scenarios/workloads/step_8npus_1MB/step",
            f"--system-configuration={tmp_path}/sys.json", f"--network-configuration={tmp_path}/net.yml",
            f"--remote-memory-configuration={tmp_path}/mem.json"]


@pytest.mark.parametrize("flag, value", [("--logging-configuration", "log.toml"),
                                         ("--rendezvous-protocol", "true"), ("--comm-scale", "3")])
def test_an_ignored_astra_sim_flag_says_so_in_one_line(tmp_path, capsys, monkeypatch, flag, value):
    monkeypatch.chdir(tmp_path)
    assert main(_astra_flags(tmp_path)) == 0
    plain = capsys.readouterr()
    assert main([*_astra_flags(tmp_path), f"{flag}={value}"]) == 0
    given = capsys.readouterr()
    assert given.out == plain.out  # the figures: 142,780 ns, as without the flag
    assert "sys[0] finished, 142780 cycles" in given.out
    extra = [ln for ln in unwrapped(given.err) if ln not in unwrapped(plain.err)]  # one warning, however wrapped
    assert len(extra) == 1 and extra[0].startswith(f"warning: {flag} {value} is accepted but ")
    assert not (tmp_path / "logs").exists()


def test_ignored_flags_at_astra_sims_own_defaults_say_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*_astra_flags(tmp_path), "--rendezvous-protocol=false", "--compute-scale=1"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_astra_form_help_says_which_flags_are_ignored(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    text = help_of(capsys)
    described = {m.group(1): " ".join(m.group(2).split())  # each flag with its (wrapped) help
                 for m in re.finditer(r"^  (--[a-z-]+)[^\n]*?(?:  |\n)((?:.|\n {20,})*)", text, re.M)}
    for flag in ("--logging-configuration", "--rendezvous-protocol", "--compute-scale", "--comm-scale"):
        assert described[flag].startswith("accepted and ignored"), (flag, described[flag])
    assert "log.log" in described["--logging-folder"] and "err.log" in described["--logging-folder"]
    assert "endpoint-delay" in described["--injection-scale"]


#: ASTRA-sim's spdlog pattern ``[%Y-%m-%dT%T%z] [%L] <%n>: %v`` (astra-sim/common/Logging.cc)
LOG_LINE = re.compile(r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}\] \[([IWE])\] <(\w+)>: (.*)")


def test_logging_folder_gets_astra_sims_log_files(tmp_path, capsys, monkeypatch):
    """--logging-folder=DIR (made if missing) gets log.log with every line printed, under
    ASTRA-sim's logger names, and an empty err.log; a second run appends; the figures are
    those of a run without the flag (issue 39: the flag was accepted and ignored)."""
    monkeypatch.chdir(tmp_path)
    assert main(_astra_flags(tmp_path)) == 0
    plain = capsys.readouterr().out.splitlines()
    assert main([*_astra_flags(tmp_path), "--logging-folder=logs/a"]) == 0
    assert capsys.readouterr().out.splitlines() == plain
    logged = [LOG_LINE.fullmatch(line) for line in (tmp_path / "logs" / "a" / "log.log").read_text().splitlines()]
    assert all(logged)
    assert [m.group(3) for m in logged] == plain  # one info line per printed line, in order
    assert {m.group(1) for m in logged} == {"I"}
    finished = [m for m in logged if "finished" in m.group(3)]
    assert len(finished) == 8 and {m.group(2) for m in finished} == {"workload"}
    assert finished[0].group(3) == "sys[0] finished, 142780 cycles, exposed communication 117780 cycles."
    assert {m.group(2) for m in logged if "Wall time" in m.group(3)} == {"statistics"}
    assert (tmp_path / "logs" / "a" / "err.log").read_text() == ""
    assert main([*_astra_flags(tmp_path), "--logging-folder=logs/a"]) == 0  # appended, as spdlog does
    assert len((tmp_path / "logs" / "a" / "log.log").read_text().splitlines()) == 2 * len(plain)


def test_logging_folder_gets_the_warning_and_the_error_that_stops_a_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flags = _astra_flags(tmp_path)
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50.0 ]\n"
                                      "latency: [ 500.0 ]\n")  # 8 ET ranks on 4 NPUs: refused
    assert main([*flags, "--logging-folder=logs", "--comm-scale=3"]) == 2
    error = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error: ")]
    assert len(error) == 1
    err_log = (tmp_path / "logs" / "err.log").read_text().splitlines()
    assert len(err_log) == 1
    m = LOG_LINE.fullmatch(err_log[0])
    assert m and m.group(1) == "E" and m.group(3) == error[0].removeprefix("error: ")
    levels = [LOG_LINE.fullmatch(ln).group(1) for ln in (tmp_path / "logs" / "log.log").read_text().splitlines()]
    assert levels == ["W", "E"]  # the ignored --comm-scale, then the error


def test_logging_folder_that_cannot_be_made_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    assert main([*_astra_flags(tmp_path), "--logging-folder=afile/logs"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: --logging-folder: cannot create folder"), err
