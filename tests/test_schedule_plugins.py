"""A pipeline schedule of one's own runs a Megatron job from a scenario, as docs/megatron.md
shows (``workload: {generate: megatron, schedule: NAME}``, a plug-in registering NAME or
``package.module:function``), with no test-only patching; one out of contract is one line
naming ``workload.schedule``. The step times are the closed forms of
``tests/test_pipeline_schedules.py`` (tf + tb per task from the kernel model, Adam streamed)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from tests.test_pipeline_schedules import PIPE, M, P, _task_and_optimizer_s

USER = textwrap.dedent('''
    from simpy_astra.workloads.schedules import registry
    from simpy_astra.workloads.schedules.task import Kind, Task


    def one_at_a_time(stage, pp, micro_batches, chunks):
        return [Task(k, m, 0) for m in range(micro_batches) for k in (Kind.FORWARD, Kind.BACKWARD)]


    def forwards_only(stage, pp, micro_batches, chunks):
        return [Task(Kind.FORWARD, m, 0) for m in range(micro_batches)]


    def raises(stage, pp, micro_batches, chunks):
        raise RuntimeError("no plan")


    def two_args(stage, pp):
        return []


    registry.register("sp-one-at-a-time", one_at_a_time)
''')


@pytest.fixture
def user(tmp_path, monkeypatch):
    from simpy_astra.workloads.schedules import registry

    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    sys.modules.pop("sp_user", None)
    (tmp_path / "sp_user.py").write_text(USER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    return tmp_path


def scenario(folder, schedule: str, plugins: bool = True) -> str:
    path = folder / "s.yaml"
    doc = {"workload": {"generate": "megatron", "schedule": schedule, "args": PIPE},
           "cluster": {"preset": "dgx-a100-80gb", "gpus": P}, **({"plugins": ["sp_user"]} if plugins else {})}
    path.write_text(json.dumps(doc))
    return str(path)


def step_s(capsys, path: str) -> float:
    assert main(["run", path, "--quiet"]) == 0
    value, unit = capsys.readouterr().out.split()[2:4]  # 'iteration time 495.947 ms, ...'
    return float(value.replace(",", "")) * {"s,": 1.0, "ms,": 1e-3, "us,": 1e-6}[unit]


@pytest.mark.parametrize("name, plugins", [("sp-one-at-a-time", True), ("sp_user:one_at_a_time", False)])
def test_a_schedule_of_ones_own_sets_the_megatron_step(user, capsys, name, plugins):
    """Micro-batches one at a time: m p (tf + tb) + Adam, against 1F1B's (m + p - 1)(tf + tb) +
    Adam. Before, 'workload: unknown parameter 'schedule''."""
    task, optimizer = _task_and_optimizer_s()
    assert step_s(capsys, scenario(user, name, plugins)) == pytest.approx(M * P * task + optimizer, rel=0.03)
    assert step_s(capsys, scenario(user, "1f1b")) == pytest.approx((M + P - 1) * task + optimizer, rel=0.03)


def test_an_edited_schedule_runs_again(user, capsys):
    """The trace cache is keyed by the schedule's source: the same name, now 1F1B's order
    written out by hand (here: every forward, then every backward, GPipe, whose bubble is
    1F1B's), gives 1F1B's step, not the cached one-at-a-time trace."""
    task, optimizer = _task_and_optimizer_s()
    path = scenario(user, "sp_user:one_at_a_time", plugins=False)
    assert step_s(capsys, path) == pytest.approx(M * P * task + optimizer, rel=0.03)
    code = USER.replace("[Task(k, m, 0) for m in range(micro_batches) for k in (Kind.FORWARD, Kind.BACKWARD)]",
                        "[Task(k, m, 0) for k in (Kind.FORWARD, Kind.BACKWARD) for m in range(micro_batches)]")
    (user / "sp_user.py").write_text(code)
    sys.modules.pop("sp_user", None)
    from simpy_astra.workloads.schedules import registry

    registry.SCHEDULES.pop("sp_user:one_at_a_time")
    assert step_s(capsys, path) == pytest.approx((M + P - 1) * task + optimizer, rel=0.03)


@pytest.mark.parametrize("name, words", [
    ("sp_user:forwards_only", "pipeline schedule 'sp_user:forwards_only': for stage 0 of 4 (8 micro-batches, "
                              "1 chunk(s)) it returned micro-batch 0, chunk 0 forwarded 1 time(s) and backwarded 0"),
    ("sp_user:raises", "pipeline schedule 'sp_user:raises' raised RuntimeError: no plan (at "),
    ("sp_user:two_args", "two_args(stage, pp) cannot be called as fn(stage, pp, micro_batches, chunks)"),
    ("gpipe", "unknown pipeline schedule 'gpipe'; known: 1f1b, interleaved-1f1b, sp-one-at-a-time, zb-h1, zb-v "
              "(or package.module:function)"),
    # misspellings get the did-you-mean every other field's do (config/unknown_keys.py nearest_key)
    ("zb-hl", "unknown pipeline schedule 'zb-hl'; did you mean 'zb-h1'? (or package.module:function)"),
    ("1F1B", "unknown pipeline schedule '1F1B'; did you mean '1f1b'?"),
    ("interleaved_1f1b", "did you mean 'interleaved-1f1b'?"),
])
def test_a_schedule_out_of_contract_is_one_line_naming_the_field(user, capsys, name, words):
    assert main(["run", scenario(user, name), "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "s.yaml: workload.schedule: " in err[0], err
    assert words in err[0], err[0]
