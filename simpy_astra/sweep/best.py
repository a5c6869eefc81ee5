"""best.json: the point minimising the objective, overall and under each result constraint."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.spec import Point, SweepSpec
from simpy_astra.sweep.store import figures_of


@dataclass
class Outcome:
    """One finished point: where it is and what it measured."""

    point: Point
    figures: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.figures["status"] == "ok"


def outcomes(spec: SweepSpec, points: list[Point], rows: dict[str, dict[str, str]]) -> list[Outcome]:
    """The current sweep's points that have a row, in sweep order."""
    return [Outcome(p, figures_of(rows[p.key])) for p in points if p.key in rows]


def _values(spec: SweepSpec, o: Outcome) -> dict[str, Any]:
    return {**o.point.names(spec.axes), **o.figures}


def objective_of(spec: SweepSpec, o: Outcome) -> float | None:
    values = _values(spec, o)
    if any(values.get(n) is None for n in spec.objective.names):
        return None  # e.g. minimising peak memory in a run that does not track it
    return spec.objective.evaluate(values, f"{spec.path}: minimise")


def satisfies(spec: SweepSpec, o: Outcome, constraint) -> bool:
    values = _values(spec, o)
    if any(values.get(n) is None for n in constraint.names):
        return False  # unknown (e.g. memory not tracked) does not satisfy a cap
    return bool(constraint.evaluate(values, f"{spec.path}: constraints"))


def _entry(spec: SweepSpec, candidates: list[Outcome]) -> dict[str, Any] | None:
    scored = [(objective_of(spec, o), i, o) for i, o in enumerate(candidates)]
    scored = [s for s in scored if s[0] is not None]
    if not scored:
        return None
    value, _, o = min(scored, key=lambda s: (s[0], s[1]))
    return {"key": o.point.key, "objective": value, "coordinates": o.point.coordinates,
            "figures": {k: v for k, v in o.figures.items() if k not in ("status", "error")}}


def best_summary(spec: SweepSpec, done: list[Outcome], total_points: int) -> dict[str, Any]:
    ok = [o for o in done if o.ok]
    under = {c.text: _entry(spec, [o for o in ok if satisfies(spec, o, c)]) for c in spec.result_constraints}
    summary = {
        "sweep": spec.name,
        "minimise": spec.objective.text,
        "points": total_points,
        "finished": len(done),
        "failed": len(done) - len(ok),
        "best": _entry(spec, ok),
        "best_under": under,
    }
    if len(spec.result_constraints) > 1:
        summary["best_under_all"] = _entry(
            spec, [o for o in ok if all(satisfies(spec, o, c) for c in spec.result_constraints)])
    return summary


def write_best(out_dir: str, summary: dict[str, Any]) -> str:
    path = os.path.join(out_dir, "best.json")
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as exc:
        raise InputError(f"--out: cannot write {path} ({exc.strerror or exc})") from None
    return path
