"""A user collective that yields or returns the wrong thing, names a peer that does not exist
or sends a negative size is reported as the user's error (exit 2), naming their function or
the call, never as a simpy-astra bug."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-gather-implementation": ["ring"],
          "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
          "collective-optimization": "baseline"}

ALGOS = textwrap.dedent('''
    def yields_none(ctx):
        yield None

    def yields_int(ctx):
        yield 5

    def returns_at_once(ctx):
        return
        yield

    def sends_negative(ctx):
        right = ctx.members[(ctx.index + 1) % len(ctx.members)]
        ctx.send(right, -4096)
        yield ctx.endpoint()

    def sends_to_99(ctx):
        ctx.send(99, 10)
        yield ctx.endpoint()

    def sends_to_itself(ctx):
        ctx.send(ctx.members[ctx.index], 10)
        yield ctx.endpoint()
''')


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    (tmp_path / "bad_algos.py").write_text(ALGOS)
    monkeypatch.syspath_prepend(str(tmp_path))
    for rank in range(4):
        write_et(str(tmp_path / f"w.{rank}.et"), [make_node(0, "ar", COMM_COLL_NODE, attrs={
            "comm_type": 0, "comm_size": 4096, "is_cpu_op": False})])
    return tmp_path


@pytest.mark.parametrize("name, words", [
    ("yields_none", ("'yields_none'", "bad_algos.py", "yielded None")),
    ("yields_int", ("'yields_int'", "yielded 5")),
    ("returns_at_once", ("'returns_at_once'", "returned before it yielded")),
    ("sends_negative", ("ctx.send(..., -4096)", "bytes >= 0")),
    ("sends_to_99", ("ctx.send(99, ...)", "does not exist (NPUs 0..3)")),
    ("sends_to_itself", ("is this NPU itself",)),
])
def test_users_collective_mistakes_are_theirs(user_dir: Path, capsys, name, words):
    system = {**SYSTEM, "all-reduce-implementation": [f"bad_algos:{name}"]}
    path = user_dir / "s.yaml"
    path.write_text(f"workload: {user_dir / 'w'}\nsystem: {json.dumps(system)}\n"
                    f"network: {{topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500]}}\n"
                    f"remote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and "simpy-astra bug" not in err[0], err
    for word in words:
        assert word in err[0], (word, err[0])


TOPOS = textwrap.dedent('''
    from simpy_astra.topologies.ring import Ring

    class NegativeHops(Ring):
        def hops(self, src, dst):
            return -1

    class TextHops(Ring):
        def hops(self, src, dst):
            return "two"

    class NanLatency(Ring):
        def path_profile(self, src, dst):
            return float("nan"), 50.0

    class WrongEnd(Ring):
        def route(self, src, dst):
            return [src, (dst + 1) % self.npus_count]

    class NegativeLink(Ring):
        def link_params(self, src, dst):
            return -5.0, 500.0
''')


@pytest.mark.parametrize("topology, backend, words", [
    ("NegativeHops", "congestion_unaware", ("hops(", "returned -1", "integer >= 1")),
    ("TextHops", "congestion_unaware", ("returned 'two'",)),
    ("NanLatency", "congestion_unaware", ("path_profile(", "returned (nan, 50.0)")),
    ("WrongEnd", "congestion_aware", ("route(", "device ids from")),
    ("NegativeLink", "packet", ("link_params(", "returned (-5.0, 500.0)")),
])
def test_users_topology_answers_are_checked(user_dir: Path, capsys, topology, backend, words):
    (user_dir / "bad_topos.py").write_text(TOPOS)
    system = {**SYSTEM, "all-reduce-implementation": ["ring"]}
    path = user_dir / "s.yaml"
    path.write_text(f"workload: {user_dir / 'w'}\nsystem: {json.dumps(system)}\nbackend: {backend}\n"
                    f"network: {{topology: ['bad_topos:{topology}'], npus_count: [4], bandwidth: [50], "
                    f"latency: [500]}}\nremote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and "simpy-astra bug" not in err[0] and f"(bad_topos:{topology})" in err[0], err
    for word in words:
        assert word in err[0], (word, err[0])


LINKS = textwrap.dedent('''
    from simpy_astra.network.models import ProcessLink

    class HalfNs(ProcessLink):
        def transmit(self, item):  # every item starts, and so arrives, half a nanosecond off
            yield self.env.timeout(0.5)  # (a hold_ns of 0.5 is cut to whole ns: 0)
            yield from super().transmit(item)

    class BlackHole(ProcessLink):
        def offer(self, item):
            pass  # never delivers
''')


@pytest.mark.parametrize("model, code, words", [
    ("HalfNs", EXIT_INPUT_ERROR, ("link model 'bad_links:HalfNs'", "whole nanoseconds")),
    ("BlackHole", 3, ("stalled", "NPU 0 waits")),
])
def test_users_link_model_is_held_to_its_contract(user_dir: Path, capsys, model, code, words):
    (user_dir / "bad_links.py").write_text(LINKS)
    system = {**SYSTEM, "all-reduce-implementation": ["ring"]}
    path = user_dir / "s.yaml"
    path.write_text(f"workload: {user_dir / 'w'}\nsystem: {json.dumps(system)}\nbackend: congestion_aware\n"
                    f"network: {{topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500], "
                    f"link-model: 'bad_links:{model}'}}\nremote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    got = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert got == code, err
    assert len(err) == 1, err
    for word in words:
        assert word in err[0], (word, err[0])


MODELS = textwrap.dedent('''
    from simpy_astra.network.models import ProcessLink
    from simpy_astra.network.switch import SwitchElement

    class RaisesInHold(ProcessLink):
        def hold_ns(self, item):
            raise ValueError("no tokens left")

    class RaisesInDequeue(ProcessLink):
        def dequeue(self):
            return self.pick()

        def pick(self):
            raise KeyError("empty")

    class RaisesInRun(ProcessLink):
        def run(self):
            raise RuntimeError("my loop")
            yield

    class RaisesInRelease(SwitchElement):
        def release_ns(self, item, arrived_ns):
            raise ValueError("no route table")

    def holding(value):
        class Holds(ProcessLink):
            def hold_ns(self, item):
                return value
        return Holds

    InfHold = holding(float("inf"))
    TextHold = holding("10")
    NoneHold = holding(None)
    NanHold = holding(float("nan"))
    NegativeHold = holding(-5)

    class NanRelease(SwitchElement):
        def release_ns(self, item, arrived_ns):
            return float("nan")
''')


#: a generated workload, as the docs' scenarios have it (not ET files on disk)
GENERATED = "{generate: microbench, collective: all_reduce, size: 4096, num_npus: 4}"


def _model_run(user_dir: Path, capsys, model: str, *flags: str, workload: str = "") -> tuple[int, list[str]]:
    import sys

    sys.modules.pop("models_of_mine", None)
    (user_dir / "models_of_mine.py").write_text(MODELS)
    system = {**SYSTEM, "all-reduce-implementation": ["ring"]}
    path = user_dir / "s.yaml"
    path.write_text(f"workload: {workload or user_dir / 'w'}\nsystem: {json.dumps(system)}\nbackend: congestion_aware\n"
                    f"network: {{topology: [Switch], npus_count: [4], bandwidth: [50], latency: [500], "
                    f"{model}}}\nremote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    code = main(["run", str(path), "--quiet", *flags])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("model, words", [
    ("link-model: 'models_of_mine:RaisesInHold'",
     ("link model 'models_of_mine:RaisesInHold', method hold_ns() raised ValueError: no tokens left",
      "models_of_mine.py:7")),
    ("link-model: 'models_of_mine:RaisesInDequeue'",
     ("link model 'models_of_mine:RaisesInDequeue', method dequeue() raised KeyError", "models_of_mine.py:14")),
    ("link-model: 'models_of_mine:RaisesInRun'",
     ("link model 'models_of_mine:RaisesInRun', method run() raised RuntimeError: my loop",)),
    ("switch-model: 'models_of_mine:RaisesInRelease'",
     ("switch model 'models_of_mine:RaisesInRelease', method release_ns() raised ValueError: no route table",)),
])
@pytest.mark.parametrize("workload", ["", GENERATED], ids=["et-files", "generated"])
def test_a_models_exception_is_the_users_naming_class_and_method(user_dir: Path, capsys, model, words, workload):
    """Issue 52: these were 'internal error ... this is a simpy-astra bug' (SimPy re-raises a
    process's failure as a copy whose traceback ends in SimPy), and --debug showed nothing.
    With a generated workload (every scenario the docs show) they still were: the run
    re-raised the error ``from None``, dropping the cause that says whose code raised it."""
    code, err = _model_run(user_dir, capsys, model, workload=workload)
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and "simpy-astra bug" not in err[0], err
    for word in words:
        assert word in err[0], (word, err[0])
    code, err = _model_run(user_dir, capsys, model, "--debug", workload=workload)
    assert code == EXIT_INPUT_ERROR
    assert err[0] == "Traceback (most recent call last):" and any("models_of_mine.py" in ln for ln in err), err


@pytest.mark.parametrize("model, words", [
    ("link-model: 'models_of_mine:InfHold'", "link model 'models_of_mine:holding.<locals>.Holds': "
                                             "hold_ns() returned inf; it must return a finite number of ns >= 0"),
    ("link-model: 'models_of_mine:TextHold'", "hold_ns() returned '10'"),
    ("link-model: 'models_of_mine:NoneHold'", "hold_ns() returned None"),
    ("link-model: 'models_of_mine:NanHold'", "hold_ns() returned nan"),
    ("link-model: 'models_of_mine:NegativeHold'", "hold_ns() returned -5"),
    ("switch-model: 'models_of_mine:NanRelease'", "switch model 'models_of_mine:NanRelease': release_ns() "
                                                  "returned nan; it must return a finite time in ns"),
])
def test_a_models_bad_return_value_is_named(user_dir: Path, capsys, model, words):
    """Issue 52: inf, '10' and None were internal errors; NaN and -5 ran as if 0."""
    code, err = _model_run(user_dir, capsys, model)
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and words in err[0], err


@pytest.mark.parametrize("model, words", [
    ("link-model: {class: strict_priority, weight: 3}",
     "field 'link-model' (strict_priority) has an unknown parameter 'weight' (it takes none)"),
    ("link-model: {class: ecn, threshold: 5}", "(ecn) has an unknown parameter 'threshold' (did you mean "
                                               "'threshold_bytes'? it takes: threshold_bytes)"),
    ("link-model: {class: ecn, threshold_bytes: -1}", "(ecn) threshold_bytes must be a whole number of bytes >= 0"),
    ("switch-model: {class: delay, delay_ns: -1000}",
     "field 'switch-model' (delay) delay_ns must be a whole number of ns >= 0 (got -1000)"),
])
def test_a_models_parameters_are_checked_before_the_run(user_dir: Path, capsys, model, words):
    """Issue 52: an unknown parameter of strict_priority was an internal TypeError (its
    ``__init__`` passes ``**kwargs`` on); a negative switch delay ran as no delay."""
    code, err = _model_run(user_dir, capsys, model)
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and words in err[0], err


def test_a_hold_of_numpys_numbers_is_a_hold_like_pythons(user_dir: Path, capsys) -> None:
    """A finite number >= 0 of any kind is a hold: numpy's int64 (whose arithmetic would
    overflow in the reports) is taken as the Python int it equals."""
    np = pytest.importorskip("numpy")
    import sys

    sys.modules.pop("models_of_mine", None)
    (user_dir / "models_of_mine.py").write_text(MODELS)
    import models_of_mine

    finish = {}
    for value in (3, np.int64(3), np.float64(3.0)):
        from simpy_astra.config.scenario import load_scenario
        from simpy_astra.simulation import Simulation

        system = {**SYSTEM, "all-reduce-implementation": ["ring"]}
        path = user_dir / "s.yaml"
        path.write_text(f"workload: {user_dir / 'w'}\nsystem: {json.dumps(system)}\nbackend: congestion_aware\n"
                        f"network: {{topology: [Switch], npus_count: [4], bandwidth: [50], latency: [500]}}\n"
                        f"remote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
        sim = Simulation(load_scenario(str(path)), link_model=models_of_mine.holding(value))
        finish[repr(value)] = max(r.finished_cycles for r in sim.run())
    assert len(set(finish.values())) == 1, finish


def test_a_sweep_point_whose_model_raises_names_the_class_method_and_line(user_dir: Path, capsys) -> None:
    """A sweep records the line run prints (class, method, file:line), not the bare
    'ValueError: no tokens left' it recorded, which named no code; and it points at the point's
    scenario for the traceback (a sweep takes no --debug)."""
    import csv
    import sys

    sys.modules.pop("swept_models", None)  # a name of its own: earlier tests' folders are searched too
    (user_dir / "swept_models.py").write_text(MODELS)
    system = {**SYSTEM, "all-reduce-implementation": ["ring"]}
    (user_dir / "base.yaml").write_text(
        f"workload: {GENERATED}\nsystem: {json.dumps(system)}\nbackend: congestion_aware\n"
        f"network: {{topology: [Switch], npus_count: [4], bandwidth: [50], latency: [500], "
        f"link-model: 'swept_models:RaisesInHold'}}\n")
    (user_dir / "sweep.yaml").write_text("base: base.yaml\naxes:\n  network.latency: [500, 600]\n")
    assert main(["sweep", str(user_dir / "sweep.yaml"), "--out", str(user_dir / "out"), "--jobs", "1"]) == 4
    capsys.readouterr()
    with open(user_dir / "out" / "results.csv") as f:
        errors = {row["error"] for row in csv.DictReader(f)}
    assert errors == {"PluginError: link model 'swept_models:RaisesInHold', method hold_ns() raised ValueError: "
                      f"no tokens left (at {user_dir / 'swept_models.py'}:7); this is an error in that code, not "
                      "in simpy-astra: run the point's points/KEY.yaml with --debug for its traceback"}, errors
