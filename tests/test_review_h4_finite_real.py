"""One rule for a plug-in's number of ns (:func:`simpy_astra.infra.horizon.finite_real`): a
link's hold, a backend's delay, ``ctx.wait`` and a switch's release all read numpy's numbers, a
``Fraction`` and a ``Decimal`` alike. The switch kept a second copy of it; neither caught what
``math.isfinite`` raises for a number past a float's range (``10**400``, a ``Fraction`` of it),
so a model's exact arithmetic that ran away was an OverflowError, not the model's one line."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from simpy_astra.infra.horizon import HORIZON_NS, finite_real, whole_ns
from simpy_astra.network.switch import SwitchElement, checked_release_ns
from simpy_astra.plugins import PluginError

#: past a float's range (about 1.8e308), so past the horizon (2**63 - 1 ns) too
HUGE = 10**400


@pytest.mark.parametrize("value", [HUGE, Fraction(HUGE, 3), -HUGE, Fraction(-HUGE, 3)],
                         ids=["int", "fraction", "-int", "-fraction"])
def test_a_number_past_a_float_is_no_delay(value) -> None:
    assert not finite_real(value)
    assert whole_ns(value) is None


@pytest.mark.parametrize("value, ns", [(Fraction(401, 2), 200), (Decimal("200.5"), 200), (HORIZON_NS, HORIZON_NS)])
def test_exact_numbers_within_the_horizon_are_cut_to_whole_ns(value, ns) -> None:
    assert whole_ns(value) == ns


class _Held(SwitchElement):
    """A switch model whose ``release_ns`` counts exactly (never run: its check is read alone)."""

    def __init__(self) -> None:  # noqa: D107 - no simulation: only the contract check is read
        pass


def test_a_switch_release_past_a_float_is_the_models_one_line() -> None:
    with pytest.raises(PluginError, match=r"release_ns\(\) returned Fraction\(.*it must return a finite time in ns"):
        checked_release_ns(_Held(), Fraction(HUGE, 3))


def test_a_switch_release_in_decimal_is_cut_as_a_delay_is() -> None:
    assert checked_release_ns(_Held(), Decimal("1030.5")) == 1030
