"""Sweeps of real jobs and the console, round 4: a design-space study of Megatron-LM layouts
and cluster fields over dgx-a100-80gb and dgx-h100, as a researcher writes it."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.sweep import main as sweep_main
from tests.scenario_files import SMALL_GPT_ARGS, megatron_sweep

pytestmark = pytest.mark.usefixtures("own_cache")


def rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- null on a cluster axis
def test_null_on_an_optional_cluster_axis_runs_the_presets_value(tmp_path, capsys):
    """docs/sweeps.md: null in a cluster axis leaves the field out. 'cluster.nvls: [null,
    true]' (the preset's say, then forced on) was refused before any point ran, 'must be true
    or false ... got None', and so was null on oversubscription. Now the null point runs as the
    preset (the H100 preset has NVLS; off is another step; on would be the null point's step:
    test_points_that_load_alike_run_once)."""
    path = megatron_sweep(tmp_path, {"cluster.nvls": [None, False]})
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    got = rows(out)
    assert [(r["cluster.nvls"], r["status"]) for r in got] == [("null", "ok"), ("false", "ok")]
    capsys.readouterr()
    path = megatron_sweep(tmp_path, {"cluster.oversubscription": [None, 2]}, cluster={"preset": "dgx-a100-80gb",
                                                                                   "gpus": 16})
    assert sweep_main([path, "--list"]) == 0
    assert "oversubscription=null" in capsys.readouterr().out


@pytest.mark.parametrize("key, fix", [("gpus", "give a GPU count instead"),
                                      ("preset", "give a preset name or file instead")])
def test_null_on_a_cluster_field_every_cluster_needs_says_so(tmp_path, capsys, key, fix):
    """Null leaves a field out; on gpus or preset every point would fail. The refusal said
    'must be a positive integer (got None)'; now it says what null does and what to write."""
    value = 16 if key == "gpus" else "dgx-h100"
    from simpy_astra.cli.main import main

    path = megatron_sweep(tmp_path, {f"cluster.{key}": [None, value]})
    assert main(["sweep", path, "--list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert f"axes: cluster.{key}: null leaves cluster.{key} out, and every cluster needs one; {fix}" in err
    assert "None" not in err


# ---------------------------------------------------------------- a failed point's words
def test_a_failed_points_error_names_null_as_the_sweep_file_writes_it(tmp_path, capsys):
    """A point that fails (12 GPUs in nodes of 8) is named in its error in results.csv and in
    --list's 'will fail' lines. Its null coordinate read 'cluster.nccl_algo=None', Python's
    word, though every table says null; now 'cluster.nccl_algo=null', as in the sweep file."""
    args = SMALL_GPT_ARGS.replace("--global-batch-size 64", "--global-batch-size 48")  # 12 GPUs: dp 3, a valid layout
    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": [None, "ring"], "cluster.gpus": [12]}, args=args)
    assert sweep_main([path, "--list"]) == 0
    listed = capsys.readouterr()
    said = " ".join((listed.out + listed.err).split())
    assert "point cluster.nccl_algo=null cluster.gpus=12: cluster.gpus: 12 GPUs do not fill" in said
    assert "=None" not in said
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 4  # every point failed
    errors = [r["error"] for r in rows(out)]
    assert "point cluster.nccl_algo=null cluster.gpus=12: cluster.gpus:" in errors[0]
    assert not any("None" in e for e in errors)


# ---------------------------------------------------------------- reading points before they run
def test_a_cluster_preset_is_parsed_once_and_an_edit_is_still_seen(tmp_path, monkeypatch):
    """--list and the check before a sweep load every point's scenario, and each load parsed
    its cluster preset's YAML again: 800 parses of the same 50 lines for 400 points, a third
    of the listing's time. Now a text parsed once is kept (each caller gets its own copy), and
    the file is still read each time, so an edited preset is read as edited."""
    import shutil

    from simpy_astra.config import yaml_reader as readers
    from simpy_astra.config.cluster import load_cluster

    preset = tmp_path / "mine.yaml"
    shutil.copy(Path(readers.__file__).parent / "clusters" / "dgx-h100.yaml", preset)
    preset.write_text(preset.read_text() + f"# {tmp_path}\n")  # a text no earlier test parsed
    parses: list[int] = []
    real = readers.parse_yaml
    monkeypatch.setattr(readers, "parse_yaml", lambda text: parses.append(1) or real(text))
    first = load_cluster({"preset": str(preset), "gpus": 16}, "cluster")
    doc = readers.read_yaml_file(str(preset), "cluster preset")
    doc["gpu"]["hbm_gib"] = 1  # a caller changing its copy changes nobody else's
    for _ in range(3):
        assert load_cluster({"preset": str(preset), "gpus": 16}, "cluster") == first
    assert len(parses) == 1
    preset.write_text(preset.read_text().replace("hbm_gib: 80", "hbm_gib: 96"))
    assert load_cluster({"preset": str(preset), "gpus": 16}, "cluster").gpu["hbm_gib"] == 96
    assert first.gpu["hbm_gib"] == 80 and len(parses) == 2


# ---------------------------------------------------------------- a sweep stopped early
def test_an_interrupted_sweeps_best_is_called_the_best_so_far(tmp_path, monkeypatch, capsys):
    """Ctrl-C after one of three layouts ran printed 'best: tp=1 -> ...' and the constraint's
    best, as a finished sweep does; only the last line said 'interrupted', under them. Now the
    header says interrupted and each best is 'best so far', and the finished row is kept."""
    import dataclasses

    import simpy_astra.sweep.runner as runner

    real = runner.run_local

    def stopped_after_one(todo, *args, **kwargs):  # Ctrl-C once the first point has its row
        return dataclasses.replace(real(todo[:1], *args, **kwargs), interrupted=True)

    monkeypatch.setattr(runner, "run_local", stopped_after_one)
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4]},
                          constraints=["mfu > 0.01"])
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 130
    said = capsys.readouterr()
    err = said.err
    assert [r["status"] for r in rows(out)] == ["ok"]
    assert "sweep sweep: 1 of 3 points, 0 failed, " in err and " s, interrupted\n" in err
    lines = said.out.splitlines()  # the answer, on stdout
    assert any(line.startswith("best so far: tp=1 -> ") for line in lines)
    assert "best so far with mfu > 0.01: the same point" in lines
    assert not any(line.startswith("best:") or line.startswith("best with") for line in lines)
    assert err.splitlines()[-2].startswith("interrupted: 1 of 3 points saved in ")


# ---------------------------------------------------------------- points that run one step
def _without_wall(out: Path) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows(out)]


def test_points_that_load_alike_run_once(tmp_path, capsys):
    """cluster.nvls: [null, true] on dgx-h100 (whose preset says true) ran the same step twice
    and the summary crowned the first of a tie; so did a value equal to the preset's or to a
    default. Points are now compared by the cluster the loader reads (the preset's values,
    defaults, what the GPU implies, less what the run never reads): each such step runs once,
    its row under its own coordinates, a warning naming the other point and why; the files of
    one process, two, and a resumed sweep are one."""
    axes = {"cluster.nvls": [None, True], "cluster.nccl_ring_efficiency": [None, 1.0],  # default: 1
            "cluster.inter_node_gbit_s": [3200, 1600]}  # 3200: the preset's
    path = megatron_sweep(tmp_path, axes)
    assert sweep_main([path, "--list"]) == 0
    captured = capsys.readouterr()
    points = [line.split(" ", 1)[1] for line in captured.out.splitlines()[1:]]
    assert points == ["nvls=null nccl_ring_efficiency=null inter_node_gbit_s=3200",
                      "nvls=null nccl_ring_efficiency=null inter_node_gbit_s=1600"]
    said = " ".join(captured.err.split())
    assert ("(cluster.nvls true is what the cluster has without it), e.g. nvls=on nccl_ring_efficiency=null "
            "inter_node_gbit_s=3200 as nvls=null nccl_ring_efficiency=null inter_node_gbit_s=3200; each runs once"
            in said)
    assert "cluster.nccl_ring_efficiency 1.0 is what the cluster has without it" in said
    assert all(len(line) <= 80 for line in captured.err.splitlines())
    outs = [tmp_path / "one", tmp_path / "two"]
    for out, jobs in zip(outs, ["1", "2"], strict=True):
        assert sweep_main([path, "--out", str(out), "--jobs", jobs, "--no-plots"]) == 0
    assert _without_wall(outs[0]) == _without_wall(outs[1])
    ran = [r for r in rows(outs[0]) if r["status"] == "ok"]  # the others point at the run they share
    assert [r["cluster.inter_node_gbit_s"] for r in ran] == ["3200", "1600"]
    by_key = {r["key"]: r for r in ran}
    assert all(by_key[r["same_run_as"]]["cluster.inter_node_gbit_s"] == r["cluster.inter_node_gbit_s"]
               for r in rows(outs[0]) if r["status"] == "same")
    best = (outs[0] / "best.json").read_text()
    assert '"tied_with": []' in best and "tied with" not in capsys.readouterr().err
    before = (outs[0] / "results.csv").read_text()
    assert sweep_main([path, "--out", str(outs[0]), "--jobs", "2", "--no-plots"]) == 0  # resumed: nothing to run
    assert "2 already in" in capsys.readouterr().err and (outs[0] / "results.csv").read_text() == before
    # a key the run refuses as written (NCCL's launch cost beside a backend that plays
    # collectives as messages) is not the step without it: that point fails, saying why
    path = megatron_sweep(tmp_path, {"cluster.nccl_launch_us": [None, 3.675]})
    doc = yaml.safe_load(Path(path).read_text())
    Path(path).write_text(yaml.safe_dump({**doc, "base": {**doc["base"], "backend": "congestion_aware"}}))
    assert sweep_main([path, "--list"]) == 0
    out = capsys.readouterr().out
    assert "nccl_launch_us=null\n" in out and "nccl_launch_us=3.675  will fail" in out


def test_a_constraints_best_that_is_the_overall_best_is_said_once(tmp_path, capsys):
    """Each 'best with <constraint>' line repeated the overall best's line and its tie when it
    was the same point: three constraints, three copies. Now it says 'the same point', with
    its own tie only where the constraint left out some of the overall best's."""
    # the tree's share changes nothing where NCCL picks another algorithm: a tie of 1.0 and 0.5
    path = megatron_sweep(tmp_path, {"cluster.nccl_tree_efficiency": [1.0, 0.5]},
                          constraints=["memory_per_gpu_gib <= 80", "nccl_tree_efficiency > 0.7 or mfu < 0"])
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    lines = capsys.readouterr().out.splitlines()  # the answer, on stdout
    start = next(i for i, line in enumerate(lines) if line.startswith("best:"))
    assert lines[start].startswith("best: nccl_tree_efficiency=1.0 -> ")
    assert lines[start + 1:start + 3] == ["  tied with nccl_tree_efficiency=0.5 at this figure (the first in sweep "
                                          "order is", "    named)"]
    assert lines[start + 5:] == ["best with memory_per_gpu_gib <= 80: the same point",
                                   "best with nccl_tree_efficiency > 0.7 or mfu < 0: the same point",
                                   "  tied with no point that meets it"]


def test_a_gpu_figure_equal_to_the_presets_runs_once_and_is_named_by_its_own_path(tmp_path, capsys):
    """cluster.gpu.hbm_gib: [null, 80] on dgx-h100 (80 GiB) ran one step twice; the warning now
    names the figure, not two mappings of the GPU."""
    assert sweep_main([megatron_sweep(tmp_path, {"cluster.gpu.hbm_gib": [None, 80]}), "--list"]) == 0
    captured = capsys.readouterr()
    assert [line.split(" ", 1)[1] for line in captured.out.splitlines()[1:]] == ["hbm_gib=null"]
    assert ("axes: hbm_gib=80 runs the step hbm_gib=null runs (cluster.gpu.hbm_gib 80 is what the cluster has "
            "without it); it runs once, as hbm_gib=null") in " ".join(captured.err.split())


# ---------------------------------------------------------------- a null coordinate in a result expression
def test_a_null_coordinate_is_a_value_in_minimise_and_result_constraints(tmp_path, capsys):
    """'nccl_algo == null' reads in every expression, yet a result constraint or a minimise
    naming a null axis held its null points as unmeasured: 'nccl_algo != "tree" or mfu < 0'
    left out NCCL's choice, and a minimise over nccl_algo never ranked it, so best.json named
    ring, 1 ns slower. A null coordinate is now a value there; an ordered comparison with it
    is refused before any point runs, as for the first point, whichever point is null."""
    import json

    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": ["ring", None, "tree"]},
                          minimise="iteration_time_ns + (1 if nccl_algo == 'ring' else 0)",
                          constraints=["nccl_algo != 'tree' or mfu < 0"])
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    best = json.loads((tmp_path / "out" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"cluster.nccl_algo": None}
    assert [e["coordinates"] for e in best["best_under"].values()] == [{"cluster.nccl_algo": None}]
    assert "best with nccl_algo != 'tree' or mfu < 0: the same point" in capsys.readouterr().out
    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": ["ring", None]}, constraints=["nccl_algo > 'a' or mfu < 0"])
    from simpy_astra.cli.main import main

    assert main(["sweep", path, "--list"]) == 2
    assert "nccl_algo has no value at this point (null; compare it with == or != only" in capsys.readouterr().err
