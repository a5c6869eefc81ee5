"""Files that are not regular files, outputs over inputs, and folders of ranks with gaps.

Every input and output goes through :mod:`simpy_astra.infra.files`; each case builds a tiny input in
``tmp_path``, runs the CLI in-process (a FIFO that blocked would hang the test, so each case
also proves the refusal comes before any open) and asserts exit 2 and the words of the line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE, COMP_NODE

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"],
          "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
          "all-to-all-implementation": ["ring"], "collective-optimization": "baseline"}


def _scenario(folder: Path, npus: int = 2) -> Path:
    for rank in range(npus):
        write_et(str(folder / f"w.{rank}.et"), [
            make_node(0, "c", COMP_NODE, duration_micros=5),
            make_node(1, "ar", COMM_COLL_NODE, deps=[0], attrs={"comm_type": 0, "comm_size": 1024,
                                                                 "is_cpu_op": False})])
    path = folder / "s.yaml"
    path.write_text(f"workload: {folder / 'w'}\nsystem: {json.dumps(SYSTEM)}\n"
                    f"network: {{topology: [Ring], npus_count: [{npus}], bandwidth: [50], latency: [500]}}\n"
                    f"remote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    return path


def _one_error(capsys, argv: list[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and err[0].startswith("error: "), err
    for word in words:
        assert word in err[0], (word, err[0])
    return err[0]


# ----------------------------------------------------------------------- inputs that are not files
@pytest.mark.parametrize("make, words", [
    (lambda p: os.mkfifo(p), "FIFO"),
    (lambda p: os.symlink("/dev/zero", p), "character device"),
    (lambda p: os.symlink(p, p), "symlink loop"),
])
def test_scenario_that_is_not_a_regular_file_is_refused(tmp_path, capsys, make, words):
    path = str(tmp_path / "f.yaml")
    make(path)
    _one_error(capsys, ["run", path], "f.yaml", words)


@pytest.mark.parametrize("field", ["system", "network", "remote_memory"])
def test_config_fifo_named_by_a_scenario_is_refused(tmp_path, capsys, field):
    scenario = _scenario(tmp_path)
    fifo = tmp_path / f"{field}.cfg"
    os.mkfifo(fifo)
    text = [line for line in scenario.read_text().splitlines() if not line.startswith(f"{field}:")]
    scenario.write_text("\n".join([*text, f"{field}: {fifo}"]) + "\n")
    _one_error(capsys, ["run", str(scenario), "--quiet"], str(fifo), "FIFO")


def test_et_rank_fifo_is_refused(tmp_path, capsys):
    scenario = _scenario(tmp_path)
    (tmp_path / "w.1.et").unlink()
    os.mkfifo(tmp_path / "w.1.et")
    _one_error(capsys, ["run", str(scenario), "--quiet", "--fold-symmetry", "off"], "w.1.et", "FIFO")


def test_text_workload_and_msccl_fifo_are_refused(tmp_path):
    from simpy_astra.collectives.custom.msccl_xml import parse_msccl_xml
    from simpy_astra.workloads.chakra import EtError
    from simpy_astra.workloads.text_workload import parse_text_workload

    fifo = tmp_path / "x"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        parse_text_workload(str(fifo))
    with pytest.raises(EtError, match="FIFO"):
        parse_msccl_xml(str(fifo))


def test_nccl_log_fifo_is_refused(tmp_path, capsys):
    fifo = tmp_path / "log.txt"
    os.mkfifo(fifo)
    net = tmp_path / "n.yml"
    net.write_text("topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]\n")
    _one_error(capsys, ["calibrate", str(fifo), "--network", str(net), "--out", str(tmp_path / "o")],
               "log.txt", "FIFO")


def test_reads_are_bounded(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2000)
    with pytest.raises(InputError, match="more than a scenario can need"):
        files.read_bytes(big, "scenario", limit=1000)


def test_a_read_reserves_what_it_reads_not_its_bound(tmp_path):
    """Issue 52: ``read_bytes`` asked for ``limit + 1`` bytes in one call, reserving 8 GiB for
    any trace, so every run failed under ``ulimit -v 4194304``. The default scenario, run with
    that cap, must succeed (the real figure: its last NPU finishes at 142,780 ns)."""
    import resource
    import subprocess
    import sys

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "scenarios/default.yaml", "--quiet"],
                          cwd=root, capture_output=True, text=True, timeout=300, preexec_fn=cap,
                          env={**os.environ, "SIMPY_ASTRA_PROGRESS": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    big = tmp_path / "big.et"
    big.write_bytes(b"x" * 3000)
    assert files.read_bytes(big, "trace", limit=files.TRACE_LIMIT_BYTES) == b"x" * 3000


# ----------------------------------------------------------------------- outputs
@pytest.mark.parametrize("flag", ["--json-out", "--trace-out"])
def test_fifo_as_output_is_refused_before_the_run(tmp_path, capsys, flag):
    scenario = _scenario(tmp_path)
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    _one_error(capsys, ["run", str(scenario), "--quiet", flag, str(fifo)], flag, "FIFO")


def test_fifo_inside_csv_out_folder_is_refused(tmp_path, capsys):
    scenario = _scenario(tmp_path)
    (tmp_path / "csv").mkdir()
    os.mkfifo(tmp_path / "csv" / "nodes.csv")
    _one_error(capsys, ["run", str(scenario), "--quiet", "--csv-out", str(tmp_path / "csv")],
               "nodes.csv", "FIFO")


@pytest.mark.parametrize("flag, target", [("--json-out", "s.yaml"), ("--trace-out", "s.yaml"),
                                          ("--json-out", "w.1.et")])
def test_output_that_is_an_input_is_refused(tmp_path, capsys, flag, target):
    scenario = _scenario(tmp_path)
    before = (tmp_path / target).read_bytes()
    _one_error(capsys, ["run", str(scenario), "--quiet", flag, str(tmp_path / target)],
               flag, "one of this run's inputs")
    assert (tmp_path / target).read_bytes() == before


@pytest.mark.parametrize("flags, words", [
    (["--json-out", "o.json", "--trace-out", "o.json"], ("--trace-out", "--json-out", "o.json")),
    (["--csv-out", "d", "--json-out", "d/nodes.csv"], ("--json-out", "--csv-out", "nodes.csv")),
    (["--plots", "d", "--trace-out", "d/timeline.png"], ("--trace-out", "--plots", "timeline.png")),
    (["--json-out", "o.json", "--trace-out", "./x/../o.json"], ("--trace-out", "--json-out")),
])
def test_two_outputs_on_one_file_are_refused_before_the_run(tmp_path, capsys, flags, words):
    """The later writer replaced the earlier's file: --json-out and --trace-out on one path
    left only the trace, and the run said it wrote both."""
    scenario = _scenario(tmp_path)
    (tmp_path / "x").mkdir()
    flags = [str(tmp_path / f) if not f.startswith("--") else f for f in flags]
    _one_error(capsys, ["run", str(scenario), "--quiet", *flags], *words)
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "d").exists()


def test_devnull_may_take_several_outputs(tmp_path, capsys):
    scenario = _scenario(tmp_path)
    assert main(["run", str(scenario), "--quiet", "--json-out", os.devnull, "--trace-out", os.devnull]) == 0


def test_generate_into_a_fifo_rank_file_is_refused(tmp_path, capsys):
    os.mkfifo(tmp_path / "mb.0.et")
    _one_error(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                        "--num-npus", "2", "--output", str(tmp_path / "mb")], "mb.0.et", "FIFO")


def test_output_written_whole_or_not_at_all(tmp_path):
    out = tmp_path / "o.json"
    out.write_text("old")
    with pytest.raises(RuntimeError), files.open_output(out, "--json-out") as f:
        f.write("half")
        raise RuntimeError("stopped")
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["o.json"]


def test_devnull_is_an_accepted_output(tmp_path, capsys):
    scenario = _scenario(tmp_path)
    assert main(["run", str(scenario), "--quiet", "--json-out", os.devnull]) == 0


def test_full_disk_is_one_line_naming_the_path(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(InputError, match="character device"):
        files.check_output("/dev/full", "--json-out")


# ----------------------------------------------------------------------- folders of ranks
def test_pytorch_host_folder_with_a_gap_is_refused(tmp_path, capsys):
    host = tmp_path / "host"
    host.mkdir()
    for rank in (0, 2):
        (host / f"rank{rank}.json").write_text("{}")
    _one_error(capsys, ["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "job")],
               "--host", "rank(s) 1")
    assert not list(tmp_path.glob("job*"))


def test_pytorch_host_folder_with_a_symlink_loop_is_refused(tmp_path, capsys):
    host = tmp_path / "host"
    host.mkdir()
    (host / "rank0.json").write_text("{}")
    os.symlink(host / "rank1.json", host / "rank1.json")
    _one_error(capsys, ["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "job")],
               "rank1.json", "symlink loop")


def _job_scenario(folder: Path, ranks: tuple[int, ...]) -> Path:
    scenario = _scenario(folder, 4)
    for rank in range(4):
        if rank not in ranks:
            (folder / f"w.{rank}.et").unlink()
    text = [line for line in scenario.read_text().splitlines() if not line.startswith("workload:")]
    scenario.write_text("\n".join(text) + f"\njobs:\n  - {{name: a, workload: {folder / 'w'}, placement: contiguous}}\n")
    return scenario


def test_job_whose_ranks_have_a_gap_is_refused(tmp_path, capsys):
    scenario = _job_scenario(tmp_path, (0, 1, 3))
    _one_error(capsys, ["run", str(scenario), "--quiet"], "jobs[0].workload", "w.2.et missing")


def test_single_job_with_a_rank_after_a_gap_is_refused(tmp_path, capsys):
    scenario = _scenario(tmp_path, 2)
    (tmp_path / "w.3.et").write_bytes((tmp_path / "w.1.et").read_bytes())
    _one_error(capsys, ["run", str(scenario), "--quiet"], "w.2.et", "gap")


# ----------------------------------------------------------------------- environment
@pytest.mark.parametrize("cache", [os.devnull, "FILE", "FILE/sub"])
def test_unusable_cache_is_one_line_naming_it(tmp_path, capsys, monkeypatch, cache):
    (tmp_path / "FILE").write_text("x")
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", cache.replace("FILE", str(tmp_path / "FILE")))
    scenario = _scenario(tmp_path)
    text = [line for line in scenario.read_text().splitlines() if not line.startswith("workload:")]
    scenario.write_text("\n".join(text) + "\nworkload: {generate: microbench, collective: all_reduce, "
                                          "size: 1024, num_npus: 2}\n")
    _one_error(capsys, ["run", str(scenario), "--quiet"], "workload cache", "SIMPY_ASTRA_CACHE")


def test_fold_switch_that_is_not_on_or_off_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_FOLD", "banana")
    _one_error(capsys, ["run", str(_scenario(tmp_path)), "--quiet"], "SIMPY_ASTRA_FOLD", "'banana'")


# ----------------------------------------------------------------------- every input, every output
STAR = '''import networkx as nx


def build():
    g = nx.DiGraph()
    for npu in range(2):
        g.add_edge(npu, "sw", bandwidth_gbps=50, latency_ns=500)
        g.add_edge("sw", npu, bandwidth_gbps=50, latency_ns=500)
    return g
'''

FIFO_LINK = '''from simpy_astra.network.models import ProcessLink


class Plain(ProcessLink):
    pass
'''


def _star_scenario(folder: Path, network: str) -> Path:
    """A 2-NPU scenario on a networkx star built by ``nets.py`` beside it; ``network``: the
    network YAML's path (written here)."""
    import sys

    from simpy_astra.network.models import LINKS

    for name in ("nets", "plain_link"):  # another test's modules of the same names
        sys.modules.pop(name, None)
    LINKS.pop("plain_link:Plain", None)
    scenario = _scenario(folder)
    (folder / "nets.py").write_text(STAR)
    (folder / "plain_link.py").write_text(FIFO_LINK)
    Path(network).write_text("topology: {networkx: 'nets:build'}\nlink-model: 'plain_link:Plain'\n")
    text = scenario.read_text().splitlines()
    text = [ln for ln in text if not ln.startswith("network:")]
    scenario.write_text("\n".join([*text, f"network: {network}", "backend: congestion_aware", ""]))
    return scenario


@pytest.mark.parametrize("flag, target", [("--json-out", "nets.py"), ("--trace-out", "plain_link.py"),
                                          ("--json-out", "net.yml")])
def test_an_output_over_a_module_the_run_imported_is_refused(tmp_path, capsys, monkeypatch, flag, target):
    """Issue 52: ``--json-out nets.py``, the module a ``topology: {networkx: nets:build}``
    names, replaced the user's code with JSON; a link model's module is an input too."""
    monkeypatch.syspath_prepend(str(tmp_path))
    scenario = _star_scenario(tmp_path, str(tmp_path / "net.yml"))
    before = (tmp_path / target).read_bytes()
    _one_error(capsys, ["run", str(scenario), "--quiet", flag, str(tmp_path / target)],
               flag, "one of this run's inputs")
    assert (tmp_path / target).read_bytes() == before


def test_plots_over_an_input_are_refused_before_the_run(tmp_path, capsys, monkeypatch):
    """Issue 52: ``--plots DIR`` overwrote a network YAML at ``DIR/timeline.png``, and only
    after the whole run (the ``--json-out`` written first shows whether the run happened)."""
    pytest.importorskip("matplotlib")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "pl").mkdir()
    scenario = _star_scenario(tmp_path, str(tmp_path / "pl" / "timeline.png"))
    before = (tmp_path / "pl" / "timeline.png").read_bytes()
    _one_error(capsys, ["run", str(scenario), "--quiet", "--json-out", str(tmp_path / "out.json"),
                        "--plots", str(tmp_path / "pl")], "--plots", "timeline.png", "one of this run's inputs")
    assert (tmp_path / "pl" / "timeline.png").read_bytes() == before
    assert not (tmp_path / "out.json").exists()
    assert not (tmp_path / "pl" / "breakdown.png").exists()


def test_a_fifo_where_a_plot_goes_is_refused_before_the_run(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    scenario = _scenario(tmp_path)
    (tmp_path / "pl").mkdir()
    os.mkfifo(tmp_path / "pl" / "breakdown.png")
    _one_error(capsys, ["run", str(scenario), "--quiet", "--json-out", str(tmp_path / "out.json"),
                        "--plots", str(tmp_path / "pl")], "--plots", "FIFO")
    assert not (tmp_path / "out.json").exists()


def test_plots_are_written_when_nothing_is_in_the_way(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    scenario = _scenario(tmp_path)
    assert main(["run", str(scenario), "--quiet", "--plots", str(tmp_path / "pl")]) == 0
    assert sorted(p.name for p in (tmp_path / "pl").iterdir()) == ["breakdown.png", "timeline.png"]
    assert (tmp_path / "pl" / "timeline.png").read_bytes()[:4] == b"\x89PNG"


def test_a_log_folder_whose_log_is_an_input_is_refused_before_the_run(tmp_path, capsys):
    """--logging-folder's log.log is checked when the folder is made, before any input is
    read; an input named log.log in it is refused once the inputs are read, before the run."""
    _scenario(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "log.log").write_text("topology: [Ring]\nnpus_count: [2]\nbandwidth: [50]\nlatency: [500]\n")
    (tmp_path / "sys.json").write_text(json.dumps(SYSTEM))
    (tmp_path / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    before = (tmp_path / "logs" / "log.log").read_bytes()
    _one_error(capsys, [f"--workload-configuration={tmp_path / 'w'}", f"--system-configuration={tmp_path / 'sys.json'}",
                        f"--network-configuration={tmp_path / 'logs' / 'log.log'}",
                        f"--remote-memory-configuration={tmp_path / 'mem.json'}",
                        f"--logging-folder={tmp_path / 'logs'}", "--json-out", str(tmp_path / "out.json")],
               "--logging-folder", "log.log", "one of this run's inputs")
    assert (tmp_path / "logs" / "log.log").read_bytes() == before
    assert not (tmp_path / "out.json").exists()


def test_a_smaller_trace_set_over_a_larger_one_leaves_none_of_its_ranks(tmp_path, capsys):
    """generate 16 ranks, then 8 at the same prefix: ranks 8..15 of the first stayed, and a
    16-NPU run read 8 all-to-all ranks with 8 stale all-reduce ones as one job."""
    prefix = str(tmp_path / "p")
    common = ["--size", "1024", "--output", prefix]
    assert main(["generate", "microbench", "--collective", "all_reduce", "--num-npus", "16", *common]) == 0
    assert main(["generate", "microbench", "--collective", "all_to_all", "--num-npus", "8", *common]) == 0
    assert sorted(files.numbered_files(prefix)) == list(range(8))
    err = capsys.readouterr().err
    assert "p.8.et .. " in err and "p.15.et" in err and "removed" in err


@pytest.mark.parametrize("flag, value", [("--trace-out", "t.json"), ("--csv-out", "csv")])
def test_fold_symmetry_on_with_a_per_npu_output_is_refused(tmp_path, capsys, flag, value):
    """Asked for in words, folding was switched off without one: on a large cluster that is
    every GPU simulated instead of one per role."""
    scenario = _scenario(tmp_path)
    _one_error(capsys, ["run", str(scenario), "--quiet", "--fold-symmetry", "on", flag, str(tmp_path / value)],
               "--fold-symmetry on", flag, "every NPU")
    assert main(["run", str(scenario), "--quiet", flag, str(tmp_path / value)]) == 0  # unasked: off, as documented
