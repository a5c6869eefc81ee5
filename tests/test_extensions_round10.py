"""Extensions written from the docs alone, tenth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round9.py``, ``test_extension_*.py``) and is checked against a figure derived here from the
closed forms the docs state, or, for a mistake of the researcher's, against the one line the
docs promise. The researcher's module is ``tests/data/round10/r10.py``.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns: one hop of S
bytes takes ``d(S) = trunc(L + S / B)`` = L + S; ``E`` is the endpoint delay and ``P(x)`` the
reduction of x bytes (collectives/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import E, L, d, reduce_ns
from tests.test_extensions_round6 import _cli, _finished, _write
from tests.test_extensions_round7 import _bench, _net, _system
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R10 = HERE / "data" / "round10" / "r10.py"


@pytest.fixture
def r10(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r10.py and the docs' hypercube.py it builds on,
    the working directory; the registries
    (pipeline schedules too) are left as they were found."""
    from simpy_astra.workloads.schedules import registry

    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    modules = {"r10": R10.read_text(), "hypercube": (HERE.parent / "examples" / "hypercube.py").read_text()}
    with researcher_folder(tmp_path, monkeypatch, modules) as folder:
        yield folder


# -- a backend of one's own that misuses the message board ------------------------------------------

def test_a_backend_that_schedules_one_message_twice_is_named(r10):
    """docs/backends.md: `send` posts the message and schedules its arrival with
    `self.board.arrive_after(delay_ns, entry)`. A backend that called it twice for one entry
    (a retransmitted copy) delivered every message twice and printed a wrong success; now the
    second call is one line naming the backend, the message and the fix. The first message of
    the ring all-reduce is NPU 0's 1,024 B to NPU 1, due after d(1024)."""
    path = _write(r10, "dup.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "r10:DUPLICATING")
    line = _one_line(_cli(r10, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: network backend 'r10:Duplicating', send(): board.arrive_after(")
    assert line.endswith(f"the message of 1024 B from NPU 0 to NPU 1 (tag 500000000) was already given its arrival, "
                         f"at {E + d(1024):,} ns: call arrive_after once per entry")


# -- a process of one's own at the run's last instant ---------------------------------------------

def test_an_error_raised_in_the_last_instant_by_a_process_the_finish_did_not_resume_is_not_lost():
    """docs/cosimulation.md: `sim.npu_finished(i)` is NPU i's process, an event whose value is
    its report. A process that waited on the NPU to finish last and raised in that instant had
    its failure queued behind the run's stop, and `sim.run()` returned every report as if
    nothing happened; its error now comes out of `sim.run()`, as SimPy raises a failed
    process's. The run still ends at the closed form of docs/cosimulation.md's ring:
    6 (trunc(500 + 2^18 / (50 x 2^30 / 10^9)) + 10) + 10 = 32,362 ns."""
    from simpy_astra.simulation import Simulation

    scenario = str(HERE.parent / "examples" / "cosim_ring.yaml")
    last = Simulation.from_scenario(scenario).run()[-1].npu_id
    sim = Simulation.from_scenario(scenario)
    read = []

    def report(env):
        mine = yield sim.npu_finished(last)
        read.append((env.now, mine.finished_ns))
        raise ZeroDivisionError("a report of one's own dividing by the wrong figure")

    sim.env.process(report(sim.env))
    with pytest.raises(ZeroDivisionError, match="a report of one's own"):
        sim.run()
    assert read == [(32_362, 32_362)]


def test_a_process_that_loops_within_the_last_instant_does_not_hold_the_run():
    """The run ends behind what is queued for its last instant; a process of one's own that
    keeps yielding `env.timeout(0)` there is left behind after a bounded number of rounds,
    and the reports are the closed form's."""
    from simpy_astra.engine.events import LAST_INSTANT_ROUNDS
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(HERE.parent / "examples" / "cosim_ring.yaml"))
    turns = []

    def spin(env):
        yield sim.finished
        while True:
            turns.append(env.now)
            yield env.timeout(0)

    sim.env.process(spin(sim.env))
    assert {r.finished_ns for r in sim.run()} == {32_362}
    assert 1 < len(turns) <= LAST_INSTANT_ROUNDS + 1 and set(turns) == {32_362}


# -- a topology and an algorithm by registry entry, from YAML and from sweep axes -----------------

def test_a_registered_cube_and_recursive_doubling_from_yaml_and_a_sweep(r10):
    """A plug-in (`plugins: [r10]`) registers a topology `Cube` and an all-reduce `rd`
    (docs/collectives.md); the scenario names them by those names, and a sweep varies both
    (docs/sweeps.md: an axis value may be anything of yours a scenario can name). Recursive
    doubling exchanges the whole buffer S with index XOR 2^k, then reduces it: on a cube each
    step is one link, d(S) + E + P(S); on the ring, 2^k links charged as one path, trunc(2^k L
    + S) + E + P(S). A cube of 6 NPUs fails its point with the class's own words."""
    n, size = 8, 4096
    path = _write(r10, "cube.yaml", _bench("all_reduce", size, n), _net("Cube", n), "congestion_unaware",
                  _system(all_reduce="rd"), extra="plugins: [r10]\n")
    step = E + reduce_ns(size)
    assert set(_finished(path).values()) == {3 * (d(size) + step)}
    (r10 / "sweep.yaml").write_text("base: cube.yaml\naxes:\n  network.topology: [[Cube], [Ring]]\n"
                                    "  network.npus_count: [[8], [6]]\n")
    done = _cli(r10, "sweep", "sweep.yaml", "--out", "out", status=0)
    rows = {(r["network.topology"], r["network.npus_count"]): r for r in _rows(r10 / "out" / "results.csv")}
    assert int(rows['["Cube"]', "[8]"]["finish_ns"]) == 3 * (d(size) + step)
    assert int(rows['["Ring"]', "[8]"]["finish_ns"]) == sum(int(h * L + size) + step for h in (1, 2, 4))
    assert "a cube has a power of two of NPUs (got 6): write npus_count: [8]" in rows['["Cube"]', "[6]"]["error"]
    assert "Traceback" not in done.stderr


def _rows(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# -- a pipeline schedule of one's own -------------------------------------------------------------

MEGATRON_V2 = """workload:
  generate: megatron
  schedule: {schedule}
  args: >-
    --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1
    --global-batch-size 8 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 --bf16
cluster: {{preset: dgx-a100-80gb, gpus: 2}}
"""


def test_a_schedule_that_hands_on_interleaved_1f1b_runs_megatrons_step_when_it_says_it_overlaps(r10):
    """docs/megatron.md: a schedule of one's own is a function returning each stage's tasks.
    One returning interleaved 1F1B's very orders ran a different step: interleaved 1F1B waits
    for a gradient send only after the next backward (`overlap_p2p_comm`, Megatron's default),
    and the generator gave that to the schedule of that name alone. A schedule now says so
    (`fn.overlap_p2p_comm = True`) and runs Megatron's step to the nanosecond; one that does
    not waits for each send at once, which can only take longer."""
    from simpy_astra.simulation import Simulation

    def step_ns(schedule: str) -> int:
        (r10 / "m.yaml").write_text(MEGATRON_V2.format(schedule=schedule))
        sim = Simulation.from_scenario(str(r10 / "m.yaml"))
        sim.run()
        return sim.training().iteration_time_ns

    megatron = step_ns("interleaved-1f1b")
    assert step_ns("r10:interleaved_again") == megatron
    assert step_ns("r10:interleaved_blocking") > megatron


@pytest.mark.parametrize("key, value, fix", [
    ("plugins", "[r10]", "plug-ins are the base scenario's: write plugins: [MODULE] there, or pass sweep --plugin "
                         "MODULE"),
    ("network", "{bandwidth: [25.0]}", "it is a field of the scenario: set it in the base scenario, or vary it on "
                                       "an axis (axes: {network.FIELD: [VALUES]})"),
    # a field of one value is an axis itself: 'num_queues_per_dim.FIELD' named no field
    ("num_queues_per_dim", "2", "it is a field of the scenario: set it in the base scenario, or vary it on an "
                                "axis (axes: {num_queues_per_dim: [VALUES]})"),
    ("comm_groups", "groups.json", "it is a field of the scenario: set it in the base scenario, or vary it on an "
                                   "axis (axes: {comm_groups: [VALUES]})"),
])
def test_a_scenario_field_written_in_the_sweep_file_is_told_where_it_belongs(r10, key, value, fix):
    """docs/sweeps.md: `--plugin MODULE` joins the base scenario's `plugins:`. A researcher
    who wrote `plugins: [r10]` (or a fixed `network:`) in the sweep file itself was told only
    the eight keys a sweep has; the line now says where the field goes."""
    _write(r10, "cube.yaml", _bench("all_reduce", 4096, 8), _net("Cube", 8), "congestion_unaware",
           _system(all_reduce="rd"), extra="plugins: [r10]\n")
    (r10 / "sweep.yaml").write_text(f"base: cube.yaml\n{key}: {value}\naxes:\n  backend: [congestion_unaware]\n")
    line = _one_line(_cli(r10, "sweep", "sweep.yaml", "--list", status=2))
    assert line == f"error: sweep.yaml: field '{key}' is not a sweep field; {fix}"


# -- hooks on a Megatron job on a cluster preset --------------------------------------------------

MEGATRON_TP2 = """workload:
  generate: megatron
  args: >-
    --num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1
    --global-batch-size 4 --tensor-model-parallel-size 2 --bf16
cluster: {preset: dgx-a100-80gb, gpus: 4}
"""


def test_collective_hooks_fire_for_the_collectives_nccls_model_times(r10):
    """docs/cosimulation.md: `sim.on("collective_start" | "collective_end", fn)` fires in the
    instant of each collective, and `sim.stream(kind)` hands them to a process. On a cluster
    preset, where NCCL's model times the all-reduces, neither ever fired: a Megatron job's 27
    all-reduces on NPU 0 (tp 2 x dp 2) went unseen. Now each fires once per collective node of
    NPU 0's trace (`--csv-out`'s nodes.csv, `type` COMM_COLL), `collective_end` at the node's
    `end_ns`."""
    import csv

    from simpy_astra.simulation import Simulation

    (r10 / "m.yaml").write_text(MEGATRON_TP2)
    _cli(r10, "run", "m.yaml", "--quiet", "--csv-out", "csv")
    with open(r10 / "csv" / "nodes.csv", newline="") as f:
        ends = sorted(int(r["end_ns"]) for r in csv.DictReader(f) if r["npu"] == "0" and r["type"] == "COMM_COLL")
    sim = Simulation.from_scenario(str(r10 / "m.yaml"))
    seen = {"collective_start": [], "collective_end": []}
    for kind, got in seen.items():
        sim.on(kind, lambda o, got=got: got.append((o.npu, o.what, o.time_ns)))
    streamed = sim.stream("collective_end")
    sim.run()
    # 27 all-reduces, and the micro-batches' batch broadcasts over tp (batch_fetch), timed by NCCL's model too
    assert len(ends) > 27
    assert len(seen["collective_start"]) == len(ends) and len(streamed.items) == len(ends)
    assert sorted(t for _, _, t in seen["collective_end"]) == ends
    whats = [what for npu, what, _ in seen["collective_end"] if npu == 0]
    assert len(whats) == len(ends) and whats.count("all_reduce") == 27
    assert set(whats) == {"all_reduce", "broadcast"}


# -- a workload generator of one's own, in two jobs ---------------------------------------------------

def test_two_jobs_of_a_generator_that_names_its_groups_break_down_by_tp_and_dp(r10):
    """docs/generators.md: a generator that names its groups' dimensions in every rank's
    metadata gets `comm.tp` and `comm.dp` in the breakdown. Two jobs of it (docs/jobs.md:
    4 ranks each, strided on an 8-NPU ring) broke down by `comm.group 1` .. `comm.group 4`,
    each job's groups apart from its dimension; now by dimension. Job a's ranks are NPUs 0, 2,
    4, 6: its tp pair (0, 2) is a 2-ring two links apart, its dp pair (0, 4) four: the native
    ring on 2 members, E + 2 (trunc(h L + S/2) + E) + P(S/2), each (analytical backend)."""
    size = 4096
    (r10 / "jobs.yaml").write_text(
        f"network: {_net('Ring', 8)}\nbackend: congestion_unaware\nsystem: {_system()}\njobs:\n"
        + "".join(f"  - {{name: {name}, placement: strided, workload: {{generate: 'r10:tp_then_dp', num_npus: 4, "
                  f"size: {size}}}}}\n" for name in "ab"))
    done = _cli(r10, "run", "jobs.yaml")
    rows = {ln.split()[0]: ln.split()[1] for ln in done.stderr.splitlines() if ln.strip().startswith("comm.")}

    def pair(hops: int) -> int:
        return E + 2 * (int(hops * L + size // 2) + E) + reduce_ns(size // 2)

    assert rows == {"comm.tp": f"{pair(2):,}", "comm.dp": f"{pair(4):,}"}
