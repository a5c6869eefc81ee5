"""A comm-group JSON a user's generator wrote that does not read is named as the scenario
names the generator, with the fix in the generator (config/scenario.py: _written_groups)."""

from __future__ import annotations

import sys

from tests.test_extension_misuse import SYSTEM
from tests.test_hostile_hunt7 import _error_lines

GROUPS_WRITER = '''
import json
from simpy_astra.workloads.chakra import write_et


def bad_groups(params, prefix):
    for rank in range(4):
        write_et(f"{prefix}.{rank}.et", [])
    with open(prefix + ".json", "w") as f:
        json.dump({"1": [0, 9]}, f)
    return prefix + ".json"
'''


def test_a_bad_group_file_a_users_generator_wrote_names_the_generator(tmp_path, capsys, monkeypatch):
    from simpy_astra.workloads import generated

    monkeypatch.setattr(generated, "GENERATORS", dict(generated.GENERATORS))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "review_groups.py").write_text(GROUPS_WRITER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "review_groups", raising=False)
    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{generate: 'review_groups:bad_groups'}}\nsystem: {SYSTEM}\n"
                    f"network: {{topology: [Ring], npus_count: [4], bandwidth: [50.0], latency: [500.0]}}\n")
    err = _error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1, err
    head = f"error: {path}: workload.generate: generator 'review_groups:bad_groups' wrote "
    assert err[0].startswith(head), err
    assert err[0].endswith("; fix the generator (its traces are made anew once it is edited)"), err
    assert "corrupt workload cache entry" not in err[0]
