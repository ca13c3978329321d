"""Round 4: DEEP composition and the FRI commit phase.

DEEP: with one extension challenge ``gamma`` and its powers ``g_k``,

    D(x) = [sum_i g_i (T_i(x) - T_i(z)) + sum_j g_(2c+j) (H_j(x) - H_j(z))
            + sum_k g_(2c+P+k) (A_k(x) - A_k(z))] / (x - z)
         + [sum_i g_(c+i) (T_i(x) - T_i(z w)) + sum_k g_(2c+P+a+k) (A_k(x) - A_k(z w))] / (x - z w)

(``T`` the ``c`` main columns, ``H`` the ``P`` composition parts, ``A`` the ``a`` aux columns)

evaluated on the LDE (one batch inversion each for ``x - z`` and ``x - z w``). D has degree < n
when every claimed OOD value is right.

FRI (binary folding): layer ``k`` holds ``f`` on the coset ``s^(2^k) <w_m>`` (natural order,
``m = L / 2^k``); its Merkle leaves are the pairs ``(f[t], f[t + m/2])`` for ``t < m/2`` (6 base
elements each), and after absorbing its root a challenge ``beta_k`` folds it:

    f'[t] = (f[t] + f[t + m/2]) / 2 + beta_k (f[t] - f[t + m/2]) / (2 x_t),  x_t = s^(2^k) w_m^t.

The large layers are one block of code each. The layers of at most :data:`SCAN_LAYERS_BELOW`
evaluations are one ``lax.scan`` step each over a fixed buffer of the first such layer's size
``B``, so a proof compiles one small-layer step whatever the number of layers (each unrolled
layer is another copy of the hash, about 1.5 s of CPU compile time). A scanned layer of ``m``
evaluations hashes ``B / 2`` leaf pairs, the last ``(B - m) / 2`` of them padding, and builds
the tree over all of them: the real tree over the first ``m / 2`` leaves is the padded tree's
leftmost subtree of that size (rooted at node ``B / m``), so the root and the node array
(gathered from the padded tree in the step) are exactly the unpadded ones; the transcript
labels go in as data (:func:`~jaxstark.transcript.encode_label`). The waste is at most
``B / 2`` hashes per small layer. An annotated transcript keeps every layer unrolled (its log
is per label).

After ``K = log2(n / d_f)`` folds (``d_f <= fri_final_degree``) the remaining evaluations are
interpolated and the ``d_f`` coefficients of the final polynomial are sent in clear; any
coefficient beyond them means D was not low-degree (``excess``).

Keeps: every layer's leaves and tree (openings), the final polynomial. Drops: D's extension
inverses and the folded values of the last layer.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.hash.interface import DIGEST_BYTES
from jaxstark.lde import _coset_interpolate
from jaxstark.merkle import _build
from jaxstark.ntt import _make_tables
from jaxstark.poly import sum_column_blocks
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import deep_numerators, deep_value, fold_pair
from jaxstark.protocol.layout import fri_num_layers, num_deep_terms
from jaxstark.rounds.domain import Domain
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.transcript import Transcript, encode_label

__all__ = ["FriCommitment", "deep_fri", "deep_combine"]

SCAN_LAYERS_BELOW = 1 << 10  # FRI layers of at most this many evaluations share one scanned step


class FriCommitment(eqx.Module):
    leaves: tuple[UInt64[Array, " h 6"], ...]
    nodes: tuple[UInt8[Array, " two_h 32"], ...]
    final: UInt64[Array, " d 3"]
    excess: Bool[Array, ""]


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


def deep_combine(xs, trace_rows, aux_rows, parts_rows, ood: OutOfDomain, g_pows, zg):
    """D at points ``xs`` (base, (q,)) from trace rows (q, c), aux rows (q, a, 3) and part rows
    (q, P, 3) (:func:`~jaxstark.protocol.algebra.deep_numerators`, :func:`~jaxstark.protocol.algebra.deep_value`),
    over the whole LDE."""
    num_z, num_zg = deep_numerators(
        lambda t, g: Val(_dot_base_ext(t, g), True), lambda h, g: Val(_dot_ext_ext(h, g), True),
        trace_rows, parts_rows, aux_rows, ood, g_pows,
    )  # fmt: skip
    inverse = lambda d: Val(fext._batch_inv(d.v), True)  # noqa: E731
    return deep_value(Val(xs), Val(ood.z, True), Val(zg, True), num_z, num_zg, inverse).v


def _fold(a: Array, b: Array, x_inv: Array, beta: Array) -> Array:
    """:func:`~jaxstark.protocol.algebra.fold_pair` on arrays."""
    return fold_pair(Val(a, True), Val(b, True), Val(x_inv), Val(beta, True)).v


@functools.partial(jax.jit, static_argnames=("hash_name", "final_degree"), keep_unused=True)
def deep_fri(
    domain: Domain,
    trace_lde: UInt64[Array, " L c"],
    aux_lde: UInt64[Array, " L a3"] | None,
    parts_lde: UInt64[Array, " L P 3"],
    ood: OutOfDomain,
    tr: Transcript,
    *,
    hash_name: str,
    final_degree: int,
) -> tuple[FriCommitment, Transcript]:
    c, parts = trace_lde.shape[1], parts_lde.shape[1]
    size = trace_lde.shape[0]
    aux_rows = jnp.zeros((size, 0, 3), jnp.uint64) if aux_lde is None else aux_lde.reshape(size, -1, 3)
    tr, gamma = fs.deep_gamma(tr)
    g_pows = fext._powers(gamma, num_deep_terms(c, parts, aux_rows.shape[1]))
    zg = fext._mul_base(ood.z, np.uint64(gl.root_of_unity(domain.log_n)))
    f = deep_combine(domain.points(), trace_lde, aux_rows, parts_lde, ood, g_pows, zg)

    layers = fri_num_layers(domain.log_n, final_degree)
    offset = domain.offset
    leaves, nodes = [], []
    k = 0
    while k < layers and (f.shape[0] > SCAN_LAYERS_BELOW or tr.annotated):
        m = f.shape[0]
        labels = fs.fri_labels(k)
        tr, leaf, tree, f = _commit_and_fold(
            tr, f[: m // 2], f[m // 2 :], 1, labels, _w_inv(m), _s_inv(offset, k), hash_name
        )
        leaves.append(leaf)
        nodes.append(tree)
        k += 1
    if k < layers:
        f, tr, small_leaves, small_nodes = _small_layers(f, tr, range(k, layers), offset, hash_name)
        leaves += small_leaves
        nodes += small_nodes

    m = f.shape[0]
    log_m = m.bit_length() - 1
    d_f = domain.n >> layers
    coeffs = _coset_interpolate(f, _make_tables(log_m), pow(offset, 1 << layers, gl.P))
    excess = jnp.any(coeffs[d_f:] != np.uint64(0))
    final = coeffs[:d_f]
    tr = fs.absorb_fri_final(tr, final)
    return FriCommitment(tuple(leaves), tuple(nodes), final, excess), tr


def _w_inv(m: int) -> np.uint64:
    """1 / w_m, the inverse of the size-``m`` root of unity."""
    return np.uint64(pow(gl.root_of_unity(m.bit_length() - 1), gl.P - 2, gl.P))


def _s_inv(offset: int, k: int) -> np.uint64:
    """1 / s^(2^k): the inverse of layer ``k``'s coset offset."""
    return np.uint64(pow(pow(offset, 1 << k, gl.P), gl.P - 2, gl.P))


def _commit_and_fold(tr: Transcript, first, second, root_node, labels, w_inv, s_inv, hash_name: str):
    """One FRI layer: leaves ``(first[t], second[t])``, their tree (root at ``root_node``),
    absorb the root, draw ``beta``, fold. Returns the transcript, leaves, tree and folded values."""
    leaf = jnp.concatenate([first, second], axis=-1)  # (h, 6)
    tree = _build(leaf, hash_name)
    tr, beta = fs.fri_layer(tr, labels, tree[root_node])
    x_inv = gl._mul(gl._powers(jnp.asarray(w_inv), first.shape[0]), s_inv)
    return tr, leaf, tree, _fold(first, second, x_inv, beta)


def _small_layers(f: Array, tr: Transcript, ks: range, offset: int, hash_name: str):
    """Layers ``ks`` (the first holding ``f``, ``B = len(f)`` evaluations) as one ``lax.scan``
    over a ``(B, 3)`` buffer whose first ``m`` rows hold the current layer. Returns the folded
    evaluations, the transcript, and each layer's leaves and node array as the unrolled layers
    give them.

    Each step writes its ``B / 2`` leaf rows and the real tree's node array (gathered from the
    padded tree into ``B`` rows) at the layer's offset in one flat buffer each; the next layer's
    offset is where this one's real rows end, so its write covers the padding: the buffers
    hold the real rows of every layer plus one layer's padding, not ``B`` rows per layer."""
    size = f.shape[0]
    sizes = np.array([size >> j for j in range(len(ks))])  # m of each layer
    leaf_at = np.cumsum([0, *sizes // 2])  # each layer's first row in the flat buffers
    node_at = np.cumsum([0, *sizes])  # (a layer of m evaluations has m nodes: 2h)
    xs = (
        jnp.asarray((sizes // 2).astype(np.int32)),  # h
        jnp.asarray((size // sizes).astype(np.int32)),  # the real tree's root node
        jnp.asarray(leaf_at[:-1].astype(np.int32)),
        jnp.asarray(node_at[:-1].astype(np.int32)),
        jnp.asarray(np.stack([encode_label(fs.fri_labels(k)[0]) for k in ks])),
        jnp.asarray(np.stack([encode_label(fs.fri_labels(k)[1]) for k in ks])),
        jnp.asarray(np.array([_w_inv(int(m)) for m in sizes], np.uint64)),
        jnp.asarray(np.array([_s_inv(offset, k) for k in ks], np.uint64)),
    )
    row = jnp.arange(size, dtype=jnp.int32)
    level_start = jnp.left_shift(1, 31 - lax.clz(jnp.maximum(row, 1)))  # 2^level of node `row`

    def layer(carry, x):
        tr, buf, leaf_buf, node_buf = carry
        h, root_node, leaf_off, node_off, layer_label, beta_label, w_inv, s_inv = x
        first = buf[: size // 2]  # f[t] for t < h, then padding
        second = lax.dynamic_slice_in_dim(buf, h, size // 2)  # f[t + h] for t < h
        # the real tree is the padded tree's subtree of node root_node
        tr, leaf, tree, folded = _commit_and_fold(
            tr, first, second, root_node, (layer_label, beta_label), w_inv, s_inv, hash_name
        )
        # real node i at level l (i = 2^l + o) is padded node root_node * 2^l + o; row 0 stays 0
        real = tree[jnp.where(row > 0, row + level_start * (root_node - 1), 0)]
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
