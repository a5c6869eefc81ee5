"""Misusing an extension point (docs/collectives.md, simpy_astra/network/README.md) is one
``error:`` line naming the user's name and the fix, exit status 2: a plug-in registering a
name that is already taken (ours or another module's), a topology class without the methods
the backends call, a link or switch model whose ``__init__`` skips the base class's. None of
these may run with the wrong algorithm, nor end in an internal error."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
          "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
          "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
          "all-to-all-implementation: [direct]}")

USER = textwrap.dedent('''
    from simpy_astra import collectives, topologies
    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.models import register_link
    from simpy_astra.network.switch import SwitchElement
    from simpy_astra.topologies import BasicTopology


    def quick(ctx):
        yield ctx.endpoint()


    class HopsOnly(BasicTopology):
        def hops(self, src, dst):
            return 1


    class Chain(BasicTopology):
        def hops(self, src, dst):
            return abs(dst - src)

        def links(self):
            n = self.npus_count
            return [(i, i + 1) for i in range(n - 1)] + [(i + 1, i) for i in range(n - 1)]

        def route(self, src, dst):
            step = 1 if dst > src else -1
            return list(range(src, dst + step, step))


    class NoBaseInit(LinkElement):
        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival):
            self.mine = True


    class NoBaseSwitch(SwitchElement):
        def __init__(self, env, device, forward):
            self.mine = True
''')


@pytest.fixture
def user(tmp_path: Path, monkeypatch) -> Path:
    for name in [m for m in sys.modules if m.startswith("ext_")]:
        sys.modules.pop(name)
    (tmp_path / "ext_user.py").write_text(USER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scenario(folder: Path, network: str, plugins: str = "", workload: str = "all_reduce") -> str:
    path = folder / "s.yaml"
    path.write_text(f"workload: {{generate: microbench, collective: {workload}, size: 4096, num_npus: 4}}\n"
                    f"system: {SYSTEM}\nnetwork: {network}\nbackend: congestion_aware\n{plugins}")
    return str(path)


RING4 = "{topology: [Ring], npus_count: [4], bandwidth: [50.0], latency: [500.0]}"


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("register, words", [
    ("collectives.register('ring', quick)",
     ("collective algorithm name 'ring' is already taken by simpy_astra.collectives.ring:ring",
      "ext_clash:quick under another name")),
    ("topologies.register('Ring', Chain)", ("topology name 'Ring' is already taken", "ext_user:Chain")),
    ("register_link('fifo', NoBaseInit)", ("link model name 'fifo' is already taken",)),
])
def test_a_plugin_cannot_take_a_name_that_is_already_registered(user, capsys, register, words):
    (user / "ext_clash.py").write_text(f"from ext_user import *\n\ndef quick(ctx):\n    yield ctx.endpoint()\n\n"
                                       f"{register}\n")
    line = one_error(capsys, ["run", scenario(user, RING4, "plugins: [ext_clash]\n"), "--quiet"])
    assert "plugin module 'ext_clash' raised ValueError" in line
    for word in words:
        assert word in line


def test_the_same_plugin_imported_again_may_register_its_names_again(user):
    from simpy_astra import collectives

    (user / "ext_again.py").write_text("def quick(ctx):\n    yield ctx.endpoint()\n")
    import ext_again

    collectives.register("extQuick", ext_again.quick)
    sys.modules.pop("ext_again")
    import ext_again as reloaded  # a new function object, the same module:qualname

    assert reloaded.quick is not ext_again.quick
    collectives.register("extQuick", reloaded.quick)
    with pytest.raises(ValueError, match="'extQuick' is already taken by ext_again:quick"):
        collectives.register("extQuick", collectives.REGISTRY["ring"])


def test_a_topology_class_without_links_and_route_is_named_not_an_internal_error(user, capsys):
    net = "{topology: ['ext_user:HopsOnly'], npus_count: [4], bandwidth: [50.0], latency: [500.0]}"
    for backend in ("congestion_unaware", "congestion_aware"):
        line = one_error(capsys, ["run", scenario(user, net), "--quiet", "--network-backend", backend])
        assert "HopsOnly does not define links(), route()" in line
        assert "must define hops(src, dst), links() and route(src, dst)" in line


def test_a_topology_class_with_the_three_methods_runs_its_closed_form(user, capsys):
    """A 4-NPU chain at 1 byte/ns, 100 ns a link: NPU 0 -> 3 crosses 3 links. Unaware:
    trunc(3 L + S / B); aware: 3 trunc(L + S / B) (docs/generators.md, send_recv)."""
    gbps = 1e9 / 2**30
    net = f"{{topology: ['ext_user:Chain'], npus_count: [4], bandwidth: [{gbps!r}], latency: [100.0]}}"
    path = scenario(user, net)
    path_text = Path(path).read_text().replace("collective: all_reduce, size: 4096",
                                               "collective: send_recv, size: 4096, src: 0, dst: 3")
    Path(path).write_text(path_text)
    for backend, expected in (("congestion_unaware", 3 * 100 + 4096), ("congestion_aware", 3 * (100 + 4096))):
        assert main(["run", path, "--quiet", "--network-backend", backend]) == 0
        out = capsys.readouterr().out
        assert f"iteration time {expected:,} ns" in out, out


@pytest.mark.parametrize("key, model, base", [
    ("link-model", "ext_user:NoBaseInit", "LinkElement"),
    ("switch-model", "ext_user:NoBaseSwitch", "SwitchElement"),
])
def test_a_model_that_skips_the_base_init_is_named_not_an_internal_error(user, capsys, key, model, base):
    net = (f"{{topology: [Switch], npus_count: [4], bandwidth: [50.0], latency: [500.0], "
           f"{key}: '{model}'}}")
    line = one_error(capsys, ["run", scenario(user, net), "--quiet"])
    assert f"field '{key}' ({model}) did not call {base}.__init__: call super().__init__(" in line


FRACTIONAL = textwrap.dedent('''
    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.switch import SwitchElement


    class HeaderLink(LinkElement):
        """A per-message overhead: 200 ns plus a 64-byte header's serialisation."""

        def hold_ns(self, item):
            return 200 + 64 / self.bytes_per_ns


    class HalfSwitch(SwitchElement):
        def release_ns(self, item, arrived_ns):
            return arrived_ns + 30.5
''')


def test_fractional_holds_and_releases_keep_simulated_time_in_whole_ns(user):
    """One 4,096-byte send across a 2-NPU switch at 1 byte/ns and 100 ns a link: each of its
    two links holds trunc(200 + 64) = 264 ns, then takes trunc(100 + 4,096); the switch holds
    it trunc(30.5) = 30 ns. Before, the times were floats (6,100.0 ns in the headline)."""
    from simpy_astra.simulation import Simulation

    (user / "ext_frac.py").write_text(FRACTIONAL)
    gbps = 1e9 / 2**30
    path = user / "frac.yaml"
    path.write_text("workload: {generate: microbench, collective: send_recv, size: 4096, num_npus: 2, src: 0, dst: 1}\n"
                    f"system: {SYSTEM}\n"
                    f"network: {{topology: [Switch], npus_count: [2], bandwidth: [{gbps!r}], latency: [100.0], "
                    "link-model: 'ext_frac:HeaderLink', switch-model: 'ext_frac:HalfSwitch'}\n"
                    "backend: congestion_aware\n")
    finished = [r.finished_cycles for r in Simulation.from_scenario(str(path)).run()]
    expected = 2 * (264 + 100 + 4096) + 30
    assert finished == [expected, expected]
    assert all(type(t) is int for t in finished)


BACKENDS_CODE = textwrap.dedent('''
    from simpy_astra.network.backends import BackendSpec, register
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


    class NanDelay(CongestionUnawareNetwork):
        def message_delay_ns(self, src, dst, size_bytes):
            return float("nan")


    register(BackendSpec("extNan", "NaN delays", lambda env, dims, source, config=None: NanDelay(env, dims),
                         folds=None, folded=None))
    register(BackendSpec("extNone", "builds nothing", lambda env, dims, source, config=None: None,
                         folds=None, folded=None))
''')


@pytest.mark.parametrize("backend, words", [
    ("extNan", ("network backend 'ext_backends:NanDelay': message_delay_ns() returned nan",)),
    ("extNone", ("network backend 'extNone': build returned NoneType, which has no send, recv, board",)),
])
def test_a_backend_that_gives_no_network_or_no_delay_is_named(user, capsys, backend, words):
    from simpy_astra.network.backends import BACKENDS

    (user / "ext_backends.py").write_text(BACKENDS_CODE)
    try:
        line = one_error(capsys, ["run", scenario(user, RING4, "plugins: [ext_backends]\n"), "--quiet",
                                  "--network-backend", backend])
    finally:
        BACKENDS.pop("extNan", None), BACKENDS.pop("extNone", None)
    for word in words:
        assert word in line


def test_a_backend_cannot_take_a_name_that_is_already_registered(user, capsys):
    (user / "ext_packet.py").write_text("from simpy_astra.network.backends import BackendSpec, register\n"
                                        "register(BackendSpec('packet', 'mine', print, folds=None, folded=None))\n")
    line = one_error(capsys, ["run", scenario(user, RING4), "--quiet", "--plugin", "ext_packet"])
    assert "network backend name 'packet' is already taken by simpy_astra.network.backends:_packet" in line


GENERATORS_CODE = textwrap.dedent('''
    def returns_five(params, prefix):
        return 5

    def writes_nothing(params, prefix):
        return None

    def raises(params, prefix):
        return params["stages"]

    NOT_A_FUNCTION = 3
''')


@pytest.mark.parametrize("generate, words", [
    ("ext_gens:returns_five", ("workload.generate: generator 'ext_gens:returns_five' returned 5; it must return "
                               "None or the path of the comm-group JSON",)),
    ("ext_gens:writes_nothing", ("generator 'ext_gens:writes_nothing' wrote no ext_gens_writes_nothing.0.et",)),
    ("ext_gens:raises", ("generator 'ext_gens:raises' raised KeyError: 'stages' (at ", "ext_gens.py:9)")),
    ("ext_gens:NOT_A_FUNCTION", ("workload.generate: generator 'ext_gens:NOT_A_FUNCTION': 3 is not a function",)),
    ("ext_gens:absent", ("workload.generate: module 'ext_gens' has no attribute 'absent'",)),
])
def test_a_generator_of_ones_own_that_misbehaves_is_named(user, capsys, monkeypatch, generate, words):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(user / ".cache"))
    (user / "ext_gens.py").write_text(GENERATORS_CODE)
    path = user / "g.yaml"
    path.write_text(f"workload: {{generate: '{generate}', size: 4096}}\nsystem: {SYSTEM}\nnetwork: {RING4}\n")
    line = one_error(capsys, ["run", str(path), "--quiet"])
    assert line.startswith(f"error: {path}: workload.generate: ")
    for word in words:
        assert word in line


def test_a_generator_cannot_take_a_name_that_is_already_registered(user, capsys):
    (user / "ext_gen_clash.py").write_text("from simpy_astra.workloads.generated import register\n"
                                           "def mine(params, prefix):\n    pass\n"
                                           "register('microbench', mine)\n")
    line = one_error(capsys, ["run", scenario(user, RING4), "--quiet", "--plugin", "ext_gen_clash"])
    assert "generator name 'microbench' is already taken by simpy-astra's own generator" in line


FOREVER = textwrap.dedent('''
    def polls(ctx):
        while True:
            yield ctx.wait(1000)

    def polls_in_a_sub_phase(ctx):
        def inner():
            while True:
                yield ctx.env.timeout(500)
        yield ctx.spawn(inner())

    def one_long_wait(ctx):
        yield ctx.wait(5_000_000)  # 5 ms, once: a slow phase, not a loop
        yield ctx.endpoint()
''')


@pytest.mark.parametrize("algorithm, line", [("polls", 2), ("polls_in_a_sub_phase", 6)])
def test_a_collective_that_never_ends_is_reported_not_a_hang(user, capsys, algorithm, line):
    """It waits on one timer after another while nothing else moves; the watchdog stops it
    once it has spun for as long as the run had lasted (here from 1 us on: at 3 us)."""
    from simpy_astra.errors import StalledError
    from simpy_astra.simulation import Simulation

    (user / "ext_forever.py").write_text(FOREVER)
    path = scenario(user, RING4)
    Path(path).write_text(Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                                         f"all-reduce-implementation: ['ext_forever:{algorithm}']"))
    with pytest.raises(StalledError) as stalled:
        Simulation.from_scenario(path).run()
    text = str(stalled.value)
    assert "collective phases kept waiting on new events without a message moving" in text
    assert f"NPU 0 runs '{algorithm}' (" in text and f"ext_forever.py:{line})" in text
    assert "a collective algorithm must end: is a loop's exit missing?" in text
    assert main(["run", path, "--quiet"]) == 3
    assert capsys.readouterr().err.startswith("error: simulation stalled at 0 ns")


def test_one_long_wait_in_a_collective_is_not_taken_for_a_loop(user):
    """5 ms of waiting, then the endpoint delay (10 ns): the all-reduce ends at 5,000,010 ns."""
    from simpy_astra.simulation import Simulation

    (user / "ext_forever.py").write_text(FOREVER)
    path = scenario(user, RING4)
    Path(path).write_text(Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                                         "all-reduce-implementation: ['ext_forever:one_long_wait']"))
    assert [r.finished_ns for r in Simulation.from_scenario(path).run()] == [5_000_010] * 4


def test_a_plugins_symmetry_claim_is_trusted_with_a_warning_naming_the_check(user):
    """A claim of rotation symmetry by an algorithm whose index 0 waits 1 us more: folded, every
    NPU gets the representative's 1,010 ns; unfolded, NPU 0 alone ends at 1,010 and the others
    at the endpoint delay, 10 ns. The folded run says whose claim it trusted, and how to check."""
    from simpy_astra.simulation import Simulation

    (user / "ext_claims.py").write_text(textwrap.dedent('''
        from simpy_astra import collectives
        from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size

        def rooted(ctx):
            if ctx.index == 0:
                yield ctx.wait(1000)
            yield ctx.endpoint()

        collectives.register("extRooted", CollectiveAlgorithm("extRooted", rooted, ring_final_size,
                                                              kinds=frozenset({ALL_REDUCE}), rotation_symmetric=True))
    '''))
    path = scenario(user, RING4, "plugins: [ext_claims]\nfold_symmetry: true\n")
    Path(path).write_text(Path(path).read_text().replace("backend: congestion_aware", "backend: congestion_unaware")
                          .replace("all-reduce-implementation: [ring]", "all-reduce-implementation: [extRooted]"))
    folded = Simulation.from_scenario(path)
    assert [r.finished_ns for r in folded.run()] == [1010] * 4
    assert folded.warnings == ["symmetry folding trusted the claim of collective 'extRooted' (rotation_symmetric), "
                               "which no test has checked: a wrong claim gives wrong figures; compare once with "
                               "--fold-symmetry off (fold_symmetry: false)"]
    Path(path).write_text(Path(path).read_text().replace("fold_symmetry: true", "fold_symmetry: false"))
    unfolded = Simulation.from_scenario(path)
    assert {r.npu_id: r.finished_ns for r in unfolded.run()} == {0: 1010, 1: 10, 2: 10, 3: 10}
    assert unfolded.warnings == []
    Path(path).write_text(Path(path).read_text().replace("[extRooted]", "[ring]")
                          .replace("fold_symmetry: false", "fold_symmetry: true"))
    ours = Simulation.from_scenario(path)
    ours.run()
    assert ours.folding is not None and ours.warnings == []


HOOKS = textwrap.dedent('''
    from simpy_astra import collectives
    from simpy_astra.collectives.base import CollectiveAlgorithm

    def one(ctx, *shape):
        yield ctx.endpoint()

    collectives.register("extNoneSize", CollectiveAlgorithm("extNoneSize", one, lambda kind, size, n: None))
    collectives.register("extThirds", CollectiveAlgorithm("extThirds", one, lambda kind, size, n: size / 3))
    collectives.register("extBadShape", CollectiveAlgorithm("extBadShape", one, lambda kind, size, n: size,
                                                            logical=lambda dim: 5))
''')


@pytest.mark.parametrize("algorithm, words", [
    ("extNoneSize", "final_size('all_reduce', 4096, 2) returned None; it must return the bytes the phase leaves, "
                    "an integer >= 0"),
    ("extThirds", "final_size('all_reduce', 4096, 2) returned 1365.3333333333333;"),
    ("extBadShape", "its logical hook returned 5; it must return a tuple of run()'s extra arguments"),
])
def test_an_algorithms_size_and_shape_hooks_are_held_to_their_contract(user, capsys, algorithm, words):
    """On two dimensions (2 x 2) the first phase's final_size is the second's ctx.size_bytes;
    None or a fraction there ran on silently (a 10 ns all-reduce), a logical hook returning 5
    was 'internal error TypeError'."""
    (user / "ext_hooks.py").write_text(HOOKS)
    net = "{topology: [Ring, Ring], npus_count: [2, 2], bandwidth: [50.0, 50.0], latency: [500.0, 500.0]}"
    path = scenario(user, net, "plugins: [ext_hooks]\n")
    Path(path).write_text(Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                                         f"all-reduce-implementation: [{algorithm}]"))
    line = one_error(capsys, ["run", path, "--quiet"])
    assert line.startswith(f"error: collective algorithm '{algorithm}': ") and words in line, line


CONTEXT_MISUSE = textwrap.dedent('''
    def waits_nan(ctx):
        yield ctx.wait(float("nan"))

    def waits_back(ctx):
        yield ctx.wait(-1)

    def reduces_minus(ctx):
        yield ctx.endpoint(reduce_bytes=-1)

    def tags_text(ctx):
        ctx.send(ctx.members[(ctx.index + 1) % len(ctx.members)], 10, tag="x")
        yield ctx.endpoint()

    def waits_half(ctx):
        yield ctx.wait(2.5)
''')


@pytest.mark.parametrize("algorithm, words", [
    ("waits_nan", "ctx.wait(nan): a delay is a finite number of ns >= 0"),  # was: iteration time nan ns
    ("waits_back", "ctx.wait(-1): a delay is a finite number of ns >= 0"),  # was: SimPy's "Negative delay"
    ("reduces_minus", "ctx.endpoint(reduce_bytes=-1): the bytes to reduce are an integer >= 0"),  # was: ran
    ("tags_text", "ctx.send(..., tag='x'): a tag is an integer >= 0"),  # was: "not all arguments converted"
])
def test_a_context_call_out_of_contract_names_the_algorithm_and_the_call(user, capsys, algorithm, words):
    (user / "ext_ctx.py").write_text(CONTEXT_MISUSE)
    path = scenario(user, RING4)
    Path(path).write_text(Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                                         f"all-reduce-implementation: ['ext_ctx:{algorithm}']"))
    line = one_error(capsys, ["run", path, "--quiet"])
    assert line.startswith(f"error: NPU 0: collective algorithm '{algorithm}' (") and "ext_ctx.py:" in line
    assert words in line


def test_a_fractional_wait_is_cut_to_whole_ns(user):
    from simpy_astra.simulation import Simulation

    (user / "ext_ctx.py").write_text(CONTEXT_MISUSE)
    path = scenario(user, RING4)
    Path(path).write_text(Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                                         "all-reduce-implementation: ['ext_ctx:waits_half']"))
    finished = [r.finished_ns for r in Simulation.from_scenario(path).run()]
    assert finished == [2] * 4 and all(type(t) is int for t in finished)


def test_a_plugins_link_model_symmetry_claim_is_named_when_a_run_folds_on_it(user):
    from simpy_astra.simulation import Simulation

    (user / "ext_links.py").write_text(textwrap.dedent('''
        from simpy_astra.network.link import LinkElement

        class FirstLinkSlow(LinkElement):
            symmetric = True  # wrong: the link out of NPU 0 holds each message 1 us

            def hold_ns(self, item):
                return 1000 if self.src == 0 else 0
    '''))
    for model, warned in (("'ext_links:FirstLinkSlow'", True), ("fifo", False)):
        net = f"{{topology: [Ring], npus_count: [4], bandwidth: [50.0], latency: [500.0], link-model: {model}}}"
        sim = Simulation.from_scenario(scenario(user, net, "fold_symmetry: true\n"))
        sim.run()
        assert sim.folding is not None
        assert sim.warnings == (["symmetry folding trusted the claim of link model 'ext_links:FirstLinkSlow' "
                                 "(symmetric = True), which no test has checked: a wrong claim gives wrong "
                                 "figures; compare once with --fold-symmetry off (fold_symmetry: false)"]
                                if warned else [])
