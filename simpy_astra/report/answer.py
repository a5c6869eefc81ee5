"""The answer a run prints on stdout before anything else a user may want: its headline (on a
terminal after the stderr summary, so that it is what the screen shows when the run ends).

A real job (a scenario with ``cluster:``) answers "how long does this step take on that
machine": the iteration time, TFLOP/s per GPU, MFU and tokens/s per GPU, then memory against
capacity and where the time went. ASTRA-sim inputs answer with the reference's per-NPU lines;
their headline (``--quiet``) is the step's time: when the last NPU finished.
"""

from __future__ import annotations

import sys

from simpy_astra.engine.statistics import NpuReport
from simpy_astra.report.widths import first_fitting

#: the start of the warning a folded run that had to run again unfolded gives (simulation.py)
FOLD_UNDONE = "symmetry folding undone: "


def headline(reports: list[NpuReport], training=None, width: int | None = None) -> str:
    """One line: a real job's step time and throughput, else when the last NPU finished (its
    exposed communication left out where the line would be wider than ``width``, default
    :data:`HEADLINE_WIDTH`)."""
    if training is not None:
        return training.lines(min(width or HEADLINE_WIDTH, HEADLINE_WIDTH))[0]
    if not reports:
        return "iteration time 0 ns (no NPU ran)"
    last = max(reports, key=lambda r: (r.finished_cycles, -r.npu_id))
    step = f"iteration time {last.finished_cycles:,} ns"
    wordings = (f"{step} (last: NPU {last.npu_id} of {len(reports):,}, exposed comm {last.exposed_comm_cycles:,} ns)",
                f"{step} (last to finish: NPU {last.npu_id} of {len(reports):,})",
                f"{step} (last: NPU {last.npu_id} of {len(reports):,})", step)  # (COLUMNS=40: 54 wide)
    return first_fitting(wordings, min(width or HEADLINE_WIDTH, HEADLINE_WIDTH))


#: a headline's width at most: a terminal's 80 columns (issue 39), or the narrower one it is
#: printed to (COLUMNS=60); a wording that would be wider leaves out its exposed communication
#: (the reference lines have it)
HEADLINE_WIDTH = 80


def print_answer(training, breakdowns: dict | None) -> None:
    """A real job's answer on stdout: its figures, then where the time went (a table drawn
    for a terminal, plain text in a pipe or a file)."""
    from simpy_astra.report.output import Output

    print("\n".join(training.lines(Output(sys.stdout).width) + training.fit_advice()), flush=True)
    if breakdowns:
        from simpy_astra.report.breakdown_table import print_breakdown

        print_breakdown(breakdowns, Output(sys.stdout))
    sys.stdout.flush()


def short_warning(text: str, verbose: bool) -> str:
    """A warning as the console shows it: folding that fell back to an unfolded run changes no
    figure and asks nothing of the user, so it is one short note unless ``--verbose``."""
    if text.startswith(FOLD_UNDONE) and not verbose:
        return "note: ran unfolded: symmetric NPUs' messages met on a link (--verbose: where)"
    return f"warning: {text}"  # in full (about 200 columns): its printer wraps it
