"""A twenty-seventh hunt: inputs wrong in new ways, and the leftovers of the twenty-sixth. Each
test failed before its fix: a wrong success, a figure that was not the input's, a traceback, or
a message naming no place or no fix."""

from __future__ import annotations

import shutil

from simpy_astra.cli.main import main
from simpy_astra.infra.horizon import HORIZON_NS
from tests.scenario_files import DEFAULT, SCENARIOS, SMALL_GPT_ARGS, error_lines, megatron_sweep, write_yaml

EXAMPLES = SCENARIOS.parent / "examples"


def _pipeline_job(tmp_path, start_ns: int) -> str:
    """A 4-stage pipeline job (examples/pipeline_gen.py: stage s finishes at about s x 11.7 us,
    the last at 45,160 ns) on 4 NPUs of an 8-NPU ring, started at ``start_ns``."""
    shutil.copy(EXAMPLES / "pipeline_gen.py", tmp_path / "pipeline_gen.py")
    network = {**DEFAULT["network"], "topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0],
               "latency": [500.0]}
    job = {"name": "a", "workload": {"generate": "pipeline_gen:pipeline", "stages": 4, "size": 65536,
                                     "compute_us": 10}, "npus": [0, 1, 2, 3], "start_ns": start_ns}
    return write_yaml(tmp_path, {"system": DEFAULT["system"], "network": network,
                                 "backend": "congestion_unaware", "jobs": [job]}, f"start{start_ns}.yaml")


def test_a_job_started_too_late_is_told_the_start_its_last_npu_fits(tmp_path, capsys):
    # before: the first NPU past the horizon (stage 1, 23,440 ns) set the latest start, and the
    # start told then failed again at the last stage (45,160 ns: 4 x 10 us + 3 x 1,720 ns)
    runs_ns = 4 * 10_000 + 3 * (500 + int(65536 / 50 / 2**30 * 1e9))
    late = _pipeline_job(tmp_path, HORIZON_NS - 20_000)
    assert error_lines(capsys, ["run", late, "--quiet"])[-1].endswith(
        f"runs {runs_ns:,} ns, past 2^63 ns (292 years), the simulated time's limit; start it at most "
        f"{HORIZON_NS - runs_ns:,} ns")
    assert main(["run", _pipeline_job(tmp_path, HORIZON_NS - runs_ns), "--quiet"]) == 0
    assert main(["run", _pipeline_job(tmp_path, HORIZON_NS - runs_ns + 1), "--quiet"]) == 2


MOE_ARGS = SMALL_GPT_ARGS + (" --num-experts 4 --moe-token-dispatcher-type alltoall --disable-bias-linear "
                             "--sequence-parallel")


def test_a_sweep_over_expert_parallelism_runs_its_all_to_alls_at_each_nvlink_latency(tmp_path, capsys):
    # before: the ep=1 point (each pipeline send on its own rail: NVLink's latency unread) was
    # read for the ep=2 points too (one rank grid), so ep=2 at 1e9 ns ran once, as at 1 ns:
    # 48.5 ms for a step whose all-to-alls over NVLink take 288 s at that latency
    sweep = megatron_sweep(tmp_path, {"workload.args.--expert-model-parallel-size": [1, 2],
                                      "cluster.nvlink_latency_ns": [1, 10**9]}, args=MOE_ARGS)
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 points" and [line.split()[1:] for line in out[1:4]] == [
        ["ep=1", "nvlink_latency_ns=1"], ["ep=2", "nvlink_latency_ns=1"], ["ep=2", "nvlink_latency_ns=1000000000"]]
