"""Console summary of a run (``run`` mode): one row per NPU and where time went.

This module hands on the names of its parts: where text goes (:mod:`~simpy_astra.report.output`:
``Output``, ``say``), how wide it may be (:mod:`~simpy_astra.report.widths`), the run's tables
(:mod:`~simpy_astra.report.run_tables`, :mod:`~simpy_astra.report.breakdown_table`) and its
progress line (:mod:`~simpy_astra.report.progress_line`).
"""

from __future__ import annotations

from simpy_astra.report.breakdown_table import PART_WIDTH, print_breakdown
from simpy_astra.report.output import Output, say, say_wrapped
from simpy_astra.report.progress_line import ProgressLine, progress_text, progress_wanted, run_with_progress
from simpy_astra.report.run_tables import (
    dollars,
    print_cost,
    print_jobs,
    print_memory_breakdown,
    print_summary,
)
from simpy_astra.report.widths import (
    FOLDED_TEXT_WIDTH,
    PLAIN_MIN_WIDTH,
    PLAIN_WIDTH,
    column_blocks,
    fit_first,
    fit_words,
    fit_wrapped,
    fitting_columns,
    plain_width,
)

__all__ = ["FOLDED_TEXT_WIDTH", "PART_WIDTH", "PLAIN_MIN_WIDTH", "PLAIN_WIDTH", "Output", "ProgressLine",
           "column_blocks", "dollars", "fit_first", "fit_words", "fit_wrapped", "fitting_columns", "plain_width", "print_breakdown",
           "print_cost", "print_jobs", "print_memory_breakdown", "print_summary", "progress_text",
           "progress_wanted", "run_with_progress", "say", "say_wrapped"]
