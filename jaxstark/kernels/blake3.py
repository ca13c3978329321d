"""BLAKE3 leaf hash and node compression written element-wise, for Pallas Merkle kernels.

The same digests as :class:`jaxstark.hash.interface.Blake3Hash` (``hash_rows``, the plain
hash of a row, and ``compress``, the keyed hash of a node), bit for bit, but computed on
separate lane vectors instead of the stacked ``(4, 4, *batch)`` state of
:mod:`jaxstark.hash.blake3`: the 16 state words and 16 message words are tuples of ``uint32``
vectors, a round is eight calls of the shared G function on named words, and the message
permutation is a reordering of the tuple. Only ``+``, shifts, bitwise
ops, ``jnp.where``, casts and ``lax.fori_loop`` appear -- the subset a Pallas kernel (Triton
backend) lowers -- and the same code runs as plain ``jnp`` (the way the tests check it).

Every vector has one common shape ``S``, one lane per independent message. At the interface a
digest is four ``uint64`` words, word ``i`` holding digest bytes ``8i .. 8i+7`` little-endian
(BLAKE3's output words ``2i`` and ``2i+1``); inside, the hash works on ``uint32`` words, the
width of BLAKE3's arithmetic.

A row of ``width`` field elements is ``8 * width`` bytes: block ``t`` of the message is exactly
columns ``8t .. 8t+7`` (a 1024-byte chunk is 128 columns), so one ``lax.fori_loop`` walks every
block of every chunk with traced column indices, flags, block length and chunk counter, and a
wide row costs one traced compression, not one per block. Rows longer than a chunk keep each
finished chunk's chaining value in a per-chunk slot (a ``where`` on the loop index) and join
them after the loop with BLAKE3's left-complete parent tree -- ``chunks - 1`` parent
compressions, unrolled, since a tree of a handful of chunks has a static shape.

``unroll=False`` (default) runs the seven rounds of a compression in a ``lax.fori_loop`` (plain
XLA compiles unrolled hash rounds very slowly); ``unroll=True`` unrolls them, for use inside a
kernel, where the Triton compiler schedules the straight-line code well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import ClassVar

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt32, UInt64

from jaxstark.hash import blake3 as _b

__all__ = ["Blake3KernelHash", "BLAKE3", "compress_words"]

Vec = UInt64[Array, "*lanes"]
Word = UInt32[Array, "*lanes"]
Digest = tuple[Vec, Vec, Vec, Vec]

_MASK32 = np.uint64(0xFFFFFFFF)
_COLUMNS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
_DIAGONALS = ((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))
_COLS_PER_BLOCK = _b.BLOCK_LEN // 8  # field elements (uint64 columns) per 64-byte block
_BLOCKS_PER_CHUNK = _b.CHUNK_LEN // _b.BLOCK_LEN
_CHUNK_SHIFT = _BLOCKS_PER_CHUNK.bit_length() - 1


def _split(v: Vec) -> tuple[Word, Word]:
    """The little-endian ``uint32`` halves (low, high) of a ``uint64`` vector."""
    return (v & _MASK32).astype(jnp.uint32), (v >> np.uint64(32)).astype(jnp.uint32)


def _join(lo: Word, hi: Word) -> Vec:
    return lo.astype(jnp.uint64) | (hi.astype(jnp.uint64) << np.uint64(32))


def _round(s: Sequence[Word], m: Sequence[Word]) -> list[Word]:
    """One BLAKE3 round on the 16 state words: G on the four columns, then the four diagonals."""
    s = list(s)
    for i, (a, b, c, d) in enumerate(_COLUMNS):
        s[a], s[b], s[c], s[d] = _b.g(s[a], s[b], s[c], s[d], m[2 * i], m[2 * i + 1])
    for i, (a, b, c, d) in enumerate(_DIAGONALS):
        s[a], s[b], s[c], s[d] = _b.g(s[a], s[b], s[c], s[d], m[8 + 2 * i], m[9 + 2 * i])
    return s


def _permute(m: Sequence[Word]) -> tuple[Word, ...]:
    return tuple(m[p] for p in _b.MSG_PERMUTATION)


def compress_words(
    cv: Sequence[Word],
    m: Sequence[Word],
    counter: Word | int,
    block_len: Word | int,
    flags: Word | int,
    unroll: bool = False,
) -> tuple[Word, ...]:
    """BLAKE3's compression on tuples of ``uint32`` vectors: the 8-word chaining value after
    absorbing the 16-word block ``m``. ``counter`` (< 2^32 here), ``block_len`` and ``flags``
    are shared by all lanes (Python ints) or given per lane (``uint32`` vectors)."""
    if len(cv) != 8 or len(m) != 16:
        raise ValueError("blake3 compress: a chaining value is 8 words and a block 16 words")
    shape = jnp.shape(m[0])
    lane = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.uint32), shape)  # noqa: E731
    state = (
        *(lane(w) for w in cv),
        *(lane(w) for w in _b.IV[:4]),
        lane(counter),
        lane(0),
        lane(block_len),
        lane(flags),
    )
    m = tuple(m)
    if unroll:
        for _ in range(_b.ROUNDS):
            state, m = _round(state, m), _permute(m)
    else:
        state, _ = lax.fori_loop(0, _b.ROUNDS, lambda _, c: (tuple(_round(*c)), _permute(c[1])), (state, m))
    return tuple(state[i] ^ state[i + 8] for i in range(8))


def _block_words(left: Sequence[Vec]) -> tuple[Word, ...]:
    """Message words of eight ``uint64`` columns (low half first, as the bytes lie)."""
    return tuple(w for v in left for w in _split(v))


def _digest(cv: Sequence[Word]) -> Digest:
    return tuple(_join(cv[2 * i], cv[2 * i + 1]) for i in range(4))


@dataclasses.dataclass(frozen=True)
class Blake3KernelHash:
    """BLAKE3-256 on lanes of ``uint64`` vectors, for Merkle kernels.

    ``leaf(load, width)`` is BLAKE3 of each lane's row of ``width`` field elements (the row's
    ``8 * width`` little-endian bytes; ``load(j)`` gives column ``j``, ``j`` a Python int or a
    traced int32 scalar); ``compress(left, right)`` is the keyed BLAKE3 (key
    :data:`~jaxstark.hash.blake3.NODE_KEY`) of the 64 bytes ``left || right``, so a node never
    equals a leaf. Frozen and hashable, so an instance can be a static argument."""

    unroll: bool = False
    name: ClassVar[str] = "blake3"

    def _compress(self, cv, m, counter, block_len, flags):
        return compress_words(cv, m, counter, block_len, flags, self.unroll)

    def leaf(self, load: Callable[[int | Array], Vec], width: int) -> Digest:
        """Digest of each lane's row. One ``fori_loop`` over all blocks of all chunks; columns
        past ``width`` (the tail of the last block) read as zero."""
        width = int(width)
        if width < 1:
            raise ValueError(f"blake3 leaf: width must be >= 1, got {width}")
        nbytes = 8 * width
        chunks = -(-nbytes // _b.CHUNK_LEN)
        blocks = _BLOCKS_PER_CHUNK * (chunks - 1) + -(-(nbytes - _b.CHUNK_LEN * (chunks - 1)) // _b.BLOCK_LEN)
        last_len = nbytes - _b.BLOCK_LEN * (blocks - 1)
        ragged = width % _COLS_PER_BLOCK != 0
        zero = jnp.zeros_like(load(0))
        lanes = zero.shape
        iv = tuple(jnp.zeros(lanes, jnp.uint32) + w for w in _b.IV)
        # Every per-block quantity (flags, length, counter, the chunk-start and chunk-end
        # predicates) is made a uint32 / bool vector of the lane shape before it meets a lane
        # vector: a compiled Triton kernel computed wrong digests with them as traced scalars
        # (the interpreter did not), while the same compression fed vectors is exact.
        vec = lambda x: jnp.broadcast_to(x, lanes)  # noqa: E731
        u32 = np.uint32

        def column(j):
            if not ragged:
                return load(j)
            return jnp.where(vec(j < width), load(jnp.minimum(j, width - 1)), zero)

        def body(t, carry):
            cv, slots = carry
            within = t & (_BLOCKS_PER_CHUNK - 1)
            chunk = t >> _CHUNK_SHIFT
            start = vec(within == 0)
            end = vec((within == _BLOCKS_PER_CHUNK - 1) | (t == blocks - 1))
            flags = jnp.where(start, u32(_b.CHUNK_START), u32(0)) | jnp.where(end, u32(_b.CHUNK_END), u32(0))
            if chunks == 1:
                flags = flags | jnp.where(end, u32(_b.ROOT), u32(0))
            block_len = jnp.where(vec(t == blocks - 1), u32(last_len), u32(_b.BLOCK_LEN))
            counter = vec(jnp.asarray(chunk).astype(jnp.uint32))
            base = _COLS_PER_BLOCK * t
            m = _block_words([column(base + i) for i in range(_COLS_PER_BLOCK)])
            cv_in = tuple(jnp.where(start, a, b) for a, b in zip(iv, cv, strict=True))
            cv = self._compress(cv_in, m, counter, block_len, flags)
            slots = tuple(
                tuple(jnp.where(end & vec(chunk == k), a, b) for a, b in zip(cv, slot, strict=True))
                for k, slot in enumerate(slots)
            )
            return cv, slots

        carry = (iv, (iv,) * (chunks - 1))
        if blocks == 1:
            cv, slots = body(jnp.int32(0), carry)
        else:
            cv, slots = lax.fori_loop(np.int32(0), np.int32(blocks), body, carry)
        return _digest(self._parents([*slots, cv], iv, root=True))

    def _parents(self, cvs: list, iv: tuple, root: bool) -> tuple[Word, ...]:
        """BLAKE3's left-complete tree over chunk chaining values: the left subtree holds the
        largest power of two of chunks below their count."""
        if len(cvs) == 1:
            return cvs[0]
        split = 1 << ((len(cvs) - 1).bit_length() - 1)
        left = self._parents(cvs[:split], iv, root=False)
        right = self._parents(cvs[split:], iv, root=False)
        flags = _b.PARENT | (_b.ROOT if root else 0)
        return self._compress(iv, (*left, *right), 0, _b.BLOCK_LEN, flags)

    def compress(self, left: Digest, right: Digest) -> Digest:
        """Keyed BLAKE3 of the 64 bytes ``left || right`` under :data:`~jaxstark.hash.blake3.NODE_KEY`:
        one root block compressed from the key words (not the IV) with the ``KEYED_HASH`` flag."""
        if len(left) != 4 or len(right) != 4:
            raise ValueError("blake3 compress: a digest is four uint64 vectors")
        return _digest(self._compress(_b.NODE_KEY, _block_words((*left, *right)), 0, _b.BLOCK_LEN, _b.NODE_FLAGS))


BLAKE3 = Blake3KernelHash()
