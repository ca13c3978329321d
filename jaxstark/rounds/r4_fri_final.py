"""Round 4c: FRI's small layers and its final polynomial.

The layers of at most :func:`~jaxstark.rounds.r4_fri_layer.scan_layers_below` evaluations
(:mod:`jaxstark.rounds.r4_fri_layer` for the folding rule) are one ``lax.scan`` step each over a
fixed buffer of the first such layer's size ``B``, so a proof compiles one small-layer step
whatever the number of layers (an unrolled layer is another copy of the hash). A scanned layer
of ``m`` evaluations hashes ``B / 2`` leaf pairs, the last ``(B - m) / 2`` of them padding, and
builds the tree over all of them: the real tree over the first ``m / 2`` leaves is the padded
tree's leftmost subtree of that size (rooted at node ``B / m``), so the root and the node array
(gathered from the padded tree in the step) are exactly the unpadded ones; the transcript labels
and coset offsets go in as data (:class:`~jaxstark.rounds.r4_fri_layer.FriStep`). The ``jnp``
tree (the CPU's) hashes the padding too, at most ``B / 2`` hashes per small layer; the Merkle
kernels are told the subtree (``live_shift``) and skip the padding's leaves and nodes. The rest
of a step -- the fold, laid out as the next layer's leaf pairs, and the real tree's nodes copied
out of the padded one -- runs over the whole buffer in ``jnp``, and on a GPU is one launch of
:func:`jaxstark.kernels.fri_scan.place`, whose programs past the layer's rows return at once; so
there a scanned layer costs about what a layer of its own does, without a program of its own.

After ``K = log2(n / d_f)`` folds in all (``d_f <= fri_final_degree``) the remaining evaluations
are interpolated and the ``d_f`` coefficients of the final polynomial are sent in clear; any
coefficient beyond them means D was not low-degree (``excess``). The coset's inverse offset is an
argument too, so the program depends only on ``B``, the number of small layers, ``d_f`` and the
hash: one executable serves every height with the same blowup and final degree.

Keeps: every small layer's leaves and tree (openings), the final polynomial. Drops: the folded
values of the last layer.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark import kernels
from jaxstark.field import goldilocks as gl
from jaxstark.hash.interface import DIGEST_BYTES
from jaxstark.kernels import fri_scan
from jaxstark.lde import _interpolate_on_coset
from jaxstark.ntt import _make_tables
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.rounds.r4_fri_layer import FriStep, _commit, _fold, _w_inv
from jaxstark.transcript import Transcript

__all__ = ["FriCommitment", "fri_final"]


class FriCommitment(eqx.Module):
    """FRI layers' leaves and trees, in order, and the final polynomial: the small layers' from
    :func:`fri_final`, the whole commit phase's as the queries open it."""

    leaves: tuple[UInt64[Array, " h 6"], ...]
    nodes: tuple[UInt8[Array, " two_h 32"], ...]
    final: UInt64[Array, " d 3"]
    excess: Bool[Array, ""]


@functools.partial(jax.jit, static_argnames=("hash_name", "degree"), keep_unused=True)
def fri_final(
    f: UInt64[Array, " B 3"], tr: Transcript, steps: FriStep, shift_inv: UInt64[Array, ""], *, hash_name: str,
    degree: int,
) -> tuple[FriCommitment, Transcript]:  # fmt: skip
    """The small layers ``steps`` (a leading axis; possibly none) folded from ``f``, then the
    final polynomial of ``degree`` coefficients on the coset of inverse offset ``shift_inv``."""
    leaves, nodes = [], []
    if steps.s_inv.shape[0]:
        f, tr, leaves, nodes = _small_layers(f, tr, steps, hash_name)
    m = f.shape[0]
    coeffs = _interpolate_on_coset(f, _make_tables(m.bit_length() - 1), shift_inv)
    excess = jnp.any(coeffs[degree:] != np.uint64(0))
    final = coeffs[:degree]
    tr = fs.absorb_fri_final(tr, final)
    return FriCommitment(tuple(leaves), tuple(nodes), final, excess), tr


def _small_layers(f: Array, tr: Transcript, steps: FriStep, hash_name: str):
    """The layers of ``steps`` (the first holding ``f``, ``B = len(f)`` evaluations) as one
    ``lax.scan`` whose carry is the current layer's leaves: ``H = B / 2`` rows, the first ``h``
    the pairs ``(f[t], f[t + h])``, the rest padding. Returns the last layer's folded
    evaluations, the transcript, and each layer's leaves and node array as the unrolled layers
    give them.

    A step builds the tree and draws ``beta``; its row work -- the fold, laid out as the next
    layer's leaves, and the real tree's nodes -- is :func:`_place_jnp` (over the whole buffers)
    or, on a GPU, :func:`jaxstark.kernels.fri_scan.place` (over the layer's rows only). Each
    layer's leaf rows and node rows go to one flat buffer each, at the layer's offset, which is
    where the previous layer's real rows end: the buffers hold the real rows of every layer plus
    one layer's padding, not ``H`` rows per layer."""
    size = f.shape[0]
    half = size // 2
    sizes = np.array([size >> j for j in range(steps.s_inv.shape[0])])  # m of each layer
    leaf_at = np.cumsum([0, *sizes // 2])  # each layer's first row in the flat buffers
    node_at = np.cumsum([0, *sizes])  # (a layer of m evaluations has m nodes: 2h)
    xs = (
        jnp.asarray(np.stack([sizes // 2, np.log2(size // sizes), leaf_at[1:], node_at[:-1]], 1).astype(np.int32)),
        steps.labels,
        steps.s_inv,
    )
    row = jnp.arange(size, dtype=jnp.int32)
    level_start = jnp.left_shift(1, 31 - lax.clz(jnp.maximum(row, 1)))  # 2^level of node `row`
    # w_B^-t for t < B / 2, once: a layer of m = B / 2^j evaluations reads w_m^-t = w_B^-(t 2^j)
    w_pows = gl._powers(jnp.asarray(_w_inv(size)), half)

    def layer(carry, x):
        tr, leaf, leaf_buf, node_buf = carry
        ints, labels, s_inv = x
        # the real tree is the padded tree's subtree of node 2^shift (the kernels build that alone)
        tr, tree, beta = _commit(tr, leaf, (labels[0], labels[1]), hash_name, ints[1])
        words = jnp.concatenate([s_inv[None], beta])
        tree = lax.bitcast_convert_type(tree.reshape(size, 4, 8), jnp.uint64)
        args = (ints, words, leaf, w_pows, level_start, tree, leaf_buf, node_buf)
        leaf, leaf_buf, node_buf = kernels.switch(_place_jnp, _place_kernel, *args)
        return (tr, leaf, leaf_buf, node_buf), None

    leaf = jnp.concatenate([f[:half], f[half:]], axis=-1)
    leaf_buf = jnp.concatenate([leaf, jnp.zeros((int(leaf_at[-1]), 6), f.dtype)])
    node_buf = jnp.zeros((int(node_at[-1]) + size, 4), jnp.uint64)
    (tr, leaf, leaf_buf, node_buf), _ = lax.scan(layer, (tr, leaf, leaf_buf, node_buf), xs)
    node_buf = lax.bitcast_convert_type(node_buf, jnp.uint8).reshape(-1, DIGEST_BYTES)
    leaves = [leaf_buf[leaf_at[j] : leaf_at[j + 1]] for j in range(len(sizes))]
    nodes = [node_buf[node_at[j] : node_at[j + 1]] for j in range(len(sizes))]
    h = int(sizes[-1]) // 4  # the folded evaluations of the last layer are the pairs of h leaf rows
    folded = leaf[:1, :3] if h == 0 else jnp.concatenate([leaf[:h, :3], leaf[:h, 3:]])
    return folded, tr, leaves, nodes


def _place_jnp(ints, words, leaf, w_pows, level_start, tree, leaf_buf, node_buf):
    """A scanned step's row work over the whole buffers (:mod:`jaxstark.kernels.fri_scan`, the
    kernel's twin): the fold of every leaf row, the next leaves (the padding's pairs too), the
    real tree's node array (every row past it reading node 0)."""
    h, shift, leaf_off, node_off = ints[0], ints[1], ints[2], ints[3]
    half = leaf.shape[0]
    t = jnp.arange(half, dtype=jnp.int32)
    x_inv = gl._mul(w_pows[jnp.left_shift(t, shift) & (half - 1)], words[0])
    folded = _fold(leaf[:, :3], leaf[:, 3:], x_inv, words[1:])
    q = max(half // 2, 1)  # pairs (f'[t], f'[t + h']), h' = max(h / 2, 1) <= q
    pairs = jnp.concatenate([folded[:q], lax.dynamic_slice_in_dim(folded, jnp.maximum(h >> 1, 1), q)], axis=-1)
    leaf = jnp.concatenate([pairs, jnp.zeros((half - q, 6), leaf.dtype)])
    # real node i at level l (i = 2^l + o) is padded node 2^shift * 2^l + o; row 0 and the rows
    # past the real tree's 2h read node 0, so no row reads a node the kernels left unbuilt
    row = jnp.arange(2 * half, dtype=jnp.int32)
    real = tree[jnp.where((row > 0) & (row < 2 * h), row + level_start * (jnp.left_shift(1, shift) - 1), 0)]
    leaf_buf = lax.dynamic_update_slice_in_dim(leaf_buf, leaf, leaf_off, 0)
    node_buf = lax.dynamic_update_slice_in_dim(node_buf, real, node_off, 0)
    return leaf, leaf_buf, node_buf


def _place_kernel(*args):
    return fri_scan.place(*args, interpret=kernels.interpret(), tiling=fri_scan.TILING)
