"""The guides name every column a sweep's results.csv has and every key of run's --json-out.

docs/sweeps.md's list of the columns left out `key`, the first column, and `cost_usd`, and gave the
Megatron job's figures as a Megatron point's alone, where every results.csv carries them
(empty for other points): a user reading a file beside the page met columns it never named.
docs/reports.md named none of --json-out's `simulator_wall_s`, `peak_rss_mb` and `units`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from simpy_astra.cli.main import main
from simpy_astra.sweep.result_names import RESULT_NAMES, ROW_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "sweeps.md"


def test_every_results_column_is_named_on_the_sweeps_page():
    text = PAGE.read_text()
    named = set(re.findall(r"`([a-z_0-9]+)`", text))
    breakdown = re.compile(r"breakdown_comm_([a-z]+)_ns")
    unnamed = [c for c in (*ROW_COLUMNS, *RESULT_NAMES)
               if c not in named and not ((m := breakdown.fullmatch(c)) and f"`_{m.group(1)}_`" in text)]
    assert unnamed == [], f"docs/sweeps.md does not name results.csv's {unnamed}"


def test_the_page_says_the_megatron_columns_are_in_every_results_file():
    text = " ".join(PAGE.read_text().split())
    assert "a Megatron job's figures (below; empty for other points)" in text


def test_every_top_level_key_of_json_out_is_named_on_the_reports_page(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert main(["run", str(ROOT / "scenarios" / "default.yaml"), "--quiet", "--json-out", str(out)]) == 0
    capsys.readouterr()
    named = set(re.findall(r"`([a-z_0-9]+)`", (ROOT / "docs" / "reports.md").read_text()))
    assert sorted(set(json.loads(out.read_text())) - named) == []
