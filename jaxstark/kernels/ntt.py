"""Radix-2^r NTT passes along the row axis, as Pallas (Triton) kernels.

The plain ``jnp`` transform (:mod:`jaxstark.ntt`) makes one pass over memory per radix-2
level, so a size-2^22 transform reads and writes its data 22 times. Here ``r`` consecutive
levels (radix ``R = 2^r``) run in one pass: a ``(n, C)`` array is viewed, at no cost, as
``(n / (R t), R, t, C)`` where ``t`` is the pass's smallest stride, so row
``i = q R t + k t + u``. One program loads the ``R`` slices ``k = 0..R-1`` of a block of
``(q, u, column)`` lanes as ``R`` separate vectors -- the ``R`` rows one butterfly group
touches -- and runs the ``r`` levels between them element-wise, in registers, before writing
them back. No shuffles are needed, every load and store walks whole rows (contiguous columns),
and every pass may run in place (its blocks are disjoint), so a transform holds its input and
one output buffer.

Two directions, the two halves of every LDE (no bit-reversal pass between them):

* :func:`dif` -- decimation in frequency (Gentleman-Sande): natural-order input, output in
  bit-reversed order; passes from the largest stride down.
* :func:`dit` -- decimation in time (Cooley-Tukey): bit-reversed input, natural-order output;
  passes from stride 1 up.

:func:`bit_reverse_scaled` puts a DIF's output in natural order (times a scale: an inverse
transform's ``1/n``) in place, each row swapped with its bit-reversed partner by the one program
that holds the smaller of the two, so an interpolation's coefficients need no second buffer.

Both take the transform's root table ``roots[j] = w^j`` (``j < n/2``; ``NTTTables.forward`` or
``.inverse``). The level with half-size ``s`` multiplies by ``w_2s^(i mod s)``; inside a pass
that factor depends only on ``(k, u)``, so each pass reads an ``(R, t)`` table
(row ``m = 2^j + (k mod 2^j)`` for level ``j`` of the pass, row 0 unused), gathered from
``roots`` by the surrounding XLA program. In the stride-1 pass (``t = 1``) the first factor of
every level is ``w^0 = 1``: those ``2^r - 1`` of the pass's ``r 2^(r-1)`` butterflies skip the
product (about 8% of a 2^22 transform's products).

:func:`dit_shifted` is the forward half of a coset LDE: it forms the ``b`` coset copies
``x[i] * shift[i, k]`` in the first (stride-1) DIT pass, as it loads the coefficients, instead of
taking them from an ``(n, b, cols)`` array XLA wrote (at 2^23 x 62 that array is 4 GB written and
read back). Its grid's fastest axis is the copy, so the ``b`` programs that read one block of
coefficients run together and all but the first read it from the cache.

Field arithmetic: in a compiled kernel, the inline-PTX ``add/sub/mul`` of
:mod:`jaxstark.kernels.field_ptx` (``Tiling.ptx``); in the interpreter, and with ``ptx=False``,
:mod:`jaxstark.field.goldilocks`'s ``_add/_sub/_mul_inline``, which avoid the two Triton traps (no
``lax.mulhi``, no ``uint64`` literal >= 2^63). Both give the same bits.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, UInt64

from jaxstark.kernels import field_ptx, launch

__all__ = ["Tiling", "TILING", "pass_plan", "dif", "dit", "dit_shifted", "bit_reverse_scaled", "reverse_bits"]


class Tiling(NamedTuple):
    """Launch shape of a pass: at most ``2^max_radix_log2`` rows per butterfly group, vectors
    of about ``lanes`` elements (``block_cols`` contiguous columns each), Triton warps, and
    whether a compiled kernel's field arithmetic is inline PTX."""

    max_radix_log2: int = 4
    lanes: int = 256
    block_cols: int = 32
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def pass_plan(log_n: int, max_radix_log2: int) -> list[tuple[int, int]]:
    """``(log2 t, r)`` for each pass of a DIF transform, largest stride first: the ``log_n``
    levels split into as few passes as the radix allows, as evenly as possible."""
    if log_n == 0:
        return []
    passes = -(-log_n // max_radix_log2)
    sizes = [log_n // passes + (1 if p < log_n % passes else 0) for p in range(passes)]
    plan, done = [], 0
    for r in sizes:
        done += r
        plan.append((log_n - done, r))
    return plan


def _pow2_ceil(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def _twiddles(roots: Array, log_n: int, log_t: int, r: int) -> Array:
    """The pass's ``(R, t)`` factors: row ``m = 2^j + c`` (level ``j``, ``c = k mod 2^j``) at
    column ``u`` is ``w_2s^(c t + u)`` with ``s = 2^j t``, i.e. ``roots[(c t + u) n / 2s]``."""
    big_r, t = 1 << r, 1 << log_t
    m = np.arange(big_r)
    j = np.maximum(m, 1).astype(np.int64)
    j = np.floor(np.log2(j)).astype(np.int64)
    first = (m - (1 << j)) * t  # c * t
    scale = np.where(m > 0, (1 << log_n) >> (j + 1 + log_t), 0)  # n / (2s); row 0 -> index 0
    u = jnp.arange(t, dtype=jnp.int32)
    idx = (jnp.asarray(first, jnp.int32)[:, None] + u[None, :]) * jnp.asarray(scale, jnp.int32)[:, None]
    return roots[idx]


# One traced call per butterfly shape, called R/2 * r times per pass: tracing a pass stays cheap
# (every program also traces the kernel branch of the platform switch, even on a CPU).
@functools.cache
def _butterfly(f: field_ptx.FieldOps, dif: bool):
    if dif:
        return jax.jit(lambda a, b, w: (f.add(a, b), f.mul(f.sub(a, b), w)))

    def dit(a, b, w):
        bw = f.mul(b, w)
        return f.add(a, bw), f.sub(a, bw)

    return jax.jit(dit)


@functools.cache
def _butterfly_by_one(f: field_ptx.FieldOps):
    """A butterfly whose factor is ``w^0 = 1``, in either direction: ``(a + b, a - b)``."""
    return jax.jit(lambda a, b: (f.add(a, b), f.sub(a, b)))


def _levels(v: list, tw_ref, *, r: int, dif: bool, unit: bool, f: field_ptx.FieldOps) -> None:
    """The ``r`` butterfly levels of a pass on the ``R`` row vectors ``v`` (in place). ``unit``:
    the pass has stride 1, so each level's first factor (``k mod 2^j = 0``) is ``w^0 = 1`` and
    its butterflies skip the product."""
    big_r = 1 << r
    levels = range(r - 1, -1, -1) if dif else range(r)
    for j in levels:
        h = 1 << j
        for k in range(big_r):
            if k & h:
                continue
            if unit and k % h == 0:
                v[k], v[k + h] = _butterfly_by_one(f)(v[k], v[k + h])
                continue
            w = tw_ref[h + (k % h), :][None, :, None]
            v[k], v[k + h] = _butterfly(f, dif)(v[k], v[k + h], w)


def _column_mask(mask_cols: int, shape: tuple[int, ...], axis: int):
    """Lanes of an overhanging last column block that lie inside the row (``mask_cols`` the row
    width; the column-block index is grid axis ``axis``)."""
    live = mask_cols - pl.program_id(axis) * shape[-1]
    return jax.lax.broadcasted_iota(jnp.int32, shape, len(shape) - 1) < live


def _butterflies(*refs, r: int, dif: bool, unit: bool, mask_cols: int, f: field_ptx.FieldOps, shifted: bool = False):
    """One pass: ``r`` levels on the ``R`` row slices of a block. ``mask_cols`` (the row
    width, or 0) masks the columns of an overhanging last column block. ``shifted``: the first
    pass of :func:`dit_shifted` for one coset copy -- the refs are ``(x, shifts, twiddles, out)``,
    the rows are multiplied by the copy's shifts as they are loaded and written to the copy's
    columns of the ``(q, R, 1, b, cols)`` output."""
    if shifted:
        x_ref, s_ref, tw_ref, o_ref = refs
    else:
        x_ref, tw_ref, o_ref = refs
    big_r = 1 << r
    bq, _, bt, bc = x_ref.shape
    if mask_cols:  # Triton addresses raw memory: overhanging columns would be the next row's
        from jax.experimental.pallas import triton as plt

        mask = _column_mask(mask_cols, (bq, bt, bc), 2)
        v = [plt.load(x_ref.at[:, k, :, :], mask=mask, other=0) for k in range(big_r)]
    else:
        v = [x_ref[:, k, :, :] for k in range(big_r)]
    if shifted:
        v = [f.mul(v[k], s_ref[:, k, :, :]) for k in range(big_r)]  # (bq, 1, bc) times (bq, 1, 1)
    _levels(v, tw_ref, r=r, dif=dif, unit=unit, f=f)
    for k in range(big_r):
        index = (slice(None), k, slice(None), 0, slice(None)) if shifted else (slice(None), k, slice(None), slice(None))
        if mask_cols:
            plt.store(o_ref.at[index], v[k], mask=mask)
        else:
            o_ref[index] = v[k]


def _blocks(q: int, t: int, cols: int, tiling: Tiling, interpret: bool) -> tuple[int, int, int, int]:
    """A pass's block ``(bq, bt, bc)`` over its ``(q, R, t, cols)`` view, and ``mask_cols``:
    the row width where a compiled kernel must mask an overhanging last column block, else 0
    (the interpreter pads overhanging blocks itself)."""
    bc = min(_pow2_ceil(cols), tiling.block_cols)
    bt = min(t, max(1, tiling.lanes // bc))
    bq = min(q, max(1, tiling.lanes // (bc * bt)))
    return bq, bt, bc, cols if cols % bc and not interpret else 0


def _run_pass(x: Array, tw: Array, log_t: int, r: int, dif: bool, tiling: Tiling, interpret: bool) -> Array:
    n, cols = x.shape
    big_r, t = 1 << r, 1 << log_t
    q = n // (big_r * t)
    bq, bt, bc, mask_cols = _blocks(q, t, cols, tiling, interpret)
    grid = (q // bq, t // bt, pl.cdiv(cols, bc))
    block = pl.BlockSpec((bq, big_r, bt, bc), lambda i, j, c: (i, 0, j, c))
    y = pl.pallas_call(
        functools.partial(
            _butterflies, r=r, dif=dif, unit=log_t == 0, mask_cols=mask_cols, f=field_ptx.ops(interpret, tiling.ptx)
        ),
        out_shape=jax.ShapeDtypeStruct((q, big_r, t, cols), x.dtype),
        grid=grid,
        in_specs=[block, pl.BlockSpec((big_r, bt), lambda i, j, c: (0, j))],
        out_specs=block,
        input_output_aliases={0: 0},
        name=f"ntt_{'dif' if dif else 'dit'}_r{r}",
        **launch(interpret, tiling.num_warps),
    )(x.reshape(q, big_r, t, cols), tw)
    return y.reshape(n, cols)


def _transform(x: Array, roots: Array, dif: bool, interpret: bool, tiling: Tiling) -> Array:
    n = x.shape[0]
    log_n = n.bit_length() - 1
    batch = x.shape[1:]
    y = x.reshape(n, -1) if batch else x.reshape(n, 1)
    plan = pass_plan(log_n, tiling.max_radix_log2)
    for log_t, r in plan if dif else plan[::-1]:
        y = _run_pass(y, _twiddles(roots, log_n, log_t, r), log_t, r, dif, tiling, interpret)
    return y.reshape(x.shape)


def dif(
    x: UInt64[Array, " n *batch"], roots: UInt64[Array, " half"], *, interpret: bool = False, tiling: Tiling = TILING
) -> UInt64[Array, " n *batch"]:
    """Radix-2^r DIF along axis 0: natural-order input, bit-reversed output (no scaling).
    ``roots[j] = w^j`` for ``j < n/2``. Traceable; n a power of two."""
    return _transform(x, roots, True, interpret, tiling)


def dit(
    x: UInt64[Array, " n *batch"], roots: UInt64[Array, " half"], *, interpret: bool = False, tiling: Tiling = TILING
) -> UInt64[Array, " n *batch"]:
    """Radix-2^r DIT along axis 0: bit-reversed input, natural-order output (no scaling).
    ``roots[j] = w^j`` for ``j < n/2``. Traceable; n a power of two."""
    return _transform(x, roots, False, interpret, tiling)


def dit_shifted(
    x: UInt64[Array, " n cols"],
    shifts: UInt64[Array, " n b"],
    roots: UInt64[Array, " half"],
    *,
    interpret: bool = False,
    tiling: Tiling = TILING,
) -> UInt64[Array, " n b cols"]:
    """``dit(x[:, None, :] * shifts[:, :, None], roots)``: the ``b`` coset copies of a coset
    extension, each row of ``x`` times its row's ``b`` shifts, transformed along axis 0
    (bit-reversed in, natural out, unscaled). The copies are formed in the first pass as it
    loads ``x``, so the ``(n, b, cols)`` product is never written and read back; the copy is
    the grid's fastest axis, so the ``b`` programs that read one block of ``x`` run together
    and all but the first find it in the cache. Traceable; n a power of two."""
    n, cols = x.shape
    if shifts.ndim != 2 or shifts.shape[0] != n:
        from jaxstark.errors import ShapeError

        raise ShapeError(f"ntt.dit_shifted: shifts must have shape ({n}, copies), got {shifts.shape}")
    b = shifts.shape[1]
    log_n = n.bit_length() - 1
    plan = pass_plan(log_n, tiling.max_radix_log2)[::-1]
    if not plan:  # n = 1: no butterflies, only the copies
        return field_ptx.JNP.mul(x[:, None, :], shifts[:, :, None])
    log_t, r = plan[0]
    assert log_t == 0, plan  # a DIT transform starts at stride 1
    big_r = 1 << r
    q = n // big_r
    bq, _, bc, mask_cols = _blocks(q, 1, cols, tiling, interpret)
    f = field_ptx.ops(interpret, tiling.ptx)
    y = pl.pallas_call(
        functools.partial(_butterflies, r=r, dif=False, unit=True, mask_cols=mask_cols, f=f, shifted=True),
        out_shape=jax.ShapeDtypeStruct((q, big_r, 1, b, cols), x.dtype),
        grid=(b, q // bq, pl.cdiv(cols, bc)),
        in_specs=[
            pl.BlockSpec((bq, big_r, 1, bc), lambda k, i, c: (i, 0, 0, c)),
            pl.BlockSpec((bq, big_r, 1, 1), lambda k, i, c: (i, 0, 0, k)),
            pl.BlockSpec((big_r, 1), lambda k, i, c: (0, 0)),
        ],
        out_specs=pl.BlockSpec((bq, big_r, 1, 1, bc), lambda k, i, c: (i, 0, 0, k, c)),
        name=f"ntt_dit_shifted_r{r}",
        **launch(interpret, tiling.num_warps),
    )(x.reshape(q, big_r, 1, cols), shifts.reshape(q, big_r, 1, b), _twiddles(roots, log_n, 0, r))
    y = y.reshape(n, b * cols)
    for log_t, r in plan[1:]:
        y = _run_pass(y, _twiddles(roots, log_n, log_t, r), log_t, r, False, tiling, interpret)
    return y.reshape(n, b, cols)


def reverse_bits(v: Array, bits: int) -> Array:
    """The low ``bits`` bits of ``uint32`` ``v`` in reverse order (a bit at a time: plain
    ``jnp``, so the same code serves XLA programs and kernel bodies)."""
    rev = jnp.zeros_like(v)
    for b in range(bits):
        rev = rev | (((v >> np.uint32(b)) & np.uint32(1)) << np.uint32(bits - 1 - b))
    return rev


def _swap_rows(x_ref, s_ref, o_ref, *, log_n: int, rows: int, cols: int, block_cols: int, f: field_ptx.FieldOps, index):
    """A block of ``rows`` rows and ``block_cols`` columns: row ``r`` and its partner ``rev(r)``
    swapped (both times the scale) where ``r < rev(r)``, scaled where ``r = rev(r)``; a row whose
    partner is smaller is the partner's program's."""
    from jax.experimental.pallas import triton as plt

    r = (pl.program_id(0) * rows + jax.lax.broadcasted_iota(jnp.int32, (rows,), 0)).astype(jnp.uint32)
    rv = reverse_bits(r, log_n)
    c = pl.program_id(1) * block_cols + jax.lax.broadcasted_iota(jnp.int32, (block_cols,), 0)
    live = (c < cols)[None, :]
    first = (r < rv)[:, None] & live  # this program swaps the pair
    mine = (r <= rv)[:, None] & live  # this program writes the row
    here = r.astype(index)[:, None] * cols + c.astype(index)[None, :]
    # every lane's partner, masked or not: rev is a bijection, so no two lanes of a store share
    # an address (the interpreter writes masked lanes back with the value they hold)
    there = rv.astype(index)[:, None] * cols + c.astype(index)[None, :]
    a = plt.load(x_ref.at[here], mask=mine, other=0)
    b = plt.load(x_ref.at[there], mask=first, other=0)
    scale = plt.load(s_ref.at[jnp.zeros((rows, block_cols), index)])
    plt.store(o_ref.at[here], f.mul(jnp.where(first, b, a), scale), mask=mine)
    plt.store(o_ref.at[there], f.mul(a, scale), mask=first)


def bit_reverse_scaled(
    x: UInt64[Array, " n cols"], scale: UInt64[Array, ""], *, interpret: bool = False, tiling: Tiling = TILING
) -> UInt64[Array, " n cols"]:
    """``x`` with its rows in bit-reversed order, times ``scale``, in place (``x``'s buffer is
    the output's where XLA may reuse it): ``out[i] = x[rev(i)] * scale``. Traceable; n a power
    of two."""
    from jaxstark.errors import ShapeError

    if x.ndim != 2 or x.dtype != jnp.uint64:
        raise ShapeError(f"ntt.bit_reverse_scaled: expected a (rows, cols) uint64 array, got {x.dtype}{list(x.shape)}")
    n, cols = x.shape
    log_n = n.bit_length() - 1
    if n != 1 << log_n or log_n > 31:  # (row indices are int32 in the kernel)
        raise ShapeError(f"ntt.bit_reverse_scaled: rows must be a power of two up to 2^31, got {n}")
    for name in ("lanes", "block_cols"):  # the grid's blocks must tile the rows exactly
        value = getattr(tiling, name)
        if value < 1 or value & (value - 1):
            raise ValueError(f"ntt.bit_reverse_scaled: Tiling.{name} must be a power of two, got {value}")
    scale = jnp.asarray(scale, jnp.uint64).reshape(1)
    if log_n == 0 or cols == 0:
        return field_ptx.JNP.mul(x, scale[0])
    block_cols = min(_pow2_ceil(cols), tiling.block_cols)
    if interpret:  # whole column blocks (the interpreter would clamp an overhanging one's lanes)
        block_cols = min(block_cols, cols & -cols)
    rows = min(n, max(1, tiling.lanes // block_cols))
    index = jnp.int32 if n * cols < 2**31 else jnp.int64
    f = field_ptx.ops(interpret, tiling.ptx)
    y = pl.pallas_call(
        functools.partial(_swap_rows, log_n=log_n, rows=rows, cols=cols, block_cols=block_cols, f=f, index=index),
        out_shape=jax.ShapeDtypeStruct((n * cols,), x.dtype),
        grid=(n // rows, pl.cdiv(cols, block_cols)),
        input_output_aliases={0: 0},
        name="ntt_bit_reverse_scaled",
        **launch(interpret, tiling.num_warps),
    )(x.reshape(-1), scale)
    return y.reshape(n, cols)
