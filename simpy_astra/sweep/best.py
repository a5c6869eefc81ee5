"""best.json: the point minimising the objective, overall and under each result constraint.

Never crown what does not fit: when points carry ``fits`` (a Megatron job's memory per GPU
against its GPU's), every best is chosen among the points that fit, and each section says how
many finished points it left out for not fitting (``left_out_not_fitting``). Points Megatron
refuses (``status: invalid``) are counted apart from failures (``invalid``).

Only rows made from the inputs the points use now are compared (a row records the digest of
its inputs, store.py). Points measured by different network backends are never compared: congestion_aware models
link contention and congestion_unaware does not, so a "best" across them would rank a
fidelity choice, not a design. A sweep over several backends gets ``best: null`` and one
``by_backend`` section per backend (its best, best_under, best_under_all), and a ``note``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from simpy_astra.infra import files
from simpy_astra.sweep.result_row import INPUTS_COLUMN, figures_of
from simpy_astra.sweep.spec import Point, SweepSpec


@dataclass
class Outcome:
    """One finished point: where it is and what it measured."""

    point: Point
    figures: dict[str, Any]
    inputs_sha256: str = ""  # the digest of the inputs its row was made from

    @property
    def ok(self) -> bool:
        return self.figures["status"] == "ok"

    @property
    def invalid(self) -> bool:
        return self.figures["status"] == "invalid"

    @property
    def fits(self) -> bool:
        """False only for a point whose memory is known not to fit its GPU."""
        return self.figures.get("fits") != 0


def outcomes(spec: SweepSpec, points: list[Point], rows: dict[str, dict[str, str]],
             inputs: dict[str, str] | None = None) -> list[Outcome]:
    """The current sweep's points that have a row, in sweep order; with ``inputs`` (point key ->
    the digest of its inputs now), only rows made from those inputs."""
    return [Outcome(p, figures_of(rows[p.key]), rows[p.key].get(INPUTS_COLUMN, "")) for p in points
            if p.key in rows and (inputs is None or p.key not in inputs
                                  or rows[p.key].get(INPUTS_COLUMN) == inputs[p.key])]


def _values(spec: SweepSpec, o: Outcome) -> dict[str, Any]:
    return {**o.point.names(spec.axes), **o.figures}


def unmeasured(spec: SweepSpec, o: Outcome, values: dict[str, Any], names: frozenset[str]) -> list[str]:
    """The ``names`` with no value at ``o`` (a figure its run does not measure, a flag it leaves
    unset); a coordinate written null is a value (``nccl_algo != 'ring'`` holds for NCCL's
    choice: it was held unmet, so a constraint naming such an axis left out its null points)."""
    nulls = {a.name for a in spec.axes if o.point.coordinates.get(a.column) is None}
    return [n for n in names if values.get(n) is None and n not in nulls]


def objective_of(spec: SweepSpec, o: Outcome) -> float | None:
    values = _values(spec, o)
    if unmeasured(spec, o, values, spec.goals.objective.names):
        return None  # e.g. minimising peak memory in a run that does not track it
    return spec.goals.objective.number(values, f"{spec.path}: minimise", measured=True)


def satisfies(spec: SweepSpec, o: Outcome, constraint) -> bool:
    values = _values(spec, o)
    if unmeasured(spec, o, values, constraint.names):
        return False  # unknown (e.g. memory not tracked) does not satisfy a cap
    # undefined for this point's figures (a division by zero, past 2**1024): not satisfied, the others ranked
    value = constraint.value(values, f"{spec.path}: constraints", measured=True)
    return value is not None and bool(value)


def unreported(spec: SweepSpec, outcomes: list[Outcome], constraint) -> list[str]:
    """The figures ``constraint`` reads that no outcome reports (peak_memory_gb of a run that
    tracks no memory): no point can be held to it, which 'no point qualifies' did not say."""
    if not outcomes:
        return []
    return sorted(n for n in constraint.names if all(unmeasured(spec, o, _values(spec, o), frozenset({n}))
                                                     for o in outcomes))


def _entry(spec: SweepSpec, candidates: list[Outcome]) -> dict[str, Any] | None:
    """The best of ``candidates`` that fit, saying how many of them did not."""
    left_out = sum(1 for o in candidates if not o.fits)
    scored = [(objective_of(spec, o), i, o) for i, o in enumerate(candidates) if o.fits]
    scored = [s for s in scored if s[0] is not None]
    if not scored:
        return None
    value, _, o = min(scored, key=lambda s: (s[0], s[1]))
    # a tie is named first in sweep order, and the others said: nccl_algo null and ring give
    # one time where NCCL picks ring, and the best line named one as if the other were slower
    tied = [{"key": t.point.key, "coordinates": t.point.coordinates} for v, _, t in scored if v == value and t is not o]
    return {"key": o.point.key, "objective": value, "backend": o.point.backend,
            "inputs_sha256": o.inputs_sha256, "coordinates": o.point.coordinates,
            "figures": {k: v for k, v in o.figures.items() if k not in ("status", "error")},
            "left_out_not_fitting": left_out, "tied_with": tied}


def _section(spec: SweepSpec, ok: list[Outcome]) -> dict[str, Any]:
    """best, best_under each result constraint, and best_under_all, among the points of ``ok``
    that fit (and how many did not)."""
    section: dict[str, Any] = {
        "left_out_not_fitting": sum(1 for o in ok if not o.fits),
        "best": _entry(spec, ok),
        "best_under": {c.text: _entry(spec, [o for o in ok if satisfies(spec, o, c)])
                       for c in spec.goals.result_constraints},
    }
    if len(spec.goals.result_constraints) > 1:
        section["best_under_all"] = _entry(
            spec, [o for o in ok if all(satisfies(spec, o, c) for c in spec.goals.result_constraints)])
    return section


def backends_of(points: list[Point]) -> list[str]:
    return sorted({p.backend for p in points})


def best_summary(spec: SweepSpec, done: list[Outcome], total_points: int,
                 backends: list[str] | None = None) -> dict[str, Any]:
    """``backends``: those of every point of the sweep (finished or not), so a sweep over two
    backends never names one overall best, even before the second one's points finish."""
    ok = [o for o in done if o.ok]
    backends = sorted(set(backends or ()) | {o.point.backend for o in done})
    summary: dict[str, Any] = {
        "sweep": spec.name,
        "minimise": spec.goals.objective.text,
        "points": total_points,
        "finished": len(done),
        "failed": sum(1 for o in done if not o.ok and not o.invalid),
        "invalid": sum(1 for o in done if o.invalid),
        "backends": backends,
    }
    if len(backends) <= 1:
        summary.update(_section(spec, ok))
        return summary
    summary["note"] = ("points of different network backends are not compared (a fidelity choice, not "
                       "a design choice): see by_backend")
    summary["best"] = None
    summary["best_under"] = {c.text: None for c in spec.goals.result_constraints}
    summary["by_backend"] = {b: _section(spec, [o for o in ok if o.point.backend == b]) for b in backends}
    return summary


def best_keys(summary: dict[str, Any]) -> set[str]:
    """The keys of the best points: one overall, or one per backend."""
    sections = [summary, *(summary.get("by_backend") or {}).values()]
    return {s["best"]["key"] for s in sections if s.get("best")}


def write_best(out_dir: str, summary: dict[str, Any]) -> str:
    path = os.path.join(out_dir, "best.json")
    with files.open_output(path, "--out") as f:
        json.dump(summary, f, indent=1)
    return path
