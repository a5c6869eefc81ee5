"""Topology building blocks: hop counts, routes and graphs, checked by hand."""

from __future__ import annotations

from simpy_astra.network.fabric import Fabric
from simpy_astra.topologies import REGISTRY, FullyConnected, Line, Ring, Switch


def test_ring_takes_the_shorter_way_and_ties_go_clockwise() -> None:
    ring = Ring(8, 50.0, 500.0)
    assert ring.hops(1, 7) == 2 and ring.route(1, 7) == [1, 0, 7]
    assert ring.hops(0, 4) == 4 and ring.route(0, 4) == [0, 1, 2, 3, 4]
    g = Fabric([ring]).graph()
    assert g.number_of_edges() == 16 and all(d == 2 for _, d in g.out_degree())


def test_switch_and_fully_connected() -> None:
    sw = Switch(4, 50.0, 500.0)
    assert sw.hops(0, 3) == 2 and sw.route(0, 3) == [0, 4, 3]
    assert Fabric([sw]).graph().nodes[4]["kind"] == "switch"
    fc = FullyConnected(4, 50.0, 500.0)
    assert fc.hops(0, 3) == 1 and Fabric([fc]).graph().number_of_edges() == 12


def test_line_is_a_mesh_dimension() -> None:
    line = Line(4, 50.0, 500.0)
    assert line.hops(0, 3) == 3 and line.route(3, 1) == [3, 2, 1]
    degrees = dict(Fabric([line]).graph().out_degree())
    assert degrees == {0: 1, 1: 2, 2: 2, 3: 1}  # ends have one neighbour, the middle two
    assert set(REGISTRY) == {"Ring", "FullyConnected", "Switch", "Line", "Graph"}
