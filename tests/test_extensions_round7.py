"""Extensions written from the docs alone, seventh round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round6.py``, ``test_extension_*.py``) and is checked against a figure derived here from the
closed forms the docs state, never against the tool's own output. The researcher's module is
``tests/data/round7/r7.py``.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns unless a test
says otherwise: one hop of S bytes takes ``d(S) = trunc(L + S / B)`` = L + S; ``E`` is the
endpoint delay and ``P(x)`` the reduction of x bytes, three passes of ``int(x / (local-mem-bw
10^9) x 10^9)`` (collectives/README.md).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import ONE_BYTE_PER_NS, E, L, d, reduce_ns
from tests.test_extensions_round6 import _cli, _finished, _write

MIB = 2**20
HERE = Path(__file__).resolve().parent
R7 = HERE / "data" / "round7" / "r7.py"

#: the extensions under short names, for `--plugin r7_plugin` / `plugins: [r7_plugin]`
R7_PLUGIN = '''"""Registers r7's extensions under short names (loaded with --plugin r7_plugin)."""
from simpy_astra import collectives, topologies
from simpy_astra.network import backends, models
from simpy_astra.workloads import generated

import r7

for algorithm in (r7.TREE1, r7.TREE2, r7.TREE4, r7.TREE8):
    collectives.register(algorithm.name, algorithm)
topologies.register("HyperX", r7.HyperX)
backends.register(r7.NIC_QUEUE)
models.register_switch("credit", r7.CreditSwitch)
generated.register("dlrm", r7.dlrm_step, version="1")
'''


@pytest.fixture
def r7(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r7.py and r7_plugin.py, the working directory;
    the registries are left as they were found."""
    with researcher_folder(tmp_path, monkeypatch, {"r7": R7.read_text(), "r7_plugin": R7_PLUGIN}) as folder:
        yield folder


def _system(all_reduce: str = "ring", all_gather: str = "ring", reduce_scatter: str = "ring",
            all_to_all: str = "direct", splits: int = 1) -> str:
    return ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
            f"active-chunks-per-dimension: 1, preferred-dataset-splits: {splits}, local-mem-bw: 50, "
            f"all-reduce-implementation: [{all_reduce}], all-gather-implementation: [{all_gather}], "
            f"reduce-scatter-implementation: [{reduce_scatter}], all-to-all-implementation: [{all_to_all}]}}")


def _net(topology: str, n: int, extra: str = "", bandwidth: float = ONE_BYTE_PER_NS) -> str:
    return f"{{topology: [{topology}], npus_count: [{n}], bandwidth: [{bandwidth!r}], latency: [{L}]{extra}}}"


def _torus(a: int, b: int) -> str:
    return (f"{{topology: [Ring, Ring], npus_count: [{a}, {b}], bandwidth: [{ONE_BYTE_PER_NS!r}, "
            f"{ONE_BYTE_PER_NS!r}], latency: [{L}, {L}]}}")


def _bench(collective: str, size: int, n: int) -> str:
    return f"{{generate: microbench, collective: {collective}, size: {size}, num_npus: {n}}}"


# -- collective algorithms --------------------------------------------------------------------

def bidirectional_dimension(n: int, size: int) -> int:
    """One dimension of the tagged bidirectional ring: both directions side by side, each
    2(n-1) steps of a hop of S/2n and E, the first n-1 reducing S/2n (no E before)."""
    msg = size // (2 * n)
    return 2 * (n - 1) * (d(msg) + E) + (n - 1) * reduce_ns(msg)


@pytest.mark.parametrize("shape, backends", [((4, 4), ("congestion_unaware", "congestion_aware")),
                                             ((4, 2), ("congestion_unaware",))])
def test_a_tagged_bidirectional_ring_all_reduce_on_a_2d_torus(r7, shape, backends):
    """`[Ring, Ring]`: the algorithm runs on dimension 0's ring, then on dimension 1's, each
    over the whole S (an all-reduce keeps its size). On a 2-ring both directions have one
    peer, which the tags keep apart (collectives/README.md). On a 4 x 4 torus each direction
    has its own links, so the congestion-aware backend gives the same figure."""
    a, b = shape
    expected = bidirectional_dimension(a, MIB) + bidirectional_dimension(b, MIB)
    for backend in backends:
        path = _write(r7, "torus.yaml", _bench("all_reduce", MIB, a * b), _torus(a, b), backend,
                      _system(all_reduce='"r7:BIDIR", "r7:BIDIR"'))
        assert _finished(path) == dict.fromkeys(range(a * b), expected)
    if shape == (4, 4):
        assert expected == 2 * (6 * (500 + 131_072 + E) + 3 * 3 * 2621) == 1_626_162


def tree_all_reduce(size: int, pieces: int, hop=d) -> int:
    """The pipelined tree on 7 NPUs (depth 2). With h = d(S/k) and R = E + P(S/k) > E, a leaf
    posts piece p at (p+1)E, a middle node reduces it at E + h + (p+1)R, the root at
    E + 2h + (p+2)R, and a leaf has the sum of the last piece two hops and an E later:
    4h + (k+1)R + 2E."""
    piece = size // pieces
    h, r = hop(piece), E + reduce_ns(piece)
    return 4 * h + (pieces + 1) * r + 2 * E


@pytest.mark.parametrize("pieces", [1, 4])
def test_a_pipelined_binary_tree_all_reduce_in_pieces(r7, pieces):
    """Fully connected, 7 NPUs: the root (0) finishes with its last piece's E, the middle ones
    (1, 2) a hop after it, the leaves two hops after; cutting S in 4 shortens the hops."""
    path = _write(r7, "tree.yaml", _bench("all_reduce", MIB, 7), _net("FullyConnected", 7), "congestion_unaware",
                  _system(all_reduce=f'"r7:TREE{pieces}"'))
    piece = MIB // pieces
    leaf = tree_all_reduce(MIB, pieces)
    root = leaf - 2 * d(piece)
    assert _finished(path) == {0: root, 1: root + d(piece), 2: root + d(piece), 3: leaf, 4: leaf, 5: leaf, 6: leaf}
    assert tree_all_reduce(MIB, 4) < tree_all_reduce(MIB, 1)


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_an_all_gather_on_a_line_sends_every_piece_both_ways(r7, backend):
    """`topology: [Line]`, 5 NPUs: every step moves each piece one link on, each link carrying
    one message a direction, so every step is d(S) + E; NPU i hears last from the farther end,
    after max(i, 4 - i) steps."""
    size = 4096
    path = _write(r7, "line.yaml", _bench("all_gather", size, 5), _net("Line", 5), backend,
                  _system(all_gather='"r7:LINE_AG"'))
    assert _finished(path) == {i: max(i, 4 - i) * (d(size) + E) for i in range(5)}


# -- topologies -------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
@pytest.mark.parametrize("src, dst, hops", [(0, 3, 1), (0, 12, 1), (0, 5, 2), (6, 9, 2)])
def test_a_hyperx_routes_its_row_then_its_column(r7, backend, src, dst, hops):
    """A 4 x 4 HyperX class (docs/collectives.md, "Topologies"): a pair in one row or one
    column is one link apart, any other pair two. One message of S: trunc(h L + S) on the
    analytical backend, h (L + S) store-and-forward."""
    size = 1000
    path = _write(r7, "hx.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 16, "
                  f"src: {src}, dst: {dst}}}", _net('"r7:HyperX"', 16), backend)
    assert _finished(path)[dst] == (hops * L + size if backend == "congestion_unaware" else hops * d(size))


def test_a_diagonal_permutation_on_the_hyperx_shares_no_link(r7):
    """(r, c) -> (r+1, c+1) mod 4 on the 4 x 4 HyperX: the first hop stays in row r, the second
    in column c+1, and no two of the 16 messages share a directed link: all arrive at 2 d(S)
    store-and-forward. Moved to (r, c+1) instead, all 16 take one hop: d(S). The class is
    priced by its cables (docs/reports.md): 4 rows and 4 columns of 6 cables, 48 x B x $4."""
    size = 10_000
    diagonal = [((i // 4 + 1) % 4) * 4 + (i % 4 + 1) % 4 for i in range(16)]
    along_row = [(i // 4) * 4 + (i % 4 + 1) % 4 for i in range(16)]
    for perm, hops in ((diagonal, 2), (along_row, 1)):
        path = _write(r7, "perm.yaml", f'{{generate: "r7:permutation", size: {size}, perm: {perm}}}',
                      _net('"r7:HyperX"', 16), "congestion_aware")
        assert _finished(path) == dict.fromkeys(range(16), hops * d(size))
    _cli(r7, "run", str(path), "--json-out", "figures.json")
    assert json.loads((r7 / "figures.json").read_text())["cost_usd"] == pytest.approx(48 * ONE_BYTE_PER_NS * 4.0)


DRAGONFLY = "{{networkx: \"r7:dragonfly_plus\", groups: {groups}, leaves: {leaves}, spines: {spines}, per_leaf: 2}}"


@pytest.mark.parametrize("dst, links", [(1, 2), (2, 4), (4, 5)])
def test_a_dragonfly_plus_from_networkx_on_every_backend(r7, dst, links):
    """Two groups of two leaves and two spines, two NPUs a leaf (8 NPUs), global links of 2 L.
    NPU 0 to 1 shares its leaf (2 links), to 2 crosses a spine of its group (4 links), to 4
    goes leaf, spine, global link, spine, leaf (5 links, one of them global). Analytical:
    trunc(summed latency + S / B); store-and-forward: the sum of each link's trunc(latency +
    S / B); packet (docs/backends.md): summed latency + S / B + (h-1) P / B, packets of P."""
    size, packet = 40_000, 4096
    net = ("{topology: " + DRAGONFLY.format(groups=2, leaves=2, spines=2) + "}").replace(
        "per_leaf: 2", f"per_leaf: 2, bandwidth_gbps: {ONE_BYTE_PER_NS!r}, global_latency_ns: {2 * L}")
    latency = links * L + (L if links == 5 else 0)
    expected = {"congestion_unaware": latency + size,
                "congestion_aware": links * d(size) + (L if links == 5 else 0),
                "packet": latency + size + (links - 1) * packet}
    for backend, want in expected.items():
        path = _write(r7, "dfp.yaml", f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 8, "
                      f"src: 0, dst: {dst}}}", net, backend)
        assert _finished(path)[dst] == want, backend


# -- a link, a switch, a backend --------------------------------------------------------------

@pytest.mark.parametrize("gap_us, wakes", [(0, False), (2, True)])
def test_a_link_that_sleeps_when_idle_and_wakes_for_the_next_item(r7, gap_us, wakes):
    """`link-model: {class: r7:WakeUpLink, wake_ns: 300, idle_ns: 1000}` on a 2-NPU ring: the
    first message waits the wake-up, W + d(S); the second leaves gap_us later. Its link has
    been quiet since the first's last byte left, W + S, so L + gap before it starts: under
    idle_ns it starts at once, over it waits W again (the link reads the time from `self.env`,
    which the link contract did not list among what the base keeps). The gap's compute node of
    0 us takes 1 ns, as ASTRA-sim replays it (docs/generators.md). Observed, each message's
    `link_start` falls after its hold."""
    size, wake = 5000, 300
    model = ', link-model: {class: "r7:WakeUpLink", wake_ns: 300, idle_ns: 1000}'
    path = _write(r7, "wake.yaml", f'{{generate: "r7:two_sends", size: {size}, gap_us: {gap_us}, num_npus: 2}}',
                  _net("Ring", 2, model), "congestion_aware")
    first = wake + d(size)
    gap_ns = gap_us * 1000 or 1
    second_start = first + gap_ns + (wake if wakes else 0)
    assert _finished(path)[1] == second_start + d(size)
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(str(path))
    starts = []  # link_start fires when the item starts on the wire, after its hold (README)
    sim.on("link_start", lambda o: starts.append((o.time_ns, o.what.src, o.what.dst)))
    sim.run()
    assert starts == [(wake, 0, 1), (second_start, 0, 1)]
    guide = " ".join((HERE.parent / "docs" / "generators.md").read_text().split())
    assert "`duration_micros` 0 takes 1 ns, as ASTRA-sim replays it" in guide
    contract = " ".join((HERE.parent / "simpy_astra" / "network" / "README.md").read_text().split())
    assert "`env` (the run's environment: `self.env.now` is the time in a policy method)" in contract


@pytest.mark.parametrize("credits", [1, 2, 3, 8])
def test_a_switch_with_credits_hands_on_that_many_items_at_once(r7, credits):
    """`switch-model: {class: r7:CreditSwitch, credits: c}`, 8 NPUs on one switch, each
    sending S to the next one at once: all 8 reach the switch at d(S); it hands on c of them,
    and each credit comes back when its item reaches the far end, d(S) later. So the k-th
    message (0-based) arrives at (2 + k // c) d(S)."""
    from simpy_astra.simulation import Simulation

    size = 10_000
    path = _write(r7, "credit.yaml", f'{{generate: "r7:permutation", size: {size}, perm: {[1, 2, 3, 4, 5, 6, 7, 0]}}}',
                  _net("Switch", 8, f', switch-model: {{class: "r7:CreditSwitch", credits: {credits}}}'),
                  "congestion_aware")
    sim = Simulation.from_scenario(str(path))
    arrivals = []
    sim.on("message_delivered", lambda o: arrivals.append(o.time_ns))
    sim.run()
    assert sorted(arrivals) == [(2 + k // credits) * d(size) for k in range(8)]


def test_a_credit_switch_refuses_no_credits_in_one_line(r7):
    """The model's own check (simpy_astra/network/README.md: raise ValueError in __init__):
    one input line naming the YAML's key, before the run."""
    path = _write(r7, "credit0.yaml", f'{{generate: "r7:permutation", size: 100, perm: {[1, 0]}}}',
                  _net("Switch", 2, ', switch-model: {class: "r7:CreditSwitch", credits: 0}'), "congestion_aware")
    done = _cli(r7, "run", str(path), status=2)
    assert "switch-model" in done.stderr and "credits must be a whole number >= 1 (got 0)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_backend_whose_nics_inject_one_message_at_a_time(r7):
    """`nic_queue` (docs/backends.md, "A backend of your own": `send` overridden, folds=None)
    under an all-to-all of one's own that posts S/n to every peer at once, the next position
    first: the k-th message of a sender (k = 1..n-1) waits (k-1) S/n / B at its NIC, then
    takes d(S/n); every NPU's last arrival is the one sent n-1 positions back, so all finish
    at (n-2) S/n / B + d(S/n) + E. On the plain analytical backend: d(S/n) + E."""
    n, size = 4, 4000
    msg = size // n
    for backend, want in (("congestion_unaware", d(msg) + E), ("r7:NIC_QUEUE", (n - 2) * msg + d(msg) + E)):
        path = _write(r7, "a2a.yaml", _bench("all_to_all", size, n), _net("FullyConnected", n), backend,
                      _system(all_to_all='"r7:ALL_AT_ONCE"'))
        assert _finished(path) == dict.fromkeys(range(n), want), backend
    guide = " ".join((HERE.parent / "docs" / "backends.md").read_text().split())
    assert "`folded`, the network a folded run builds instead, is None for a backend of yours" in guide


def test_a_backend_with_its_own_send_registered_to_fold_by_pairs_is_refused_not_bypassed(r7):
    """The NIC-queue backend registered with `folds="pairs"` (as LogGP is, where docs/backends.md
    says a backend that overrides `send` registers `folds=None`): the native direct all-to-all
    folds on it, and the folded network timed each message by `message_delay_ns` alone, never
    calling the backend's `send`: 1,520 ns, the analytical figure, with no sign, where the
    NIC queue gives (n-2) S/n / B + 1,520 = 3,520 ns unfolded. Now one line names the backend
    and the fix; unfolded it runs."""
    n, size = 4, 4000
    path = _write(r7, "pairs.yaml", _bench("all_to_all", size, n), _net("FullyConnected", n), "r7:NIC_QUEUE_PAIRS")
    done = _cli(r7, "run", str(path), "--quiet", status=2)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "NicQueue" in done.stderr and "send()" in done.stderr and "folds=None" in done.stderr
    unfolded = _cli(r7, "run", str(path), "--quiet", "--fold-symmetry", "off")
    assert f"iteration time {(n - 2) * (size // n) + E + d(size // n) + E:,} ns" in unfolded.stdout


def test_ones_own_reduce_scatter_on_a_dgx_a100_preset_pays_each_link(r7):
    """docs/megatron.md ("Cluster presets"): beside a `cluster:` a `system:` of one's own
    replaces the preset's, and `backend: congestion_aware` plays the collectives as messages on
    the preset's dimensions (a node's NVSwitch, then the rail between nodes), storing and
    forwarding whole messages at every switch: a pair pays its bytes once per link. On 16 GPUs
    of dgx-a100-80gb the plain ring reduce-scatter runs on the node's 8 GPUs over S (7 steps of
    two NVLink hops of S/8, E and P(S/8)), then on the rail's 2 GPUs over S/8 (one step of two
    rail hops of S/16). Rail = 1600 Gbit/s / 8 / 8 GPUs x 0.94 = 23.5 x 10^9 B/s; the preset's
    NVLink 215.822 GiB/s at 6,464.47 ns, the rail at 5,000 ns."""
    import yaml

    preset = yaml.safe_load((HERE.parent / "simpy_astra" / "config" / "clusters" / "dgx-a100-80gb.yaml").read_text())
    node = preset["node"]
    nvlink_bytes_per_ns = node["nvlink_gib_s"] * 2**30 / 1e9
    rail_bytes_per_ns = node["inter_node_gbps"] / 8 / node["gpus"] * node["inter_node_efficiency"]
    assert rail_bytes_per_ns == pytest.approx(23.5)

    def hop(size: int, bytes_per_ns: float, latency_ns: float) -> int:
        return int(latency_ns + size / bytes_per_ns)

    in_node = 7 * (2 * hop(MIB // 8, nvlink_bytes_per_ns, node["nvlink_latency_ns"]) + E + reduce_ns(MIB // 8))
    rail = 2 * hop(MIB // 16, rail_bytes_per_ns, node["inter_node_latency_ns"]) + E + reduce_ns(MIB // 16)
    (r7 / "rs.yaml").write_text(
        f"workload: {_bench('reduce_scatter', MIB, 16)}\ncluster: {{preset: dgx-a100-80gb, gpus: 16}}\n"
        "backend: congestion_aware\nsystem: " + _system(reduce_scatter='"r7:RING_RS", "r7:RING_RS"') + "\n")
    assert _finished(r7 / "rs.yaml") == dict.fromkeys(range(16), in_node + rail)
    assert in_node + rail == 7 * (2 * 7030 + E + 3 * 2621) + 2 * 7788 + E + 3 * 1310 == 173_047


def test_ones_own_all_to_all_on_a_dgx_a100_presets_own_backend(r7):
    """NCCL's model times all-reduce, reduce-scatter and all-gather beside a `cluster:` on the
    default backend (docs/megatron.md), not all-to-all: a system naming only its own
    all-to-all runs it there, each message charged as the preset's machine routes it. On 16
    GPUs the all-at-once all-to-all runs on the node's 8 (S/8 to each through the NVSwitch,
    trunc(2 x 6,464.47 + S/8 / NVLink), then E), then on the rail's 2 over the whole S (S/2
    through the rail's leaf, trunc(2 x 5,000 + S/2 / rail), then E)."""
    import yaml

    node = yaml.safe_load((HERE.parent / "simpy_astra" / "config" / "clusters" / "dgx-a100-80gb.yaml").read_text())["node"]
    nvlink = node["nvlink_gib_s"] * 2**30 / 1e9
    rail = node["inter_node_gbps"] / 8 / node["gpus"] * node["inter_node_efficiency"]
    expected = (int(2 * node["nvlink_latency_ns"] + MIB // 8 / nvlink) + E
                + int(2 * node["inter_node_latency_ns"] + MIB // 2 / rail) + E)
    system = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
              "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, "
              'all-to-all-implementation: ["r7:ALL_AT_ONCE", "r7:ALL_AT_ONCE"]}')
    (r7 / "ep.yaml").write_text(f"workload: {_bench('all_to_all', MIB, 16)}\n"
                                f"cluster: {{preset: dgx-a100-80gb, gpus: 16}}\nsystem: {system}\n")
    assert _finished(r7 / "ep.yaml") == dict.fromkeys(range(16), expected)
    assert expected == 13_494 + E + 32_310 + E == 45_824

def test_the_packet_backend_rounds_a_message_up_on_a_dgx_a100_preset(r7):
    """The same reduce-scatter on `packet` (docs/backends.md): a message over h links takes
    h L + S / B + (h-1) P / B, one packet of P = 4096 B more per extra link, rounded up to a
    whole ns (where the other backends cut down: before, the guide did not say, and a closed
    form with trunc was 8 ns short here, 1 ns for each of the 8 steps)."""
    import math

    import yaml

    node = yaml.safe_load((HERE.parent / "simpy_astra" / "config" / "clusters" / "dgx-a100-80gb.yaml").read_text())["node"]
    nvlink = node["nvlink_gib_s"] * 2**30 / 1e9
    rail = node["inter_node_gbps"] / 8 / node["gpus"] * node["inter_node_efficiency"]

    def two_links(size: int, bytes_per_ns: float, latency_ns: float) -> int:
        return math.ceil(2 * latency_ns + size / bytes_per_ns + 4096 / bytes_per_ns)

    expected = (7 * (two_links(MIB // 8, nvlink, node["nvlink_latency_ns"]) + E + reduce_ns(MIB // 8))
                + two_links(MIB // 16, rail, node["inter_node_latency_ns"]) + E + reduce_ns(MIB // 16))
    (r7 / "rs.yaml").write_text(
        f"workload: {_bench('reduce_scatter', MIB, 16)}\ncluster: {{preset: dgx-a100-80gb, gpus: 16}}\n"
        "backend: packet\nsystem: " + _system(reduce_scatter='"r7:RING_RS", "r7:RING_RS"') + "\n")
    assert _finished(r7 / "rs.yaml") == dict.fromkeys(range(16), expected)
    assert expected == 7 * (13_513 + E + 3 * 2621) + 12_964 + E + 3 * 1310 == 166_606
    guide = " ".join((HERE.parent / "docs" / "backends.md").read_text().split())
    assert "rounded up to a whole ns where the other two backends cut a message's time down" in guide


# -- workload generators ----------------------------------------------------------------------

def test_a_dlrm_step_whose_two_gradient_collectives_take_turns(r7):
    """A DLRM-like generator (docs/generators.md, "A generator of your own") on 4 fully
    connected NPUs: bottom MLP then embedding lookups on the one GPU slot, the embeddings'
    direct all-to-all (E + d(S/n) + E, tests/test_closed_forms.py), interaction and top MLP,
    its backward; then the embedding gradients' all-to-all (node 5) and the MLP gradients'
    ring all-reduce (node 6) are ready at once. An NPU has one communication slot, so the
    all-reduce starts when the all-to-all ends (lower id first), while the embedding update
    computes beside it."""
    n, emb, grads = 4, 64_000, MIB
    path = _write(r7, "dlrm.yaml", f'{{generate: "r7:dlrm_step", num_npus: {n}, mlp_us: 20, emb_us: 30, top_us: 15, '
                  f'update_us: 5, emb_bytes: {emb}, mlp_bytes: {grads}}}', _net("FullyConnected", n),
                  "congestion_unaware")
    a2a = E + d(emb // n) + E
    all_reduce = E + 2 * (n - 1) * (d(grads // n) + E) + (n - 1) * reduce_ns(grads // n)
    backward_done = 20_000 + 30_000 + a2a + 15_000 + 15_000
    expected = backward_done + a2a + max(all_reduce, 5_000)
    assert expected == 96_520 + 16_520 + 1_623_112
    assert _finished(path) == dict.fromkeys(range(n), expected)


# -- sweeps -----------------------------------------------------------------------------------

def test_a_sweep_over_the_trees_piece_count_and_link_speed_under_a_budget(r7):
    """docs/sweeps.md: a plug-in's algorithms as axis values (`--plugin`, or the base's
    `plugins:`), an axis renamed with `as:`, and a result constraint on the network's price:
    7 fully connected NPUs are 21 cables at $4 per GB/s (docs/reports.md, "Network cost"), so
    only 25 GB/s fits a $2,100 budget, where 8 pieces are fastest. Overall, 8 pieces at 100
    GB/s. Every row is the pipelined tree's closed form at its speed. Before, docs/sweeps.md
    never said how an axis is named in expressions, nor that `as:` renames a plain axis."""
    base = _write(r7, "tree.yaml", _bench("all_reduce", MIB, 7), _net("FullyConnected", 7, bandwidth=25.0),
                  "congestion_unaware", _system(all_reduce="tree1"), extra="plugins: [r7_plugin]\n")
    (r7 / "sweep.yaml").write_text(
        f"base: {base.name}\naxes:\n  system.all-reduce-implementation: {{values: [tree1, tree2, tree4, tree8], "
        "as: tree}\n  network.bandwidth: [25, 50, 100]\nconstraints:\n  - tree != 'tree2'\n  - cost_usd <= 2100\n"
        "report: [finish_ns, cost_usd]\n")
    done = _cli(r7, "sweep", "sweep.yaml", "--out", "out")
    with open(r7 / "out" / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 9  # tree2's three points dropped before they ran
    for row in rows:
        gbps, pieces = float(row["network.bandwidth"]), int(row["system.all-reduce-implementation"][4:])
        assert int(row["finish_ns"]) == tree_all_reduce(MIB, pieces, lambda x, g=gbps: d(x, g)), row
        assert float(row["cost_usd"]) == pytest.approx(21 * 4.0 * gbps)
    best = json.loads((r7 / "out" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"system.all-reduce-implementation": "tree8", "network.bandwidth": 100}
    assert "best with cost_usd <= 2100: tree=tree8 bandwidth=25" in " ".join(done.stdout.split())  # the answer
    guide = " ".join((HERE.parent / "docs" / "sweeps.md").read_text().split())
    assert "`system.all-reduce-implementation` is `all_reduce_implementation`" in guide
    assert "`as:` renames one, beside its values" in guide
    assert "in place of its default columns" in guide


def dragonfly_plus_cost(spines: int, gbps: float) -> float:
    """Two groups, one leaf each with 4 NPUs, `spines` spines a group (docs/reports.md: a Graph
    is priced by its cables, $4 per GB/s at the one dimension's `package` tier, and a switch
    port per cable end at a switch, $13 per GB/s): 8 NPU cables (one port each), 2 x spines
    leaf-spine cables and `spines` global ones (two ports each)."""
    cables = 8 + 2 * spines + spines
    ports = 8 + 2 * (2 * spines + spines)
    return gbps * (4.0 * cables + 13.0 * ports)


def test_a_sweep_for_the_cheapest_dragonfly_plus_that_meets_a_deadline(r7):
    """The 4 NPUs of group 0 swap S with their partners in group 1, congestion-aware, with
    `routing: ecmp` (simpy_astra/network/README.md: pair (src, dst) takes candidate (src N +
    dst) mod #candidates): with s spines the 4 flows of a leaf spread 4/s to a spine, and the
    k flows on one leaf-to-spine link leave it S apart, so the last arrives at 5 d(S) +
    (4/s - 1) S. A deadline of 70 us leaves out 1 spine; the cheapest that meets it is 2."""
    size = 10_000
    net = ("{topology: {networkx: \"r7:dragonfly_plus\", groups: 2, leaves: 1, spines: 1, per_leaf: 4, "
           f"bandwidth_gbps: {ONE_BYTE_PER_NS!r}, routing: ecmp}}}}")
    _write(r7, "dfp.yaml", f'{{generate: "r7:permutation", size: {size}, perm: {[4, 5, 6, 7, 0, 1, 2, 3]}}}',
           net, "congestion_aware")
    (r7 / "sweep.yaml").write_text("base: dfp.yaml\naxes:\n  network.topology.spines: [1, 2, 4]\n"
                                   "constraints:\n  - finish_ns <= 70000\nminimise: cost_usd\n")
    _cli(r7, "sweep", "sweep.yaml", "--out", "out")
    with open(r7 / "out" / "results.csv", newline="") as f:
        rows = {int(row["network.topology.spines"]): row for row in csv.DictReader(f)}
    for spines, row in rows.items():
        assert int(row["finish_ns"]) == 5 * d(size) + (4 // spines - 1) * size
        assert float(row["cost_usd"]) == pytest.approx(dragonfly_plus_cost(spines, ONE_BYTE_PER_NS))
    best = json.loads((r7 / "out" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"network.topology.spines": 1}  # the cheapest of all
    assert best["best_under"]["finish_ns <= 70000"]["coordinates"] == {"network.topology.spines": 2}


# -- reports ----------------------------------------------------------------------------------

def test_a_report_of_link_utilisation_per_network_dimension(r7):
    """A script over a run (docs/reports.md, "A report of your own"; the edges' `dim` and live
    `link` of `sim.network.graph`, simpy_astra/network/README.md): the native ring all-reduce
    on a 4 x 2 torus, congestion-aware. Dimension 0 has 2 rings of 4 NPUs, 8 directed links
    each; its phase sends 6 messages of S/4 from each of 8 NPUs: 12 S bytes, busy 12 S ns at
    1 byte/ns. Dimension 1 has 4 rings of 2 NPUs, 2 links each; 2 messages of S/2 from each
    NPU: 8 S. The run lasts the two native rings' closed forms, each with its E first."""
    import r7 as module

    from simpy_astra.simulation import Simulation

    path = _write(r7, "torus.yaml", _bench("all_reduce", MIB, 8), _torus(4, 2), "congestion_aware",
                  _system(all_reduce="ring, ring"))
    sim = Simulation.from_scenario(str(path))
    t_ns = max(r.finished_ns for r in sim.run())

    def native_ring(n: int) -> int:
        return E + 2 * (n - 1) * (d(MIB // n) + E) + (n - 1) * reduce_ns(MIB // n)

    assert t_ns == native_ring(4) + native_ring(2) == 2_704_173
    report = module.utilisation_by_dimension(sim, t_ns)
    assert {dim: (row["links"], row["bytes"], row["busy_ns"]) for dim, row in report.items()} == {
        0: (16, 12 * MIB, 12 * MIB), 1: (8, 8 * MIB, 8 * MIB)}
    assert report[0]["utilisation"] == pytest.approx(12 * MIB / (16 * t_ns))
    assert report[1]["utilisation"] == pytest.approx(8 * MIB / (8 * t_ns))


def test_a_report_script_over_the_json_figures_of_the_line_all_gather(r7):
    """`run --json-out` (docs/reports.md: `links`, busiest first, `{"from", "to", "bytes",
    "busy_ns"}`, and `iteration_time_ns`) read by a script of one's own: on the 5-NPU line the
    all-gather sends link i -> i+1 the pieces of NPUs 0..i (i+1 messages of S) and link i+1 -> i
    those of NPUs i+1..4 (4-i messages), so the busiest links are 3 -> 4 and 1 -> 0, each busy
    4 S of the run's 4 (d(S) + E)."""
    import r7 as module

    size = 4096
    path = _write(r7, "line.yaml", _bench("all_gather", size, 5), _net("Line", 5), "congestion_aware",
                  _system(all_gather='"r7:LINE_AG"'))
    _cli(r7, "run", str(path), "--json-out", "figures.json")
    t_ns = 4 * (d(size) + E)
    figures = json.loads((r7 / "figures.json").read_text())
    assert figures["iteration_time_ns"] == t_ns
    carried = {(str(x["from"]), str(x["to"])): x["bytes"] for x in figures["links"]}
    expected = {**{(str(i), str(i + 1)): (i + 1) * size for i in range(4)},
                **{(str(i + 1), str(i)): (4 - i) * size for i in range(4)}}
    assert carried == expected
    assert [x["bytes"] for x in figures["links"]] == sorted(expected.values(), reverse=True)
    top = module.busiest_links(r7 / "figures.json", top=2)
    assert {(str(a), str(b)) for a, b, _ in top} == {("3", "4"), ("1", "0")}
    assert [share for _, _, share in top] == [pytest.approx(4 * size / t_ns)] * 2


def dlrm_step_ns(n: int, emb: int, grads: int) -> int:
    """The DLRM step of the generator above: 20 + 30 us, the all-to-all, 15 + 15 us, the second
    all-to-all, then the ring all-reduce beside the 5 us update."""
    a2a = E + d(emb // n) + E
    all_reduce = E + 2 * (n - 1) * (d(grads // n) + E) + (n - 1) * reduce_ns(grads // n)
    return 20_000 + 30_000 + a2a + 30_000 + a2a + max(all_reduce, 5_000)


def test_a_sweep_for_the_largest_mlp_whose_dlrm_step_meets_a_deadline(r7):
    """The DLRM generator by the short name its plug-in registers, loaded by `sweep --plugin`
    (docs/sweeps.md), swept over the MLP's gradient bytes; `minimise: -mlp_bytes` (an
    expression of an axis) under `finish_ns <= 1000000` names the largest MLP whose step
    meets a millisecond: 1 MiB steps 1,736,152 ns, 512 KiB 926,131."""
    base = _write(r7, "dlrm.yaml", "{generate: dlrm, num_npus: 4, mlp_us: 20, emb_us: 30, top_us: 15, update_us: 5, "
                  "emb_bytes: 64000, mlp_bytes: 1024}", _net("FullyConnected", 4), "congestion_unaware")
    sizes = [65_536, 262_144, 524_288, MIB]
    (r7 / "sweep.yaml").write_text(f"base: {base.name}\naxes:\n  workload.mlp_bytes: {sizes}\n"
                                   "constraints:\n  - finish_ns <= 1000000\nminimise: -mlp_bytes\n")
    _cli(r7, "sweep", "sweep.yaml", "--out", "out", "--plugin", "r7_plugin")
    with open(r7 / "out" / "results.csv", newline="") as f:
        rows = {int(row["workload.mlp_bytes"]): int(row["finish_ns"]) for row in csv.DictReader(f)}
    assert rows == {s: dlrm_step_ns(4, 64_000, s) for s in sizes}
    assert (rows[MIB], rows[524_288]) == (1_736_152, 926_131)
    best = json.loads((r7 / "out" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"workload.mlp_bytes": MIB}
    assert best["best_under"]["finish_ns <= 1000000"]["coordinates"] == {"workload.mlp_bytes": 524_288}


@pytest.mark.parametrize("routing, last", [(None, 3), ("ecmp", 1)])
def test_a_dragonfly_plus_handed_in_from_python_routes_as_its_graph_says(r7, routing, last):
    """`Simulation.from_scenario(path, topology=G)` (docs/cosimulation.md; the scenario's own
    network then only fixes the NPU count) with `G.graph["routing"]` (simpy_astra/network/
    README.md): two spines, the two groups swapping S. By default every pair takes the
    smallest device sequence, all through spine 0: the 4 flows of a leaf leave it S apart,
    the last at 5 d(S) + 3 S; with ecmp two to a spine, 5 d(S) + S."""
    import r7 as module

    from simpy_astra.simulation import Simulation

    size = 10_000
    path = _write(r7, "swap.yaml", f'{{generate: "r7:permutation", size: {size}, perm: {[4, 5, 6, 7, 0, 1, 2, 3]}}}',
                  _net("Switch", 8), "congestion_aware")
    graph = module.dragonfly_plus(groups=2, leaves=1, spines=2, per_leaf=4, bandwidth_gbps=ONE_BYTE_PER_NS)
    if routing:
        graph.graph["routing"] = routing
    reports = Simulation.from_scenario(str(path), topology=graph).run()
    assert max(r.finished_ns for r in reports) == 5 * d(size) + last * size


def test_the_bound_check_names_a_topology_class_of_ones_own_by_its_class(r7):
    """The native direct all-to-all (it lists its traffic) on the 4 x 4 HyperX, analytical: every
    NPU sends S/16 to 15 peers, 6 one link away and 9 two, so the 96 directed links carry
    16 x 24 crossings of S/16, S/4 each on average: a floor of S/4 at 1 byte/ns, against the
    run's 2L + S/16 + 2E (docs/reports.md, "The bound check"). The warning named the network
    `basic(16)`, the base class's name, which the guide gives no way to set; now the class's
    own, `HyperX(16)`."""
    path = _write(r7, "hxa2a.yaml", _bench("all_to_all", MIB, 16), _net('"r7:HyperX"', 16), "congestion_unaware")
    done = _cli(r7, "run", str(path))
    span = 2 * L + MIB // 16 + 2 * E
    assert f"sys[0] finished, {span} cycles" in done.stdout
    factor = int(MIB // 4 / span * 100) / 100
    assert factor == 3.93
    assert f"warning: 1 MiB all-to-all on HyperX(16): {factor}x below its link-bandwidth floor" in done.stderr


def test_two_jobs_through_one_credit_switch_and_each_alone(r7):
    """docs/jobs.md: two 4-rank jobs, each shifting S round its ranks, on 8 NPUs around the
    credit switch with 1 credit (by the short name its plug-in registers), `--isolation`: the 8 messages reach the switch at d(S) and
    leave it one per d(S), so one job's last lands at (2 + 3) d(S) and the other's at
    (2 + 7) d(S); alone, each job's 4 take 5 d(S): slowdowns 1.0 and 1.8."""
    size = 10_000
    job = f'workload: {{generate: "r7:permutation", size: {size}, perm: [1, 2, 3, 0]}}'
    (r7 / "jobs.yaml").write_text(
        f"system: {_system()}\nnetwork: "
        + _net("Switch", 8, ", switch-model: {class: credit, credits: 1}")
        + f"\nbackend: congestion_aware\nplugins: [r7_plugin]\njobs:\n  - {{name: a, {job}, npus: [0, 1, 2, 3]}}\n"
        f"  - {{name: b, {job}, npus: [4, 5, 6, 7]}}\n")
    _cli(r7, "run", "jobs.yaml", "--isolation", "--json-out", "figures.json")
    jobs = json.loads((r7 / "figures.json").read_text())["jobs"]
    assert sorted((j["finished_ns"], j["alone_ns"], j["slowdown"]) for j in jobs.values()) == [
        (5 * d(size), 5 * d(size), 1.0), (9 * d(size), 5 * d(size), 1.8)]


def test_a_report_of_the_spine_each_pair_takes_under_ecmp(r7):
    """`topologies.from_networkx(G, routing="ecmp")` (simpy_astra/network/README.md) as a
    script's way to the routes: switches are numbered from N in the graph's node order (group
    0's spines 8 and 9, its leaf 10), and pair (src, dst) takes candidate (src N + dst) mod 2
    of its two least-latency paths sorted by device sequence: spine 8 for an even candidate,
    9 for an odd one. The README did not say how switches are numbered."""
    import r7 as module

    from simpy_astra.topologies import from_networkx

    topo = from_networkx(module.dragonfly_plus(groups=2, leaves=1, spines=2, per_leaf=4), routing="ecmp")
    for src in range(4):
        dst = src + 4
        assert topo.route(src, dst) == [src, 10, 8 + (src * 8 + dst) % 2, 11 + (src * 8 + dst) % 2, 13, dst]
    readme = " ".join((HERE.parent / "simpy_astra" / "network" / "README.md").read_text().split())
    assert "numbered `N, N+1, ...` in the graph's node order" in readme


def test_the_line_all_gather_on_a_3x3_mesh_grows_its_piece_per_dimension(r7):
    """`[Line, Line]`, 3 x 3 (a 2D mesh, docs/backends.md). An all-gather's phases run the
    dimensions last to first, as ASTRA-sim orders them (collectives/README.md; before, the
    guide did not say, and a guess of dimension 0 first gave every NPU off the diagonal another
    figure): on NPU i's column (position i // 3) over its piece S, then, `ring_final_size`
    handing on 3 S, on its row (position i % 3). A row's members share their column position,
    so they finish the first phase together and start the second at once: NPU i finishes after
    max(r, 2-r) steps of d(S) + E and max(c, 2-c) of d(3 S) + E."""
    size = 4096
    path = _write(r7, "mesh.yaml", _bench("all_gather", size, 9),
                  f"{{topology: [Line, Line], npus_count: [3, 3], bandwidth: [{ONE_BYTE_PER_NS!r}, "
                  f"{ONE_BYTE_PER_NS!r}], latency: [{L}, {L}]}}", "congestion_aware",
                  _system(all_gather='"r7:LINE_AG", "r7:LINE_AG"'))

    def steps(position: int) -> int:
        return max(position, 2 - position)

    assert _finished(path) == {i: steps(i // 3) * (d(size) + E) + steps(i % 3) * (d(3 * size) + E)
                               for i in range(9)}
    guide = " ".join((HERE.parent / "collectives" / "README.md").read_text().split())
    assert "an all-gather's from the last dimension to the first" in guide


def test_a_sweep_over_the_chunk_count_of_ones_own_torus_all_reduce(r7):
    """`system.preferred-dataset-splits` is the chunk count: k chunks of S/k, each a phase on
    dimension 0 then one on dimension 1, one phase at a time per dimension
    (`active-chunks-per-dimension: 1`), so chunk j's second phase runs beside chunk j+1's first:
    on a 4 x 4 torus, where both phases of a chunk take t(S/k), the all-reduce takes
    (k + 1) t(S/k). A coordinate constraint `preferred_dataset_splits <= 8` drops 16 chunks
    before they run (docs/sweeps.md), and 8 is the fastest left."""
    base = _write(r7, "torus.yaml", _bench("all_reduce", MIB, 16), _torus(4, 4), "congestion_unaware",
                  _system(all_reduce='"r7:BIDIR", "r7:BIDIR"'))
    (r7 / "sweep.yaml").write_text(f"base: {base.name}\naxes:\n  system.preferred-dataset-splits: [1, 2, 4, 8, 16]\n"
                                   "constraints:\n  - preferred_dataset_splits <= 8\n")
    _cli(r7, "sweep", "sweep.yaml", "--out", "out")
    with open(r7 / "out" / "results.csv", newline="") as f:
        rows = {int(row["system.preferred-dataset-splits"]): int(row["finish_ns"]) for row in csv.DictReader(f)}
    assert rows == {k: (k + 1) * bidirectional_dimension(4, MIB // k) for k in (1, 2, 4, 8)}
    assert rows[1] == 1_626_162 and rows[8] < rows[4]
    best = json.loads((r7 / "out" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"system.preferred-dataset-splits": 8}
    guide = " ".join((HERE.parent / "collectives" / "README.md").read_text().split())
    assert "chunk j's phase on dimension 1 runs beside chunk j+1's on dimension 0" in guide


def test_a_switch_whose_credit_never_comes_back_stalls_soon_and_says_where_the_messages_are(r7):
    """The credit switch with 1 credit, its first item's output link failed before the run
    (`link.fail()`, docs/cosimulation.md): that credit never comes back, so the 7 other items
    wait in the switch's own queue, where no link holds them. The watchdog took the model for
    busy (messages in flight, none on a link that is down) and doubled its wake-ups to the
    horizon: `stalled at 0 ns (its last progress; noticed at 9223372036854775807 ns)`, naming
    only the held message. With nothing left on SimPy's queue it now stops at its next wake,
    and the report counts the messages no link holds."""
    from simpy_astra.errors import StalledError
    from simpy_astra.simulation import Simulation

    size = 10_000
    path = _write(r7, "stuck.yaml", f'{{generate: "r7:permutation", size: {size}, perm: {[1, 2, 3, 4, 5, 6, 7, 0]}}}',
                  _net("Switch", 8, ', switch-model: {class: "r7:CreditSwitch", credits: 1}'), "congestion_aware")
    sim = Simulation.from_scenario(str(path))
    sim.network.link(8, 1).fail()
    with pytest.raises(StalledError) as stalled:
        sim.run()
    text = str(stalled.value)
    assert sim.env.now < 10**9, text  # at a wake soon after the last event, not at the horizon
    assert "held by link 8->1, which is failed" in text
    assert "7 more messages were sent and never arrived, and no link that is down holds them" in text


def test_a_report_of_each_chunks_phases_from_the_chrome_trace(r7):
    """`--trace-out` (docs/reports.md: a `chunks k` track per phase of every chunk, its args
    the bytes and the time spent queued) read by a script: the tagged bidirectional all-reduce
    on a 4 x 4 torus in 4 chunks. Chunk k's phase on dimension 0 waits k t for the slot, then
    runs t = t(S/4); its phase on dimension 1 starts as it ends, without waiting."""
    import r7 as module

    path = _write(r7, "torus.yaml", _bench("all_reduce", MIB, 16), _torus(4, 4), "congestion_unaware",
                  _system(all_reduce='"r7:BIDIR", "r7:BIDIR"', splits=4))
    _cli(r7, "run", str(path), "--trace-out", "trace.json", "--trace-npus", "0", "--fold-symmetry", "off")
    t = bidirectional_dimension(4, MIB // 4)
    phases = module.chunk_phases(r7 / "trace.json")
    assert sorted(phases) == sorted([(k, 0, k * t, t, k * t) for k in range(4)]
                                    + [(k, 1, (k + 1) * t, t, 0) for k in range(4)])


def test_an_interrupted_tree_phase_ends_while_what_it_spawned_runs_on(r7):
    """A process of one's own interrupts the root's phase at 3 us (docs/cosimulation.md); the
    algorithm catches it and returns, so NPU 0's all-reduce ends at 3,000 ns. Its two
    sub-processes (`ctx.spawn`) are not interrupted with it (collectives/README.md): they go on
    reducing and sending the sums down, and every other NPU ends at the pipelined tree's
    closed form, as if nothing had happened."""
    from simpy_astra.simulation import Simulation

    path = _write(r7, "tree.yaml", _bench("all_reduce", MIB, 7), _net("FullyConnected", 7), "congestion_unaware",
                  _system(all_reduce='"r7:TREE4_DEADLINE"'))
    sim = Simulation.from_scenario(str(path))

    def deadline(env):
        yield env.timeout(3000)
        for phase in sim.running_phases(0):
            phase.interrupt("deadline")

    sim.env.process(deadline(sim.env))
    leaf = tree_all_reduce(MIB, 4)
    middle = leaf - d(MIB // 4)
    assert {r.npu_id: r.finished_ns for r in sim.run()} == {0: 3000, 1: middle, 2: middle, 3: leaf, 4: leaf, 5: leaf,
                                                            6: leaf}
    guide = " ".join((HERE.parent / "collectives" / "README.md").read_text().split())
    assert "The interrupt reaches the phase's own generator only" in guide


def test_a_generators_version_is_part_of_its_trace_cache_key(r7):
    """docs/generators.md: `register(name, fn, version=...)`'s version keys the trace cache, so
    a researcher whose generator's output changed where the cache cannot see (a library it
    calls) bumps it and gets new traces: the DLRM step registered as version 1, then 2, leaves
    two trace sets in the cache; run again as 2, none more."""
    import r7 as module

    from simpy_astra.workloads import generated

    path = _write(r7, "dlrm.yaml", "{generate: dlrm, num_npus: 4, mlp_us: 20, emb_us: 30, top_us: 15, update_us: 5, "
                  "emb_bytes: 64000, mlp_bytes: 65536}", _net("FullyConnected", 4), "congestion_unaware")
    expected = dict.fromkeys(range(4), dlrm_step_ns(4, 64_000, 65_536))
    for version in ("1", "2", "2"):
        generated.register("dlrm", module.dlrm_step, version=version)
        assert _finished(path) == expected
    assert len(list((r7 / ".cache" / "workloads").iterdir())) == 2
    guide = " ".join((HERE.parent / "docs" / "generators.md").read_text().split())
    assert "(`version`, optional, is part of the trace cache's key" in guide
