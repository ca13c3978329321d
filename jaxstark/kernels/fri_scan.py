"""One scanned FRI layer's row work in one launch, in proportion to the layer, as a Pallas
(Triton) kernel.

:mod:`jaxstark.rounds.r4_fri_final` runs FRI's small layers as the steps of one ``lax.scan``
over buffers of the first such layer's size: ``H`` leaf rows (pairs of evaluations) and ``2H``
tree rows, whatever the real layer's ``h <= H`` rows. After a step's tree and challenge
``beta``, what is left of the step is row work -- and in ``jnp`` (the twin,
``r4_fri_final._place_jnp``) it runs over the whole buffers, ``H`` fold rows and ``2H`` tree
rows, every step. Here a grid of ``H / block`` programs does it, and programs past the layer's
rows return at once:

* **fold**: ``f'[t] = fold(leaf[t, :3], leaf[t, 3:], x_inv[t], beta)`` for ``t < h``
  (:func:`~jaxstark.protocol.algebra.fold_pair`: ``((a + b) + (a - b) x_inv beta) / 2``), with
  ``x_inv[t] = w_H^-(t 2^shift) s_inv`` read from the table of ``w_H^-t`` (a layer of ``h = H /
  2^shift`` rows has the root ``w_H^(2^shift)``);
* **the next layer's leaves**: ``f'[t]`` goes to row ``t mod h'`` of the next leaf array
  (``h' = max(h / 2, 1)``), columns 0..2 for ``t < h'`` else 3..5 -- the pairs ``(f'[t], f'[t +
  h'])`` -- and to the same place in the flat leaf buffer at the next layer's offset;
* **the real tree's nodes**: row ``r < 2h`` of the layer's node array is node ``r + 2^l (root -
  1)`` of the padded tree (``r`` on level ``l``; the real tree is the subtree of node ``root =
  2^shift``), row 0 is node 0; they are copied to the flat node buffer at the layer's offset.

The leaf and node buffers are updated in place (``input_output_aliases``). Rows past the layer's
are left as they were, where the twin writes padding that nothing reads; the next leaf array's
rows past ``h'`` are left unwritten (on a GPU, whatever the allocator held): the next step's tree
hashes them only into nodes outside the real subtree, if at all. The rows a proof reads equal the
twin's bit for bit.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jaxtyping import Array, Int32, UInt64

from jaxstark.kernels import field_ptx, launch
from jaxstark.protocol.algebra import INV2

__all__ = ["Tiling", "TILING", "WORDS", "place"]

WORDS = 4  # the step's uint64 scalars: s_inv, beta's three coordinates


class Tiling(NamedTuple):
    """Leaf rows per program (twice as many node rows), Triton warps, inline PTX."""

    block: int = 256
    num_warps: int = 4
    ptx: bool = True


TILING = Tiling()


def _place(ints_ref, words_ref, leaf_ref, w_ref, level_ref, tree_ref, leaf_buf_in, node_buf_in,
           next_ref, leaf_buf_ref, node_buf_ref, *, block: int, half: int, f: field_ptx.FieldOps, index):  # fmt: skip
    del leaf_buf_in, node_buf_in  # aliased to the outputs of the same names
    from jax.experimental.pallas import triton as plt

    h = ints_ref[0].astype(index)
    start = pl.program_id(0).astype(index) * block

    @pl.when(start < h)
    def _():
        shift, leaf_off, node_off = (ints_ref[i].astype(index) for i in (1, 2, 3))
        s_inv, *beta = (jnp.broadcast_to(words_ref[i], (block,)) for i in range(WORDS))
        t = start + lax.broadcasted_iota(index, (block,), 0)
        live = t < h

        def load(ref, at, mask):
            return plt.load(ref.at[at], mask=mask, other=0)

        a = tuple(load(leaf_ref, 6 * t + c, live) for c in range(3))
        b = tuple(load(leaf_ref, 6 * t + 3 + c, live) for c in range(3))
        x_inv = f.mul(load(w_ref, (t << shift) & (half - 1), live), s_inv)
        scaled = field_ptx.ext_mul(f, tuple(f.mul(f.sub(u, v), x_inv) for u, v in zip(a, b, strict=True)), tuple(beta))
        two = tuple(f.add(f.add(u, v), w) for u, v, w in zip(a, b, scaled, strict=True))
        folded = tuple(f.mul(v, jnp.full((block,), INV2, jnp.uint64)) for v in two)
        h2 = jnp.maximum(h >> 1, 1)
        # (a lane past h keeps a row of its own, past the live ones: Pallas' interpreter stores a
        # masked lane's old value back, which must not land on a live lane's row)
        at = 6 * jnp.where(live, t & (h2 - 1), t) + jnp.where(live & (t >= h2), 3, 0).astype(index)
        for c in range(3):
            plt.store(next_ref.at[at + c], folded[c], mask=live)
            plt.store(leaf_buf_ref.at[6 * leaf_off + at + c], folded[c], mask=live)

        r = 2 * start + lax.broadcasted_iota(index, (2 * block,), 0)
        real = r < 2 * h
        level = load(level_ref, r, real).astype(index)
        node = jnp.where(r > 0, r + level * ((1 << shift) - 1), 0)
        for w in range(4):
            plt.store(node_buf_ref.at[4 * (node_off + r) + w], load(tree_ref, 4 * node + w, real), mask=real)


@functools.partial(jax.jit, static_argnames=("interpret", "tiling"))
def place(
    ints: Int32[Array, " 4"], words: UInt64[Array, " 4"], leaf: UInt64[Array, " H 6"], w_pows: UInt64[Array, " H"],
    level_start: Int32[Array, " two_H"], tree: UInt64[Array, " two_H 4"], leaf_buf: UInt64[Array, " R 6"],
    node_buf: UInt64[Array, " N 4"], *, interpret: bool = False, tiling: Tiling = TILING,
) -> tuple[UInt64[Array, " H 6"], UInt64[Array, " R 6"], UInt64[Array, " N 4"]]:  # fmt: skip
    """A scanned FRI step's fold, next leaves and node copy (the module docstring): returns the
    next leaf array and the leaf and node buffers. ``ints``: ``h``, ``shift``, the next layer's
    first leaf row, this layer's first node row; ``words``: ``s_inv`` and ``beta``; ``w_pows``:
    ``w_H^-t``; ``level_start``: ``2^l`` of each node row ``r`` on level ``l``; ``tree``: the
    padded tree as digest words (heap order). The caller keeps the writes inside the buffers: a
    Triton kernel addresses raw memory."""
    half = leaf.shape[0]
    if (
        leaf.shape != (half, 6)
        or half < 1
        or half & (half - 1)
        or w_pows.shape != (half,)
        or tree.shape != (2 * half, 4)
    ):
        raise ValueError(f"fri_scan.place: leaves (H, 6), w_pows (H,), tree (2H, 4), H a power of two; got "
                         f"{leaf.shape}, {w_pows.shape}, {tree.shape}")  # fmt: skip
    if tiling.block < 1 or tiling.block & (tiling.block - 1):
        raise ValueError(f"fri_scan.place: the block's rows must be a power of two, got {tiling.block}")
    block = min(tiling.block, half)
    words_max = max(6 * leaf_buf.shape[0], 4 * node_buf.shape[0], 8 * half)
    index = jnp.int32 if words_max < 2**31 else jnp.int64
    kernel = functools.partial(_place, block=block, half=half, f=field_ptx.ops(interpret, tiling.ptx), index=index)
    flat = (leaf, w_pows, level_start, tree, leaf_buf, node_buf)
    out = pl.pallas_call(
        kernel,
        out_shape=tuple(jax.ShapeDtypeStruct((x.size,), x.dtype) for x in (leaf, leaf_buf, node_buf)),
        grid=(half // block,),
        input_output_aliases={6: 1, 7: 2},
        name="fri_scan_place",
        **launch(interpret, tiling.num_warps),
    )(ints, words, *(x.reshape(-1) for x in flat))
    return tuple(o.reshape(x.shape) for o, x in zip(out, (leaf, leaf_buf, node_buf), strict=True))
