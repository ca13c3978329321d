"""Each row of a base-field matrix dotted with extension weights, as a Pallas (Triton) kernel.

``out[r] = sum_c t[r, c] g[c]`` for a ``(L, C)`` base matrix ``t`` and ``C`` extension weights
``g`` -- DEEP's row sums over the main columns (:mod:`jaxstark.rounds.r4_deep`), whose ``jnp``
twin (``r4_deep._dot_base_ext``) is one XLA fusion over the LDE. Here:

* the grid runs over blocks of :attr:`Tiling.rows` rows; a program walks its rows' columns in
  chunks of :attr:`Tiling.block_cols` (unrolled in the kernel; the last chunk masked: the matrix
  is addressed as one flat array), so only one chunk of products is live;
* each value times the three coordinates of its weight is three base products (inline PTX on a
  GPU), and each coordinate's products are summed along the row as two exact integer sums, of
  their low and of their high 32 bits; the row's sum is reduced mod p once: ``hi 2^32 + lo``
  (exact while ``C <= 2^32``), as :func:`jaxstark.field.goldilocks._sum` does.

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
from jaxstark.kernels import field_ptx, launch

__all__ = ["Tiling", "TILING", "dot_base_ext"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


class Tiling(NamedTuple):
    """Rows per program, columns per chunk (a power of two), Triton warps, inline PTX."""

    rows: int = 64
    block_cols: int = 16
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def _rows(t_ref, g_ref, o0_ref, o1_ref, o2_ref, *, cols: int, block_cols: int, f: field_ptx.FieldOps, index):
    from jax.experimental.pallas import triton as plt

    rows = o0_ref.shape[0]
    first = pl.program_id(0).astype(index) * rows
    r = first + jax.lax.broadcasted_iota(index, (rows, block_cols), 0)
    lo = [jnp.zeros((rows,), jnp.uint64) for _ in range(3)]
    hi = [jnp.zeros((rows,), jnp.uint64) for _ in range(3)]
    for start in range(0, cols, block_cols):  # (t and g are whole flat arrays: raw addressing, masked)
        c = start + jax.lax.broadcasted_iota(index, (rows, block_cols), 1)
        live = c < cols
        tile = plt.load(t_ref.at[jnp.where(live, r * cols + c, 0)], mask=live, other=0)
        cw = start + jax.lax.broadcasted_iota(index, (block_cols,), 0)  # the chunk's weights
        for k in range(3):
            w = plt.load(g_ref.at[jnp.where(cw < cols, cw * 4 + k, 0)], mask=cw < cols, other=0)
            prod = f.mul(tile, jnp.broadcast_to(w[None, :], (rows, block_cols)))  # masked columns: 0 * 0
            lo[k] = lo[k] + jnp.sum(prod & _M32, axis=1)
            hi[k] = hi[k] + jnp.sum(prod >> _S32, axis=1)
    # each half-sum is at most C (2^32 - 1) <= p - 1 (C <= 2^32): canonical already
    two32 = jnp.full((rows,), 1 << 32, jnp.uint64)
    for k, o_ref in enumerate((o0_ref, o1_ref, o2_ref)):
        o_ref[...] = f.add(f.mul(gl._canon(hi[k]), two32), gl._canon(lo[k]))


@functools.partial(jax.jit, static_argnames=("interpret", "tiling"))
def dot_base_ext(
    t: UInt64[Array, " L C"], g: UInt64[Array, " C 3"], *, interpret: bool = False, tiling: Tiling = TILING
) -> UInt64[Array, " L 3"]:
    """``out[r] = sum_c t[r, c] g[c]`` in GF(p^3), for canonical ``t`` (base) and ``g``
    (extension). ``L`` a multiple of the block's rows (a power of two) or smaller."""
    n, cols = t.shape
    if not 1 <= cols <= 1 << 32:
        raise ValueError(f"dot.dot_base_ext: the matrix must have 1 to 2^32 columns, got {cols}")
    if g.shape != (cols, 3):
        raise ValueError(f"dot.dot_base_ext: weights of shape ({cols}, 3) for {cols} columns, got {g.shape}")
    rows = min(tiling.rows, n)
    if n % rows or rows & (rows - 1):
        raise ValueError(f"dot.dot_base_ext: the rows ({n}) must be a multiple of the block's {rows}, a power of two")
    weights = jnp.pad(g, ((0, 0), (0, 1))).reshape(-1)  # 4 words per weight
    block_cols = min(tiling.block_cols, 1 << (cols - 1).bit_length())
    index = jnp.int32 if max(n * cols, 4 * (cols + block_cols)) < 2**31 else jnp.int64
    f = field_ptx.ops(interpret, tiling.ptx)
    kernel = functools.partial(_rows, cols=cols, block_cols=block_cols, f=f, index=index)
    out = pl.pallas_call(
        kernel,
        out_shape=tuple(jax.ShapeDtypeStruct((n,), jnp.uint64) for _ in range(3)),
        grid=(n // rows,),
        out_specs=tuple(pl.BlockSpec((rows,), lambda i: (i,)) for _ in range(3)),
        name="dot_base_ext",
        **launch(interpret, tiling.num_warps),
    )(t.reshape(-1), weights)
    return jnp.stack(out, axis=-1)
