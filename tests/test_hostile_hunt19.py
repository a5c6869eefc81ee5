"""A nineteenth hunt for inputs that ran as something other than what they say: each is now
refused in one line naming the file, the field and the fix, warned of, or runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.scenario_files import megatron_scenario, write_yaml
from tests.wrapped_lines import plain


def _step(tmp_path: Path, capsys, extra: str) -> tuple[str, list[str]]:
    """The headline of ``ARGS + extra`` on 8 A100s, and its warnings (one line each)."""
    assert main(["run", megatron_scenario(tmp_path, f"{ARGS} {extra}"), "--quiet"]) == 0
    captured = capsys.readouterr()
    return captured.out, [line for line in plain(captured.err).splitlines() if line.startswith("warning:")]


def test_yarn_runs_its_rotary_embedding_unfused_as_megatron_does(tmp_path, capsys):
    # Megatron fuses plain rope only (validate_args: apply_rope_fusion = False for any other
    # type), yet a YaRN step was timed with the fused kernel, as fast as rope's
    yarn, _ = _step(tmp_path, capsys, "--position-embedding-type yarn")
    rope, _ = _step(tmp_path, capsys, "--position-embedding-type rope")
    unfused, _ = _step(tmp_path, capsys, "--position-embedding-type rope --no-rope-fusion")
    assert yarn != rope and yarn == unfused


@pytest.mark.parametrize(("extra", "without", "flag", "why"), [
    ("--ddp-bucket-size 1000", "", "--ddp-bucket-size", "without --overlap-grad-reduce"),
    ("--no-rope-fusion", "", "--no-rope-fusion", "without --position-embedding-type rope"),
    ("--position-embedding-type yarn --no-rope-fusion", "--position-embedding-type yarn", "--no-rope-fusion",
     "without --position-embedding-type rope"),
    ("--fp8-recipe tensorwise", "", "--fp8-recipe", "without --fp8-format"),
    ("--fp8-recipe mxfp8", "", "--fp8-recipe", "without --fp8-format"),  # was refused as not modelled
    ("--no-bias-swiglu-fusion", "", "--no-bias-swiglu-fusion", "without --swiglu"),
    ("--swiglu --no-bias-gelu-fusion", "--swiglu", "--no-bias-gelu-fusion", "with --swiglu"),
])
def test_an_argument_megatron_reads_only_beside_another_is_warned_of(tmp_path, capsys, extra, without, flag, why):
    # each ran in silence, its step the one without it: a sweep over it drew a flat line
    said, warnings = _step(tmp_path, capsys, extra)
    assert len(warnings) == 1 and f"workload.args: {flag} changes nothing {why}" in warnings[0], warnings
    assert said == _step(tmp_path, capsys, without)[0]


def test_a_bucket_size_with_overlapped_gradients_is_read_and_not_warned_of(tmp_path, capsys):
    bucketed, warnings = _step(tmp_path, capsys, "--overlap-grad-reduce --ddp-bucket-size 1000")
    assert not warnings
    one, _ = _step(tmp_path, capsys, "--overlap-grad-reduce")
    assert bucketed != one


def _sweep(tmp_path: Path, axes: dict, **more) -> str:
    base = megatron_scenario(tmp_path, name="base.yaml")
    return write_yaml(tmp_path, {"base": base, "axes": axes, **more}, "sweep.yaml")


def _listed(capsys, sweep: str) -> list[str]:
    """The points ``sweep --list`` prints, by their coordinates."""
    assert main(["sweep", sweep, "--list"]) == 0
    return [line.split(" ", 1)[1] for line in capsys.readouterr().out.splitlines()[1:]]


@pytest.mark.parametrize(("axes", "constraint", "kept"), [
    ({"cluster.nccl_algo": [None, "ring", "tree"]}, "nccl_algo == null", ["nccl_algo=null"]),
    ({"cluster.nccl_algo": [None, "ring", "tree"]}, "nccl_algo != null", ["nccl_algo=ring", "nccl_algo=tree"]),
    ({"cluster.nvls": [True, False]}, "nvls == false", ["nvls=off"]),
])
def test_a_constraint_may_name_null_true_and_false_as_the_sweep_writes_them(tmp_path, capsys, axes, constraint, kept):
    # --list shows 'nccl_algo=null', yet 'nccl_algo == null' was refused with a list of 40 known
    # names and None as a constant not allowed: no expression could keep NCCL's choice
    assert _listed(capsys, _sweep(tmp_path, axes, constraints=[constraint])) == kept


def test_an_axis_value_spelt_as_a_yaml_word_is_told_to_be_quoted(tmp_path, capsys):
    sweep = _sweep(tmp_path, {"machine": {"named": {"null": {"cluster.gpus": 8}, "big": {"cluster.gpus": 16}}}},
                   constraints=["machine != null"])
    assert main(["sweep", sweep, "--list"]) == 2
    assert "quote it: machine != 'null'" in capsys.readouterr().err


def test_an_axis_called_as_a_yaml_word_is_refused(tmp_path, capsys):
    sweep = _sweep(tmp_path, {"cluster.nccl_algo": {"values": ["ring", "tree"], "as": "null"}})
    assert main(["sweep", sweep, "--list"]) == 2
    assert "its name in expressions, 'null', is a YAML word" in capsys.readouterr().err


def test_sweep_points_differing_only_in_a_share_their_algorithm_never_reads_run_once(tmp_path, capsys):
    # nccl_tree_efficiency 0.5 and 1.0 beside nccl_algo: nvls ran as two rows of one step, the
    # first crowned best of a tie, though the run itself says the share changes nothing there
    axes = {"cluster.nccl_algo": [None, "nvls"], "cluster.nccl_tree_efficiency": [0.5, 1.0]}
    sweep = write_yaml(tmp_path, {"base": megatron_scenario(tmp_path, name="base.yaml", preset="dgx-h100", gpus=16),
                                  "axes": axes}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    points = [line.split(" ", 1)[1] for line in captured.out.splitlines()[1:]]
    assert points == ["nccl_algo=null nccl_tree_efficiency=0.5", "nccl_algo=null nccl_tree_efficiency=1.0",
                      "nccl_algo=nvls nccl_tree_efficiency=0.5"]
    assert "cluster.nccl_tree_efficiency changes nothing where nccl_algo forces nvls" in " ".join(captured.err.split())


def test_the_flex_dispatcher_on_one_expert_rank_is_refused_as_megatron_refuses_it(tmp_path, capsys):
    # Megatron's DeepEP backend asserts TPxEP > 1 when it builds the dispatcher; the step ran
    moe = f"{ARGS} --num-experts 4 --moe-token-dispatcher-type flex"
    assert main(["run", megatron_scenario(tmp_path, moe), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workload.args: --moe-token-dispatcher-type flex" in err[0] and \
        "DeepEP dispatcher requires TPxEP > 1" in err[0], err
    assert main(["run", megatron_scenario(tmp_path, f"{moe} --expert-model-parallel-size 2"), "--quiet"]) == 0


def test_no_experts_is_a_dense_model_as_megatron_reads_it(tmp_path, capsys):
    # validate_args: 'if args.num_experts == 0: args.num_experts = None'; it was refused as
    # 'must be an integer >= 1', so a sweep over num-experts [0, 8] (dense against MoE) failed
    dense, warnings = _step(tmp_path, capsys, "--num-experts 0")
    assert dense == _step(tmp_path, capsys, "")[0] and not warnings
    said, warnings = _step(tmp_path, capsys, "--num-experts 0 --moe-grouped-gemm")
    assert said == dense and "--moe-grouped-gemm changes nothing without --num-experts" in warnings[0]


@pytest.mark.parametrize(("register", "said"), [
    ("collectives.register('', ring)", "collective algorithm name '' is not one a config can give"),
    ("collectives.register(' myring', ring)", "collective algorithm name ' myring' is not one a config can give"),
    ("collectives.register(7, ring)", "collective algorithm name 7 is an int, not a string"),
    ("topologies.register('', Ring)", "topology name '' is not one a config can give"),
])
def test_a_plugin_registering_under_a_name_no_config_can_give_is_told(tmp_path, capsys, monkeypatch, register, said):
    # each registered in silence, and no system JSON or network YAML could ever select it
    (tmp_path / "names19.py").write_text(
        "from simpy_astra import collectives, topologies\nfrom simpy_astra.topologies.ring import Ring\n\n\n"
        f"def ring(ctx):\n    yield ctx.timeout(0)\n\n\n{register}\n")
    monkeypatch.chdir(tmp_path)
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "default.yaml"
    assert main(["run", str(scenario), "--plugin", "names19", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "names19" in err[0] and said in err[0], err


def _fat_tree_with(tmp_path: Path, link: dict) -> str:
    """scenarios/fat_tree_all_to_all.yaml with its first leaf-spine link replaced by ``link``."""
    scenarios = Path(__file__).resolve().parent.parent / "scenarios"
    doc = yaml.safe_load((scenarios / "fat_tree_all_to_all.yaml").read_text())
    doc["workload"] = str(scenarios / doc["workload"])
    doc["network"]["graph"]["links"][16] = {"between": ["leaf0", "spine0"], **link}
    return write_yaml(tmp_path, doc)


@pytest.mark.parametrize(("link", "backend", "said"), [
    ({"latency": 1e300}, "congestion_aware", "field 'graph.links[16].latency' is 1e+300 ns per hop, past the horizon"),
    ({"latency": 1e300}, "packet", "field 'graph.links[16].latency' is 1e+300 ns per hop, past the horizon"),
    ({"bandwidth": 1e-300}, "packet", "field 'graph.links[16].bandwidth' is so low that 1 byte(s) would take past "
                                      "the horizon"),
])
def test_a_graph_links_own_latency_or_bandwidth_past_the_horizon_is_refused(tmp_path, capsys, link, backend, said):
    # a link's own latency of 1e300 ns stopped the run as 'internal error ... a simpy-astra bug',
    # and a bandwidth of 1e-300 GB/s hung the packet backend; a dimension's were refused already
    assert main(["run", _fat_tree_with(tmp_path, link), "--quiet", "--network-backend", backend]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 's.yaml'}: network: {said}"), err


def test_a_packet_timer_past_two_to_the_53_ns_fires_after_now():
    # a delay rounded away by a float at such a time re-fired in the same instant with nothing
    # changed, for ever: a fat tree with one link of 1e-12 GB/s hung the packet backend
    from simpy_astra.network.packet.trains import instant_after

    now = 5 * 10**18
    assert float(now) + 0.5 == float(now)  # the fraction a float cannot hold there
    assert instant_after(now, 0.5) == now + 1 and instant_after(now, 1e-12) == now
    assert instant_after(1000, 0.5) == 1001 and instant_after(1000, 2.0) == 1002  # as before below 2^53
