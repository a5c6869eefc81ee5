"""A seventeenth hunt for inputs that ran as something other than what they say: each is now
refused in one line naming the file, the field and the fix, warned of, or runs as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, error_lines, megatron_scenario, write_yaml
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.wrapped_lines import plain

#: a generator of one's own whose compute time comes from a module beside it and a file it is named
_GENERATOR = '''
import json
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from shapes import COMPUTE_US


def pipeline(params, prefix):
    extra = json.load(open(params["times"]))["extra_us"]
    for s in range(2):
        nodes = [make_node(1, "forward", COMP_NODE, deps=[0] if s else [], duration_micros=COMPUTE_US + extra)]
        if s:
            nodes.insert(0, make_node(0, "recv", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_size": 64, "comm_tag": 1}))
        else:
            nodes.append(make_node(2, "send", COMM_SEND_NODE, deps=[1], attrs={"comm_dst": 1, "comm_size": 64,
                                                                                 "comm_tag": 1}))
        write_et(f"{prefix}.{s}.et", nodes)
'''


def _quiet_run(folder: Path, cache: Path) -> str:
    """``run s.yaml --quiet`` in a process of its own (each run imports the modules anew)."""
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "s.yaml", "--quiet"], cwd=folder,
                          capture_output=True, text=True, env={**os.environ, "SIMPY_ASTRA_CACHE": str(cache)},
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_users_generator_runs_again_when_a_module_or_file_it_reads_is_edited(tmp_path):
    # the cache keyed a generator of one's own by its module's source alone: an edited module it
    # imports (shapes.py) or an edited file its parameters name (times.json) ran the old traces
    (tmp_path / "gen.py").write_text(_GENERATOR)
    (tmp_path / "shapes.py").write_text("COMPUTE_US = 10\n")
    (tmp_path / "times.json").write_text('{"extra_us": 0}')
    network = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [50.0], "latency": [500.0]}
    write_yaml(tmp_path, dict(DEFAULT, workload={"generate": "gen:pipeline", "times": "times.json"}, network=network))
    cache = tmp_path / "cache"
    times = [_quiet_run(tmp_path, cache)]
    (tmp_path / "shapes.py").write_text("COMPUTE_US = 100\n")
    times.append(_quiet_run(tmp_path, cache))
    (tmp_path / "times.json").write_text('{"extra_us": 1000}')
    times.append(_quiet_run(tmp_path, cache))
    # stage 1 ends after both stages' compute and one 64 B message (501 ns)
    assert [line.split(" (")[0] for line in times] == [
        "iteration time 20,501 ns", "iteration time 200,501 ns", "iteration time 2,200,501 ns"]


def test_p2p_overlap_without_the_interleaved_schedule_says_it_changes_nothing(tmp_path, capsys):
    # --overlap-p2p-communication on plain 1F1B ran as plain 1F1B without a word: Megatron overlaps
    # pipeline sends only in the interleaved schedule and turns the overlap off otherwise, so a
    # sweep over it drew a flat line
    args = ARGS.replace("--num-layers 2", "--num-layers 4 --pipeline-model-parallel-size 2")
    assert main(["run", megatron_scenario(tmp_path, f"{args} --overlap-p2p-communication"), "--quiet"]) == 0
    err = plain(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"warning: {tmp_path / 's.yaml'}: workload.args: --overlap-p2p-communication changes nothing without the "
        f"interleaved schedule"), err
    interleaved = f"{args} --num-layers-per-virtual-pipeline-stage 1 --overlap-p2p-communication"
    assert main(["run", megatron_scenario(tmp_path, interleaved), "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("field, value, said", [
    ("num_queues_per_dim", 1e9, "field 'num_queues_per_dim': must be an integer from 1 to 4096 (got 1000000000.0); "
                                "ASTRA-sim's examples use 1"),
    ("cluster", {"preset": "dgx-a100-80gb", "gpus": 8, "gpu": {"sms": 1e6}},
     "cluster.gpu.sms: must be between 1 and 100000"),
    ("cluster", {"preset": "dgx-a100-80gb", "gpus": 8, "nodes_per_leaf": 1e9}, "cluster.nodes_per_leaf: must be between 1 and"),
])
def test_an_integral_float_past_a_fields_bound_is_told_the_bound_not_an_integer_it_refuses(tmp_path, capsys, field,
                                                                                           value, said):
    # 'num_queues_per_dim: 1e9' was told '; write 1000000000', and 'sms: 1e6' '; write 1000000': written
    # as told, each was then refused for its range (1 to 4096, 1 to 100,000)
    doc = yaml.safe_load(Path(megatron_scenario(tmp_path)).read_text())
    path = write_yaml(tmp_path, {**doc, field: value})
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: {said}") and "; write" not in err[0], err


def test_a_float_past_a_flags_bound_is_not_told_an_integer_it_refuses(tmp_path, capsys):
    # '--num-queues-per-dim 1e9' was told '; write 1000000000', which the flag then refuses (1 to 4096)
    from simpy_astra.config.astra_inputs import MAX_QUEUES_PER_DIM

    argv = ["--workload-configuration=w", "--system-configuration=s.json", "--network-configuration=n.yml",
            "--remote-memory-configuration=m.json"]
    for value, said in (("1e9", f"; it takes 1 to {MAX_QUEUES_PER_DIM}"), ("2.5", "; write 2 or 3"),
                        (f"{MAX_QUEUES_PER_DIM}.0", f"; write {MAX_QUEUES_PER_DIM}")):
        assert error_lines(capsys, [*argv, "--num-queues-per-dim", value]) == [
            f"error: simpy-astra: argument --num-queues-per-dim: invalid int value: '{value}'{said} (see simpy-astra "
            f"--help)"]


def test_a_sweep_resumed_after_a_helper_module_of_its_plugin_was_edited_runs_again(tmp_path, capsys, monkeypatch):
    # a resumed sweep counted a generator's own module among its inputs, not the helper module it
    # imports: shapes.py edited, every row was kept, each the old step's time
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gen.py").write_text(_GENERATOR)
    (tmp_path / "shapes.py").write_text("COMPUTE_US = 10\n")
    (tmp_path / "times.json").write_text('{"extra_us": 0}')
    network = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [50.0], "latency": [500.0]}
    write_yaml(tmp_path, dict(DEFAULT, workload={"generate": "gen:pipeline", "times": "times.json"}, network=network))
    sweep = write_yaml(tmp_path, {"base": "s.yaml", "axes": {"network.latency": [500, 1000]}}, "sw.yaml")
    assert main(["sweep", sweep, "--out", "out", "--no-plots"]) == 0
    (tmp_path / "shapes.py").write_text("COMPUTE_US = 100\n")
    for name in ("gen", "shapes"):  # a new process would import them anew
        sys.modules.pop(name, None)
    capsys.readouterr()
    assert main(["sweep", sweep, "--out", "out", "--no-plots"]) == 0
    rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert [row.split(",")[2] for row in rows[1:]] == ["200501", "201001"], rows


def test_a_step_under_a_second_is_not_printed_as_zero_seconds(tmp_path, capsys):
    # the headline gave seconds to 3 decimals: a 0.4 ms step read 'iteration time 0.000 s', and
    # steps of 20.4 and 20.0 ms both '0.020 s'
    tiny = ("--num-layers 1 --hidden-size 64 --num-attention-heads 1 --seq-length 8 --micro-batch-size 1 "
            "--global-batch-size 2 --vocab-size 64")
    figures = tmp_path / "f.json"
    assert main(["run", megatron_scenario(tmp_path, tiny, gpus=2), "--quiet", "--json-out", str(figures)]) == 0
    step_ns = json.loads(figures.read_text())["iteration_time_ns"]
    assert step_ns < 1_000_000
    assert capsys.readouterr().out.startswith(f"iteration time {step_ns / 1e3:,.3f} us, ")


def test_a_clusters_network_costs_the_same_whatever_the_jobs_layout(tmp_path):
    # the price was that of the job's parallel dimensions, not of the machine: the same two DGX
    # A100 nodes cost $86,333 at tp 8 and $145,036 at tp 2 x pp 2 (so a sweep minimising
    # finish_ns * cost_usd over layouts ranked them by a price no machine has), and one node
    # had pod-tier NICs and a spine ($82,530 of NICs for 8 GPUs that send nothing out of it)
    costs = {}
    for layout, gpus in (("--tensor-model-parallel-size 8", 16), ("--tensor-model-parallel-size 2 "
                                                                   "--pipeline-model-parallel-size 2", 16),
                         ("--tensor-model-parallel-size 2", 8)):
        args = ARGS.replace("--num-layers 2", "--num-layers 4").replace("heads 4", "heads 8") + " " + layout
        figures = tmp_path / "f.json"
        assert main(["run", megatron_scenario(tmp_path, args, gpus=gpus), "--quiet", "--json-out", str(figures)]) == 0
        doc = json.loads(figures.read_text())
        costs[layout, gpus] = doc["cost_usd"], {(item["tier"], item["kind"]) for item in doc["cost"]["items"]}
    nvlink, rail = 215.822, round(1600 / 8 / 8 * 1e9 * 0.94 / 2**30, 6)  # the preset's GiB/s
    in_node = 16 * nvlink * 4.0 + 2 * nvlink * 8 * 13.0  # 16 links, a switch of 8 ports a node
    across = 16 * rail * 7.4 + 8 * rail * 2 * 23.7 + 16 * rail * 47.8  # a rail of 2 nodes per GPU of a node
    two_nodes = [cost for (_, gpus), cost in costs.items() if gpus == 16]
    assert two_nodes[0] == two_nodes[1] and two_nodes[0][0] == pytest.approx(in_node + across, abs=0.01)
    one_node = costs["--tensor-model-parallel-size 2", 8]
    assert one_node[0] == pytest.approx(in_node / 2, abs=0.01) and {tier for tier, _ in one_node[1]} == {"package"}


@pytest.mark.parametrize("text, line", [
    ("workload:\n  generate: megatron\n\targs: '--num-layers 2'\n", "line 3, column 1: found character '\\t' that "
     "cannot start any token; YAML indents with spaces: replace the tab with spaces"),
    ("workload:\n  generate: megatron\n  args: --lr: 3\n", "line 3, column 13: mapping values are not allowed here; a "
     "': ' inside a value starts a mapping: put the value in quotes"),
])
def test_a_yaml_slip_a_hand_written_file_makes_is_told_its_fix(tmp_path, capsys, text, line):
    # a tab indenting a line said only "found character '\t' that cannot start any token", and an
    # unquoted ': ' in a value "mapping values are not allowed here": where, but not what to do
    for command, name in (("run", "s.yaml"), ("sweep", "sw.yaml")):
        path = tmp_path / name
        path.write_text(text)
        argv = [command, str(path), *(["--list"] if command == "sweep" else [])]
        assert error_lines(capsys, argv) == [f"error: {path}: invalid YAML at {line}"]


@pytest.mark.parametrize("text, said", [
    ('{"memory-type": "NO_MEMORY_EXPANSION",}', "line 1, column 39: Expecting property name enclosed in double quotes; "
                                             "JSON allows no comma before '}': remove the last one"),
    ('{"memory-type": "NO_MEMORY_EXPANSION", // none\n}', "line 1, column 40: Expecting property name enclosed in double "
                                                      "quotes; JSON has no comments: remove it"),
    ("{'memory-type': 'NO_MEMORY_EXPANSION'}", "line 1, column 2: Expecting property name enclosed in double quotes"),
])
def test_a_json_slip_a_hand_edited_file_makes_is_told_its_fix(tmp_path, capsys, text, said):
    # a trailing comma and a comment were both refused as 'Expecting property name enclosed in
    # double quotes', which sent the user to look for quotes; a single-quoted key is what it says
    memory = tmp_path / "m.json"
    memory.write_text(text)
    path = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), remote_memory=str(memory)))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [f"error: {memory}: invalid JSON at {said}"]


@pytest.mark.parametrize("given, said", [("ring:1e6", "; write ring:1000000"), ("RING:1048576:4e6",
                                                                                "; write ring:1048576:4000000"),
                                         ("ring:-5", ""), ("ring:1.5", "")])
def test_a_calibration_range_written_in_floats_is_told_the_range_to_write(tmp_path, capsys, given, said):
    # --nccl-algo ring:1e6 was told only the form ALGO:FROM[:TO], as if 1e6 were no size
    log = SCENARIOS.parent / "tests" / "data" / "nccl" / "dgx-a100-superbench"
    argv = ["calibrate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"), "--out",
            str(tmp_path / "cal"), "--nccl-algo", given]
    assert error_lines(capsys, argv) == [
        f"error: --nccl-algo: {given!r} must be ALGO:FROM[:TO] in bytes, ALGO one of ring, tree, nvls (e.g. "
        f"nvls:134217728){said}"]


def _preset_copy(tmp_path: Path, old: str, new: str) -> str:
    """A scenario on a copy of the DGX A100 preset with ``old`` replaced by ``new``."""
    from simpy_astra.config.cluster_presets import PRESET_DIR

    text = (Path(PRESET_DIR) / "dgx-a100-80gb.yaml").read_text()
    assert old in text
    (tmp_path / "mine.yaml").write_text(text.replace(old, new, 1))
    return write_yaml(tmp_path, {
        "workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "./mine.yaml", "gpus": 8}})


@pytest.mark.parametrize("old, new, said", [
    ("  nvlink_gib_s:", "  nvlink_gbs:", "node: unknown key 'nvlink_gbs'; did you mean 'nvlink_gib_s'?"),
    ("  oversubscription:", "  oversubscribtion:", "node: unknown key 'oversubscribtion'; did you mean "
                                                   "'oversubscription'?"),
    ("  nvls:", "  nvsl:", "node: unknown key 'nvsl'; did you mean 'nvls'?"),
    ("  hbm_gib:", "  hbm_gi:", "gpu: unknown key 'hbm_gi'; did you mean 'hbm_gib'?"),
    ("  launch_us:", "  lanuch_us:", "gpu: unknown key 'lanuch_us'; did you mean 'launch_us'?"),
])
def test_a_misspelt_key_in_a_preset_file_is_told_its_nearest(tmp_path, capsys, old, new, said):
    # a misspelt key of a preset file of one's own was told every key of its block (16 of a node's),
    # not the one it misspells, as the scenario's own cluster keys are
    path = _preset_copy(tmp_path, old, new)
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert err == [f"error: {tmp_path / 'mine.yaml'}: {said}"], err


def test_a_misspelt_key_of_a_scenarios_gpu_override_is_told_its_nearest(tmp_path, capsys):
    path = megatron_scenario(tmp_path, gpu={"tensor_eficiency": 0.5})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: cluster.gpu: unknown key 'tensor_eficiency'; did you mean 'tensor_efficiency'?"]


@pytest.mark.parametrize("old, new, said", [
    ("node:", "nodes:", "unknown key 'nodes'; did you mean 'node'?"),
    ("gpu:", "gpus:", "unknown key 'gpus'; did you mean 'gpu'?"),
])
def test_a_misspelt_block_of_a_preset_file_is_named(tmp_path, capsys, old, new, said):
    # 'nodes:' for 'node:' was told only "a cluster preset needs mappings 'gpu' and 'node'", with
    # nothing of which key was wrong
    path = _preset_copy(tmp_path, old, new)
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert err == [f"error: {tmp_path / 'mine.yaml'}: {said}"], err


@pytest.mark.parametrize("text, said", [
    ("- gpu\n- node\n", "must be a mapping with blocks 'gpu' and 'node' (got [\"gpu\", \"node\"])"),
    ("gpu: {name: X}\n", "missing block 'node' (a mapping of the node's figures: gpus, nvlink_gib_s, ...)"),
    ("gpu: {name: X}\nnode: 8\n", "node: must be a mapping of the node's figures (gpus, nvlink_gib_s, ...); got 8"),
    ("gpu: [A100]\nnode: {gpus: 8}\n", "gpu: must be a mapping of the GPU's figures (name, sms, ...); got [\"A100\"]"),
])
def test_a_preset_file_without_its_blocks_is_told_which(tmp_path, capsys, text, said):
    # a block missing or not a mapping ('node: 8') was told the same line as a misspelt one
    (tmp_path / "mine.yaml").write_text(text)
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                                 "cluster": {"preset": "./mine.yaml", "gpus": 8}})
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert err == [f"error: {tmp_path / 'mine.yaml'}: {said}"], err


@pytest.mark.parametrize("value, said", [("1e3", "; it takes 1 to 8"), ("1e9", "; it takes 1 to 8"),
                                         ("8.0", "; write 8"), ("0.5", "; write 1"), ("8.5", "; write 8")])
def test_sweep_jobs_as_a_float_is_told_a_count_it_takes(tmp_path, capsys, monkeypatch, value, said):
    # '--jobs 1e3' was told '; write 1000', and '--jobs 1000' then refused: at most 4 processes a CPU
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {"network.latency": [500, 1000]}})
    err = error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "out"), "--jobs", value])
    assert err == [f"error: simpy-astra sweep: argument --jobs: invalid int value: '{value}'{said} (see "
                   f"simpy-astra sweep --help)"]


@pytest.mark.parametrize("flag, value, said", [("--num-passes", "0.5", "; write 1"), ("--num-passes", "-2.5",
                                                                                     "; it takes 1 or more"),
                                               ("--min-size", "0.5", "; write 1")])
def test_a_float_to_a_count_of_one_or_more_is_not_told_zero(capsys, flag, value, said):
    # '--num-passes 0.5' and calibrate's '--min-size 0.5' were told '; write 0 or 1', and 0 is refused
    log = SCENARIOS.parent / "tests" / "data" / "nccl" / "dgx-a100-superbench"
    argv = (["calibrate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"), "--out", "cal"]
            if flag == "--min-size" else ["--workload-configuration=w", "--system-configuration=s.json",
                                          "--network-configuration=n.yml", "--remote-memory-configuration=m.json"])
    prog = "simpy-astra calibrate" if flag == "--min-size" else "simpy-astra"
    assert error_lines(capsys, [*argv, flag, value]) == [
        f"error: {prog}: argument {flag}: invalid int value: '{value}'{said} (see {prog} --help)"]


_NUMPY_RING = '''
import numpy as np


def ring(ctx):
    """A ring all-reduce whose peers and sizes come out of numpy arithmetic ({kind})."""
    as_is = {kind}
    members = np.array(ctx.members)
    n, i = len(members), ctx.index
    msg = np.int64(ctx.size_bytes) // n
    for step in range(2 * (n - 1)):
        ctx.send(as_is(members[(i + 1) % n]), as_is(msg), tag=as_is(np.int64(7)))
        yield ctx.recv(as_is(members[(i - 1) % n]), as_is(msg), tag=as_is(np.int64(7)))
        yield ctx.endpoint(reduce_bytes=as_is(msg) if step < n - 1 else 0)
'''


def test_a_users_collective_may_count_bytes_and_peers_in_numpy_integers(tmp_path, capsys, monkeypatch):
    # sizes and peers computed with numpy (np.int64) were refused as 'a message size is an integer
    # number of bytes >= 0' of a value that is one: they now run as the same Python ints do
    monkeypatch.chdir(tmp_path)
    times = []
    for module, kind in (("h17_ring_int", "int"), ("h17_ring_numpy", "np.int64")):
        (tmp_path / f"{module}.py").write_text(_NUMPY_RING.format(kind=kind))
        system = dict(DEFAULT["system"], **{"all-reduce-implementation": [f"{module}:ring"]})
        path = write_yaml(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce",
                                                  "size": 1048576, "num_npus": 4}, "system": system,
                                     "network": {"topology": ["Ring"], "npus_count": [4], "bandwidth": [50.0],
                                                 "latency": [500.0]}, "backend": "congestion_unaware"})
        assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
        times.append(capsys.readouterr().out)
    assert times[0] == times[1] and times[0].startswith("iteration time "), times


_NUMPY_TOPOLOGY = '''
import numpy as np
from simpy_astra.topologies import BasicTopology


class NpRing(BasicTopology):
    """A bidirectional ring whose hop counts, links and routes come out of numpy arithmetic."""

    def hops(self, src, dst):
        d = np.int64(abs(src - dst))
        return min(d, self.npus_count - d)

    def links(self):
        n = self.npus_count
        return [(np.int64(i), np.int64((i + s) % n)) for i in range(n) for s in (1, -1)]

    def route(self, src, dst):
        n, path = self.npus_count, [src]
        step = 1 if (dst - src) % n <= n // 2 else -1
        while path[-1] != dst:
            path.append(np.int64((path[-1] + step) % n))
        return path
'''


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware", "packet"])
def test_a_users_topology_may_answer_in_numpy_integers(tmp_path, capsys, monkeypatch, backend):
    # a hop count of np.int64(1) was refused as 'hops(1, 2) returned np.int64(1); expected an
    # integer >= 1', and routes and links of numpy ids alike: they run as the built-in Ring does
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h17_np_ring.py").write_text(_NUMPY_TOPOLOGY)
    times = []
    for topology in ("Ring", "h17_np_ring:NpRing"):
        path = write_yaml(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce",
                                                  "size": 1048576, "num_npus": 4}, "system": DEFAULT["system"],
                                     "network": {"topology": [topology], "npus_count": [4], "bandwidth": [50.0],
                                                 "latency": [500.0]}, "backend": backend})
        assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
        times.append(capsys.readouterr().out)
    assert times[0] == times[1] and times[0].startswith("iteration time "), times


def test_jobs_that_outnumber_the_networks_npus_are_told_the_fix(tmp_path, capsys):
    # a third 4-rank job on 8 NPUs was told only 'the job has 4 ranks but only 0 NPUs are free'
    bench = {"generate": "microbench", "collective": "all_reduce", "size": 65536, "num_npus": 4}
    path = write_yaml(tmp_path, {"network": {"topology": ["Switch"], "npus_count": [8], "bandwidth": [50.0],
                                             "latency": [500.0]}, "backend": "congestion_aware",
                                 "system": DEFAULT["system"],
                                 "jobs": [{"name": "a", "workload": bench, "npus": [0, 1, 2, 3]},
                                          *({"name": name, "workload": bench, "placement": "contiguous"}
                                            for name in "bc")]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[2].placement: the job has 4 ranks but only 0 of the network's 8 NPUs are free (jobs "
        f"a, b take the rest); give the network more NPUs, or the job fewer ranks"]


@pytest.mark.parametrize("constraint, said", [
    ("machine == s1", "'machine == s1' names s1, a value of axis machine, as if it were a name; quote it: "
                      "machine == 's1'"),
    ("backend != packet and machine == s2", "'backend != packet and machine == s2' names packet, a value of axis "
                                            "backend, and s2, a value of axis machine, as if they were names; quote "
                                            "them: backend != 'packet' and machine == 's2'"),
])
def test_a_constraint_naming_an_axis_value_unquoted_is_told_to_quote_it(tmp_path, capsys, constraint, said):
    # 'machine == s1' was told "uses unknown name(s) ['s1']; known: " and 30 figure names, none of
    # them what was meant: the axis's value s1, which a constraint writes as a string
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {
        "machine": {"named": {"s1": {"network.bandwidth": 100}, "s2": {"network.bandwidth": 200}}},
        "backend": ["congestion_unaware", "packet"]}, "constraints": [constraint]}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [f"error: {sweep}: constraints[0]: {said}"]


def test_a_text_workload_saved_with_a_byte_order_mark_reads_as_without(tmp_path, capsys):
    # a text workload an editor saved as 'UTF-8 with BOM' was refused as "unknown parallelism type
    # '\ufeffDATA'", a name that reads DATA; every other input file drops the mark
    text = "DATA\n2\na -1 5 NONE 0 6 NONE 0 7 ALLREDUCE 64 1\nb -1 5 NONE 0 6 NONE 0 7 ALLGATHER 32 1\n"
    written = []
    for name, data in (("plain", text.encode()), ("bom", b"\xef\xbb\xbf" + text.encode())):
        (tmp_path / f"{name}.txt").write_bytes(data)
        argv = ["convert", "text", "--input", str(tmp_path / f"{name}.txt"), "--output", str(tmp_path / name),
                "--num-npus", "2", "--num-passes", "1"]
        assert main(argv) == 0, capsys.readouterr().err
        written.append([(tmp_path / f"{name}.{npu}.et").read_bytes() for npu in range(2)])
    assert written[0] == written[1]


@pytest.mark.parametrize("given, said", [
    ("1MB", "; a size is a number of bytes: write 1000000 (or 1048576 for 1 MiB)"),
    ("64 MiB", "; a size is a number of bytes: write 67108864"),
    ("1.5gb", "; a size is a number of bytes: write 1500000000 (or 1610612736 for 1.5 GiB)"),
    ("4k", ""),
])
def test_a_size_written_with_a_unit_is_told_its_bytes(tmp_path, capsys, given, said):
    # 'size: 1MB' and '--size 64MiB' were told only 'must be an integer' (or 'invalid int value'),
    # as if the size were no number: the bytes it means were the user's to work out
    doc = dict(DEFAULT, workload={"generate": "microbench", "collective": "all_reduce", "size": given,
                                  "num_npus": 4})
    path = write_yaml(tmp_path, doc)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.size: must be an integer (got {given!r}){said}"]
    argv = ["generate", "microbench", "--collective", "all_reduce", "--size", given, "--num-npus", "4", "--output",
            str(tmp_path / "t")]
    assert error_lines(capsys, argv) == [
        f"error: simpy-astra generate microbench: argument --size: invalid int value: '{given}'{said} (see "
        f"simpy-astra generate microbench --help)"]


def test_a_comm_group_id_written_as_a_float_is_told_the_integer(tmp_path, capsys):
    # '[0, 1.0]' was told '1.0 is not an NPU id' with no word of the 1 to write, as every other
    # integer field says it
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), comm_groups={"1": [0, 1.0]})
    path = write_yaml(tmp_path, doc)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: comm_groups: group '1' lists 1.0, which is not an NPU id; the network has 8 NPUs (0..7); "
        f"write 1"]


def test_a_jobs_comm_group_past_its_ranks_is_told_the_jobs_ranks(tmp_path, capsys):
    # a 4-rank job's group naming rank 5 on an 8-NPU network was told 'the network has 4 NPUs (0..3)'
    bench = {"generate": "microbench", "collective": "all_reduce", "size": 65536, "num_npus": 4}
    path = write_yaml(tmp_path, {"network": {"topology": ["Switch"], "npus_count": [8], "bandwidth": [50.0],
                                             "latency": [500.0]}, "backend": "congestion_aware",
                                 "system": DEFAULT["system"],
                                 "jobs": [{"name": "a", "workload": bench, "npus": [0, 1, 2, 3], "comm_groups": {"1": [0, 5]}},
                                          {"name": "b", "workload": bench, "placement": "contiguous"}]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[0].comm_groups: group '1' lists 5, which is not a rank of the job; it has 4 ranks (0..3), "
        f"which its groups name"]


_NUMPY_GENERATOR = '''
import numpy as np
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE


def pipeline(params, prefix):
    """Two stages whose sizes and times come out of numpy arithmetic ({kind})."""
    as_is = {kind}
    size, micros = as_is(np.int64(64) * 2), as_is(np.int64(10))
    recv = {{"comm_src": 0, "comm_size": size, "comm_tag": as_is(np.int64(1)), "involved_dim": [True]}}
    send = {{"comm_dst": 1, "comm_size": size, "comm_tag": as_is(np.int64(1)), "ids": [as_is(np.int64(3))]}}
    write_et(f"{{prefix}}.0.et", [make_node(1, "forward", COMP_NODE, duration_micros=micros),
                                  make_node(2, "send", COMM_SEND_NODE, deps=[1], attrs=send)])
    write_et(f"{{prefix}}.1.et", [make_node(0, "recv", COMM_RECV_NODE, attrs=recv),
                                  make_node(1, "forward", COMP_NODE, deps=[0], duration_micros=micros)])
'''


def test_a_users_generator_may_give_make_node_numpy_numbers(tmp_path, capsys, monkeypatch):
    # make_node(attrs={"comm_size": np.int64(128)}) raised "cannot infer a Chakra value kind for
    # np.int64(128)", and duration_micros=np.int64(10) went through: now both are the ints they are
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    network = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [50.0], "latency": [500.0]}
    times = []
    for module, kind in (("h17_gen_int", "int"), ("h17_gen_numpy", "(lambda x: x)")):
        (tmp_path / f"{module}.py").write_text(_NUMPY_GENERATOR.format(kind=kind))
        path = write_yaml(tmp_path, dict(DEFAULT, workload={"generate": f"{module}:pipeline"}, network=network))
        assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
        times.append(capsys.readouterr().out)
    assert times[0] == times[1] and times[0].startswith("iteration time 20,502 ns"), times


@pytest.mark.parametrize("micros, said", [(-10, "-10"), (10.5, "10.5")])
def test_make_node_names_a_duration_chakra_cannot_hold(micros, said):
    # duration_micros=-10 raised protobuf's 'Value out of range: -10' and 10.5 "'float' object
    # cannot be interpreted as an integer", neither naming the field
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.types import COMP_NODE

    with pytest.raises(ValueError) as caught:
        make_node(1, "forward", COMP_NODE, duration_micros=micros)
    assert str(caught.value) == (f"make_node: duration_micros must be a whole number of microseconds >= 0 "
                                 f"(Chakra's uint64; got {said})")


def test_a_constraint_on_a_field_a_bundle_sets_is_told_to_name_the_bundle(tmp_path, capsys):
    # 'network.bandwidth > 150', where the bundles of axis machine set the bandwidth, was told
    # "uses unknown name(s) ['network']; known: " and some 30 figure names
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {
        "machine": {"named": {"s1": {"network.bandwidth": 100}, "s2": {"network.bandwidth": 200}}}},
        "constraints": ["network.bandwidth > 150"]}, "sw.yaml")
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: constraints[0]: 'network.bandwidth > 150' names network.bandwidth, which the bundles of "
        f"axis machine set; a constraint names the axis and its bundles (machine == 's1'), or give the field an "
        f"axis of its own"]
