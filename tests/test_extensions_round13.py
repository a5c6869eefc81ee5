"""Extensions written from the docs alone, thirteenth round: each differs from the docs'
examples and from the earlier rounds (``test_extensions_from_docs.py``,
``test_extensions_round2.py`` .. ``round12.py``, ``test_extension_*.py``) and is checked against
a figure derived here from the closed forms the docs state, or, for a mistake of the
researcher's, against the one line the docs promise. The researcher's module is
``tests/data/round13/r13.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.researcher_folder import module_fixture
from tests.test_extensions_round4 import ring_all_reduce
from tests.test_extensions_round6 import _cli, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R13 = HERE / "data" / "round13" / "r13.py"


#: a folder of the researcher's own holding r13.py, the working directory
r13 = module_fixture(R13)


# -- a backend of one's own that posts each message once ---------------------------------------------

def test_a_backend_of_ones_own_posting_once_gives_the_native_ring(r13):
    """docs/backends.md: a backend's ``send`` posts the message with ``entry =
    self.board.post_send(...)`` and gives it its arrival; posting once gives the native ring's
    figure, E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n). (One that posts twice:
    ``test_extensions_round14.py``.)"""
    once = _write(r13, "once.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r13:SENDS_ONCE'")
    assert f"iteration time {ring_all_reduce(4, 4096):,} ns" in _cli(r13, "run", once.name, "--quiet").stdout


# -- validate and calibrate with a plug-in's backend -------------------------------------------------

A100 = HERE / "data" / "nccl" / "dgx-a100-superbench"
RING_SYSTEM = ('{"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10, '
               '"active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": 1000000, '
               '"all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"], '
               '"reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}')


def _log_and_loggp(folder: Path) -> None:
    """The DGX A100 all-reduce log's rows up to 4 KiB, docs/backends.md's loggp.py and a system
    whose all-reduce is one ring (14 messages one after another on 8 GPUs)."""
    lines = (A100 / "all_reduce.log").read_text().splitlines()
    (folder / "ar.log").write_text("\n".join(lines[:32]) + "\n")
    (folder / "loggp.py").write_text((HERE.parent / "examples" / "loggp.py").read_text())
    (folder / "ring.json").write_text(RING_SYSTEM)


def _csv_column(path: Path, column: str) -> list[float]:
    import csv

    with open(path) as f:
        return [float(row[column]) for row in csv.DictReader(f)]


@pytest.mark.parametrize("backend", ["loggp", "loggp:LOGGP"])
def test_validate_and_calibrate_take_a_plugins_backend(r13, backend):
    """docs/calibration.md: ``--backend`` fits and validates with that backend, and
    docs/backends.md: a plug-in's backend is picked "as any backend". ``validate`` and
    ``calibrate`` took only the built-in three (argparse's "invalid choice: 'loggp'"), and had
    no ``--plugin``. They now take a plug-in's, as ``run`` does. LogGP adds 2 o = 600 ns to
    each message: validate's ring all-reduce on 8 GPUs, 2 (n - 1) = 14 messages one after
    another, is 8.4 us slower at every size than on congestion_unaware; calibrate, fitting a
    message's time, gives the links 600 / 2 = 300 ns less latency (two links a message on a
    Switch), the same bandwidth."""
    _log_and_loggp(r13)
    net = str(A100 / "network.yml")
    simulated, fitted = {}, {}
    for name, plugin in ((backend, ["--plugin", "loggp"] if ":" not in backend else []), ("congestion_unaware", [])):
        _cli(r13, "validate", "ar.log", "--network", net, "--system", "ring.json", "--out", f"v{len(plugin)}",
             "--backend", name, *plugin)
        simulated[name] = _csv_column(r13 / f"v{len(plugin)}" / "validate.csv", "simulated_us")
        _cli(r13, "calibrate", "ar.log", "--network", net, "--system", "ring.json", "--out", f"c{len(plugin)}",
             "--min-size", "1", "--backend", name, *plugin)
        out = r13 / f"c{len(plugin)}"
        fitted[name] = yaml.safe_load((out / "network.yml").read_text())
        assert json.loads((out / "calibration.json").read_text())["backend"] == name.partition(":")[0]
    assert [round(a - b, 3) for a, b in zip(simulated[backend], simulated["congestion_unaware"], strict=True)] \
        == [8.4] * len(simulated[backend])
    assert fitted[backend]["bandwidth"] == fitted["congestion_unaware"]["bandwidth"]
    assert round(fitted["congestion_unaware"]["latency"][0] - fitted[backend]["latency"][0], 3) == 300.0


# -- an installed package's entry point named like one of ours ----------------------------------------

def _package(folder: Path, entry_points: str) -> Path:
    """A folder on PYTHONPATH holding an installed package 'ringpkg' that declares ``entry_points``."""
    info = folder / "site" / "ringpkg-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ringpkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return folder / "site"


@pytest.mark.parametrize("group, name, field, ours", [
    ("simpy_astra.collectives", "ring", "system: field 'all-reduce-implementation[0]'",
     "simpy_astra.collectives.ring:ring"),
    ("simpy_astra.topologies", "Ring", "network: field 'topology[0]'", "simpy_astra.topologies.ring:Ring"),
    ("simpy_astra.links", "fifo", "network: field 'link-model'", "simpy_astra.network.models.process_link:ProcessLink"),
])
def test_an_entry_point_named_like_one_of_ours_is_refused_naming_both(r13, group, name, field, ours):
    """docs/collectives.md: an algorithm, topology or model may come from an entry point of an
    installed package, "the entry point's name is the name configs use". One named like ours
    (`ring`, `Ring`, `fifo`) was never loaded: the registry is asked first, so the config ran
    ours in its place and said nothing. It is now one line naming both and the fixes; a
    package whose entry point has a name of its own leaves a run of ours alone (the native
    ring's E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n))."""
    path = _write(r13, "s.yaml", _bench("all_reduce", 4096, 4),
                  _net("Ring", 4, extra=", link-model: fifo"), "congestion_aware")
    site = _package(r13, f"[{group}]\n{name} = r13:Resends\nmine = r13:Resends\n")
    line = _one_line(_cli(r13, "run", path.name, "--quiet", status=2, path=site))
    assert line.startswith(f"error: s.yaml: {field} "), line
    assert f"entry point '{name}' of {group} (r13:Resends), declared by ringpkg, has the name of simpy-astra's own " \
           f"{ours}, which '{name}' runs: the entry point would never run; rename it in ringpkg, or name it as " \
           f"r13:Resends in the config" in line, line
    (site / "ringpkg-0.1.dist-info" / "entry_points.txt").write_text(f"[{group}]\nmine = r13:Resends\n")
    done = _cli(r13, "run", path.name, "--quiet", path=site)
    assert f"iteration time {ring_all_reduce(4, 4096):,} ns" in done.stdout


# -- a co-simulation process that stops letting time pass ---------------------------------------------

MONITOR = '''
import sys

from simpy_astra.simulation import Simulation

sim = Simulation.from_scenario("cosim_ring.yaml")
env, link = sim.env, sim.network.link(0, 1)


def monitor(env, link, samples, every_ns, slip_at_ns):
    last = 0
    while True:
        if env.now >= slip_at_ns:
            every_ns = int(every_ns / 1e3)  # a unit slip, made at every sample: 1,000 ns, then 1, then 0
        yield env.timeout(every_ns)
        samples.append(link.busy_ns - last)
        last = link.busy_ns


samples = []
env.process(monitor(env, link, samples, 1000, float(sys.argv[1])))
print(max(r.finished_ns for r in sim.run()), sum(samples))
'''


def test_a_cosimulation_process_that_polls_at_0_ns_mid_run_is_one_line_not_a_hang(r13):
    """docs/cosimulation.md: a process of one's own added to ``sim.env`` (its monitor samples
    link 0->1 every 1,000 ns); the run ends when every NPU has finished, and "a collective
    phase that loops on timers of 0 ns is stopped at once". A monitor whose interval became 0
    mid-run (a unit slip, ``int(every_ns / 1e3)`` at every sample from 5,000 ns on: 1 ns, then 0
    from 5,001 ns) held the clock at that instant and ``sim.run()`` never returned. It now
    raises one line naming the process, the instant, its line and the fix. Without the slip the run ends at the docs' 6 (d(2^18) + E) + E = 32,362 ns and the
    samples add up to the link's busy time, 6 x trunc(2^18 / B) = 29,292 ns (docs: 29,292)."""
    import subprocess
    import sys

    (r13 / "cosim_ring.yaml").write_text((HERE.parent / "examples" / "cosim_ring.yaml").read_text())
    (r13 / "monitor.py").write_text(MONITOR)
    run = [sys.executable, "monitor.py"]
    right = subprocess.run([*run, "1e12"], cwd=r13, capture_output=True, text=True, timeout=300)
    assert right.stdout.split() == ["32362", str(6 * int(2**18 / (50 * 2**30 / 1e9)))] == ["32362", "29292"]
    slip = subprocess.run([*run, "5000"], cwd=r13, capture_output=True, text=True, timeout=300)
    last = slip.stderr.strip().splitlines()[-1]
    assert last.startswith("simpy_astra.plugins.PluginError: process 'monitor' was resumed 100,000 times at 5,001 ns "
                           "without simulated time passing (at "), last
    assert "monitor.py:15): " in last and "wait for what it polls" in last


def test_a_stream_reader_resumed_by_a_burst_in_one_instant_is_not_taken_for_a_poll(monkeypatch):
    """The check above counts the resumes a process polls for (a timer, an event that had
    happened), not those for what comes: a reader of ``sim.stream("message_sent")`` is resumed
    once per message, and a burst may bring more in one instant than the limit. With the limit
    at 3, the docs' ring (cosim_ring.yaml) sends one message per NPU after the endpoint delay,
    4 at E = 10 ns; the reader sees all 2 (n - 1) n = 24 and the run ends at its 32,362 ns,
    while a poller at 0 ns is stopped after 3 rounds."""
    from simpy_astra import plugins
    from simpy_astra.infra import zero_time
    from simpy_astra.simulation import Simulation

    monkeypatch.setattr(zero_time, "ZERO_TIME_RESUMES", 3)
    sim = Simulation.from_scenario(str(HERE.parent / "examples" / "cosim_ring.yaml"))
    stream, seen = sim.stream("message_sent"), []

    def reader(env):
        while True:
            seen.append(((yield stream.get()).time_ns, env.now))

    sim.env.process(reader(sim.env))
    assert max(r.finished_ns for r in sim.run()) == 32_362
    assert len(seen) == 24 and [t for t, now in seen if t == now == 10] == [10] * 4

    sim = Simulation.from_scenario(str(HERE.parent / "examples" / "cosim_ring.yaml"))

    def poller(env):
        while True:
            yield env.timeout(0)

    sim.env.process(poller(sim.env))
    with pytest.raises(plugins.PluginError, match="process 'poller' was resumed 3 times at 0 ns"):
        sim.run()


# -- a collective whose message size is divided with / ------------------------------------------------

def test_a_collective_that_divides_its_size_with_a_slash_is_told_to_use_floor_division(r13):
    """collectives/README.md: ``msg = ctx.size_bytes // n``. Written with ``/`` (262,144.0
    bytes for 1 MiB on 4 NPUs, a whole number as a float) the run stopped saying only that "a
    message size is an integer number of bytes", which the researcher believes it is; the
    line now says what made it a float and the fix. The docs' own (``//``) gives their
    2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n) = 79,530 ns."""
    (r13 / "my_algos.py").write_text((HERE.parent / "examples" / "my_algos.py").read_text())
    scenario = (HERE.parent / "examples" / "simple_ring.yaml").read_text()
    (r13 / "simple_ring.yaml").write_text(scenario)
    assert "iteration time 79,530 ns" in _cli(r13, "run", "simple_ring.yaml", "--quiet").stdout
    (r13 / "slash.yaml").write_text(scenario.replace("my_algos:SIMPLE_RING", "r13:slash_ring"))
    line = _one_line(_cli(r13, "run", "slash.yaml", "--quiet", status=2))
    assert "collective algorithm 'slash_ring'" in line and "ctx.send(..., 262144.0)" in line, line
    assert line.endswith("a size divided with / is a float: divide with // (ctx.size_bytes // n)"), line


# -- a backend registered with its class as the build -------------------------------------------------

DOUBLED = '''
from simpy_astra.network.backends import BackendSpec, register
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class Doubled(CongestionUnawareNetwork):
    def message_delay_ns(self, src, dst, size_bytes):
        return 2 * super().message_delay_ns(src, dst, size_bytes)


DOUBLED = register(BackendSpec("doubled", "twice the analytical delay", BUILD, folds="pairs", folded=None))
'''


def test_a_backend_registered_with_its_class_as_build_is_told_the_function_to_write(r13):
    """docs/backends.md: ``BackendSpec(name, help, build, folds, folded)`` with ``build(env,
    dims, source, config=None)`` returning the network. Handed the class itself (``build=
    Doubled``, whose ``__init__`` takes ``(env, dims, rails=None)``), the refusal printed the
    signature of our base's ``__init__``, rails and all; it now names the class and the
    function to write. Written so, each of the ring all-reduce's 14 messages (1 MiB on 8 NPUs
    at 50 GB/s) takes twice d(S/8): E + 14 (2 d(S/8) + E)."""
    from tests.test_extensions_round4 import d

    (r13 / "loggp_ring.yaml").write_text((HERE.parent / "examples" / "loggp_ring.yaml").read_text()
                                         .replace("[loggp]", "[doubled]").replace("backend: loggp", "backend: doubled"))
    (r13 / "doubled.py").write_text(DOUBLED.replace("BUILD", "Doubled"))
    line = _one_line(_cli(r13, "run", "loggp_ring.yaml", "--quiet", status=2))
    assert "network backend 'doubled': build is the class Doubled, which cannot be called as build(env, dims, " \
           "source, config=None); give a function that makes one: lambda env, dims, source, config=None: " \
           "Doubled(env, dims)" in line and "rails" not in line, line
    (r13 / "doubled.py").write_text(DOUBLED.replace("BUILD", "lambda env, dims, source, config=None: Doubled(env, dims)"))
    hop = d(2**20 // 8, 50.0, 500)
    assert f"iteration time {10 + 14 * (2 * hop + 10):,} ns" in _cli(r13, "run", "loggp_ring.yaml", "--quiet").stdout


# -- a pipeline schedule written as a generator function ----------------------------------------------

def test_a_schedule_written_as_a_generator_function_runs_as_its_list(r13):
    """docs/megatron.md: a schedule is ``fn(stage, pp, micro_batches, chunks)`` returning Task
    lists. GPipe written with ``yield Task(...)`` (the natural Python for an order) was refused,
    "it returned generator, not a list". Its tasks are now taken in the order it yields them,
    and the step is the one its list gives, to the ns."""
    from simpy_astra.simulation import Simulation

    job = ("workload: {generate: megatron, schedule: 'r13:%s', args: '--num-layers 4 --hidden-size 512 "
           "--num-attention-heads 8 --seq-length 512 --micro-batch-size 1 --global-batch-size 4 "
           "--pipeline-model-parallel-size 2 --bf16'}\ncluster: {preset: dgx-a100-80gb, gpus: 2}\n")
    figures = {}
    for name in ("gpipe_yielded", "gpipe_listed"):
        (r13 / f"{name}.yaml").write_text(job % name)
        figures[name] = max(r.finished_ns for r in Simulation.from_scenario(str(r13 / f"{name}.yaml")).run())
    assert figures["gpipe_yielded"] == figures["gpipe_listed"] > 0
