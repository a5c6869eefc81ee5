"""A generator that is an object is cached by what it holds (``generator_inputs.held_digest``).
What it holds was read by its repr, and numpy shortens the repr of an array past 1,000 items
(``array([0., 0., 0., ..., 0., 0., 0.])``): two objects whose arrays differ inside had one cache
key, and the second ran the first one's traces."""

from __future__ import annotations

import numpy as np

from simpy_astra.workloads.generator_inputs import held_digest


class TrafficGenerator:
    """A generator holding a traffic matrix."""

    def __init__(self, sizes) -> None:
        self.sizes = sizes

    def __call__(self, params, prefix):
        return None


def test_arrays_that_differ_past_what_their_repr_shows_key_apart() -> None:
    one = np.zeros(2000)
    other = one.copy()
    other[1000] = 1.0
    assert repr(one) == repr(other)  # numpy's summary: the difference is not in the text
    assert held_digest(TrafficGenerator(one)) != held_digest(TrafficGenerator(other))


def test_arrays_alike_key_alike_and_a_type_or_shape_apart() -> None:
    grid = np.arange(2000)
    assert held_digest(TrafficGenerator(grid)) == held_digest(TrafficGenerator(np.arange(2000)))
    assert held_digest(TrafficGenerator(grid)) != held_digest(TrafficGenerator(grid.astype(np.int32)))
    assert held_digest(TrafficGenerator(grid)) != held_digest(TrafficGenerator(grid.reshape(40, 50)))


def test_a_dataclass_generators_array_is_read_by_its_contents_too() -> None:
    # a dataclass writes its own repr, which holds the array's summary
    from dataclasses import dataclass

    @dataclass
    class Matrix:
        sizes: object

        def __call__(self, params, prefix):
            return None

    one = np.zeros(2000)
    other = one.copy()
    other[1000] = 1.0
    assert repr(Matrix(one)) == repr(Matrix(other))
    assert held_digest(Matrix(one)) != held_digest(Matrix(other))
    assert held_digest(Matrix(one)) == held_digest(Matrix(one.copy()))
