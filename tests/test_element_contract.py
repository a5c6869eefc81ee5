"""The element contract (``simpy_astra/network/README.md``): a link and a switch model written
only from it, and ``link-model: fifo``, get every control, fault, observation, statistic and
job feature the built-in elements have, from a scenario and in co-simulation.

Links of exactly 1 byte/ns (GB = 2^30 B) and ``LAT`` ns latency, so an uncontended hop of S
bytes starting at t arrives at ``t + LAT + S``. The user's link holds every item ``G`` ns
before it starts; the user's switch lets an item leave ``D`` ns after it arrived. A send of
S bytes from NPU 0 to NPU 1 over the switch (device 2) then arrives at
``G + (LAT + S) + D + G + (LAT + S)``: every figure below is derived from that.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import simpy
import yaml

from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError, StalledError
from simpy_astra.running.jobs import job_results
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE

ROOT = Path(__file__).resolve().parents[1]
ONE_BYTE_PER_NS_GBPS = 1e9 / (1 << 30)
LAT = 100
S = 1_000
G = 50  # the user's link: hold before each item
D = 30  # the user's switch: pipeline delay
HOP = LAT + S  # one uncontended hop, at 1 byte/ns

#: what a user writes from the README's contract (and nothing else)
USER_MODELS = textwrap.dedent('''
    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.switch import SwitchElement


    class PacedLink(LinkElement):
        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int):
            super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
            self.gap_ns = gap_ns

        def hold_ns(self, item):
            return self.gap_ns


    class SlowSwitch(SwitchElement):
        def __init__(self, env, device, forward, delay_ns: int = 0):
            self.delay_ns = delay_ns
            super().__init__(env, device, forward)

        def release_ns(self, item, arrived_ns):
            return arrived_ns + self.delay_ns
''')

USER = {"link-model": {"class": "my_models:PacedLink", "gap_ns": G},
        "switch-model": {"class": "my_models:SlowSwitch", "delay_ns": D}}
FIFO = {"link-model": "fifo"}
#: (network keys, hold per link, switch delay)
MODELS = {"user": (USER, G, D), "fifo": (FIFO, 0, 0)}
SYSTEM = {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10,
          "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": 50,
          "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
          "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "my_models.py").write_text(USER_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def send_recv(folder: Path, name: str = "w") -> str:
    """NPU 0 sends S bytes to NPU 1; the ET prefix."""
    (folder / name).mkdir(exist_ok=True)
    write_et(str(folder / name / "w.0.et"), [make_node(1, "send", COMM_SEND_NODE, attrs={
        "comm_dst": 1, "comm_size": S, "comm_tag": 7})])
    write_et(str(folder / name / "w.1.et"), [make_node(1, "recv", COMM_RECV_NODE, attrs={
        "comm_src": 0, "comm_size": S, "comm_tag": 7})])
    return str(folder / name / "w")


def scenario(folder: Path, models: dict, npus: int = 2, jobs: list | None = None) -> str:
    network = {"topology": ["Switch"], "npus_count": [npus], "bandwidth": [ONE_BYTE_PER_NS_GBPS],
               "latency": [LAT], **models}
    doc: dict = {"system": SYSTEM, "network": network, "backend": "congestion_aware",
                 "remote_memory": {"memory-type": "NO_MEMORY_EXPANSION"}, "fold_symmetry": False}
    if jobs is None:
        doc["workload"] = send_recv(folder)
    else:
        doc["jobs"] = jobs
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def build(folder: Path, which: str, **kwargs) -> Simulation:
    return Simulation(load_scenario(scenario(folder, MODELS[which][0])), **kwargs)


def alone_ns(hold: int, delay: int) -> int:
    """Arrival of one uncontended message over the switch: hold, hop, delay, hold, hop."""
    return hold + HOP + delay + hold + HOP


# ---------------------------------------------------------------------------- the run
@pytest.mark.parametrize("which", MODELS)
def test_a_scenario_runs_the_models_with_their_parameters(user_dir: Path, which: str) -> None:
    models, hold, delay = MODELS[which]
    sim = build(user_dir, which)
    reports = {r.npu_id: r for r in sim.run()}
    assert reports[1].finished_cycles == alone_ns(hold, delay)
    up, down = sim.network.link(0, 2), sim.network.link(2, 1)
    assert (up.bytes, up.busy_ns, down.bytes, down.busy_ns) == (S, S, S, S)
    assert {(s.src, s.dst): s.bytes for s in sim.network.link_stats()}[(0, 2)] == S
    if which == "user":
        assert up.gap_ns == G and sim.network.switch(2).delay_ns == D
        assert isinstance(up.process, simpy.Process) and isinstance(sim.network.switch(2).process, simpy.Process)


@pytest.mark.parametrize("which", MODELS)
def test_observation_sees_a_models_traffic(user_dir: Path, which: str) -> None:
    _, hold, delay = MODELS[which]
    sim = build(user_dir, which)
    seen: list[tuple] = []
    for kind in ("message_sent", "message_delivered", "link_start", "link_end", "node_end"):
        sim.on(kind, lambda o: seen.append((o.kind, o.time_ns, o.what if o.kind.startswith("link") else None)))
    forwarded: list[float] = []
    sim.network.switch(2).watch("switch_forward", lambda sw, key, size: forwarded.append(sim.env.now))
    sim.run()
    up, down = sim.network.link(0, 2), sim.network.link(2, 1)
    arrive = alone_ns(hold, delay)
    assert [s for s in seen if s[0] != "node_end"] == [
        ("message_sent", 0, None), ("link_start", hold, up), ("link_end", hold + HOP, up),
        ("link_start", hold + HOP + delay + hold, down), ("link_end", arrive, down),
        ("message_delivered", arrive, None)]
    assert forwarded == [hold + HOP + delay]


# ---------------------------------------------------------------------------- co-simulation
A = 200  # ns into the first hop's wire when the fault comes


def _beside_an_operator(user_dir: Path, which: str, operator) -> tuple[int, Any, int, int]:
    """Run ``which``'s scenario in co-simulation with ``operator(env, up, hold)`` beside it
    (``up`` the link 0 -> switch): NPU 1's finish, ``up``, the model's hold and delay."""
    _, hold, delay = MODELS[which]
    env = simpy.Environment()
    sim = build(user_dir, which, env=env)
    up = sim.network.link(0, 2)
    env.process(operator(env, up, hold))
    reports = {r.npu_id: r for r in sim.run()}
    return reports[1].finished_cycles, up, hold, delay


@pytest.mark.parametrize("which", MODELS)
def test_an_outage_pauses_the_wire_and_busy_ns_is_live(user_dir: Path, which: str) -> None:
    live: list[float] = []

    def operator(env, up, hold):
        t_down, t_up = hold + A, 1_000
        yield env.timeout(hold + A // 2)
        live.append(up.busy_ns)  # half-way to the outage: A/2 of the message on the wire
        yield env.timeout(t_down - env.now)
        up.take_down()
        yield env.timeout(t_up - env.now)
        live.append(up.busy_ns)  # down: nothing more on the wire
        up.bring_up()

    finish, up, hold, delay = _beside_an_operator(user_dir, which, operator)
    # the S - A bytes left cross after bring_up (at 1,000 ns): LAT + S - A later at the switch
    at_switch = 1_000 + LAT + S - A
    assert finish == at_switch + delay + hold + HOP
    assert live == [A // 2, A] and up.busy_ns == S and up.bytes == S


@pytest.mark.parametrize("which", MODELS)
def test_a_faster_link_from_mid_message(user_dir: Path, which: str) -> None:
    def operator(env, up, hold):
        yield env.timeout(hold + A)
        up.set_bandwidth(2 * ONE_BYTE_PER_NS_GBPS)  # the S - A bytes left at 2 bytes/ns

    finish, up, hold, delay = _beside_an_operator(user_dir, which, operator)
    at_switch = hold + A + LAT + (S - A) // 2
    assert finish == at_switch + delay + hold + HOP
    assert up.busy_ns == A + (S - A) // 2 and up.bandwidth_gbps == 2 * ONE_BYTE_PER_NS_GBPS


@pytest.mark.parametrize("which", MODELS)
def test_put_is_a_simpy_event_that_arrives_on_time(user_dir: Path, which: str) -> None:
    _, hold, _ = MODELS[which]
    env = simpy.Environment()
    sim = build(user_dir, which, env=env)
    link = sim.network.link(1, 2)  # a link the workload does not use
    got: list[float] = []

    def user(env):
        got.append((yield link.put(S)))
        got.append((yield sim.network.send_background(1, 0, S)))

    env.process(user(env))
    sim.run()
    env.run()
    assert got[0] == hold + HOP
    assert got[1] > got[0]  # (its own route, after the put; its timing is the run's)
    with pytest.raises(ValueError, match="size_bytes"):
        link.put(float("nan"))
    with pytest.raises(ValueError, match="size_bytes"):
        link.put(2**63)
    for bad in (float("nan"), 0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="bandwidth_gbps"):
            link.set_bandwidth(bad)


@pytest.mark.parametrize("which", MODELS)
def test_a_failed_switch_and_a_link_down_for_good_end_in_stall_reports(user_dir: Path, which: str) -> None:
    _, hold, _ = MODELS[which]
    env = simpy.Environment()
    sim = build(user_dir, which, env=env)

    def operator(env):
        yield env.timeout(hold + A)
        sim.fail_device(2)

    env.process(operator(env))
    with pytest.raises(StalledError, match=r"held by link 0->2, which is failed"):
        sim.run()
    assert all(link.failed and not link.up for link in sim.network.links())
    assert sim.network.switch(2).failed

    sim = build(user_dir, which)
    sim.network.link(2, 1).take_down()  # before the run: the message waits at the switch
    with pytest.raises(StalledError, match=r"held by link 2->1, which is down"):
        sim.run()


@pytest.mark.parametrize("which", MODELS)
def test_jobs_count_a_models_bytes_per_job(user_dir: Path, which: str) -> None:
    models, hold, delay = MODELS[which]
    a, b = send_recv(user_dir, "a"), send_recv(user_dir, "b")
    jobs = [{"name": "a", "workload": a, "npus": [0, 1]}, {"name": "b", "workload": b, "npus": [2, 3]}]
    sim = Simulation(load_scenario(scenario(user_dir, models, npus=4, jobs=jobs)))
    finish = {j.name: j.finished_cycles for j in job_results(sim.jobs, sim.run())}
    assert finish == {"a": alone_ns(hold, delay), "b": alone_ns(hold, delay)}  # disjoint links
    # the 4-NPU switch is device 4
    assert sim.link_bytes_by_job.by_label() == {(0, 4): {"a": S}, (4, 1): {"a": S}, (2, 4): {"b": S},
                                                (4, 3): {"b": S}}


# ---------------------------------------------------------------------------- a model's hold
H = 20  # ns into the user's link's hold (G = 50) when the fault comes


def test_held_lists_a_message_in_its_hold(user_dir: Path) -> None:
    """Issue 52: ``held()`` (what the stall check reads) missed the message a model had
    dequeued and was holding (``hold_ns``): neither queued nor on the wire."""
    seen: list = []

    def operator(env, up, hold):
        yield env.timeout(H)
        seen.append([(type(item).__name__, key is not None) for item, key in up.held()])
        seen.append(up.holding is not None and up.on_wire is None and not list(up.queue))

    finish, up, hold, delay = _beside_an_operator(user_dir, "user", operator)
    assert seen == [[("_Message", True)], True]
    assert finish == alone_ns(G, D) and up.holding is None and up.held() == []


def test_an_outage_pauses_a_hold(user_dir: Path) -> None:
    """Down at H ns into the G ns hold, up at 1,000 ns: the G - H ns left of the hold run
    then, so the message starts at 1,000 + G - H (before: the hold ran on through the outage
    and the message started at 1,000)."""
    def operator(env, up, hold):
        yield env.timeout(H)
        up.take_down()
        yield env.timeout(1_000 - env.now)
        assert up.holding is not None  # still held, not started while down
        up.bring_up()

    finish, up, hold, delay = _beside_an_operator(user_dir, "user", operator)
    start = 1_000 + G - H
    assert finish == start + HOP + D + G + HOP
    assert up.busy_ns == S


def test_a_link_failed_during_a_hold_names_the_held_message(user_dir: Path) -> None:
    env = simpy.Environment()
    sim = build(user_dir, "user", env=env)

    def operator(env):
        yield env.timeout(H)
        sim.network.link(0, 2).fail()

    env.process(operator(env))
    with pytest.raises(StalledError, match=r"held by link 0->2, which is failed"):
        sim.run()


def test_a_model_class_handed_in_from_python(user_dir: Path) -> None:
    """``Simulation(..., link_model=Class, link_params=..., switch_model=..., switch_params=...)``
    runs as the YAML's ``link-model: {class: ..., ...}`` does; bad parameters are refused
    the same way."""
    import my_models

    inputs = load_scenario(scenario(user_dir, {}))
    sim = Simulation(inputs, link_model=my_models.PacedLink, link_params={"gap_ns": G},
                     switch_model=my_models.SlowSwitch, switch_params={"delay_ns": D})
    assert {r.npu_id: r.finished_cycles for r in sim.run()}[1] == alone_ns(G, D)
    assert type(sim.network.link(0, 2)) is my_models.PacedLink
    sim = Simulation(load_scenario(scenario(user_dir, {})), switch_model="delay")
    assert {r.npu_id: r.finished_cycles for r in sim.run()}[1] == alone_ns(0, 100)
    with pytest.raises(InputError, match=r"link_model=: \(my_models:PacedLink\) misses the required parameter"):
        Simulation(load_scenario(scenario(user_dir, {})), link_model=my_models.PacedLink)
    with pytest.raises(InputError, match=r"switch_model=: \(delay\) delay_ns must be a whole number"):
        Simulation(load_scenario(scenario(user_dir, {})), switch_model="delay", switch_params={"delay_ns": -1})
    with pytest.raises(InputError, match="does not derive from"):
        Simulation(load_scenario(scenario(user_dir, {})), link_model=dict)


# ---------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("given, words", [
    ({"class": "my_models:PacedLink", "gap_nss": 5}, ("unknown parameter 'gap_nss'", "did you mean 'gap_ns'")),
    ({"class": "my_models:PacedLink"}, ("misses the required parameter 'gap_ns'",)),
    ({"class": "my_models:PacedLink", "gap_ns": "fast"}, ("parameter 'gap_ns' must be an integer",)),
    ({"gap_ns": 5}, ("needs 'class:'",)),
])
def test_model_parameters_are_checked_against_the_signature(user_dir: Path, given: dict, words: tuple) -> None:
    path = scenario(user_dir, {"link-model": given})
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    text = str(caught.value)
    assert "\n" not in text and "link-model" in text and "s.yaml" in text, text
    for word in words:
        assert word in text, (word, text)


def test_our_models_take_parameters_and_the_string_form_still_works(user_dir: Path) -> None:
    sim = Simulation(load_scenario(scenario(user_dir, {"link-model": {"class": "ecn", "threshold_bytes": 1},
                                                       "switch-model": "delay"})))
    reports = {r.npu_id: r for r in sim.run()}
    assert reports[1].finished_cycles == alone_ns(0, 100)  # DelaySwitch's default delay_ns
    assert sim.network.link(0, 2).threshold_bytes == 1


# ---------------------------------------------------------------------------- no patching
def _rebindings(tree: ast.Module) -> list[ast.Assign]:
    """Assignments that put a function (a ``def`` of the module, a lambda, a bound method
    ``self.<def>``) on another object's attribute, or set an object's ``__class__``: what
    patching looks like. (Handing a callback to an event goes through its method.)"""
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts, strict=False)
                     if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                     else [(target, node.value)])
            for t, value in pairs:
                if not isinstance(t, ast.Attribute):
                    continue
                mine = isinstance(t.value, ast.Name) and t.value.id in ("self", "cls")
                bound = (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                         and value.value.id == "self" and value.attr in functions)
                function = bound or isinstance(value, ast.Lambda) or (
                    isinstance(value, ast.Name) and value.id in functions)
                if t.attr == "__class__" or (function and not mine):
                    found.append(node)
    return found


def test_the_rebinding_check_finds_what_patching_looks_like() -> None:
    patched = ast.parse(textwrap.dedent("""
        def wrap(link, env, clock):
            def begin(item):
                pass
            link._start, link._arrive = begin, print
            env.step = lambda: None
            clock.__class__ = object
            self.fine = begin
            event.resume = self.wrap
            self.also_fine = self.wrap
    """))
    assert [n.lineno for n in _rebindings(patched)] == [5, 6, 7, 9]


def test_no_module_rebinds_another_objects_methods_or_class() -> None:
    found = [f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
             for path in (ROOT / "simpy_astra").rglob("*.py")
             for node in _rebindings(ast.parse(path.read_text()))]
    assert found == []


def test_no_module_outside_network_tests_what_network_it_holds() -> None:
    found = []
    for path in (ROOT / "simpy_astra").rglob("*.py"):
        if "network" in path.relative_to(ROOT / "simpy_astra").parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "getattr", "hasattr", "isinstance") and node.args:
                probed = ast.unparse(node.args[0])
                if ("network" in probed or "link" in probed) and ".get(" not in probed:  # (a YAML mapping's)
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_every_backend_declares_the_protocol() -> None:
    from simpy_astra.network import BACKENDS
    from simpy_astra.topologies import Switch

    members = ("send", "recv", "label", "links", "link", "link_stats", "send_background", "fail_device")
    for name, make in BACKENDS.items():
        network = make(simpy.Environment(), [Switch(4, 50.0, 500.0)], "<net>", None)
        for member in members:
            assert callable(getattr(network, member)), (name, member)
        assert isinstance(network.has_links, bool) and isinstance(network.has_faults, bool)
        assert isinstance(network.has_priorities, bool) and isinstance(network.pair_delays_only, bool)
        if not network.has_links:
            assert network.links() == [] and network.link_stats() is None
            with pytest.raises(AttributeError, match="links exist in the congestion_aware and packet"):
                network.send_background(0, 1, 8)
        else:
            assert len(network.links()) == 8 and network.label(4) is not None
            if not network.has_priorities:
                with pytest.raises(ValueError, match="no traffic classes"):
                    network.send_background(0, 1, 8, priority=1)


def test_json_of_a_users_model_run(user_dir: Path) -> None:
    """The CLI reads the mapping form too (a run prints its figures, no warning)."""
    from simpy_astra.cli.main import main

    out = user_dir / "out.json"
    assert main(["run", scenario(user_dir, USER), "--quiet", "--json-out", str(out)]) == 0
    assert json.loads(out.read_text())["npus"]["1"]["finished_cycles"] == alone_ns(G, D)
