"""Round 5, per commitment: the opened rows and their Merkle paths.

One dispatch per commitment of a unit -- the main trace, the aux trace, the composition parts,
and every FRI layer together -- so a dispatch holds one commitment's matrices and trees, and
each commitment can be dropped (or stay parked in host memory) once it is opened. At query
position ``t`` (of an LDE of ``L`` rows) a matrix of ``m`` rows opens row ``t mod m``: the LDE
row ``t`` of a trace or of the parts, and in FRI layer ``k`` (``m = L / 2^(k+1)``) the pair
whose first half is ``t mod m``.

Keeps: the rows, the paths and each tree's root, which go into the proof.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, UInt8, UInt32

from jaxstark.merkle import _open

__all__ = ["Opened", "openings"]


class Opened(eqx.Module):
    rows: tuple[Array, ...]  # per matrix, (q, its row's words)
    paths: tuple[UInt8[Array, " q logm 32"], ...]  # per matrix
    roots: UInt8[Array, " k 32"]  # per matrix, its tree's root


@functools.partial(jax.jit, keep_unused=True)
def openings(leaves: tuple, nodes: tuple, indices: UInt32[Array, " q"]) -> Opened:
    rows, paths = [], []
    for matrix, tree in zip(leaves, nodes, strict=True):
        r, p = _open(tree, matrix, indices & np.uint32(matrix.shape[0] - 1))
        rows.append(r)
        paths.append(p)
    roots = jax.numpy.stack([tree[1] for tree in nodes]) if nodes else jax.numpy.zeros((0, 32), np.uint8)
    return Opened(tuple(rows), tuple(paths), roots)
