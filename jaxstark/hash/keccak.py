"""Keccak-256 in JAX (the original Keccak padding ``0x01 ... 0x80``, as Ethereum uses; not
SHA3-256, whose padding byte is ``0x06``), batched over messages.

The state is 25 ``uint64`` lanes with the batch axes last, ``(25, *batch)``, lane ``x + 5y``.
The 24 rounds of Keccak-f[1600] run in a ``lax.fori_loop`` (round constant indexed by the loop
counter); rho and pi are one static gather plus per-lane rotations. Messages are absorbed block
by block (rate 136 bytes = 17 lanes) in a second ``fori_loop``; messages of different lengths
can share a batch (``lengths``), each skipping the blocks past its own padding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt8, UInt64

from jaxstark.hash.encoding import bytes_to_words, words_to_bytes, zero_past

__all__ = ["permute", "digest_lanes", "digest_bytes", "RATE_BYTES"]

RATE_BYTES = 136
RATE_LANES = RATE_BYTES // 8
ROUNDS = 24

ROUND_CONSTANTS = np.array(
    [
        0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
        0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
        0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
        0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
        0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
        0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
    ],
    dtype=np.uint64,
)  # fmt: skip

# rotation offsets r[x][y]
_RHO = (
    (0, 36, 3, 41, 18),
    (1, 44, 10, 45, 2),
    (62, 6, 43, 15, 61),
    (28, 55, 25, 21, 56),
    (27, 20, 39, 8, 14),
)


def _rho_pi_tables() -> tuple[np.ndarray, np.ndarray]:
    """B[y, 2x + 3y] = rot(A[x, y], r[x][y]): for each destination lane, its source lane and
    rotation."""
    src = np.zeros(25, np.int32)
    rot = np.zeros(25, np.uint64)
    for x in range(5):
        for y in range(5):
            dst = y + 5 * ((2 * x + 3 * y) % 5)
            src[dst] = x + 5 * y
            rot[dst] = _RHO[x][y]
    return src, rot


_SRC, _ROT = _rho_pi_tables()
_X = np.arange(25) % 5
_Y5 = (np.arange(25) // 5) * 5
_NEXT1 = (_X + 1) % 5 + _Y5  # lane (x+1, y)
_NEXT2 = (_X + 2) % 5 + _Y5  # lane (x+2, y)


def _rotl(v: Array, r: Array) -> Array:
    return jnp.where(r == 0, v, (v << r) | (v >> (np.uint64(64) - r)))


def permute(state: UInt64[Array, " 25 *batch"]) -> UInt64[Array, " 25 *batch"]:
    """Keccak-f[1600] on lanes-first states."""
    extra = (1,) * (state.ndim - 1)
    rot = jnp.asarray(_ROT).reshape(25, *extra)
    rc = jnp.asarray(ROUND_CONSTANTS)
    x_of = _X

    def body(i, a):
        c = a.reshape(5, 5, *a.shape[1:])  # [y, x]
        col = c[0] ^ c[1] ^ c[2] ^ c[3] ^ c[4]  # C[x]
        d = jnp.roll(col, 1, 0) ^ _rotl(jnp.roll(col, -1, 0), jnp.asarray(np.uint64(1)))  # D[x]
        a = a ^ d[x_of]
        b = _rotl(a[_SRC], rot)
        a = b ^ (~b[_NEXT1] & b[_NEXT2])
        return a.at[0].set(a[0] ^ rc[i])

    return lax.fori_loop(0, ROUNDS, body, state)


def digest_lanes(
    lanes: UInt64[Array, " *batch n"], nbytes: int, lengths: Array | None = None
) -> UInt64[Array, " *batch 4"]:
    """Keccak-256 of messages given as little-endian 64-bit lanes, zero beyond each message's
    end. ``nbytes`` (static) is the longest length, ``lengths`` (optional, traced) the true ones."""
    batch = lanes.shape[:-1]
    nb = len(batch)
    blocks = nbytes // RATE_BYTES + 1
    width = blocks * RATE_LANES
    have = lanes.shape[-1]
    if have < width:
        lanes = jnp.concatenate([lanes, jnp.zeros((*batch, width - have), jnp.uint64)], axis=-1)
    lanes = lanes[..., :width]
    ln = jnp.full(batch, nbytes, jnp.int64) if lengths is None else jnp.asarray(lengths).astype(jnp.int64)
    ln = ln[..., None]
    idx = jnp.arange(width, dtype=jnp.int64)
    msg_blocks = ln // RATE_BYTES + 1
    first_pad = jnp.where(idx == ln // 8, jnp.uint64(1) << ((ln % 8) * 8).astype(jnp.uint64), np.uint64(0))
    last_pad = jnp.where(idx == msg_blocks * RATE_LANES - 1, np.uint64(0x80 << 56), np.uint64(0))
    lanes = lanes ^ first_pad ^ last_pad
    lanes = jnp.moveaxis(lanes.reshape(*batch, blocks, RATE_LANES), (nb, nb + 1), (0, 1))  # (blocks, 17, *batch)
    live = jnp.arange(blocks) < msg_blocks[..., 0, None]  # (*batch, blocks)
    live = jnp.moveaxis(live, -1, 0)

    def body(j, state):
        absorbed = state.at[:RATE_LANES].set(state[:RATE_LANES] ^ lanes[j])
        return jnp.where(live[j], permute(absorbed), state)

    state = lax.fori_loop(0, blocks, body, jnp.zeros((25, *batch), jnp.uint64))
    return jnp.moveaxis(state[:4], 0, -1)


@jax.jit
def digest_bytes(msgs: UInt8[Array, " batch length"], lengths: Array | None = None) -> UInt8[Array, " batch 32"]:
    """Keccak-256 of every row of a ``uint8[batch, length]`` array; with ``lengths``, row ``i``
    is the message ``msgs[i, :lengths[i]]``."""
    msgs = zero_past(msgs, lengths)
    return words_to_bytes(digest_lanes(bytes_to_words(msgs, jnp.uint64), msgs.shape[-1], lengths))
