"""Extension-field scalars as Python integers, with the constraint-code operator interface.

:class:`HostVal` is one element ``c0 + c1 w + c2 w^2`` of GF(p^3) (``w^3 = 2``) held as three
Python ints, with ``+ - * **`` (and Python ints as operands) like :class:`~jaxstark.air.Val`. The
verifier evaluates an AIR's constraints at the out-of-domain point with it: a handful of scalar
operations per constraint, for which dispatching one array operation each would cost far more
than the arithmetic. Base-field values are embedded (``(v, 0, 0)``).
"""

from __future__ import annotations

import numpy as np

from jaxstark.field.goldilocks import P

__all__ = ["HostVal"]


class HostVal:
    __slots__ = ("c",)

    def __init__(self, c):
        if isinstance(c, (int, np.integer)):
            c = (int(c), 0, 0)
        self.c = tuple(int(x) % P for x in c)
        if len(self.c) != 3:
            raise ValueError(f"HostVal needs 3 coordinates, got {len(self.c)}")

    @staticmethod
    def _of(o) -> HostVal:
        if isinstance(o, HostVal):
            return o
        if isinstance(o, (int, np.integer)):
            return HostVal(int(o))
        return NotImplemented

    def __add__(self, o):
        o = HostVal._of(o)
        if o is NotImplemented:
            return o
        return HostVal(tuple(a + b for a, b in zip(self.c, o.c, strict=True)))

    __radd__ = __add__

    def __sub__(self, o):
        o = HostVal._of(o)
        if o is NotImplemented:
            return o
        return HostVal(tuple(a - b for a, b in zip(self.c, o.c, strict=True)))

    def __rsub__(self, o):
        o = HostVal._of(o)
        if o is NotImplemented:
            return o
        return o - self

    def __mul__(self, o):
        if isinstance(o, (int, np.integer)):
            return HostVal(tuple(a * int(o) for a in self.c))
        o = HostVal._of(o)
        if o is NotImplemented:
            return o
        a0, a1, a2 = self.c
        b0, b1, b2 = o.c
        return HostVal(
            (a0 * b0 + 2 * (a1 * b2 + a2 * b1), a0 * b1 + a1 * b0 + 2 * a2 * b2, a0 * b2 + a1 * b1 + a2 * b0)
        )

    __rmul__ = __mul__

    def __neg__(self):
        return HostVal(tuple(-a for a in self.c))

    def __pow__(self, e: int):
        if not isinstance(e, int) or e < 0:
            raise ValueError(f"HostVal ** e needs a non-negative int exponent, got {e!r}")
        result, base = HostVal(1), self
        while e:
            if e & 1:
                result = result * base
            e >>= 1
            if e:
                base = base * base
        return result

    def inv(self) -> HostVal:
        """The inverse (``0 -> 0``): ``a^(p^3 - 2)``."""
        return self ** (P**3 - 2)

    def __eq__(self, o) -> bool:
        o = HostVal._of(o)
        return o is not NotImplemented and self.c == o.c

    def __hash__(self) -> int:
        return hash(self.c)

    def __bool__(self) -> bool:
        return any(self.c)

    def __repr__(self) -> str:
        return f"HostVal{self.c}"
