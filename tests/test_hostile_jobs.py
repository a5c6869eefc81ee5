"""A jobs: field that the job's placement never reads is refused naming it, not ignored."""

from __future__ import annotations

import json

import pytest
import yaml

from simpy_astra.cli.main import main

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"],
          "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
          "all-to-all-implementation": ["ring"], "collective-optimization": "baseline"}
JOB = {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 4}


@pytest.mark.parametrize("placed", [{"placement": "contiguous"}, {"placement": "strided"}, {"npus": [4, 5, 6, 7]},
                                    {}])
def test_a_seed_beside_a_placement_that_draws_nothing_is_refused(tmp_path, capsys, placed):
    # only placement: random draws with the seed; beside the others it changed nothing
    (tmp_path / "sys.json").write_text(json.dumps(SYSTEM))
    scenario = tmp_path / "j.yaml"
    scenario.write_text(yaml.safe_dump({
        "network": {"topology": ["Switch"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]},
        "system": "sys.json",
        "jobs": [{"name": "a", "workload": JOB, "placement": "contiguous"},
                 {"name": "b", "workload": JOB, "seed": 3, **placed}]}))
    assert main(["run", str(scenario), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "jobs[1].seed" in err[0] and "random" in err[0], err
