"""Chains of 2-to-1 compressions as one Pallas (Triton) launch: the transcript's duplex steps.

A transcript operation (:mod:`jaxstark.transcript`) compresses its state with a tag and then
with each 32-byte block it absorbs, one after another, or with a batch of counter blocks at
once. In ``jnp`` each compression is its hash's rounds in a ``fori_loop`` over a handful of
bytes, and on a GPU every step of that loop is several launches of tiny kernels: a BLAKE3
compression costs about 0.06 ms there, a Keccak or Poseidon2 one 0.35-0.4 ms, and a warm proof
spends most of its idle GPU time on them (benchmarks/RESULTS.md, 2026-12-06, fourth session).

Here a whole chain is one launch: :func:`chain` takes ``state`` (``*batch`` digests) and
``count`` blocks per lane and returns ``C(... C(C(state, b_0), b_1) ..., b_{count-1})`` for
each lane, with the in-kernel hashes of :mod:`jaxstark.kernels.merkle` (whose ``compress`` is the
transcript's ``C``, tested equal to the ``jnp`` one bit for bit there). Lane ``j`` of the word
vectors is batch element ``j`` (padded to at least :data:`LANES` lanes, a power of two): one
program for up to :data:`BLOCK_LANES` lanes, else programs of that many (a batch of 2^14,
grinding's, is 128 programs of one lane per thread); the blocks are read row by row inside
the loop over them. The values are the compressions themselves, so they equal the ``jnp`` chain's
bit for bit.

The transcript's path on a CUDA device: :meth:`jaxstark.transcript.Transcript._chain` sends its
tag, absorb and squeeze compressions, and each grinding batch's, here through
:func:`jaxstark.kernels.switch`.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jaxtyping import Array, UInt8

from jaxstark.hash.encoding import bytes_to_words, words_to_bytes
from jaxstark.hash.interface import DIGEST_BYTES
from jaxstark.kernels import launch
from jaxstark.kernels import merkle as km

__all__ = ["LANES", "BLOCK_LANES", "chain"]

LANES = 16  # the fewest lanes a launch runs (a batch of one uses lane 0)
BLOCK_LANES = 128  # a larger batch (grinding's) runs as programs of this many lanes, one per thread
_W = km.WORDS


def _chain_kernel(state_ref, blocks_ref, o_ref, *, h, count: int):
    state = tuple(state_ref[w, :] for w in range(_W))

    def step(i, s):
        return tuple(h.compress(s, tuple(blocks_ref[i * _W + w, :] for w in range(_W))))

    state = step(0, state) if count == 1 else lax.fori_loop(0, count, step, state)
    for w in range(_W):
        o_ref[w, :] = state[w]


@functools.partial(jax.jit, static_argnames=("hash_name", "interpret"))
def chain(
    state: UInt8[Array, "*batch 32"], blocks: UInt8[Array, "count *batch 32"], *, hash_name: str,
    interpret: bool = False,
) -> UInt8[Array, "*batch 32"]:  # fmt: skip
    """Each lane's ``state`` compressed with its ``count`` blocks in order (``count >= 1``)."""
    count, batch = blocks.shape[0], blocks.shape[1:-1]
    if count < 1 or blocks.shape[-1] != DIGEST_BYTES or state.shape != (*batch, DIGEST_BYTES):
        raise ValueError(f"sponge.chain: expected state (*batch, 32) and blocks (count >= 1, *batch, 32), "
                         f"got {state.shape} and {blocks.shape}")  # fmt: skip
    k = math.prod(batch)
    lanes = max(LANES, 1 << (k - 1).bit_length())
    block = min(lanes, BLOCK_LANES)  # lanes per program
    rows = 1 << (count * _W - 1).bit_length()  # the blocks' rows, padded to a power of two

    def lanes_of(x, lead):  # (lead, k, 32) bytes -> (lead * 4, lanes) words, lane j = element j
        w = jnp.transpose(bytes_to_words(x, jnp.uint64), (0, 2, 1)).reshape(lead * _W, k)
        return jnp.pad(w, ((0, 0), (0, lanes - k)))

    s = lanes_of(state.reshape(1, k, DIGEST_BYTES), 1)
    b = jnp.pad(lanes_of(blocks.reshape(count, k, DIGEST_BYTES), count), ((0, rows - count * _W), (0, 0)))
    h = km._compiled_form(km.kernel_hash(hash_name), interpret, km.TILINGS.get(hash_name, km.Tiling()))
    out = pl.pallas_call(
        functools.partial(_chain_kernel, h=h, count=count),
        out_shape=jax.ShapeDtypeStruct((_W, lanes), jnp.uint64),
        grid=(lanes // block,),
        in_specs=[pl.BlockSpec((_W, block), lambda i: (0, i)), pl.BlockSpec((rows, block), lambda i: (0, i))],
        out_specs=pl.BlockSpec((_W, block), lambda i: (0, i)),
        name=f"sponge_{hash_name}",
        **launch(interpret, 1 if block < BLOCK_LANES else BLOCK_LANES // 32),
    )(s, b)
    return words_to_bytes(jnp.transpose(out[:, :k])).reshape(*batch, DIGEST_BYTES)
