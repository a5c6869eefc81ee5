"""The summary of a sweep: the best points as a table (drawn on a terminal, plain text in a pipe
or a log file), and the winners."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from simpy_astra.errors import printable
from simpy_astra.report.console import Output, plain_width
from simpy_astra.report.widths import wrapped
from simpy_astra.sweep.axes import point_words
from simpy_astra.sweep.axes import shown as shown_value
from simpy_astra.sweep.best import Outcome, objective_of, satisfies, unmeasured, unreported
from simpy_astra.sweep.spec import SweepSpec, point_label


def _number(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _digits(column: list[Any]) -> int:
    """Decimals for a column of figures: 2; 3 when every one is a fraction (an MFU of 0.104
    and one of 0.098 both read 0.10 with two); none when one reaches 1,000, which shows four
    significant digits already (a time x price of 3,893,712,000.00 read as exact to the cent)."""
    numbers = [v for v in column if v is not None]
    if any(isinstance(v, float) and abs(v) >= 1000 for v in numbers):
        return 0
    return 3 if numbers and all(isinstance(v, float) and abs(v) < 1 for v in numbers) else 2


#: a figure's unit by its name's suffix (units live in names: simpy_astra/infra/units.py)
UNIT_SUFFIXES = (("_ns", "ns"), ("_s", "s"), ("_gib", "GiB"), ("_gb", "GB"), ("_usd", "$"))


def objective_text(text: str, value: Any) -> str:
    """The objective's value as the table shows it, with its unit: ``27,966,191,178 ns`` for
    ``iteration_time_ns``, ``$1,600`` for ``cost_usd``; an expression or a figure without a
    unit in its name is named (``finish_ns * cost_usd = 3,893,712,000``, ``mfu = 0.379``)."""
    number = _number(value, _digits([value]))
    unit = next((u for suffix, u in UNIT_SUFFIXES if text.isidentifier() and text.endswith(suffix)), None)
    if unit == "$":
        return f"${number}"
    return f"{number} {unit}" if unit else f"{text} = {number}"


def _report(spec: SweepSpec, o: Outcome, expr) -> Any:
    values = {**o.point.names(spec.axes), **o.figures}
    if unmeasured(spec, o, values, expr.names):
        return None
    return expr.number(values, f"{spec.path}: report", measured=True)


def print_summary(spec: SweepSpec, done: list[Outcome], summary: dict[str, Any], out: Output,
                  wall_s: float, top: int = 12, interrupted: bool = False, answer: Output | None = None) -> None:
    """``interrupted``: the points that finished before Ctrl-C or SIGTERM, whose best is the best
    so far (said so: a plain 'best:' over 40 of 144 points read as the sweep's answer).
    ``answer``: where the best lines go (the command's stdout, as ``run``'s answer), else ``out``."""
    answer = answer or out
    ok = [o for o in done if o.ok]
    backends = summary.get("backends") or []
    # ranked within each network backend (best.py: points of two backends are not compared);
    # points that fit first, as best.json ranks them: the table's top row is the answer, and a
    # faster layout that cannot run follows the ones that can (marked NO), never above them
    ranked, shown = [], 0
    for backend in backends if len(backends) > 1 else [None]:
        mine = [o for o in ok if backend is None or o.point.backend == backend]
        scores = {o.point.key: objective_of(spec, o) for o in mine}
        best = sorted(mine, key=lambda o: (not o.fits, scores[o.point.key] is None, scores[o.point.key] or 0))[:top]
        ranked += best
        shown = max(shown, len(best))
    per = " per backend" if len(backends) > 1 else ""
    invalid = [o for o in done if o.invalid]
    _lines(out, f"sweep {spec.name}: {summary['finished']} of {summary['points']} points, {summary['failed']} "
           f"failed" + (f", {len(invalid)} invalid" if invalid else "")  # each invalid point's rule follows
           + f", {wall_s:.1f} s" + (", interrupted" if interrupted else ""), "")
    title = f"best {shown}{per} by {spec.goals.objective.text}"  # short: a table's title fits 80 columns
    # the objective, which orders the rows, first of the figures: last of report: it was split away
    # into the table below at COLUMNS=60 (cost_topology's 'finish_ns * cost_usd')
    report = sorted(spec.goals.report, key=lambda e: e.text != spec.goals.objective.text)
    values = [[_report(spec, o, e) for e in report] for o in ranked]
    digits = [_digits([row[i] for row in values]) for i in range(len(report))]
    rows = [[shown_value(o.point.coordinates[a.column]) for a in spec.axes]
            + [_number(v, d) for v, d in zip(row, digits, strict=True)] for o, row in zip(ranked, values, strict=True)]
    headers = [a.name for a in spec.axes] + [e.text for e in report]
    align = ["left"] * len(spec.axes) + ["right"] * len(report)
    # never let a point that does not fit pass unseen (unless the report shows fits already):
    # beside the coordinates, in the first table, since it orders the rows (a faster point
    # ranked below slower ones read as wrong while its 'NO' was in the table below)
    if any(o.figures.get("fits") is not None for o in ranked) and "fits" not in headers:
        at = len(spec.axes)
        headers.insert(at, "fits")
        align.insert(at, "left")
        for row, o in zip(rows, ranked, strict=True):
            row.insert(at, "yes" if o.fits else "NO")
    # too wide for the terminal (or plain_width() in a pipe): numbered rows, the last columns in a table below;
    # no table when no point finished (a title 'best 0' over bare headers said nothing)
    if rows:
        out.table(title, headers, rows, align=align, key=0)
    left_out = summary.get("left_out_not_fitting") or 0
    if left_out:
        out.prose(f"{left_out} finished point(s) do not fit the GPU's memory (fits NO): never named best")
    warned = sum(1 for o in done if o.figures.get("warnings"))
    if warned:  # a run prints its warnings; a point's are in its row, where nobody reads unasked
        out.prose(f"{warned} point(s) warned: results.csv's warnings column has their words")  # within COLUMNS=60
    # a line per rule, as --list says them (eight points of one rule made three alike lines and
    # '... and 5 more'); the rule only: results.csv has Megatron's whole reason
    by_rule: dict[str, list[Outcome]] = {}
    for o in invalid:
        by_rule.setdefault(o.figures["error"].split(": ", 1)[0], []).append(o)
    shown_rules = 3 if len(by_rule) > 4 else 4  # '... and 1 more rules' took the line its rule needed
    for rule, points in list(by_rule.items())[:shown_rules]:
        first = " ".join(point_words(spec.axes, points[0].point.coordinates))
        rule = rule.replace(" ", "\u00a0")  # its name on one line ('... tp x pp' / 'x cp' at COLUMNS=60)
        if len(points) == 1:
            _flagged(out, "invalid:", "yellow", f"{first} breaks the rule '{rule}'")
        else:  # the example point kept on one line where it fits one, else broken between coordinates
            example = f"e.g. {first}"
            whole = len(example) <= plain_width() - 2  # a continuation's indent
            _flagged(out, "invalid:", "yellow", f"{len(points)} points break the rule '{rule}', "
                     + ("\u00a0".join(example.split(" ")) if whole else example))
    if len(by_rule) > shown_rules:
        out.line(f"... and {len(by_rule) - shown_rules} more rules that points break (results.csv has them)")
    by_error: dict[str, list[Outcome]] = {}  # points that failed alike: their error once
    for o in done:
        if not o.ok and not o.invalid:
            by_error.setdefault(_own_words(spec, o), []).append(o)
    for error, points in list(by_error.items())[:5]:
        more = f" (and {len(points) - 1} more alike)" if len(points) > 1 else ""
        _flagged(out, "failed", "red", f"{' '.join(point_words(spec.axes, points[0].point.coordinates))}{more}: {error}")
    if len(by_error) > 5:
        rest = sum(len(points) for points in list(by_error.values())[5:])
        out.line(f"... and {rest} more failed points (results.csv has their errors)")
    sections = summary.get("by_backend") or {None: summary}
    named: set[str] = set()  # points whose figures are shown already, and warnings said
    for backend, section in sections.items():
        suffix = (" so far" if interrupted else "") + (f" ({backend})" if backend else "")
        unfit = section.get("left_out_not_fitting") or 0
        _winner(answer, spec, f"best{suffix}", section["best"], named,
                "none: no finished point fits the GPU's memory" if unfit else "")
        mine = [o for o in ok if backend is None or o.point.backend == backend]
        for text, entry in section["best_under"].items():
            constraint = next(c for c in spec.goals.result_constraints if c.text == text)
            missing = unreported(spec, mine, constraint)
            if entry is None and missing:
                for line in textwrap.wrap(f"best{suffix} with {text}: no finished point reports {', '.join(missing)} "
                                          f"(the runs do not measure it), so none is held to it", plain_width(),
                                          subsequent_indent="  "):
                    answer.line(line)
                continue
            if entry is not None and section["best"] is not None and entry["key"] == section["best"]["key"]:
                _same_point(answer, f"best{suffix} with {text}", entry, section["best"], spec)
                continue
            # points that meet it but are too large for their GPU: 'no point qualifies' hid them
            unfit = sum(1 for o in mine if not o.fits and satisfies(spec, o, constraint))
            _winner(answer, spec, f"best{suffix} with {text}", entry, named,
                    f"none that fits the GPU's memory; {unfit} point{'s' if unfit > 1 else ''} "
                    f"meet{'' if unfit > 1 else 's'} it but do{'' if unfit > 1 else 'es'} not fit" if unfit else "")
    if summary.get("note"):  # within the plain width (one line of 110 columns)
        for line in textwrap.wrap(summary["note"], plain_width(), subsequent_indent="  "):
            answer.line(line)


def _own_words(spec: SweepSpec, o: Outcome) -> str:
    """A failed point's error without what its line says already: the point (named first, by
    its axes' short names) and 'InputError' (a bad input is what every such line reports); a
    bug keeps its exception's name."""
    error = o.figures["error"].replace(f"{o.point.where(spec.path)}: ", "")
    return error.removeprefix("InputError: ")


def _flagged(out: Output, word: str, colour: str, text: str) -> None:
    """``word text`` (an invalid or failed point and why): coloured on a terminal, which wraps
    it; in a pipe wrapped within plain_width() (an error is often longer than the line)."""
    if out.console is not None:
        text = text.replace("\u00a0", " ")
        out.line(f"{word} {text}", f"[{colour}]{word}[/{colour}] " + escape(text))
        return
    text = "\u00a0".join(printable(piece) for piece in text.split("\u00a0"))  # a space kept whole
    for line in wrapped(f"{word} {text}", plain_width(), subsequent_indent="  ",
                        break_long_words=False):  # a coordinate, a path: never cut inside
        out.line(line.replace("\u00a0", " "))


def escape(text: str) -> str:
    """``text`` inside rich markup: a ``[`` of a coordinate or an error is not a tag."""
    # deferred: rich is heavy; only the terminal's rich markup needs it
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _same_point(out: Output, title: str, entry: dict[str, Any], best: dict[str, Any], spec: SweepSpec) -> None:
    """``title: the same point`` for a constraint whose best is the overall best (its line, tie
    and figures again said nothing new), with its own tie where the constraint left out some of
    the overall best's."""
    _lines(out, f"{title}: the same point", "")
    if [t["key"] for t in entry.get("tied_with") or []] != [t["key"] for t in best.get("tied_with") or []]:
        _tie(out, spec, entry)


def _lines(out: Output, text: str, indent: str) -> None:
    """``text`` on one line on a terminal (which wraps it), else wrapped within plain_width() by
    the columns it takes (a wide character two), a coordinate longer than a line broken in it as
    the best's line breaks one, never cut ("tied with" ran to 91 columns beside an 80-column best)."""
    for line in [indent + text] if out.console is not None else wrapped(
            indent + text, plain_width(), subsequent_indent=indent + "  "):
        out.line(line)


def _tie(out: Output, spec: SweepSpec, entry: dict[str, Any]) -> None:
    """The points that tie with ``entry``'s (the first in sweep order is named), if any."""
    tied = entry.get("tied_with") or []
    if tied:
        first = " ".join(point_words(spec.axes, tied[0]["coordinates"]))
        others = f"{len(tied)} other points, e.g. {first}," if len(tied) > 1 else first
        _lines(out, f"tied with {others} at this figure (the first in sweep order is named)", "  ")
    else:
        _lines(out, "tied with no point that meets it", "  ")


def _winner(out: Output, spec: SweepSpec, title: str, entry: dict[str, Any] | None, named: set[str],
            none: str = "") -> None:
    """``title: tp=8 pp=8 -> objective`` (the axes by their short names), wrapped within
    plain_width() in a pipe (a terminal wraps it to its width), the figure never split; a Megatron
    point's answer (step time, TFLOP/s, MFU, memory) and the warnings of its run below it the
    first time it is named."""
    if entry is None:  # a long constraint's title: wrapped in a pipe too (it was 88 columns)
        said = f"{title}: {none or 'no finished point qualifies'}"  # none: why, when points were left out
        for line in [said] if out.console is not None else textwrap.wrap(
                said, plain_width(), subsequent_indent="  ", break_long_words=False, break_on_hyphens=False):
            out.line(line)
        return
    coords = " ".join(point_words(spec.axes, entry["coordinates"]))  # a point's coordinates: one per axis
    figure = objective_text(spec.goals.objective.text, entry["objective"])
    rest = f": {coords} -> {figure}"
    if out.console is not None:
        out.line(title + rest, f"[bold green]{title}[/bold green]" + escape(rest))
    else:
        # the arrow stays with its figure, which is one piece unless it is a long expression
        # (then its '=' and number stay together, and the expression too where it is short:
        # 'finish_ns *' ended a line, 'cost_usd = 3,893,712,000' began the next)
        words = figure.split(" ")
        kept = len(words) if len(figure) <= plain_width() // 2 else 2
        said = words[:-kept]
        if len(" ".join(said)) <= plain_width() // 2:
            said = ["\u00a0".join(said)] if said else []
        figure = " ".join(said + ["\u00a0".join(words[-kept:])])
        # a coordinate is cut only where it is longer than a line (a bundle's 100-letter name)
        for line in wrapped(f"{title}: {coords} ->\u00a0{figure}", plain_width(), subsequent_indent="  "):
            out.line(line.replace("\u00a0", " "))
    if entry.get("tied_with"):  # a tie's first in sweep order is named: the others are as good
        _tie(out, spec, entry)
    figures = entry.get("figures") or {}
    if entry.get("key") in named:
        return
    named.add(entry.get("key"))
    if figures.get("iteration_time_ns") is not None:
        # within the width, as the memory line below (72 columns at COLUMNS=60), a number kept
        # with its unit ('1.9 of 80 GiB')
        said = re.sub(r"(?<=\d) (?=of \d|GiB|TFLOP/s|m?s\b)|(?<= of) (?=\d)", "\u00a0", _training_line(figures))
        for line in textwrap.wrap(said, plain_width(), initial_indent="  ", subsequent_indent="    ") \
                if out.console is None else ["  " + said]:
            out.line(line.replace("\u00a0", " "))
        parts = _memory_parts(figures)
        if parts:
            for line in textwrap.wrap(parts, plain_width(), initial_indent="  ", subsequent_indent="    "):
                out.line(line)
    if figures.get("warnings"):  # the winner's own run doubts its figure (below a bandwidth floor): said here
        warned = "warned: " + figures["warnings"].replace(f"{point_label(spec.path, entry['coordinates'])}: ", "")
        if warned in named:  # another best's run gave the same words: not four lines again
            out.line("  warned: as above")
            return
        named.add(warned)
        for line in textwrap.wrap(warned, plain_width(), initial_indent="  ", subsequent_indent="    ",
                                  break_on_hyphens=False):
            out.line(line)


#: a Megatron point's memory parts as results.csv names them, and as the summary says them
MEMORY_PARTS = (("weights", "weights"), ("gradients", "gradients"), ("optimizer", "optimizer"),
                ("activations", "activations"), ("fp8_buffers", "fp8 buffers"))


def _memory_parts(figures: dict[str, Any]) -> str:
    """``memory GiB: weights 8.2, gradients 16.4, optimizer 3.1, activations 44.5``: what the
    memory per GPU is made of (which part to cut when it does not fit), '' when not split."""
    parts = [f"{said} {figures[f'memory_{name}_gib']:.1f}" for name, said in MEMORY_PARTS
             if figures.get(f"memory_{name}_gib") is not None]
    return f"memory GiB: {', '.join(parts)}" if parts else ""


def _training_line(figures: dict[str, Any]) -> str:
    """A Megatron point's answer: ``step 28.308 s; per GPU 155.6 TFLOP/s, MFU 37.4%, 62.2 of 80
    GiB (fits)``, the figures ``run``'s headline gives, within 80 columns."""
    from simpy_astra.workloads.megatron.report import gib, step_time

    per_gpu = []
    if figures.get("tflops_per_gpu") is not None:
        per_gpu.append(f"{figures['tflops_per_gpu']:.1f} TFLOP/s")
    if figures.get("mfu") is not None:
        per_gpu.append(f"MFU {100 * figures['mfu']:.1f}%")
    if figures.get("memory_per_gpu_gib") is not None:
        memory = f"{figures['memory_per_gpu_gib']:.1f}"
        if figures.get("memory_capacity_gib") is not None:
            memory += f" of {gib(figures['memory_capacity_gib'])}"
        memory += " GiB"
        if figures.get("fits") is not None:
            memory += " (fits)" if figures["fits"] else " (too large)"
        per_gpu.append(memory)
    step = f"step {step_time(figures['iteration_time_ns'])}"
    return f"{step}; per GPU {', '.join(per_gpu)}" if per_gpu else step
