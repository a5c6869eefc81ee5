"""The figures the guides' prose quotes from a one-collective run (or from a reference case run
on another backend) are what that run gives.

docs/megatron.md quoted an H100 two-node 64 MiB all-reduce at 337 us, which the preset ran
at NCCL's own Simple latencies; once the preset carried its fitted ``nccl_latency_scale``
(3.17) the run gave 471 us and the sentence kept the old figure. Each entry here is the
sentence as the page writes it, the scenario it describes, and the figure within it; the
scenarios run in hundredths of a second, so the sentences cannot go stale again unseen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
H100_2 = {"preset": "dgx-h100", "gpus": 16}
H100_4 = {"preset": "dgx-h100", "gpus": 32}
ONE_A_LEAF = {**H100_4, "nccl_algo": "ring", "nodes_per_leaf": 1}
MIB, GIB = 2**20, 2**30

#: (page, words of the page, cluster, collective, bytes, the figure those words give for it)
FIGURES = [
    ("docs/megatron.md", "an H100 two-node all-reduce of 1 MiB: 62.4 us", H100_2, "all_reduce", MIB, "62.4 us"),
    ("docs/megatron.md", "62.4 us, 78.7 us with a 20 us call", {**H100_2, "nccl_launch_us": 20}, "all_reduce", MIB,
     "78.7 us"),
    ("docs/megatron.md", "of 64 MiB: 471 us", H100_2, "all_reduce", 64 * MIB, "471 us"),
    ("docs/megatron.md", "337 us with Simple's latencies at NCCL's own, `nccl_latency_scale: 1`",
     {**H100_2, "nccl_latency_scale": 1}, "all_reduce", 64 * MIB, "337 us"),
    ("docs/megatron.md", "471 us still at a scale of 3 and more", {**H100_2, "nccl_latency_scale": 3}, "all_reduce",
     64 * MIB, "471 us"),
    ("docs/megatron.md", "a 1 GiB ring on four H100 nodes, one a leaf: 5.93 ms at 1:1", ONE_A_LEAF, "all_reduce",
     GIB, "5.93 ms"),
    ("docs/megatron.md", "5.93 ms at 1:1, 11.47 ms at 2:1", {**ONE_A_LEAF, "oversubscription": 2}, "all_reduce", GIB,
     "11.47 ms"),
    ("docs/megatron.md", "6.00 ms for 1 GiB on four H100 nodes", H100_4, "all_reduce", GIB, "6.00 ms"),
    ("docs/megatron.md", "ran NVLS, 185.4 us measured, 170.5 us as the model times NVLS", H100_2, "all_reduce",
     16 * MIB, "170.5 us"),
    ("docs/megatron.md", "an 8 MiB all-reduce on 8 GPUs takes 150 us", {"preset": "dgx-a100-80gb", "gpus": 8},
     "all_reduce", 8 * MIB, "150 us"),
]

#: (page, words, backend, figure) of GPU 4 -> GPU 8 of a dgx-h100, 1 MiB
PAIR = [
    ("docs/megatron.md", "GPU 8 of a `dgx-h100`, 1 MiB: 49,939 ns against 49,830 above", "packet", "49,939 ns"),
    ("docs/megatron.md", "49,939 ns against 49,830 above", "congestion_unaware", "49,830"),
    ("docs/backends.md", "GPU 4 -> GPU 8 over NVLink then a rail, 1 MiB in 49,939 ns", "packet", "49,939 ns"),
]


#: (page, words, reference case, backend, figure): docs/backends.md's figures of reference cases
#: run on other backends than their own (``benchmarks/backend_cost.py``), each under a second
CASES = [
    ("docs/backends.md", "the packet backend finishes at 443,931 ns against the aware backend's 328,036",
     "knob_cu_rs64MB_ring4x4x4_ring_chunks4", "packet", "443,931 ns"),
    ("docs/backends.md", "the packet backend finishes at 443,931 ns against the aware backend's 328,036",
     "knob_cu_rs64MB_ring4x4x4_ring_chunks4", "congestion_aware", "328,036"),
    ("docs/backends.md", "`ex_cu_all_reduce_16npus_ring`: 99,640 ns unaware and aware, 99,760 ns packet",
     "ex_cu_all_reduce_16npus_ring", "congestion_aware", "99,640 ns"),
    ("docs/backends.md", "`ex_cu_all_reduce_16npus_ring`: 99,640 ns unaware and aware, 99,760 ns packet",
     "ex_cu_all_reduce_16npus_ring", "packet", "99,760 ns"),
    ("docs/backends.md", "the case ends at 45,018,232 ns, the aware backend's 45,004,080",
     "grid_cu_all_gather_64MB_ring16_direct", "packet", "45,018,232 ns"),
    ("docs/backends.md", "the case ends at 45,018,232 ns, the aware backend's 45,004,080",
     "grid_cu_all_gather_64MB_ring16_direct", "congestion_aware", "45,004,080"),
]


def said(page: str, words: str, figure: str) -> None:
    text = " ".join((ROOT / page).read_text().split())
    assert words in text, f"{page} no longer says {words!r}: update this test with the page"
    assert figure in words


def as_written(ns: int, figure: str) -> str:
    """``ns`` in the unit and to the decimals ``figure`` is written in (``6.79 ms``, ``471 us``,
    ``49,830``: nanoseconds grouped by thousands)."""
    number, _, unit = figure.partition(" ")
    decimals = len(number.partition(".")[2])
    if unit in ("", "ns"):
        return f"{ns:,}" + (" ns" if unit else "")
    return f"{ns / {'us': 1e3, 'ms': 1e6}[unit]:.{decimals}f} {unit}"


def finish_ns(tmp_path: Path, scenario: dict) -> int:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(scenario))
    return max(r.finished_cycles for r in Simulation.from_scenario(str(path)).run())


@pytest.mark.parametrize(("page", "words", "cluster", "collective", "size", "figure"), FIGURES,
                         ids=[f"{f[0]}:{f[5]}" for f in FIGURES])
def test_a_collective_time_a_page_quotes_is_what_the_run_gives(tmp_path, page, words, cluster, collective, size,
                                                                figure):
    said(page, words, figure)
    ns = finish_ns(tmp_path, {"cluster": cluster, "workload": {"generate": "microbench", "collective": collective,
                                                                "size": size, "num_npus": cluster["gpus"]}})
    assert as_written(ns, figure) == figure, f"{page}: '{words}': the run gives {ns:,} ns"


@pytest.mark.parametrize(("page", "words", "backend", "figure"), PAIR, ids=[f"{p[0]}:{p[2]}" for p in PAIR])
def test_a_pairs_time_a_page_quotes_is_what_the_run_gives(tmp_path, page, words, backend, figure):
    said(page, words, figure)
    ns = finish_ns(tmp_path, {"backend": backend, "cluster": H100_2,
                              "workload": {"generate": "microbench", "collective": "send_recv", "size": MIB,
                                           "src": 4, "dst": 8}})
    assert as_written(ns, figure) == figure, f"{page}: '{words}': the run gives {ns:,} ns"


@pytest.mark.parametrize(("page", "words", "case", "backend", "figure"), CASES,
                         ids=[f"{c[2]}:{c[3]}" for c in CASES])
def test_a_reference_cases_time_on_another_backend_is_what_the_run_gives(reference_dir, monkeypatch, page, words,
                                                                        case, backend, figure):
    from simpy_astra.config.astra_inputs import inputs_from_astra_flags

    said(page, words, figure)
    spec = json.loads((reference_dir / "cases" / f"{case}.json").read_text())
    monkeypatch.chdir(reference_dir)  # relative paths inside configs resolve from here, as for ASTRA-sim
    inputs = inputs_from_astra_flags(spec["workload"], spec["system"], spec["network"], spec["remote_memory"],
                                     spec.get("comm_group") or "empty", backend)
    ns = max(r.finished_cycles for r in Simulation(inputs).run())
    assert as_written(ns, figure) == figure, f"{page}: '{words}': the run gives {ns:,} ns"


def test_a_figure_is_read_in_the_unit_and_decimals_it_is_written_in():
    assert [as_written(6_790_504, "6.79 ms"), as_written(470_706, "471 us"), as_written(49_830, "49,830"),
            as_written(49_939, "49,939 ns"), as_written(12_323_416, "12.3 ms")] == [
        "6.79 ms", "471 us", "49,830", "49,939 ns", "12.3 ms"]
