"""Round fifteen of extensions written from the docs (the earlier rounds:
``test_extensions_round14.py`` and before): a researcher's variants of what the docs leave
open (an algorithm as a dataclass with state of its own or written with ``async def``, a plugin
module imported by a script and loaded by its scenario, a backend's spec handed to
``Simulation`` from Python, a generator written with ``yield``, a topology with asymmetric
links, a link model with per-link parameters, a generator's groups run by an algorithm of
one's own), each against a closed form derived here or the one line the docs promise. Their
module: ``tests/data/round15/r15.py``.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.researcher_folder import module_fixture
from tests.test_extensions_round4 import MEM_BW, ONE_BYTE_PER_NS, E, L, d, ring_all_reduce
from tests.test_extensions_round6 import _cli, _quiet_ns, _system, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R15 = HERE / "data" / "round15" / "r15.py"
#: docs/backends.md's LogGP overhead, at each end of every message
O_NS = 300

#: a folder of the researcher's own holding r15.py, the working directory
r15 = module_fixture(R15)


def pipelined_ring(n: int, size: int, pieces: int, hop=d) -> int:
    """r15.PipelinedRing: 2(n-1) steps, each ``pieces`` messages of S/n/pieces one after the
    other (a hop each) and then E; no reduction asked."""
    return 2 * (n - 1) * (pieces * hop(size // n // pieces) + E)


# -- a plugin module a script imports by its package path, and its scenario loads again --------------

def test_a_plugin_a_script_imports_by_its_package_path_is_the_one_its_scenario_loads(tmp_path: Path) -> None:
    """docs/backends.md and collectives/README.md: a plugin module registers its names when
    loaded (``plugins: [loggp]``, found beside the scenario). A script in the checkout that
    also imports it by its package path (``import examples.r15``, to read its ``O_NS``) runs the
    same file a second time, as another module: the run stopped with ``network backend name
    'loggp15' is already taken by examples.r15:<lambda>; register r15:<lambda> under another
    name``, the same definition refused as another's. Now the same file and name register
    again, and the run gives the pipelined ring with 2 x O_NS on every message."""
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "r15.py").write_text(R15.read_text())
    size, n = 8192, 4
    _write(examples, "loggp_pipe.yaml", _bench("all_reduce", size, n), _net("Ring", n), "loggp15",
           system=_system("pipe2_r15"), extra="plugins: [r15]\n")
    script = ("import examples.r15 as mine\n"
              "from simpy_astra.simulation import Simulation\n"
              "reports = Simulation.from_scenario('examples/loggp_pipe.yaml').run()\n"
              "print(mine.O_NS, max(r.finished_ns for r in reports))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split() == [str(O_NS), str(pipelined_ring(n, size, 2, lambda s: d(s) + 2 * O_NS))]
    assert pipelined_ring(n, size, 2, lambda s: d(s) + 2 * O_NS) == 6 * (2 * (500 + 1024 + 600) + 10) == 25_548


def test_another_file_under_a_taken_name_is_still_refused(r15: Path) -> None:
    """Only the same file counts as the same definition: a copy elsewhere that registers
    ``loggp15`` again is another module's, refused naming both."""
    import r15 as first  # noqa: F401 - registers loggp15

    other = r15 / "lab"
    other.mkdir()
    (other / "r15.py").write_text(R15.read_text())
    sys.path.insert(0, str(other))
    try:
        from simpy_astra.network.backends import BackendSpec, register
        spec = BackendSpec("loggp15", "copy", lambda env, dims, source, config=None: None, folds=None, folded=None)
        with pytest.raises(ValueError, match="'loggp15' is already taken by r15:build_loggp"):
            register(spec)
    finally:
        sys.path.remove(str(other))


# -- a collective algorithm as a dataclass, and one written with async def ---------------------------

def test_an_algorithm_that_is_a_dataclass_with_state_of_its_own(r15: Path) -> None:
    """collectives/README.md: an object whose class's ``__call__`` is a generator function is an
    algorithm. A dataclass holding its piece count, and a list of the NPUs its phases ran on,
    named by its instance: one phase per NPU, the closed form of its pieces."""
    from simpy_astra.simulation import Simulation

    size, n = 8192, 4
    path = _write(r15, "pipe.yaml", _bench("all_reduce", size, n), _net("Ring", n), "congestion_unaware",
                  system=_system("'r15:PIPE2'"))
    sim = Simulation.from_scenario(str(path))
    assert max(r.finished_ns for r in sim.run()) == pipelined_ring(n, size, 2) == 6 * (2 * (500 + 1024) + 10)
    import r15 as mine
    assert sorted(mine.PIPE2.ran_on) == list(range(n))


@pytest.mark.parametrize("attribute, kind", [("ASYNC_RING", "an async function"),
                                             ("async_ring", "an async function"),
                                             ("ASYNC_GEN_RING", "an async generator function")])
def test_an_algorithm_written_with_async_def_is_one_line_where_it_is_named(r15: Path, attribute, kind) -> None:
    """collectives/README.md: an algorithm is a generator function written as a SimPy process.
    One written as asyncio code (``async def``, ``await``) and wrapped in a
    ``CollectiveAlgorithm`` passed the scenario's checks and stopped the run when its first
    phase started, in a line naming neither the scenario nor its field, under Python's
    ``RuntimeWarning: coroutine 'async_ring' was never awaited``. Now it is refused where it is
    named, before the run, in one line naming the file, the field and the fix."""
    path = _write(r15, "async.yaml", _bench("all_reduce", 8192, 4), _net("Ring", 4), "congestion_unaware",
                  system=_system(f"'r15:{attribute}'"))
    done = _cli(r15, "run", str(path), "--quiet", status=2)
    line = _one_line(done)
    assert line.startswith("error: ") and "async.yaml" in line and "'all-reduce-implementation[0]'" in line
    assert kind in line and "yield ctx.recv(...), not await" in line
    assert "RuntimeWarning" not in done.stderr and len(done.stderr.splitlines()) == 1


# -- a backend's spec handed to Simulation from Python -----------------------------------------------

def test_a_registered_backend_spec_handed_to_simulation_runs_as_its_name(r15: Path) -> None:
    """docs/backends.md names a backend by its name or as ``module:SPEC``; a script that holds
    the spec ``register()`` returned hands it on as it is, as it hands ``link_model=`` a class.
    That stopped with ``must be one of ... (got BackendSpec(name='loggp15', ..., build=<function
    <lambda> at 0x7f...>, ...)``: 500 characters with memory addresses, another line each run.
    Now the registered spec runs as its name: the native ring, 2 x O_NS more per message."""
    import r15 as mine

    from simpy_astra.simulation import Simulation

    size, n = 8192, 4
    path = _write(r15, "ring.yaml", _bench("all_reduce", size, n), _net("Ring", n), "congestion_unaware")
    reports = Simulation.from_scenario(str(path), backend=mine.LOGGP15).run()
    assert max(r.finished_ns for r in reports) == ring_all_reduce(n, size, lambda s: d(s) + 2 * O_NS)


def test_a_backend_spec_never_registered_is_one_line_without_addresses(r15: Path) -> None:
    """A spec built but never registered is refused in one line saying what to pass, with no
    repr of its functions (whose addresses made the line differ from run to run)."""
    import r15 as mine

    from simpy_astra.errors import InputError
    from simpy_astra.network.backends import BackendSpec
    from simpy_astra.simulation import Simulation

    path = _write(r15, "ring.yaml", _bench("all_reduce", 8192, 4), _net("Ring", 4), "congestion_unaware")
    spec = BackendSpec("unregistered15", "never registered", mine.LOGGP15.build, folds=None, folded=None)
    with pytest.raises(InputError) as raised:
        Simulation.from_scenario(str(path), backend=spec)
    message = str(raised.value)
    assert message.startswith("Simulation.from_scenario(backend=...): BackendSpec 'unregistered15' is not registered")
    assert "register() returned, or its name" in message and " at 0x" not in message and "\n" not in message


# -- a workload generator written with yield ----------------------------------------------------------

def test_a_generator_that_yields_its_path_is_one_line_where_it_is_named(r15: Path) -> None:
    """docs/generators.md: a generator is a function ``fn(params, prefix)`` that writes the ET
    files and returns None or the comm-group JSON's path. One that ``yield``s the path (a
    generator function: calling it writes nothing) was refused after the call with
    ``returned <generator object halves_yielded at 0x7f...>``, another line each run; now it is
    refused when named, saying what a generator is."""
    path = _write(r15, "gen.yaml", "{generate: 'r15:halves_yielded', num_npus: 8, size: 8192, compute_us: 1}",
                  _net("Switch", 8), "congestion_unaware")
    first, again = (_one_line(_cli(r15, "run", path.name, "--quiet", status=2)) for _ in range(2))
    assert first == again and " at 0x" not in first
    assert first.startswith("error: gen.yaml: workload.generate: generator 'r15:halves_yielded' is a generator")
    assert "a plain function fn(params, prefix) that writes the ET files" in first


def test_a_generators_groups_run_by_ones_own_dataclass_algorithm(r15: Path) -> None:
    """docs/generators.md's groups (a comm-group JSON the generator writes) and
    docs/collectives.md's ``all-reduce-group-implementation`` naming a dataclass instance by
    ``module:attribute``: each half of 8 NPUs on a switch runs the pipelined ring on its 4,
    every message over two links charged as one path, trunc(2L + S/4/2), after 1 us of compute."""
    size = 8192
    system = _system().replace("all-gather-implementation", "all-reduce-group-implementation: 'r15:PIPE2', "
                                                            "all-gather-implementation")
    path = _write(r15, "halves.yaml", f"{{generate: 'r15:halves', num_npus: 8, size: {size}, compute_us: 1}}",
                  _net("Switch", 8), "congestion_unaware", system=system)
    two_links = lambda s: int(2 * L + s / (ONE_BYTE_PER_NS * 2**30 / 1e9))  # noqa: E731
    assert _quiet_ns(_cli(r15, "run", str(path), "--quiet")) == 1000 + pipelined_ring(4, size, 2, two_links)


# -- a topology with asymmetric links, a link model with per-link parameters --------------------------

@pytest.mark.parametrize("src, dst", [(0, 2), (2, 0)])
@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_ring_whose_two_directions_run_at_different_speeds(r15: Path, backend, src, dst) -> None:
    """docs/collectives.md's ``link_params(src, dst)``, different for (0, 1) and (1, 0): two
    hops clockwise at B, or anticlockwise at B/4. Analytical: trunc(2L + S / slowest); store and
    forward: each hop trunc(L + S / B_i)."""
    size = 4096
    bandwidth = ONE_BYTE_PER_NS if dst > src else ONE_BYTE_PER_NS / 4
    workload = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, src: {src}, dst: {dst}}}"
    path = _write(r15, "oneway.yaml", workload, _net("'r15:OneWayFast'", 8), backend)
    expected = d(size, bandwidth, 2 * L) if backend == "congestion_unaware" else 2 * d(size, bandwidth)
    assert _quiet_ns(_cli(r15, "run", str(path), "--quiet")) == expected
    assert expected in {2 * L + 4096 - 1, 2 * L + 4096, 2 * L + 4 * 4096 - 1, 2 * L + 4 * 4096,
                        2 * (L + 4096 - 1), 2 * (L + 4096), 2 * (L + 4 * 4096 - 1), 2 * (L + 4 * 4096)}


def test_a_link_model_whose_links_each_take_their_own_gap(r15: Path) -> None:
    """simpy_astra/network/README.md: every key of the link-model mapping but ``class`` is a
    keyword argument of each link. A mapping of gaps by link: NPU 0 -> switch (8) waits 100 ns
    and switch -> NPU 1 waits 40 before the item starts; store and forward, 2 trunc(L + S/B)
    + 140."""
    size = 4096
    workload = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, src: 0, dst: 1}}"
    net = _net("Switch", 8, ", link-model: {class: 'r15:PerLinkGap', gaps: {'0-8': 100, '8-1': 40}}")
    path = _write(r15, "gaps.yaml", workload, net, "congestion_aware")
    assert _quiet_ns(_cli(r15, "run", str(path), "--quiet")) == 2 * d(size) + 100 + 40 == 9_332


@pytest.mark.parametrize("model, value, words", [
    ("PerLinkGap", "5", "parameter 'gaps' must be a mapping or null (got 5)"),
    ("PerLinkGap", "[100, 40]", "parameter 'gaps' must be a mapping or null (got [100, 40])"),
    ("OptionalGap", "fast", "parameter 'gap_ns' must be an integer or null (got 'fast')"),
    ("OptionalGap", "12.5", "parameter 'gap_ns' must be an integer or null (got 12.5)"),
])
def test_a_link_models_optional_or_mapping_parameter_is_checked_as_the_yaml_gives_it(r15: Path, model, value,
                                                                                   words) -> None:
    """simpy_astra/network/README.md: a value that does not fit the parameter's annotation is
    refused in one line naming the network YAML and the key. Only ``int``, ``float``, ``str``
    and ``bool`` were checked: ``gaps: dict | None`` given 5 ran the model's ``__init__``, whose
    ``.get`` failed and was blamed on the model's code (``method __init__() raised
    AttributeError ... this is an error in that code``), and ``gap_ns: int | None`` given
    ``fast`` reached the run, ``hold_ns() returned 'fast'``. Both are now the YAML's line."""
    key = "gaps" if model == "PerLinkGap" else "gap_ns"
    workload = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 8, src: 0, dst: 1}"
    path = _write(r15, "bad.yaml", workload, _net("Switch", 8, f", link-model: {{class: 'r15:{model}', {key}: {value}}}"),
                  "congestion_aware")
    line = _one_line(_cli(r15, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: bad.yaml: network: field 'link-model'") and line.endswith(words), line


@pytest.mark.parametrize("value, expected_gap", [("null", 0), ("30", 30)])
def test_a_link_models_optional_parameter_takes_null_or_its_type(r15: Path, value, expected_gap) -> None:
    """The same optional parameter given null (no gap) or a whole number: each hop's hold."""
    workload = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 8, src: 0, dst: 1}"
    path = _write(r15, "ok.yaml", workload, _net("Switch", 8, f", link-model: {{class: 'r15:OptionalGap', gap_ns: {value}}}"),
                  "congestion_aware")
    assert _quiet_ns(_cli(r15, "run", path.name, "--quiet")) == 2 * (d(4096) + expected_gap)


# -- what the packet backend adds to a closed form -----------------------------------------------------

def test_the_packet_backends_rounding_is_what_the_backends_page_says(tmp_path: Path) -> None:
    """docs/backends.md said the packet backend's ``ceil`` gains a closed form "up to 1 ns a
    message"; it rounds up twice (the last byte's departure, then its arrival), measured here
    on a line: up to 2 ns, never less than the closed form rounded up. The page now says so,
    with the one-link example it quotes."""
    from simpy_astra.simulation import Simulation

    page = (HERE.parent / "docs" / "backends.md").read_text()
    assert "up to 2 ns a message" in " ".join(page.split()) and "delivered at 19,866" in " ".join(page.split())
    speed = 50 * 2**30 / 1e9  # bytes per ns
    cases = [(1048576, 333.3, 1), (65536, 500.0, 2), (100000, 333.3, 4), (1048576, 500.0, 8)]
    for size, latency, hops in cases:
        path = _write(tmp_path, "line.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, "
                      f"num_npus: 9, src: 0, dst: {hops}}}", f"{{topology: [Line], npus_count: [9], bandwidth: [50.0], "
                      f"latency: [{latency}]}}", "packet")
        finish = max(r.finished_ns for r in Simulation.from_scenario(str(path)).run())
        exact = hops * latency + size / speed + (hops - 1) * 4096 / speed
        assert math.ceil(exact) <= finish < exact + 2, (size, latency, hops, finish, exact)
        if (size, latency, hops) == (1048576, 333.3, 1):
            assert finish == 19_866 and round(exact, 2) == 19_864.55


# -- an observer written with async def ------------------------------------------------------------------

def _cosim_ring(folder: Path) -> Path:
    """docs/cosimulation.md's ring shape: 4 NPUs, 1 MiB all-reduce, congestion-aware."""
    return _write(folder, "cosim_ring.yaml", _bench("all_reduce", 1048576, 4), _net("Ring", 4), "congestion_aware")


class YieldingWatcher:
    """An observer object whose ``__call__`` was written with ``yield`` (a SimPy habit)."""

    def __call__(self, *observation):
        yield observation


async def on_end(*observation):
    return observation


@pytest.mark.parametrize("where", ["sim.on", "link.watch"])
@pytest.mark.parametrize(("callback", "said"), [
    (on_end, "on_end is an async function: called, it returns a coroutine"),
    # review h2: an object whose __call__ yields was let in (plugins.call_makes reads its class's __call__)
    (YieldingWatcher(), "YieldingWatcher.__call__ is a generator function: called, it returns a generator")])
def test_an_observer_written_with_async_def_is_refused_not_dropped(tmp_path: Path, where, callback, said) -> None:
    """docs/cosimulation.md: ``sim.on(kind, callback)`` calls ``callback(observation)``, and a
    link's ``watch(point, fn)`` calls ``fn(link, key, size_bytes)``; a generator function is
    refused there, since calling it runs none of its lines. An ``async def`` callback is the
    same: called, it made a coroutine nobody awaited, so every observation was dropped in
    silence (0 of them seen, and Python's ``RuntimeWarning: coroutine ... was never awaited``).
    It is now refused where it is handed in, saying what to give; so is an object whose
    ``__call__`` is a generator function or an async one."""
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(_cosim_ring(tmp_path)))
    with pytest.raises(TypeError, match=re.escape(said)):
        if where == "sim.on":
            sim.on("collective_end", callback)
        else:
            sim.network.link(0, 1).watch("link_start", callback)
    assert max(r.finished_ns for r in sim.run()) == ring_all_reduce(4, 1048576)  # the run, untouched


@pytest.mark.parametrize("network, backend, words", [
    (_net("Switch", 8, ", link-model: 'r15:AsyncRunLink'"), "congestion_aware",
     "AsyncRunLink.run is an async function (async def)"),
    (_net("Switch", 8, ", link-model: 'r15:AsyncHoldLink'"), "congestion_aware",
     "AsyncHoldLink.hold_ns is an async function (async def)"),
    (_net("'r15:AsyncHops'", 8), "congestion_unaware", "AsyncHops.hops is an async function (async def)"),
    (_net("Ring", 8), "r15:ASYNC_SEND", "network backend 'async_send15': AsyncSend.send is an async function"),
], ids=["link run", "link hold_ns", "topology hops", "backend send"])
def test_a_method_of_ones_own_written_with_async_def_is_one_line(r15: Path, network, backend, words) -> None:
    """The contracts of docs/collectives.md, simpy_astra/network/README.md and docs/backends.md
    call a model's, topology's or backend's methods and use what they return; an ``async def``
    method returns a coroutine nobody awaits. A link's serving loop or hold was refused late
    under Python's ``RuntimeWarning`` lines, a topology's ``hops`` likewise, and a backend's
    ``send`` posted nothing: the run stalled (exit 3), blaming the NPUs' messages. Each is now one
    line naming the class and method, before time starts."""
    workload = "{generate: microbench, collective: send_recv, size: 4096, num_npus: 8, src: 0, dst: 2}"
    path = _write(r15, "async_method.yaml", workload, network, backend)
    done = _cli(r15, "run", path.name, "--quiet", status=2)
    line = _one_line(done)
    assert words in line and ("nothing in a SimPy run awaits" in line or "which nothing awaits" in line), line
    assert len(done.stderr.splitlines()) == 1 and "RuntimeWarning" not in done.stderr


def test_a_plugins_name_from_python_before_its_module_is_imported_says_to_import_it(r15: Path) -> None:
    """docs/backends.md: a plugin's backend is picked by its name once its module is loaded. A
    script that names it before importing the module was told to write ``plugins: [MODULE] or
    --plugin MODULE``, neither of which a script has; the line now also says to import it."""
    from simpy_astra.errors import InputError
    from simpy_astra.simulation import Simulation

    path = _write(r15, "ring.yaml", _bench("all_reduce", 8192, 4), _net("Ring", 4), "congestion_unaware")
    with pytest.raises(InputError, match=r"plugins: \[MODULE\], --plugin MODULE, or from Python import MODULE\)$"):
        Simulation.from_scenario(str(path), backend="loggp15")
    import r15 as mine  # noqa: F401 - registers loggp15
    assert max(r.finished_ns for r in Simulation.from_scenario(str(path), backend="loggp15").run()) == \
        ring_all_reduce(4, 8192, lambda s: d(s) + 2 * O_NS)


# -- a group's own algorithm under symmetry folding -------------------------------------------------------

def _groups_scenario(folder: Path, generator: str, algorithm: str, topology: str = "Ring") -> Path:
    """8 NPUs, the generator's two groups of 4 each all-reducing 8 KiB after 1 us, the groups
    running ``algorithm`` (``all-reduce-group-implementation``, docs/collectives.md)."""
    system = _system().replace("all-gather-implementation", f"all-reduce-group-implementation: '{algorithm}', "
                                                            "all-gather-implementation")
    return _write(folder, "groups.yaml", f"{{generate: '{generator}', num_npus: 8, size: 8192, compute_us: 1}}",
                  _net(topology, 8), "congestion_unaware", system=system)


@pytest.mark.parametrize("fold", ["on", "off"])
def test_a_groups_own_algorithm_without_a_claim_is_not_folded_onto_its_other_members(r15: Path, fold) -> None:
    """docs/collectives.md: an algorithm without a symmetry claim never folds. The groups of the
    even and of the odd NPUs on an 8-ring run ``r15:first_waits``, whose first member waits
    1,000 ns more. Folding read the claims of the implementation lists' algorithms (ring: rotation
    symmetric) and not those of the group's own, so a folded run gave every NPU the first
    members' 20,348 ns, in silence, where NPUs 2..7 finish at 19,348. On a ring of 8 a group's
    neighbours are two links apart: trunc(2L + S/4) a message, 6 steps of it and E."""
    path = _groups_scenario(r15, "r15:evens_odds", "r15:first_waits")
    done = _cli(r15, "run", path.name, "--fold-symmetry", fold)
    finished = {int(line.split("[")[1].split("]")[0]): int(line.split()[2]) for line in done.stdout.splitlines()
                if line.startswith("sys[") and " finished, " in line}
    step = 6 * (d(8192 // 4, ONE_BYTE_PER_NS, 2 * L) + E)
    assert finished == {npu: 1000 + step + (1000 if npu in (0, 1) else 0) for npu in range(8)}


def test_a_group_algorithm_that_uses_positions_as_ids_is_one_line(r15: Path) -> None:
    """collectives/README.md: ``ctx.members`` are the NPU ids of the ring and ``ctx.index`` this
    NPU's position. A ring that sends to ``index + 1`` on the group of NPUs 4..7 sent into the
    other group: the unfolded run stalled (exit 3, listing unmatched messages), and a folded one,
    which simulates the group of 0..3 for both, finished as if nothing were wrong. Now a user's
    phase naming a peer outside its members stops in one line saying what to write."""
    path = _groups_scenario(r15, "r15:halves", "r15:positions_as_ids", topology="Switch")
    line = _one_line(_cli(r15, "run", path.name, "--quiet", "--fold-symmetry", "off", status=2))
    assert line.startswith("error: NPU 4: collective algorithm 'positions_as_ids' (") and "/r15.py:" in line
    assert line.endswith("): a collective's ctx.post(1, ...): NPU 1 is not a member of this phase, (4, 5, 6, 7); name "
                         "peers by their ids in ctx.members (ctx.members[k]: ctx.index is this NPU's position among "
                         "them, not an id)")


def test_a_logical_hook_that_yields_is_the_same_line_every_run(r15: Path) -> None:
    """collectives/README.md: a ``logical`` hook returns a tuple of ``run()``'s extra arguments.
    One that yields them was named with ``returned <generator object root_yielded at
    0x7f...>``: the line changed from run to run. It now reads the same each time."""
    path = _write(r15, "star.yaml", _bench("all_reduce", 8192, 4), _net("Ring", 4), "congestion_unaware",
                  system=_system("'r15:STAR_YIELDED'"))
    first, again = (_one_line(_cli(r15, "run", path.name, "--quiet", status=2)) for _ in range(2))
    assert first == again and " at 0x" not in first
    assert first == ("error: collective algorithm 'r15:STAR_YIELDED': its logical hook returned <generator object "
                     "root_yielded>; it must return a tuple of run()'s extra arguments, e.g. (parent, children)")


@pytest.mark.parametrize("registry", ["topology", "link model", "schedule", "generator", "backend build"])
def test_registering_what_is_not_the_kind_says_so_without_an_address(r15: Path, registry) -> None:
    """Each registry of the docs refuses what is not of its kind (docs/collectives.md,
    simpy_astra/network/README.md, docs/generators.md, docs/backends.md). Handed an object of
    one's own, the refusal showed its default repr, ``<r15.Thing object at 0x7f...>``: a line
    that changed from run to run. It now names the object without its address."""
    from simpy_astra import topologies
    from simpy_astra.network import models
    from simpy_astra.network.backends import BackendSpec
    from simpy_astra.network.backends import register as register_backend
    from simpy_astra.workloads import generated
    from simpy_astra.workloads.schedules import registry as schedules

    class Thing:
        pass

    thing = Thing()
    register = {"topology": lambda: topologies.register("thing15", thing),
                "link model": lambda: models.register_link("thing15", thing),
                "schedule": lambda: schedules.register("thing15", thing),
                "generator": lambda: generated.register("thing15", thing),
                "backend build": lambda: register_backend(BackendSpec("thing15", "h", thing, folds=None,
                                                                      folded=None))}[registry]
    with pytest.raises((TypeError, ValueError)) as raised:
        register()
    assert " at 0x" not in str(raised.value) and "Thing object>" in str(raised.value), str(raised.value)


def test_a_groups_own_algorithms_claim_that_folding_trusts_is_named(r15: Path) -> None:
    """docs/collectives.md: a folded run that trusted the claim of an algorithm of one's own says
    so in one ``warning:`` line naming it. As a group's own algorithm its claim was trusted in
    silence (the warning listed the implementation lists' algorithms alone); it is now named."""
    path = _groups_scenario(r15, "r15:evens_odds", "r15:FIRST_WAITS_CLAIMED")
    done = _cli(r15, "run", path.name, "--quiet")
    assert "symmetry folding trusted the claim of collective 'r15:FIRST_WAITS_CLAIMED'" in " ".join(done.stderr.split())


# -- a generator that is an object, edited between two runs ------------------------------------------------

GEN15 = '''from dataclasses import dataclass

from r15 import halves


@dataclass
class Halves:
    """r15.halves with its compute time held by the object (a generator of state of its own)."""

    compute_us: int

    def __call__(self, params, prefix):
        return halves({**params, "compute_us": self.compute_us}, prefix)


GEN = Halves(compute_us=COMPUTE_US)
'''


@pytest.mark.parametrize("shape", ["instance", "partial"])
def test_a_generator_that_is_an_object_runs_again_once_its_module_is_edited(r15: Path, shape) -> None:
    """docs/generators.md: traces are cached by, among others, the source of the generator's
    module, so an edited generator runs again. A generator that is an object whose class's
    ``__call__`` writes the traces (or a ``functools.partial`` of a function) had no source
    file found for it (``inspect.getsourcefile`` takes functions and classes), so its cache key
    held no source: with its module edited from 3 us of compute to 5, the second run read the
    first run's traces and printed the same figure."""
    source = GEN15 if shape == "instance" else GEN15.replace(
        "GEN = Halves(compute_us=COMPUTE_US)", "import functools\n\nGEN = functools.partial(Halves(0).__class__."
        "__call__, Halves(compute_us=COMPUTE_US))")
    path = _write(r15, "gen15.yaml", "{generate: 'gen15:GEN', num_npus: 8, size: 8192}", _net("Switch", 8),
                  "congestion_unaware")
    two_links = lambda s: int(2 * L + s / (ONE_BYTE_PER_NS * 2**30 / 1e9))  # noqa: E731
    ring = E + 6 * (two_links(2048) + E) + 3 * 3 * int(2048 / MEM_BW)  # the native ring on a group of 4
    for compute_us in (3, 5):
        (r15 / "gen15.py").write_text(source.replace("COMPUTE_US", str(compute_us)))
        assert _quiet_ns(_cli(r15, "run", path.name, "--quiet")) == compute_us * 1000 + ring


def compute_change_of(r15: Path, module: str, source: str, holder: str) -> int:
    """The figure's change when the object ``holder`` of generator ``module:GEN`` (written from
    ``source``) changes its compute time from 3 us to 5 between two runs from Python
    (docs/cosimulation.md's ``Simulation.from_scenario``), nothing in its file changed."""
    import importlib

    from simpy_astra.simulation import Simulation

    (r15 / f"{module}.py").write_text(source)
    path = _write(r15, f"{module}.yaml", f"{{generate: '{module}:GEN', num_npus: 8, size: 8192}}", _net("Switch", 8),
                  "congestion_unaware")
    loaded = importlib.import_module(module)
    try:
        first = max(r.finished_ns for r in Simulation.from_scenario(str(path)).run())
        getattr(loaded, holder).compute_us = 5
        second = max(r.finished_ns for r in Simulation.from_scenario(str(path)).run())
    finally:
        sys.modules.pop(module, None)
    return second - first


def test_a_generator_objects_state_changed_from_python_writes_new_traces(r15: Path) -> None:
    """The same object-generator driven from a script: its state is part of the cache key, so
    the second run writes new traces."""
    assert compute_change_of(r15, "gen15", GEN15.replace("COMPUTE_US", "3"), "GEN") == 2000
