"""Merkle tree building as Pallas (Triton) kernels, generic over an in-kernel hash.

The plain ``jnp`` builder (:func:`jaxstark.merkle._reference_build`) hashes the leaves with the
stacked ``jnp`` hashes and compresses one level per XLA pass; it is the CPU path and this
module's reference, bit for bit. Here the tree is one ``uint64[2n, 4]`` node buffer in heap
order (node ``v`` at row ``v``; a digest is four little-endian ``uint64`` words) written by:

* **the leaf kernel** -- one program per block of rows; the hash's ``leaf(load, width)`` reads
  each column of the block once as a vector over the block's rows and writes the digests to
  rows ``n .. 2n-1``;
* **tree passes** -- a pass fuses ``r`` levels: for a level of ``m`` nodes (heap rows
  ``m .. 2m-1``) it treats every ``R = 2^r`` consecutive nodes as one group, loads the ``R``
  children of a block of groups as ``R`` digests of strided vectors (lane = group), compresses
  them pairwise, depth first, into the group's subtree, and writes all ``r`` levels above to
  their heap rows. ``log2 n`` levels take ``ceil(log2 n / r)`` passes; the last one may fuse
  fewer levels, up to the root.

Every pass updates the node buffer in place (``input_output_aliases``; the rows it reads and
the rows it writes are disjoint), so the build holds one ``2n * 32``-byte buffer besides the
matrix; the ``uint8[2n, 32]`` result is that buffer reinterpreted (``bitcast_convert_type``,
little-endian like the digests' words).

The passes that fuse the full depth are one kernel called in a ``fori_loop``, the level being
a traced operand: a build compiles the leaf kernel and at most two tree kernels whatever
``n``. Such a kernel is launched for the first (largest) level; on the smaller levels above,
programs past the level's last group return at once and lanes past it are masked.

An in-kernel hash is an object with ``name``, ``leaf(load, width)`` and ``compress(left,
right)`` on ``uint64`` lane vectors (element-wise ops only, so the same code runs as plain
``jnp``); :func:`kernel_hash` finds the one for a hash name. A hash that can unroll its rounds
(an ``unroll`` field) gets them unrolled inside a compiled kernel and looped in Pallas'
interpreter, where XLA compiles unrolled rounds slowly; one whose field arithmetic can be inline
PTX (a ``ptx`` field: Poseidon2's) gets ``Tiling.ptx`` inside a compiled kernel and the ``jnp``
functions in the interpreter, which has no PTX. A tree kernel makes ``R - 1`` calls of
one jitted ``compress``, so tracing it -- which every build does, also on a CPU, for the
platform switch -- costs one trace of the compression; the fusion depth is a per-hash launch
choice (:data:`TILINGS`): deep for BLAKE3's cheap compression, shallow for the long
permutations, whose ``R - 1`` unrolled copies make long Triton compiles.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plt
from jaxtyping import Array, UInt8, UInt64

from jaxstark.kernels import launch

__all__ = ["Tiling", "TILINGS", "kernel_hash", "pass_plan", "leaf_digests", "build_nodes"]

WORDS = 4  # uint64 words per 32-byte digest
_ZERO = np.uint64(0)


class Tiling(NamedTuple):
    """Launch shape: rows per leaf program, groups per tree program, levels fused per tree
    pass (at most), Triton warps and software-pipelining stages of each kernel, whether a
    compiled kernel unrolls the hash's rounds (a rolled loop compiles faster), and its field
    arithmetic for a hash that has one to choose (Poseidon2's ``ptx``: ``True`` every add,
    subtract and product as the inline PTX of :mod:`jaxstark.kernels.field_ptx`, ``"mul"`` only
    the products, ``False`` the ``jnp`` functions). Like ``unroll``, ``ptx`` is for compiled
    kernels only: in Pallas' interpreter the hash runs the ``jnp`` functions whatever it says.
    The sponge kernels (:mod:`jaxstark.kernels.sponge`) take both from :data:`TILINGS` too."""

    leaf_block: int = 256
    leaf_warps: int = 4
    leaf_stages: int = 1
    tree_block: int = 128
    tree_warps: int = 4
    max_levels: int = 3
    unroll: bool = False
    ptx: bool | str = "mul"


# Rolled rounds everywhere: on an H200 (benchmarks/compile_merkle_kernels.py, 2^20 x 62) the
# unrolled BLAKE3 4-level pass and the unrolled Keccak build each compiled for over 150 s, the
# rolled builds in 0.8-24 s, and ran as fast or faster (RESULTS.md, "Merkle kernels").
# BLAKE3 fuses 3 levels per pass (7 compressions per kernel): XLA:GPU compiled the 4-level pass
# in about 18 s for every tree size, the 3-level one in under half a second, and ALU 2^22's
# rounds ran as fast (RESULTS.md, "Compile time: BLAKE3's tree kernel three levels deep").
# Poseidon2's products are inline PTX in a compiled kernel, its additions jnp (Tiling.ptx "mul",
# the default): a 2^23 x 62 tree took 125.8 ms, against 131.5 ms with every operation in PTX and
# 146.7 ms with none, on an H100 (RESULTS.md, "Poseidon2's field arithmetic in PTX").
TILINGS: dict[str, Tiling] = {
    "blake3": Tiling(leaf_block=256, tree_block=128, max_levels=3),
    "keccak256": Tiling(leaf_block=128, tree_block=128, max_levels=2),
    "poseidon2": Tiling(leaf_block=128, tree_block=128, max_levels=1),
}

# name -> (module, attribute) of the in-kernel hash, imported on first use.
_KERNEL_HASHES = {
    "blake3": ("jaxstark.kernels.blake3", "BLAKE3"),
    "keccak256": ("jaxstark.kernels.keccak", "KECCAK"),
    "poseidon2": ("jaxstark.kernels.poseidon2", "POSEIDON2"),
}


def kernel_hash(name: str) -> Any | None:
    """The in-kernel hash called ``name``, or ``None`` when its module is not available (the
    builder then keeps the ``jnp`` path). Unknown names raise ``ValueError``."""
    try:
        module, attr = _KERNEL_HASHES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown hash {name!r}; kernel hashes: {sorted(_KERNEL_HASHES)}") from None
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise


def _compiled_form(h: Any, interpret: bool, tiling: Tiling) -> Any:
    """``h`` as a kernel runs it. Compiled: rounds unrolled if ``tiling.unroll``, field
    arithmetic ``tiling.ptx``, for a hash with those fields. In the interpreter: as it is, but
    never with PTX (``ptx=False``, the ``jnp`` functions, as :func:`field_ptx.ops` chooses)."""
    fields = {f.name for f in dataclasses.fields(h)} if dataclasses.is_dataclass(h) else set()
    changes = {}
    if "unroll" in fields and not interpret:
        changes["unroll"] = tiling.unroll
    if "ptx" in fields and (h.ptx or not interpret):
        changes["ptx"] = False if interpret else tiling.ptx
    return dataclasses.replace(h, **changes) if changes else h


def pass_plan(log_n: int, max_levels: int) -> list[int]:
    """Levels fused by each tree pass, leaves first: as many ``max_levels`` passes as fit, then
    one pass over the rest, up to the root (whose level holds a single group)."""
    full, rest = divmod(log_n, max_levels)
    return [max_levels] * full + ([rest] if rest else [])


@functools.cache
def _traced_once(h: Any):
    """``h.compress`` as a jitted function: a tree kernel calls it ``2^r - 1`` times, and jit's
    trace cache makes that one trace per hash and lane shape (lowering inlines every call)."""
    return jax.jit(h.compress)


def _leaf_kernel(live_ref, rows_ref, nodes_ref, *, h: Any, width: int, block: int):
    @pl.when(pl.program_id(0) * block < live_ref[0])
    def _():
        digest = h.leaf(lambda j: rows_ref[:, j], width)
        for w in range(WORDS):
            nodes_ref[:, w] = digest[w]


def leaf_digests(
    rows: UInt64[Array, " n width"], h: Any, *, interpret: bool = False, tiling: Tiling | None = None,
    live: Array | None = None,
) -> UInt64[Array, " two_n 4"]:  # fmt: skip
    """A ``uint64[2n, 4]`` node buffer whose rows ``n .. 2n-1`` hold the leaf digests of
    ``rows`` (n a power of two); rows ``0 .. n-1`` are left for the tree passes. ``live`` (a
    traced count; None: all): only the digests of the first ``live`` rows are needed -- the
    blocks wholly past them are skipped and their rows left unwritten."""
    tiling = tiling or TILINGS.get(h.name, Tiling())
    n, width = rows.shape
    block = min(n, tiling.leaf_block)
    first = n // block  # block index of heap row n
    live = jnp.full((1,), n if live is None else live, jnp.int32)
    return pl.pallas_call(
        functools.partial(_leaf_kernel, h=_compiled_form(h, interpret, tiling), width=width, block=block),
        out_shape=jax.ShapeDtypeStruct((2 * n, WORDS), jnp.uint64),
        grid=(n // block,),
        in_specs=[pl.BlockSpec((1,), lambda i: (0,)), pl.BlockSpec((block, width), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block, WORDS), lambda i: (first + i, 0)),
        name=f"merkle_leaves_{h.name}",
        **launch(interpret, tiling.leaf_warps, tiling.leaf_stages),
    )(live, rows)


def _tree_kernel(level_ref, nodes_in, nodes_out, *, h: Any, r: int, block: int, index_dtype):
    """Levels ``m/2 .. m/2^r`` from level ``m`` (``level_ref[0]``) for ``block`` groups of ``2^r``
    nodes, of which the first ``m >> level_ref[1]`` are needed (the others' subtrees are not
    computed: see :func:`build_nodes`' ``live_shift``). Programs past the last group with a
    needed node do nothing; lanes past it are masked."""
    m = level_ref[0].astype(index_dtype)
    # (the shift is at most log2 of the tree's leaves, below the index type's width)
    groups = ((m >> level_ref[1].astype(index_dtype)) + ((1 << r) - 1)) >> r
    first = pl.program_id(0).astype(index_dtype) * block

    @pl.when(first < groups)
    def _():
        group = first + jax.lax.broadcasted_iota(index_dtype, (block,), 0)
        live = group < groups

        def index(level: int, c: int, w: int):  # word w of node c of every group, level m >> level
            return WORDS * ((m >> level) + group * ((1 << r) >> level) + c) + w

        def subtree(level: int, c: int):
            if level == 0:
                return tuple(plt.load(nodes_in.at[index(0, c, w)], mask=live, other=_ZERO) for w in range(WORDS))
            digest = _traced_once(h)(subtree(level - 1, 2 * c), subtree(level - 1, 2 * c + 1))
            for w in range(WORDS):
                plt.store(nodes_out.at[index(level, c, w)], digest[w], mask=live)
            return digest

        subtree(r, 0)


def _tree_pass(
    nodes: Array, m: Array, h: Any, r: int, n: int, interpret: bool, tiling: Tiling, shift: Array | int = 0
) -> Array:
    """One call of the ``r``-level pass on level ``m`` (traced), launched for the largest level
    such a pass sees in a tree of ``n`` leaves -- so every pass of a build is the same kernel;
    only the first ``m >> shift`` nodes of the level (``shift`` traced) are needed."""
    groups = n >> r
    block = min(groups, tiling.tree_block)
    index_dtype = jnp.int32 if nodes.shape[-1] < 2**31 else jnp.int64
    kernel = functools.partial(
        _tree_kernel, h=_compiled_form(h, interpret, tiling), r=r, block=block, index_dtype=index_dtype
    )
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(nodes.shape, nodes.dtype),
        grid=(groups // block,),
        input_output_aliases={1: 0},
        name=f"merkle_tree_{h.name}_r{r}",
        **launch(interpret, tiling.tree_warps),
    )(jnp.stack([jnp.asarray(m, jnp.int32), jnp.asarray(shift, jnp.int32)]), nodes)


def build_nodes(
    matrix: UInt64[Array, " n *cols"], hash_name: str, *, interpret: bool = False, tiling: Tiling | None = None,
    live_shift: Array | None = None,
) -> UInt8[Array, " two_n 32"]:  # fmt: skip
    """The Merkle tree over the rows of ``matrix`` as ``uint8[2n, 32]`` in heap order -- the
    array :func:`jaxstark.merkle._reference_build` returns, bit for bit (row 0 zero, the root at
    row 1, leaf ``i`` at row ``n + i``). Traceable and ``vmap``-able; n a power of two.

    ``live_shift`` (a traced ``s``; None: 0): only the subtree of node ``2^s`` -- the tree of the
    first ``n >> s`` rows -- is needed. Its nodes are those of the full array, bit for bit; the
    leaves past it are not hashed, the nodes above it and right of it are left unspecified."""
    h = kernel_hash(hash_name)
    if h is None:
        raise ValueError(f"no kernel form of hash {hash_name!r} is available")
    tiling = tiling or TILINGS.get(hash_name, Tiling())
    n = matrix.shape[0]
    shift = jnp.int32(0) if live_shift is None else jnp.asarray(live_shift, jnp.int32)
    nodes = leaf_digests(matrix.reshape(n, -1), h, interpret=interpret, tiling=tiling, live=jnp.int32(n) >> shift)
    nodes = nodes.reshape(-1)  # flat words: the kernels address a node's word by lane arithmetic
    plan = pass_plan(n.bit_length() - 1, tiling.max_levels)
    full = plan.count(tiling.max_levels)
    depth = tiling.max_levels

    def step(p, buf):
        return _tree_pass(buf, jnp.int32(n) >> (depth * p), h, depth, n, interpret, tiling, shift)

    if full:
        nodes = jax.lax.fori_loop(np.int32(0), np.int32(full), step, nodes)
    if len(plan) > full:
        rest = plan[-1]
        nodes = _tree_pass(nodes, jnp.int32(1 << rest), h, rest, 1 << rest, interpret, tiling, shift)
    nodes = nodes.reshape(2 * n, WORDS).at[0].set(_ZERO)
    return jax.lax.bitcast_convert_type(nodes, jnp.uint8).reshape(2 * n, WORDS * 8)
