"""Batch inversion in the base field as one Pallas (Triton) kernel.

The ``jnp`` twin, :func:`jaxstark.field.goldilocks._batch_inv`, is Montgomery's trick over 64
groups: two ``fori_loop`` s of 64 steps and a 64-step exponentiation, about 190 steps that run
one after another, each a kernel launch of its own on a GPU. Here the whole trick is one launch:

* the ``n`` elements are viewed as :attr:`Tiling.rows` rows of ``n / rows`` columns (element
  ``r * (n / rows) + c`` at ``(r, c)``); a program takes :attr:`Tiling.block_cols` columns;
* down its rows it forms each column's running products in registers, writing them to the
  output as scratch (a zero counts as one);
* one Fermat inversion ``x^(p - 2)`` per column, a 64-step square-and-multiply loop over the
  exponent's fixed bits (all ones but bit 32), inside the kernel;
* back up its rows: ``out[r] = run * prefix[r - 1]``, ``run = run * x[r]``; a zero's inverse is
  zero, as in the twin.

About four multiplications per element, plus the column's inversion shared by its ``rows``
elements; the values are the inverses themselves, so they equal the twin's bit for bit.
:func:`ext_batch_inv` inverts extension elements through their norms (the adjugate, one base
inversion each), as :func:`jaxstark.field.extension._batch_inv` does.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jaxtyping import Array, UInt64

from jaxstark import kernels
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.kernels import field_ptx, launch

__all__ = ["Tiling", "TILING", "batch_inv", "base_batch_inv", "ext_batch_inv"]

_ZERO, _ONE = np.uint64(0), np.uint64(1)
# p - 2 = 0xFFFFFFFE_FFFFFFFF: every bit set but bit 32, step 31 of the loop from the top bit down
_ZERO_BIT_STEP = 63 - 32


class Tiling(NamedTuple):
    """Rows each column's running product goes down, columns per program, Triton warps, inline PTX."""

    rows: int = 64
    block_cols: int = 256
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def _invert(x_ref, o_ref, *, f: field_ptx.FieldOps):
    rows, cols = x_ref.shape

    def nonzero(v):  # a zero counts as one in the running products
        return jnp.where(v == _ZERO, _ONE, v)

    def forward(r, run):
        run = f.mul(run, nonzero(x_ref[pl.ds(r, 1), :]))
        o_ref[pl.ds(r, 1), :] = run
        return run

    total = lax.fori_loop(0, rows, forward, jnp.ones((1, cols), jnp.uint64))

    def power(i, acc):  # left to right over the bits of p - 2
        square = f.mul(acc, acc)
        return jnp.where(i == _ZERO_BIT_STEP, square, f.mul(square, total))

    run = lax.fori_loop(0, 64, power, jnp.ones((1, cols), jnp.uint64))  # 1 / (x[0] ... x[rows - 1])

    def backward(k, run):
        r = rows - 1 - k
        before = jnp.where(r > 0, o_ref[pl.ds(jnp.maximum(r - 1, 0), 1), :], _ONE)
        raw = x_ref[pl.ds(r, 1), :]
        o_ref[pl.ds(r, 1), :] = jnp.where(raw == _ZERO, _ZERO, f.mul(run, before))
        return f.mul(run, nonzero(raw))

    lax.fori_loop(0, rows, backward, run)


@functools.partial(jax.jit, static_argnames=("interpret", "tiling"))
def batch_inv(a: UInt64[Array, "..."], *, interpret: bool = False, tiling: Tiling = TILING) -> UInt64[Array, "..."]:
    """``1 / a`` element by element (``0`` for ``0``), for canonical base elements of any shape."""
    shape = a.shape
    x = a.reshape(-1)
    n = x.shape[0]
    if n == 0:
        return a
    rows = min(tiling.rows, n)
    cols = -(-n // rows)
    bc = min(tiling.block_cols, 1 << (cols - 1).bit_length())
    cols = -(-cols // bc) * bc
    x = jnp.concatenate([x, jnp.ones((rows * cols - n,), jnp.uint64)]).reshape(rows, cols)
    out = pl.pallas_call(
        functools.partial(_invert, f=field_ptx.ops(interpret, tiling.ptx)),
        out_shape=jax.ShapeDtypeStruct((rows, cols), jnp.uint64),
        grid=(cols // bc,),
        in_specs=[pl.BlockSpec((rows, bc), lambda j: (0, j))],
        out_specs=pl.BlockSpec((rows, bc), lambda j: (0, j)),
        name="batch_inv",
        **launch(interpret, tiling.num_warps),
    )(x)
    return out.reshape(-1)[:n].reshape(shape)


def _base_kernel(a: Array) -> Array:
    return batch_inv(a, interpret=kernels.interpret())


def base_batch_inv(a: UInt64[Array, "..."]) -> UInt64[Array, "..."]:
    """:func:`jaxstark.field.goldilocks._batch_inv` where the kernel posture puts kernels on the
    lowering platform (:func:`jaxstark.kernels.switch`), the twin elsewhere."""
    return kernels.switch(gl._batch_inv, _base_kernel, a)


def _ext_kernel(a: Array) -> Array:
    adj, norm = fext._adjugate(a)
    return fext._mul_base(adj, _base_kernel(norm))


def ext_batch_inv(a: UInt64[Array, "... 3"]) -> UInt64[Array, "... 3"]:
    """:func:`jaxstark.field.extension._batch_inv` where the kernel posture puts kernels on the
    lowering platform (:func:`jaxstark.kernels.switch`), the twin elsewhere."""
    return kernels.switch(fext._batch_inv, _ext_kernel, a)
