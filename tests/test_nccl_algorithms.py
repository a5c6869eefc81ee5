"""NCCL's ring, tree and NVLS all-reduce (simpy_astra/engine/nccl_tuning.py) against the nccl-tests
logs the project ships, through ``calibrate --nccl-algo``: the call's fixed cost is fitted on
each log's sizes up to 4 KiB, each algorithm's bandwidth share and Simple latency scale on
every other size of the range where the log shows NCCL running it; every size of that range
(the held-out ones included) must then be predicted within 5% by NCCL's choice, which must be
that algorithm. NCCL's choice itself is made on the links' nominal rates with NCCL's constants
alone (nothing fitted), as NCCL makes it.

Which algorithm a log ran is read off its times, not assumed: one A100 node has no NVLS and
NCCL's tree on one node is a chain at half the ring's ratio, so ring; two H100 nodes reach
469 GB/s of bus bandwidth, above what a ring can pass through 8 x 400 Gb/s NICs (400 GB/s),
so a tree, and NVLS on NVSwitch-3 nodes; the OCI two-node RoCE log holds the ring's NIC
plateau (163-165 GB/s of bus bandwidth) from 64 to 256 MiB and leaps past what a ring can
pass through its NICs (200 GB/s) from 1 GiB: the tree. At 512 MiB NCCL ran the tree too: its
estimate of the tree is uncorrected there as at 1 GiB (the size correction stops at 256 MiB)
and its latency below the ring's, so a tree chosen at 1 GiB is chosen at 512 MiB; there the
tree still runs at the ring's pace, as NCCL halves its chunks (256 KiB) below 1 GiB on 32
channels, and the halved chunks' cost is fitted with the tree. On that log NCCL does not run
the tree with LL128 (``--nccl-no-ll128 tree``): with it, its estimate would pick the tree at
128 and 256 MiB, where the log's times are the ring's.
"""

from __future__ import annotations

import json
import os

import pytest

from simpy_astra.calibration.inputs import load_network
from simpy_astra.calibration.nccl_algorithms import fit_log, parse_range
from simpy_astra.calibration.nccl_log import parse_log
from simpy_astra.cli.main import main
from simpy_astra.engine.nccl_tuning import (
    Links,
    Shape,
    channels,
    choose,
    latency_us,
    predict_us,
    tree_chunk_bytes,
)
from simpy_astra.errors import InputError

DATA = os.path.join(os.path.dirname(__file__), "data", "nccl")
MIB = 1 << 20
#: log folder -> the ranges (ALGO:FROM[:TO], bytes) where it shows NCCL running each algorithm
RANGES = {
    "dgx-a100-superbench": [f"ring:{256 * MIB}"],
    "hgx-h100-2node-ib": [f"nvls:{128 * MIB}"],
    "oci-a100-2node-roce": [f"ring:{64 * MIB}:{256 * MIB}", f"tree:{512 * MIB}"],
}
#: the algorithms NCCL does not run with LL128 across the log's nodes
NO_LL128 = {"oci-a100-2node-roce": ("tree",)}
#: rows of a first call or a stall: the same size's in-place time is a third or less (24.70 and 25.90 us)
OUTLIERS = {"hgx-h100-2node-ib": {8, 256}}
#: sizes outside the ranges by band: up to 64 KiB (LL), 128 KiB to 8 MiB (LL, LL128, the first
#: NVLS sizes), from 16 MiB (Simple and LL128 short of the ranges)
BANDS = {"small": (1, 64 * 1024), "middle": (128 * 1024, 8 * MIB), "large": (16 * MIB, 1 << 62)}
#: the worst |error| of each band outside the ranges (outliers aside), measured on this model
#: with LL and LL128 fitted where no range covers them (NCCL's channel rule changes none of
#: them: at the sizes a protocol is chosen the channels are all running, or the logs' times do
#: not follow their count); before LL and LL128 were fitted the middle band was 25%, 24% and
#: 18% off (the H100's worst is its 512 KiB row, slower than its 1 MiB one); before protocols
#: were chosen as NCCL chooses them and the call's fixed cost was fitted, 40%, 226% and 59%
OUTSIDE_WORST = {
    "dgx-a100-superbench": {"small": 0.035, "middle": 0.155, "large": 0.05},
    "hgx-h100-2node-ib": {"small": 0.16, "middle": 0.29, "large": 0.085},
    "oci-a100-2node-roce": {"small": 0.175, "middle": 0.18, "large": 0.04},
}


def _fit(name: str) -> dict:
    folder = os.path.join(DATA, name)
    log = parse_log(os.path.join(folder, "all_reduce.log"))
    return fit_log(log, load_network(os.path.join(folder, "network.yml")), [parse_range(r) for r in RANGES[name]],
                   no_ll128=NO_LL128.get(name, ()))


@pytest.mark.parametrize("name", sorted(RANGES))
def test_each_algorithm_matches_its_log_where_nccl_uses_it(name):
    report = _fit(name)
    sizes = report["sizes"]
    assert {row["algorithm"] for row in sizes} == {r.split(":")[0] for r in RANGES[name]}
    assert any(row["role"] == "held out" for row in sizes)
    for row in sizes:
        assert row["chosen"] == row["algorithm"], row
        assert row["predicted_us"] == pytest.approx(row["measured_us"], rel=0.05), row


@pytest.mark.parametrize("name", sorted(RANGES))
def test_outside_the_ranges_nccl_choice_and_times(name):
    """Every other size of the log (whose algorithm the log does not show): the time of the
    algorithm and protocol NCCL's estimate picks, within the measured worst error of its band."""
    report = _fit(name)
    rows = {row["size_bytes"]: row for row in report["outside"]}
    assert len(rows) + len(report["sizes"]) == len({r["size_bytes"] for r in report["outside"] + report["sizes"]})
    judged = [row for size, row in rows.items() if size not in OUTLIERS.get(name, ())]
    assert {band for band, (lo, hi) in BANDS.items() for row in judged if lo <= row["size_bytes"] <= hi} == set(BANDS)
    for band, (lo, hi) in BANDS.items():
        worst = max((row for row in judged if lo <= row["size_bytes"] <= hi), key=lambda r: abs(r["error"]))
        assert abs(worst["error"]) <= OUTSIDE_WORST[name][band], (band, worst)


def test_ll_and_ll128_as_the_dgx_runs_them():
    """On one DGX A100 node (NVLink at the presets' rate) NCCL's choice runs the ring with LL up
    to 2 MiB and LL128 to 16 MiB. Fitted on every other of those sizes above 4 KiB, LL's
    bandwidth is 0.65 of NCCL's constants (its 87.7 GB/s ceiling of bus bandwidth) and LL128's
    0.90, and the held-out sizes follow: LL's 16 and 64 KiB within 2.5%, 256 KiB and 1 MiB
    within 10% (at NCCL's constants they were 16% and 25% fast), LL128's 8 MiB within 8%
    (was 21% fast)."""
    report = _fit("dgx-a100-superbench")
    protocols = report["protocols"]
    assert set(protocols) == {"ring LL in a node", "ring LL128 in a node"}
    assert 0.6 < protocols["ring LL in a node"]["bandwidth"] < 0.7
    assert 0.85 < protocols["ring LL128 in a node"]["bandwidth"] < 0.95
    held = {row["size_bytes"]: row for row in report["outside"]
            if row["role"] == "outside the ranges" and row["size_bytes"] > 4096 and row["protocol"] != "Simple"}
    assert {size: row["protocol"] for size, row in held.items()} == {
        16384: "LL", 65536: "LL", 262144: "LL", MIB: "LL", 8 * MIB: "LL128"}
    for size, bound in ((16384, 0.025), (65536, 0.025), (262144, 0.1), (MIB, 0.1), (8 * MIB, 0.08)):
        assert abs(held[size]["error"]) <= bound, held[size]


@pytest.mark.parametrize("preset", ["dgx-a100-40gb", "dgx-a100-80gb"])
def test_a100_presets_carry_what_calibrate_fits_on_their_log(preset):
    """The A100 presets' NCCL figures are ``calibrate --nccl-algo ring:268435456``'s on the
    DGX A100 log, as their comments say: the call's fixed cost, Simple's latency scale, the
    ring's share of NVLink and LL's and LL128's factors in a node; the scale kept to the one
    algorithm the fit ran (``nccl_latency_scale_algo``), the log showing no other."""
    from simpy_astra.config.cluster import load_cluster

    node = load_cluster({"preset": preset, "gpus": 8}, "cluster").node
    report = _fit("dgx-a100-superbench")
    assert node["nccl_launch_us"] == report["launch_us"]
    assert node["nccl_latency_scale"] == report["latency_scale"]["ring"]
    assert [node["nccl_latency_scale_algo"]] == list(report["latency_scale"]) == ["ring"]
    assert node["nccl_ring_efficiency"] == report["efficiency"]["ring"]
    assert node["nccl_node_ll_bandwidth_scale"] == report["protocols"]["ring LL in a node"]["bandwidth"]
    assert node["nccl_node_ll128_bandwidth_scale"] == report["protocols"]["ring LL128 in a node"]["bandwidth"]
    assert node["nccl_node_ll128_latency_scale"] == report["protocols"]["ring LL128 in a node"]["latency"]


def test_a100_preset_times_its_log_with_ll_and_ll128_as_measured():
    """The A100 preset's all-reduce of 8 GPUs against its own log from 64 KiB to 256 MiB: with
    LL and LL128 as the log shows them, mean |error| 5.3% and none past 16% (at NCCL's
    constants 12.1%, every LL and LL128 size 4-25% fast); the preset's choice is calibrate's,
    since the log's network YAML states the preset's NVLink."""
    from simpy_astra.config.cluster import load_cluster

    links = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "cluster").nccl_all_reduce().links
    shape = Shape(8, 1, 8)
    log = parse_log(os.path.join(DATA, "dgx-a100-superbench", "all_reduce.log"))
    errors = {}
    for row in log.rows:
        if 64 * 1024 <= row.size_bytes <= 256 * MIB:
            time_us, proto = predict_us(links, shape, choose(links, shape, row.size_bytes), row.size_bytes)
            errors[row.size_bytes] = (proto, time_us / row.time_us - 1)
    assert sum(abs(e) for _, e in errors.values()) / len(errors) <= 0.055
    assert max(abs(e) for _, e in errors.values()) <= 0.16
    report = {r["size_bytes"]: r for r in _fit("dgx-a100-superbench")["outside"] + _fit("dgx-a100-superbench")["sizes"]}
    for size, (proto, error) in errors.items():
        assert proto == report[size]["protocol"] and error == pytest.approx(report[size]["error"], abs=2e-3)


def test_h100_preset_times_its_log_as_calibrate_fitted_it():
    """The H100 preset's all-reduce on two nodes (16 GPUs) against the log its NCCL figures were
    fitted on: NVLS from 128 MiB within 1% (its nvlink_gib_s is the rate the fit ran on, and
    nccl_nvls_efficiency the share it found; with the 607 GiB/s of the network-only fit the
    preset ran these sizes 23-33% fast), NCCL's choice NVLS there, and every size from 1 KiB
    on within 27% (mean 5.4%; the LL128 sizes keep NCCL's constants)."""
    from simpy_astra.config.cluster import load_cluster

    links = load_cluster({"preset": "dgx-h100", "gpus": 16}, "cluster").nccl_all_reduce().links
    shape = Shape(16, 2, 8)
    log = parse_log(os.path.join(DATA, "hgx-h100-2node-ib", "all_reduce.log"))
    errors = {}
    for row in log.rows:
        if row.size_bytes >= 1024:
            algo = choose(links, shape, row.size_bytes)
            errors[row.size_bytes] = (algo, predict_us(links, shape, algo, row.size_bytes)[0] / row.time_us - 1)
    for size, (algo, error) in errors.items():
        if size >= 128 * MIB:
            assert algo == "nvls" and abs(error) <= 0.01, (size, algo, error)
    assert max(abs(e) for _, e in errors.values()) <= 0.27
    assert sum(abs(e) for _, e in errors.values()) / len(errors) <= 0.06


def test_a_protocol_whose_times_do_not_grow_is_refused(tmp_path):
    """A log whose LL128 sizes all take the same time leaves LL128 no bandwidth to fit: refused
    naming the log, the algorithm, the protocol and its sizes, never a fit of nothing."""
    folder = os.path.join(DATA, "dgx-a100-superbench")
    flat = _edited_dgx_log(tmp_path, lambda size: 40.0 if size <= 16 * MIB else None)  # small and middle: 40 us
    with pytest.raises(InputError, match=r"edited\.log: ring with LL128 \(4194304 to 16777216 bytes.*do not grow"):
        fit_log(parse_log(flat), load_network(os.path.join(folder, "network.yml")), [parse_range(f"ring:{256 * MIB}")])


def _edited_dgx_log(tmp_path, time_us) -> str:
    """The DGX log with each row's times set to ``time_us(size)`` where that gives one, its
    algbw and busbw printed as nccl-tests prints them for that time (size / time, GB/s; busbw
    the all-reduce's 2 (n - 1) / n of it), so that only the times' growth is edited."""
    lines = []
    busbw_per_algbw = 2 * (8 - 1) / 8  # the log's 8 GPUs
    with open(os.path.join(DATA, "dgx-a100-superbench", "all_reduce.log")) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 12 and fields[0].isdigit() and int(fields[0]) > 0 and time_us(int(fields[0])):
                size, us = int(fields[0]), time_us(int(fields[0]))
                algbw = size / us / 1e3
                for time_at in (4, 8):  # out of place, in place: time, algbw, busbw
                    fields[time_at:time_at + 3] = [f"{us:.2f}", f"{algbw:.2f}", f"{algbw * busbw_per_algbw:.2f}"]
                line = "  ".join(fields) + "\n"
            lines.append(line)
    edited = tmp_path / "edited.log"
    edited.write_text("".join(lines))
    return str(edited)


def test_a_range_whose_times_hardly_grow_is_refused(tmp_path):
    """From 256 MiB on, 2 ms and 0.1 us more each doubling: the ring's fit would need 10^5 times
    NVLink's bandwidth (and LL128's factor then rounded to 0 and was divided by): refused
    naming the range's algorithm and what its times ask."""
    log = _edited_dgx_log(tmp_path, lambda size: 2000 + 0.1 * size.bit_length() if size >= 256 * MIB else None)
    network = load_network(os.path.join(DATA, "dgx-a100-superbench", "network.yml"))
    with pytest.raises(InputError, match=r"--nccl-algo: ring: its sizes. times ask [\d.e+]+ times the links' bandwidth; they hardly grow"):
        fit_log(parse_log(log), network, [parse_range(f"ring:{256 * MIB}")])


def test_a_protocol_whose_bandwidth_rounds_to_nothing_is_refused(tmp_path):
    """LL128's sizes (4-16 MiB on the DGX) taking seconds per byte leave it a bandwidth factor
    that rounds to 0: refused as a protocol whose sizes leave nothing to fit, not divided by."""
    log = _edited_dgx_log(tmp_path, lambda size: size * 1e3 if 4 * MIB <= size <= 16 * MIB else None)
    network = load_network(os.path.join(DATA, "dgx-a100-superbench", "network.yml"))
    with pytest.raises(InputError, match=r"edited\.log: ring with LL128 \(4194304 to 16777216 bytes"):
        fit_log(parse_log(log), network, [parse_range(f"ring:{256 * MIB}")])


def test_calibrate_writes_nccl_json(tmp_path, capsys):
    folder = os.path.join(DATA, "hgx-h100-2node-ib")
    rc = main(["calibrate", os.path.join(folder, "all_reduce.log"), "--network", os.path.join(folder, "network.yml"),
               "--out", str(tmp_path / "out"), "--nccl-algo", f"nvls:{128 * MIB}"])
    assert rc == 0
    doc = json.loads((tmp_path / "out" / "nccl.json").read_text())
    assert doc["nvls"] is True and doc["nodes"] == 2 and set(doc["efficiency"]) == {"nvls"}
    assert len(doc["sizes"]) == 8  # 128 MiB to 16 GiB
    assert 0 < doc["launch_us"] < 10 and len(doc["outside"]) == 24
    # each size of the log is a row of a table within 80 columns (its lines ran to 144), its
    # measured time the log's own out-of-place figure
    out = capsys.readouterr().out.splitlines()
    start = out.index("nccl: each size of the log against NCCL's choice")
    table = out[start:next(i for i, line in enumerate(out) if line.startswith("endpoint delay"))]
    assert len(table) == 2 * (2 + 32)  # two blocks of columns, each a title, a header and 32 sizes
    assert all(len(line) <= 80 for line in table), max(table, key=len)
    row = next(line for line in table if line.split()[:1] == ["1,073,741,824"])
    measured = next(r for r in parse_log(os.path.join(folder, "all_reduce.log")).rows if r.size_bytes == 1 << 30)
    assert row.split()[1:3] == ["nvls", "held"] and float(row.split()[4]) == pytest.approx(measured.time_us)


@pytest.mark.parametrize("text,message", [
    ("ring", "must be ALGO:FROM"), ("collnet:1024", "must be ALGO:FROM"), ("ring:2048:1024", "TO must be"),
])
def test_bad_ranges_are_refused(text, message):
    with pytest.raises(InputError, match=message):
        parse_range(text)


def test_nvls_refused_on_a100_and_empty_range():
    folder = os.path.join(DATA, "oci-a100-2node-roce")
    log = parse_log(os.path.join(folder, "all_reduce.log"))
    network = load_network(os.path.join(folder, "network.yml"))
    with pytest.raises(InputError, match="nvls needs NVSwitch-3"):
        fit_log(log, network, [parse_range("nvls:1024")])
    with pytest.raises(InputError, match="two or more are needed"):
        fit_log(log, network, [parse_range(f"tree:{1 << 40}")])


def test_nccl_choice_by_size_and_nodes():
    """With NCCL's own constants and a preset's links: on one A100 node the ring (a chain tree
    has half its ratio); on two H100 nodes NVLS for large buffers, where its network share is
    twice the ring's; a tree (2 log2 m network hops) before a ring (2 (m - 1)) for small
    buffers on many nodes; NVLS only on NVSwitch-3."""
    a100 = Links(215.822 * 2**30 / 1e9, 25 * 0.94, False)
    h100 = Links(370.0 * 2**30 / 1e9, 50 * 0.94, True)
    assert choose(a100, Shape(8, 1, 8), 1 << 30) == "ring"
    assert choose(h100, Shape(16, 2, 8), 1 << 30) == "nvls"
    assert choose(a100, Shape(512, 64, 8), 64 * 1024) == "tree"
    assert choose(a100, Shape(16, 2, 8), 1 << 30) != "nvls"


def test_nccl_channels_and_threads_by_hand():
    """NCCL's rule (enqueue.cc): drop a channel while a thread of each would get fewer bytes
    than the protocol's threshold (LL 8, LL128 8, Simple 64; the ring's LL x the ranks), then
    halve the last channel's threads while a multiple of 128; Simple adds a warp on a ring, a
    tree always runs a whole block (640), NVLS its 16 channels."""
    links = Links(200.0, 20.0, True)  # 32 channels
    one_node, two_nodes = Shape(8, 1, 8), Shape(16, 2, 8)
    # ring LL on 8 GPUs: 8 x 8 = 64 bytes a thread, 512 threads: 32 KiB a channel
    assert channels(links, one_node, "ring", "LL", 128 * 1024) == (4, 512)  # 4 x 32 KiB
    assert channels(links, one_node, "ring", "LL", 128 * 1024 - 1) == (3, 512)
    assert channels(links, one_node, "ring", "LL", 64 << 20) == (32, 512)  # all of them from 1 MiB
    # one channel, 16 KiB: 16 KiB < 512 x 64, so 256 threads; 16 KiB = 256 x 64 stops there
    assert channels(links, one_node, "ring", "LL", 16 * 1024) == (1, 256)
    # 100 bytes: 512 -> 256 -> 128 -> 64 threads (64 is no multiple of 128), then 3 warps at least
    assert channels(links, one_node, "ring", "LL", 100) == (1, 96)
    # the ring's LL threshold grows with the ranks: 16 x 8 x 512 = 64 KiB a channel on 16 GPUs
    assert channels(links, two_nodes, "ring", "LL", 256 * 1024)[0] == 4
    # LL128: 8 x 640 = 5 KiB a channel; Simple: 64 x 512 = 32 KiB, one extra warp on a ring
    assert channels(links, one_node, "ring", "LL128", 50 * 1024) == (10, 640)
    assert channels(links, one_node, "ring", "Simple", 1 << 20) == (32, 512 + 32)
    # tree LL: 8 x 512 = 4 KiB a channel, the whole block whatever the size
    assert channels(links, two_nodes, "tree", "LL", 8 * 1024) == (2, 640)
    assert channels(links, two_nodes, "nvls", "Simple", 1 << 20) == (16, 640)


def test_tree_chunks_on_the_channels_nccl_runs():
    """The tree's Simple chunk is sized on the channels NCCL runs: 32 from 1 MiB (512 MiB on two
    8-GPU nodes: 512 MiB / (32 x 512 KiB) = 32 < 8 x depth 8, so 256 KiB); at 64 KiB only two
    channels run, 32 KiB each, so the chunk falls to its 32 KiB floor."""
    links, shape = Links(200.0, 20.0, False), Shape(16, 2, 8)
    assert tree_chunk_bytes(links, shape, 512 * MIB) == 256 * 1024
    assert channels(links, shape, "tree", "Simple", 64 * 1024)[0] == 2
    assert tree_chunk_bytes(links, shape, 64 * 1024) == 32 * 1024


def _two_gpus():
    """Two GPUs of one node (a ring of 2 on NVLink) as NPUs of a SimPy run: (env, timing, run,
    the NPUs, their rings, when each completed what)."""
    import simpy

    from simpy_astra.collectives.logical import LogicalDim
    from simpy_astra.engine.nccl_collectives import NcclAllReduce, NcclRendezvous
    from simpy_astra.network.rails import Rails

    env = simpy.Environment()
    rails = Rails(8, 200.0, 0.0, 20.0, 0.0, 1, 32)
    timing = NcclAllReduce(rails, Links(200 * 2**30 / 1e9, 20.0, False))
    done: dict[tuple[int, int], int] = {}

    class Npu:
        def __init__(self, npu_id):
            self.npu_id = npu_id
            self.clock = self
            self.env = env
            self.system = self  # its system layer, whose collective probes nobody watches
            self.probe_collective_start = self.probe_collective_end = None

        def register(self, delay, callback, node_id):
            env.process(self._later(delay, callback, node_id))

        def _later(self, delay, callback, node_id):
            yield env.timeout(delay)
            callback(node_id)

        def complete_soon(self, node_id):
            done[(self.npu_id, node_id)] = env.now

    run = NcclRendezvous(timing, simulated=range(8))
    dims = {0: [LogicalDim((0, 1), 0)], 1: [LogicalDim((1, 0), 0)]}
    return env, timing, run, (Npu(0), Npu(1)), dims, done


def test_an_all_reduce_completes_after_its_last_member_issued_it():
    """The one that issues at 0 and the one that issues 1 ms later both finish NCCL's time
    after 1 ms."""
    env, timing, run, (a, b), dims, done = _two_gpus()

    def late():
        yield env.timeout(1_000_000)
        run.issue(b, dims[1], [True], 1 << 20, 7)

    run.issue(a, dims[0], [True], 1 << 20, 7)
    env.process(late())
    env.run()
    expected = 1_000_000 + timing.duration_ns((0, 1), 1 << 20)
    assert timing.duration_ns((0, 1), 1 << 20) > 0
    assert done == {(0, 7): expected, (1, 7): expected}


def test_concurrent_all_reduces_on_a_group_queue():
    """Two all-reduces both members issue at once run one after the other on the group (its
    communicator's stream): the second ends two NCCL times after the start, not one."""
    env, timing, run, (a, b), dims, done = _two_gpus()
    for node_id in (7, 8):
        run.issue(a, dims[0], [True], 1 << 20, node_id)
        run.issue(b, dims[1], [True], 1 << 20, node_id)
    env.run()
    one = timing.duration_ns((0, 1), 1 << 20)
    assert done == {(0, 7): one, (1, 7): one, (0, 8): 2 * one, (1, 8): 2 * one}


def test_forced_nvls_stops_on_a_group_with_one_gpu_a_node_as_nccl_does(tmp_path, capsys):
    """NVLS reduces in a node's NVSwitch, so NCCL offers it only to a group with several GPUs
    of a node; with ``NCCL_ALGO=NVLS`` a data-parallel pair {r, r + 8} (pp 8 in a node under
    ``--use-tp-pp-dp-mapping`` on two H100 nodes) has no algorithm and NCCL stops. Forced here,
    the run stops with the field and the fix; 8 data-parallel GPUs of one node run NVLS. At tp 8
    the first collective NCCL cannot run is ``get_batch``'s broadcast over tp (NCCL's broadcast
    is the ring alone), and the run names it."""
    args = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
            "--max-position-embeddings 1024 --micro-batch-size 1 --bf16 --global-batch-size 8")

    def run(gpus: int, extra: str) -> int:
        path = tmp_path / f"s{gpus}.yaml"
        path.write_text(f'workload: {{generate: megatron, args: "{args} {extra}"}}\n'
                        f"cluster: {{preset: dgx-h100, gpus: {gpus}, nccl_algo: nvls}}\n")
        return main(["run", str(path), "--quiet", "--json-out", str(tmp_path / f"s{gpus}.json")])

    assert run(8, "") == 0
    capsys.readouterr()
    assert run(16, "--pipeline-model-parallel-size 8 --use-tp-pp-dp-mapping") == 2
    err = capsys.readouterr().err
    assert "cluster.nccl_algo: nvls: NCCL has no nvls for a group of 2 GPUs with one on each of 2 nodes" in err
    assert "leave nccl_algo out" in err and "Traceback" not in err
    assert run(8, "--tensor-model-parallel-size 8") == 2
    err = capsys.readouterr().err
    assert "cluster.nccl_algo: nvls: NCCL runs broadcasts by its ring alone" in err
    assert "node 'F0.c0.1.batch.tokens.broadcast', over a group of 8 GPUs" in err and "force ring" in err


def test_an_all_reduces_group_is_every_npu_its_rings_reach_and_one_tuple_for_all_of_them():
    """On a 4 x 3 x 2 grid, the group an NPU's all-reduce runs on over any choice of
    dimensions is the block of NPUs that differ from it only there (worked out here by
    coordinates), and every member gets the very same tuple: an all-reduce over 16,384 GPUs
    built one 16,384-member tuple for each GPU (MemoryError under 6 GB) and hashed each at
    every call. A communicator group's ring (a strided data-parallel group) is its members."""
    import itertools

    from collectives.logical import LogicalDim, dimension_ring
    from simpy_astra.engine.nccl_collectives import NcclAllReduce
    from simpy_astra.infra.grid import Grid

    shape = [4, 3, 2]
    grid, n = Grid(shape), 24
    timing = NcclAllReduce(rails=None, links=None)
    for involved in itertools.product([True, False], repeat=3):
        seen: dict[tuple[int, ...], tuple[int, ...]] = {}
        for npu in range(n):
            dims = [dimension_ring(npu, shape, d) for d in range(3)]
            members = timing.group(npu, dims, list(involved))
            by_hand = tuple(x for x in range(n) if all(
                involved[d] or grid.coord(x, d) == grid.coord(npu, d) for d in range(3)))
            assert members == by_hand
            assert seen.setdefault(by_hand, members) is members  # one tuple a group
    strided = (1, 5, 9, 13)
    ring = LogicalDim(strided, 2, local=True)
    assert timing.group(9, [ring], [True]) == strided


def test_one_gpu_a_node_takes_the_trees_network_hop():
    """tuning.cc (2.23 on): "With ppn=1 latencies are fully exposed, use the Tree network
    latency". A 4-node all-reduce at one GPU a node: the ring's LL 6.6 + 2 x 3 x 5.0 = 36.6 us
    (not its own 2.7 us hop: 22.8), LL128 14 + 6 x 8.5 = 65.0, Simple 8.4 + 6 x 14 = 92.4 (x 1.4,
    its plateau); at two GPUs a node the ring keeps its own hops: LL 6.6 + 6 x 2.7 + 8 x 1.0 =
    30.8 us (2 (8 - 1) steps, 6 over the network, the others at NCCL's net overhead)."""
    one, two = Shape(4, 4, 1), Shape(8, 4, 1)
    assert [latency_us(one, "ring", p) for p in range(3)] == pytest.approx([36.6, 65.0, 92.4 * 1.4])
    assert latency_us(two, "ring", 0) == pytest.approx(30.8)
    assert latency_us(one, "tree", 1) == pytest.approx(14.0 + 2 * 2 * 8.5)
