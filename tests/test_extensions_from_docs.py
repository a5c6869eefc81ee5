"""Extensions written from the docs alone (issue 52): a link model, a switch model, a
collective and a topology, as a newcomer writes them after reading
``simpy_astra/network/README.md``, ``collectives/README.md``, ``docs/collectives.md`` and
``docs/cosimulation.md`` -- nothing else of the code. Each is checked against a figure derived
by hand from the closed forms those pages state.

The fabric: two NPUs on one switch ``"sw"`` (a networkx star, the topology extension), links
of exactly 1 byte/ns (GB = 2^30 B) and ``LAT`` ns. On the congestion-aware backend one hop of
S bytes starting at t reaches the far end at ``t + LAT + S`` (network/README.md: ``t +
trunc(latency + S / B)``); the closed-form backend charges a route ``trunc(summed latency +
S / slowest bandwidth)`` = ``2 LAT + S``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

LAT = 100
S = 1_000
GAP = 50  # the link model's hold before each item (ns)
DELAY = 30  # the switch model's pipeline delay (ns)
E = 10  # the system's endpoint delay

#: the user's module, written from the docs: a topology builder, a link model, a switch model,
#: a collective algorithm
USER_CODE = textwrap.dedent(f'''
    import networkx as nx

    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.switch import SwitchElement

    ONE_BYTE_PER_NS = 1e9 / 2**30  # GB/s, GB = 2^30 B


    def star():
        """docs/collectives.md: NPUs 0..N-1, switches any other name, both directions."""
        g = nx.DiGraph()
        for npu in (0, 1):
            g.add_edge(npu, "sw", bandwidth_gbps=ONE_BYTE_PER_NS, latency_ns={LAT})
            g.add_edge("sw", npu, bandwidth_gbps=ONE_BYTE_PER_NS, latency_ns={LAT})
        return g


    class PacedLink(LinkElement):
        """network/README.md, "The link contract": wait gap_ns before each item starts."""

        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int = 0):
            if gap_ns < 0:
                raise ValueError(f"gap_ns must be >= 0 (got {{gap_ns}})")
            super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
            self.gap_ns = gap_ns

        def hold_ns(self, item):
            return self.gap_ns


    class SlowSwitch(SwitchElement):
        """network/README.md, "The switch contract": an item leaves delay_ns after it came."""

        def __init__(self, env, device, forward, delay_ns: int = 0):
            self.delay_ns = delay_ns
            super().__init__(env, device, forward)

        def release_ns(self, item, arrived_ns):
            return arrived_ns + self.delay_ns


    def swap(ctx):
        """collectives/README.md: an all-reduce on 2 NPUs without reduction cost: 2(n-1)
        steps of send S/n right, receive from the left, endpoint delay."""
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        msg = ctx.size_bytes // n
        for _ in range(2 * (n - 1)):
            ctx.send(right, msg)
            yield ctx.recv(left, msg)
            yield ctx.endpoint()
''')

SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: " f"{E}, "
          "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
          "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
          "all-to-all-implementation: [direct]}")


@pytest.fixture
def user(tmp_path: Path, monkeypatch) -> Path:
    sys.modules.pop("my_ext", None)
    (tmp_path / "my_ext.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _scenario(folder: Path, workload: str, network_extra: str = "", backend: str = "congestion_aware",
              system: str = SYSTEM) -> str:
    path = folder / "s.yaml"
    path.write_text(f"workload: {workload}\nsystem: {system}\n"
                    f"network: {{topology: {{networkx: 'my_ext:star'}}{network_extra}}}\nbackend: {backend}\n")
    return str(path)


SEND = f"{{generate: microbench, collective: send_recv, size: {S}, num_npus: 2, src: 0, dst: 1}}"


def test_link_and_switch_models_from_the_yaml_and_from_python(user: Path) -> None:
    from simpy_astra.simulation import Simulation

    # hold, hop to the switch, its delay, hold, hop to NPU 1
    expected = GAP + (LAT + S) + DELAY + GAP + (LAT + S)
    path = _scenario(user, SEND, ", link-model: {class: 'my_ext:PacedLink', gap_ns: 50}, "
                                 "switch-model: {class: 'my_ext:SlowSwitch', delay_ns: 30}")
    assert max(r.finished_cycles for r in Simulation.from_scenario(path).run()) == expected

    import my_ext

    sim = Simulation.from_scenario(_scenario(user, SEND), link_model=my_ext.PacedLink,
                                   link_params={"gap_ns": GAP}, switch_model=my_ext.SlowSwitch,
                                   switch_params={"delay_ns": DELAY})
    ends = []
    sim.on("link_end", lambda o: ends.append((o.time_ns, o.what.src, o.npu, o.peer, o.size_bytes)))
    assert max(r.finished_cycles for r in sim.run()) == expected
    # cosimulation.md: link_end at the far-end arrival; npu and peer None, the link in what
    first = GAP + LAT + S
    assert ends == [(first, 0, None, None, S), (expected, sim.network.link("sw", 1).src, None, None, S)]


def test_a_models_own_parameter_check_is_an_input_error(user: Path, capsys) -> None:
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    path = _scenario(user, SEND, ", link-model: {class: 'my_ext:PacedLink', gap_ns: -5}")
    assert main(["run", path, "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: network: field 'link-model' (my_ext:PacedLink) gap_ns must be >= 0 (got -5)"]


def test_a_collective_of_ones_own_on_ones_own_topology(user: Path) -> None:
    from simpy_astra.simulation import Simulation

    system = SYSTEM.replace("all-reduce-implementation: [ring]", "all-reduce-implementation: ['my_ext:swap']")
    workload = f"{{generate: microbench, collective: all_reduce, size: {2 * S}, num_npus: 2}}"
    path = _scenario(user, workload, backend="congestion_unaware", system=system)
    # 2(n-1) = 2 steps of one message of S bytes (2S / n) and the endpoint delay; a message
    # crosses both links: trunc(2 LAT + S / 1 byte/ns)
    hop = 2 * LAT + S
    reports = Simulation.from_scenario(path).run()
    assert [r.finished_cycles for r in reports] == [2 * (hop + E)] * 2


def test_a_failed_switch_by_its_name_ends_in_a_stall_report(user: Path) -> None:
    from simpy_astra.errors import StalledError  # cosimulation.md names the module
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(_scenario(user, SEND))
    sim.fail_switch("sw")  # the name network.link(0, "sw") takes
    with pytest.raises(StalledError, match="which is failed"):
        sim.run()


# --- the extension points a researcher adds from README.md and docs/*.md (issue: "extension
# scripts from the docs"), each against a closed form derived here. Links of exactly 1 byte/ns
# (GB = 2^30 B) and L ns; E the endpoint delay.

ONE_BYTE_PER_NS = 1e9 / 2**30
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

RESEARCHER = textwrap.dedent('''
    from simpy_astra import collectives
    from simpy_astra.collectives.base import ALL_GATHER, ALL_TO_ALL, CollectiveAlgorithm, ring_final_size
    from simpy_astra.network.link import LinkElement


    def rd_allgather(ctx):
        """Recursive doubling: log2 n steps; partner index XOR 2^k; what is held doubles."""
        held, k = ctx.size_bytes, 1
        while k < len(ctx.members):
            peer = ctx.members[ctx.index ^ k]
            ctx.send(peer, held)
            yield ctx.recv(peer, held)
            yield ctx.endpoint()
            held, k = 2 * held, 2 * k


    def direct_a2a(ctx):
        """S/n to every other member at once; done when all n-1 pieces are here."""
        n, i = len(ctx.members), ctx.index
        piece = ctx.size_bytes // n
        pieces = []
        for k in range(1, n):
            ctx.send(ctx.members[(i + k) % n], piece)
            pieces.append(ctx.recv(ctx.members[(i - k) % n], piece))
        yield ctx.env.all_of(pieces)
        yield ctx.endpoint()


    collectives.register("rdAllGather", CollectiveAlgorithm("rdAllGather", rd_allgather, ring_final_size,
                                                            kinds=frozenset({ALL_GATHER}), xor_symmetric=True))
    collectives.register("directA2A", CollectiveAlgorithm("directA2A", direct_a2a, ring_final_size,
                                                          kinds=frozenset({ALL_TO_ALL}), rotation_symmetric=True))


    class OverheadLink(LinkElement):
        """A per-message overhead: overhead_ns plus the header's serialisation before each message."""

        symmetric = True

        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, overhead_ns: int = 0,
                     header_bytes: int = 0):
            super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
            self.overhead_ns, self.header_bytes = overhead_ns, header_bytes

        def hold_ns(self, item):
            return self.overhead_ns + self.header_bytes / self.bytes_per_ns
''')


@pytest.fixture
def researcher(tmp_path: Path, monkeypatch) -> Path:
    for name in ("researcher", "loggp", "hypercube", "pipeline_gen"):
        sys.modules.pop(name, None)
    (tmp_path / "researcher.py").write_text(RESEARCHER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / ".cache"))
    yield tmp_path
    from simpy_astra.network.backends import BACKENDS

    BACKENDS.pop("loggp", None)


def _run(folder: Path, workload: str, topology: str, n: int, backend: str,
         algorithms: dict[str, str] | None = None, extra: str = "", network_extra: str = "",
         latency: int = LAT) -> list[int]:
    from simpy_astra.simulation import Simulation

    system = {"all-reduce-implementation": "ring", "all-gather-implementation": "ring",
              "reduce-scatter-implementation": "ring", "all-to-all-implementation": "direct", **(algorithms or {})}
    listed = ", ".join(f"{key}: [{value}]" for key, value in system.items())
    path = folder / "r.yaml"
    path.write_text(f"workload: {workload}\n"
                    f"system: {{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: {E}, "
                    f"active-chunks-per-dimension: 1, preferred-dataset-splits: 1, {listed}}}\n"
                    f"network: {{topology: [{topology}], npus_count: [{n}], bandwidth: [{ONE_BYTE_PER_NS!r}], "
                    f"latency: [{latency}]{network_extra}}}\nbackend: {backend}\n{extra}")
    return [r.finished_ns for r in Simulation.from_scenario(str(path)).run()]


def _microbench(collective: str, size: int, n: int) -> str:
    return f"{{generate: microbench, collective: {collective}, size: {size}, num_npus: {n}}}"


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_recursive_doubling_all_gather_of_ones_own(researcher, backend):
    """On 8 fully connected NPUs each step's pairs have links of their own: step k moves
    2^k S bytes one hop, trunc(L + 2^k S / B) + E; an all-gather's ctx.size_bytes is this
    NPU's piece S (collectives/README.md)."""
    n, size = 8, 1000
    expected = sum(LAT + 2**k * size + E for k in range(3))
    finished = _run(researcher, _microbench("all_gather", size, n), "FullyConnected", n, backend,
                    {"all-gather-implementation": "rdAllGather"}, extra="plugins: [researcher]\n")
    assert finished == [expected] * n == [7330] * n


def test_a_direct_all_to_all_of_ones_own(researcher):
    """Every pair at once on its own link: trunc(L + (S/n) / B) + E."""
    n, size = 8, 8000
    finished = _run(researcher, _microbench("all_to_all", size, n), "FullyConnected", n, "congestion_aware",
                    {"all-to-all-implementation": "directA2A"}, extra="plugins: [researcher]\n")
    assert finished == [LAT + size // n + E] * n


def test_the_ring_all_reduce_is_its_closed_form_and_each_extension_adds_its_own_term(researcher):
    """A ring all-reduce of S on n NPUs at B: 2(n-1)/n S/B plus 2(n-1) latencies, plus the
    endpoint delays (one per step and one at the start): 2(n-1) (L + S/(nB) + E) + E. The
    LogGP backend (examples/loggp.py) adds 2 o to each of the 2(n-1) messages; the link with a
    per-message overhead adds its hold, trunc(overhead + header / B), to each."""
    n, size = 8, 8000
    workload = _microbench("all_reduce", size, n)
    ring = 2 * (n - 1) * (LAT + size // n + E) + E
    assert 2 * (n - 1) / n * size / 1 + 2 * (n - 1) * LAT + (2 * (n - 1) + 1) * E == ring == 15_550
    assert _run(researcher, workload, "Ring", n, "congestion_unaware") == [ring] * n
    assert _run(researcher, workload, "Ring", n, "congestion_aware") == [ring] * n

    import loggp

    assert _run(researcher, workload, "Ring", n, "loggp", extra="plugins: [loggp]\n") == \
        [ring + 2 * (n - 1) * 2 * loggp.O_NS] * n
    overhead = ", link-model: {class: 'researcher:OverheadLink', overhead_ns: 200, header_bytes: 64}"
    assert _run(researcher, workload, "Ring", n, "congestion_aware", network_extra=overhead) == \
        [ring + 2 * (n - 1) * (200 + 64)] * n


def test_the_hypercube_and_the_pipeline_generator_of_the_examples(researcher):
    """examples/hypercube.py: NPU 0 -> 7 crosses 3 links, trunc(3 L + S / B) analytical, 3
    trunc(L + S / B) store-and-forward. examples/pipeline_gen.py: stage s starts when the stage
    before has computed and its message arrived; the last of 4 ends at 4 C + 3 trunc(L + S / B)."""
    send = "{generate: microbench, collective: send_recv, size: 1000, num_npus: 8, src: 0, dst: 7}"
    assert max(_run(researcher, send, "'hypercube:Hypercube'", 8, "congestion_unaware")) == 3 * LAT + 1000
    assert max(_run(researcher, send, "'hypercube:Hypercube'", 8, "congestion_aware")) == 3 * (LAT + 1000)
    pipeline = "{generate: 'pipeline_gen:pipeline', stages: 4, size: 1000, compute_us: 5}"
    finished = _run(researcher, pipeline, "Ring", 4, "congestion_unaware")
    # stage s: s hops of (C + L + S) before its own compute, then its send (L + S) unless last
    assert finished == [(s + 1) * (5000 + LAT + 1000) for s in range(3)] + [3 * (5000 + LAT + 1000) + 5000]


def test_a_sweep_finds_the_extensions_beside_its_base_scenario(tmp_path, monkeypatch):
    """examples/loggp_ring.yaml swept from another folder: its points (each run from a temporary
    folder, in a worker) find loggp.py beside the base scenario, as run does; they stopped with
    "cannot import plugin module 'loggp'". A 1 MiB ring all-reduce on 8 NPUs at B GB/s:
    14 (trunc(500 + 2^17 / (B 2^30 / 10^9)) + 10) + 10, plus 14 x 2 x 300 ns of LogGP overhead."""
    import csv

    from simpy_astra.cli.main import main

    sweep = tmp_path / "sweeps" / "bw.yaml"
    sweep.parent.mkdir()
    sweep.write_text(f"base: {EXAMPLES / 'loggp_ring.yaml'}\naxes:\n  network.bandwidth: [25, 50]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {float(r["network.bandwidth"]): (r["status"], int(r["finish_ns"])) for r in csv.DictReader(f)}

    def expected(gbps: float) -> int:
        return 14 * (int(500 + 2**17 / (gbps * 2**30 / 1e9)) + 10) + 10 + 14 * 2 * 300

    assert rows == {25.0: ("ok", expected(25)), 50.0: ("ok", expected(50))} == {25.0: ("ok", 83_898),
                                                                             50.0: ("ok", 49_724)}


def test_the_report_of_ones_own_prints_its_closed_form():
    """docs/reports.md's command: a 1 MiB ring all-reduce on 4 NPUs at 50 GB/s and 500 ns,
    6 (trunc(500 + 2^18 / B) + 10) + 10 ns; bus bandwidth 1.5 S / T; link 0->1 busy 6 x
    trunc(2^18 / B) of it."""
    import subprocess

    root = EXAMPLES.parent
    done = subprocess.run([sys.executable, "examples/report_busbw.py", "examples/cosim_ring.yaml", "1048576"],
                          cwd=root, capture_output=True, text=True, timeout=300, check=True)
    b = 50 * 2**30 / 1e9
    t = 6 * (int(500 + 2**18 / b) + 10) + 10
    busy = 6 * int(2**18 / b)
    assert done.stdout == (f"4 NPUs, 1,048,576 B all-reduce in {t:,} ns: bus bandwidth {1.5 * 2**20 / t:.2f} GB/s; "
                           f"busiest link 0->1 busy {busy / t:.0%} of the time\n")
    assert (t, busy) == (32_362, 29_292)
