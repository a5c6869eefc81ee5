"""Round fourteen of extensions written from the docs (the earlier rounds:
``test_extensions_round13.py`` and before). Part one holds two checks left from round 13: a
backend of one's own whose ``send`` posts a message twice, and a process that a user's
process or an ``on()`` callback starts mid-run, looping at 0 ns. Part two is a researcher's
variants of the docs' snippets (a topology written with ``yield``, a spec named by its file,
groups in a folded breakdown, a backend from an entry point, registry names), each against a
closed form derived here or the one line the docs promise. Their module:
``tests/data/round14/r14.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.researcher_folder import module_fixture
from tests.test_extensions_round4 import ONE_BYTE_PER_NS, L, d, ring_all_reduce
from tests.test_extensions_round6 import _cli, _system, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R14 = HERE / "data" / "round14" / "r14.py"

#: a folder of the researcher's own holding r14.py, the working directory
r14 = module_fixture(R14)


# -- a backend of one's own that posts a message twice -----------------------------------------------

TWO_JOBS = ("jobs:\n  - {name: a, npus: [1, 3], workload: {generate: microbench, collective: all_reduce, "
            "size: 4096, num_npus: 2}}\n  - {name: b, npus: [0, 2], workload: {generate: microbench, "
            "collective: all_reduce, size: 4096, num_npus: 2}}\n")


@pytest.mark.parametrize("jobs", [False, True], ids=["one job", "two jobs"])
def test_a_backend_whose_send_posts_a_message_twice_is_named(r14, jobs):
    """docs/backends.md: a backend's ``send`` posts the message it is given with ``entry =
    self.board.post_send(...)`` and gives it its arrival. One that posted it twice (a
    retransmission) left a copy that a later receive of the same NPUs, tag and size took: the
    ring all-reduce of 4 KiB on 4 NPUs ended early, with only a warning of unmatched messages
    naming no backend. It is one line naming the class, the message and the fix, in a run of
    one job and in a run of jobs (whose ranks reach the network through a job's view: the
    message is named by its physical NPUs, job b's first, rank 0 to 1, from NPU 0 to NPU 2)."""
    if jobs:
        path = r14 / "twice.yaml"
        path.write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\nbackend: 'r14:RETRANSMITS'\n")
        first = "2048 B from NPU 0 to NPU 2"
    else:
        path = _write(r14, "twice.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r14:RETRANSMITS'")
        first = "1024 B from NPU 0 to NPU 1"
    line = _one_line(_cli(r14, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: network backend 'r14:Retransmits', send(): posted the message of "), line
    assert first in line and "2 times" in line and "post_send once per send" in line, line


def test_a_backend_that_posts_two_held_messages_in_one_send_runs(r14):
    """docs/backends.md lets a backend post a message later than its ``send``; one that holds
    each message until the next is sent posts two in that send, each once. The check of a
    message posted twice stopped it (it counted the posts of one call); it runs, and its
    ring all-reduce of 4 KiB on 4 NPUs (four sends a step, posted in pairs in the instant)
    takes the native ring's time: E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n)."""
    path = _write(r14, "pairs.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r14:PAIRS'")
    assert f"iteration time {ring_all_reduce(4, 4096):,} ns" in _cli(r14, "run", path.name, "--quiet").stdout
    # two jobs' messages held and posted together: one view of the backend counts for both
    path.write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\nbackend: 'r14:PAIRS'\n")
    paired = _cli(r14, "run", path.name, "--quiet").stdout
    assert paired == _cli(r14, "run", path.name, "--quiet", "--network-backend", "congestion_unaware").stdout


# -- a process started during the run, held to letting time pass ------------------------------------

COSIM_RING = HERE.parent / "examples" / "cosim_ring.yaml"


def _polls(env, every_ns, rounds, resumed):
    """A poller every ``every_ns``: ``rounds`` resumes (bounded, so that a run that does not
    stop a poller at 0 ns ends rather than hangs), each time noted in ``resumed``."""
    for _round in range(rounds):
        yield env.timeout(every_ns)
        resumed.append(env.now)


def _start_mid_run(sim, starter: str, every_ns: int, rounds: int) -> tuple[int, list]:
    """Start ``_polls`` during the run, from a monitor process of the user's at 100 ns, or from
    an ``on("message_sent")`` callback at the first send (10 ns: the docs' ring sends after
    E = 10 ns); the instant it starts at and the list of its resumes."""
    env, resumed = sim.env, []
    if starter == "process":
        def monitor(env):
            yield env.timeout(100)
            env.process(_polls(env, every_ns, rounds, resumed))

        env.process(monitor(env))
        return 100, resumed

    def on_send(_observation):
        if not resumed:
            resumed.append(None)
            env.process(_polls(env, every_ns, rounds, resumed))

    sim.on("message_sent", on_send)
    return 10, resumed


@pytest.mark.parametrize("starter", ["process", "on() callback"])
def test_a_process_started_mid_run_that_polls_at_0_ns_is_stopped(monkeypatch, starter):
    """docs/cosimulation.md: a process of one's own added to ``sim.env`` that loops within an
    instant is stopped in one line. Only processes queued when ``run()`` was called were
    checked: one that a user's process, or an ``on()`` callback, started during the run polled
    on unchecked (with a ``while True`` it held the clock at that instant and ``sim.run()``
    never returned). With the limit at 3 it is stopped after 3 resumes at the instant it
    started."""
    from simpy_astra import plugins
    from simpy_astra.infra import zero_time
    from simpy_astra.simulation import Simulation

    monkeypatch.setattr(zero_time, "ZERO_TIME_RESUMES", 3)
    sim = Simulation.from_scenario(str(COSIM_RING))
    at_ns, _resumed = _start_mid_run(sim, starter, 0, 10)
    with pytest.raises(plugins.PluginError, match=f"process '_polls' was resumed 3 times at {at_ns} ns"):
        sim.run()


@pytest.mark.parametrize("starter", ["process", "on() callback"])
def test_a_process_started_mid_run_that_lets_time_pass_runs_on(starter):
    """The same poller every 1,000 ns is left alone: the run ends at the docs' ring figure,
    6 (d(2^18) + E) + E = 32,362 ns (docs/cosimulation.md), and the poller, resumed at each
    1,000 ns past its start, ran up to the end."""
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(COSIM_RING))
    at_ns, resumed = _start_mid_run(sim, starter, 1_000, 1_000)
    assert max(r.finished_ns for r in sim.run()) == 32_362
    assert [t for t in resumed if t is not None] == list(range(at_ns + 1_000, 32_362, 1_000))


# -- an object named by its module's file -------------------------------------------------------------

EXAMPLES = HERE.parent / "examples"


@pytest.mark.parametrize("scenario, spec, fixed, expected_ns", [
    # hypercube: NPU 0 -> 7 over three links, trunc(3 x 500 + 65,536 / (50 x 2^30 / 10^9))
    ("hypercube_send.yaml", "hypercube:Hypercube", "hypercube.py:Hypercube",
     int(3 * 500 + 65_536 / (50 * 2**30 / 1e9))),
    # simple_ring: 2 (n - 1) (d + E) + (n - 1) P(S/n), d = trunc(500 + 2^18 / (50 x 2^30 / 10^9))
    ("simple_ring.yaml", "my_algos:SIMPLE_RING", "my_algos.py:SIMPLE_RING",
     6 * (int(500 + 2**18 / (50 * 2**30 / 1e9)) + 10) + 3 * 3 * int(2**18 / 50)),
    # loggp: the ring all-reduce on 8 NPUs, each of its 14 messages 2 o = 600 ns more (docs: 49,724)
    ("loggp_ring.yaml", "loggp", "sub/loggp.py:LOGGP", 49_724),
], ids=["topology", "collective", "backend"])
def test_an_object_named_by_its_file_is_told_the_spec_to_write(r14, scenario, spec, fixed, expected_ns):
    """docs/collectives.md and docs/backends.md name a class, an algorithm or a backend as
    ``module:attribute``. Written with the module's file (``hypercube.py:Hypercube``, or
    ``sub/loggp.py:LOGGP`` for a module in a folder) the line said "write it as hypercube":
    the attribute was dropped, and what it said to write names no registered topology (nor
    backend, without its plugin), a second error. The fix is now the whole spec, which runs to
    the docs' figure."""
    module = spec.split(":")[0]
    folder = r14 / "sub" if fixed.startswith("sub/") else r14
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text((EXAMPLES / f"{module}.py").read_text())
    text = (EXAMPLES / scenario).read_text()
    if scenario == "loggp_ring.yaml":
        text = text.replace("plugins: [loggp]\n", "").replace("backend: loggp", "backend: 'LOGGP_SPEC'")
    (r14 / "as_file.yaml").write_text(text.replace(spec if ":" in spec else "LOGGP_SPEC", fixed))
    line = _one_line(_cli(r14, "run", "as_file.yaml", "--quiet", status=2))
    meant = fixed.replace("sub/", "sub.").replace(".py", "")
    assert f"not a module's: write it as {meant}" in line or f"write it as {meant} (" in line, line
    (r14 / "as_module.yaml").write_text(text.replace(spec if ":" in spec else "LOGGP_SPEC", meant))
    assert f"iteration time {expected_ns:,} ns" in _cli(r14, "run", "as_module.yaml", "--quiet").stdout


# -- a generator of communicator groups, its breakdown folded ----------------------------------------

def test_a_folded_runs_breakdown_charges_each_npu_to_its_own_group(r14):
    """docs/generators.md: a generator's communicator groups show in the breakdown as
    ``comm.group <id>``. Even and odd NPUs of 8 on a switch each all-reduce 1 MiB in a group of
    4 (one ring: E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n), d over two links). The run
    folds (NPU 1 is NPU 0 moved by one), and every NPU's breakdown, table and timeline said
    ``comm.group 1``: the odd NPUs, which never run a collective of group 1, were charged to
    it. Each is now charged to its own group, as the unfolded run charges it."""
    import json

    expected = ring_all_reduce(4, 2**20, hop=lambda size: d(size, latency=2 * L))  # two links a hop
    path = _write(r14, "halves.yaml", "{generate: 'r14:halves', num_npus: 8, size: 1048576}", _net("Switch", 8),
                  "congestion_unaware")
    for fold in ("on", "off"):
        _cli(r14, "run", path.name, "--quiet", "--fold-symmetry", fold, "--json-out", f"{fold}.json")
        npus = json.loads((r14 / f"{fold}.json").read_text())["npus"]
        assert {npu: figures["breakdown_ns"] for npu, figures in npus.items()} == {
            str(i): {f"comm.group {1 + i % 2}": expected} for i in range(8)}, fold


# -- a topology written with yield --------------------------------------------------------------------

HYPERCUBE_SEND = "{generate: microbench, collective: send_recv, size: 65536, num_npus: 8, src: 0, dst: 7}"


@pytest.mark.parametrize("backend, expected_ns", [
    ("congestion_unaware", int(3 * L + 65_536 / (ONE_BYTE_PER_NS * 2**30 / 1e9))),  # trunc(3 L + S/B)
    ("congestion_aware", 3 * d(65_536)),  # store and forward: three hops of trunc(L + S/B)
    # pipelined packets: 3 L + S/B + 2 P/B, rounded up
    ("packet", math.ceil(3 * L + (65_536 + 2 * 4096) / (ONE_BYTE_PER_NS * 2**30 / 1e9))),
])
def test_a_topology_whose_links_and_routes_are_generators_runs(r14, backend, expected_ns):
    """docs/collectives.md's hypercube, its ``links()`` and ``route()`` written with ``yield``:
    every run stopped at ``links() returned <generator object ... at 0x7f...>; expected a list``
    (an error that differed from run to run by its address). The pairs and the path it yields
    are read as the list would be: NPU 0 -> 7 crosses three links on each backend."""
    path = _write(r14, "yields.yaml", HYPERCUBE_SEND, _net("'r14:YieldingHypercube'", 8), backend)
    assert f"iteration time {expected_ns:,} ns" in _cli(r14, "run", path.name, "--quiet").stdout


def test_a_wrong_answers_error_is_the_same_from_run_to_run(r14):
    """A ``hops()`` that returns a generator expression (the ``sum`` forgotten) is one line
    naming the method, as the docs promise; it held the generator's memory address, so the
    same input gave another line at every run. It is said without the address."""
    path = _write(r14, "counts.yaml", HYPERCUBE_SEND, _net("'r14:CountingHypercube'", 8), "congestion_unaware")
    lines = {_one_line(_cli(r14, "run", path.name, "--quiet", status=2)) for _run in range(2)}
    [line] = lines
    assert ") returned <generator object CountingHypercube.hops.<locals>.<genexpr>>; expected an integer >= 1" \
        in line and "0x" not in line, line


def test_a_collective_that_yields_its_helpers_generator_is_the_same_line_every_run(r14):
    """collectives/README.md: a phase that yields what the run cannot wait on is stopped in
    one line naming it. A helper's generator yielded where ``yield from`` was meant was said
    with its memory address (``<generator object _step at 0x7f...>``): the same input, another
    line each run. It is said without it, with the fix."""
    path = _write(r14, "helper.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "congestion_unaware",
                  system=_system("'r14:ring_with_a_helper'"))
    lines = {_one_line(_cli(r14, "run", path.name, "--quiet", status=2)) for _run in range(2)}
    [line] = lines
    assert "collective algorithm 'ring_with_a_helper' (" in line and "yielded <generator object _step>; " in line
    assert "yield ctx.spawn(...) (or yield from it)" in line and "0x" not in line, line


# -- a backend from an installed package's entry point ------------------------------------------------

def test_a_backend_declared_by_an_entry_point_runs_by_its_name(r14):
    """docs/collectives.md: an algorithm, topology or model may come from an entry point of an
    installed package, its name the name configs use; docs/backends.md: a backend is picked
    "as algorithms and topologies are named". A backend had no entry-point group: a package
    declaring ``loggp`` in ``simpy_astra.backends`` ran nothing (``must be one of ...``). It
    now runs by that name, without ``plugins:``, to docs/backends.md's 49,724 ns (the ring's
    14 messages, each 2 o = 600 ns more); one named like ours (``packet``) is refused naming
    both, as for the other groups."""
    from tests.test_extensions_round13 import _package

    (r14 / "loggp.py").write_text((EXAMPLES / "loggp.py").read_text())
    (r14 / "ring8.yaml").write_text((EXAMPLES / "loggp_ring.yaml").read_text().replace("plugins: [loggp]\n", ""))
    site = _package(r14, "[simpy_astra.backends]\nloggp = loggp:LOGGP\n")
    assert "iteration time 49,724 ns" in _cli(r14, "run", "ring8.yaml", "--quiet", path=site).stdout
    (site / "ringpkg-0.1.dist-info" / "entry_points.txt").write_text("[simpy_astra.backends]\npacket = loggp:LOGGP\n")
    line = _one_line(_cli(r14, "run", "ring8.yaml", "--quiet", "--network-backend", "packet", status=2, path=site))
    assert "entry point 'packet' of simpy_astra.backends (loggp:LOGGP), declared by ringpkg, has the name of " \
           "simpy-astra's own simpy_astra.network.backends:_packet" in line, line


# -- a generator or schedule registered under a name no config can spell -------------------------------

@pytest.mark.parametrize("kind", ["generator", "pipeline schedule"])
@pytest.mark.parametrize("name", ["", " gpipe", "gpipe\n", 3])
def test_a_name_no_config_can_spell_is_refused_by_every_registry(r14, kind, name):
    """docs/collectives.md's registries refuse a name no config can give (empty, on two lines,
    spaces around it, not a string): registered in silence, the object could never be named.
    The generator registry (docs/generators.md, ``generated.register``) took ``" gpipe"`` and
    ``"gpipe\\n"``, the schedule registry (docs/megatron.md, ``registry.register``) took every
    one of them, even ``""`` and ``3``. Both now hold names to the same rule, and register
    nothing."""
    from simpy_astra.workloads import generated
    from simpy_astra.workloads.schedules import registry

    def writes(params, prefix):
        return None

    def gpipe(stage, pp, micro_batches, chunks):
        return []

    register, held, fn = ((generated.register, generated.GENERATORS, writes) if kind == "generator"
                          else (registry.register, registry.SCHEDULES, gpipe))
    before = set(held)
    with pytest.raises((TypeError, ValueError), match=f"^{kind} name .* (is not one a config can give|not a string)"):
        register(name, fn)
    assert set(held) == before


# -- a topology whose link figures are numpy's numbers -------------------------------------------------

SEND_0_7 = 65_536
#: NPU 0 -> 7 on the one-way ring of 8: seven links, those from NPU 0 and 4 of latency 2 L
LATENCIES = [2 * L if i % 4 == 0 else L for i in range(7)]
BYTES_PER_NS = ONE_BYTE_PER_NS * 2**30 / 1e9


@pytest.mark.parametrize("backend, expected_ns", [
    ("congestion_unaware", int(sum(LATENCIES) + SEND_0_7 / BYTES_PER_NS)),  # summed latency, slowest link
    ("congestion_aware", sum(int(lat + SEND_0_7 / BYTES_PER_NS) for lat in LATENCIES)),  # store and forward
    # pipelined packets: sum(L_i + P/B) + (S - P)/B, rounded up
    ("packet", math.ceil(sum(lat + 4096 / BYTES_PER_NS for lat in LATENCIES) + (SEND_0_7 - 4096) / BYTES_PER_NS)),
])
def test_a_topology_whose_link_params_are_numpy_numbers_runs(r14, backend, expected_ns):
    """docs/collectives.md: ``link_params(src, dst)`` gives a link's own ``(bandwidth_gbps,
    latency_ns)``. Taken from numpy arrays (``np.float64``, ``np.int64``), every run stopped
    at ``link_params(1, 2) returned (np.float64(...), np.int64(500)); expected (bandwidth GB/s >
    0, latency ns >= 0), finite``, which they are. They are read as the numbers they are (as
    NPU ids from numpy already were): the send crosses seven links, two of twice the latency."""
    send = f"{{generate: microbench, collective: send_recv, size: {SEND_0_7}, num_npus: 8, src: 0, dst: 7}}"
    path = _write(r14, "numpy.yaml", send, _net("'r14:NumpyRing'", 8), backend)
    assert f"iteration time {expected_ns:,} ns" in _cli(r14, "run", path.name, "--quiet").stdout
