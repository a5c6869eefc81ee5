"""A cluster's route latencies (``nvlink_latency_ns``, ``inter_node_latency_ns``) are read
only by messages the network plays one by one: pipeline sends and all-to-alls. On the
analytical backend NCCL's model times every all-reduce, reduce-scatter and all-gather with
latencies of its own, so a job that sends neither (pp 1, no all-to-all) runs the same step
without them: that is said, and a sweep over them runs once. A job that plays messages (pp 2,
MoE's all-to-all dispatch, Ulysses' context parallelism) reads those of the links its messages
cross: nothing is said of those, and its figures move."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.scenario_workload import prepare_workload
from simpy_astra.workloads.transformer.graph import COLL, RECV, SEND
from tests.scenario_files import (
    SMALL_GPT_ARGS,
    custom_ring,
    headline_and_warnings,
    megatron_scenario,
    megatron_sweep,
    write_yaml,
)

H100S = {"preset": "dgx-h100", "gpus": 16}
PP1 = SMALL_GPT_ARGS.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 1")
MOE = PP1 + " --num-experts 4 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall --disable-bias-linear --sequence-parallel"
ULYSSES = PP1 + " --context-parallel-size 2 --cp-comm-type a2a"
RING = PP1 + " --context-parallel-size 2 --cp-comm-type p2p"
SLOW = {"nvlink_latency_ns": 200_000, "inter_node_latency_ns": 400_000}


def test_latencies_a_pp1_job_never_reads_are_said_to_change_nothing(tmp_path, capsys):
    # before: both latencies 100x the preset's ran the same step as the preset's, in silence
    plain = headline_and_warnings(capsys, megatron_scenario(tmp_path, PP1, "plain.yaml", **H100S))
    assert plain[1] == []
    path = megatron_scenario(tmp_path, PP1, "slow.yaml", **H100S, **SLOW)
    assert headline_and_warnings(capsys, path) == (plain[0], [
        f"warning: {path}: cluster.{key} changes nothing here: it is read only by messages the network plays "
        f"one by one (pipeline sends, all-to-alls), and this job sends none (NCCL's model times its "
        f"all-reduces, reduce-scatters and all-gathers)" for key in ("nvlink_latency_ns", "inter_node_latency_ns")])


@pytest.mark.parametrize("args", [SMALL_GPT_ARGS, MOE, ULYSSES], ids=["pp2", "moe-alltoall", "cp-a2a"])
def test_a_job_that_plays_messages_reads_its_latencies(tmp_path, capsys, args):
    plain = headline_and_warnings(capsys, megatron_scenario(tmp_path, args, "plain.yaml", **H100S))
    path = megatron_scenario(tmp_path, args, "slow.yaml", **H100S, **SLOW)
    slow = headline_and_warnings(capsys, path)
    # pp 2's stages are a node apart: each send stays on its rail, so NVLink's latency is not read
    # (tests/test_hostile_hunt26b.py); MoE's ep 2 and Ulysses' cp 2 (ranks 2 apart at tp 2) stay
    # in their node, so the rails' is not (tests/test_hostile_hunt28.py)
    read_by = "the network plays one by one (pipeline sends, all-to-alls), and none of this job's"
    unread = {SMALL_GPT_ARGS: f"nvlink_latency_ns changes nothing here: it is read only by messages {read_by} crosses "
                              f"NVLink (each leaves its node on its own rail)",
              MOE: f"inter_node_latency_ns changes nothing here: it is read only by messages {read_by} leaves its node"}
    unread[ULYSSES] = unread[MOE]
    assert plain[1] == [] and slow[1] == ([f"warning: {path}: cluster.{unread[args]}"] if args in unread else [])
    assert slow[0] != plain[0]


def test_a_sweep_over_latencies_a_pp1_job_never_reads_runs_once(tmp_path, capsys):
    sweep = megatron_sweep(tmp_path, {"cluster.inter_node_latency_ns": [2000, 400_000]}, args=PP1)
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")
    sweep = megatron_sweep(tmp_path, {"cluster.inter_node_latency_ns": [2000, 400_000]})  # pp 2 reads it
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")


@pytest.mark.parametrize("args", [PP1, SMALL_GPT_ARGS, MOE, ULYSSES, RING])
def test_plays_messages_is_what_the_trace_holds(tmp_path, args):
    # the layout says it before any trace is built: check it against the stage graphs themselves
    cluster = load_cluster(H100S, "cluster")
    prepared = prepare_workload(str(tmp_path / "s.yaml"), {"generate": "megatron", "args": args}, cluster)
    all_to_all = 6  # Chakra's
    played = any(op.kind in (SEND, RECV) or op.kind == COLL and op.comm_type == all_to_all
                 for graph in prepared.job.graphs for op in graph.ops)
    assert prepared.layout().plays_messages is played


def test_a_backend_that_plays_collectives_as_messages_reads_them_at_pp1(tmp_path, capsys):
    # congestion_aware plays every all-reduce message by message, on the routes' latencies
    docs = [{"workload": {"generate": "megatron", "args": PP1}, "cluster": {**H100S, **extra},
             "backend": "congestion_aware"} for extra in ({}, SLOW)]
    plain, slow = (headline_and_warnings(capsys, write_yaml(tmp_path, doc, f"{n}.yaml"))
                   for n, doc in enumerate(docs))
    assert slow[1] == plain[1] == []
    assert slow[0] != plain[0]


def test_beside_a_system_of_its_own_latencies_are_said_unless_it_plays_a_custom_collective(tmp_path, capsys):
    # before: a scenario's own system silenced the warning, though NCCL's model times its
    # all-reduces as it does the preset's (a system naming other algorithms is refused): both
    # latencies 100x ran the same step in silence. A custom collective (``*-implementation-custom``)
    # is played as messages on the routes: there they move the step, and nothing is said
    system = load_cluster(H100S, "cluster").system_mapping()
    custom = {**system, "all-reduce-implementation-custom": [custom_ring(tmp_path, 16)]}
    runs = {}
    for name, sys_doc in (("own", system), ("custom", custom)):
        runs[name] = [headline_and_warnings(capsys, write_yaml(
            tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20},
                       "cluster": {**H100S, **extra}, "system": sys_doc}, f"{name}{n}.yaml"))
            for n, extra in enumerate(({}, SLOW))]
    (plain, _), (slow, said) = runs["own"]
    assert slow == plain and [line.split(": ")[2].split()[0] for line in said] == [
        "cluster.nvlink_latency_ns", "cluster.inter_node_latency_ns"]
    (plain, quiet), (slow, said) = runs["custom"]
    assert quiet == said == [] and slow != plain
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": PP1}, "cluster": {**H100S, **SLOW},
                                 "system": system})
    assert len(headline_and_warnings(capsys, path)[1]) == 2


TRANSFORMER = {"generate": "transformer", "dp": 4, "tp": 4, "dmodel": 1024, "dff": 4096, "head": 16,
               "num_stacks": 2, "seq": 1024, "batch": 16, "micro_batch": 4}


@pytest.mark.parametrize("shape", [{}, {"pp": 2, "dp": 2}, {"sp": 2, "dp": 2},
                                   {"model": "moe", "experts": 4, "ep": 2}, {"model": "moe", "experts": 4}],
                         ids=["pp1", "pp2", "sp2", "moe-ep2", "moe-ep1"])
def test_the_transformer_declares_what_its_trace_holds(tmp_path, shape):
    # before: it declared nothing, so it played messages for all the loader knew
    from simpy_astra.workloads.transformer.generator import _build

    spec = {**TRANSFORMER, **shape}
    prepared = prepare_workload(str(tmp_path / "s.yaml"), spec, None)
    _cfg, _layout, graphs = _build({k: v for k, v in spec.items() if k != "generate"})
    all_to_all = 6  # Chakra's
    played = any(op.kind in (SEND, RECV) or op.kind == COLL and op.comm_type == all_to_all
                 for graph in graphs for op in graph.ops)
    assert prepared.layout().plays_messages is played


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"])
def test_a_microbenchmark_declares_what_its_trace_holds(tmp_path, collective):
    from simpy_astra.workloads.chakra import read_et_prefix
    from simpy_astra.workloads.chakra.schema import ALL_TO_ALL, COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE
    from simpy_astra.workloads.microbench import write_microbench

    ends = {"src": 0, "dst": 3} if collective == "send_recv" else {}
    write_microbench(collective, 4096, 4, str(tmp_path / "mb"), **ends)
    played = any(node.type in (COMM_SEND_NODE, COMM_RECV_NODE)
                 or node.type == COMM_COLL_NODE and node.get_int("comm_type") == ALL_TO_ALL
                 for nodes in read_et_prefix(str(tmp_path / "mb"), 4) for node in nodes)
    spec = {"generate": "microbench", "collective": collective, "size": 4096, "num_npus": 4, **ends}
    assert prepare_workload(str(tmp_path / "s.yaml"), spec, None).layout().plays_messages is played


@pytest.mark.parametrize("strategy", ["DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA"])
def test_gemm_declares_what_its_trace_holds(tmp_path, strategy):
    # its traces from the tutorial's text workload with made-up cycles (SCALE-Sim's are not needed)
    from simpy_astra.workloads import gemm
    from simpy_astra.workloads.chakra import read_et_prefix
    from simpy_astra.workloads.chakra.schema import ALL_TO_ALL, COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE

    layers = (gemm.GemmLayer("a", 64, 32, 16), gemm.GemmLayer("b", 64, 16, 32))
    work = gemm.GemmWorkload(strategy, layers, tuple({p: 100 for p in gemm.PASSES} for _ in layers),
                             tuple(gemm.collectives(layer, strategy, 4, 2 if "HYBRID" in strategy else 1, 2)
                                   for layer in layers))
    gemm.write(work, str(tmp_path / "g"), 4)
    played = any(node.type in (COMM_SEND_NODE, COMM_RECV_NODE)
                 or node.type == COMM_COLL_NODE and node.get_int("comm_type") == ALL_TO_ALL
                 for nodes in read_et_prefix(str(tmp_path / "g"), 4) for node in nodes)
    spec = {"generate": "gemm", "mnk": "x.csv", "parallel": strategy, "num_npus": 4}
    assert prepare_workload(str(tmp_path / "s.yaml"), spec, None).layout().plays_messages is played


def test_a_transformer_and_a_microbenchmark_say_latencies_they_never_read(tmp_path, capsys):
    # before: both ran the same step with the latencies 100x in silence, and a sweep over
    # them ran both points
    system = {**load_cluster(H100S, "cluster").system_mapping(), "roofline-enabled": 1, "peak-perf": 900,
              "local-mem-bw": 3000}
    for workload, extra in ((TRANSFORMER, {"system": system}),
                            ({"generate": "microbench", "collective": "all_reduce", "size": 1 << 20}, {})):
        plain, slow = (headline_and_warnings(capsys, write_yaml(
            tmp_path, {"workload": workload, "cluster": {**H100S, **latencies}, **extra}, f"{n}.yaml"))
            for n, latencies in enumerate(({}, SLOW)))
        assert slow[0] == plain[0] and plain[1] == [] and len(slow[1]) == 2
        sweep = write_yaml(tmp_path, {"base": {"workload": workload, "cluster": H100S, **extra},
                                      "axes": {"cluster.inter_node_latency_ns": [2000, 400_000]},
                                      "minimise": "finish_ns"}, "sweep.yaml")
        assert main(["sweep", sweep, "--list"]) == 0
        assert capsys.readouterr().out.startswith("1 point\n")
    sweep = write_yaml(tmp_path, {"base": {"workload": {**TRANSFORMER, "pp": 2, "dp": 2}, "cluster": H100S,
                                           "system": system},
                                  "axes": {"cluster.inter_node_latency_ns": [2000, 400_000]},
                                  "minimise": "finish_ns"}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")
