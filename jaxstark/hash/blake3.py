"""BLAKE3 in JAX: the full hash (any length, multi-block chunks, BLAKE3's chunk tree), 32-byte
output, batched over messages of one static length.

Layout for speed: 32-bit words are kept with the *batch axes last* (``(16, *batch)`` for a
block), so every word is a contiguous vector over messages. The 4x4 state is an array
``(4, 4, *batch)`` (rows a, b, c, d); a round applies G to the four columns, then to the four
diagonals by rotating rows b, c, d. The seven rounds run in ``lax.fori_loop`` (unrolled rounds
make XLA's compile time explode), and blocks within a chunk in a second ``fori_loop``; all
chunks of all messages are compressed in parallel, then parents level by level, pairing
neighbours and carrying an odd last one up -- which builds exactly BLAKE3's left-complete tree.

:data:`NODE_KEY` and :data:`NODE_FLAGS` are the key and flags of the Merkle node compression
(BLAKE3's keyed-hash mode over one 64-byte block; :class:`jaxstark.hash.interface.Blake3Hash`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt8, UInt32

from jaxstark.hash.encoding import bytes_to_words, words_to_bytes, zero_past

__all__ = ["digest_words", "digest_bytes", "compress_block", "g", "IV", "KEYED_HASH", "NODE_KEY", "NODE_FLAGS"]

IV = np.array(
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19], np.uint32
)
MSG_PERMUTATION = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)
CHUNK_START, CHUNK_END, PARENT, ROOT, KEYED_HASH = 1, 2, 4, 8, 16
BLOCK_LEN, CHUNK_LEN = 64, 1024
ROUNDS = 7

# The Merkle node key: blake3(b"jaxstark merkle node").digest() as 8 little-endian words (held
# to the reference package by the tests). A node is the keyed hash of the 64 bytes left || right:
# one block compressed from this key instead of the IV, with the KEYED_HASH flag.
NODE_KEY = np.array(
    [0x970BBC99, 0x638B4CD6, 0xA1C66FED, 0xE919BBC7, 0xF0BA5E04, 0x075A1436, 0x5BC9D572, 0x1364B790], np.uint32
)
NODE_FLAGS = CHUNK_START | CHUNK_END | ROOT | KEYED_HASH


def _rotr(x: Array, n: int) -> Array:
    return (x >> np.uint32(n)) | (x << np.uint32(32 - n))


def g(a, b, c, d, mx, my):
    """BLAKE3's quarter-round G on four state words and two message words (any shapes that
    broadcast; shared with the element-wise kernel form in :mod:`jaxstark.kernels.blake3`)."""
    a = a + b + mx
    d = _rotr(d ^ a, 16)
    c = c + d
    b = _rotr(b ^ c, 12)
    a = a + b + my
    d = _rotr(d ^ a, 8)
    c = c + d
    b = _rotr(b ^ c, 7)
    return a, b, c, d


def _round(s: Array, m: Array) -> Array:
    a, b, c, d = g(s[0], s[1], s[2], s[3], m[0:8:2], m[1:8:2])  # columns
    b, c, d = jnp.roll(b, -1, 0), jnp.roll(c, -2, 0), jnp.roll(d, -3, 0)
    a, b, c, d = g(a, b, c, d, m[8:16:2], m[9:16:2])  # diagonals
    b, c, d = jnp.roll(b, 1, 0), jnp.roll(c, 2, 0), jnp.roll(d, 3, 0)
    return jnp.stack([a, b, c, d])


def compress_block(
    cv: UInt32[Array, " 8 *batch"],
    block: UInt32[Array, " 16 *batch"],
    counter: int | Array,
    block_len: int | Array,
    flags: int | Array,
) -> UInt32[Array, " 8 *batch"]:
    """BLAKE3's compression function, returning the 8-word chaining value (the first half of
    the output, which is also the digest of a root block). Scalars broadcast over the batch."""
    batch = jnp.broadcast_shapes(cv.shape[1:], block.shape[1:])
    cv = jnp.broadcast_to(cv, (8, *batch))
    counter = jnp.asarray(counter, jnp.uint64)
    words3 = [
        jnp.broadcast_to((counter & np.uint64(0xFFFFFFFF)).astype(jnp.uint32), batch),
        jnp.broadcast_to((counter >> np.uint64(32)).astype(jnp.uint32), batch),
        jnp.broadcast_to(jnp.asarray(block_len, jnp.uint32), batch),
        jnp.broadcast_to(jnp.asarray(flags, jnp.uint32), batch),
    ]
    iv = jnp.broadcast_to(jnp.asarray(IV[:4]).reshape(4, *((1,) * len(batch))), (4, *batch))
    state = jnp.concatenate([cv, iv, jnp.stack(words3)]).reshape(4, 4, *batch)
    perm = np.array(MSG_PERMUTATION)

    def body(_, carry):
        s, m = carry
        return _round(s, m), m[perm]

    state, _ = lax.fori_loop(0, ROUNDS, body, (state, jnp.broadcast_to(block, (16, *batch))))
    flat = state.reshape(16, *batch)
    return flat[:8] ^ flat[8:]


def _schedule(lengths: Array, n_chunks: int, blocks: int):
    """Per-(block, message, chunk) block lengths, flags and existence, from each message's
    byte length (traced, so messages of different lengths can share one batch)."""
    ln = lengths[..., None].astype(jnp.int64)  # (*batch, 1)
    k = jnp.arange(n_chunks, dtype=jnp.int64)
    chunk_len = jnp.clip(ln - CHUNK_LEN * k, 0, CHUNK_LEN)  # (*batch, n_chunks)
    msg_chunks = jnp.maximum(1, (ln + CHUNK_LEN - 1) // CHUNK_LEN)
    chunk_blocks = jnp.maximum(1, (chunk_len + BLOCK_LEN - 1) // BLOCK_LEN)
    j = jnp.arange(blocks, dtype=jnp.int64).reshape(blocks, *((1,) * chunk_len.ndim))
    valid = (k < msg_chunks) & (j < chunk_blocks)
    block_len = jnp.clip(chunk_len - BLOCK_LEN * j, 0, BLOCK_LEN).astype(jnp.uint32)
    last = j == chunk_blocks - 1
    flags = (
        jnp.where(j == 0, CHUNK_START, 0) | jnp.where(last, CHUNK_END, 0) | jnp.where(last & (msg_chunks == 1), ROOT, 0)
    ).astype(jnp.uint32)
    return block_len, flags, valid, msg_chunks[..., 0]


def digest_words(
    words: UInt32[Array, "*batch nwords"], nbytes: int, lengths: Array | None = None
) -> UInt32[Array, "*batch 8"]:
    """BLAKE3 of messages given as little-endian 32-bit words, zero beyond each message's end.

    ``nbytes`` (static) is the longest message length; ``lengths`` (optional, traced, one per
    message) the true lengths when they differ. Returns the 32-byte digests as 8 words.
    """
    batch = words.shape[:-1]
    nb = len(batch)
    n_chunks = max(1, -(-nbytes // CHUNK_LEN))
    blocks = max(1, -(-min(nbytes, CHUNK_LEN) // BLOCK_LEN))
    if lengths is None:
        lengths = jnp.full(batch, nbytes, jnp.int64)
    block_len, flags, valid, msg_chunks = _schedule(jnp.asarray(lengths), n_chunks, blocks)
    need = n_chunks * blocks * 16
    have = words.shape[-1]
    if have < need:
        words = jnp.concatenate([words, jnp.zeros((*batch, need - have), jnp.uint32)], axis=-1)
    words = words[..., :need].reshape(*batch, n_chunks, blocks, 16)
    # -> (blocks, 16, *batch, n_chunks): block index first (loop), words next, lanes last
    words = jnp.transpose(words, (nb + 1, nb + 2, *range(nb), nb))
    counters = jnp.arange(n_chunks, dtype=jnp.uint64)
    iv = jnp.asarray(IV).reshape(8, *((1,) * (nb + 1)))

    def body(j, cv):
        new = compress_block(cv, words[j], counters, block_len[j], flags[j])
        return jnp.where(valid[j], new, cv)

    cvs = lax.fori_loop(0, blocks, body, jnp.broadcast_to(iv, (8, *batch, n_chunks)))
    count = msg_chunks[..., None]  # chaining values still live per message, (*batch, 1)
    while cvs.shape[-1] > 1:
        pairs = cvs.shape[-1] // 2
        left, right = cvs[..., 0 : 2 * pairs : 2], cvs[..., 1 : 2 * pairs : 2]
        flag = jnp.where(count == 2, PARENT | ROOT, PARENT).astype(jnp.uint32)
        parents = compress_block(iv, jnp.concatenate([left, right], axis=0), 0, BLOCK_LEN, flag)
        has_pair = 2 * jnp.arange(pairs) + 1 < count
        cvs = jnp.concatenate([jnp.where(has_pair, parents, left), cvs[..., 2 * pairs :]], axis=-1)
        count = (count + 1) // 2
    return jnp.moveaxis(cvs[..., 0], 0, -1)


@jax.jit
def digest_bytes(msgs: UInt8[Array, " batch length"], lengths: Array | None = None) -> UInt8[Array, " batch 32"]:
    """BLAKE3-256 of every row of a ``uint8[batch, length]`` array; with ``lengths``, row ``i``
    is the message ``msgs[i, :lengths[i]]`` (bytes past it are ignored)."""
    msgs = zero_past(msgs, lengths)
    return words_to_bytes(digest_words(bytes_to_words(msgs), msgs.shape[-1], lengths))
