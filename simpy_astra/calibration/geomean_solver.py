"""The fit's solver: the non-negative unknowns of a small linear problem that minimise the
geometric-mean error (every vertex of the problem tried, or reweighted least squares where
they are too many), deterministic with no starting point.
"""

from __future__ import annotations

import itertools
import math

from simpy_astra.errors import InputError

#: above this many candidate vertices the fit iterates instead (three or more dimension groups)
MAX_VERTICES = 100_000


def geomean_error(errors: list[float]) -> float:
    """exp(mean(ln(1 + |e|))) - 1: the geometric mean of the error factors, minus one."""
    if not errors:
        return float("nan")
    return math.exp(sum(math.log1p(abs(e)) for e in errors) / len(errors)) - 1


def _solve(a: list[list[float]], y: list[float]) -> list[float] | None:
    """Square system by Gaussian elimination with partial pivoting; None if singular."""
    k = len(y)
    m = [list(row) + [t] for row, t in zip(a, y, strict=True)]
    for col in range(k):
        piv = max(range(col, k), key=lambda i: abs(m[i][col]))
        if abs(m[piv][col]) < 1e-12:
            return None
        m[col], m[piv] = m[piv], m[col]
        for i in range(k):
            if i != col and m[i][col] != 0.0:
                f = m[i][col] / m[col][col]
                m[i] = [vi - f * vc for vi, vc in zip(m[i], m[col], strict=True)]
    return [m[i][k] / m[i][i] for i in range(k)]


def minimise(a: list[list[float]], y: list[float], positive: list[int]) -> list[float]:
    """x >= 0 (x[j] > 0 for j in ``positive``) minimising sum ln(1 + |a_i . x - y_i|).

    The objective is concave in each |residual|, so a minimum sits where as many residuals
    or variables are zero as there are unknowns: every such vertex is tried (a few hundred
    for one group of dimensions), and the best one, first in a fixed order, wins.
    Deterministic, no starting point, no tolerance to tune."""
    k = len(a[0])
    n = len(a)
    # constraints: residual i = 0 (ids 0..n-1), or x[j] = 0 (ids n..n+k-1) for free variables
    ids = list(range(n)) + [n + j for j in range(k) if j not in positive]
    if math.comb(len(ids), k) > MAX_VERTICES:
        return _irls(a, y, positive)
    best: tuple[float, list[float]] | None = None
    for combo in itertools.combinations(ids, k):
        rows, rhs = [], []
        for c in combo:
            if c < n:
                rows.append(a[c])
                rhs.append(y[c])
            else:
                rows.append([1.0 if j == c - n else 0.0 for j in range(k)])
                rhs.append(0.0)
        x = _solve(rows, rhs)
        if x is None or any(v < -1e-12 for v in x) or any(x[j] <= 0 for j in positive):
            continue
        x = [max(v, 0.0) for v in x]
        obj = sum(math.log1p(abs(sum(r[j] * x[j] for j in range(k)) - t)) for r, t in zip(a, y, strict=True))
        if best is None or obj < best[0] - 1e-12:
            best = (obj, x)
    if best is None:
        raise InputError("calibrate: no positive bandwidth fits these logs (do their times grow "
                         "with size?)")
    return best[1]


def _weighted_nnls(a: list[list[float]], y: list[float], w: list[float], positive: list[int]) -> list[float] | None:
    """min sum w_i (a_i . x - y_i)^2 with x >= 0 (> 0 for ``positive``): every zero pattern."""
    k = len(a[0])
    free = [j for j in range(k) if j not in positive]
    best: tuple[float, list[float]] | None = None
    for zeros in range(len(free) + 1):
        for zero_set in itertools.combinations(free, zeros):
            cols = [j for j in range(k) if j not in zero_set]
            normal = [[sum(wi * r[i] * r[j] for r, wi in zip(a, w, strict=True)) for j in cols] for i in cols]
            rhs = [sum(wi * r[i] * t for r, t, wi in zip(a, y, w, strict=True)) for i in cols]
            sol = _solve(normal, rhs)
            if sol is None or any(v < 0 for v in sol) or any(v <= 0 for j, v in zip(cols, sol, strict=True)
                                                              if j in positive):
                continue
            x = [0.0] * k
            for j, v in zip(cols, sol, strict=True):
                x[j] = v
            res = sum(wi * (sum(r[j] * x[j] for j in range(k)) - t) ** 2 for r, t, wi in zip(a, y, w, strict=True))
            if best is None or res < best[0] - 1e-15:
                best = (res, x)
    return best[1] if best else None


def _irls(a: list[list[float]], y: list[float], positive: list[int]) -> list[float]:
    """Too many vertices to try: iteratively reweighted least squares on the same objective,
    from the plain least-squares solution (still deterministic)."""
    w = [1.0] * len(a)
    x = _weighted_nnls(a, y, w, positive)
    if x is None:
        raise InputError("calibrate: no positive bandwidth fits these logs (do their times grow "
                         "with size?)")
    for _ in range(200):
        res = [sum(r[j] * x[j] for j in range(len(x))) - t for r, t in zip(a, y, strict=True)]
        w = [1.0 / ((1 + abs(e)) * max(abs(e), 1e-4)) for e in res]
        nxt = _weighted_nnls(a, y, w, positive)
        if nxt is None:
            break
        moved = max(abs(p - q) / max(abs(q), 1e-12) for p, q in zip(nxt, x, strict=True))
        x = nxt
        if moved < 1e-9:
            break
    return x
