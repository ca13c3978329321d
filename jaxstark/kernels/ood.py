"""Columns of coefficients evaluated at extension points in one pass, as a Pallas (Triton) kernel.

``sum_i m[i, c] x_k^i`` for an ``(n, C)`` matrix ``m`` of base-field coefficients and ``K``
extension points ``x_k`` -- the out-of-domain round's sums (:mod:`jaxstark.rounds.r3_ood`).
The ``jnp`` twin (:func:`jaxstark.poly._evaluate_powers`) reads a table of every power of each
point and holds the products; here:

* the grid runs over blocks of :attr:`Tiling.rows` rows (and of ``block_cols`` columns); a
  program forms the powers of its rows itself, ``x^(b R + j) = x^(b R) x^j``, from one small
  table (``x^j`` for ``j < R``, then ``x^(b R)`` per block) filled by one launch of
  :func:`jaxstark.kernels.powers.ext_powers_at`: one extension product per row and point;
* each coefficient times the three coordinates of a power is three base products, and each
  column's products are summed over the block's rows as two exact integer sums, of their low
  and of their high 32 bits (no modular reduction in the loop);
* the kernel writes those per-block partial sums; the caller adds them over the blocks (exact
  while ``n <= 2^32``) and reduces mod p once: ``hi * 2^32 + lo``.

Every value is the field sum itself, so the results equal the twin's bit for bit.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, UInt64

from jaxstark.field import goldilocks as gl
from jaxstark.kernels import field_ptx, launch, powers

__all__ = ["Tiling", "TILING", "evaluate"]

_M32 = np.uint64(0xFFFFFFFF)
_PARTS = 16  # rows of a block's partial sums: (point, coordinate, low/high) = 2 K 3 <= 16, K <= 2


class Tiling(NamedTuple):
    """Rows per program, columns per program (a power of two), Triton warps, inline PTX."""

    rows: int = 256
    block_cols: int = 16
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def _sums(m_ref, start_ref, local_ref, o_ref, *, points: int, mask_cols: int, f: field_ptx.FieldOps):
    """One block of rows and columns: its partial sums ``o[0, (k 3 + i) 2 + h, c]`` -- point
    ``k``, coordinate ``i``, low (h = 0) or high (h = 1) halves summed over the block's rows."""
    rows, bc = m_ref.shape
    if mask_cols:  # Triton addresses raw memory: overhanging columns would be the next row's
        from jax.experimental.pallas import triton as plt

        live = mask_cols - pl.program_id(1) * bc
        mask = jax.lax.broadcasted_iota(jnp.int32, (rows, bc), 1) < live
        m = plt.load(m_ref, mask=mask, other=0)
    else:
        m = m_ref[...]
    for k in range(points):
        start = tuple(start_ref[0, 3 * k + i] for i in range(3))
        local = tuple(local_ref[:, 3 * k + i] for i in range(3))
        power = field_ptx.ext_mul(f, tuple(jnp.broadcast_to(s, (rows,)) for s in start), local)
        for i in range(3):
            prod = f.mul(m, power[i][:, None])
            row = (3 * k + i) * 2
            o_ref[0, row, :] = jnp.sum(prod & _M32, axis=0)
            o_ref[0, row + 1, :] = jnp.sum(prod >> np.uint64(32), axis=0)


@functools.partial(jax.jit, static_argnames=("interpret", "tiling"))
def evaluate(
    m: UInt64[Array, " n C"], points: UInt64[Array, " K 3"], *, interpret: bool = False, tiling: Tiling = TILING
) -> UInt64[Array, " C K 3"]:
    """Every column of ``m`` evaluated at each of the ``K <= 2`` extension points ``points``:
    ``out[c, k] = sum_i m[i, c] points[k]^i``. ``n`` a power of two; canonical inputs."""
    n, cols = m.shape
    k = points.shape[0]
    if not 1 <= k <= 2 or points.shape != (k, 3):
        raise ValueError(f"ood.evaluate: points must be (K, 3) with K in 1..2, got {points.shape}")
    if not 1 <= n <= 1 << 32:  # the sums of the halves are exact up to 2^32 terms
        raise ValueError(f"ood.evaluate: the rows must be 1 to 2^32, got {n}")
    rows = min(tiling.rows, n)
    if n % rows or rows & (rows - 1):
        raise ValueError(f"ood.evaluate: the rows ({n}) must be a multiple of the block's {rows}, a power of two")
    blocks = n // rows
    bc = min(tiling.block_cols, 1 << max(cols - 1, 0).bit_length())
    col_blocks = pl.cdiv(cols, bc)
    # one table (rows padded to 8 columns): x^j for j < R, then x^(b R) for each block b -- one
    # launch (jnp's power tables are loops, and each step of a loop costs tens of us on a GPU)
    u64 = jnp.uint64
    exponents = jnp.concatenate([jnp.arange(rows, dtype=u64), np.uint64(rows) * jnp.arange(blocks, dtype=u64)])
    table = powers.ext_powers_at(points, exponents, nbits=max(n - rows, rows - 1).bit_length(), interpret=interpret)
    # the interpreter pads overhanging blocks itself; a Triton kernel must mask them
    mask_cols = cols if cols % bc and not interpret else 0
    parts = pl.pallas_call(
        functools.partial(_sums, points=k, mask_cols=mask_cols, f=field_ptx.ops(interpret, tiling.ptx)),
        out_shape=jax.ShapeDtypeStruct((blocks, _PARTS, col_blocks * bc), jnp.uint64),
        grid=(blocks, col_blocks),
        in_specs=[
            pl.BlockSpec((rows, bc), lambda b, c: (b, c)),
            pl.BlockSpec((1, powers.COLUMNS), lambda b, c: (rows + b, 0)),  # x^(b R)
            pl.BlockSpec((rows, powers.COLUMNS), lambda b, c: (0, 0)),  # x^j, j < R
        ],
        out_specs=pl.BlockSpec((1, _PARTS, bc), lambda b, c: (b, 0, c)),
        name=f"ood_sums_k{k}",
        **launch(interpret, tiling.num_warps),
    )(m, table, table)
    total = jnp.sum(parts[:, : 6 * k, :cols], axis=0, dtype=jnp.uint64)  # exact: n <= 2^32 terms of < 2^32
    lo, hi = total[0::2], total[1::2]  # (3K, C)
    values = gl._add(gl._mul(gl._canon(hi), np.uint64(1 << 32)), gl._canon(lo))
    return jnp.transpose(values.reshape(k, 3, cols), (2, 0, 1))
