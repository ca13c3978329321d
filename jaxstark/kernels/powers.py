"""Powers of extension elements at many exponents in one launch, as a Pallas (Triton) kernel.

``x_k^e`` for ``K`` points and ``N`` exponents ``e``: a lane takes one exponent and runs
square-and-multiply over its low ``nbits`` bits in registers, a loop inside the kernel. The
``jnp`` twin, :func:`jaxstark.field.goldilocks.square_and_multiply` (which
:func:`~jaxstark.field.goldilocks.powers_by_doubling` runs for its two tables), is a
``fori_loop`` of ``nbits`` steps; on a GPU every step of an XLA loop costs 16-40 us between its
kernels whatever its work (benchmarks/RESULTS.md, 2026-12-06, sixth session), so a table of
``2^14`` powers took 14 such steps for a few microseconds of arithmetic.

The values are the powers themselves (canonical), so they equal the twin's bit for bit.
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
from jaxstark.kernels import field_ptx, launch

__all__ = ["Tiling", "TILING", "ext_powers_at", "ext_powers", "COLUMNS"]

COLUMNS = 8  # the output's columns: point k's coordinates at 3k .. 3k + 2, then zeros
_ONE = np.uint64(1)


class Tiling(NamedTuple):
    """Exponents (lanes) per program, Triton warps, inline PTX."""

    lanes: int = 256
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def _powers(e_ref, x_ref, o_ref, *, points: int, nbits: int, f: field_ptx.FieldOps):
    e = e_ref[...]
    lanes = e.shape[0]
    zero = jnp.zeros((lanes,), jnp.uint64)
    for w in range(3 * points, COLUMNS):
        o_ref[:, w] = zero
    for k in range(points):
        x = tuple(jnp.broadcast_to(x_ref[3 * k + i], (lanes,)) for i in range(3))

        def step(i, carry):
            r, square = carry
            bit = ((e >> i.astype(jnp.uint64)) & _ONE) == _ONE
            r = tuple(jnp.where(bit, p, q) for p, q in zip(field_ptx.ext_mul(f, r, square), r, strict=True))
            return r, field_ptx.ext_mul(f, square, square)

        r, _ = lax.fori_loop(0, nbits, step, ((zero + _ONE, zero, zero), x))
        for i in range(3):
            o_ref[:, 3 * k + i] = r[i]


@functools.partial(jax.jit, static_argnames=("nbits", "interpret", "tiling"))
def ext_powers_at(
    points: UInt64[Array, " K 3"], exponents: UInt64[Array, " N"], *, nbits: int = 64, interpret: bool = False,
    tiling: Tiling = TILING,
) -> UInt64[Array, " N 8"]:  # fmt: skip
    """``out[i, 3k + j]`` = coordinate ``j`` of ``points[k] ^ (exponents[i] mod 2^nbits)``, for
    ``K <= 2`` canonical extension points; columns ``3K ..`` are zero (:data:`COLUMNS`)."""
    k = points.shape[0]
    if points.shape != (k, 3) or not 1 <= k <= COLUMNS // 3 or exponents.ndim != 1 or not 0 <= nbits <= 64:
        raise ValueError(f"powers.ext_powers_at: points (K, 3) with K in 1..{COLUMNS // 3}, exponents (N,), nbits "
                         f"0..64; got {points.shape}, {exponents.shape}, {nbits}")  # fmt: skip
    if tiling.lanes < 1 or tiling.lanes & (tiling.lanes - 1):
        raise ValueError(f"powers.ext_powers_at: the lanes per program must be a power of two, got {tiling.lanes}")
    n = exponents.shape[0]
    if n == 0:
        return jnp.zeros((0, COLUMNS), jnp.uint64)
    lanes = min(tiling.lanes, 1 << max(n - 1, 0).bit_length())
    padded = -(-n // lanes) * lanes
    e = jnp.pad(exponents.astype(jnp.uint64), (0, padded - n))
    x = jnp.pad(points.reshape(-1), (0, COLUMNS - 3 * k))
    out = pl.pallas_call(
        functools.partial(_powers, points=k, nbits=nbits, f=field_ptx.ops(interpret, tiling.ptx)),
        out_shape=jax.ShapeDtypeStruct((padded, COLUMNS), jnp.uint64),
        grid=(padded // lanes,),
        in_specs=[pl.BlockSpec((lanes,), lambda i: (i,)), pl.BlockSpec((COLUMNS,), lambda i: (0,))],
        out_specs=pl.BlockSpec((lanes, COLUMNS), lambda i: (i, 0)),
        name=f"ext_powers_k{k}",
        **launch(interpret, tiling.num_warps),
    )(e, x)
    return out[:n]


def ext_powers(base: UInt64[Array, " 3"], n: int) -> UInt64[Array, " n 3"]:
    """``[1, base, ..., base^(n-1)]`` for one extension element: :func:`ext_powers_at` where the
    kernel posture puts kernels on the lowering platform (:func:`jaxstark.kernels.switch`),
    :func:`jaxstark.field.extension._powers` elsewhere."""

    def kernel(x):
        e = jnp.arange(n, dtype=jnp.uint64)
        return ext_powers_at(x[None], e, nbits=max(n - 1, 0).bit_length(), interpret=kernels.interpret())[:, :3]

    return kernels.switch(lambda x: fext._powers(x, n), kernel, base)
