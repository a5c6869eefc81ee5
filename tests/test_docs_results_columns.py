"""docs/sweeps.md names every column a sweep's results.csv has.

Its list of the columns left out `key`, the first column, and `cost_usd`, and gave the
Megatron job's figures as a Megatron point's alone, where every results.csv carries them
(empty for other points): a user reading a file beside the page met columns it never named.
"""

from __future__ import annotations

import re
from pathlib import Path

from simpy_astra.sweep.result_names import RESULT_NAMES, ROW_COLUMNS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sweeps.md"


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
