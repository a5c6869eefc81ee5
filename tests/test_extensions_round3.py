"""Extensions written from the docs alone, third round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py``)
and is checked against a figure derived here from the closed forms the docs state.

Links of exactly 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns, so a
message of S bytes over h hops takes ``h L + S`` on the analytical backend, ``h (L + S)``
store-and-forward (congestion_aware) and ``h L + S + (h-1) P`` pipelined in packets of P
(packet); ``E`` is the endpoint delay, ``ctx.endpoint(reduce_bytes=x)`` adds
three passes (two reads and a write) of ``int(x / (local-mem-bw 10^9) x 10^9)`` each, in floating
point as ASTRA-sim computes it (collectives/README.md).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

L = 500
E = 10
P = 4096  # the packet backend's default packet-size
MEM_BW = 50  # local-mem-bw, GB/s (bytes per ns) for reductions
ONE_BYTE_PER_NS = 1e9 / 2**30

#: the researcher's module: written from docs/collectives.md, collectives/README.md,
#: docs/backends.md, simpy_astra/network/README.md and docs/generators.md
R3 = textwrap.dedent('''
    from simpy_astra import collectives
    from simpy_astra.collectives.base import ALL_TO_ALL, REDUCE_SCATTER, CollectiveAlgorithm, ring_final_size
    from simpy_astra.network.backends import BackendSpec, register
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
    from simpy_astra.network.link import LinkElement
    from simpy_astra.topologies import BasicTopology
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE


    def pairwise_a2a(ctx):
        """Pairwise exchange: in round k send S/n k places ahead, receive from k places behind."""
        n, i = len(ctx.members), ctx.index
        piece = ctx.size_bytes // n
        for k in range(1, n):
            ctx.send(ctx.members[(i + k) % n], piece)
            yield ctx.recv(ctx.members[(i - k) % n], piece)
            yield ctx.endpoint()


    PHASES = []  # the NPUs that ran a phase of halving_rs


    def halving_rs(ctx):
        """Recursive halving on any n: the n - p members past the largest power of two p fold
        their buffer into a partner first and get their S/n piece back at the end."""
        PHASES.append(ctx.npu_id)
        n, i, size = len(ctx.members), ctx.index, ctx.size_bytes
        p = 1 << (n.bit_length() - 1)
        if i >= p:
            partner = ctx.members[i - p]
            ctx.send(partner, size)
            yield ctx.recv(partner, size // n)
            yield ctx.endpoint()
            return
        if i < n - p:
            yield ctx.recv(ctx.members[i + p], size)
            yield ctx.endpoint(reduce_bytes=size)
        held, k = size, p // 2
        while k >= 1:
            held //= 2
            peer = ctx.members[i ^ k]
            ctx.send(peer, held)
            yield ctx.recv(peer, held)
            yield ctx.endpoint(reduce_bytes=held)
            k //= 2
        if i < n - p:
            ctx.send(ctx.members[i + p], size // n)


    def bruck_a2a(ctx):
        """Bruck: in round k every block whose index has bit k set moves 2^k places ahead, so
        round k sends (blocks with bit k) x S/n; ceil(log2 n) rounds, any n."""
        n, i = len(ctx.members), ctx.index
        piece, k = ctx.size_bytes // n, 1
        while k < n:
            size = sum(1 for j in range(n) if j & k) * piece
            ctx.send(ctx.members[(i + k) % n], size)
            yield ctx.recv(ctx.members[(i - k) % n], size)
            yield ctx.endpoint()
            k *= 2


    collectives.register("r3Bruck", CollectiveAlgorithm("r3Bruck", bruck_a2a, ring_final_size,
                                                        kinds=frozenset({ALL_TO_ALL}), rotation_symmetric=True))
    collectives.register("r3Pairwise", CollectiveAlgorithm("r3Pairwise", pairwise_a2a, ring_final_size,
                                                           kinds=frozenset({ALL_TO_ALL}), rotation_symmetric=True))
    collectives.register("r3Halving", CollectiveAlgorithm("r3Halving", halving_rs, ring_final_size,
                                                          kinds=frozenset({REDUCE_SCATTER})))


    HOP_NS = 100


    class PerHop(CongestionUnawareNetwork):
        """The analytical delay plus HOP_NS for every link crossed (a router's pipeline)."""

        def __init__(self, env, dims):
            super().__init__(env, dims)
            self.ring = dims[0]

        def message_delay_ns(self, src, dst, size_bytes):
            return super().message_delay_ns(src, dst, size_bytes) + HOP_NS * self.ring.hops(src, dst)


    PER_HOP = register(BackendSpec("r3_per_hop", "analytical plus 100 ns a hop",
                                   lambda env, dims, source, config=None: PerHop(env, dims), folds="pairs",
                                   folded=None))


    class Torus3D(BasicTopology):
        """A SIDE^3 torus in one dimension: NPU i at (i % s, i // s % s, i // s^2), routed x, y, z
        in turn, each the shorter way round."""

        SIDE = 3

        def _xyz(self, i):
            s = self.SIDE
            return [i % s, i // s % s, i // (s * s)]

        def _id(self, c):
            return c[0] + self.SIDE * c[1] + self.SIDE ** 2 * c[2]

        def route(self, src, dst):
            s, here, goal, path = self.SIDE, self._xyz(src), self._xyz(dst), [src]
            for d in range(3):
                while here[d] != goal[d]:
                    ahead = (goal[d] - here[d]) % s
                    here[d] = (here[d] + (1 if ahead <= s - ahead else -1)) % s
                    path.append(self._id(here))
            return path

        def hops(self, src, dst):
            return len(self.route(src, dst)) - 1

        def links(self):
            out = []
            for i in range(self.npus_count):
                for d in range(3):
                    for step in (1, -1):
                        c = self._xyz(i)
                        c[d] = (c[d] + step) % self.SIDE
                        out.append((i, self._id(c)))
            return out


    class AsymLink(LinkElement):
        """A link whose 'down' direction (to a lower NPU id) runs at reverse_share of its bandwidth."""

        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, reverse_share: float = 1.0):
            if dst < src:
                bandwidth_gbps = bandwidth_gbps * reverse_share
            super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)


    def gpipe(params, prefix):
        """Forward passes of M micro-batches through P stages: stage s receives micro-batch m
        (tag m), computes it after micro-batch m - 1, and sends it on."""
        stages, micro, size, compute_us = (params["stages"], params["micro_batches"], params["size"],
                                           params["compute_us"])
        for s in range(stages):
            nodes, nid, last = [], 0, None
            for m in range(micro):
                deps = [] if last is None else [last]
                if s > 0:
                    nodes.append(make_node(nid, f"recv{m}", COMM_RECV_NODE, attrs={
                        "is_cpu_op": False, "comm_src": s - 1, "comm_size": size, "comm_tag": m}))
                    deps.append(nid)
                    nid += 1
                nodes.append(make_node(nid, f"fwd{m}", COMP_NODE, deps=deps, duration_micros=compute_us,
                                       attrs={"is_cpu_op": False}))
                last, nid = nid, nid + 1
                if s < stages - 1:
                    nodes.append(make_node(nid, f"send{m}", COMM_SEND_NODE, deps=[last], attrs={
                        "is_cpu_op": False, "comm_dst": s + 1, "comm_size": size, "comm_tag": m}))
                    nid += 1
            write_et(f"{prefix}.{s}.et", nodes)
''')


@pytest.fixture
def r3(tmp_path: Path, monkeypatch) -> Path:
    from simpy_astra.network.backends import BACKENDS

    sys.modules.pop("r3", None)
    (tmp_path / "r3.py").write_text(R3)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / ".cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    yield tmp_path
    BACKENDS.pop("r3_per_hop", None)
    sys.modules.pop("r3", None)


def _scenario(folder: Path, workload: str, topology: str, n: int, backend: str, algorithms: dict | None = None,
              network_extra: str = "", extra: str = "plugins: [r3]\n") -> Path:
    system = {"all-reduce-implementation": "ring", "all-gather-implementation": "ring",
              "reduce-scatter-implementation": "ring", "all-to-all-implementation": "direct", **(algorithms or {})}
    listed = ", ".join(f"{key}: [{value}]" for key, value in system.items())
    path = folder / "r3.yaml"
    path.write_text(f"workload: {workload}\n"
                    f"system: {{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: {E}, "
                    f"active-chunks-per-dimension: 1, preferred-dataset-splits: 1, local-mem-bw: {MEM_BW}, "
                    f"{listed}}}\n"
                    f"network: {{topology: [{topology}], npus_count: [{n}], bandwidth: [{ONE_BYTE_PER_NS!r}], "
                    f"latency: [{L}]{network_extra}}}\nbackend: {backend}\n{extra}")
    return path


def _finished(path: Path, **kwargs) -> list[int]:
    from simpy_astra.simulation import Simulation

    reports = Simulation.from_scenario(str(path), **kwargs).run()  # in the order they finished
    return [r.finished_ns for r in sorted(reports, key=lambda r: r.npu_id)]


def _bench(collective: str, size: int, n: int, src: int | None = None, dst: int | None = None) -> str:
    ends = "" if src is None else f", src: {src}, dst: {dst}"
    return f"{{generate: microbench, collective: {collective}, size: {size}, num_npus: {n}{ends}}}"


def _hops_on_ring(n: int, k: int) -> int:
    return min(k, n - k)


def test_a_pairwise_exchange_all_to_all_and_a_backend_that_charges_each_hop(r3):
    """8 NPUs on a ring, S = 8,000 B: round k sends S/8 = 1,000 B min(k, 8-k) hops, everyone at
    once, so each round is trunc(h L + S/n) + E on the analytical backend (no link is shared
    there), and the per-hop backend adds 100 ns a hop: sum over k = 1..7 of those."""
    n, size = 8, 8000
    rounds = [(_hops_on_ring(n, k), size // n) for k in range(1, n)]
    plain = sum(h * L + piece + E for h, piece in rounds)
    per_hop = plain + sum(100 * h for h, _ in rounds)
    assert (plain, per_hop) == (15_070, 16_670)
    workload = _bench("all_to_all", size, n)
    algorithms = {"all-to-all-implementation": "r3Pairwise"}
    assert _finished(_scenario(r3, workload, "Ring", n, "congestion_unaware", algorithms)) == [plain] * n
    assert _finished(_scenario(r3, workload, "Ring", n, "r3_per_hop", algorithms)) == [per_hop] * n
    # the claims fold it to NPU 0 alone; unfolded, every NPU gives the same figure
    assert _finished(_scenario(r3, workload, "Ring", n, "r3_per_hop", algorithms,
                               extra="plugins: [r3]\nfold_symmetry: false\n")) == [per_hop] * n


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_a_bruck_all_to_all_on_six_npus(r3, backend):
    """6 fully connected NPUs, S = 6,000 B (pieces of 1,000): rounds k = 1, 2, 4 move the
    blocks whose index has that bit (1, 3, 5; 2, 3; 4, 5): 3,000, 2,000 and 2,000 B, one hop
    each on a link of its own, trunc(L + b) + E a round on every backend."""
    n, size = 6, 6000
    expected = sum(L + blocks * size // n + E for blocks in (3, 2, 2))
    assert expected == 8_530
    got = _finished(_scenario(r3, _bench("all_to_all", size, n), "FullyConnected", n, backend,
                              {"all-to-all-implementation": "r3Bruck"}))
    assert got == [expected] * n


def test_two_jobs_each_with_ones_own_all_to_all_on_a_switch(r3):
    """docs/jobs.md: each job keeps its own system. An 8-NPU switch, congestion_aware; job a
    (NPUs 0-3) runs the pairwise exchange on 4,000 B, job b (NPUs 4-7, from 1 us) Bruck on
    8,000 B. Their routes share no link, so each ends as alone: pairwise 3 rounds of
    2 (L + 1,000) + E; Bruck 2 rounds of 2 (L + 2 x 2,000) + E after its start."""
    from simpy_astra.simulation import Simulation

    def system(algorithm: str) -> str:
        return ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
                "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
                "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
                f"all-to-all-implementation: [{algorithm}]}}")

    path = r3 / "jobs.yaml"
    path.write_text("plugins: [r3]\nbackend: congestion_aware\n"
                    f"network: {{topology: [Switch], npus_count: [8], bandwidth: [{ONE_BYTE_PER_NS!r}], "
                    f"latency: [{L}]}}\n"
                    "jobs:\n"
                    f"  - {{name: a, npus: [0, 1, 2, 3], system: {system('r3Pairwise')},\n"
                    "     workload: {generate: microbench, collective: all_to_all, size: 4000, num_npus: 4}}\n"
                    f"  - {{name: b, npus: [4, 5, 6, 7], start_ns: 1000, system: {system('r3Bruck')},\n"
                    "     workload: {generate: microbench, collective: all_to_all, size: 8000, num_npus: 4}}\n")
    reports = {r.npu_id: r.finished_ns for r in Simulation.from_scenario(str(path)).run()}
    pairwise = 3 * (2 * (L + 1000) + E)
    bruck = 1000 + 2 * (2 * (L + 2 * 2000) + E)
    assert (pairwise, bruck) == (9_030, 19_020)
    assert reports == {**dict.fromkeys(range(4), pairwise), **dict.fromkeys(range(4, 8), bruck)}


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_recursive_halving_reduce_scatter_on_six_npus(r3, backend):
    """6 fully connected NPUs (every pair its own link, so both backends agree), S = 24,000 B,
    p = 4: NPUs 4, 5 fold S into 0, 1 (L + S, then E + R(S)); 0..3 halve twice (S/2, S/4), NPUs
    2, 3 waiting for 0, 1's first message; 0, 1 hand S/6 back to 4, 5 (L + S/6 + E).
    R(x) = 3 int(x / 50e9 x 1e9): 24,000 / 50 is 480, but in floating point 479.99..., so a
    pass is 479 ns (collectives/README.md said 3 trunc(x / 50), 9 ns more here)."""
    n, size = 6, 24_000

    def reduce(x: int) -> int:
        return 3 * int(x / (MEM_BW * 1e9) * 1e9)

    t0 = L + size + E + reduce(size)                       # NPUs 0, 1 after the fold
    t1_first = t0 + E + reduce(size // 2)                  # 0, 1: 2, 3's halves were already there
    t1_second = t0 + L + size // 2 + E + reduce(size // 2)  # 2, 3 wait for 0, 1's halves
    t2_first = t1_first + L + size // 4 + E + reduce(size // 4)
    t2_second = t1_second + L + size // 4 + E + reduce(size // 4)
    back = t2_first + L + size // n + E
    expected = [t2_first, t2_first, t2_second, t2_second, back, back]
    assert expected == [33_541, 33_541, 46_041, 46_041, 38_051, 38_051]
    got = _finished(_scenario(r3, _bench("reduce_scatter", size, n), "FullyConnected", n, backend,
                              {"reduce-scatter-implementation": "r3Halving"}))
    assert got == expected


@pytest.mark.parametrize(("backend", "per_pair"), [
    ("congestion_unaware", lambda h, s: h * L + s),
    ("congestion_aware", lambda h, s: h * (L + s)),
    ("packet", lambda h, s: h * L + s + (h - 1) * P),
])
def test_a_3d_torus_class_routes_each_dimension_the_short_way(r3, backend, per_pair):
    """A 3x3x3 torus as one topology class: NPU 0 -> 26 is (0,0,0) -> (2,2,2), one hop back
    round each dimension (3 links, not 6); 0 -> 13 is (1,1,1), 3 links forward; 0 -> 4 is
    (1,1,0), 2 links."""
    size = 65_536
    for dst, hops in ((26, 3), (13, 3), (4, 2)):
        got = _finished(_scenario(r3, _bench("send_recv", size, 27, 0, dst), "'r3:Torus3D'", 27, backend))
        assert max(got) == per_pair(hops, size), (dst, got)


def test_a_report_of_link_use_on_the_torus_names_the_three_links_a_message_crossed(r3):
    """docs/reports.md's report of one's own over ``sim.network.links()``: 0 -> 26 crosses
    0 -> 2 (x back), 2 -> 8 (y back), 8 -> 26 (z back), each S bytes busy trunc(S / B); no other
    link carries a byte."""
    from simpy_astra.simulation import Simulation

    size = 10_000
    sim = Simulation.from_scenario(str(_scenario(r3, _bench("send_recv", size, 27, 0, 26), "'r3:Torus3D'", 27,
                                                 "congestion_aware")))
    sim.run()
    used = {(link.src, link.dst): (link.bytes, link.busy_ns) for link in sim.network.links() if link.bytes}
    assert used == {(0, 2): (size, size), (2, 8): (size, size), (8, 26): (size, size)}
    assert len(sim.network.links()) == 27 * 6


def test_a_link_model_with_a_slower_down_direction(r3):
    """4 NPUs on a ring, congestion_aware, links towards a lower id at a quarter of the
    bandwidth: 0 -> 1 takes L + S, 1 -> 0 takes L + 4 S; from the YAML and from Python."""
    size = 2_000
    model = ", link-model: {class: 'r3:AsymLink', reverse_share: 0.25}"
    up = _scenario(r3, _bench("send_recv", size, 4, 0, 1), "Ring", 4, "congestion_aware", network_extra=model)
    assert max(_finished(up)) == L + size
    down = _scenario(r3, _bench("send_recv", size, 4, 1, 0), "Ring", 4, "congestion_aware", network_extra=model)
    assert max(_finished(down)) == L + 4 * size
    import r3 as module

    plain = _scenario(r3, _bench("send_recv", size, 4, 1, 0), "Ring", 4, "congestion_aware")
    assert max(_finished(plain, link_model=module.AsymLink, link_params={"reverse_share": 0.25})) == L + 4 * size
    assert max(_finished(plain)) == L + size


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_a_pipeline_generator_of_micro_batches(r3, backend):
    """GPipe's forward: P = 4 stages on a ring, M = 5 micro-batches of C = 3 us, S = 1,000 B
    a hop (d = L + S; no two messages share a link at once, as C > S / B). Stage s ends
    micro-batch m at max(its m - 1, stage s - 1's m + d) + C: the last stage at
    (P + M - 1) C + (P - 1) d; an earlier stage s when its last send has arrived,
    (s + M) C + (s + 1) d (a send node ends when its message arrives, docs/generators.md)."""
    stages, micro, c, size = 4, 5, 3000, 1000
    d = L + size
    expected = [(s + micro) * c + (s + 1) * d for s in range(stages - 1)] + [(stages + micro - 1) * c
                                                                               + (stages - 1) * d]
    assert expected == [16_500, 21_000, 25_500, 28_500]
    workload = f"{{generate: 'r3:gpipe', stages: {stages}, micro_batches: {micro}, size: {size}, compute_us: 3}}"
    assert _finished(_scenario(r3, workload, "Ring", stages, backend, extra="")) == expected


CLUSTER_SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
                  "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, "
                  "reduce-scatter-implementation: [r3Halving]}")


def test_ones_own_collective_beside_a_cluster_is_run_or_refused_never_replaced_by_nccls(r3, capsys):
    """A reduce-scatter of one's own in a system: beside cluster: (docs/megatron.md: a system
    replaces the preset's). On the default backend NCCL's model times every reduce-scatter, so
    the algorithm never ran and the run printed NCCL's figure as if it were the algorithm's
    (the same 8-GPU figure with and without it). Now that is one line naming the key and the
    ways out; on a backend that plays collectives as messages the algorithm runs."""
    import r3 as module

    from simpy_astra.cli.main import main

    path = r3 / "cluster.yaml"
    path.write_text("cluster: {preset: dgx-a100-80gb, gpus: 8}\nplugins: [r3]\n"
                    "workload: {generate: microbench, collective: reduce_scatter, size: 1048576}\n"
                    f"system: {CLUSTER_SYSTEM}\n")
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: system: reduce-scatter-implementation: r3Halving is never run: beside cluster:, "
                   "the congestion_unaware backend times every reduce-scatter as NCCL's model does (its ring, tree or "
                   "NVLS; cluster.nccl_algo forces one), so it would change nothing; to run it, play collectives as "
                   "messages (backend: congestion_aware or packet), or remove reduce-scatter-implementation"]
    assert module.PHASES == []
    assert main(["run", str(path), "--quiet", "--network-backend", "congestion_aware"]) == 0
    assert sorted(set(module.PHASES)) == list(range(8))
    # the preset's own algorithms, written out, are what it runs anyway: not refused
    path.write_text(path.read_text().replace("[r3Halving]", "[ring]"))
    assert main(["run", str(path), "--quiet"]) == 0
    # another built-in one on a dimension is as unread as one's own: 24 GPUs are 8 x 3, whose
    # all-reduces the preset writes [halvingDoubling, ring]; [ring, ring] would not run ring on the first
    path.write_text(path.read_text().replace("reduce-scatter-implementation: [ring]",
                                             "all-reduce-implementation: [ring, ring]").replace("gpus: 8", "gpus: 24"))
    capsys.readouterr()
    assert main(["run", str(path), "--quiet"]) == 2
    assert "system: all-reduce-implementation: ring is never run: beside cluster:" in capsys.readouterr().err


def test_the_reduction_the_collectives_guide_states_is_the_one_a_phase_pays():
    """collectives/README.md gave the reduction as 3 trunc(x / local-mem-bw), which a closed
    form took at its word: 3 x 480 for 24,000 B at 50 GB/s, where the run charged 3 x 479
    (ASTRA-sim's floating-point division lands under the whole quotient). The guide now states
    the computation and that example; the run's figure is the example's."""
    import re

    from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, reduction_delay_ns

    text = " ".join((Path(__file__).resolve().parents[1] / "collectives" / "README.md").read_text().split())
    m = re.search(r"\(([\d,]+) B at (\d+) GB/s: 3 x (\d+) ns, not 3 x (\d+)\)", text)
    assert m, "collectives/README.md no longer works a reduction's example"
    size, gbps, charged, naive = (int(g.replace(",", "")) for g in m.groups())
    assert reduction_delay_ns(size, local_mem_gbps_to_bytes_per_s(gbps)) == 3 * charged
    assert naive == size // gbps != charged


@pytest.mark.parametrize("share", [0, -1])
def test_a_link_model_that_hands_its_base_no_bandwidth_is_named(r3, capsys, share):
    """AsymLink with reverse_share 0 (a direction switched off) or a negative share: the model
    passes LinkElement.__init__ a bandwidth of 0 or below for link 1 -> 0. The run ended in
    'internal error ZeroDivisionError: float division by zero (this is a simpy-astra bug ...)',
    or 'Negative delay -37'; the trial build on link 0 -> 1, full speed, had let it through.
    Now one line naming the model, the link and the value."""
    from simpy_astra.cli.main import main

    path = _scenario(r3, _bench("send_recv", 2000, 4, 1, 0), "Ring", 4, "congestion_aware", extra="",
                     network_extra=f", link-model: {{class: 'r3:AsymLink', reverse_share: {share}}}")
    assert main(["run", str(path), "--quiet"]) == 2
    bw = ONE_BYTE_PER_NS
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: link model 'r3:AsymLink', method __init__() passed LinkElement.__init__ a link it cannot have: "
        f"link 1->0: bandwidth_gbps must be a finite number > 0 (got {bw * share!r}) (the network gives {bw:g} GB/s "
        f"and {L} ns); this is an error in that code, not in simpy-astra"]


FORGOT = textwrap.dedent('''
    def forgot(ctx):
        """The pairwise exchange with each receive's yield forgotten."""
        n, i = len(ctx.members), ctx.index
        piece = ctx.size_bytes // n
        for k in range(1, n):
            ctx.send(ctx.members[(i + k) % n], piece)
            ctx.recv(ctx.members[(i - k) % n], piece)
        yield ctx.endpoint()
''')


def test_a_phase_that_returns_before_the_receives_it_posted_is_named(r3, capsys):
    """The pairwise exchange with `yield` left off its receives: an 8 MB all-to-all on 8 NPUs
    'finished' in 10 ns (the endpoint delay), exit status 0, the data never waited for (a
    plug-in without a traffic hook gets no bound check). Now the phase's return with receives
    still to arrive is one line naming the algorithm and the fix."""
    from simpy_astra.cli.main import main

    (r3 / "r3_forgot.py").write_text(FORGOT)
    path = _scenario(r3, _bench("all_to_all", 8_000_000, 8), "Ring", 8, "congestion_unaware",
                     {"all-to-all-implementation": "'r3_forgot:forgot'"}, extra="")
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: NPU 0: collective algorithm 'forgot' ({r3 / 'r3_forgot.py'}:2) returned at 10 ns with 7 "
                   "receive(s) it posted still to arrive, so its collective would end without that data; yield each "
                   "ctx.recv(...) (or ctx.env.all_of of them) before returning"]
    sys.modules.pop("r3_forgot", None)


def test_the_reports_come_in_the_order_docs_cosimulation_says(r3, capsys):
    """docs/cosimulation.md: sim.run() returns the reports in the order the NPUs finished, as
    their `sys[i] finished` lines are printed, within an instant too (the halving
    reduce-scatter's NPUs 1, 0 end first, then 5, 4, then 3, 2: a script that took the list's
    position for the NPU id read 1's figure as 0's and 5's as 2's)."""
    from simpy_astra.simulation import Simulation

    path = _scenario(r3, _bench("reduce_scatter", 24_000, 6), "FullyConnected", 6, "congestion_unaware",
                     {"reduce-scatter-implementation": "r3Halving"})
    reports = Simulation.from_scenario(str(path)).run()
    assert [r.npu_id for r in reports] == [1, 0, 5, 4, 3, 2]
    assert [r.finished_ns for r in reports] == sorted(r.finished_ns for r in reports)
    from simpy_astra.cli.main import main

    assert main(["run", str(path)]) == 0
    printed = [int(line.split("]")[0][4:]) for line in capsys.readouterr().out.splitlines()
               if line.startswith("sys[") and "finished," in line]
    assert printed == [r.npu_id for r in reports]
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "cosimulation.md").read_text().split())
    assert "in the order the NPUs finished (the order of their `sys[i] finished` lines" in text


STAR = textwrap.dedent('''
    from simpy_astra.topologies import BasicTopology


    class Star(BasicTopology):
        """Every NPU on a hub, named as a networkx graph names a switch."""

        def hops(self, src, dst):
            return 2

        def links(self):
            return [pair for i in range(self.npus_count) for pair in ((i, "hub"), ("hub", i))]

        def route(self, src, dst):
            return [src, "hub", dst]
''')


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_topology_class_that_names_its_switch_says_how_switches_are_numbered(r3, capsys, backend):
    """A star whose hub is "hub" (as a networkx graph or a Graph YAML names switches): the
    error said only 'expected a list of device ids', not that a class numbers its switches
    from N (docs/collectives.md). Now it says which ids are whose."""
    from simpy_astra.cli.main import main

    (r3 / "r3_star.py").write_text(STAR)
    path = _scenario(r3, _bench("send_recv", 1000, 4, 0, 3), "'r3_star:Star'", 4, backend, extra="")
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: network: field 'topology[0]' (r3_star:Star): route(")
    assert err[0].endswith(("expected a list of device ids from 0 to 1 (integers: NPUs 0..3, switches numbered "
                            "from 4)" if backend == "congestion_aware" else "expected a list of device ids from 0 "
                            "to 3 (integers: NPUs 0..3, switches numbered from 4)") + f"; fix Star.route() in {r3}/r3_star.py"), err
    sys.modules.pop("r3_star", None)


def test_a_sweep_driven_from_python_over_ones_own_collective(r3):
    """No sweep API is documented for Python, so a script loops over docs/cosimulation.md's
    Simulation.from_scenario: the pairwise exchange on 6 fully connected NPUs at 25, 50 and
    100 GB/s (B = g 2^30 / 10^9 bytes/ns), S = 600,000 B: 5 rounds of trunc(L + S/6 / B) + E."""
    from simpy_astra.simulation import Simulation

    n, size, finish = 6, 600_000, {}
    for gbps in (25, 50, 100):
        path = _scenario(r3, _bench("all_to_all", size, n), "FullyConnected", n, "congestion_unaware",
                         {"all-to-all-implementation": "r3Pairwise"})
        path.write_text(path.read_text().replace(f"bandwidth: [{ONE_BYTE_PER_NS!r}]", f"bandwidth: [{gbps}]"))
        finish[gbps] = max(r.finished_ns for r in Simulation.from_scenario(str(path)).run())
    expected = {g: (n - 1) * (int(L + size // n / (g * 2**30 / 1e9)) + E) for g in (25, 50, 100)}
    assert finish == expected == {25: 21_175, 50: 11_860, 100: 7_205}
