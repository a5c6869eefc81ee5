"""Two sweep axes where the later sets a whole field that holds the earlier's: the earlier's
values vanished from every point (which then ran the same scenario, listed under coordinates
that claimed otherwise); refused naming both. The other order refines and is kept."""

from __future__ import annotations

import os

import pytest
import yaml

from simpy_astra.cli.main import main

TORUS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "scenarios", "torus3d_all_reduce.yaml"))


def _list(tmp_path, capsys, axes: dict) -> tuple[int, str, str]:
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": TORUS, "axes": axes}, sort_keys=False))
    code = main(["sweep", str(sweep), "--list"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("axes, words", [
    # network.bandwidth: 10 fills every dimension, so bandwidth.0's 50 and 100 were one point
    ({"network.bandwidth.0": [50, 100], "network.bandwidth": [10, 20]}, "network.bandwidth.0"),
    ({"network.bandwidth": [50, 100], "network": [{"topology": ["Ring"], "npus_count": [64], "bandwidth": [50],
                                                   "latency": [10]}]}, "network.bandwidth"),
    ({"network.latency.1": [1, 2], "machine": {"named": {"a": {"network.latency": [5, 5, 5]},
                                                         "b": {"network.latency": [9, 9, 9]}}}},
     "network.latency.1"),
])
def test_a_later_axis_that_replaces_an_earlier_ones_field_whole_is_refused(tmp_path, capsys, axes, words):
    code, _out, err = _list(tmp_path, capsys, axes)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0] and "axes" in lines[0], err


def test_a_later_axis_inside_an_earlier_ones_field_refines_it(tmp_path, capsys):
    code, out, _err = _list(tmp_path, capsys, {"network.bandwidth": [10, 20], "network.bandwidth.0": [50, 100]})
    assert code == 0 and out.startswith("4 points")
