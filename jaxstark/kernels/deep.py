"""DEEP's quotient per row, as a numerator and a denominator, in one Pallas (Triton) kernel pass.

For the LDE points ``x`` and the row values ``f_t(x)`` of the main columns (base), the
composition parts and the aux columns (extension),

    num(x) = N_z(x) (x - z w) + N_zw(x) (x - z),    den(x) = (x - z) (x - z w),

with ``N_z = sum_t g_t f_t(x) - C_z`` and ``N_zw = g^c sum_main g_t f_t(x) + g^a sum_aux g_t f_t(x) -
C_zw`` (:func:`jaxstark.protocol.algebra.deep_numerators`; the claims' sums ``C_z``, ``C_zw``
are the caller's, :func:`jaxstark.protocol.algebra.deep_claims`), so that ``D = num / den``
(:func:`jaxstark.protocol.algebra.deep_value`).
The ``jnp`` twin is ``jaxstark.rounds.r4_deep._combine`` over the whole LDE, where XLA:GPU's
schedule keeps some of the per-row values live (110 to 235 bytes per row, not monotone in the
rows), so that round's memory followed no law of the shape. Here:

* the grid runs over blocks of :attr:`Tiling.rows` rows; a program sums its rows' main columns
  in chunks of :attr:`Tiling.block_cols` as two exact integer sums per coordinate (the low and
  high 32 bits of each product: one reduction mod p per row), the chunks unrolled up to
  :attr:`Tiling.unrolled` of them and walked in a loop beyond (wide tables: the kernel's code,
  and its compile time, do not grow with the width);
* the parts and aux values are extension products with their weights (:func:`field_ptx.ext_mul`);
* only ``num`` and ``den`` are written: six words per row, whatever the width.

Every value is the field value itself, so ``num * den^-1`` equals the twin's ``D`` bit for bit.
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

__all__ = ["Tiling", "TILING", "CONSTANTS", "quotient"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# the extension constants the kernel reads, in this order (``consts`` rows)
CONSTANTS = ("c_z", "c_zw", "g^c", "g^a", "z", "zw")


class Tiling(NamedTuple):
    """Rows per program (one thread each at 128 rows and 4 warps), main columns per chunk (a
    power of two), Triton warps, inline PTX, and how many chunks are unrolled before the main
    columns are walked in a loop instead."""

    rows: int = 128
    block_cols: int = 8
    num_warps: int = 4
    ptx: bool | str = True
    unrolled: int = 8


TILING = Tiling()


def _rows(t_ref, p_ref, a_ref, x_ref, w_ref, k_ref, *outs, cols: int, parts: int, aux: int, block_cols: int,
          unrolled: int, f: field_ptx.FieldOps, index):  # fmt: skip
    from jax.experimental.pallas import triton as plt

    rows = outs[0].shape[0]
    first = pl.program_id(0).astype(index) * rows
    r1 = first + jax.lax.broadcasted_iota(index, (rows,), 0)

    def weight(i):  # row i of the weights (main, then parts, then aux), 4 words each, on every lane
        return tuple(plt.load(w_ref.at[jnp.full((rows,), 4 * i + k, index)]) for k in range(3))

    def const(name):
        i = CONSTANTS.index(name)
        return tuple(plt.load(k_ref.at[jnp.full((rows,), 4 * i + k, index)]) for k in range(3))

    def add(a, b):
        return tuple(f.add(u, v) for u, v in zip(a, b, strict=True))

    # the main columns' weighted sum: exact integer sums of the products' halves, reduced once
    r = first + jax.lax.broadcasted_iota(index, (rows, block_cols), 0)

    def chunk(start, acc):  # (the matrix is one flat array: raw addressing, the last chunk masked)
        lo, hi = acc
        c = start + jax.lax.broadcasted_iota(index, (rows, block_cols), 1)
        live = c < cols
        tile = plt.load(t_ref.at[jnp.where(live, r * cols + c, 0)], mask=live, other=0)
        cw = start + jax.lax.broadcasted_iota(index, (block_cols,), 0)
        lo, hi = list(lo), list(hi)
        for k in range(3):
            w = plt.load(w_ref.at[jnp.where(cw < cols, cw * 4 + k, 0)], mask=cw < cols, other=0)
            prod = f.mul(tile, jnp.broadcast_to(w[None, :], (rows, block_cols)))  # masked columns: 0 * 0
            lo[k] = lo[k] + jnp.sum(prod & _M32, axis=1)
            hi[k] = hi[k] + jnp.sum(prod >> _S32, axis=1)
        return tuple(lo), tuple(hi)

    zeros = tuple(jnp.zeros((rows,), jnp.uint64) for _ in range(3))
    acc, chunks = (zeros, zeros), -(-cols // block_cols)
    if chunks <= unrolled:
        for i in range(chunks):
            acc = chunk(jnp.asarray(i * block_cols, index), acc)
    else:  # wide tables: one loop in the kernel, so its code (and compile time) does not grow with the width
        acc = jax.lax.fori_loop(0, chunks, lambda i, acc: chunk(i.astype(index) * block_cols, acc), acc)
    lo, hi = acc
    two32 = jnp.full((rows,), 1 << 32, jnp.uint64)  # each half-sum is at most C (2^32 - 1) < p
    main = tuple(f.add(f.mul(gl._canon(hi[k]), two32), gl._canon(lo[k])) for k in range(3))

    def ext_sum(ref, count, first_weight):  # sum_j v[r, j] w_j over extension values (r, count, 3)
        acc = None
        for j in range(count):
            v = tuple(plt.load(ref.at[(r1 * count + j) * 3 + k]) for k in range(3))
            term = field_ptx.ext_mul(f, v, weight(first_weight + j))
            acc = term if acc is None else add(acc, term)
        return acc

    num_z = add(main, ext_sum(p_ref, parts, cols)) if parts else main
    num_z = tuple(f.sub(u, v) for u, v in zip(num_z, const("c_z"), strict=True))
    num_zw = field_ptx.ext_mul(f, main, const("g^c"))
    if aux:
        aux_sum = ext_sum(a_ref, aux, cols + parts)
        num_z = add(num_z, aux_sum)
        num_zw = add(num_zw, field_ptx.ext_mul(f, aux_sum, const("g^a")))
    num_zw = tuple(f.sub(u, v) for u, v in zip(num_zw, const("c_zw"), strict=True))
    x = plt.load(x_ref.at[r1])
    zero = jnp.zeros((rows,), jnp.uint64)
    dz = tuple(f.sub(u, v) for u, v in zip((x, zero, zero), const("z"), strict=True))
    dzw = tuple(f.sub(u, v) for u, v in zip((x, zero, zero), const("zw"), strict=True))
    num = add(field_ptx.ext_mul(f, num_z, dzw), field_ptx.ext_mul(f, num_zw, dz))
    den = field_ptx.ext_mul(f, dz, dzw)
    for o_ref, v in zip(outs, (*num, *den), strict=True):
        o_ref[...] = v


@functools.partial(jax.jit, static_argnames=("interpret", "tiling"))
def quotient(
    trace: UInt64[Array, " L c"],
    parts: UInt64[Array, " L P 3"],
    aux: UInt64[Array, " L a 3"],
    xs: UInt64[Array, " L"],
    weights: UInt64[Array, " W 3"],
    consts: UInt64[Array, " 6 3"],
    *,
    interpret: bool = False,
    tiling: Tiling = TILING,
) -> tuple[UInt64[Array, " L 3"], UInt64[Array, " L 3"]]:
    """``(num, den)`` at every row: ``weights`` are the main columns', the parts' and the aux
    columns' weights at ``z`` (``c + P + a`` of them), ``consts`` the extension values
    :data:`CONSTANTS` names. ``L`` a multiple of the block's rows (a power of two) or smaller."""
    n, cols = trace.shape
    n_parts, n_aux = parts.shape[1], aux.shape[1]
    if not 1 <= cols <= 1 << 32 or parts.shape != (n, n_parts, 3) or aux.shape != (n, n_aux, 3) or xs.shape != (n,):
        raise ValueError(
            f"deep.quotient: rows of trace {trace.shape}, parts {parts.shape}, aux {aux.shape} and points {xs.shape} "
            "do not agree"
        )
    if weights.shape != (cols + n_parts + n_aux, 3) or consts.shape != (len(CONSTANTS), 3):
        raise ValueError(f"deep.quotient: weights {weights.shape} and constants {consts.shape} do not fit the columns")
    rows = min(tiling.rows, n)
    if n % rows or rows & (rows - 1):
        raise ValueError(f"deep.quotient: the rows ({n}) must be a multiple of the block's {rows}, a power of two")
    if tiling.block_cols < 1 or tiling.block_cols & (tiling.block_cols - 1):
        raise ValueError(f"deep.quotient: the columns per chunk ({tiling.block_cols}) must be a power of two")
    block_cols = min(tiling.block_cols, 1 << (cols - 1).bit_length())
    # the largest flat index formed (a masked lane's, past the last row, included)
    big = max(n * cols + block_cols, n * 3 * max(n_parts, n_aux), 4 * (weights.shape[0] + block_cols))
    index = jnp.int32 if big < 2**31 else jnp.int64
    f = field_ptx.ops(interpret, tiling.ptx)
    kernel = functools.partial(_rows, cols=cols, parts=n_parts, aux=n_aux, block_cols=block_cols,
                               unrolled=tiling.unrolled, f=f, index=index)  # fmt: skip
    flat = lambda a: a.reshape(-1) if a.size else jnp.zeros((1,), jnp.uint64)  # noqa: E731
    pad = lambda a: jnp.pad(a, ((0, 0), (0, 1))).reshape(-1)  # noqa: E731  (4 words per value)
    out = pl.pallas_call(
        kernel,
        out_shape=tuple(jax.ShapeDtypeStruct((n,), jnp.uint64) for _ in range(6)),
        grid=(n // rows,),
        out_specs=tuple(pl.BlockSpec((rows,), lambda i: (i,)) for _ in range(6)),
        name="deep_quotient",
        **launch(interpret, tiling.num_warps),
    )(flat(trace), flat(parts), flat(aux), xs, pad(weights), pad(consts))
    return jnp.stack(out[:3], axis=-1), jnp.stack(out[3:], axis=-1)
