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
kernels are told the subtree (``live_shift``) and skip the padding's leaves and nodes, so on a
GPU a scanned layer costs about what a layer of its own does, without a program of its own.

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

from jaxstark.field import goldilocks as gl
from jaxstark.hash.interface import DIGEST_BYTES
from jaxstark.lde import _interpolate_on_coset
from jaxstark.ntt import _make_tables
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.rounds.r4_fri_layer import FriStep, _commit_and_fold, _w_inv
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
    ``lax.scan`` over a ``(B, 3)`` buffer whose first ``m`` rows hold the current layer. Returns
    the folded evaluations, the transcript, and each layer's leaves and node array as the
    unrolled layers give them.

    Each step writes its ``B / 2`` leaf rows and the real tree's node array (gathered from the
    padded tree into ``B`` rows) at the layer's offset in one flat buffer each; the next layer's
    offset is where this one's real rows end, so its write covers the padding: the buffers
    hold the real rows of every layer plus one layer's padding, not ``B`` rows per layer."""
    size = f.shape[0]
    sizes = np.array([size >> j for j in range(steps.s_inv.shape[0])])  # m of each layer
    leaf_at = np.cumsum([0, *sizes // 2])  # each layer's first row in the flat buffers
    node_at = np.cumsum([0, *sizes])  # (a layer of m evaluations has m nodes: 2h)
    xs = (
        jnp.asarray((sizes // 2).astype(np.int32)),  # h
        jnp.asarray(np.log2(size // sizes).astype(np.int32)),  # the real tree's root is node 2^shift
        jnp.asarray(leaf_at[:-1].astype(np.int32)),
        jnp.asarray(node_at[:-1].astype(np.int32)),
        steps.labels,
        steps.s_inv,
    )
    row = jnp.arange(size, dtype=jnp.int32)
    level_start = jnp.left_shift(1, 31 - lax.clz(jnp.maximum(row, 1)))  # 2^level of node `row`
    # w_B^-t for t < B / 2, once: a layer of m = B / 2^j evaluations reads w_m^-t = w_B^-(t 2^j)
    # (the padding's rows read any entry)
    w_pows = gl._powers(jnp.asarray(_w_inv(size)), size // 2)
    half = jnp.arange(size // 2, dtype=jnp.int32)

    def layer(carry, x):
        tr, buf, leaf_buf, node_buf = carry
        h, shift, leaf_off, node_off, labels, s_inv = x
        root_node = jnp.left_shift(np.int32(1), shift)
        first = buf[: size // 2]  # f[t] for t < h, then padding
        second = lax.dynamic_slice_in_dim(buf, h, size // 2)  # f[t + h] for t < h
        x_inv = gl._mul(w_pows[jnp.left_shift(half, shift) & (size // 2 - 1)], s_inv)
        # the real tree is the padded tree's subtree of node root_node (the kernels build that alone)
        tr, leaf, tree, folded = _commit_and_fold(tr, first, second, (labels[0], labels[1]), x_inv, hash_name, shift)
        # real node i at level l (i = 2^l + o) is padded node root_node * 2^l + o; row 0 and the
        # rows past the real tree's 2h (padding, overwritten by the next layer) read node 0, so
        # no row reads a node the kernels left unbuilt
        real = tree[jnp.where((row > 0) & (row < 2 * h), row + level_start * (root_node - 1), 0)]
        buf = jnp.concatenate([folded, jnp.zeros_like(folded)])
        leaf_buf = lax.dynamic_update_slice_in_dim(leaf_buf, leaf, leaf_off, 0)
        node_buf = lax.dynamic_update_slice_in_dim(node_buf, real, node_off, 0)
        return (tr, buf, leaf_buf, node_buf), None

    leaf_buf = jnp.zeros((int(leaf_at[-1]) + size // 2, 6), f.dtype)
    node_buf = jnp.zeros((int(node_at[-1]) + size, DIGEST_BYTES), jnp.uint8)
    (tr, buf, leaf_buf, node_buf), _ = lax.scan(layer, (tr, f, leaf_buf, node_buf), xs)
    leaves = [leaf_buf[leaf_at[j] : leaf_at[j + 1]] for j in range(len(sizes))]
    nodes = [node_buf[node_at[j] : node_at[j + 1]] for j in range(len(sizes))]
    return buf[: int(sizes[-1]) // 2], tr, leaves, nodes
