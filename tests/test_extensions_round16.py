"""Round sixteen of extensions written from the docs (the earlier rounds:
``test_extensions_round15.py`` and before): a researcher's next steps after the guides' recipes
(a LogGP backend that counts in ``Decimal``, a chordal ring, a direct reduce-scatter in a few
lines, a generator handing back its groups as a ``pathlib.Path``, GPipe as a Megatron pipeline
schedule and swept against 1F1B) and the mistakes of a first try (hops as a float, a peer past
the ring, a schedule generator whose loop never ends), each against a closed form derived here
or the one line the docs promise. Their module: ``tests/data/round16/r16.py``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.researcher_folder import module_fixture
from tests.test_extensions_round4 import E, L, d, reduce_ns, ring_all_reduce
from tests.test_extensions_round6 import _cli, _quiet_ns, _system, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

R16 = Path(__file__).resolve().parent / "data" / "round16" / "r16.py"
#: a folder of the researcher's own holding r16.py, the working directory
r16 = module_fixture(R16)
#: examples/weights_last.yaml's job: 4 stages of 8 micro-batches on 4 A100s
PIPELINE_JOB = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
                "--global-batch-size 8 --pipeline-model-parallel-size 4 --bf16")


def test_a_backend_that_counts_its_overhead_in_decimal_is_cut_as_a_float_is(r16: Path) -> None:
    """docs/backends.md: ``message_delay_ns`` returns ns >= 0, a fraction cut to whole ns. A
    researcher who keeps the LogGP overhead exact, ``Decimal("300.25")`` at each end, was told
    ``returned Decimal('3541.5'); it must return a finite number of ns >= 0``, of a finite
    number >= 0. Now it is cut as a float is: each of the ring's messages takes d + 600."""
    size, n = 8192, 4
    path = _write(r16, "loggp.yaml", _bench("all_reduce", size, n), _net("Ring", n), "loggp16",
                  extra="plugins: [r16]\n")
    expected = ring_all_reduce(n, size, lambda s: d(s) + 600)
    assert _quiet_ns(_cli(r16, "run", path.name, "--quiet")) == expected == 10 + 6 * (2548 + 600 + 10) + 9 * 40


@pytest.mark.parametrize("dst, hops", [(4, 1), (3, 2), (5, 2), (2, 2), (1, 1)])
@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_chordal_ring_takes_its_chord_where_it_saves_hops(r16: Path, backend, dst, hops) -> None:
    """docs/collectives.md's topology class: a ring of 8 whose NPUs also link to the one
    opposite. 0 -> 4 is the chord, 0 -> 3 and 0 -> 5 the chord and one ring link, 0 -> 2 two
    ring links. Analytical: trunc(hops L + S/B); store and forward: hops x trunc(L + S/B)."""
    size = 4096
    workload = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, src: 0, dst: {dst}}}"
    path = _write(r16, "chord.yaml", workload, _net("'r16:ChordalRing'", 8), backend)
    expected = d(size, latency=hops * L) if backend == "congestion_unaware" else hops * d(size)
    assert _quiet_ns(_cli(r16, "run", path.name, "--quiet")) == expected


def test_a_topology_whose_hops_come_out_as_floats_is_one_line_naming_the_method(r16: Path) -> None:
    path = _write(r16, "chord.yaml", "{generate: microbench, collective: send_recv, size: 4096, num_npus: 8, src: 0, "
                                     "dst: 3}", _net("'r16:ChordalRingFloatHops'", 8), "congestion_unaware")
    line = _one_line(_cli(r16, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: chord.yaml: network: field 'topology[0]' (r16:ChordalRingFloatHops): hops(")
    assert "returned 1.0; expected an integer >= 1" in line and line.endswith("fix ChordalRingFloatHops.hops() in "
                                                                           f"{r16 / 'r16.py'}")


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_direct_reduce_scatter_in_a_few_lines(r16: Path, backend) -> None:
    """collectives/README.md: each of 4 fully connected NPUs posts its S/4 pieces to the other
    three at once (each on a link of its own), waits for theirs, then reduces the three it
    received in one endpoint: d(S/4) + E + 3 reads and writes of 3 S/4."""
    size = 8192
    system = _system().replace("reduce-scatter-implementation: [ring]", "reduce-scatter-implementation: "
                                                                        "['r16:DIRECT_RS']")
    path = _write(r16, "rs.yaml", _bench("reduce_scatter", size, 4), _net("FullyConnected", 4), backend, system=system)
    expected = d(size // 4) + E + reduce_ns(3 * size // 4)
    assert _quiet_ns(_cli(r16, "run", path.name, "--quiet")) == expected == 2548 + 10 + 366


def test_a_reduce_scatter_that_names_a_peer_past_the_ring_is_one_line(r16: Path) -> None:
    system = _system().replace("reduce-scatter-implementation: [ring]", "reduce-scatter-implementation: "
                                                                        "['r16:OFF_BY_ONE_RS']")
    path = _write(r16, "rs.yaml", _bench("reduce_scatter", 8192, 4), _net("FullyConnected", 4), "congestion_unaware",
                  system=system)
    line = _one_line(_cli(r16, "run", path.name, "--quiet", status=2))
    assert "collective algorithm 'direct_reduce_scatter_off_by_one' (" in line and "r16.py:" in line
    assert "ctx.post(4, ...): the peer does not exist (NPUs 0..3); name another NPU of ctx.members" in line


def test_a_generator_that_hands_back_its_groups_as_a_path_runs(r16: Path) -> None:
    """docs/generators.md: a generator returns None or the path of the comm-group JSON it
    wrote, ``prefix + ".json"``; handed back as a ``pathlib.Path`` it is that path. The
    pipeline's last stage: 4 x 10 us + 3 x trunc(L + 65,536 B at 1 B/ns)."""
    path = _write(r16, "pipe.yaml", "{generate: 'r16:pipeline_path', stages: 4, size: 65536, compute_us: 10}",
                  _net("Ring", 4), "congestion_unaware")
    assert _quiet_ns(_cli(r16, "run", path.name, "--quiet")) == 4 * 10_000 + 3 * d(65536) == 238_108


def test_gpipe_as_a_megatron_schedule_swept_against_1f1b_beside_a_first_try_that_never_ends(r16: Path) -> None:
    """docs/megatron.md: a schedule of one's own, ``module:function``, is a sweep axis. GPipe
    (every forward, then every backward) on uniform stages runs the critical path 1F1B runs,
    (m + p - 1)(tf + tb) with the same sends, so the two steps take the same time; 1F1B only
    holds fewer activations. The first try, a generator whose loop over micro-batches never
    ends, hung the sweep (and ``run``) for ever while its tasks were read; now its point fails
    in one line naming ``workload.schedule`` and the fix, and the others run."""
    sweep = r16 / "sched.yaml"
    sweep.write_text("base:\n  workload:\n    generate: megatron\n"
                     f"    args: \"{PIPELINE_JOB}\"\n  cluster: {{preset: dgx-a100-80gb, gpus: 4}}\n"
                     "axes:\n  workload.schedule: [1f1b, 'r16:gpipe', 'r16:gpipe_endless']\n"
                     "minimise: iteration_time_ns\n")
    _cli(r16, "sweep", sweep.name, "--out", "out", "--jobs", "1")
    rows = {row["workload.schedule"]: row for row in csv.DictReader((r16 / "out" / "results.csv").open())}
    assert rows["1f1b"]["status"] == rows["r16:gpipe"]["status"] == "ok"
    assert rows["r16:gpipe"]["iteration_time_ns"] == rows["1f1b"]["iteration_time_ns"] != ""
    endless = rows["r16:gpipe_endless"]
    assert endless["status"] == "error" and "it gave more than 24 tasks, the most a stage runs" in endless["error"]
    assert endless["error"].endswith("a generator that never returns? end its loop after the last task")
    (r16 / "endless.yaml").write_text(f"workload:\n  generate: megatron\n  schedule: r16:gpipe_endless\n"
                                      f"  args: \"{PIPELINE_JOB}\"\ncluster: {{preset: dgx-a100-80gb, gpus: 4}}\n")
    line = _one_line(_cli(r16, "run", "endless.yaml", "--quiet", status=2))
    assert line.startswith("error: endless.yaml: workload.schedule: pipeline schedule 'r16:gpipe_endless': for stage "
                           "0 of 4 (8 micro-batches, 1 chunk(s)) it gave more than 24 tasks"), line


def test_a_link_model_that_keeps_its_gap_as_a_decimal_is_cut_as_a_float_is(r16: Path) -> None:
    """simpy_astra/network/README.md: ``hold_ns(item)`` returns how long an item waits before
    it starts, a fraction cut. A gap kept exact, ``Decimal("200.5")``, was refused as not 'a
    finite number of ns >= 0'; now each of the two links (NPU, switch, NPU) holds 200 ns before
    its hop: 2 x (200 + trunc(L + S/B))."""
    size = 4096
    workload = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, src: 0, dst: 1}}"
    net = _net("Switch", 8, ", link-model: {class: 'r16:DecimalPacedLink', gap_ns: '200.5'}")
    path = _write(r16, "paced.yaml", workload, net, "congestion_aware")
    assert _quiet_ns(_cli(r16, "run", path.name, "--quiet")) == 2 * (200 + d(size)) == 9592


def test_watchers_of_ones_own_count_the_direct_reduce_scatters_messages(r16: Path) -> None:
    """docs/cosimulation.md's ``sim.on`` and a link's ``watch``, on the direct reduce-scatter
    (congestion-aware, 4 fully connected NPUs): n(n-1) = 12 messages of S/4 delivered, each
    NPU's collective ending at d(S/4) + E + reduce(3 S/4), and link 0 -> 1 carrying NPU 0's one
    piece for NPU 1. A milestone or probe point misspelt is a ValueError listing the real ones."""
    from simpy_astra.simulation import Simulation

    size = 8192
    system = _system().replace("reduce-scatter-implementation: [ring]", "reduce-scatter-implementation: "
                                                                        "['r16:DIRECT_RS']")
    path = _write(r16, "rs.yaml", _bench("reduce_scatter", size, 4), _net("FullyConnected", 4), "congestion_aware",
                  system=system)
    sim = Simulation.from_scenario(str(path))
    delivered, ends, on_link = [], [], []
    sim.on("message_delivered", lambda seen: delivered.append((seen.npu, seen.peer, seen.size_bytes)))
    sim.on("collective_end", lambda seen: ends.append((seen.npu, seen.what, seen.time_ns)))
    sim.network.link(0, 1).watch("link_start", lambda link, key, size_bytes: on_link.append(size_bytes))
    with pytest.raises(ValueError, match="no milestone 'message_deliverd'; choose one of: message_sent, "
                                         "message_delivered"):
        sim.on("message_deliverd", print)
    sim.run()
    end_ns = d(size // 4) + E + reduce_ns(3 * size // 4)
    assert sorted(delivered) == [(a, b, size // 4) for a in range(4) for b in range(4) if a != b]
    assert sorted(ends) == [(npu, "reduce_scatter", end_ns) for npu in range(4)] and on_link == [size // 4]


def test_a_sweep_over_the_decimal_gap_of_ones_own_link_model(r16: Path) -> None:
    """docs/sweeps.md: an axis may name a link model's parameter (``network.link-model.gap_ns``).
    The paced link's gap as Decimal text, swept: each point 2 x (cut gap + trunc(L + S/B))."""
    size = 4096
    workload = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, src: 0, dst: 1}}"
    net = _net("Switch", 8, ", link-model: {class: 'r16:DecimalPacedLink', gap_ns: '0'}")
    base = _write(r16, "paced.yaml", workload, net, "congestion_aware")
    (r16 / "gaps.yaml").write_text(f"base: {base.name}\naxes:\n  network.link-model.gap_ns: ['0.5', '200.5', '1e3']\n")
    _cli(r16, "sweep", "gaps.yaml", "--out", "out", "--jobs", "1")
    rows = {row["network.link-model.gap_ns"]: int(row["finish_ns"])
            for row in csv.DictReader((r16 / "out" / "results.csv").open())}
    assert rows == {gap: 2 * (int(float(gap)) + d(size)) for gap in ("0.5", "200.5", "1e3")} \
        == {"0.5": 9192, "200.5": 9592, "1e3": 11192}
