"""Hunt 30b: NCCL's broadcast as a user's trace and a launcher bring it, NCCL variables exported
empty, LSF's jsrun and DeepSpeed's host list, attacked for wrong successes and misleading lines.
Each test failed before its fix."""

from __future__ import annotations

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import ALL_REDUCE, BROADCAST, COMM_COLL_NODE
from tests.scenario_files import TINY_GPT_ARGS, error_lines, megatron_scenario


def _broadcasts(folder, npus: int, duration_us: int = 0) -> str:
    """``npus`` traces of one 1 MiB BROADCAST each (a user's, without or with a duration)."""
    folder.mkdir()
    for rank in range(npus):
        write_et(str(folder / f"t.{rank}.et"), [make_node(1, "bcast", COMM_COLL_NODE, duration_micros=duration_us,
                                                          attrs={"is_cpu_op": False, "comm_type": BROADCAST,
                                                                 "comm_size": 1 << 20})])
    return str(folder / "t")


@pytest.mark.parametrize(("backend", "warned"), [("congestion_unaware", False), ("congestion_aware", True)])
def test_a_broadcast_nccls_model_times_is_not_said_to_take_1_ns(tmp_path, capsys, backend, warned):
    # before: on a cluster preset's analytical backend NCCL's model times a trace's broadcast
    # (1 MiB over 16 A100s: 43.9 us), and the run still warned that 'each takes 1 ns and its
    # bytes never cross the network'; where messages are played it is replayed, and said so
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": _broadcasts(tmp_path / "b", 16),
                                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}))
    assert main(["run", str(scenario), "--quiet", "--network-backend", backend]) == 0
    captured = capsys.readouterr()
    assert ("record no duration" in captured.err) == warned, captured.err
    assert captured.out.startswith("iteration time 1 ns" if warned else "iteration time 43,923 ns"), captured.out


@pytest.mark.parametrize("launcher", ["NCCL_ALGO= torchrun --nproc_per_node 8", "mpirun -np 8 -x NCCL_ALGO= -x NCCL_PROTO= python",
                                      "mpiexec -n 8 -genv NCCL_ALGO '' python",
                                      "NCCL_MIN_NCHANNELS= NCCL_NVLS_ENABLE= torchrun --nproc_per_node 8"])
def test_an_nccl_variable_exported_empty_runs_as_nccls_own_choice(tmp_path, capsys, launcher):
    # before: refused as setting NCCL_ALGO; NCCL reads an empty value as unset: its numbers
    # (ncclLoadParam: 'if (str && strlen(str) > 0)') and its lists (tuning.cc's parseList of
    # "" finds no token, so every algorithm stays enabled)
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}")
    plain = megatron_scenario(tmp_path, TINY_GPT_ARGS, name="plain.yaml")
    assert main(["run", plain, "--quiet"]) == 0
    expected = capsys.readouterr().out
    assert main(["run", path, "--quiet"]) == 0
    assert capsys.readouterr().out == expected


@pytest.mark.parametrize("launcher", ["mpirun -np 8 -x NCCL_ALGO python", "NCCL_ALGO=Tree torchrun --nproc_per_node 8",
                                      "srun --export=ALL,NCCL_ALGO=,NCCL_PROTO=Simple -n 8 python"])
def test_an_nccl_variable_with_a_value_or_the_callers_is_still_refused(tmp_path, capsys, launcher):
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}")
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "the pasted launcher sets NCCL_" in line and "drop it from the launcher's words" in line, line


@pytest.mark.parametrize(("launcher", "starts"), [
    # LSF: -n resource sets of -a tasks (1 by default), -r a host; or --np tasks in all
    ("jsrun -n 2 -a 1 -g 1 python", "starts 2 GPUs (-n 2 x -a 1), but the job runs on 8"),
    ("jsrun -n4 -a4 -g4 -r2 python", "starts 16 GPUs (-n 4 x -a 4 x -r 2), but the job runs on 8"),
    ("jsrun -n 2 -a 4 -r 1 python", "starts 4 GPUs a node (-n 2 x -a 4 x -r 1), but the cluster's nodes hold 8"),
    ("jsrun --np 16 python", "starts 16 GPUs (--np 16), but the job runs on 8"),
    # DeepSpeed's hosts, each on the GPUs it lists, or all of its node's
    ("deepspeed --include localhost:0,1,2,3", "starts 4 GPUs (--include localhost:0,1,2,3), but the job runs on 8"),
    ("deepspeed --include=a:0,1,2,3@b:0,1,2,3", "starts 4 GPUs a node (--include a:0,1,2,3@b:0,1,2,3), but the "
                                                "cluster's nodes hold 8"),
    ("deepspeed -i worker-0@worker-1", "starts 2 nodes (-i worker-0@worker-1), 16 GPUs at the cluster's 8 a node, "
                                       "but the job runs on 8")])
def test_jsruns_and_deepspeeds_host_list_counts_are_held_to_the_job(tmp_path, capsys, launcher, starts):
    # before: each ran the job's 8 GPUs in silence (jsrun was no launcher; --include was not read)
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}")
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert f"workload.args: the pasted launcher {starts}" in line, line


@pytest.mark.parametrize("launcher", ["jsrun -n 8 -a 1 -g 1 python", "jsrun -n1 -a8 -g8 -r1 python",
                                      "deepspeed --include localhost:0,1,2,3,4,5,6,7", "deepspeed -i worker-0"])
def test_jsrun_and_deepspeed_lines_that_start_the_jobs_gpus_run(tmp_path, capsys, launcher):
    path = megatron_scenario(tmp_path, f"{launcher} pretrain_gpt.py {TINY_GPT_ARGS}")
    assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err


def _user_trace_on_a_preset(tmp_path, npus: int = 16, **attrs) -> str:
    """A scenario of a user's traces (one 1 MiB collective each, ``attrs`` its node's) on 16 A100s."""
    folder = tmp_path / "b"
    folder.mkdir()
    for rank in range(npus):
        given = {k: v[rank] if isinstance(v, tuple) else v for k, v in attrs.items()}
        write_et(str(folder / f"t.{rank}.et"), [make_node(1, "coll", COMM_COLL_NODE, duration_micros=7, attrs={
            "is_cpu_op": False, "comm_type": BROADCAST, "comm_size": 1 << 20, **given})])
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": str(folder / "t"), "cluster": {"preset": "dgx-a100-80gb",
                                                                                     "gpus": npus}}))
    return str(scenario)


@pytest.mark.parametrize(("kind", "what", "why"), [
    (ALL_REDUCE, "an all_reduce", "the reference never finishes it"),
    (BROADCAST, "a broadcast", "NCCL's model, which times a preset's broadcasts, would give it 0 ns")])
def test_a_collective_nccls_model_times_over_no_dimension_is_refused(tmp_path, capsys, kind, what, why):
    # before: on a preset's analytical backend a collective whose involved_dim marks no
    # dimension ran in 0 ns ('iteration time 0 ns'), where the backends that play messages
    # refused it as having no other NPU to run with
    path = _user_trace_on_a_preset(tmp_path, comm_type=kind, involved_dim=[False, False])
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert line.endswith(f"t.0.et: node 1: involved_dim [false, false] marks none of the 2 dimension(s) {what} runs "
                         f"over, so it has no other NPU to run with ({why}); mark one true, or leave out involved_dim "
                         f"(all dimensions)"), line


def test_a_broadcasts_short_involved_dim_names_the_broadcast(tmp_path, capsys):
    # before: 'but this all-gather runs over 2' of a node that is a broadcast
    path = _user_trace_on_a_preset(tmp_path, involved_dim=[True])
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "node 1: involved_dim lists 1 dimension(s), but this broadcast runs over 2 " \
           "(its all-gather's, all-gather-implementation in " in line, line


def test_a_users_traces_on_a_preset_take_their_communicator_groups(tmp_path, capsys):
    # before: refused as 'a cluster's job brings its own communicator groups (tp, dp, pp...)',
    # which a user's traces do not: their pg_name groups could not be given. Each node's 8 GPUs
    # broadcast 1 MiB among themselves, timed as NCCL's ring broadcast in a node (by hand)
    from tests.test_nccl_broadcast import by_hand_ns

    path = _user_trace_on_a_preset(tmp_path, pg_name=tuple(str(1 + rank // 8) for rank in range(16)))
    with open(path, "a") as f:
        f.write(yaml.safe_dump({"comm_groups": {1: list(range(8)), 2: list(range(8, 16))}}))
    assert main(["run", path, "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"iteration time {by_hand_ns(1, 1 << 20):,} ns")


class _Holding:
    """A workload generator that is an object holding its data."""

    def __init__(self, data) -> None:
        self.data = data

    def __call__(self, params, prefix):
        return None


class _Shown:
    """A value of the user's whose repr shows its name, not all it holds."""

    def __init__(self, name: str, sizes: list[int]) -> None:
        self.name, self.sizes = name, sizes

    def __repr__(self) -> str:
        return f"Shown({self.name!r})"


def _pandas():
    return pytest.importorskip("pandas")


@pytest.mark.parametrize("make", [
    lambda change: _pandas().DataFrame({"bytes": [0] * 999 + [change] + [0] * 1000}),  # repr: 60 rows at most
    lambda change: _pandas().Series([0] * 999 + [change] + [0] * 1000),
    lambda change: _Shown("layers", [0] * 5 + [change])])
def test_a_generator_objects_key_reads_what_a_repr_leaves_out(make):
    # before: a pandas table or series was read by its repr, a summary past 60 rows; a user's
    # class by its own repr (which need not show all it holds): two generators that differ
    # inside had one cache key, and the second ran the first one's traces
    from simpy_astra.workloads.generator_inputs import held_digest

    assert held_digest(_Holding(make(0))) != held_digest(_Holding(make(1)))
    assert held_digest(_Holding(make(1))) == held_digest(_Holding(make(1)))  # alike, one key


class _StaticGenerator:
    """An observer whose ``__call__`` is a staticmethod generator: calling it makes a generator."""

    @staticmethod
    def __call__(node_id, now_ns):
        yield node_id


class _ClassGenerator:
    @classmethod
    def __call__(cls, node_id, now_ns):
        yield node_id


@pytest.mark.parametrize("watcher", [_StaticGenerator(), _ClassGenerator()])
def test_an_observer_whose_static_or_class_call_yields_is_refused(watcher):
    # before: plugins.call_makes read the class's __call__ as a function only, so a staticmethod
    # or classmethod generator was let in and ran none of its lines (every milestone dropped)
    from simpy_astra.engine.probes import check_watcher
    from simpy_astra.plugins import call_makes

    assert call_makes(watcher) == "a generator function"
    with pytest.raises(TypeError, match="is a generator function: called, it returns a generator and runs none"):
        check_watcher(watcher, "fn", ("node_id", "now_ns"), "sim.on('node_start')")


@pytest.mark.parametrize("width", [40, 57, 80])
def test_a_wide_coordinate_is_broken_by_the_columns_it_takes_and_its_figure_kept_whole(width):
    # before: a coordinate of wide characters (a path in Chinese) was measured by its characters,
    # half its columns: its progress line ran to 84 columns at COLUMNS=80 (65 at 40)
    from simpy_astra.report.widths import fit_wrapped, text_width

    head = "bandwidth=50 /tmp/sw/" + "全部归约" * 8 + "/step"
    lines = fit_wrapped([head], ": 142,780 ns", width, width - len("sweep: 1/4 done; "), indent="    ")
    widths = [text_width(line) for line in lines]
    assert max(widths[0] + len("sweep: 1/4 done; "), *widths[1:]) <= width, lines
    assert lines[-1].endswith(": 142,780 ns")  # the figure whole, after the coordinate's end
    assert "".join(line.strip() for line in lines).replace(" ", "") == (head + ": 142,780 ns").replace(" ", "")


def test_a_tied_points_line_is_wrapped_as_the_bests_is(tmp_path, capsys, monkeypatch):
    # before: 'tied with' kept each coordinate whole past the line (91 columns at COLUMNS=80,
    # where the best's line above it breaks a coordinate longer than a line); two workloads
    # alike in folders of long names tie
    import shutil

    from tests.scenario_files import SCENARIOS

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    folders = [tmp_path / ("a" * 70), tmp_path / ("b" * 70)]
    for folder in folders:
        shutil.copytree(SCENARIOS / "workloads" / "step_8npus_1MB", folder)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "tie", "base": str(SCENARIOS / "default.yaml"), "minimise": "finish_ns",
                                     "axes": {"workload": {"values": [str(f / "step") for f in folders], "as": "wl"}}}))
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    err = captured.err + captured.out
    assert "  tied with" in err, err
    tied = err[err.index("  tied with"):].splitlines()
    assert tied[0].startswith("  tied with wl=") and max(len(line) for line in tied[:3]) <= 80, tied


@pytest.mark.parametrize("kind", [ALL_REDUCE, BROADCAST])
def test_an_empty_collective_nccls_model_times_takes_no_time(tmp_path, capsys, kind):
    # before: a 0-byte all-reduce took 45,129 ns and a broadcast 29,230 (a launch and a latency);
    # NCCL discards an empty collective before it is enqueued (enqueue.cc's taskAppend: 'if
    # (info->count == 0) return ncclSuccess'): no kernel, no wait for the other ranks
    path = _user_trace_on_a_preset(tmp_path, comm_type=kind, comm_size=0)
    assert main(["run", path, "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("iteration time 0 ns")


def test_a_collective_whose_members_give_other_sizes_is_refused(tmp_path, capsys):
    # before: NCCL's model timed it by the last member's size, in silence (43,923 ns for a
    # broadcast whose NPU 0 said 1 byte); a real job's ranks must give one count
    path = _user_trace_on_a_preset(tmp_path, comm_size=tuple([1] + [1 << 20] * 15))
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "t.1.et: node 1: this broadcast moves 1,048,576 bytes (comm_size) on NPU 1, but 1 on NPU 0 (node 1 of " \
           in line and line.endswith("give its nodes one comm_size"), line


@pytest.mark.parametrize("seeded", [lambda seed: __import__("random").Random(seed),
                                    lambda seed: __import__("numpy").random.default_rng(seed),
                                    lambda seed: __import__("numpy").random.RandomState(seed)])
def test_a_generator_objects_key_reads_its_random_generators_seed(seeded):
    # before: a random generator was read by its repr, which names its kind alone
    # ('Generator(PCG64)', its address cut): a traffic generator seeded 1 and one seeded 2 had
    # one cache key, and the second ran the first one's traces
    from simpy_astra.workloads.generator_inputs import held_digest

    assert held_digest(_Holding(seeded(1))) != held_digest(_Holding(seeded(2)))
    assert held_digest(_Holding(seeded(1))) == held_digest(_Holding(seeded(1)))  # run to run, one key


@pytest.mark.parametrize("exported", ["'NCCL_ALGO=allreduce:tree;broadcast:ring'", "NCCL_ALGO=Ring,Tree", "NCCL_ALGO=^NVLS"])
def test_an_nccl_algo_list_is_not_told_to_become_one_forced_algorithm(tmp_path, capsys, exported):
    # before: 'give cluster.nccl_algo instead (ring, tree, nvls, ...)', which forces one
    # algorithm on every collective: NCCL 2.24's per-collective list (tuning.cc's parseList)
    # keeps the ring for broadcasts, and a forced tree stops at Megatron's batch broadcast
    path = megatron_scenario(tmp_path, f"{exported} torchrun --nproc_per_node 8 pretrain_gpt.py {TINY_GPT_ARGS}")
    (line,) = error_lines(capsys, ["run", path, "--quiet"])
    assert "cluster.nccl_algo forces one algorithm on every collective, and NCCL_ALGO=" in line, line
    assert "is not modelled: leave nccl_algo out for NCCL's own choice, or force one" in line


def test_a_sweep_named_in_wide_characters_keeps_its_first_line_within_the_width(tmp_path, capsys, monkeypatch):
    # before: 'sweep <name>: 4 points, running 4 on ...' was wrapped by its characters, half a
    # wide name's columns: 80 columns at COLUMNS=60
    from simpy_astra.report.widths import text_width
    from tests.scenario_files import SCENARIOS

    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"name": "全部归约的实现算法名称很长很长很长很长很长", "minimise": "finish_ns",
                                     "base": str(SCENARIOS / "default.yaml"), "axes": {"network.bandwidth": [50, 100]}},
                                    allow_unicode=True), encoding="utf-8")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 0
    first = capsys.readouterr().err.splitlines()[:2]
    assert first[0].startswith("sweep 全部") and max(text_width(line) for line in first) <= 60, first
