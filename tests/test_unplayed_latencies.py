"""A cluster's route latencies (``nvlink_latency_ns``, ``inter_node_latency_ns``) are read
only by messages the network plays one by one: pipeline sends and all-to-alls. On the
analytical backend NCCL's model times every all-reduce, reduce-scatter and all-gather with
latencies of its own, so a job that sends neither (pp 1, no all-to-all) runs the same step
without them: that is said, and a sweep over them runs once. A job that plays messages (pp 2,
MoE's all-to-all dispatch, Ulysses' context parallelism) reads them: nothing is said, and its
figures move."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.scenario_workload import prepare_workload
from simpy_astra.workloads.transformer.graph import COLL, RECV, SEND
from tests.scenario_files import (
    SMALL_GPT_ARGS,
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
    slow = headline_and_warnings(capsys, megatron_scenario(tmp_path, args, "slow.yaml", **H100S, **SLOW))
    assert slow[1] == plain[1] == []
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


def test_beside_a_system_of_its_own_nothing_is_said(tmp_path, capsys):
    # a scenario's system may name a custom algorithm (``*-implementation-custom``) whose steps the
    # network plays as messages: the loader does not read it, so it says nothing of the latencies
    system = load_cluster(H100S, "cluster").system_mapping()
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": PP1}, "cluster": {**H100S, **SLOW},
                                 "system": system})
    assert headline_and_warnings(capsys, path)[1] == []
