"""The cubic extension GF(p^3) = GF(p)[w] / (w^3 - 2) over Goldilocks.

``x^3 - 2`` is irreducible because p = 1 (mod 3) and 2 is not a cube mod p
(``2^((p-1)/3) != 1``; a test checks it). An element ``a0 + a1 w + a2 w^2`` is a ``uint64``
array whose trailing axis has size 3 holding ``(a0, a1, a2)``; leading axes batch. Base-field
elements are embedded as ``(a, 0, 0)``.

Same conventions as :mod:`jaxstark.field.goldilocks`: concrete inputs are checked (dtype,
trailing axis 3, canonical coordinates), traced inputs are not; ``inv(0) == 0``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt64

from jaxstark.field import goldilocks as gl
from jaxstark.field._check import checked, field_array, require_x64

__all__ = [
    "W",
    "DEGREE",
    "add",
    "sub",
    "neg",
    "mul",
    "square",
    "mul_base",
    "embed",
    "inv",
    "batch_inv",
    "pow",
    "powers",
    "from_int",
    "to_int",
    "random",
    "zeros",
    "ones",
]

W = 2  # w^3 = W
DEGREE = 3

Ext = UInt64[Array, " *shape 3"]
Base = UInt64[Array, " *shape"]

_bmul, _badd, _bsub = gl._mul, gl._add, gl._sub


def _double(x: Base) -> Base:
    return _badd(x, x)


def _split(a: Ext) -> tuple[Base, Base, Base]:
    return a[..., 0], a[..., 1], a[..., 2]


def _join(c0: Base, c1: Base, c2: Base) -> Ext:
    return jnp.stack(jnp.broadcast_arrays(c0, c1, c2), axis=-1)


def _add(a: Ext, b: Ext) -> Ext:
    return _badd(a, b)


def _sub(a: Ext, b: Ext) -> Ext:
    return _bsub(a, b)


def _mul(a: Ext, b: Ext) -> Ext:
    a0, a1, a2 = _split(a)
    b0, b1, b2 = _split(b)
    # Karatsuba-style products: 6 base multiplications instead of 9.
    m0, m1, m2 = _bmul(a0, b0), _bmul(a1, b1), _bmul(a2, b2)
    x01 = _bsub(_bsub(_bmul(_badd(a0, a1), _badd(b0, b1)), m0), m1)  # a0 b1 + a1 b0
    x02 = _bsub(_bsub(_bmul(_badd(a0, a2), _badd(b0, b2)), m0), m2)  # a0 b2 + a2 b0
    x12 = _bsub(_bsub(_bmul(_badd(a1, a2), _badd(b1, b2)), m1), m2)  # a1 b2 + a2 b1
    c0 = _badd(m0, _double(x12))  # w^3 = 2
    c1 = _badd(x01, _double(m2))
    c2 = _badd(x02, m1)
    return _join(c0, c1, c2)


def _mul_base(a: Ext, s: Base) -> Ext:
    return _bmul(a, s[..., None])


def _adjugate(a: Ext) -> tuple[Ext, Base]:
    """For w^3 = W: a * (b0 + b1 w + b2 w^2) = N with b0 = a0^2 - W a1 a2,
    b1 = W a2^2 - a0 a1, b2 = a1^2 - a0 a2 and N = a0 b0 + W (a1 b2 + a2 b1), a base-field
    element (the norm); N = 0 only for a = 0."""
    a0, a1, a2 = _split(a)
    b0 = _bsub(_bmul(a0, a0), _double(_bmul(a1, a2)))
    b1 = _bsub(_double(_bmul(a2, a2)), _bmul(a0, a1))
    b2 = _bsub(_bmul(a1, a1), _bmul(a0, a2))
    norm = _badd(_bmul(a0, b0), _double(_badd(_bmul(a1, b2), _bmul(a2, b1))))
    return _join(b0, b1, b2), norm


def _inv(a: Ext) -> Ext:
    adj, norm = _adjugate(a)
    return _mul_base(adj, gl._inv(norm))


def _batch_inv(a: Ext) -> Ext:
    adj, norm = _adjugate(a)
    return _mul_base(adj, gl._batch_inv(norm))


@checked(2, ext=(True, True))
def add(a: Ext, b: Ext) -> Ext:
    """a + b."""
    return _add(a, b)


@checked(2, ext=(True, True))
def sub(a: Ext, b: Ext) -> Ext:
    """a - b."""
    return _sub(a, b)


@checked(1, ext=(True,))
def neg(a: Ext) -> Ext:
    """-a."""
    return _bsub(jnp.zeros_like(a), a)


@checked(2, ext=(True, True))
def mul(a: Ext, b: Ext) -> Ext:
    """a * b (6 base multiplications)."""
    return _mul(a, b)


@checked(1, ext=(True,))
def square(a: Ext) -> Ext:
    """a^2."""
    return _mul(a, a)


@checked(2, ext=(True, False))
def mul_base(a: Ext, s: Base) -> Ext:
    """Extension element times base element (``s`` broadcasts against ``a[..., 0]``)."""
    return _mul_base(a, s)


def _embed(a: Base) -> Ext:
    z = jnp.zeros_like(a)
    return _join(a, z, z)


@checked(1)
def embed(a: Base) -> Ext:
    """Base elements to extension elements ``(a, 0, 0)``."""
    return _embed(a)


@checked(1, ext=(True,))
def inv(a: Ext) -> Ext:
    """Multiplicative inverse via the norm (one base inversion); ``inv(0) == 0``."""
    return _inv(a)


@checked(1, ext=(True,))
def batch_inv(a: Ext) -> Ext:
    """Inverse of every element: the norms (base field) are inverted with Montgomery's trick;
    zeros map to zero."""
    return _batch_inv(a)


def _one_like(a: Ext) -> Ext:
    z = jnp.zeros(a.shape[:-1], jnp.uint64)
    return _join(jnp.ones(a.shape[:-1], jnp.uint64), z, z)


def _pow_bits(a: Ext, e: np.uint64, nbits: int) -> Ext:
    return gl.square_and_multiply(_mul, _one_like(a), a, e, nbits)


_pow_jit = jax.jit(_pow_bits, static_argnums=2)


def pow(a: Ext, e: int) -> Ext:  # noqa: A001
    """a^e for a Python int exponent 0 <= e < 2^64 (negative: inverse first)."""
    a = field_array(a, "pow base", ext=True)
    e = int(e)
    if e < 0:
        a, e = inv(a), -e
    if e >= 1 << 64:
        raise ValueError("ext.pow: exponent must be below 2^64")
    return _pow_jit(a, np.uint64(e), max(e.bit_length(), 1))


def _powers(base: Ext, n: int) -> UInt64[Array, " n 3"]:
    return gl.powers_by_doubling(_mul, _one_like(base[None]), base, n)


def powers(base: Ext, n: int) -> UInt64[Array, " n 3"]:
    """[1, base, ..., base^(n-1)] for one extension element ``base`` (shape (3,))."""
    base = field_array(base, "powers base", ext=True)
    if base.shape != (3,):
        raise ValueError(f"ext.powers: base must be one element of shape (3,), got {base.shape}")
    return _powers(jnp.asarray(base), n)


def from_int(values) -> Ext:
    """Python ints (trailing axis 3: the coordinates) reduced mod p."""
    out = gl.from_int(values)
    if out.ndim == 0 or out.shape[-1] != 3:
        raise ValueError(f"ext.from_int: need a trailing axis of size 3, got shape {out.shape}")
    return out


def to_int(a: Ext):
    """Coordinates as Python ints (numpy object array, trailing axis 3)."""
    return gl.to_int(a)


def random(key: Array, shape: tuple[int, ...]) -> Ext:
    """Random extension elements of batch shape ``shape`` (array shape ``shape + (3,)``)."""
    return gl.random(key, (*shape, 3))


def zeros(shape: tuple[int, ...]) -> Ext:
    require_x64()
    return jnp.zeros((*shape, 3), jnp.uint64)


def ones(shape: tuple[int, ...]) -> Ext:
    require_x64()
    return _one_like(jnp.zeros((*shape, 3), jnp.uint64))
