"""Round 4a: DEEP composition.

With one extension challenge ``gamma`` and its powers ``g_k``,

    D(x) = [sum_i g_i (T_i(x) - T_i(z)) + sum_j g_(2c+j) (H_j(x) - H_j(z))
            + sum_k g_(2c+P+k) (A_k(x) - A_k(z))] / (x - z)
         + [sum_i g_(c+i) (T_i(x) - T_i(z w)) + sum_k g_(2c+P+a+k) (A_k(x) - A_k(z w))] / (x - z w)

(``T`` the ``c`` main columns, ``H`` the ``P`` composition parts, ``A`` the ``a`` aux columns)

evaluated on the LDE (one batch inversion each for ``x - z`` and ``x - z w``) -- on the CPU in
up to :data:`DEEP_BLOCKS` blocks of rows one after another, so that the round holds one block's
temporaries (on an accelerator in one piece, unless the planner asks for blocks because the
round binds, :attr:`jaxstark.rounds.Round.blocked`). D has degree < n
when every claimed OOD value is right. Its evaluations are FRI's first layer
(:mod:`jaxstark.rounds.r4_fri_layer`).

Keeps: D on the LDE coset (natural order). Drops: the extension inverses.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark import kernels
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.kernels import deep as deep_kernel
from jaxstark.kernels import powers
from jaxstark.kernels.inverse import ext_batch_inv
from jaxstark.poly import sum_column_blocks
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import deep_claims, deep_numerators, deep_value, deep_weights
from jaxstark.protocol.layout import num_deep_terms
from jaxstark.rounds.domain import Domain
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.transcript import Transcript

__all__ = ["deep", "deep_combine", "row_blocks", "DEEP_BLOCKS", "DEEP_MIN_BLOCK_ROWS"]

# On the CPU, D over the LDE in this many blocks of rows, of at least DEEP_MIN_BLOCK_ROWS rows;
# on an accelerator in one piece (8 blocks made the ALU 2^22 round 4x slower on an H200: 42 ms)
DEEP_BLOCKS = 8
DEEP_MIN_BLOCK_ROWS = 1 << 12


def _dot_base_ext(t: Array, g: Array) -> Array:
    """sum_i t[..., i] * g[i] for base t (..., c) and extension g (c, 3) -> (..., 3), reduced a
    block of columns at a time (:func:`~jaxstark.poly.sum_column_blocks`), so at most a block's
    products are ever materialised, whatever the width."""

    def partial(start, size):
        tb = lax.dynamic_slice_in_dim(t, start, size, axis=t.ndim - 1)
        gb = lax.dynamic_slice_in_dim(g, start, size, axis=0)
        return jnp.stack([gl._sum(gl._mul(tb, gb[:, k]), -1) for k in range(3)], axis=-1)

    return sum_column_blocks(partial, t.shape[-1])


def _dot_ext_ext(h: Array, g: Array) -> Array:
    """sum_j h[..., j, :] * g[j] for extension h (..., P, 3) and g (P, 3) -> (..., 3)."""
    return gl._sum(fext._mul(h, g), -2)


def _combine(xs, trace_rows, aux_rows, parts_rows, ood: OutOfDomain, g_pows, zg):
    num_z, num_zg = deep_numerators(
        lambda t, g: Val(_dot_base_ext(t, g), True), lambda h, g: Val(_dot_ext_ext(h, g), True),
        lambda w: Val(w, True), trace_rows, parts_rows, aux_rows, ood, g_pows,
    )  # fmt: skip
    inverse = lambda d: Val(ext_batch_inv(d.v), True)  # noqa: E731
    return deep_value(Val(xs), Val(ood.z, True), Val(zg, True), num_z, num_zg, inverse).v


def _combine_kernel(xs, trace_rows, aux_rows, parts_rows, ood: OutOfDomain, g_pows, zg):
    """:func:`_combine` with each row's numerator and denominator formed in one kernel pass
    (:func:`jaxstark.kernels.deep.quotient`) where the rows tile; the twin elsewhere."""
    if trace_rows.ndim != 2 or 0 in trace_rows.shape:
        return _combine(xs, trace_rows, aux_rows, parts_rows, ood, g_pows, zg)
    size, c = trace_rows.shape
    rows = min(deep_kernel.TILING.rows, size)
    if size % rows or rows & (rows - 1):
        return _combine(xs, trace_rows, aux_rows, parts_rows, ood, g_pows, zg)
    parts, a = parts_rows.shape[1], aux_rows.shape[1]
    g1, _, g3, g4, _ = deep_weights(g_pows, c, parts, a)
    c_z, c_zw = (v.v for v in deep_claims(lambda h, g: Val(_dot_ext_ext(h, g), True), ood, g_pows))
    consts = dict(zip(deep_kernel.CONSTANTS, (c_z, c_zw, g_pows[c], g_pows[a], ood.z, zg), strict=True))
    num, den = deep_kernel.quotient(
        trace_rows, parts_rows, aux_rows, xs, jnp.concatenate([g1, g3, g4]),
        jnp.stack([consts[k] for k in deep_kernel.CONSTANTS]), interpret=kernels.interpret(),
        tiling=deep_kernel.TILING,
    )  # fmt: skip
    return fext._mul(num, ext_batch_inv(den))


def deep_combine(xs, trace_rows, aux_rows, parts_rows, ood: OutOfDomain, g_pows, zg):
    """D at points ``xs`` (base, (q,)) from trace rows (q, c), aux rows (q, a, 3) and part rows
    (q, P, 3) (:func:`~jaxstark.protocol.algebra.deep_numerators`, :func:`~jaxstark.protocol.algebra.deep_value`),
    over the whole LDE; where the kernels run, each row's numerator and denominator in one
    kernel pass (its memory is its six words per row, whatever XLA would keep live)."""
    return kernels.switch(_combine, _combine_kernel, xs, trace_rows, aux_rows, parts_rows, ood, g_pows, zg)


@functools.partial(jax.jit, static_argnames=("blocks",), keep_unused=True)
def deep(
    domain: Domain,
    trace_lde: UInt64[Array, " L c"],
    aux_lde: UInt64[Array, " L a3"] | None,
    parts_lde: UInt64[Array, " L P 3"],
    ood: OutOfDomain,
    tr: Transcript,
    *,
    blocks: int = 1,
) -> tuple[UInt64[Array, " L 3"], Transcript]:
    """``gamma`` drawn, and D on the LDE coset, in ``blocks`` blocks of rows one after another
    (:func:`row_blocks`)."""
    c, parts = trace_lde.shape[1], parts_lde.shape[1]
    size = trace_lde.shape[0]
    if not isinstance(blocks, int) or not 1 <= blocks <= size or size % blocks:
        raise ValueError(f"deep: blocks must be an int dividing the {size} LDE rows, got {blocks!r}")
    aux_rows = jnp.zeros((size, 0, 3), jnp.uint64) if aux_lde is None else aux_lde.reshape(size, -1, 3)
    tr, gamma = fs.deep_gamma(tr)
    g_pows = powers.ext_powers(gamma, num_deep_terms(c, parts, aux_rows.shape[1]))
    zg = fext._mul_base(ood.z, np.uint64(gl.root_of_unity(domain.log_n)))
    if blocks == 1:
        return deep_combine(domain.points(), trace_lde, aux_rows, parts_lde, ood, g_pows, zg), tr

    def block(rows):
        return deep_combine(*rows, ood, g_pows, zg)

    split = lambda x: x.reshape(blocks, size // blocks, *x.shape[1:])  # noqa: E731
    rows = (domain.points(), trace_lde, aux_rows, parts_lde)
    return lax.map(block, tuple(split(x) for x in rows)).reshape(size, 3), tr


def row_blocks(size: int, platform: str) -> int:
    """How many blocks of rows the DEEP round of an LDE of ``size`` rows on ``platform`` computes
    D in, one after another (each point's D is its own, and a batch inversion per block gives
    the same inverses), so that its temporaries are a block's: on the CPU :data:`DEEP_BLOCKS`,
    but blocks of at least :data:`DEEP_MIN_BLOCK_ROWS` rows; elsewhere 1."""
    if platform != "cpu":
        return 1
    return max(1, min(DEEP_BLOCKS, size // DEEP_MIN_BLOCK_ROWS))
