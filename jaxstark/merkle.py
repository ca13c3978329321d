"""Merkle commitments to evaluation matrices: one tree builder for every hash.

Leaves are the rows of a ``(n, *cols)`` matrix of field elements, ``n`` a power of two, in
natural row order (leaf ``i`` is row ``i``). Each row is flattened row-major (an extension
column contributes its three coordinates in order) and hashed with ``hash.hash_rows``
(serialisation: :mod:`jaxstark.hash.interface`). Internal nodes are
``hash.compress(left, right)``, a function domain-separated from the leaf hash (keyed BLAKE3,
Keccak-256 with a trailing tag byte, Poseidon2 with a node capacity; see
:mod:`jaxstark.hash.interface`), so no leaf digest can stand in for an internal node.

The tree is **one array** ``nodes: uint8[2n, 32]`` in heap order: ``nodes[1]`` is the root, node
``v`` has children ``2v`` and ``2v + 1``, leaf ``i`` sits at ``n + i``; ``nodes[0]`` is unused
(zero).

Two builders give the same bytes. On a CUDA device (unless ``JAXSTARK_KERNELS=jnp``, see
:mod:`jaxstark.kernels`) the Pallas kernels of :mod:`jaxstark.kernels.merkle` hash the leaves and fuse several
levels per pass, writing one ``2n * 32``-byte node buffer in place. Elsewhere, and as their
reference, plain ``jnp`` (:func:`_reference_build`) hashes the leaves with ``hash.hash_rows``,
compresses the large levels one pass each and the small ones in one scan, and concatenates the
levels: ``2n * 32`` bytes of levels plus the ``2n * 32``-byte result at the widest point.

An opening of leaf ``i`` is the row and its authentication path: the ``log2 n`` sibling digests
``nodes[((n + i) >> k) ^ 1]`` from the leaf level up. :func:`verify_paths` recomputes the root
from a row and its path and is a plain JAX computation, so the verifier runs it on the CPU.

Everything that must happen for every hash -- validation now; instrumentation, fault hooks
and admission later -- lives in :func:`commit`, the single builder.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark.errors import ShapeError
from jaxstark.field._check import field_array
from jaxstark.hash.host import check_opening
from jaxstark.hash.interface import DIGEST_BYTES, Hash, get_hash
from jaxstark.kernels import interpret, switch
from jaxstark.kernels import merkle as kernel_merkle
from jaxstark.ntt import log2_exact

__all__ = ["MerkleTree", "Opening", "commit", "open_rows", "verify_paths"]


class MerkleTree(eqx.Module):
    """A committed matrix: the node array in heap order and its shape."""

    hash_name: str = eqx.field(static=True)
    log_n: int = eqx.field(static=True)
    nodes: UInt8[Array, " two_n 32"]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]

    @property
    def n_leaves(self) -> int:
        return 1 << self.log_n


class Opening(eqx.Module):
    """Opened rows and their authentication paths (``paths[q, k]`` is the sibling at height k)."""

    indices: Array
    rows: UInt64[Array, " q width"]
    paths: UInt8[Array, " q log_n 32"]


def _flatten_rows(matrix: Array) -> Array:
    return matrix.reshape(matrix.shape[0], -1)


# the plain-jnp tree works on this many leaves, or pairs of nodes, at a time: a hash holds a few
# hundred bytes per message it works on, and the whole matrix at once would be most of its
# round's device set
BLOCK = 1 << 12


def _reference_build(matrix: Array, hash_name: str) -> Array:
    """The tree in plain ``jnp``: the CPU path, and the reference the kernels are held to.

    Every level is written into the one ``(2n, 32)`` node array (heap order: the level of ``k``
    nodes at rows ``[k, 2k)``, row 0 unused and zero), and the hash works on at most
    :data:`BLOCK` messages at once, so the build holds the tree and one block's working set
    whatever ``n``. Three loops, each one compiled hash: the leaves a block at a time; the
    levels of at least ``BLOCK`` nodes a block of pairs at a time, level after level; then the
    levels above, one step each over a fixed ``m = min(n, BLOCK)`` rows that compresses ``m/2``
    pairs -- most of them nodes of the levels below computed again once the level is small (at
    most ``m/2 * log2(m)`` compressions instead of ``m``, traded for compile time: every
    unrolled level would be another copy of the hash)."""
    h = get_hash(hash_name)
    rows = _flatten_rows(matrix)
    n = rows.shape[0]
    nodes = jnp.zeros((2 * n, DIGEST_BYTES), jnp.uint8)
    if n > BLOCK:

        def leaf_block(j, nodes):
            j = j.astype(jnp.int64)  # row offsets reach 2^32 for the largest trees
            block = jax.lax.dynamic_slice_in_dim(rows, j * BLOCK, BLOCK)
            return jax.lax.dynamic_update_slice_in_dim(nodes, h._hash_rows(block), n + j * BLOCK, 0)

        nodes = jax.lax.fori_loop(0, n // BLOCK, leaf_block, nodes)
    else:
        nodes = nodes.at[n:].set(h._hash_rows(rows))
    jobs, m = [], n  # (first row of BLOCK pairs, first row of their parents), level after level
    while m > BLOCK:
        jobs += [(m + 2 * j, m // 2 + j) for j in range(0, m // 2, BLOCK)]
        m //= 2
    if jobs:
        src, dst = (jnp.asarray(x, jnp.int64) for x in zip(*jobs, strict=True))

        def pair_block(t, nodes):
            below = jax.lax.dynamic_slice_in_dim(nodes, src[t], 2 * BLOCK)
            return jax.lax.dynamic_update_slice_in_dim(nodes, h._compress(below[0::2], below[1::2]), dst[t], 0)

        nodes = jax.lax.fori_loop(0, len(jobs), pair_block, nodes)
    if m == 1:
        return nodes
    half = m // 2

    def level(i, nodes):  # the level of k = m / 2^(i+1) nodes, from the one at rows [2k, 4k)
        k = jnp.right_shift(np.int32(half), i)
        below = jax.lax.dynamic_slice_in_dim(nodes, 2 * k, m)  # that level, then the levels below
        # rows [k, k + m/2): this level's k nodes, then nodes of the levels below computed again
        # from their children, which are final by now -- the same bytes, so no mask is needed
        parents = h._compress(below[0::2], below[1::2])
        return jax.lax.dynamic_update_slice_in_dim(nodes, parents, k, 0)

    return jax.lax.fori_loop(0, m.bit_length() - 1, level, nodes)


@functools.partial(jax.jit, static_argnums=1)
def _build(matrix: Array, hash_name: str, live_shift: Array | None = None) -> Array:
    """The node array of :func:`commit`: the Pallas kernels of :mod:`jaxstark.kernels.merkle`
    where the kernel posture puts them (a CUDA device, by default) and the hash has a kernel
    form, else :func:`_reference_build`; both give the same bytes. ``live_shift`` (traced
    ``s``): only the subtree of node ``2^s`` is needed (the tree of the first ``n >> s`` rows);
    the kernels then skip the rest and leave the nodes outside that subtree unspecified."""
    if kernel_merkle.kernel_hash(hash_name) is None:
        return _reference_build(matrix, hash_name)
    kernel = functools.partial(kernel_merkle.build_nodes, hash_name=hash_name, interpret=interpret())
    if live_shift is None:
        return switch(functools.partial(_reference_build, hash_name=hash_name), kernel, matrix)
    return switch(lambda m, _: _reference_build(m, hash_name), lambda m, s: kernel(m, live_shift=s), matrix, live_shift)


def commit(matrix: UInt64[Array, " n *cols"], hash: str | Hash = "blake3") -> MerkleTree:
    """Build the Merkle tree over the rows of ``matrix`` (n a power of two, n >= 1)."""
    h = get_hash(hash)
    matrix = field_array(matrix, "commit matrix")
    if matrix.ndim < 1:
        raise ShapeError("commit: the matrix needs a leading row axis")
    log_n = log2_exact(matrix.shape[0], "commit: number of rows")
    return MerkleTree(h.name, log_n, _build(matrix, h.name))


def _path_indices(indices: Array, log_n: int) -> Array:
    n = 1 << log_n
    k = jnp.arange(log_n, dtype=jnp.uint32)
    return ((indices[:, None].astype(jnp.uint32) + np.uint32(n)) >> k) ^ np.uint32(1)


@jax.jit
def _open(nodes: Array, matrix: Array, indices: Array) -> tuple[Array, Array]:
    log_n = (nodes.shape[0] // 2).bit_length() - 1
    rows = _flatten_rows(matrix)[indices]
    return rows, nodes[_path_indices(indices, log_n)]


def open_rows(tree: MerkleTree, matrix: UInt64[Array, " n *cols"], indices) -> Opening:
    """Open the rows at ``indices`` (any integer array of values < n)."""
    if matrix.shape[0] != tree.n_leaves:
        raise ShapeError(f"open_rows: matrix has {matrix.shape[0]} rows, the tree {tree.n_leaves} leaves")
    idx = jnp.asarray(indices)
    if not jnp.issubdtype(idx.dtype, jnp.integer) or idx.ndim != 1:
        raise ShapeError(f"open_rows: indices must be a 1-D integer array, got {idx.dtype} {idx.shape}")
    if not isinstance(idx, jax.core.Tracer) and idx.size and (int(idx.min()) < 0 or int(idx.max()) >= tree.n_leaves):
        raise ShapeError(f"open_rows: indices must lie in [0, {tree.n_leaves}), got {np.asarray(idx).tolist()}")
    rows, paths = _open(tree.nodes, matrix, idx.astype(jnp.uint32))
    return Opening(idx, rows, paths)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _verify(hash_name: str, log_n: int, root: Array, indices: Array, rows: Array, paths: Array) -> Array:
    h = get_hash(hash_name)
    idx = indices.astype(jnp.uint32)

    def climb(k, node):
        sib = paths[:, k]
        right = (((idx >> k.astype(jnp.uint32)) & np.uint32(1)) == np.uint32(1))[:, None]
        return h._compress(jnp.where(right, sib, node), jnp.where(right, node, sib))

    node = h._hash_rows(rows)
    if log_n:
        node = jax.lax.fori_loop(0, log_n, climb, node)
    in_range = idx.astype(jnp.uint64) < np.uint64(1 << log_n)
    return jnp.all(node == root[None, :], axis=-1) & in_range


def verify_paths(
    hash: str | Hash,
    root: UInt8[Array, " 32"],
    log_n: int,
    indices: Array,
    rows: UInt64[Array, " q width"],
    paths: UInt8[Array, " q log_n 32"],
) -> Bool[Array, " q"]:
    """For each opening, whether its row and path lead to ``root`` at leaf ``indices[q]`` of a
    tree with ``2^log_n`` leaves. Shape errors raise ``ShapeError``; wrong data gives False."""
    h = get_hash(hash)
    indices, rows, paths, root = (jnp.asarray(a) for a in (indices, rows, paths, root))
    check_opening(log_n, root, indices, rows, paths, "verify_paths: the opening")
    ok_idx = (indices >= 0) & (indices < (1 << log_n))
    safe = jnp.where(ok_idx, indices, 0)
    return _verify(h.name, log_n, root, safe, rows, paths) & ok_idx
