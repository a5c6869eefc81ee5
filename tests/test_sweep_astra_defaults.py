"""A sweep over an ASTRA-sim system or network field runs each step once: a value equal to
ASTRA-sim's default beside the same field left out, or a value written two ways the loader
reads alike (``bandwidth: 50`` and ``[50.0]``), is one point, as on a cluster's fields. Each
pair is shown to be one step by running its two scenarios on their own."""

from __future__ import annotations

import copy

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, write_yaml

pytestmark = pytest.mark.usefixtures("own_cache")


def _base(tmp_path, *, without: str = "", **top) -> str:
    """The default scenario with ``system.<without>`` left out and the ``top`` fields set."""
    doc = copy.deepcopy(DEFAULT) | {"workload": str(SCENARIOS / DEFAULT["workload"])} | top
    doc["system"].pop(without, None)
    return write_yaml(tmp_path, doc, "base.yaml")


def _listed(tmp_path, capsys, base: str, axes: dict) -> tuple[list[str], str]:
    sweep = write_yaml(tmp_path, {"base": base, "axes": axes}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    return [line.split(" ", 1)[1] for line in captured.out.splitlines()[1:]], " ".join(captured.err.split())


def _lines(tmp_path, capsys, base: str, field: str, value) -> str:
    """What ``run`` prints of ``base`` with ``system.<field>`` (None: as the base has it)."""
    doc = copy.deepcopy(DEFAULT) | {"workload": str(SCENARIOS / DEFAULT["workload"])}
    doc["system"] = {k: v for k, v in doc["system"].items() if k != "endpoint-delay"}
    if value is not None:
        doc["system"][field] = value
    assert main(["run", write_yaml(tmp_path, doc, "one.yaml"), "--quiet"]) == 0
    return capsys.readouterr().out


def test_astra_sims_default_written_beside_the_field_left_out_runs_once(tmp_path, capsys):
    # ASTRA-sim's Sys::initialize_sys gives endpoint-delay 10 when the key is absent: a bundle
    # writing 10 ran the base's step a second time, as its own row
    base = _base(tmp_path, without="endpoint-delay")
    axes = {"variant": {"named": {"a": {"system.active-chunks-per-dimension": 1},
                                  "b": {"system.endpoint-delay": 10}, "c": {"system.endpoint-delay": 20}}}}
    points, said = _listed(tmp_path, capsys, base, axes)
    assert points == ["variant=a", "variant=c"]
    assert ("axes: variant=b runs the step variant=a runs (system.endpoint-delay 10 is what the system has "
            "without it); it runs once, as variant=a") in said
    # the premise, from two runs of their own: one step, and 20 another
    assert _lines(tmp_path, capsys, base, "endpoint-delay", None) == \
        _lines(tmp_path, capsys, base, "endpoint-delay", 10) != _lines(tmp_path, capsys, base, "endpoint-delay", 20)


def test_a_written_default_under_an_injection_scale_is_another_step(tmp_path, capsys):
    # --injection-scale multiplies endpoint-delay only where the key is written (ASTRA-sim
    # scales the member it read): at scale 2 a written 10 is 20 ns, the absent key 10 ns
    base = _base(tmp_path, without="endpoint-delay", injection_scale=2)
    axes = {"variant": {"named": {"a": {"system.active-chunks-per-dimension": 1},
                                  "b": {"system.endpoint-delay": 10}}}}
    points, said = _listed(tmp_path, capsys, base, axes)
    assert points == ["variant=a", "variant=b"] and "runs the step" not in said


def test_a_network_list_written_as_its_one_value_runs_once(tmp_path, capsys):
    # bandwidth: 50 on a one-dimension network is read as [50.0]: two rows of one run before
    points, said = _listed(tmp_path, capsys, _base(tmp_path), {"network.bandwidth": [[50.0], 50, 25]})
    assert points == ["bandwidth=[50.0]", "bandwidth=25"]
    assert "bandwidth=50 sets the scenario as bandwidth=[50.0] does" in said or \
        "bandwidth=50 runs the step bandwidth=[50.0] runs" in said


def test_an_inline_block_the_points_share_is_loaded_once(monkeypatch):
    """Comparing points by what they run loaded each point's inline network and system again
    (a point's run loads its own); a block the points share is now loaded once an expansion."""
    import simpy_astra.config as config
    from simpy_astra.sweep.same_run import AlikePoints

    loads: list[str] = []
    for name in ("network_from_mapping", "system_from_mapping"):
        real = getattr(config, name)
        monkeypatch.setattr(config, name, lambda *a, real=real, name=name: loads.append(name) or real(*a))

    class Point:  # what AlikePoints reads of a sweep point
        def __init__(self, label: str, scenario: dict) -> None:
            self.key, self.label, self.scenario, self.megatron = label, label, scenario, None

    alike = AlikePoints()
    for passes in (1, 2, 3, 4):
        alike.add(Point(f"p{passes}", copy.deepcopy(DEFAULT) | {"num_passes": passes}))
    assert [p.label for p in alike.points] == ["p1", "p2", "p3", "p4"]
    assert sorted(loads) == ["network_from_mapping", "system_from_mapping"]
