"""The Goldilocks prime field, p = 2^64 - 2^32 + 1.

Representation: an element is a ``uint64`` holding its canonical value in ``[0, p)``. Arrays of
any shape are element-wise batches; every operation is a pure traceable function (``jit``,
``vmap``, ``lax`` control flow all work) and returns canonical values.

Public boundary: when an operation is called on concrete arrays its inputs are checked (dtype
``uint64``, every value < p) and a :class:`~jaxstark.errors.FieldDtypeError` or
:class:`~jaxstark.errors.NonCanonicalError` names the offending argument. Under tracing only
dtypes are checked; traced code is the internal hot path and assumes canonical inputs.

Arithmetic never names p as a ``uint64`` literal (it is >= 2^63, which Pallas' Triton lowering
cannot take): ``x >= p`` is computed as "``x + (2^32 - 1)`` overflows" and ``x - p`` as
``x + (2^32 - 1)`` modulo 2^64, because ``2^64 = p + (2^32 - 1)``.

Zero has no inverse: :func:`inv` and :func:`batch_inv` map 0 to 0 (documented, identical under
``jit`` and eagerly); :func:`inv_nonzero` raises for concrete zeros.
"""

from __future__ import annotations

import builtins

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.field._check import P, checked, field_array, require_x64

__all__ = [
    "P",
    "EPSILON",
    "TWO_ADICITY",
    "GENERATOR",
    "add",
    "sub",
    "neg",
    "mul",
    "square",
    "pow",
    "inv",
    "inv_nonzero",
    "batch_inv",
    "canonicalize",
    "from_int",
    "to_int",
    "from_canonical",
    "sum",
    "sum_axis",
    "random",
    "root_of_unity",
    "powers",
]

EPSILON = 0xFFFF_FFFF  # 2^64 mod p = 2^32 - 1
TWO_ADICITY = 32  # 2^32 divides p - 1
GENERATOR = 7  # generates the multiplicative group

_EPS = np.uint64(EPSILON)
_M32 = np.uint64(0xFFFF_FFFF)
_S32 = np.uint64(32)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)

Elt = UInt64[Array, " *shape"]


# ---------------------------------------------------------------------------------------------
# Traceable kernels (assume canonical inputs of equal or broadcastable shape)
# ---------------------------------------------------------------------------------------------


def _canon(x: Elt) -> Elt:
    """Reduce any uint64 to [0, p): subtract p once when x >= p."""
    s = x + _EPS  # == x - p (mod 2^64) and overflows exactly when x >= p
    return jnp.where(s < x, s, x)


def _fold(s: Elt, wrapped: Elt) -> Elt:
    """The canonical value of ``s + 2^64 * wrapped`` for a sum that wrapped at most once and,
    if it did, is below ``p - 2^32`` (true for a sum of two canonical values, and for the last
    step of :func:`_reduce128`): either way the answer is ``s`` or ``s + (2^32 - 1)``. One select
    instead of two: ``u = s + eps`` is right when the sum wrapped or when ``s >= p`` (then ``u``
    itself wraps to ``s - p``)."""
    u = s + _EPS
    return jnp.where(wrapped | (u < s), u, s)


def _add(a: Elt, b: Elt) -> Elt:
    s = a + b
    return _fold(s, s < a)


def _sub(a: Elt, b: Elt) -> Elt:
    d = a - b
    return jnp.where(a < b, d - _EPS, d)  # borrowed 2^64: remove 2^64 mod p


def _mul_wide(a: Elt, b: Elt) -> tuple[Elt, Elt]:
    """Full 128-bit product as (lo, hi) 64-bit words, from 32-bit limbs."""
    a0, a1 = a & _M32, a >> _S32
    b0, b1 = b & _M32, b >> _S32
    ll, lh, hl, hh = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    t = (ll >> _S32) + (lh & _M32) + (hl & _M32)  # < 3 * 2^32, no overflow
    lo = (t << _S32) | (ll & _M32)
    hi = hh + (lh >> _S32) + (hl >> _S32) + (t >> _S32)
    return lo, hi


def _reduce128(lo: Elt, hi: Elt) -> Elt:
    """(hi * 2^64 + lo) mod p using 2^64 = 2^32 - 1 and 2^96 = -1 (mod p)."""
    hi_hi = hi >> _S32
    hi_lo = hi & _M32
    t0 = lo - hi_hi
    t0 = jnp.where(lo < hi_hi, t0 - _EPS, t0)
    t1 = (hi_lo << _S32) - hi_lo  # hi_lo * (2^32 - 1) <= (2^32 - 1)^2, without a multiply
    t2 = t0 + t1
    return _fold(t2, t2 < t1)


def _mul_inline(a: Elt, b: Elt) -> Elt:
    """a * b mod p written out where it is called: what a kernel body (Pallas) uses, and what a
    numpy constant operand gets (its limbs are then split in numpy)."""
    lo, hi = _mul_wide(a, b)
    return _reduce128(lo, hi)


_mul_traced = jax.jit(_mul_inline)


def _mul(a: Elt, b: Elt) -> Elt:
    """a * b mod p. Traced operands go through one jitted function, traced and lowered once per
    pair of shapes, where a round holds hundreds of products (DEEP's trace on the CPU 0.61 ->
    0.36 s, benchmarks/RESULTS.md, 2026-12-05); XLA inlines the call."""
    if isinstance(a, np.ndarray | np.generic | int) or isinstance(b, np.ndarray | np.generic | int):
        return _mul_inline(a, b)
    return _mul_traced(a, b)


def square_and_multiply(mul, one, a, e, nbits: int):
    """a^e in any multiplicative structure: right-to-left square-and-multiply over the low
    ``nbits`` bits of the uint64 exponent ``e``, as a ``fori_loop`` (compile time independent of
    ``nbits``). ``one`` is the identity, already shaped like the result. A step does both of its
    products (the result times the square, the square squared) in a single ``mul`` on stacked
    operands, so the loop body holds one copy of the multiplication."""

    def body(i, carry):
        r, square = carry
        prod = mul(jnp.stack([r, square]), jnp.stack([square, square]))
        bit = (e >> i.astype(jnp.uint64)) & _ONE
        return jnp.where(bit == _ONE, prod[0], r), prod[1]

    r, _ = lax.fori_loop(0, nbits, body, (one, jnp.broadcast_to(a, one.shape)))
    return r


def powers_by_doubling(mul, one, base, n: int):
    """[1, base, ..., base^(n-1)] along a new leading axis. ``one`` is the identity with a
    leading axis of size 1 and then ``base``'s shape: ``(1,)`` for a base element, ``(1, 3)``
    for an extension element, ``(1, k, 3)`` for a stack of k extension elements (each gets its
    own powers).

    Two tables of about sqrt(n) entries -- ``base^j`` and ``base^(B i)`` with ``B ~ sqrt(n)``,
    both from one :func:`square_and_multiply` loop -- and one outer product: O(n) multiplications
    and a program whose size does not grow with n (an unrolled doubling chain costs seconds of
    compile time per call site)."""
    elem = one.shape[1:]
    if n <= 1:
        return jnp.broadcast_to(one, (1, *elem))[:n]
    log_b = ((n - 1).bit_length() + 1) // 2
    block = 1 << log_b
    count = -(-n // block)
    exponents = np.concatenate([np.arange(block), block * np.arange(count)])  # both tables, one loop
    e = jnp.asarray(exponents.astype(np.uint64).reshape(len(exponents), *((1,) * len(elem))))
    ones = jnp.broadcast_to(one[0], (len(exponents), *elem))
    table = square_and_multiply(mul, ones, jnp.reshape(base, elem), e, int(exponents.max()).bit_length())
    small, big = table[:block], table[block:]
    return mul(big[:, None], small[None, :]).reshape((count * block, *elem))[:n]


def _pow_bits(a: Elt, e: Elt, nbits: int) -> Elt:
    shape = jnp.broadcast_shapes(a.shape, jnp.shape(e))
    return square_and_multiply(_mul, jnp.ones(shape, jnp.uint64), a, e, nbits)


def _inv(a: Elt) -> Elt:
    return _pow_bits(a, np.uint64(P - 2), 64)


# ---------------------------------------------------------------------------------------------
# Public operations
# ---------------------------------------------------------------------------------------------


@checked(2)
def add(a: Elt, b: Elt) -> Elt:
    """a + b mod p (broadcasting)."""
    return _add(a, b)


@checked(2)
def sub(a: Elt, b: Elt) -> Elt:
    """a - b mod p (broadcasting)."""
    return _sub(a, b)


@checked(1)
def neg(a: Elt) -> Elt:
    """-a mod p."""
    return _sub(jnp.zeros_like(a), a)


@checked(2)
def mul(a: Elt, b: Elt) -> Elt:
    """a * b mod p (broadcasting)."""
    return _mul(a, b)


@checked(1)
def square(a: Elt) -> Elt:
    """a^2 mod p."""
    return _mul(a, a)


def pow(a: Elt, e: int | Elt) -> Elt:  # noqa: A001 - the field's own pow
    """a^e mod p.

    ``e`` is a Python int (any sign; negative exponents invert first, so ``pow(0, -1)`` is 0)
    or a ``uint64`` array of exponents broadcasting against ``a``. ``0^0`` is 1.
    """
    a = field_array(a, "pow base")
    if isinstance(e, (int, np.integer)) and not isinstance(e, bool):
        e = int(e)
        if e < 0:
            a, e = inv(a), -e
        if e >= 1 << 64:  # reduce by Fermat, keeping 0^e == 0 for e > 0
            e = (e % (P - 1)) or (P - 1)
        return _pow_static(a, e)
    e = jnp.asarray(e)
    if e.dtype != jnp.uint64:
        raise TypeError(f"pow exponent: expected a Python int or a uint64 array, got {e.dtype}")
    return _pow_array(a, e)


@jax.jit
def _pow_array(a: Elt, e: Elt) -> Elt:
    return _pow_bits(a, e, 64)


def _pow_static(a: Elt, e: int) -> Elt:
    return _pow_static_jit(a, np.uint64(e), max(e.bit_length(), 1))


_pow_static_jit = jax.jit(_pow_bits, static_argnums=2)


@checked(1)
def inv(a: Elt) -> Elt:
    """Multiplicative inverse a^(p-2). By convention ``inv(0) == 0`` (no error, so it is the
    same function under ``jit``); use :func:`inv_nonzero` to reject zeros eagerly."""
    return _inv(a)


def inv_nonzero(a: Elt) -> Elt:
    """Like :func:`inv`, but raises ``ZeroDivisionError`` if a concrete input holds a zero."""
    a = field_array(a, "inv_nonzero argument")
    if not isinstance(a, jax.core.Tracer) and bool(jnp.any(a == _ZERO)):
        raise ZeroDivisionError("inv_nonzero: the input contains 0, which has no inverse in GF(p)")
    return inv(a)


_BATCH_INV_GROUP = 64


def _batch_inv(a: Elt) -> Elt:
    """Montgomery's trick in groups: the elements are split into 64 rows of ``m`` (row ``j`` holds
    elements ``j*m ... j*m + m-1``); a ``fori_loop`` builds the running products row by row, one
    exponentiation inverts the ``m`` group totals, and a second loop walks back. About five
    multiplications per element, contiguous rows on a GPU, and a program of constant size."""
    shape = a.shape
    x = a.reshape(-1)
    size = x.shape[0]
    if size == 0:
        return a
    zero = x == _ZERO
    x = jnp.where(zero, _ONE, x)
    w = _BATCH_INV_GROUP
    m = -(-size // w)
    x = jnp.concatenate([x, jnp.ones((w * m - size,), jnp.uint64)]).reshape(w, m)

    def forward(j, pre):
        return pre.at[j].set(_mul(pre[j - 1], x[j]))

    prefix = lax.fori_loop(1, w, forward, x)  # prefix[j] = x[0] * ... * x[j] per group
    running = _inv(prefix[w - 1])  # 1 / (x[0] * ... * x[j]) for j = w-1

    def backward(k, carry):
        run, out = carry
        j = w - 1 - k
        before = jnp.where(j > 0, prefix[jnp.maximum(j - 1, 0)], jnp.ones_like(run))
        return _mul(run, x[j]), out.at[j].set(_mul(run, before))

    _, out = lax.fori_loop(0, w, backward, (running, jnp.zeros_like(x)))
    out = out.reshape(-1)[:size]
    return jnp.where(zero, _ZERO, out).reshape(shape)


@checked(1)
def batch_inv(a: Elt) -> Elt:
    """Element-wise inverse of a whole array by Montgomery's trick (about five multiplications
    per element plus one inversion per group of 64). Zeros map to zero, as in :func:`inv`."""
    return _batch_inv(a)


@checked(1)
def sum(a: Elt) -> Elt:  # noqa: A001
    """Sum of all elements mod p (over every axis; :func:`sum_axis` sums along one).

    Splits each element into 32-bit halves and adds them with native uint64 sums (exact for up to
    2^32 terms), then reduces ``hi * 2^32 + lo``.
    """
    return _sum(a, None)


def _sum(a: Elt, axis: int | tuple[int, ...] | None) -> Elt:
    lo = jnp.sum(a & _M32, axis=axis, dtype=jnp.uint64)
    hi = jnp.sum(a >> _S32, axis=axis, dtype=jnp.uint64)
    return _add(_mul(_canon(hi), np.uint64(1 << 32)), _canon(lo))


def sum_axis(a: Elt, axis: int) -> Elt:
    """Sum mod p along one axis (at most 2^32 terms). Traceable; checks concrete inputs."""
    a = field_array(a, "sum_axis argument")
    return _sum_axis_jit(a, axis)


_sum_axis_jit = jax.jit(_sum, static_argnums=1)


def canonicalize(x: UInt64[Array, " *shape"]) -> Elt:
    """Map arbitrary uint64 values to canonical elements (x mod p)."""
    require_x64()
    if np.dtype(getattr(x, "dtype", None) or np.int64) != np.uint64:
        raise TypeError(f"canonicalize: expected a uint64 array, got {getattr(x, 'dtype', type(x))}")
    return _canon_jit(x)


_canon_jit = jax.jit(_canon)


def from_int(values) -> Elt:
    """Python integers (any size or sign, scalars or nested lists/arrays) to canonical elements,
    reduced mod p on the host."""
    require_x64()
    arr = np.asarray(values, dtype=object)
    reduced = np.vectorize(lambda v: int(v) % P, otypes=[object])(arr) if arr.size else arr
    return jnp.asarray(np.asarray(reduced, dtype=np.uint64).reshape(arr.shape))


def to_int(a: Elt):
    """Canonical elements to Python ints (a scalar, or a numpy object array of the same shape)."""
    host = np.asarray(a)
    if host.dtype != np.uint64:
        raise TypeError(f"to_int: expected uint64, got {host.dtype}")
    out = host.astype(object)
    return int(out) if out.ndim == 0 else out


def from_canonical(x) -> Elt:
    """Validate canonical uint64 input (dtype and every value < p) and return a JAX array."""
    return jnp.asarray(field_array(x, "from_canonical argument"))


def random(key: Array, shape: tuple[int, ...]) -> Elt:
    """Uniform-looking random elements: 64 random bits reduced mod p (bias about 2^-32)."""
    require_x64()
    return _canon(jax.random.bits(key, shape, dtype=jnp.uint64))


# ---------------------------------------------------------------------------------------------
# Roots of unity (host-side Python ints)
# ---------------------------------------------------------------------------------------------

_TWO_ADIC_ROOT = builtins.pow(GENERATOR, (P - 1) >> TWO_ADICITY, P)  # order exactly 2^32


def root_of_unity(log_n: int) -> int:
    """A primitive 2^log_n-th root of unity, for 0 <= log_n <= 32, as a Python int.

    The roots are compatible: ``root_of_unity(k)**2 == root_of_unity(k - 1)``; they are powers of
    GENERATOR^((p-1)/2^32).
    """
    if not isinstance(log_n, (int, np.integer)) or not 0 <= log_n <= TWO_ADICITY:
        raise ValueError(f"root_of_unity: log_n must be an int in [0, {TWO_ADICITY}], got {log_n!r}")
    return builtins.pow(_TWO_ADIC_ROOT, 1 << (TWO_ADICITY - int(log_n)), P)


def powers(base: int | Elt, n: int) -> Elt:
    """[1, base, base^2, ..., base^(n-1)] as a uint64 array (base a Python int or a uint64
    scalar); :func:`powers_by_doubling`: O(n) vectorised multiplications, a program of fixed size."""
    if n < 0:
        raise ValueError(f"powers: n must be >= 0, got {n}")
    b = field_array(base, "powers base") if not isinstance(base, jax.core.Tracer) else base
    return _powers(jnp.asarray(b, jnp.uint64), n)


def _powers(base: Elt, n: int) -> Elt:
    return powers_by_doubling(_mul, jnp.ones((1,), jnp.uint64), base, n)
