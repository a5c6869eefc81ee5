"""Extensions written from the docs alone, twelfth round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round11b.py``, ``test_review_round11.py``, ``test_extension_*.py``) and is checked against a
figure derived here from the closed forms the docs state, or, for a mistake of the
researcher's, against the one line the docs promise. The researcher's module is
``tests/data/round12/r12.py``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import d, ring_all_reduce
from tests.test_extensions_round6 import _cli, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R12 = HERE / "data" / "round12" / "r12.py"


@pytest.fixture
def r12(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r12.py, the working directory; the registries
    are left as they were found."""
    with researcher_folder(tmp_path, monkeypatch, {"r12": R12.read_text()}) as folder:
        yield folder


# -- a serving loop of one's own that never lets time pass ---------------------------------------

@pytest.mark.parametrize("key, model, topology", [("link-model", "PollingLink", "Ring"),
                                                  ("switch-model", "PollingSwitch", "Switch")])
def test_a_models_serving_loop_that_polls_at_zero_ns_is_one_line_not_a_hang(r12, key, model, topology):
    """simpy_astra/network/README.md: a model may override ``run()``, its serving loop. One that
    polls with ``env.timeout(0)`` while nothing waits holds the clock at one instant: the run
    never ended (the stall watchdog wakes at later instants only), where the docs promise a
    collective doing the same is stopped in one line. A model's loop is now held to the same
    rule: one line naming the class, the method and the fix, exit status 2."""
    path = _write(r12, "s.yaml", _bench("all_reduce", 4096, 4),
                  _net(topology, 4, extra=f", {key}: 'r12:{model}'"), "congestion_aware")
    line = _one_line(_cli(r12, "run", path.name, "--quiet", status=2))
    assert line.startswith(f"error: {key.split('-')[0]} model 'r12:{model}', method run() was resumed 100,000 "
                           "times at 0 ns without simulated time passing"), line
    assert "env.timeout(0)" in line and "wait for" in line


# -- a callback of one's own for sim.on and watch ------------------------------------------------

COSIM_RING = HERE.parent / "examples" / "cosim_ring.yaml"


def _no_argument():
    return None


def _as_a_process(observation):
    yield observation


@pytest.mark.parametrize("callback, told", [
    (_no_argument, "_no_argument() cannot be called as callback(observation)"),
    (_as_a_process, "_as_a_process is a generator function: called, it returns a generator and runs none of "
                    "its lines"),
])
def test_a_callback_that_cannot_take_an_observation_is_refused_by_on(callback, told):
    """docs/cosimulation.md: ``sim.on(kind, callback)`` calls ``callback(observation)``; a
    callback that is not callable is refused by ``on()`` itself. One written without its
    parameter was taken, and the run failed in its first message with a TypeError from inside
    simpy_astra/running/observe.py; one written as a process (with a ``yield``) was taken and
    called, and every observation was dropped in silence (its body never runs). Both are now a
    TypeError from ``on()`` naming the callback and the fix; a right one still sees the ring's
    2(n-1)n = 24 messages."""
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(COSIM_RING))
    with pytest.raises(TypeError) as refused:
        sim.on("message_sent", callback)
    assert told in str(refused.value)
    assert "sim.stream" in str(refused.value) or "generator" not in told
    seen = []
    sim.on("message_sent", seen.append)
    sim.run()
    assert len(seen) == 2 * 3 * 4


@pytest.mark.parametrize("callback, told", [
    (lambda link, key: None, "<lambda>(link, key) cannot be called as fn(link, key, size_bytes)"),
    (lambda *a: (yield a), "<lambda> is a generator function"),
    ([].append, "list.append(object, /) cannot be called as fn(link, key, size_bytes)"),
])
def test_a_watcher_that_cannot_take_the_points_arguments_is_refused_by_watch(callback, told):
    """docs/cosimulation.md: ``link.watch("link_start", fn)`` calls ``fn(link, key,
    size_bytes)``. A watcher of two parameters failed mid-run inside the link's code; one with
    a ``yield`` was never run. Both are refused by ``watch()`` itself; so is a builtin's bound
    method, whose module is None (watch() asked None.startswith: AttributeError)."""
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(COSIM_RING))
    with pytest.raises(TypeError) as refused:
        sim.network.link(0, 1).watch("link_start", callback)
    assert told in str(refused.value)


# -- a backend's message_delay_ns that returns an int out of range --------------------------------

@pytest.mark.parametrize("spec, cls, told", [("OFFLOAD", "Offload", f"returned {d(1) - 1000}"),  # 501 - 1,000
                                             ("ATTOSECONDS", "Attoseconds", f"returned {d(1) * 10**18}")])
@pytest.mark.parametrize("fold", ["on", "off"])
def test_a_message_delay_of_an_int_out_of_range_names_the_backend(r12, spec, cls, told, fold):
    """docs/backends.md: a ``message_delay_ns`` that returns a negative number is named in one
    line. One that returned a negative *int* (the analytical d(1) = 501 ns of a 1-byte message
    less a 1,000 ns saving) ended on "internal error ValueError: Negative delay -499 (this is a
    simpy-astra bug ...)", and one that returned an int past 2^63 ns (the unit mistaken) was
    blamed on the network YAML's bandwidth and latency ("raise the bandwidth"). Both now name
    the backend's class and the method, folded or not."""
    workload = "{generate: microbench, collective: send_recv, size: 1, num_npus: 4, src: 0, dst: 1}"
    path = _write(r12, "s.yaml", workload, _net("Ring", 4), f"'r12:{spec}'")
    line = _one_line(_cli(r12, "run", path.name, "--quiet", "--fold-symmetry", fold, status=2))
    assert line.startswith(f"error: network backend 'r12:{cls}': message_delay_ns() {told}; it must return a "
                           "finite number of ns >= 0, within the horizon"), line


# -- a pipeline schedule whose ids come from numpy -------------------------------------------------

def _job(schedule: str) -> str:
    return (f"workload: {{generate: megatron, schedule: '{schedule}', args: '--num-layers 4 --hidden-size 512 "
            "--num-attention-heads 8 --seq-length 512 --micro-batch-size 1 --global-batch-size 4 "
            "--pipeline-model-parallel-size 2 --bf16'}\ncluster: {preset: dgx-a100-80gb, gpus: 2}\n")


def test_a_schedule_whose_micro_batch_ids_are_numpy_ints_runs_as_with_python_ints(r12):
    """docs/megatron.md: a schedule returns ``Task(kind, micro_batch, chunk)`` lists. One that
    numbers its micro-batches with ``np.arange`` was refused as returning "Task(kind=...,
    micro_batch=np.int64(0), chunk=0), which is no task of this stage", where a collective's
    peers and sizes from numpy are taken as the ints they are. It now runs the step GPipe
    written with Python's ints runs (the same figure, to the ns)."""
    from simpy_astra.simulation import Simulation

    (r12 / "gpipe.py").write_text(
        "from simpy_astra.workloads.schedules.task import Kind, Task\n\n\n"
        "def gpipe(stage, pp, micro_batches, chunks):\n"
        "    return ([Task(Kind.FORWARD, m, 0) for m in range(micro_batches)]\n"
        "            + [Task(Kind.BACKWARD, m, 0) for m in reversed(range(micro_batches))])\n")
    figures = {}
    for name in ("gpipe:gpipe", "r12:gpipe_np"):
        path = r12 / f"{name.replace(':', '_')}.yaml"
        path.write_text(_job(name))
        figures[name] = max(r.finished_ns for r in Simulation.from_scenario(str(path)).run())
    assert figures["r12:gpipe_np"] == figures["gpipe:gpipe"] > 0


def test_a_schedule_whose_kinds_are_words_is_told_to_use_kind(r12):
    """A kind written as a word (``Task("forward", m, 0)``) was "no task of this stage", which
    says nothing of what to change; the line now names the field and the values it takes."""
    (r12 / "words.yaml").write_text(_job("r12:gpipe_words"))
    line = _one_line(_cli(r12, "run", "words.yaml", "--quiet", status=2))
    assert "pipeline schedule 'r12:gpipe_words'" in line
    assert "its kind 'forward' is not a Kind: write Kind.FORWARD, Kind.BACKWARD, Kind.BACKWARD_INPUT or " \
           "Kind.BACKWARD_WEIGHT" in line, line


# -- the star of docs/collectives.md on more NPUs ---------------------------------------------------

def test_the_collectives_guides_star_of_8_and_its_sweep_run_as_the_guide_says(r12):
    """docs/collectives.md said `topology: {networkx: "star_net:star", n: 8}` builds 8 NPUs and
    an axis `network.topology.n: [4, 8, 16]` varies it; beside its scenario, whose workload is
    of 4 NPUs, both were refused (`writes 4 ranks, but the network has 8 NPUs`). The guide now
    says so and gives the bundle that varies both: each of its points runs the send 0 -> 3
    across the switch, two links, trunc(2 x 500 + 65,536 / (50 x 2^30 / 10^9)) = 2,220 ns."""
    examples = HERE.parent / "examples"
    for name in ("star_net.py", "star_send.yaml"):
        (r12 / name).write_text((examples / name).read_text())
    guide = " ".join((HERE.parent / "docs" / "collectives.md").read_text().split())
    star8 = yaml.safe_load((examples / "star_send.yaml").read_text())
    star8["network"]["topology"] = yaml.safe_load(re.search(r"`(topology: \{networkx: [^`]+, n: 8\})`", guide)[1])[
        "topology"]
    (r12 / "star8.yaml").write_text(yaml.safe_dump(star8))
    refused = re.search(r"of 4, is then refused, `([^`]+)`", guide)[1]
    assert refused in " ".join(_one_line(_cli(r12, "run", "star8.yaml", "--quiet", status=2)).split())
    bundle = yaml.safe_load(re.search(r"in a bundle, `(star: [^`]+)`", guide)[1])
    (r12 / "sweep.yaml").write_text(yaml.safe_dump({"base": "star_send.yaml", "axes": bundle}))
    _cli(r12, "sweep", "sweep.yaml", "--out", "out")
    with open(r12 / "out" / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(bundle["star"]["named"]) and {row["finish_ns"] for row in rows} == {"2220"}


# -- a generator's group names written another way -------------------------------------------------

@pytest.mark.parametrize("pg", ["word", "pairs", "mapping", "backwards"])
def test_group_names_not_in_the_documented_shape_are_told_not_dropped(r12, pg):
    """docs/generators.md: a generator names its groups' dimensions in every rank's metadata,
    ``pg_names`` = JSON runs ``[dimension, first id, last id]``; the breakdown then says
    ``comm.tp``. Written another way (a word, pairs, a mapping, a run whose last id comes
    first) the names were dropped in silence and the breakdown said ``comm.group 1``, as if
    the generator had named nothing. It still does, and a warning now says why and what to
    write; the runs the docs show give ``comm.tp`` without a word. A 64 KiB ring all-reduce
    on 4 NPUs either way: E + 2 (n - 1) (d(S/4) + E) + (n - 1) P(S/4) = 10 + 6 (16,884 + 10)
    + 3 x 981 = 104,317 ns at 1 byte/ns (P: three passes at local-mem-bw 50 GB/s)."""
    workload = "{generate: 'r12:tp_all_reduce', num_npus: 4, size: 65536, pg: %s}"
    told = {}
    for given, names in ((pg, "comm.group 1"), ("runs", "comm.tp")):
        path = _write(r12, f"{given}.yaml", workload % given, _net("Ring", 4), "congestion_unaware")
        done = _cli(r12, "run", path.name)
        assert f"iteration time {ring_all_reduce(4, 65536):,} ns" in done.stderr  # the summary's answer
        assert names in done.stderr
        told[given] = " ".join(" ".join(done.stderr.split()).partition("warning: ")[2].split("warning: ")[:1])
    assert told["runs"] == ""
    assert "metadata 'pg_names'" in told[pg] and "[[dimension, first group id, last group id], ...]" in told[pg], told


# -- an installed package's entry point that names a module it did not install ---------------------

@pytest.mark.parametrize("value, told", [
    ("algos_gone:ALGO", "whose module 'algos_gone' cannot be imported (No module named 'algos_gone')"),
    ("r12:NO_SUCH_ALGO", "whose module 'r12' has no attribute 'NO_SUCH_ALGO'"),
])
def test_an_entry_point_whose_target_is_missing_names_the_package_not_a_call(r12, value, told):
    """docs/collectives.md: an algorithm may come from an entry point in the group
    ``simpy_astra.collectives`` of an installed package. A package whose entry point names a
    module it does not ship (renamed, left out of the wheel) was reported as "raised
    ModuleNotFoundError ... (at the call, before any line of it ran: check its parameters
    against the docs)": no call was made and there are no parameters. The line now names the
    package that declares the entry point and the fix."""
    site = r12 / "site"
    (site / "ringpkg-0.1.dist-info").mkdir(parents=True)
    (site / "ringpkg-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: ringpkg\nVersion: 0.1\n")
    (site / "ringpkg-0.1.dist-info" / "entry_points.txt").write_text(f"[simpy_astra.collectives]\nmyRing = {value}\n")
    path = _write(r12, "s.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "congestion_unaware")
    path.write_text(path.read_text().replace("all-reduce-implementation: [ring]", "all-reduce-implementation: [myRing]"))
    line = _one_line(_cli(r12, "run", path.name, "--quiet", status=2, path=site))
    assert f"entry point 'myRing' of simpy_astra.collectives ({value}), declared by the installed package ringpkg " \
           f"0.1, {told}" in line, line
    assert "reinstall ringpkg or fix its entry point" in line and "check its parameters" not in line


# -- a sweep from Python over numpy's values --------------------------------------------------------

def test_a_link_models_parameter_swept_from_python_over_numpy_values(r12):
    """simpy_astra/network/README.md: from Python, ``link_params={"gap_ns": 50}`` is checked as
    the YAML's is. A sweep written ``for gap in np.arange(0, 150, 50)`` was refused at once,
    "parameter 'gap_ns' must be an integer (got np.int64(0))", which numpy's int is. Each gap
    now runs: one hop of S = 4,096 B after the gap, d(S) + gap = 500 + 4,096 + gap ns."""
    import numpy as np

    from simpy_astra.simulation import Simulation

    (r12 / "paced_link.py").write_text((HERE.parent / "examples" / "paced_link.py").read_text())
    from paced_link import PacedLink

    send = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 4, src: 0, dst: 1}"
    path = _write(r12, "s.yaml", send, _net("Ring", 4), "congestion_aware")
    finished = {int(gap): max(r.finished_ns for r in Simulation.from_scenario(
        str(path), link_model=PacedLink, link_params={"gap_ns": gap}).run()) for gap in np.arange(0, 150, 50)}
    assert finished == {gap: d(4096) + gap for gap in (0, 50, 100)}
    with pytest.raises(Exception, match=r"parameter 'gap_ns' must be an integer \(got np.float64\(50.5\)\)"):
        Simulation.from_scenario(str(path), link_model=PacedLink, link_params={"gap_ns": np.float64(50.5)})


def test_a_script_of_ones_own_hands_the_run_numpys_numbers(r12):
    """docs/cosimulation.md: a script drives the run (``sim.run(until=t)``, ``set_bandwidth``,
    ``send_background``, ``put``, ``slow_down``, ``pause``), each argument checked where it
    enters. Given numpy's numbers (an experiment over ``np.arange`` or ``np.linspace``), each
    was refused as not a number ("run(until=...) must be a finite number >= 0 (got
    np.int64(5000))"), which they are; each is now taken as Python's. On the docs' ring
    (cosim_ring.yaml: 1 MiB all-reduce on 4 NPUs, 6 (4,882 + 500 + 10) + 10 = 32,362 ns),
    a background put of 1 MiB on link 0->1 at t = 0 delays it by trunc(2^20 / B) - E = 19,521
    ns (docs/cosimulation.md), whether its size is numpy's or Python's."""
    import numpy as np

    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(COSIM_RING))
    sim.run(until=np.int64(5000))
    assert sim.env.now == 5000
    link = sim.network.link(0, 1)
    link.set_bandwidth(np.float32(50.0))
    link.set_bandwidth(np.int64(50))
    sim.npu(1).pause(np.int64(0))
    sim.npu(2).slow_down(np.float64(1.0))
    sim.network.send_background(np.int64(2), np.int64(3), np.int64(0))
    assert max(r.finished_ns for r in sim.run()) == 32_362
    figures = {}
    for size in (2**20, np.int64(2**20)):
        sim = Simulation.from_scenario(str(COSIM_RING))
        sim.network.link(0, 1).put(size)
        figures[type(size).__name__] = max(r.finished_ns for r in sim.run())
    assert figures == {"int": 32_362 + 19_521, "int64": 32_362 + 19_521}
    with pytest.raises(ValueError, match=r"must be a finite number >= 0 \(got np.float64\(nan\)\)"):
        Simulation.from_scenario(str(COSIM_RING)).run(until=np.float64("nan"))


# -- a switch model that hands an item on twice -------------------------------------------------------

def test_a_switch_that_hands_an_item_on_twice_is_one_line_not_an_early_arrival(r12):
    """simpy_astra/network/README.md: ``send_on(item)`` hands the item on, once per item. A
    switch whose ``receive`` hands each item on at once and (a slip) also queues it for the
    base's loop handed every message on twice: the second call moved it past its next link,
    so each message arrived one hop early and the ring all-reduce on [Switch] ended at the
    one-hop figure, 6 (d(S/4) + E) + E, instead of the two-hop 6 (2 d(S/4) + E) + E, without
    a word. It is now one line naming the class and the method; without the slip the switch
    runs the two-hop figure."""
    from tests.test_extensions_round4 import E

    size = 65536
    hop = d(size // 4)
    once = _write(r12, "once.yaml", _bench("all_reduce", size, 4),
                  _net("Switch", 4, extra=", switch-model: 'r12:CutThroughOnce'"), "congestion_aware",
                  system="{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
                         "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: "
                         "[ring], all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
                         "all-to-all-implementation: [direct]}")
    assert f"iteration time {6 * (2 * hop + E) + E:,} ns" in _cli(r12, "run", once.name, "--quiet").stdout
    twice = r12 / "twice.yaml"
    twice.write_text(once.read_text().replace("CutThroughOnce", "CutThrough"))
    line = _one_line(_cli(r12, "run", twice.name, "--quiet", status=2))
    assert line.startswith("error: switch model 'r12:CutThrough', method send_on() was given an item it had "
                           "already handed on"), line


# -- a link model whose dequeue gives one item for ever ---------------------------------------------

def test_a_link_whose_dequeue_never_removes_its_item_is_one_line_not_a_runaway(r12):
    """simpy_astra/network/README.md: ``dequeue() -> item | None``, what to send next. One that
    returns the head of its queue without removing it sent that item again and again: the
    message was handed on at every arrival and the clock ran on (past 10^9 ns within seconds,
    toward the horizon, 292 years), the run never ending. It is now one line naming the class
    and the method at the second time the same item comes out."""
    path = _write(r12, "s.yaml", _bench("all_to_all", 65536, 4),
                  _net("Switch", 4, extra=", link-model: 'r12:Forgetful'"), "congestion_aware")
    line = _one_line(_cli(r12, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: link model 'r12:Forgetful': dequeue() returned"), line
    assert "it gave this item before" in line and "remove" in line


def test_an_item_a_serving_loop_queues_again_may_come_out_again(r12):
    """The check above stops a dequeue that gives one item twice; a loop of one's own that
    takes an item out, finds it not ready and queues it again gets it back rightly: a send
    of S = 4,096 B on [Ring] starts at 1,000 ns (the start-up delay; the loop looks every
    100 ns while idle) and takes d(S) = 4,596 ns, 5,596 ns."""
    send = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 4, src: 0, dst: 1}"
    path = _write(r12, "s.yaml", send, _net("Ring", 4, extra=", link-model: 'r12:NotYet'"), "congestion_aware")
    assert f"iteration time {1000 + d(4096):,} ns" in _cli(r12, "run", path.name, "--quiet").stdout


def test_a_models_checks_are_its_class_chosen_once_and_no_link_rebinds_its_methods(r12):
    """The checks above were bound on each link by ``LinkElement.__init__`` (``link.dequeue =
    link._dequeue_once``, four methods per link). The network now chooses them once, as a
    subclass of the user's class with the checks in front (``network/checked_models.py``):
    every link of a run shares that one class, named as the user's, and no link holds a method
    of its own; the built-in link is :class:`Link` itself and a model that writes none of the
    guarded methods is built as its own class. With the built-in link the ring all-reduce of
    1 MiB on 4 NPUs is still the docs' 32,362 ns (docs/cosimulation.md)."""
    from r12 import NotYet

    from simpy_astra.network.link import Link
    from simpy_astra.network.models import ProcessLink
    from simpy_astra.simulation import Simulation

    for model, want in ((None, Link), (ProcessLink, ProcessLink), (NotYet, None)):
        sim = Simulation.from_scenario(str(COSIM_RING), **({"link_model": model} if model else {}))
        links = sim.network.links()
        classes = {type(link) for link in links}
        assert len(classes) == 1, classes
        built = classes.pop()
        assert built is want if want else (built is not NotYet and issubclass(built, NotYet)
                                           and (built.__module__, built.__qualname__) == ("r12", "NotYet"))
        assert not {"dequeue", "enqueue", "offer", "transmit"} & {k for link in links for k in vars(link)}
        if model is None:
            assert max(r.finished_ns for r in sim.run()) == 32_362


def test_a_serving_loop_that_transmits_one_item_twice_is_one_line_not_an_early_arrival(r12):
    """``transmit(item)`` carries the item once and hands it on at the far end. A lossy link
    written as its own loop, which transmits each item again after a lost attempt, handed the
    message on twice: the second hand-on moved it past its next link, and the send 0 -> 1
    across [Switch] ended early (8,693 ns for S = 4,096 B at 1 byte/ns, where even one attempt
    per hop takes 2 d(S) = 9,192 ns), in silence. It is now one line
    naming the class and the method, and saying how to charge a lost attempt (hold_ns)."""
    send = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 4, src: 0, dst: 1}"
    path = _write(r12, "s.yaml", send, _net("Switch", 4, extra=", link-model: 'r12:SendsTwice'"), "congestion_aware")
    line = _one_line(_cli(r12, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: link model 'r12:SendsTwice', method transmit() was given an item it had already "
                           "carried"), line
    assert "hold_ns" in line
