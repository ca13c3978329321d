"""Round 5, per commitment: the opened rows and their Merkle paths.

One dispatch per commitment of a unit -- the main trace, the aux trace, the composition parts,
and every FRI layer together -- so a dispatch holds one commitment's matrices and trees, and
each commitment can be dropped (or stay parked in host memory) once it is opened. At query
position ``t`` (of an LDE of ``L`` rows) a matrix of ``m`` rows opens row ``t mod m``: the LDE
row ``t`` of a trace or of the parts, and in FRI layer ``k`` (``m = L / 2^(k+1)``) the pair
whose first half is ``t mod m``.

A tree the planner chose to recompute (:mod:`jaxstark.memory.plan`) reaches this round as its
first two rows only -- the unused zero row and the root, all its round kept -- and is built
again here from the matrix it commits to (:func:`jaxstark.merkle._build`, the same bytes), so
that it is on the device only while its paths are gathered.

Keeps: the rows, the paths and each tree's root, which go into the proof.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, UInt8, UInt32

from jaxstark.merkle import _build, _open

__all__ = ["Opened", "openings"]


class Opened(eqx.Module):
    rows: tuple[Array, ...]  # per matrix, (q, its row's words)
    paths: tuple[UInt8[Array, " q logm 32"], ...]  # per matrix
    roots: UInt8[Array, " k 32"]  # per matrix, its tree's root


@functools.partial(jax.jit, static_argnames="hash_name", keep_unused=True)
def openings(leaves: tuple, nodes: tuple, indices: UInt32[Array, " q"], *, hash_name: str) -> Opened:
    """Each matrix's rows at ``indices`` and their paths; a tree given as its root rows only
    (``(2, 32)`` for a matrix of more rows) is built again from the matrix first."""
    rows, paths, built = [], [], []
    for matrix, tree in zip(leaves, nodes, strict=True):
        if tree.shape[0] != 2 * matrix.shape[0]:
            if tree.shape[0] != 2:
                raise ValueError(f"openings: a tree of {tree.shape[0]} rows for a matrix of {matrix.shape[0]} rows")
            tree = _build(matrix, hash_name)
        built.append(tree)
        r, p = _open(tree, matrix, indices & np.uint32(matrix.shape[0] - 1))
        rows.append(r)
        paths.append(p)
    roots = jax.numpy.stack([tree[1] for tree in built]) if nodes else jax.numpy.zeros((0, 32), np.uint8)
    return Opened(tuple(rows), tuple(paths), roots)
