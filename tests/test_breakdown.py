"""Where the time goes: each NPU's [0, finish] split into parts, derived by hand for small runs.

Message time on a 50 GB/s, 500 ns ring: 500 + bytes / (50 * 2^30 / 1e9) ns, so 1 MiB takes
20,031 ns. Every scenario that runs in seconds and a sample of the reference cases check that
the parts sum to each NPU's finish time exactly and that ``nodes.csv``'s share columns sum to
the communication and bubble parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.report.breakdown import npu_breakdowns, spread, sweep
from simpy_astra.report.csv_tables import node_rows
from simpy_astra.report.node_parts import BUBBLE, COMM, COMPUTE, HOST, MEMORY
from simpy_astra.report.recorder import attach
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from tests.sim_helpers import net, run_sim

ROOT = Path(__file__).resolve().parents[1]
MIB_NS = 20_031  # 1 MiB on a 50 GB/s, 500 ns link
SLOW_SCENARIOS = {"gemm_dlrm_mlp.yaml", "megatron_gpt_145b_sc21.yaml"}  # a minute; 15 s (a small one below)


def comp(nid: int, micros: int, deps=(), op_type: str | None = None):
    attrs = {"op_type": op_type} if op_type else None
    return make_node(nid, f"comp{nid}", COMP_NODE, deps=deps, duration_micros=micros, attrs=attrs)


def send(nid: int, dst: int, size: int, tag: int, deps=()):
    return make_node(nid, f"send{nid}", COMM_SEND_NODE, deps=deps,
                     attrs={"comm_dst": dst, "comm_size": size, "comm_tag": tag, "is_cpu_op": False})


def recv(nid: int, src: int, size: int, tag: int, deps=()):
    return make_node(nid, f"recv{nid}", COMM_RECV_NODE, deps=deps,
                     attrs={"comm_src": src, "comm_size": size, "comm_tag": tag, "is_cpu_op": False})


def all_reduce(nid: int, size: int, stream: str | None = None, deps=()):
    attrs = {"comm_type": 0, "comm_size": size, "is_cpu_op": False}
    if stream:
        attrs["comm_stream"] = stream
    return make_node(nid, f"ar{nid}", COMM_COLL_NODE, deps=deps, attrs=attrs)


def _run(tmp: Path, ranks: list[list], npus: int = 2):
    """(breakdowns by NPU, node intervals by NPU, nodes.csv rows, reports) of an unfolded run."""
    _, sim = run_sim(tmp, ranks, net("Ring", npus), fold=False, run=False)
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()})
    spans = {rec.npu_id: {nid: (s, e) for nid, s, e in rec.intervals} for rec in record.npus}
    _check_sums(record, reports, breakdowns)
    return breakdowns, spans, node_rows(record, breakdowns), reports


def _check_sums(record, reports: dict, breakdowns: dict) -> None:
    """Parts sum to the finish time; nodes.csv's shares sum to the comm parts and the bubble."""
    for npu_id, report in reports.items():
        b = breakdowns[npu_id]
        assert sum(b.parts.values()) == report.finished_cycles == b.finish_ns, npu_id
        assert all(v > 0 for v in b.parts.values())
    exposed: dict[int, int] = {}
    bubble: dict[int, int] = {}
    for row in node_rows(record, breakdowns):
        exposed[row[0]] = exposed.get(row[0], 0) + row[8]
        bubble[row[0]] = bubble.get(row[0], 0) + row[9]
    for rec in record.npus:
        b = breakdowns[rec.npu_id]
        assert exposed.get(rec.npu_id, 0) == b.exposed_comm_ns
        assert bubble.get(rec.npu_id, 0) == b.parts.get("bubble", 0)


# ------------------------------------------------------------------------------ the sweep itself
def test_precedence_compute_memory_comm_bubble_idle() -> None:
    """Hand-made intervals: each instant to the highest class in flight, then the earliest start."""
    parts = {1: (COMPUTE, "compute.gemm"), 2: (MEMORY, "memory"), 3: (COMM, "comm.dp"),
             4: (COMM, "comm.tp"), 5: (BUBBLE, "bubble")}
    # 0-10 gemm; 5-30 memory; 0-50 dp; 20-70 tp; 0-90 recv; 90-100 nothing
    intervals = [(1, 0, 10), (2, 5, 30), (3, 0, 50), (4, 20, 70), (5, 0, 90)]
    b = sweep(intervals, parts.get, 100)
    assert b.parts == {"compute.gemm": 10, "memory": 20, "comm.dp": 20, "comm.tp": 20, "bubble": 20, "idle": 10}
    assert b.shares == {1: 10, 2: 20, 3: 20, 4: 20, 5: 20}
    # two collectives started at once: the lower node id is charged while it runs
    b = sweep([(7, 0, 30), (6, 0, 20)], {6: (COMM, "comm.a"), 7: (COMM, "comm.b")}.get, 30)
    assert b.parts == {"comm.a": 20, "comm.b": 10}


def test_the_host_is_charged_only_where_the_gpu_waits_for_it() -> None:
    """A CPU op holds the host, not the GPU: 0-100 the host issues, 20-50 a GEMM runs, 60-80
    a collective, 0-120 a receive is posted: the host is charged 0-20, 50-60 and 80-100, the
    GEMM and the collective their own time, and the bubble what is left (by hand)."""
    parts = {1: (HOST, "compute.host"), 2: (COMPUTE, "compute.gemm"), 3: (COMM, "comm.tp"), 4: (BUBBLE, "bubble")}
    b = sweep([(1, 0, 100), (2, 20, 50), (3, 60, 80), (4, 0, 120)], parts.get, 120)
    assert b.parts == {"compute.host": 50, "compute.gemm": 30, "comm.tp": 20, "bubble": 20}


@pytest.mark.parametrize("array_sweep", [False, True])
def test_the_recorders_columns_split_time_as_by_hand(monkeypatch: pytest.MonkeyPatch, array_sweep: bool) -> None:
    """The case above recorded as a run records it (node starts, then ends in end order, kept as
    columns) and swept in place, by the plain sweep and by the array sweep (issue 51: the
    recorder's arrays are read without a conversion per interval): the same parts by hand;
    each node's share only when asked."""
    from simpy_astra.report import breakdown
    from simpy_astra.report.recorder import NpuRecorder

    if array_sweep:
        monkeypatch.setattr(breakdown, "ARRAY_SWEEP_FROM", 1)
    parts = {1: (COMPUTE, "compute.gemm"), 2: (MEMORY, "memory"), 3: (COMM, "comm.dp"),
             4: (COMM, "comm.tp"), 5: (BUBBLE, "bubble")}
    rec = NpuRecorder(0, record_chunks=False)
    for t, event, nid in sorted([(0, "start", 1), (5, "start", 2), (0, "start", 3), (20, "start", 4), (0, "start", 5),
                                 (10, "end", 1), (30, "end", 2), (50, "end", 3), (70, "end", 4), (90, "end", 5)],
                                key=lambda e: (e[0], e[1] == "start")):
        (rec.node_start if event == "start" else rec.node_end)(nid, t)
    assert rec.intervals == [(1, 0, 10), (2, 5, 30), (3, 0, 50), (4, 20, 70), (5, 0, 90)]
    by_hand = {"compute.gemm": 10, "memory": 20, "comm.dp": 20, "comm.tp": 20, "bubble": 20, "idle": 10}
    b = breakdown.sweep_columns(rec.ids, rec.begins, rec.ends, parts.get, 100, segments=True)
    assert b.parts == by_hand and b.shares == {1: 10, 2: 20, 3: 20, 4: 20, 5: 20}
    assert b.segments == [(0, 10, "compute.gemm"), (10, 30, "memory"), (30, 50, "comm.dp"), (50, 70, "comm.tp"),
                          (70, 90, "bubble"), (90, 100, "idle")]
    alone = breakdown.sweep_columns(rec.ids, rec.begins, rec.ends, parts.get, 100, shares=False)
    assert alone.parts == by_hand and alone.shares is None


@pytest.mark.parametrize("array_sweep", [False, True])
def test_a_split_node_charges_each_of_its_kinds_its_share(monkeypatch: pytest.MonkeyPatch, array_sweep: bool) -> None:
    """A compute node over [0, 100) whose kernels are 3 parts GEMM, 1 attention, 1 element-wise
    (a ``kind_split``), beside a collective over [50, 150) and after a plain GEMM over [100,
    110): [0, 60) gemm, [60, 80) attention, [80, 100) element-wise, [100, 110) gemm, then the
    collective's 40 ns; the node's share is its whole interval. Both sweeps alike."""
    from simpy_astra.report import breakdown

    if array_sweep:
        monkeypatch.setattr(breakdown, "ARRAY_SWEEP_FROM", 1)
    split = (("compute.gemm", 3), ("compute.attention", 1), ("compute.elementwise", 1))
    parts = {1: (COMPUTE, "compute.gemm", split), 2: (COMM, "comm.dp"), 3: (COMPUTE, "compute.gemm")}
    b = sweep([(1, 0, 100), (2, 50, 150), (3, 100, 110)], parts.get, 150, segments=True)
    assert b.parts == {"compute.gemm": 70, "compute.attention": 20, "compute.elementwise": 20, "comm.dp": 40}
    assert b.shares == {1: 100, 2: 40, 3: 10}
    assert b.segments == [(0, 60, "compute.gemm"), (60, 80, "compute.attention"),
                          (80, 100, "compute.elementwise"), (100, 110, "compute.gemm"), (110, 150, "comm.dp")]
    # a day-long node with the largest weights: cut exactly where span x running sum / total falls
    day, big = 86_400 * 10**9, (("compute.gemm", 2**31 - 7), ("compute.attention", 7))
    b = sweep([(1, 0, day)], {1: (COMPUTE, "compute.gemm", big)}.get, day)
    assert b.parts == {"compute.gemm": day * (2**31 - 7) // 2**31, "compute.attention": day - day * (2**31 - 7) // 2**31}


def test_kind_split_is_read_or_ignored() -> None:
    """``kind_split`` is the trace's own attribute: read when it is ``kind:weight,...`` with
    two kinds or more and whole positive weights, else ignored (the node is its ``op_type``)."""
    from simpy_astra.report.kind_split import kind_split

    assert kind_split("gemm:812,attention:60") == (("compute.gemm", 812), ("compute.attention", 60))
    for bad in ("", "gemm:812", "gemm:x,attention:1", "gemm:0,attention:1", "gemm:-1,attention:2", ":3,a:1",
                "gemm:1.5,attention:1", "gemm,attention", "gemm:²,attention:1", f"gemm:{2**31},attention:1"):
        assert kind_split(bad) == (), bad


def test_a_run_reads_kind_split_from_the_trace(tmp_path: Path) -> None:
    """One 100 us compute node per NPU with ``kind_split`` gemm 3, attention 1 (and one whose
    split is malformed, charged to its op_type alone): 75 and 25 us, then 100 us of gemm."""
    ranks = [[make_node(0, "c0", COMP_NODE, duration_micros=100,
                        attrs={"op_type": "gemm", "kind_split": "gemm:3,attention:1"}),
              make_node(1, "c1", COMP_NODE, deps=[0], duration_micros=100,
                        attrs={"op_type": "gemm", "kind_split": "gemm:3,attention:one"})] for _ in range(2)]
    breakdowns, *_ = _run(tmp_path, ranks)
    assert breakdowns[0].parts == {"compute.gemm": 175_000, "compute.attention": 25_000}


# ------------------------------------------------------------------------------ small runs by hand
def test_two_overlapping_collectives_on_different_streams(tmp_path: Path) -> None:
    """dp (1 MiB) from 0, tp (64 KiB) from 10 us after a compute, on their own streams: both in
    flight from 10 us. dp is charged while it runs (the compute hides its first 10 us), tp only
    for what outlasts it (here its chunks queue behind dp's on the ring's one active chunk)."""
    rank = [comp(0, 10), all_reduce(1, 1 << 20, "dp"), all_reduce(2, 1 << 16, "tp", deps=[0])]
    breakdowns, spans, rows, reports = _run(tmp_path, [rank, rank])
    for npu in (0, 1):
        (dp_start, dp_end), (tp_start, tp_end) = spans[npu][1], spans[npu][2]
        assert dp_start == 0 and tp_start == 10_000 < dp_end < tp_end  # in flight together
        b = breakdowns[npu]
        assert b.parts == {"compute.other": 10_000, "comm.dp": dp_end - 10_000, "comm.tp": tp_end - dp_end}
        assert {row[1]: row[8] for row in rows if row[0] == npu} == {0: 0, 1: dp_end - 10_000, 2: tp_end - dp_end}
        # the per-node exposed column charges both for their overlap
        exposed = {row[1]: row[7] for row in rows if row[0] == npu}
        assert exposed[1] + exposed[2] == b.exposed_comm_ns + (dp_end - 10_000)
        assert reports[npu].finished_cycles == tp_end


def test_two_stage_pipeline_bubble_is_the_other_stage_forward_and_backward(tmp_path: Path) -> None:
    """One micro-batch: stage 0 forwards (10 us), sends 1 MiB, waits while stage 1 forwards
    (30 us) and backwards (40 us) and the gradient comes back, then backwards (20 us)."""
    f0, f1, b1, b0 = 10_000, 30_000, 40_000, 20_000
    stage0 = [comp(0, 10), send(1, 1, 1 << 20, 1, [0]), recv(2, 1, 1 << 20, 2), comp(3, 20, [2])]
    stage1 = [recv(0, 0, 1 << 20, 1), comp(1, 30, [0]), comp(2, 40, [1]), send(3, 0, 1 << 20, 2, [2])]
    breakdowns, _spans, _rows, reports = _run(tmp_path, [stage0, stage1])
    assert breakdowns[0].parts == {"compute.other": f0 + b0, "comm.p2p": MIB_NS, "bubble": f1 + b1 + MIB_NS}
    assert breakdowns[1].parts == {"compute.other": f1 + b1, "comm.p2p": MIB_NS, "bubble": f0 + MIB_NS}
    assert reports[0].finished_cycles == f0 + MIB_NS + f1 + b1 + MIB_NS + b0


def test_compute_hides_a_collective(tmp_path: Path) -> None:
    """A GEMM of 5 us beside a 1 MiB all-reduce: the all-reduce is exposed once the GEMM ends;
    an attention kernel after the all-reduce is its own kind."""
    rank = [comp(0, 5, op_type="gemm"), all_reduce(1, 1 << 20), comp(2, 7, deps=[1], op_type="attention")]
    breakdowns, spans, rows, _reports = _run(tmp_path, [rank] * 4, npus=4)
    ar_end = spans[0][1][1]
    assert breakdowns[0].parts == {"compute.gemm": 5_000, "comm.all": ar_end - 5_000, "compute.attention": 7_000}
    assert [row[8] for row in rows if row[0] == 0 and row[1] == 1] == [ar_end - 5_000]


def test_spread_counts_a_missing_part_as_zero(tmp_path: Path) -> None:
    stage0 = [comp(0, 10), send(1, 1, 1 << 20, 1, [0])]
    stage1 = [recv(0, 0, 1 << 20, 1)]
    breakdowns, *_ = _run(tmp_path, [stage0, stage1])
    got = spread(breakdowns)
    assert got["compute.other"] == (0, 5_000, 10_000)
    assert got["bubble"] == (0, (10_000 + MIB_NS) / 2, 10_000 + MIB_NS)


# ------------------------------------------------------------------------------ every scenario
def _scenarios() -> list:
    return [pytest.param(p, id=p.name) for p in sorted((ROOT / "scenarios").glob("*.yaml"))
            if p.name not in SLOW_SCENARIOS]


@pytest.mark.parametrize("path", _scenarios())
def test_parts_sum_to_finish_time_in_every_scenario(path: Path) -> None:
    sim = Simulation.from_scenario(str(path))
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()})
    assert set(breakdowns) == set(reports)
    _check_sums(record, reports, breakdowns)


def test_dimensions_of_generated_workloads() -> None:
    """Megatron names its streams; the transformer's groups are named by its layout."""
    sim = Simulation.from_scenario(str(ROOT / "scenarios" / "transformer_llama_16npus.yaml"))
    record = attach(sim)
    reports = sim.run()
    b = npu_breakdowns(record, {r.npu_id: r.finished_cycles for r in reports})[0]
    assert {"comm.dp", "comm.tp", "comm.sp", "comm.pp", "compute.gemm", "compute.attention", "bubble"} <= set(b.parts)
    assert not [p for p in b.parts if p.startswith("comm.group") or p == "comm.p2p"]


def test_megatron_parts(tmp_path: Path) -> None:
    scenario = tmp_path / "mg.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-a100-80gb, gpus: 16}\n"
        "workload: {generate: megatron, args: \"--num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
        "--seq-length 1024 --micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 2 --bf16\"}\n")
    sim = Simulation.from_scenario(str(scenario))
    sim_inputs_fold = sim.folding is not None
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()})
    _check_sums(record, reports, breakdowns)
    first = breakdowns[0].parts
    assert {"compute.gemm", "compute.optimizer", "comm.tp", "comm.dp", "comm.pp", "bubble"} <= set(first)
    assert sim_inputs_fold or len(breakdowns) == 16


# ------------------------------------------------------------------------------ reference cases
def _reference_sample() -> list:
    folder = ROOT.parent / "shared" / "reference" / "cases"
    if not folder.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason="no reference data"))]
    cases = [p for p in sorted(folder.glob("*.json")) if not json.loads(p.read_text()).get("expect_error")]
    cases = [p for p in cases if "_st7_" not in p.stem]  # not the slow 80-layer STAGE cases
    return [pytest.param(p, id=p.stem) for p in cases[::23]]


@pytest.mark.parametrize("path", _reference_sample())
def test_parts_sum_to_finish_time_in_reference_cases(path: Path, reference_dir: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    case = json.loads(path.read_text())
    for entry in reference_dir.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    inputs = inputs_from_astra_flags(
        workload=case["workload"], system=case["system"], network=case["network"],
        remote_memory=case["remote_memory"], comm_groups=case.get("comm_group") or "empty",
        backend=case["backend"])
    sim = Simulation(inputs)
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()})
    assert set(breakdowns) == set(reports)
    _check_sums(record, reports, breakdowns)
    for npu, figures in case["expected"].items():  # recording changed no figure
        assert reports[int(npu)].finished_cycles == figures["finished_cycles"]


# ------------------------------------------------------------------------------ where a user looks
def test_json_and_console_show_the_breakdown(tmp_path: Path) -> None:
    """``--json-out`` has every NPU's parts (summing to its finish time); the console ends with
    the critical NPU's parts and their spread, within 80 columns, plain and drawn by rich."""
    import io
    import subprocess
    import sys

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.console import Output, print_breakdown

    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(ROOT / "scenarios" / "default.yaml"),
                           "--json-out", str(out)], capture_output=True, text=True, check=True, cwd=tmp_path)
    data = json.loads(out.read_text())
    for figures in data["npus"].values():
        assert figures["breakdown_ns"] == {"compute.other": 25_000, "comm.all": 117_780}
        assert sum(figures["breakdown_ns"].values()) == figures["finished_cycles"]
    table = done.stderr[done.stderr.index("where the time went"):].splitlines()
    assert table[0] == "where the time went (ns): NPU 0 (last to finish), and over 8 NPUs"
    assert table[-2].split() == ["finish", "142,780", "100.0%", "142,780", "142,780", "142,780"]
    assert table[-1] == "iteration time 142,780 ns (last: NPU 0 of 8, exposed comm 117,780 ns)"  # the answer, last
    assert max(map(len, table)) <= 80
    # the widest figures and part names the generators write, drawn by rich
    parts = {"compute.gemm": 1, "compute.attention": 2, "compute.elementwise": 3, "compute.optimizer": 4,
             "comm.tp": 5, "comm.edp": 6, "comm.pp": 7, "bubble": 8}
    wide = {i: Breakdown(987_654_321_000 + i, dict(parts, idle=987_654_321_000 + i - 36)) for i in range(512)}
    text = io.StringIO()
    print_breakdown(wide, Output(text, rich=True))
    assert "NPU 511" in text.getvalue() and max(map(len, text.getvalue().splitlines())) <= 80


@pytest.mark.parametrize("npus", [16, 1024])
@pytest.mark.parametrize("rich", [False, True])
def test_breakdown_table_fits_80_columns(npus: int, rich: bool) -> None:
    """16 and 1,024 NPUs, the widest figures (999,999.9 ms, the largest before seconds), the
    generators' widest part names and a trace's own long one: every line of the table within
    80 columns, plain or drawn by rich; the long name is shortened in its middle (a note says
    so), no figure is cut."""
    import io

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.console import Output, print_breakdown

    long_name = "compute.aten::scaled_dot_product_flash_attention"
    parts = {"compute.gemm": 1, "compute.elementwise": 3, "compute.optimizer": 4, long_name: 5,
             "comm.group 1234": 6, "bubble": 7}
    finish = 999_999_900_000 - 1  # 999,999.9 ms
    table = {i: Breakdown(finish - i, dict(parts, idle=finish - i - 26)) for i in range(npus)}
    text = io.StringIO()
    print_breakdown(table, Output(text, rich=rich))
    lines = text.getvalue().splitlines()
    assert max(map(len, lines)) <= 80, lines
    assert "999,999.9" in text.getvalue() and "compute.elementwise" in text.getvalue()
    assert "compute.a..ttention" in text.getvalue() and long_name not in text.getvalue()
    assert lines[-1] == "(long part names shortened with ..; --json-out has them whole)"
    assert "not shown" not in text.getvalue()  # every column, at 80 columns
    if not rich:
        assert lines[0] == f"where the time went (ms): NPU 0 (last to finish), and over {npus:,} NPUs"
        assert lines[-2].split() == ["finish", "999,999.9", "100.0%", f"{(finish - npus + 1) / 1e6:,.1f}",
                                     f"{(finish - (npus - 1) / 2) / 1e6:,.1f}", "999,999.9"]


def test_plots_have_axes_legend_and_labels(tmp_path: Path) -> None:
    """``--plots DIR``: two PNGs; the figures behind them label their axes and name every part."""
    import subprocess
    import sys

    from simpy_astra.report.plots import breakdown_figure, timeline_figure

    stage0 = [comp(0, 10), send(1, 1, 1 << 20, 1, [0]), recv(2, 1, 1 << 20, 2), comp(3, 20, [2])]
    stage1 = [recv(0, 0, 1 << 20, 1), comp(1, 30, [0]), comp(2, 40, [1]), send(3, 0, 1 << 20, 2, [2])]
    _, sim = run_sim(tmp_path, [stage0, stage1], net("Ring", 2), fold=False, run=False)
    record = attach(sim)
    sim.run()
    breakdowns = npu_breakdowns(record, segments=True)
    assert breakdowns[0].segments == [(0, 10_000, "compute.other"), (10_000, 10_000 + MIB_NS, "comm.p2p"),
                                      (10_000 + MIB_NS, 80_000 + 2 * MIB_NS, "bubble"),
                                      (80_000 + 2 * MIB_NS, 100_000 + 2 * MIB_NS, "compute.other")]
    for fig, xlabel in ((breakdown_figure(breakdowns), "NPU"), (timeline_figure(breakdowns), "time (ms)")):
        ax = fig.axes[0]
        assert ax.get_xlabel() == xlabel and ax.get_title()
        legend = ax.get_legend() or fig.legends[0]  # timeline.png's is the figure's, below the axes
        assert [t.get_text() for t in legend.get_texts()] == ["compute.other", "comm.p2p", "bubble"]
    assert breakdown_figure(breakdowns).axes[0].get_ylabel() == "time (us)"
    out = tmp_path / "plots"
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(ROOT / "scenarios" / "default.yaml"), "--quiet",
                    "--plots", str(out)], check=True, capture_output=True, cwd=tmp_path)
    for name in ("breakdown.png", "timeline.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------ a GPT-style step
GPT_TORUS = """\
workload: gpt/step
comm_groups: gpt/step.json
system:
  {scheduling-policy: LIFO, collective-optimization: localBWAware, endpoint-delay: 10,
   active-chunks-per-dimension: 1, preferred-dataset-splits: 4, local-mem-bw: 3000, peak-perf: 900,
   roofline-enabled: 1, all-reduce-implementation: [ring, ring], all-gather-implementation: [ring, ring],
   reduce-scatter-implementation: [ring, ring], all-to-all-implementation: [direct, direct]}
network: {topology: [Ring, Ring], npus_count: [4, 8], bandwidth: [100.0, 50.0], latency: [500.0, 500.0]}
remote_memory: {memory-type: NO_MEMORY_EXPANSION}
"""
GPT_ARGS = ["--model", "gpt", "--dp", "4", "--tp", "4", "--pp", "2", "--dmodel", "1024", "--dff", "4096",
            "--head", "16", "--num-stacks", "4", "--seq", "1024", "--batch", "32", "--micro-batch", "8"]


def _png_text(path: Path) -> dict[str, str]:
    """The tEXt chunks of a PNG file (keyword -> text)."""
    import struct

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, pos = {}, 8
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        if kind == b"tEXt":
            key, _, value = data[pos + 8:pos + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        pos += 12 + length
    return out


def _by_hand(intervals: dict[int, tuple[int, int]], kinds: dict[int, str], finish_ns: int) -> dict[str, int]:
    """The breakdown's rule, applied the slow way: every stretch between two node boundaries
    goes to compute if a compute node runs, else to the communication node in flight that
    started first (lowest id on a tie), else to the bubble if a receive waits, else idle."""
    cuts = sorted({0, finish_ns, *(t for span in intervals.values() for t in span)})
    parts: dict[str, int] = {}
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        live = [n for n, (s, e) in intervals.items() if s <= lo and hi <= e and e > s]
        comm = sorted((intervals[n][0], n) for n in live if kinds[n].startswith("comm."))
        if any(kinds[n] == "compute" for n in live):
            part = "compute"
        elif comm:
            part = kinds[comm[0][1]]
        elif any(kinds[n] == "bubble" for n in live):
            part = "bubble"
        else:
            part = "idle"
        parts[part] = parts.get(part, 0) + hi - lo
    return parts


def test_gpt_torus_step_splits_by_tensor_data_and_pipeline(tmp_path: Path) -> None:
    """dp4 x tp4 x pp2 from the transformer generator, read back from its files on a [Ring, Ring]
    torus: the last NPU's compute, tp / dp / pp communication and bubble, derived here from the
    run's node intervals (nodes.csv), the ET files' node types and groups, and the layout
    rank = dp_i + 4 * (tp_i + 4 * pp_i), equal the breakdown; the console and both PNGs show them."""
    import csv
    import subprocess
    import sys

    from simpy_astra.workloads.chakra import read_et

    run = [sys.executable, "-m", "simpy_astra"]
    subprocess.run([*run, "generate", "transformer", *GPT_ARGS, "--output", "gpt/step"], cwd=tmp_path,
                   check=True, capture_output=True)
    (tmp_path / "gpt.yaml").write_text(GPT_TORUS)
    done = subprocess.run([*run, "run", "gpt.yaml", "--csv-out", "csv", "--json-out", "figures.json",
                           "--plots", "plots"], cwd=tmp_path, check=True, capture_output=True, text=True,
                          env={**__import__("os").environ, "COLUMNS": "80"})
    figures = json.loads((tmp_path / "figures.json").read_text())
    last = max(figures["npus"], key=lambda n: (figures["npus"][n]["finished_cycles"], -int(n)))
    finish = figures["iteration_time_ns"]
    assert figures["npus"][last]["finished_cycles"] == finish
    # each group's dimension from its members: consecutive ranks are data-parallel, stride 4 tensor-parallel
    groups = json.loads((tmp_path / "gpt" / "step.json").read_text())
    dims = {gid: {1: "dp", 4: "tp"}[m[1] - m[0]] for gid, m in groups.items() if len(m) > 1}
    _meta, nodes = read_et(str(tmp_path / "gpt" / f"step.{last}.et"))
    kinds = {}
    for node in nodes:
        if node.type == COMP_NODE:
            kinds[node.id] = "compute"
        elif node.type == COMM_COLL_NODE:
            kinds[node.id] = "comm." + dims[node.attrs["pg_name"][1]]
        elif node.type == COMM_SEND_NODE:
            kinds[node.id] = "comm.pp"  # to the next or previous pipeline stage
        elif node.type == COMM_RECV_NODE:
            kinds[node.id] = "bubble"
    with open(tmp_path / "csv" / "nodes.csv") as f:
        spans = {int(r["node_id"]): (int(r["start_ns"]), int(r["end_ns"])) for r in csv.DictReader(f)
                 if r["npu"] == last}
    want = _by_hand(spans, kinds, finish)
    got = dict(figures["npus"][last]["breakdown_ns"])
    got["compute"] = sum(got.pop(k) for k in list(got) if k.startswith("compute."))
    assert got == want
    assert set(want) >= {"compute", "comm.tp", "comm.dp", "comm.pp", "bubble"}
    # the console's table: the critical NPU's shares, within 80 columns
    table = done.stderr[done.stderr.index("where the time went"):].splitlines()
    assert table[0].startswith(f"where the time went (us): NPU {last} (last to finish)")
    rows = {line.split()[0]: line.split() for line in table[2:]}
    for part in ("comm.tp", "comm.dp", "comm.pp", "bubble"):
        assert rows[part][2] == f"{100 * want[part] / finish:.1f}%"
    timeline = done.stderr[done.stderr.index("timeline 0"):done.stderr.index("where the time went")]
    assert "t comm.tp" in timeline and "~ bubble" in timeline
    assert max(map(len, done.stderr.splitlines())) <= 80
    # both PNGs carry their title, axis labels and legend
    for name, xlabel in (("breakdown.png", "x: NPU (xN: N NPUs with this breakdown);"), ("timeline.png", "x: time (ms);")):
        text = _png_text(tmp_path / "plots" / name)
        assert text["Title"] and text["Description"].startswith(xlabel)
        legend = text["Description"].split("legend: ")[1].split(", ")
        assert {"comm.tp", "comm.dp", "comm.pp", "bubble"} <= set(legend)
        assert "y: -" not in text["Description"]


def test_breakdown_png_past_64_npus_has_a_bar_per_stage_and_tensor_rank() -> None:
    """dp4 x tp4 x pp8 (128 NPUs): the generator's groups give each NPU its stage and tensor
    rank; the figure has pp * tp = 32 bars, each the slowest NPU of its cell."""
    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.pipeline_roles import pipeline_layout
    from simpy_astra.report.plots import breakdown_figure
    from simpy_astra.workloads.transformer.config import config_from_params
    from simpy_astra.workloads.transformer.graph import Layout

    layout = Layout.build(config_from_params({"dp": 4, "tp": 4, "pp": 8, "batch": 32, "micro_batch": 8}, "test"))
    names = {gid: dim for (dim, _rank), gid in layout.group_of.items()}
    roles, _ = pipeline_layout(names, {g: tuple(m) for g, m in layout.groups.items()}, 128)
    for rank in range(128):  # rank = dp_i + 4 * (tp_i + 4 * pp_i)
        assert roles[rank] == (rank // 16, rank // 4 % 4)
    breakdowns = {n: Breakdown(1000 + n, {"compute.gemm": 500, "bubble": 500 + n}) for n in range(128)}
    ax = breakdown_figure(breakdowns, roles=roles).axes[0]
    labels = [t.get_text() for t in ax.texts]  # a text per bar
    assert len(labels) == 32 and labels[0] == "s0 t0 (3)" and labels[-1] == "s7 t3 (127)"
    assert ax.get_xlabel().startswith("pipeline stage s, tensor rank t")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["compute.gemm", "bubble"]


SMALL_PIPELINE = """\
workload: {generate: transformer, model: gpt, dp: 2, tp: 2, pp: 3, dmodel: 256, dff: 1024, head: 4,
           num_stacks: 3, seq: 128, batch: 8, micro_batch: 2}
system: {scheduling-policy: LIFO, collective-optimization: localBWAware, endpoint-delay: 10,
         active-chunks-per-dimension: 1, preferred-dataset-splits: 4, local-mem-bw: 3000, peak-perf: 900,
         roofline-enabled: 1, all-reduce-implementation: [ring], all-gather-implementation: [ring],
         reduce-scatter-implementation: [ring], all-to-all-implementation: [direct]}
network: {topology: [Switch], npus_count: [12], bandwidth: [100.0], latency: [500.0]}
remote_memory: {memory-type: NO_MEMORY_EXPANSION}
"""


def test_timeline_has_a_row_per_pipeline_stage_of_one_replica(tmp_path: Path) -> None:
    """dp2 x tp2 x pp3 (rank = dp_i + 2 * (tp_i + 2 * pp_i)): timeline.png's rows are NPUs 0, 4
    and 8 (stage s, data-parallel rank 0, tensor rank 0), each row tiles [0, its finish] and
    its bubble stretches add up to that NPU's bubble part; the PNG is written."""
    from simpy_astra.report.pipeline_roles import pipeline_layout
    from simpy_astra.report.plots import gantt_rows, timeline_figure, write_plots

    scenario = tmp_path / "pipe.yaml"
    scenario.write_text(SMALL_PIPELINE)
    sim = Simulation.from_scenario(str(scenario))
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()}, segments=True)
    groups = sim.planner.file_group_members()
    roles, replica = pipeline_layout(sim.group_names, groups, 12)
    assert replica == [0, 4, 8]
    assert roles == {r: (r // 4, r // 2 % 2) for r in range(12)}
    rows = gantt_rows(breakdowns, replica)
    assert [row.label for row in rows] == ["stage 0: NPU 0", "stage 1: NPU 4", "stage 2: NPU 8"]
    bubbles = []
    for row in rows:
        finish = reports[row.npu].finished_cycles
        assert row.segments[0][0] == 0 and row.segments[-1][1] == finish
        assert all(a[1] == b[0] for a, b in zip(row.segments, row.segments[1:], strict=False))
        bubbles.append(sum(e - s for s, e, part in row.segments if part == "bubble"))
    assert bubbles == [breakdowns[n].parts.get("bubble", 0) for n in (0, 4, 8)]
    assert bubbles[0] > 0 and bubbles[2] > 0  # the first stage waits on the backward, the last on the forward
    fig = timeline_figure(breakdowns, replica=replica)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "pipeline stage"
    assert "tensor rank 0" in ax.get_title() and "bubble" in [t.get_text() for t in fig.legends[0].get_texts()]
    paths = write_plots(breakdowns, str(tmp_path / "plots"), roles, replica)
    assert [Path(p).read_bytes()[:8] for p in paths] == [b"\x89PNG\r\n\x1a\n"] * 2


def test_megatron_past_64_npus_names_its_groups_before_any_trace_is_written(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """tp2 x pp4 x dp16 (128 GPUs), folded, from an empty cache (a lazy run writes only the ranks
    it simulates): every comm group is named by Megatron's layout, rank = t + 2 * (d + 16 * p):
    ``tp`` groups are {2k, 2k + 1}, ``dp`` groups the 16 ranks of one stage and tensor rank
    (stride 2), ``emb`` groups the first and the last stage's rank (32 * 3 apart); so the roles,
    the replica and the breakdown's parts say tp / dp / pp, never a group id."""
    from simpy_astra.report.pipeline_roles import pipeline_layout

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    scenario = tmp_path / "mg.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-a100-80gb, gpus: 128}\n"
        "workload: {generate: megatron, args: \"--num-layers 4 --hidden-size 512 --num-attention-heads 8 "
        "--seq-length 512 --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 4 --bf16\"}\n")
    sim = Simulation.from_scenario(str(scenario))
    assert sim.folding is not None
    groups = sim.planner.file_group_members()
    assert set(sim.group_names) == set(groups) and sim.p2p_name == "pp"
    for gid, members in groups.items():
        first = members[0]
        want = {"tp": [first, first + 1] if first % 2 == 0 else None,
                "dp": list(range(first, first + 32, 2)) if first % 32 < 2 else None,
                "emb": [first, first + 96] if first < 32 else None}[sim.group_names[gid]]
        assert list(members) == want, (gid, sim.group_names[gid], members)
    assert {dim: sum(d == dim for d in sim.group_names.values()) for dim in ("tp", "dp", "emb")} == \
        {"tp": 64, "dp": 8, "emb": 32}
    roles, replica = pipeline_layout(sim.group_names, groups, 128)
    assert roles == {r: (r // 32, r % 2) for r in range(128)}
    assert replica == [0, 32, 64, 96]
    record = attach(sim)
    reports = {r.npu_id: r for r in sim.run()}
    breakdowns = npu_breakdowns(record, {i: r.finished_cycles for i, r in reports.items()})
    _check_sums(record, reports, breakdowns)
    parts = {p for b in breakdowns.values() for p in b.parts}
    assert {"comm.tp", "comm.dp", "comm.pp", "bubble"} <= parts
    assert not [p for p in parts if p.startswith("comm.") and p[5:] not in ("tp", "dp", "pp")]


def test_png_bytes_is_the_picture_lossless_with_its_text_and_resolution() -> None:
    """The plots' own PNG writer (issue 51: Pillow's adaptive line filters were most of a
    picture's saving time): Pillow reads back every pixel's colour exactly, the text chunks
    (Latin-1 and not) and the resolution."""
    import io

    import numpy as np
    from PIL import Image

    from simpy_astra.report.png_file import png_bytes

    rng = np.random.default_rng(51)
    rgba = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    rgba[10:20] = rgba[9]  # repeated lines, as a chart's bars and margins are
    image = Image.open(io.BytesIO(png_bytes(rgba, {"Title": "where it went", "Description": "x: µs ✓"}, 110)))
    image.load()
    assert image.mode == "RGB" and image.size == (53, 37)
    assert (np.asarray(image) == rgba[..., :3]).all()
    assert image.text == {"Title": "where it went", "Description": "x: µs ✓"}
    assert [round(d) for d in image.info["dpi"]] == [110, 110]
