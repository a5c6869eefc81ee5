"""NPU ids as points of the network's grid: the one place that does the stride arithmetic.

Dimension 0 varies fastest in NPU ids (ASTRA-sim's numbering): NPU ``r`` has coordinate
``(r // stride[d]) % dims[d]`` in dimension ``d``, with ``stride[d] = prod(dims[:d])``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


class Grid:
    """The NPU coordinate grid of a (stacked) network, and translations on it."""

    def __init__(self, dims: Sequence[int]) -> None:
        self.dims = tuple(dims)
        self.size = math.prod(self.dims)
        self.strides = [math.prod(self.dims[:d]) for d in range(len(self.dims))]
        #: (stride, size) per dimension, made once: folding's searches move ids hundreds of
        #: thousands of times at 16,384 NPUs, and a zip per call took half of each move
        self._axes = tuple(zip(self.strides, self.dims, strict=True))

    def coord(self, npu: int, d: int) -> int:
        return (npu // self.strides[d]) % self.dims[d]

    def coords(self, npu: int) -> tuple[int, ...]:
        return tuple((npu // s) % n for s, n in self._axes)

    def moved(self, npu: int, d: int, coord: int) -> int:
        """NPU ``npu`` with its coordinate in dimension ``d`` set to ``coord``."""
        return npu + (coord - self.coord(npu, d)) * self.strides[d]

    def line(self, npu: int, d: int) -> tuple[tuple[int, ...], int]:
        """(the NPUs of dimension ``d`` that share every other coordinate with ``npu``, in
        coordinate order; ``npu``'s position among them)."""
        base = self.moved(npu, d, 0)
        stride = self.strides[d]
        return tuple(range(base, base + stride * self.dims[d], stride)), self.coord(npu, d)

    def first_difference(self, a: int, b: int) -> int | None:
        """The lowest dimension in which NPUs ``a`` and ``b`` differ (None: the same NPU)."""
        for d, (s, n) in enumerate(self._axes):
            if (a // s) % n != (b // s) % n:
                return d
        return None

    def add(self, a: int, b: int) -> int:
        """NPU ``a`` moved by translation ``b`` (a translation is named by the NPU it moves 0 to)."""
        out = 0
        for s, n in self._axes:
            out += (((a // s) % n + (b // s) % n) % n) * s
        return out

    def sub(self, a: int, b: int) -> int:
        """The translation that moves ``b`` to ``a``."""
        out = 0
        for s, n in self._axes:
            out += (((a // s) % n - (b // s) % n) % n) * s
        return out
