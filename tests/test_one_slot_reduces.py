"""One slot's reduce decisions are read from a cached period (``one_slot_reduces``) instead of
asking a :class:`ReduceBudget` per packet: the same answers, packet for packet, over several
periods, for every kind and budget (the all-reduce toggle's period is two refills)."""

from __future__ import annotations

from itertools import cycle, islice

import pytest

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER
from simpy_astra.collectives.injection import ReduceBudget, one_slot_reduces


@pytest.mark.parametrize("kind", [ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL])
@pytest.mark.parametrize("nz_budget", [0, 1, 2, 3, 7, 63])
def test_the_cached_period_answers_as_the_budget_does(kind: str, nz_budget: int) -> None:
    packets = 5 * 2 * (1 + nz_budget) + 3
    budget = ReduceBudget(kind, 0, 1, nz_budget)
    expected = [budget.next_reduces() for _ in range(packets)]
    assert list(islice(cycle(one_slot_reduces(kind, nz_budget)), packets)) == expected
    if kind == ALL_REDUCE and nz_budget:
        assert True in expected and expected[1:1 + nz_budget] != expected[2 + nz_budget:2 + 2 * nz_budget]
