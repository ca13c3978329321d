"""Evaluating polynomials in coefficient form at one point.

``evaluate(coeffs, x)`` computes ``sum_k coeffs[k] * x^k`` for every column of a ``(n, *batch)``
coefficient array (the layout of :mod:`jaxstark.ntt`), at a base-field point (``x`` of shape
``()``) or an extension point (shape ``(3,)``). Coefficients may themselves be extension
elements (``ext_coeffs=True``: shape ``(n, *batch, 3)``). The powers ``1, x, ..., x^(n-1)`` are
built by doubling (log n batched multiplications) and the sum is a modular reduction along
axis 0, so the whole evaluation is parallel -- no length-n sequential Horner loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, UInt64

from jaxstark.errors import ShapeError
from jaxstark.field import extension as ext
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array

__all__ = ["evaluate"]


def _evaluate(coeffs: Array, x: Array, ext_coeffs: bool) -> Array:
    n = coeffs.shape[0]
    batch_nd = coeffs.ndim - 1 - int(ext_coeffs)
    if x.ndim == 0:  # base point: powers (n,)
        xp = gl._powers(x, n).reshape(n, *((1,) * batch_nd), *((1,) if ext_coeffs else ()))
        terms = gl._mul(coeffs, xp)
    else:  # extension point: powers (n, 3)
        xp = ext._powers(x, n).reshape(n, *((1,) * batch_nd), 3)
        terms = ext._mul(coeffs, xp) if ext_coeffs else ext._mul_base(xp, coeffs)
    return gl._sum(terms, 0)


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
