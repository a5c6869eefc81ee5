"""Each point of a sweep checked before any runs (one Megatron refuses: invalid; one whose
inputs its run would refuse: will fail), and what ``sweep --list`` prints of them.
"""

from __future__ import annotations

import functools
import textwrap
from typing import TYPE_CHECKING, Any

from simpy_astra.sweep.axes import point_words
from simpy_astra.sweep.expansion_progress import ExpansionProgress

if TYPE_CHECKING:
    from simpy_astra.sweep.spec import Point, SweepSpec


def point_line(key: str, coordinates: list[str], mark: str, width: int | None = None) -> str:
    """A point's key, coordinates and mark (two spaces before it) within ``width`` columns
    (default :func:`~simpy_astra.report.widths.plain_width`): a
    coordinate that does not fit the line goes on the next, indented (one longer than a line
    is cut where the line ends)."""
    from simpy_astra.report.widths import cut, plain_width, text_width

    width = width or plain_width()
    lines, line = [], key
    for word in coordinates:
        if text_width(line) + 1 + text_width(word) <= width:
            line += " " + word
            continue
        lines.append(line)
        line = "  " + word
        while text_width(line) > width:
            head, rest = cut(line, width)
            lines.append(head)
            line = "  " + rest
    if mark and text_width(line) + 2 + len(mark) > width:
        lines.append(line)
        line = ""
    return "\n".join([*lines, line + ("  " + mark if mark else "")])


def reads_whole_points(spec: SweepSpec) -> bool:
    """``--list`` reads each point with the scenario loader, as its run would: the sweep has an
    axis beyond Megatron's flags (a value only the loader refuses)."""
    from simpy_astra.sweep.megatron_args import is_args_path

    return any(not is_args_path(path) for a in spec.axes
               for path in (a.bundles and {k for b in a.bundles.values() for k in b} or [a.column]))


class WholePoints:
    """``--list``'s loads of each point, made as the points are expanded (:meth:`SweepSpec.points`'s
    ``check``): its Megatron job is at hand then, and the loader reads it rather than parsing
    the command line again (once a point, not twice)."""

    def __init__(self, sweep: str) -> None:
        self.sweep = sweep  # (the user's modules are searched for as a point's run finds them: cli/sweep.py)
        #: point key -> (its invalid row or None, why it will fail or '')
        self.said: dict[str, tuple[dict[str, Any] | None, str]] = {}

    def __call__(self, point: Point, job: Any) -> None:
        from simpy_astra.sweep.validity import verdict

        self.said[point.key] = verdict(point.scenario, point.where(self.sweep), True, point.megatron, job)


def checked(points: list[Point], sweep: str, loaded: WholePoints | None = None,
            ) -> tuple[dict[str, dict[str, Any] | None], dict[str, str]]:
    """Each point's invalid row (Megatron refuses it) or None, and why each point that will
    fail when run fails, saying how far it got; ``loaded``: what the scenario loader said of
    each point as it was expanded (``--list`` of a sweep with an axis beyond Megatron's flags)."""
    from simpy_astra.sweep.validity import verdict

    progress = None if loaded is not None else ExpansionProgress("checking")  # (loaded: said then, with its lines)
    refused, failing = {}, {}
    for i, p in enumerate(points):
        if progress is not None and i % 64 == 0:
            progress(i, len(points))
        refused[p.key], failure = loaded.said[p.key] if loaded is not None else verdict(p.scenario, p.where(sweep),
                                                                                          megatron=p.megatron)
        if failure:
            failing[p.key] = failure
    return refused, failing


def print_list(points: list[Point], sweep: str, spec: SweepSpec, loaded: WholePoints | None = None) -> int:
    """``--list``: each point's key, coordinates and mark (invalid, will fail), then the rules
    the invalid ones break and the first failures in full; runs nothing. ``loaded``: each point
    as the scenario loader read it (:class:`WholePoints`)."""
    from simpy_astra.report.widths import plain_width

    refused, failing = checked(points, sweep, loaded)
    count = sum(1 for r in refused.values() if r)
    # within the width, as the points' lines (72 and 67 columns at COLUMNS=60): the count first
    fill = functools.partial(textwrap.fill, width=plain_width(), subsequent_indent="  ", break_on_hyphens=False)
    print(fill(f"{len(points)} point{'s' if len(points) != 1 else ''}"
               + (f", {count} invalid (each breaks a rule named below; they will not run)" if count else "")))
    for p in points:
        mark = "invalid" if refused[p.key] else "will fail" if p.key in failing else ""
        print(point_line(p.key, point_words(spec.axes, p.coordinates), mark))
    rules = [r["rule"] for r in refused.values() if r]
    for rule in dict.fromkeys(rules):  # each rule once, in sweep order: lines stay short
        whole = rule.replace(" ", "\u00a0")  # the rule's name on one line
        print(fill(f"invalid: {rules.count(rule)} point(s) break the rule '{whole}'").replace("\u00a0", " "))
    for key, failure in list(failing.items())[:3]:  # the first few, each in full
        print(fill(f"will fail: {key}: {failure}"))
    if len(failing) > 3:
        print(f"will fail: {len(failing) - 3} more point(s) (run them for their errors)")
    return 0
