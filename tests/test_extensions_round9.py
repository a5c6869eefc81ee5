"""Extensions written from the docs alone, ninth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round8.py``, ``test_extension_*.py``) and is checked against a figure derived here from the
closed forms the docs state, or, for a mistake of the researcher's, against the one line the
docs promise (naming the plug-in's file and the fix; never a traceback, a hang or a silent
stall). The researcher's module is ``tests/data/round9/r9.py``.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns: one hop of S
bytes takes ``d(S) = trunc(L + S / B)`` = L + S; ``E`` is the endpoint delay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import ONE_BYTE_PER_NS, E, L, d
from tests.test_extensions_round6 import _cli, _finished, _write
from tests.test_extensions_round7 import _bench, _net, _system

HERE = Path(__file__).resolve().parent
R9 = HERE / "data" / "round9" / "r9.py"


@pytest.fixture
def r9(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r9.py and the docs' hypercube.py it builds on,
    the working directory; the registries are left as they were found."""
    modules = {"r9": R9.read_text(), "hypercube": (HERE.parent / "examples" / "hypercube.py").read_text()}
    with researcher_folder(tmp_path, monkeypatch, modules) as folder:
        yield folder


def _one_line(done) -> str:  # noqa: ANN001 - a CompletedProcess
    """The run's one error line (the docs' promise: no traceback, nothing else)."""
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-800:]
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    return line


# -- a new all-to-all ---------------------------------------------------------------------------

@pytest.mark.parametrize("topology, backend, expected", [
    # n // 2 = 2 steps, each one hop of S/n and E
    ("FullyConnected", "congestion_unaware", 2 * (d(1024) + E)),
    ("FullyConnected", "congestion_aware", 2 * (d(1024) + E)),
    # two links a message, charged as one path: trunc(2L + S/n)
    ("Switch", "congestion_unaware", 2 * (int(2 * L + 1024) + E)),
    # step 1: an NPU's two messages leave its up-link S/n apart, and each down-link takes the
    # one behind its NPU first (sent first), then the one ahead: 2 d(S/n) + S/n; step 2: the
    # opposite member alone, 2 d(S/n)
    ("Switch", "congestion_aware", (2 * d(1024) + 1024 + E) + (2 * d(1024) + E)),
])
def test_an_all_to_all_that_exchanges_both_ways_at_once(r9, topology, backend, expected):
    """A new all-to-all (collectives/README.md): step k exchanges S/n with the members k places
    ahead and behind at once, n // 2 steps on n = 4, S = 4,096 B."""
    n, size = 4, 4096
    path = _write(r9, "a2a.yaml", _bench("all_to_all", size, n), _net(topology, n), backend,
                  _system(all_to_all='"r9:BOTH_WAYS"'))
    assert _finished(path) == dict.fromkeys(range(n), expected)


PLUGIN = '''"""Registers the both-ways all-to-all under a short name; its steps are a helper's."""
from simpy_astra import collectives
from simpy_astra.collectives.base import ALL_TO_ALL, CollectiveAlgorithm, ring_final_size

import r9_steps


def both_ways(ctx):
    msg = ctx.size_bytes // len(ctx.members)
    for peers in r9_steps.peers_by_step(ctx.members, ctx.index):
        for peer in peers:
            ctx.post(peer, msg)
        yield ctx.env.all_of([ctx.recv(peer, msg) for peer in peers])
        yield ctx.endpoint()


collectives.register("both_ways", CollectiveAlgorithm("both_ways", both_ways, ring_final_size,
                                                      kinds=frozenset({ALL_TO_ALL})))
'''

STEPS = '''def peers_by_step(members, index):
    n = len(members)
    return [tuple(dict.fromkeys((members[(index + k) % n], members[(index - k) % n]))) for k in range(1, n // 2 + 1)]
'''


def test_a_plugin_and_its_helper_beside_the_scenario_run_from_another_folder(r9):
    """docs/cosimulation.md: plugin modules are imported from the working directory, the
    installed packages, then the scenario's folder; the plug-in's own `import r9_steps` finds
    its sibling there too. `run` and a `sweep` over the bandwidth, both from the parent folder:
    n // 2 steps of trunc(L + (S/n) / B) + E at each bandwidth."""
    sub = r9 / "study"
    sub.mkdir()
    (sub / "r9_plugin.py").write_text(PLUGIN)
    (sub / "r9_steps.py").write_text(STEPS)
    n, size = 4, 4096
    _write(sub, "a2a.yaml", _bench("all_to_all", size, n), _net("FullyConnected", n), "congestion_unaware",
           _system(all_to_all="both_ways"), extra="plugins: [r9_plugin]\n")
    done = _cli(r9, "run", "study/a2a.yaml", "--quiet")
    assert f"iteration time {2 * (d(size // n) + E):,} ns" in done.stdout
    (r9 / "sweep.yaml").write_text("base: study/a2a.yaml\naxes:\n"
                                   f"  network.bandwidth: [{ONE_BYTE_PER_NS!r}, {2 * ONE_BYTE_PER_NS!r}]\n")
    _cli(r9, "sweep", "sweep.yaml", "--out", "out")
    import csv

    with open(r9 / "out" / "results.csv", newline="") as f:
        finish = sorted(int(row["finish_ns"]) for row in csv.DictReader(f))
    assert finish == [2 * (int(L + size // n / 2) + E), 2 * (d(size // n) + E)]


# -- a link model with state --------------------------------------------------------------------

@pytest.mark.parametrize("model, first_gap_ns, gap_ns", [
    ("", 1000, 1000),  # the built-in FIFO link: back to back, one S/k every S/k / B
    (', link-model: {class: "r9:TokenBucket", rate_share: 0.5, depth_bytes: 1000}', 2000, 2000),
    (', link-model: {class: "r9:TokenBucket", rate_share: 0.5, depth_bytes: 1500}', 1000, 2000),
])
def test_a_token_bucket_link_spaces_a_burst_at_its_refill_rate(r9, model, first_gap_ns, gap_ns):
    """Two NPUs, each posting three messages of m = 1,000 B to the other at once. A bucket of
    depth D refilled at r = B/2 (simpy_astra/network/README.md: `hold_ns` reading `self.env.now`
    and keeping its tokens between calls) lets the first go at once; the second is dequeued
    when the first's last byte is out (t = m / B) with D - m + m r / B tokens, and waits until
    the bucket holds m; in debt from then on, each next one starts m / r after the one before.
    D = m: starts 0, 2m, 4m; D = 1.5 m: 0, m, 3m. Each NPU ends at the last arrival, its start
    + L + m, then E."""
    m = 1000
    path = _write(r9, "burst.yaml", _bench("all_to_all", 3 * m, 2), _net("Ring", 2, model), "congestion_aware",
                  _system(all_to_all='"r9:BURST"'))
    last_start = first_gap_ns + gap_ns
    assert _finished(path) == dict.fromkeys(range(2), last_start + L + m + E)


# -- mistakes a first try makes: one line naming the plug-in, its file and the fix ----------------

def test_a_signal_never_fired_is_a_stall_that_names_the_phase_and_its_file(r9):
    """collectives/README.md: a phase that waits for ever is reported as a stall (exit status
    3) naming the phases. One waiting on a `ctx.signal()` it never fires was reported only as
    'no event left that could make progress' and the NPUs' nodes, the algorithm unnamed."""
    path = _write(r9, "sig.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "congestion_unaware",
                  _system(all_to_all='"r9:waits_for_done"'))
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=3))
    assert "NPU 0 runs 'waits_for_done'" in line and "r9.py:" in line and ".fire(value)" in line


@pytest.mark.parametrize("algorithm, says", [
    ("sleeps_on_its_own_clock", "of another simpy.Environment, which this run never processes; make events "
                                "with ctx.env"),
    ("yields_a_list", "to wait for several, yield ctx.env.all_of([...])"),
])
def test_an_algorithm_that_yields_what_the_run_cannot_wait_on_is_one_line(r9, algorithm, says):
    """A timeout of a fresh `simpy.Environment()` is a SimPy event, so it passed the check of
    what a phase yields, and the run stalled at 0 ns naming neither the algorithm nor the
    event; a list of events was refused without saying how to wait for several."""
    path = _write(r9, "bad.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "congestion_unaware",
                  _system(all_to_all=f'"r9:{algorithm}"'))
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=2))
    assert f"collective algorithm '{algorithm}'" in line and "r9.py:" in line and says in line


def test_a_link_models_dequeue_that_returns_a_wrapped_item_is_named(r9):
    """simpy_astra/network/README.md: `dequeue() -> item | None`. A direct all-to-all on a
    switch queues messages at each up-link, and a dequeue returning `(item,)` ended in an
    'internal error ... this is a simpy-astra bug' (AttributeError: 'tuple' object has no
    attribute 'size'), where the contract promises a line naming the class and method."""
    path = _write(r9, "dq.yaml", _bench("all_to_all", 4096, 4), _net("Switch", 4, ', link-model: "r9:WrappedDequeue"'),
                  "congestion_aware")
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=2))
    assert "link model 'r9:WrappedDequeue': dequeue() returned (" in line
    assert "it must return an item it was offered" in line and "or None when nothing waits" in line


def test_a_backends_build_that_raises_is_named_as_the_backend(r9):
    """docs/backends.md names a backend's faults by its name; a `build` that raised was named
    as `function 'r9:_build_from_a_table'`, not the backend the run was asked for."""
    path = _write(r9, "tb.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "r9:TABLE")
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=2))
    assert "network backend 'table', build() raised KeyError: 'ready'" in line and "r9.py:" in line


def test_a_misspelt_backend_from_python_names_the_argument_given(r9):
    """`Simulation.from_scenario(path, backend=...)` (docs/cosimulation.md): a typo was refused
    as `--network-backend: ...`, a flag the script never gave."""
    from simpy_astra.errors import InputError
    from simpy_astra.simulation import Simulation

    path = _write(r9, "a.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "congestion_unaware")
    with pytest.raises(InputError) as refused:
        Simulation.from_scenario(str(path), backend="pakcet")
    assert str(refused.value).startswith("Simulation.from_scenario(backend=...): must be one of")
    assert "did you mean 'packet'?" in str(refused.value) and "--network-backend" not in str(refused.value)


# -- a hierarchical collective on a topology of one's own ---------------------------------------------

def test_a_leader_based_all_reduce_on_pods_under_a_slower_core(r9):
    """docs/collectives.md: a topology class with switches numbered from N (a switch a pod of
    4, one core), `link_params` giving the core's links B/2 and 2L, and an algorithm whose
    `logical` hook finds its pod and the pods' leaders (collectives/README.md). Members send
    S to their leader; the leader reduces 3S (E + P(3S)), swaps its sum with the other pod's
    leader and reduces S (E + P(S)), then sends S back to its members; every NPU ends with E.

    Analytical: a message is charged its summed latency and its slowest link (the default
    `path_profile`): trunc(2L + S) in a pod, trunc(6L + 2S) across the core.
    Store-and-forward: the three members' messages meet on the switch's link to the leader
    (FIFO: the last arrives 2 S / B after the first), the swap pays each of its four links
    whole, and the leader's three sends leave its up-link one after the other, so its
    members finish S / B apart."""
    from tests.test_extensions_round4 import reduce_ns

    size, n = 10_000, 8
    path = _write(r9, "pods.yaml", _bench("all_reduce", size, n), _net('"r9:Pods"', n), "congestion_unaware",
                  _system(all_reduce='"r9:POD_ALL_REDUCE"'))
    pod, core = int(2 * L + size), int(6 * L + 2 * size)
    leader_sum = E + reduce_ns(3 * size)
    swap_sum = E + reduce_ns(size)
    assert _finished(path) == dict.fromkeys(range(n), pod + leader_sum + core + swap_sum + pod + E) == \
        dict.fromkeys(range(n), 47_430)
    gathered = 2 * d(size) + 2 * size  # the third member's message, behind two on the leader's link
    swapped = gathered + leader_sum + 2 * d(size) + 2 * d(2 * size, latency=2 * L) + swap_sum
    members = {k: swapped + k * size + 2 * d(size) + E for k in range(3)}  # the k-th send waits k S / B
    expected = {pod_id * 4 + k + 1: members[k] for pod_id in range(2) for k in range(3)}
    expected |= {0: members[2], 4: members[2]}  # a leader waits for its last send's arrival
    assert _finished(path, backend="congestion_aware") == expected
    assert expected[3] == 147_430


# -- the Python API on a folded run ----------------------------------------------------------------

def test_npu_finished_in_a_folded_run_gives_each_npu_its_own_report(r9):
    """docs/cosimulation.md: `sim.npu_finished(i)` is an event whose value is NPU i's report. A
    script's run on the analytical backend folds (the both-ways all-to-all claims rotation
    symmetry), and NPU 2's event was its representative's process: its report said `npu_id`
    0. Each NPU now gets its own, in the instant the representative finishes, at the closed
    form 2 (d(S/4) + E). `node_finished` of an NPU that is not simulated says so and how to
    see it (microbench numbers NPU i's node i, which NPU 0's trace does not have: it was
    `NPU 0 has no node 2`, naming an NPU the script never asked for)."""
    from simpy_astra.simulation import Simulation

    path = _write(r9, "a2a.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "congestion_unaware",
                  _system(all_to_all='"r9:BOTH_WAYS"'))
    sim = Simulation.from_scenario(str(path))
    assert sim.npu(2) is sim.npu(0)  # folded: NPU 0 stands for its orbit
    seen = {}

    def watch(npu):
        report = yield sim.npu_finished(npu)
        seen[npu] = (report.npu_id, report.finished_ns, sim.env.now)

    for npu in range(4):
        sim.env.process(watch(npu))
    sim.run()
    expected_ns = 2 * (d(1024) + E)
    assert seen == {npu: (npu, expected_ns, expected_ns) for npu in range(4)}
    assert sim.npu_finished(3).value.npu_id == 3  # asked after the run: fired already
    with pytest.raises(KeyError, match=r"NPU 2 is not simulated in this folded run \(NPU 0 stands for it.*"
                                       r"fold_symmetry: false"):
        sim.node_finished(2, 2)
    assert sim.node_finished(0, 0).value == expected_ns


def test_a_sweep_over_the_token_buckets_parameters_from_the_command_line_and_from_python(r9):
    """docs/sweeps.md: `network.link-model.<parameter>` axes; simpy_astra/network/README.md:
    `Simulation.from_scenario(path, link_model=..., link_params={...})` from a script. The
    burst of three m-byte messages (above): refilled at B the bucket never empties (each
    message's serialisation refills what it took), so the three go back to back, start 2m;
    at B/2 the third starts at 4m with D = m, 3m with D = 1.5 m, 2m with D = 3m (it still
    holds D - 3m + 2m / 2 = m after two). Each NPU ends at that start + L + m + E."""
    import csv

    from simpy_astra.simulation import Simulation

    m = 1000
    model = ', link-model: {class: "r9:TokenBucket", rate_share: 0.5, depth_bytes: 1000}'
    _write(r9, "burst.yaml", _bench("all_to_all", 3 * m, 2), _net("Ring", 2, model), "congestion_aware",
           _system(all_to_all='"r9:BURST"'))
    third_start = {(1000, 0.5): 4 * m, (1500, 0.5): 3 * m, (3000, 0.5): 2 * m,
                   (1000, 1.0): 2 * m, (1500, 1.0): 2 * m, (3000, 1.0): 2 * m}
    (r9 / "sweep.yaml").write_text("base: burst.yaml\naxes:\n  network.link-model.depth_bytes: [1000, 1500, 3000]\n"
                                   "  network.link-model.rate_share: [0.5, 1.0]\n")
    _cli(r9, "sweep", "sweep.yaml", "--out", "out")
    with open(r9 / "out" / "results.csv", newline="") as f:
        rows = {(int(row["network.link-model.depth_bytes"]), float(row["network.link-model.rate_share"])):
                int(row["finish_ns"]) for row in csv.DictReader(f)}
    assert rows == {key: start + L + m + E for key, start in third_start.items()}
    import r9 as module

    for (depth, share), start in third_start.items():
        sim = Simulation.from_scenario("burst.yaml", link_model=module.TokenBucket,
                                       link_params={"depth_bytes": depth, "rate_share": share})
        assert {r.finished_ns for r in sim.run()} == {start + L + m + E}


# -- a topology class that checks what it is given ----------------------------------------------------

@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_hypercube_that_checks_its_npu_count_runs_eight_and_refuses_six(r9, backend):
    """docs/collectives.md's hypercube with an `__init__` that raises ValueError for a count
    that is not a power of two, as a link or switch model refuses a value it cannot take
    (simpy_astra/network/README.md). On 8 NPUs, 0 -> 7 is three links: trunc(3L + S)
    analytical, 3 d(S) store-and-forward. On 6 its refusal was reported as a fault of the
    class ('raised ValueError ... this is an error in that code'), naming neither the
    scenario nor the field; now it is one input line naming both, before the run."""
    size = 1000
    send = "{{generate: microbench, collective: send_recv, size: {size}, num_npus: {n}, src: 0, dst: {dst}}}"
    path = _write(r9, "cube.yaml", send.format(size=size, n=8, dst=7), _net('"r9:CheckedHypercube"', 8), backend)
    assert _finished(path)[7] == (3 * L + size if backend == "congestion_unaware" else 3 * d(size))
    path = _write(r9, "cube6.yaml", send.format(size=size, n=6, dst=5), _net('"r9:CheckedHypercube"', 6), backend)
    line = _one_line(_cli(r9, "run", path.name, "--quiet", status=2))
    assert line == ("error: cube6.yaml: network: field 'topology[0]' (r9:CheckedHypercube) a hypercube has a "
                    "power of two of NPUs, 2 or more (got 6): write npus_count: [8]")


# -- a backend of one's own that misuses the message board ------------------------------------------

def test_a_backends_send_that_schedules_a_negative_delay_is_named(r9):
    """docs/backends.md: a backend's `send` schedules the arrival with
    `self.board.arrive_after(delay_ns, entry)` (whole ns from now). A negative delay was an
    'internal error ValueError: Negative delay -476 (this is a simpy-astra bug ...)': d(S/4) =
    1,524 ns less the backend's 2,000."""
    path = _write(r9, "j.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "r9:JITTERED")
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=2))
    assert line == (f"error: network backend 'r9:Jittered', send(): board.arrive_after({d(1024) - 2000}, entry): the delay must "
                    "be a finite number of ns >= 0 (whole ns from now; a fraction is cut)")


def test_a_backends_send_that_never_schedules_its_arrivals_is_told_in_the_stall(r9):
    """The stall report counted the messages 'sent and never arrived' and said only that a
    link or switch model may keep them: the backend's own send is named as the other place."""
    path = _write(r9, "f.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "r9:FORGETFUL")
    line = _one_line(_cli(r9, "run", str(path), "--quiet", status=3))
    assert "12 messages were sent and never arrived" in line
    assert "or a backend's send() post them without board.arrive_after" in line


def test_a_report_process_that_raises_after_the_run_finished_is_not_lost(r9):
    """docs/cosimulation.md: `sim.finished` is processed in that instant, so a process that
    yields it goes on before `sim.run()` returns: the place for a report of one's own. One
    that raised there had its failure scheduled behind the run's stop, and `sim.run()`
    returned every report as if nothing happened; its error now comes out of `sim.run()`,
    as SimPy raises a failed process's. The figures it would have read are the closed form."""
    from simpy_astra.simulation import Simulation

    path = _write(r9, "a2a.yaml", _bench("all_to_all", 4096, 4), _net("FullyConnected", 4), "congestion_unaware",
                  _system(all_to_all='"r9:BOTH_WAYS"'))
    sim = Simulation.from_scenario(str(path))
    read = []

    def report(env):
        finished_ns = yield sim.finished
        read.append(finished_ns)
        raise ZeroDivisionError("a report of one's own dividing by the wrong figure")

    sim.env.process(report(sim.env))
    with pytest.raises(ZeroDivisionError, match="a report of one's own"):
        sim.run()
    assert read == [2 * (d(1024) + E)]
