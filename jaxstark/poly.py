"""Evaluating polynomials in coefficient form at one point.

``evaluate(coeffs, x)`` computes ``sum_k coeffs[k] * x^k`` for every column of a ``(n, *batch)``
coefficient array (the layout of :mod:`jaxstark.ntt`), at a base-field point (``x`` of shape
``()``) or an extension point (shape ``(3,)``). Coefficients may themselves be extension
elements (``ext_coeffs=True``: shape ``(n, *batch, 3)``). The powers ``1, x, ..., x^(n-1)`` are
one table (:func:`jaxstark.field.goldilocks.powers_by_doubling`: two tables of about sqrt(n)
powers and their outer product) and the sum is a modular reduction along axis 0, so the whole
evaluation is parallel -- no length-n sequential Horner loop. Evaluations at one point share
its table (:func:`_evaluate_powers`; the out-of-domain round builds one for ``z`` and ``z w``).

Wide batches are evaluated :data:`COLUMN_BLOCK` columns at a time in a ``fori_loop``
(:func:`sum_column_blocks`), so the products held at once are ``n x COLUMN_BLOCK``, whatever the
width: the round's temporaries do not grow with the number of columns.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.errors import ShapeError
from jaxstark.field import extension as ext
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array

__all__ = ["evaluate", "sum_column_blocks", "COLUMN_BLOCK"]

COLUMN_BLOCK = 8  # columns per step of a blocked reduction


def sum_column_blocks(partial, columns: int, block: int = COLUMN_BLOCK):
    """``partial(0, c)`` computed as the field sum of ``partial(start, size)`` over blocks of
    ``block`` columns, the full blocks in a ``fori_loop`` (``start`` traced there) and the rest
    after it, so one block's temporaries are live at a time. ``partial(start, size)`` reduces
    columns ``[start, start + size)`` to one field value (any shape, base or extension:
    addition is coordinate-wise)."""
    full, rest = divmod(columns, block)
    if full <= 1:
        return partial(0, columns)
    acc = lax.fori_loop(1, full, lambda k, acc: gl._add(acc, partial(k * block, block)), partial(0, block))
    return gl._add(acc, partial(full * block, rest)) if rest else acc


def _evaluate(coeffs: Array, x: Array, ext_coeffs: bool) -> Array:
    n = coeffs.shape[0]
    if x.ndim == 0:  # base point: powers (n,)
        xp = gl._powers(x, n)
    else:  # extension point: powers (n, 3)
        xp = ext._powers(x, n)
    return _evaluate_powers(coeffs, xp, ext_coeffs)


def _evaluate_powers(coeffs: Array, xp: Array, ext_coeffs: bool) -> Array:
    """:func:`_evaluate` from the point's powers ``xp`` (``(n,)`` base or ``(n, 3)`` extension),
    so that several evaluations at one point share one table."""
    n = coeffs.shape[0]
    base_point = xp.ndim == 1
    batch = coeffs.shape[1 : coeffs.ndim - int(ext_coeffs)]
    tail = (3,) if ext_coeffs or not base_point else ()  # an extension result per column
    flat = coeffs.reshape(n, -1, *((3,) if ext_coeffs else ()))  # (n, C[, 3])
    columns = flat.shape[1]
    xp = xp.reshape(n, 1, *((1,) if ext_coeffs else ())) if base_point else xp.reshape(n, 1, 3)

    def block_values(start, size):  # columns [start, start + size) evaluated: (size, *tail)
        block = lax.dynamic_slice_in_dim(flat, start, size, axis=1)
        if base_point:
            terms = gl._mul(block, xp)
        else:
            terms = ext._mul(block, xp) if ext_coeffs else ext._mul_base(xp, block)
        return gl._sum(terms, 0)

    full, rest = divmod(columns, COLUMN_BLOCK)
    if full <= 1:
        values = block_values(0, columns)
    else:  # one block of columns at a time (see the module docstring)

        def body(k, acc):
            return lax.dynamic_update_slice_in_dim(
                acc, block_values(k * COLUMN_BLOCK, COLUMN_BLOCK), k * COLUMN_BLOCK, 0
            )

        values = lax.fori_loop(0, full, body, jnp.zeros((columns, *tail), jnp.uint64))
        if rest:
            values = values.at[full * COLUMN_BLOCK :].set(block_values(full * COLUMN_BLOCK, rest))
    return values.reshape(*batch, *tail)


_evaluate_jit = jax.jit(_evaluate, static_argnums=2)


def evaluate(
    coeffs: UInt64[Array, " n *batch"], x: int | UInt64[Array, " *point"], *, ext_coeffs: bool = False
) -> UInt64[Array, " *batch_and_point"]:
    """Evaluate every column of ``coeffs`` at ``x``.

    Result shape: ``batch`` for base coefficients at a base point, ``batch + (3,)`` otherwise.
    """
    coeffs = field_array(coeffs, "evaluate coefficients", ext=ext_coeffs)
    if coeffs.ndim < 1 + int(ext_coeffs):
        raise ShapeError(f"evaluate: coefficients need a leading axis of terms, got {coeffs.shape}")
    x = jnp.asarray(field_array(x, "evaluate point"))
    if x.shape not in ((), (3,)):
        raise ShapeError(f"evaluate: the point must have shape () or (3,), got {x.shape}")
    return _evaluate_jit(coeffs, x, ext_coeffs)
