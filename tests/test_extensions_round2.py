"""Extensions written from the docs alone, second round: each differs from the docs' own
example (a backend whose delay depends on which NPU sends, ...) and is checked against a
figure derived by hand from the closed forms the docs state, or against the one-line error
the docs promise for a mistake.

Units: 50 GB/s links (GB = 2^30 B) carry ``B = 50 x 2^30 / 10^9`` bytes per ns; a message of
S bytes over h hops of latency L takes ``trunc(h L + S / B)`` on the analytical backend.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

BW = 50.0
LAT = 500
E = 10  # endpoint delay
B = BW * 2**30 / 1e9  # bytes per ns

SYSTEM = textwrap.dedent("""\
    system:
      scheduling-policy: LIFO
      collective-optimization: baseline
      endpoint-delay: 10
      active-chunks-per-dimension: 1
      preferred-dataset-splits: 1
      all-reduce-implementation: [ring]
      all-gather-implementation: [ring]
      reduce-scatter-implementation: [ring]
      all-to-all-implementation: [direct]
    """)


def _scenario(folder: Path, workload: str, backend: str, npus: int = 4, topology: str = "Ring") -> Path:
    path = folder / "s.yaml"
    path.write_text(f"workload: {workload}\n{SYSTEM}network:\n  topology: [{topology}]\n"
                    f"  npus_count: [{npus}]\n  bandwidth: [{BW}]\n  latency: [{LAT}.0]\n"
                    f"backend: {backend}\n")
    return path


@pytest.fixture
def user(tmp_path: Path, monkeypatch) -> Path:
    from simpy_astra.network.backends import BACKENDS

    before = dict(BACKENDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in set(BACKENDS) - set(before):
        del BACKENDS[name]
    for module in [m for m in sys.modules if m.startswith("r2_")]:
        del sys.modules[module]


#: docs/backends.md's recipe with a delay that depends on the sender: NPU 3's NIC is slow
SLOW_NIC = textwrap.dedent("""\
    from simpy_astra.network.backends import BackendSpec, register
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork

    EXTRA_NS = 5000


    class SlowNic(CongestionUnawareNetwork):
        def message_delay_ns(self, src, dst, size_bytes):
            return super().message_delay_ns(src, dst, size_bytes) + (EXTRA_NS if src == 3 else 0)


    SLOW_NIC = register(BackendSpec("r2_slow_nic", "NPU 3 sends 5 us late",
                                    lambda env, dims, source, config=None: SlowNic(env, dims),
                                    folds="pairs", folded=None))
    """)


def test_a_backend_whose_delay_depends_on_the_npu_is_not_folded_silently(user: Path, capsys) -> None:
    """A backend that claims folds="pairs" for a delay a ring's rotation does not keep: the
    folded run simulated NPU 0 alone and printed the uniform ring's 32,362 ns for every NPU,
    as if NPU 3 were not slow. Now it stops in one line naming the backend and the fix."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (user / "r2_slow_nic.py").write_text(SLOW_NIC)
    path = _scenario(user, "{generate: microbench, collective: all_reduce, size: 1048576, num_npus: 4}",
                     "r2_slow_nic:SLOW_NIC")
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "network backend 'r2_slow_nic:SlowNic'" in err[0] and "--fold-symmetry off" in err[0]

    # unfolded, the slow NIC shows. A ring step of 2^18 bytes (S/n) is d = trunc(L + 2^18 / B);
    # NPU i ends step k+1 when the message its left neighbour sent at the end of step k
    # arrives, plus E: t_i(k+1) = t_(i-1)(k) + d_(i-1) + E. After 2(n-1) = 6 steps NPU i's end
    # sums (d_j + E) over its 6 predecessors i-1, ..., i-6 (mod 4): NPU 3 (d_3 = d + 5000) is
    # among them twice for NPUs 0 and 1 (3,2,1,0,3,2 and 0,3,2,1,0,3), once for NPUs 2 and 3
    d = int(LAT + 2**18 / B)
    uniform = E + 6 * (d + E)  # the ring starts with one endpoint delay (collectives/README.md)
    assert uniform == 32_362
    assert main(["run", str(path), "--fold-symmetry", "off"]) == 0
    out = capsys.readouterr().out
    ends = {int(line.split()[0][4:-1]): int(line.split()[2]) for line in out.splitlines()
            if line.startswith("sys[") and "finished" in line}
    assert ends == {0: uniform + 2 * 5000, 1: uniform + 2 * 5000, 2: uniform + 5000, 3: uniform + 5000}


#: docs/generators.md's recipe: two generators in one module, each a compute step per NPU
GENERATORS_MODULE = textwrap.dedent("""\
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import COMP_NODE


    def _steps(prefix, npus, micros):
        for rank in range(npus):
            write_et(f"{prefix}.{rank}.et", [make_node(0, "step", COMP_NODE, duration_micros=micros,
                                                       attrs={"is_cpu_op": False})])


    def short(params, prefix):
        _steps(prefix, params["npus"], params["us"])


    def long(params, prefix):
        _steps(prefix, params["npus"], 2 * params["us"])
    """)


def test_another_generator_under_the_same_name_does_not_reuse_the_first_ones_traces(
        user: Path, monkeypatch, capsys) -> None:
    """A plugin that registers `long` under the name its earlier version gave `short`
    (generators.md: traces are cached by the parameters and the generator's source file,
    which did not change) ran `short`'s cached traces: 10 us instead of 20 us, no sign.
    Now the cache knows which function wrote them."""
    from simpy_astra.cli.main import main
    from simpy_astra.workloads.generated import GENERATORS

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(user / "cache"))
    (user / "r2_gens.py").write_text(GENERATORS_MODULE)
    for which in ("short", "long"):
        (user / f"r2_plugin_{which}.py").write_text(
            f"from simpy_astra.workloads.generated import register\nimport r2_gens\n"
            f"register('r2_steps', r2_gens.{which}, version='1')\n")
    path = _scenario(user, "{generate: r2_steps, npus: 4, us: 10}", "congestion_unaware")
    ends = []
    for which in ("short", "long"):
        GENERATORS.pop("r2_steps", None)  # a new process, with the edited plugin
        assert main(["run", str(path), "--quiet", "--plugin", f"r2_plugin_{which}"]) == 0
        ends.append(capsys.readouterr().out.split()[2])
    GENERATORS.pop("r2_steps", None)
    # one compute node of `us` (short) or 2 `us` (long) microseconds per NPU, nothing else
    assert ends == [f"{10 * 1000:,}", f"{2 * 10 * 1000:,}"]


#: docs/collectives.md's hypercube, as a researcher copies it
HYPERCUBE = textwrap.dedent("""\
    from simpy_astra.topologies import BasicTopology


    class Hypercube(BasicTopology):
        def hops(self, src, dst):
            return bin(src ^ dst).count("1")

        def links(self):
            dims = self.npus_count.bit_length() - 1
            return [(i, i ^ (1 << k)) for i in range(self.npus_count) for k in range(dims)]

        def route(self, src, dst):
            path = [src]
            for k in range(self.npus_count.bit_length() - 1):
                if (path[-1] ^ dst) >> k & 1:
                    path.append(path[-1] ^ (1 << k))
            return path
    """)


@pytest.mark.parametrize("fold", ["on", "off"])
def test_a_topology_whose_routes_miss_their_npu_is_refused_on_the_analytical_backend(
        user: Path, capsys, fold: str) -> None:
    """The hypercube on 6 NPUs (not a power of two): route(0, 4) never leaves NPU 0 and
    links() has no 0-4 link, yet the analytical backend, which asks hops() alone, timed
    0 -> 4 as one hop, 1,720 ns, with no sign. Now it checks the route of each pair a message takes, as the
    link-level backends do and stops in one line naming the topology and the route."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (user / "r2_cube.py").write_text(HYPERCUBE)
    send = "{{generate: microbench, collective: send_recv, size: 65536, num_npus: {n}, src: 0, dst: {dst}}}"
    bad = _scenario(user, send.format(n=6, dst=4), "congestion_unaware", npus=6, topology="'r2_cube:Hypercube'")
    assert main(["run", str(bad), "--quiet", "--fold-symmetry", fold]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    if fold == "on":  # asked for, folding's refusal is said first (two lines of at most 80 columns)
        assert err[0].startswith("note: symmetry folding off") and err[1].startswith("  "), err
        err = err[2:]
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: network: field 'topology[0]' (r2_cube:Hypercube): route(")
    assert "expected a list of device ids from" in err[0]

    # on 8 NPUs it is a hypercube: 0 -> 7 crosses three links, trunc(3 L + S / B)
    good = _scenario(user, send.format(n=8, dst=7), "congestion_unaware", npus=8, topology="'r2_cube:Hypercube'")
    assert main(["run", str(good), "--quiet", "--fold-symmetry", fold]) == 0
    assert capsys.readouterr().out.split()[2] == f"{int(3 * LAT + 65536 / B):,}"


#: collectives/README.md's recipe with the optional traffic= hook: a recursive-doubling
#: all-gather (step k swaps the 2^k pieces gathered so far with position XOR 2^k)
RD_ALLGATHER = textwrap.dedent("""\
    from simpy_astra.collectives.base import ALL_GATHER, CollectiveAlgorithm, ring_final_size


    def rd_allgather(ctx):
        n, i, have, k = len(ctx.members), ctx.index, ctx.size_bytes, 1
        while k < n:
            peer = ctx.members[i ^ k]
            ctx.send(peer, have)
            yield ctx.recv(peer, have)
            yield ctx.endpoint()
            have, k = 2 * have, 2 * k


    def planned(shape):
        n, out, have, k = len(shape.members), [], shape.size_bytes, 1
        while k < n:
            out.append((shape.index ^ k, have))
            have, k = 2 * have, 2 * k
        return out


    def _algorithm(traffic):
        return CollectiveAlgorithm("rd_allgather", rd_allgather, ring_final_size,
                                   kinds=frozenset({ALL_GATHER}), traffic=traffic)


    RD = _algorithm(planned)
    OFF_THE_RING = _algorithm(lambda shape: [(99, shape.size_bytes)])
    NEGATIVE = _algorithm(lambda shape: [((shape.index + 1) % len(shape.members), -shape.size_bytes)])
    NOT_A_LIST = _algorithm(lambda shape: len(shape.members))
    NO_SHAPE = _algorithm(lambda: [])
    """)


def _rd_scenario(folder: Path, algorithm: str) -> Path:
    path = _scenario(folder, "{generate: microbench, collective: all_gather, size: 65536, num_npus: 8}",
                     "congestion_unaware", npus=8, topology="FullyConnected")
    path.write_text(path.read_text().replace("all-gather-implementation: [ring]",
                                             f"all-gather-implementation: ['r2_rd:{algorithm}']"))
    return path


def test_a_recursive_doubling_all_gather_with_its_traffic_matches_its_closed_form(user: Path, capsys) -> None:
    from simpy_astra.cli.main import main

    (user / "r2_rd.py").write_text(RD_ALLGATHER)
    # log2(8) = 3 steps of 2^k x 64 KiB over one link each, an endpoint delay after each
    expected = sum(int(LAT + 2**k * 65536 / B) for k in range(3)) + 3 * E
    assert expected == 10_073
    for fold in ("on", "off"):
        assert main(["run", str(_rd_scenario(user, "RD")), "--quiet", "--fold-symmetry", fold]) == 0
        assert capsys.readouterr().out.split()[2] == f"{expected:,}"


@pytest.mark.parametrize(("algorithm", "says"), [
    ("OFF_THE_RING", "returned [(99, 65536)]"),  # was: internal error IndexError
    ("NEGATIVE", "returned [(1, -65536)]"),  # was: a run that lowered the bound check's floor
    ("NOT_A_LIST", "returned 8"),  # was: internal error TypeError
    ("NO_SHAPE", "cannot be called as traffic(shape)"),  # was: internal error TypeError
])
def test_a_traffic_hook_that_breaks_its_contract_is_one_line_naming_it(
        user: Path, capsys, algorithm: str, says: str) -> None:
    """collectives/README.md's optional traffic=fn: what it returns feeds the bound check's
    floor. A peer off the ring, or a hook that cannot take the shape, was an 'internal error
    ... simpy-astra bug'; negative bytes ran on, lowering the floor. Now each is one line
    naming the algorithm and what traffic must return."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (user / "r2_rd.py").write_text(RD_ALLGATHER)
    assert main(["run", str(_rd_scenario(user, algorithm)), "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"r2_rd:{algorithm}" in err[0] and says in err[0], err
    assert "internal error" not in err[0]


def test_a_phase_that_only_yields_its_own_fired_signal_is_told_what_it_did(user: Path, capsys) -> None:
    """collectives/README.md: ctx.signal() fires when the algorithm calls .fire(value). A phase
    that fires its own signal and then yields it never waits; it was told it 'returned before
    it yielded anything', which it had not. Now the line says what happened."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (user / "r2_sig.py").write_text("def own_signal(ctx):\n    done = ctx.signal()\n    done.fire(1)\n"
                                    "    yield done\n")
    path = _scenario(user, "{generate: microbench, collective: all_reduce, size: 1024, num_npus: 4}",
                     "congestion_unaware")
    path.write_text(path.read_text().replace("all-reduce-implementation: [ring]",
                                             "all-reduce-implementation: ['r2_sig:own_signal']"))
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'own_signal'" in err[0] and "yielded only events that had already happened" in err[0]


#: docs/collectives.md's topology recipe with links of their own: NPUs in groups of 4 under a
#: leaf switch, leaves under one spine, the leaf-spine links at half the bandwidth
TREE = textwrap.dedent("""\
    from simpy_astra.topologies import BasicTopology


    class Tree(BasicTopology):
        def _leaf(self, npu):
            return self.npus_count + npu // 4

        def _spine(self):
            return self.npus_count + self.npus_count // 4

        def hops(self, src, dst):
            return 2 if src // 4 == dst // 4 else 4

        def links(self):
            out = []
            for i in range(self.npus_count):
                out += [(i, self._leaf(i)), (self._leaf(i), i)]
            for leaf in range(self.npus_count, self._spine()):
                out += [(leaf, self._spine()), (self._spine(), leaf)]
            return out

        def route(self, src, dst):
            if src // 4 == dst // 4:
                return [src, self._leaf(src), dst]
            return [src, self._leaf(src), self._spine(), self._leaf(dst), dst]

        def link_params(self, src, dst):
            uplink = src >= self.npus_count and dst >= self.npus_count
            return (self.bandwidth_gbps / 2 if uplink else self.bandwidth_gbps, self.latency_ns)
    """)


def test_one_message_over_unequal_links_on_each_backend(user: Path, capsys) -> None:
    """docs/backends.md gave the packet backend's one message as h L + S/B + (h-1) P/B with B
    the slowest hop's: 4,899 ns for NPU 0 -> 7 here, where the backend (and its module's
    own docstring) charges each hop's own P/B_i for the first packet: 4,748. The page now
    gives sum(L + P/B_i) + (S-P)/min(B_i); each backend is checked against its closed form."""
    from simpy_astra.cli.main import main

    (user / "r2_tree.py").write_text(TREE)
    size, packet = 65536, 4096
    path = _scenario(user, f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, "
                           f"src: 0, dst: 7}}", "congestion_unaware", npus=8, topology="'r2_tree:Tree'")
    speeds = [B, B / 2, B / 2, B]  # bytes per ns along the route 0, leaf, spine, leaf, 7

    def finish(backend: str) -> int:
        assert main(["run", str(path), "--quiet", "--network-backend", backend]) == 0
        return int(capsys.readouterr().out.split()[2].replace(",", ""))

    # analytical: trunc(summed latency + S / slowest), docs/collectives.md (path_profile)
    assert finish("congestion_unaware") == int(4 * LAT + size / min(speeds)) == 4_441
    # store-and-forward: each hop trunc(L + S / B_i) (docs/backends.md, network/README.md)
    assert finish("congestion_aware") == sum(int(LAT + size / b) for b in speeds) == 9_322
    # pipelined packets; the backend keeps its trains' instants in whole ns, so within 2 ns
    pipelined = sum(LAT + packet / b for b in speeds) + (size - packet) / min(speeds)
    assert abs(finish("packet") - pipelined) <= 2
    assert abs(finish("packet") - (4 * LAT + size / min(speeds) + 3 * packet / min(speeds))) > 100


def test_a_plugins_backend_named_without_loading_its_module_says_how(user: Path, capsys) -> None:
    """docs/backends.md: a backend registered from a plugin module is picked by its name once
    the module is loaded. Named without it, the error listed the built-in backends and said
    nothing of loading the module; now it says how (and a typo gets the nearest name)."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (user / "r2_slow_nic.py").write_text(SLOW_NIC)
    path = _scenario(user, "{generate: microbench, collective: all_reduce, size: 1048576, num_npus: 4}",
                     "r2_slow_nic")
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    assert "plugins: [MODULE], --plugin MODULE" in capsys.readouterr().err
    assert main(["run", str(path), "--quiet", "--network-backend", "congestion_unawre"]) == EXIT_INPUT_ERROR
    assert "did you mean 'congestion_unaware'?" in capsys.readouterr().err
    # loaded, it runs: unfolded (its delay singles out NPU 3), NPU 0 ends at the uniform
    # ring's E + 6 (d + E) plus NPU 3's extra 5,000 ns twice (the first test's derivation)
    assert main(["run", str(path), "--quiet", "--plugin", "r2_slow_nic", "--fold-symmetry", "off"]) == 0
    d = int(LAT + 2**18 / B)
    assert capsys.readouterr().out.split()[2] == f"{E + 6 * (d + E) + 2 * 5000:,}"


@pytest.mark.parametrize(("field", "value", "says"), [
    ("topology: [Ring]", "topology: [Tree]", "plugins: [MODULE], --plugin MODULE"),
    ("all-reduce-implementation: [ring]", "all-reduce-implementation: [rdAllGather]",
     "plugins: [MODULE], --plugin MODULE"),
    ("all-reduce-implementation: [ring]", "all-reduce-implementation: [Ring]", "did you mean 'ring'?"),
    ("generate: microbench", "generate: pipeline", "plugins: [MODULE], --plugin MODULE"),
])
def test_a_short_name_a_plugin_would_register_says_to_load_it(user: Path, capsys, field: str, value: str,
                                                              says: str) -> None:
    """docs/collectives.md and generators.md: a plugin module registers a short name
    (collectives.register("rdAllGather", ...)). Named without the module loaded, a topology,
    algorithm or generator was refused with the built-in names alone."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    path = _scenario(user, "{generate: microbench, collective: all_reduce, size: 1024, num_npus: 4}",
                     "congestion_unaware")
    path.write_text(path.read_text().replace(field, value))
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
