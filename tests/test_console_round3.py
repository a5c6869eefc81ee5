"""The researcher's console, round 3: what a new user read wrong or could not read.

Each test names what the user saw before the fix.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from simpy_astra.report.console import Output
from simpy_astra.sweep.axes import Axis
from simpy_astra.sweep.summary import _digits, _winner, objective_text


def _best_lines(objective: str, value, coordinates: dict, figures: dict | None = None) -> list[str]:
    spec = SimpleNamespace(axes=[Axis(c, c.rsplit(".", 1)[-1], (v,)) for c, v in coordinates.items()],
                           goals=SimpleNamespace(objective=SimpleNamespace(text=objective)), path="sweep.yaml")
    stream = io.StringIO()
    entry = {"key": "k", "objective": value, "coordinates": coordinates, "figures": figures or {}}
    named: set[str] = set()
    _winner(Output(stream, rich=False), spec, "best", entry, named)
    _winner(Output(stream, rich=False), spec, "best with finish_ns < 20000", entry, named)
    return stream.getvalue().splitlines()


@pytest.mark.parametrize(("objective", "value", "shown"), [
    ("iteration_time_ns", 27_966_191_178, "27,966,191,178 ns"),
    ("wall_s", 0.018, "0.018 s"),
    ("memory_per_gpu_gib", 62.56, "62.56 GiB"),
    ("cost_usd", 12000.0, "$12,000"),
    ("mfu", 0.379, "mfu = 0.379"),
    ("finish_ns * cost_usd", 3_893_712_000.0, "finish_ns * cost_usd = 3,893,712,000"),
])
def test_a_best_lines_objective_has_its_unit_or_its_name(objective, value, shown):
    """Before: ``best: tp=8 pp=8 mb=2 recompute=full -> 27,966,191,178`` (ns? ms?) and
    ``-> 3,893,712,000.00`` for minimise: finish_ns * cost_usd (which quantity, to the cent)."""
    assert objective_text(objective, value) == shown


def test_a_best_line_keeps_its_objective_whole_on_its_own_line_in_a_pipe():
    lines = _best_lines("finish_ns * cost_usd", 3_893_712_000.0,
                        {"fabric": "fully_connected", "network.bandwidth": 25})
    assert lines[:2] == ["best: fabric=fully_connected bandwidth=25",
                         "  -> finish_ns * cost_usd = 3,893,712,000"]


def test_a_winner_whose_run_warned_says_so_under_its_line_once():
    """quick.yaml's unaware best, 13,476 ns, is 1.44x below its link-bandwidth floor: before,
    the summary said '4 point(s) warned: results.csv's warnings column has their words', and
    not that the crowned point was one of them."""
    warning = ("4 MiB all-reduce: 1.44x below its link-bandwidth floor | network: Ring(4) x Ring(4) x "
               "Ring(4) | analytical backend: 13.5 us, no contention; congestion_aware models it")
    lines = _best_lines("finish_ns", 13_476, {"network.bandwidth": 200}, {"finish_ns": 13_476, "warnings": warning})
    assert lines[:2] == ["best: bandwidth=200 -> 13,476 ns",
                         "  warned: 4 MiB all-reduce: 1.44x below its link-bandwidth floor | network:"]
    assert " ".join(line.strip() for line in lines[1:4]) == f"warned: {warning}"
    assert lines[4] == "best with finish_ns < 20000: bandwidth=200 -> 13,476 ns" and len(lines) == 5


def test_a_winners_warning_does_not_name_the_point_again():
    """mesh_backends.yaml's best read 'warned: scenarios/sweeps/mesh_backends.yaml: point
    workload.collective=all_to_all backend=congestion_aware: network: fields ...'."""
    warning = "sweep.yaml: point network.bandwidth=200: network: fields 'packet-size' change nothing"
    lines = _best_lines("finish_ns", 1, {"network.bandwidth": 200}, {"warnings": warning})
    assert lines[1] == "  warned: network: fields 'packet-size' change nothing"


def test_a_column_of_large_floats_shows_no_decimals():
    """Before: cost_usd 12,000.00 and finish_ns * cost_usd 21,982,825,200.00 in the sweep table."""
    assert _digits([12000.0, 1600.0]) == 0
    assert _digits([157.52, 62.5]) == 2
    assert _digits([0.379, 0.098]) == 3


@pytest.mark.parametrize(("amount", "shown"), [
    (8_859_416.32, "8,859,416"), (12_345.67, "12,346"), (100.0, "100"), (99.5, "99.50"), (1.5, "1.50"), (0.0, "0")])
def test_a_price_is_in_whole_dollars_from_100_up(amount, shown):
    """Before: 'network cost: $8,859,416.32' and a column of 1,326,010.37 and 0.00 (the cost
    model's prices per GB/s are no price to the cent)."""
    from simpy_astra.report.console import dollars

    assert dollars(amount) == shown


def test_the_runs_network_cost_table_shows_no_cents_on_large_prices(capsys):
    from simpy_astra.network.cost_model import CostItem, NetworkCost
    from simpy_astra.report.console import print_cost

    cost = NetworkCost(("package",), items=[CostItem(0, "package", "link", 215.822, 1, 1536, 4.0),
                              CostItem(0, "package", "nic", 215.822, 1, 1536, 0.0)])
    stream = io.StringIO()
    print_cost(cost, Output(stream, rich=False))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "network cost: $1,326,010"
    assert lines[2].split()[-1] == "1,326,010" and lines[3].split()[-1] == "0"


def test_a_failed_points_line_names_the_point_once(tmp_path, capsys):
    """Before: 'failed bandwidth=-1: InputError: sweep.yaml: point network.bandwidth=-1:
    network: field ...', the point twice (its short name, then its error's label) and the
    exception's class; results.csv keeps the error whole."""
    import csv

    from simpy_astra.cli.main import main

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base: {scenario}\naxes:\n  network.bandwidth: [50, -1]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    captured = capsys.readouterr()
    err = captured.err + captured.out  # the summary, then the answer on stdout
    text = " ".join(err[err.index("failed "):err.index("best:")].split())  # the failed point's line
    assert text.startswith("failed bandwidth=-1: network: field 'bandwidth[0]' must be a number > 0")
    assert text.count("bandwidth=-1") == 1 and "InputError" not in text
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert rows[1]["error"].startswith(f"InputError: {sweep}: point network.bandwidth=-1: network: field")


def _constrained(tmp_path: Path, axes: dict, constraint: str) -> Path:
    import yaml

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(scenario), "axes": axes, "constraints": [constraint]}))
    return sweep


WORDS = {"model": {"named": {"a": {"network.bandwidth": 50}, "b": {"network.bandwidth": 100}}}}


def test_a_constraint_comparing_words_with_a_number_says_so_not_that_nothing_is_left(tmp_path):
    """Before: 'constraints leave no point to run; loosen them' for model == 3 over the words a, b."""
    from simpy_astra.errors import InputError
    from simpy_astra.sweep.spec import load_sweep

    spec = load_sweep(str(_constrained(tmp_path, WORDS, "model == 3")))
    with pytest.raises(InputError, match=r"'model == 3' leaves no point to run: it compares model, whose values "
                                         r"are strings \('a', 'b'\), with the number 3: a number and a string are "
                                         r"never equal"):
        spec.points()


def test_a_constraint_ordering_a_number_against_a_string_says_the_fix(tmp_path):
    """Before: "'network... > \\"4\\"' cannot be evaluated (TypeError: '>' not supported between
    instances of 'int' and 'str')"."""
    from simpy_astra.errors import InputError
    from simpy_astra.sweep.spec import load_sweep

    spec = load_sweep(str(_constrained(tmp_path, {"system.preferred-dataset-splits": [2, 4]},
                                       'preferred_dataset_splits > "2"')))
    with pytest.raises(InputError, match="a number and a string cannot be ordered; write the number without "
                                         "quotes: preferred_dataset_splits > 2$"):
        spec.points()


def test_a_mixed_axis_compares_with_either_kind_and_a_kept_point_warns_once(tmp_path, capsys):
    from simpy_astra.cli.main import main
    from simpy_astra.sweep.spec import load_sweep

    mixed = load_sweep(str(_constrained(tmp_path, {"system.all-reduce-implementation": ["ring", 3]},
                                        "all_reduce_implementation == 3")))
    assert len(mixed.points()) == 1 and mixed.warnings == []
    sweep = _constrained(tmp_path, {**WORDS, "system.preferred-dataset-splits": [1, 2]},
                         "model != 3 and preferred_dataset_splits == 1")
    assert main(["sweep", str(sweep), "--list"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: constraints: 'model != 3 and") == 1
    assert "a number and a string are never equal" in " ".join(err.split())
    assert max(len(line) for line in err.splitlines()) <= 80


def test_the_per_npu_table_gives_every_time_its_unit_and_counts_with_separators():
    """Before: 'GPU time', 'Comm time' and 'overlap' beside 'finished (ns)', and '1536 NPUs
    simulated', '(1520 NPUs not shown' where the headline says 1,536."""
    from simpy_astra.report.console import print_summary

    reports = [SimpleNamespace(npu_id=i, finished_cycles=142_780, exposed_comm_cycles=117_780, overlap=0, comp_comm_overlap_ns=0,
                               times={"GPU": 25_000, "Comm": 117_780}, peak_memory=None, memory_breakdown=None)
               for i in range(1536)]
    stream = io.StringIO()
    print_summary(reports, 1.0, out=Output(stream, rich=False))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "simpy-astra: 1,536 NPUs simulated in 1.00 s"
    assert lines[1].split("  ")[1:] == ["finished (ns)", "exposed comm (ns)", "GPU time (ns)", "comm (ns)",
                                        "overlap (ns)"]
    assert "(1,520 NPUs not shown; --json-out has all of them)" in lines
    assert max(len(line) for line in lines) <= 80


def test_points_that_failed_alike_give_their_error_once(tmp_path, capsys):
    """Before: the same error on one line per point (five of them, then '... and N more')."""
    from simpy_astra.cli.main import main

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base: {scenario}\naxes:\n  network.bandwidth: [50, -1]\n"
                     f"  system.preferred-dataset-splits: [1, 2, 4]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert err.count("must be a number > 0") == 1
    assert "failed bandwidth=-1 preferred_dataset_splits=1 (and 2 more alike): network:" in err


@pytest.mark.parametrize("fold", ["on", "off"])
def test_nodes_csv_is_written_an_npu_at_a_time_as_csv_writes_it_row_by_row(tmp_path, monkeypatch, fold):
    """nodes.csv of a folded 1,536-GPU step took a minute (30 times its simulation) and 1.5 GB:
    a list of every row of every GPU, each formatted one by one. Now no such list is made (each
    simulated NPU's rows are written once); joined with npus.csv it is every row csv.writer
    made, and unfolded the file itself is."""
    import csv

    from simpy_astra.cli.main import main
    from simpy_astra.report import csv_tables

    job = tmp_path / "job.yaml"
    job.write_text("workload: {generate: megatron, args: '--num-layers 4 --hidden-size 512 --num-attention-heads 8 "
                   "--seq-length 256 --micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 2 "
                   "--pipeline-model-parallel-size 2 --bf16'}\ncluster: {preset: dgx-h100, gpus: 16}\n")
    seen = {}
    write, every_row = csv_tables.write_csv_reports, csv_tables.node_rows

    def keeping(record, folder, breakdowns=None):
        seen["rows"] = every_row(record, breakdowns)

        def refused(*args):
            raise AssertionError("nodes.csv made a list of every row")

        monkeypatch.setattr(csv_tables, "node_rows", refused)
        return write(record, folder, breakdowns)

    monkeypatch.setattr(csv_tables, "write_csv_reports", keeping)
    assert main(["run", str(job), "--csv-out", str(tmp_path / "csv"), "--fold-symmetry", fold, "--quiet"]) == 0
    expected, written = io.StringIO(newline=""), io.StringIO(newline="")
    csv.writer(expected).writerows([csv_tables.NODE_COLUMNS, *seen["rows"]])
    csv.writer(written).writerows([csv_tables.NODE_COLUMNS, *csv_tables.expanded_rows(tmp_path / "csv")])
    assert written.getvalue() == expected.getvalue()
    if fold == "off":  # every NPU simulated: the file itself, byte for byte
        assert (tmp_path / "csv" / "nodes.csv").read_bytes() == expected.getvalue().encode()
    assert len({row[0] for row in seen["rows"]}) == 16


def test_the_chrome_trace_is_written_in_one_write(tmp_path, monkeypatch):
    """--trace-out --trace-npus 0-7 of the SC'21 step (10 MB) took 2.5 s after a 3 s simulation:
    json.dump wrote it in many thousand pieces. Now the text is made whole, then written once."""
    import contextlib
    import json

    from simpy_astra.cli.main import main
    from simpy_astra.infra import files

    opened = files.open_output
    writes = []

    @contextlib.contextmanager
    def counting(path, what, *args, **options):
        with opened(path, what, *args, **options) as f:
            write = f.write

            def counted(text):
                writes.append(len(text))
                return write(text)

            monkeypatch.setattr(f, "write", counted, raising=False)
            yield f

    monkeypatch.setattr(files, "open_output", counting)
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
    trace = tmp_path / "t.json"
    assert main(["run", str(scenario), "--trace-out", str(trace), "--quiet"]) == 0
    assert len(writes) == 1 and writes[0] == len(trace.read_text())
    assert json.loads(trace.read_text())["displayTimeUnit"] == "ns"
