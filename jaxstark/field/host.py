"""The field on the host: Python integers (and numpy object arrays of them), no JAX.

:class:`HostVal` is ``c0 + c1 w + c2 w^2`` of GF(p^3) (``w^3 = 2``) with the constraint-code
operator interface of :class:`~jaxstark.air.Val` (``+ - * **``, Python ints and constant
``Val`` objects as operands). Each
coordinate is a Python int -- one scalar -- or a numpy ``object`` array of Python ints -- a batch
(e.g. one value per FRI query), every operation element-wise. A plain ``object`` (or integer)
array used as an operand is a batch of base-field values. The verifier evaluates an AIR's
constraints at the out-of-domain point and the DEEP and FRI checks at the queried points with
it: a few hundred operations in all, where dispatching (and compiling) array programs would cost
far more than the arithmetic.

Inversion uses the norm: for ``a`` with adjugate ``b`` (``b0 = a0^2 - 2 a1 a2``, ``b1 = 2 a2^2 -
a0 a1``, ``b2 = a1^2 - a0 a2``), ``a b = N(a)`` lies in the base field, so ``1/a = b / N(a)`` and one
base inversion (``pow(N, p - 2, p)``) does the work; ``0 -> 0``.

:func:`interpolate` turns evaluations on the size-``m`` subgroup into coefficients (a Python
number-theoretic transform), for the periodic columns the verifier evaluates at ``z``.
"""

from __future__ import annotations

import numpy as np

from jaxstark.field.goldilocks import P, root_of_unity
from jaxstark.field.val import Val

__all__ = ["HostVal", "batch", "interpolate", "inv_base", "powers"]


def _reduce(x):
    if isinstance(x, np.ndarray):
        return (x if x.dtype == object else x.astype(object)) % P
    return int(x) % P


def batch(values) -> np.ndarray:
    """Base-field values (any integer array or sequence) as an ``object`` array of Python ints."""
    return np.asarray(values).astype(object) % P


def powers(base: int, n: int) -> np.ndarray:
    """``base^0 .. base^(n-1)`` as a ``uint64`` array, one Python multiplication each (the
    twiddle and coset tables of small domains, :data:`jaxstark.ntt.HOST_TABLES_UP_TO`)."""
    out, x, b = [], 1, int(base) % P
    for _ in range(n):
        out.append(x)
        x = x * b % P
    return np.array(out, dtype=np.uint64)


def inv_base(x):
    """1/x in the base field (``0 -> 0``), for a Python int or an ``object`` array."""
    if isinstance(x, np.ndarray):
        return _INV(x)
    return pow(int(x), P - 2, P)


_INV = np.frompyfunc(lambda v: pow(v, P - 2, P), 1, 1)


class HostVal:
    __slots__ = ("c",)
    __array_ufunc__ = None  # ndarray (op) HostVal defers to HostVal's reflected operator

    def __init__(self, c):
        if isinstance(c, (int, np.integer)):
            c = (int(c), 0, 0)
        elif isinstance(c, np.ndarray) and c.dtype != object and c.ndim == 0:
            c = (int(c), 0, 0)
        elif isinstance(c, np.ndarray) and c.dtype != object:
            if c.shape[-1] != 3:
                raise ValueError(f"HostVal of an array needs a trailing axis of 3 coordinates, got {c.shape}")
            c = tuple(c.tolist()) if c.ndim == 1 else tuple(c[..., k] for k in range(3))
        self.c = tuple(_reduce(x) for x in c)
        if len(self.c) != 3:
            raise ValueError(f"HostVal needs 3 coordinates, got {len(self.c)}")

    @staticmethod
    def _of(o) -> HostVal:
        if isinstance(o, HostVal):
            return o
        if isinstance(o, (int, np.integer, np.ndarray)):
            return HostVal((o, 0, 0))
        if isinstance(o, Val):  # a constant the constraint code made (Val.const): its value, on the host
            if o.constant() is not None:
                return HostVal((o.constant(), 0, 0))
            v = np.asarray(o.v)
            if not o.is_ext or v.shape != (3,):
                raise TypeError(f"constraint code mixed a {'extension' if o.is_ext else 'base'} Val of shape "
                                f"{v.shape} with host values: only a constant Val (Val.const, or one extension "
                                f"element) can take part in host arithmetic")  # fmt: skip
            return HostVal(v)
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
        if isinstance(o, (int, np.integer, np.ndarray)):  # a base-field scalar or batch
            o = o if isinstance(o, np.ndarray) and o.dtype == object else _reduce(o)
            return HostVal(tuple(a * o for a in self.c))
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
        """The inverse (``0 -> 0``), through the norm (module docstring)."""
        a0, a1, a2 = self.c
        b = ((a0 * a0 - 2 * a1 * a2) % P, (2 * a2 * a2 - a0 * a1) % P, (a1 * a1 - a0 * a2) % P)
        norm = (a0 * b[0] + 2 * (a1 * b[2] + a2 * b[1])) % P
        return HostVal(b) * inv_base(norm)

    def equals(self, o) -> np.ndarray | bool:
        """Element-wise equality (a bool array for a batch)."""
        o = HostVal._of(o)
        eq = [np.asarray(a == b) for a, b in zip(self.c, o.c, strict=True)]
        out = eq[0] & eq[1] & eq[2]
        return bool(out) if out.ndim == 0 else out

    def array(self) -> np.ndarray:
        """The value as ``uint64[..., 3]``."""
        return np.stack([np.asarray(x).astype(np.uint64) for x in self.c], axis=-1)

    def __eq__(self, o) -> bool:
        o = HostVal._of(o)
        if o is NotImplemented:
            return False
        out = self.equals(o)
        if not isinstance(out, bool):
            raise TypeError("== on a batch of HostVals is ambiguous; use .equals")
        return out

    def __hash__(self) -> int:
        return hash(self.c)

    def __bool__(self) -> bool:
        if any(isinstance(x, np.ndarray) and x.ndim for x in self.c):
            raise TypeError("the truth of a batch of HostVals is ambiguous")
        return any(int(x) for x in self.c)

    def __repr__(self) -> str:
        return f"HostVal{self.c}"


def interpolate(values) -> list[int]:
    """Coefficients of the polynomial of degree < m taking ``values[i]`` at ``w_m^i`` (``m`` a
    power of two): an inverse number-theoretic transform in Python integers."""
    vals = [int(v) % P for v in values]
    m = len(vals)
    if m < 1 or m & (m - 1):
        raise ValueError(f"interpolate: the number of values must be a power of two, got {m}")
    log_m = m.bit_length() - 1
    w_inv = pow(root_of_unity(log_m), P - 2, P)
    out = _ntt(vals, w_inv)
    m_inv = pow(m, P - 2, P)
    return [c * m_inv % P for c in out]


def _ntt(a: list[int], w: int) -> list[int]:
    """sum_j a[j] w^(ij) for every i (recursive radix 2)."""
    if len(a) == 1:
        return a
    even, odd = _ntt(a[0::2], w * w % P), _ntt(a[1::2], w * w % P)
    half, out, t = len(a) // 2, [0] * len(a), 1
    for i in range(half):
        x = t * odd[i] % P
        out[i], out[i + half] = (even[i] + x) % P, (even[i] - x) % P
        t = t * w % P
    return out
