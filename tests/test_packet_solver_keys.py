"""The packet solver's records are keys of its memo tables (:class:`~.rates.Solutions`): a
Unit and a Route keep the hash of their fields from their making, so that a solve does not
hash their nested tuples again, and match exactly as the plain tuples of their fields do."""

from __future__ import annotations

from collections import Counter

from simpy_astra.network.packet.solver import Route, Unit, hop_limit


def test_a_unit_hashes_and_matches_as_its_fields() -> None:
    fields = (("p", "q"), (None, "p"), (1.0, 0.5), 0, 2.0, hop_limit(1, True))
    unit, twin = Unit(*fields), Unit(*fields)
    assert unit.fields_hash == hash(unit) == hash(fields)  # (kept: the hash of the fields alone)
    assert unit == twin and unit is not twin
    assert unit != Unit(*fields[:2], (1.0, 0.25), *fields[3:])
    assert Counter([unit, twin]) == Counter({unit: 2})
    assert (unit.ports, unit.weights, unit.cap_limit) == (fields[0], fields[2], fields[5])


def test_a_route_hashes_and_matches_as_its_fields() -> None:
    fields = (("p", "q"), (None, "p"), (False, True), (None, 0.5))
    route, twin = Route(*fields), Route(*fields)
    assert route.fields_hash == hash(route) == hash(fields)
    assert route == twin and frozenset(Counter([route]).items()) == frozenset(Counter([twin]).items())
    assert route != Route(fields[0], fields[1], (False, False), fields[3])
    assert route.backlogged == (False, True)
