"""``validate --holdout`` warns of a network other than its record's fit whatever the record's
list of fitted logs holds: a record of no logs (an empty mapping of fitted lines, falsy) was
read as no record at all, and the network's warning was never given."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from simpy_astra.cli.main import main
from tests.wrapped_lines import plain

NCCL = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"


def test_a_record_of_no_logs_still_warns_of_another_network(tmp_path, capsys):
    log, fit = str(NCCL / "all_reduce.log"), tmp_path / "fit"
    assert main(["calibrate", log, "--network", str(NCCL / "network.yml"), "--out", str(fit),
                 "--hold-out-every", "3"]) == 0
    record = json.loads((fit / "calibration.json").read_text())
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**record, "logs": []}))
    edited = tmp_path / "edited.yml"
    edited.write_text(yaml.safe_dump({**yaml.safe_load((fit / "network.yml").read_text()), "bandwidth": [300]}))
    capsys.readouterr()
    assert main(["validate", log, "--system", str(fit / "system.json"), "--holdout", str(empty),
                 "--network", str(edited), "--out", str(tmp_path / "v")]) == 0
    assert plain(capsys.readouterr().err).splitlines() == [
        f"warning: {edited}: bandwidth is [300], but {empty} fitted {record['fitted']['bandwidth']}: its 'fitted' "
        f"rows were fitted to another network; give the network.yml calibrate wrote beside it, or drop --holdout"]
