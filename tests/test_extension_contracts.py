"""An extension written from the docs with a mistake in its shape is refused in one ``error:``
line naming it, before or as the run starts, never an internal error or a run on the wrong
path; and a backend is named as ``package.module:attribute`` as algorithms, topologies, link
models and generators are (docs/backends.md, docs/collectives.md, collectives/README.md).

Figures are derived by hand: a 1 MiB ring all-reduce on 8 NPUs at 50 GB/s (GB = 2^30 B),
500 ns a link, endpoint delay 10 ns, no reduction cost (local-mem-bw unset).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

N, SIZE, LAT, GBPS, E = 8, 1 << 20, 500, 50.0, 10
#: one ring step: S/n bytes over one link, then the endpoint delay
STEP_NS = int(LAT + (SIZE // N) / (GBPS * 2**30 / 1e9)) + E
#: the ring all-reduce, one chunk: an endpoint delay to start (as ASTRA-sim's ring; the
#: bidirectional ring's closed form in collectives/README.md has it too), then 2(n-1) steps
RING_NS = E + 2 * (N - 1) * STEP_NS
OVERHEAD_NS = 700  # the test backend's extra per message

SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
          "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
          "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
          "all-to-all-implementation: [direct]}")

USER = textwrap.dedent(f'''
    from simpy_astra import collectives, topologies
    from simpy_astra.network.backends import BackendSpec, register
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
    from simpy_astra.topologies import BasicTopology


    class Slower(CongestionUnawareNetwork):
        def message_delay_ns(self, src, dst, size_bytes):
            return super().message_delay_ns(src, dst, size_bytes) + {OVERHEAD_NS}


    SLOWER = BackendSpec("ctSlower", "analytical plus {OVERHEAD_NS} ns a message",
                         lambda env, dims, source, config=None: Slower(env, dims), folds="pairs", folded=None)
    NOT_A_SPEC = 3


    class Fractional(CongestionUnawareNetwork):
        def message_delay_ns(self, src, dst, size_bytes):
            return super().message_delay_ns(src, dst, size_bytes) + {OVERHEAD_NS} + 0.9


    FRACTIONAL = BackendSpec("ctFractional", "as SLOWER, 0.9 ns more",
                             lambda env, dims, source, config=None: Fractional(env, dims), folds="pairs", folded=None)


    def two_args(ctx, extra):
        yield ctx.endpoint()


    class OneWayRing(BasicTopology):
        """The links of the two broken rings below."""

        def links(self):
            n = self.npus_count
            return [(i, (i + 1) % n) for i in range(n)]


    class OffTheLinks(OneWayRing):
        """A ring whose route passes through a device no link reaches."""

        def hops(self, src, dst):
            return 2

        def route(self, src, dst):
            return [src, 99, dst]


    class OneArgument(BasicTopology):
        """Constructed as cls(npus_count, bandwidth_gbps, latency_ns) (docs/collectives.md)."""

        def __init__(self, npus_count):
            super().__init__(npus_count, 50.0, 500.0)

        def hops(self, src, dst):
            return 1

        def links(self):
            return [(i, j) for i in range(self.npus_count) for j in range(self.npus_count) if i != j]

        def route(self, src, dst):
            return [src, dst]


    class MiscountedRing(OneWayRing):
        """A one-way ring whose hops say 1 where its route crosses (dst - src) mod n links."""

        def hops(self, src, dst):
            return 1

        def route(self, src, dst):
            path = [src]
            while path[-1] != dst:
                path.append((path[-1] + 1) % self.npus_count)
            return path
''')


@pytest.fixture
def user(tmp_path: Path, monkeypatch) -> Path:
    from simpy_astra.network.backends import BACKENDS

    sys.modules.pop("ct_user", None)
    (tmp_path / "ct_user.py").write_text(USER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    BACKENDS.pop("ctSlower", None), BACKENDS.pop("ctFractional", None)


def scenario(folder: Path, topology: str = "Ring", extra: str = "", backend: str = "congestion_unaware") -> str:
    path = folder / "s.yaml"
    path.write_text(f"workload: {{generate: microbench, collective: all_reduce, size: {SIZE}, num_npus: {N}}}\n"
                    f"system: {SYSTEM}\nbackend: {backend}\n"
                    f"network: {{topology: [{topology}], npus_count: [{N}], bandwidth: [{GBPS}], "
                    f"latency: [{LAT}.0]}}\n{extra}")
    return str(path)


def one_error(capsys, argv: list[str]) -> str:
    assert main(argv) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_backend_named_as_module_and_attribute_runs_without_plugins(user, capsys):
    """``backend: ct_user:SLOWER`` (no ``plugins:``): each of the 2(n-1) messages of the ring
    all-reduce takes OVERHEAD_NS more than on the analytical backend. Before, the scenario
    was refused: "must be one of congestion_unaware, congestion_aware, packet"."""
    expected = f"iteration time {RING_NS + 2 * (N - 1) * OVERHEAD_NS:,} ns "
    assert main(["run", scenario(user, backend='"ct_user:SLOWER"'), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(expected)
    assert main(["run", scenario(user), "--quiet", "--network-backend", "ct_user:SLOWER"]) == 0
    assert capsys.readouterr().out.startswith(expected)
    assert main(["run", scenario(user), "--quiet"]) == 0  # the analytical backend: the ring alone
    assert capsys.readouterr().out.startswith(f"iteration time {RING_NS:,} ns ")


@pytest.mark.parametrize("name, words", [
    ("ct_user:NOT_A_SPEC", "network backend 'ct_user:NOT_A_SPEC' is an int, not a BackendSpec"),
    ("ct_user:Slower", "network backend 'ct_user:Slower' is the class Slower, not a BackendSpec"),
    ("ct_absent:X", "cannot import plugin module 'ct_absent'"),
    ("pakcet", "must be one of congestion_unaware, congestion_aware, packet, or package.module:BackendSpec"),
])
def test_a_backend_name_that_names_no_backend_is_one_line(user, capsys, name, words):
    line = one_error(capsys, ["run", scenario(user), "--quiet", "--network-backend", name])
    assert line.startswith("error: --network-backend: ") and words in line, line


def test_a_backend_build_that_cannot_take_the_documented_arguments_is_refused_when_registered(user, capsys):
    """``build(env, dims)``: the run calls ``build(env, dims, source, config)``. Before, the run
    ended in 'internal error TypeError: <lambda>() takes 2 positional arguments but 4 were
    given (this is a simpy-astra bug ...)', exit status 1."""
    (user / "ct_sig.py").write_text(
        "from simpy_astra.network.backends import BackendSpec, register\n"
        "from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork\n"
        "register(BackendSpec('ctSig', 'x', lambda env, dims: CongestionUnawareNetwork(env, dims), "
        "folds='pairs', folded=None))\n")
    line = one_error(capsys, ["run", scenario(user, backend="ctSig"), "--quiet", "--plugin", "ct_sig"])
    assert "plugin module 'ct_sig'" in line
    assert "network backend 'ctSig': build(env, dims) cannot be called as build(env, dims, source, config=None)" \
        in line


def test_a_collective_that_cannot_be_called_with_the_context_alone_is_refused_when_named(user, capsys):
    """``two_args(ctx, extra)``: a phase calls ``run(ctx)``. Before, the first phase failed with
    'raised TypeError: two_args() missing 1 required positional argument: 'extra' (at unknown
    place)'; now the system JSON's entry is refused, naming the signature."""
    path = scenario(user)
    text = Path(path).read_text().replace("all-reduce-implementation: [ring]",
                                          "all-reduce-implementation: ['ct_user:two_args']")
    Path(path).write_text(text)
    line = one_error(capsys, ["run", path, "--quiet"])
    assert "all-reduce-implementation[0]" in line
    assert "collective 'ct_user:two_args': two_args(ctx, extra) cannot be called as fn(ctx)" in line


@pytest.mark.parametrize("backend", ["congestion_aware", "packet"])
def test_a_route_off_the_topologys_own_links_is_named(user, capsys, backend):
    """The backends that follow routes. Before, on congestion_aware: 'internal error KeyError:
    no link 0 -> 99 in this network' (exit 1)."""
    line = one_error(capsys, ["run", scenario(user, "'ct_user:OffTheLinks'"), "--quiet",
                              "--network-backend", backend])
    assert "field 'topology[0]' (ct_user:OffTheLinks): route(0, 1) returned [0, 99, 1]; expected a path along links(): " \
           "(0, 99) is not a link" in line, line


def test_a_route_longer_than_its_hops_is_named(user, capsys):
    """The aware backend would charge NPU 0 -> 2 two links, the analytical one hops = 1: one
    scenario, two different paths. Before, both ran (the aware one on the route)."""
    line = one_error(capsys, ["run", scenario(user, "'ct_user:MiscountedRing'"), "--quiet",
                              "--network-backend", "congestion_aware"])
    assert "route(0, 2) returned [0, 1, 2]; expected a path of hops(0, 2) = 1 links" in line, line


def test_a_class_that_cannot_take_the_documented_arguments_says_so(user, capsys):
    """No line of the user's code ran, so there is no place of theirs to name. Before: '(at
    unknown place)'; now the line says where to look."""
    line = one_error(capsys, ["run", scenario(user, "'ct_user:OneArgument'"), "--quiet"])
    assert "field 'topology[0]' (ct_user:OneArgument) raised TypeError: " in line
    assert "takes 2 positional arguments but 4 were given (at the call, before any line of it ran: check its " \
           "parameters against the docs)" in line, line


def test_a_sweep_takes_plugin_modules_as_run_does(user, capsys):
    """``sweep SWEEP --plugin MODULE``: every point loads it, in whichever worker it runs. Before,
    'unknown flag'; only a base scenario's plugins: reached the points. The plug-in backend's
    point is 2(n-1) overheads above the analytical one's."""
    import csv

    (user / "ct_reg.py").write_text("from ct_user import SLOWER\nfrom simpy_astra.network.backends import register\n"
                                    "register(SLOWER)\n")
    scenario(user)
    (user / "sweep.yaml").write_text("base: s.yaml\naxes:\n  backend: [ctSlower, congestion_unaware]\n")
    assert main(["sweep", str(user / "sweep.yaml"), "--out", str(user / "out"), "--jobs", "1", "--no-plots",
                 "--plugin", "ct_reg"]) == 0
    rows = {r["backend"]: int(r["finish_ns"]) for r in csv.DictReader((user / "out" / "results.csv").open())}
    assert rows == {"ctSlower": RING_NS + 2 * (N - 1) * OVERHEAD_NS, "congestion_unaware": RING_NS}


def test_a_fractional_message_delay_is_cut_to_whole_ns(user, capsys):
    """docs/backends.md: a fraction is cut as a link cuts its own, so 700.9 ns more a message is
    700 more: the same step as SLOWER's, in whole ns."""
    assert main(["run", scenario(user), "--quiet", "--network-backend", "ct_user:FRACTIONAL"]) == 0
    assert capsys.readouterr().out.startswith(f"iteration time {RING_NS + 2 * (N - 1) * OVERHEAD_NS:,} ns ")


def test_astra_flags_find_a_collective_module_beside_the_system_json(tmp_path, monkeypatch, capsys):
    """ASTRA-sim's flags: a ``module:function`` collective in a system JSON is found beside that
    JSON, as a scenario's are beside the scenario (the run failed on 'cannot import plugin
    module' unless it was started from the JSON's folder)."""
    import json

    step = Path(__file__).resolve().parents[1] / "scenarios" / "workloads" / "step_8npus_1MB" / "step"
    configs, elsewhere = tmp_path / "configs", tmp_path / "elsewhere"
    configs.mkdir()
    elsewhere.mkdir()
    sys.modules.pop("beside_json_algo", None)
    (configs / "beside_json_algo.py").write_text(
        "def ring(ctx):\n"
        "    n, i = len(ctx.members), ctx.index\n"
        "    for _ in range(2 * (n - 1)):\n"
        "        ctx.send(ctx.members[(i + 1) % n], ctx.size_bytes // n)\n"
        "        yield ctx.recv(ctx.members[(i - 1) % n], ctx.size_bytes // n)\n")
    (configs / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1,
        "all-reduce-implementation": ["beside_json_algo:ring"]}))
    (configs / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (configs / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    monkeypatch.chdir(elsewhere)
    code = main([f"--workload-configuration={step}", f"--system-configuration={configs / 'sys.json'}",
                 f"--network-configuration={configs / 'net.yml'}",
                 f"--remote-memory-configuration={configs / 'mem.json'}"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "beside_json_algo" in sys.modules
