"""Keccak-256 leaf hash and node compression written element-wise, for Pallas Merkle kernels.

The same digests as :class:`jaxstark.hash.interface.Keccak256Hash` (``hash_rows``, and
``compress``, the hash of ``left || right || 0x01``), bit for bit, but computed on 25 separate
``uint64`` lane vectors instead of one stacked ``(25, *batch)`` state: no gathers, stacks or
reshapes, only ``+``, shifts, bitwise ops, ``jnp.where``, casts and ``lax.fori_loop``. That is
the subset a Pallas kernel (Triton backend) lowers, and the same code also runs as plain
``jnp`` (the way the tests check it).

Every vector has one common shape ``S`` -- one lane per independent message. A digest is four
``uint64`` words, word ``i`` holding digest bytes ``8i .. 8i+7`` little-endian, which for
Keccak-256 is exactly state lane ``i``.

Two details keep the code lowerable by Pallas' Triton backend:

* no ``uint64`` literal is ever ``>= 2^63`` (it crashes that lowering with ``std::bad_cast``):
  flipping bit 63 is written as two additions of ``2^62``, and the round constants that have bit
  63 set are either rebuilt from the round index at run time or applied that way;
* the round constant of a looped round is computed from the traced round index with shifts and
  masks (each constant has at most seven set bits, at positions ``2^j - 1``) rather than read
  from a table, which would be a gather.

The rounds of one permutation run in a ``lax.fori_loop`` by default, the 25 lanes of a round
unrolled: the form to run through XLA (plain ``jnp``, Pallas' interpreter), which compiles in
well under a second on a CPU. ``KeccakKernelHash(unroll=True)`` -- ``dataclasses.replace(KECCAK,
unroll=True)``, the compiled-kernel form -- unrolls the rounds too, with static round constants
(no constant arithmetic, no loop; about six times the XLA compile time, so for kernels only).

Row leaves absorb their 17-lane blocks in one ``fori_loop``, so a wide row costs one traced
block body (one permutation in the program), not one per block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.hash import keccak as _k
from jaxstark.hash.interface import KECCAK_NODE_TAG

__all__ = ["KeccakKernelHash", "KECCAK", "permute"]

Vec = UInt64[Array, "*lanes"]
Digest = tuple[Vec, Vec, Vec, Vec]

RATE_LANES = _k.RATE_LANES
ROUNDS = _k.ROUNDS
STATE_LANES = 25

_TOP = 1 << 63
_HALF_TOP = np.uint64(1 << 62)
# Lane 8 of a node's block: the tag byte after left || right (byte 64), then the first padding
# byte 0x01 (byte 65).
_NODE_LANE = KECCAK_NODE_TAG | (0x01 << 8)
_ROUND_CONSTANTS = tuple(int(c) for c in _k.ROUND_CONSTANTS)

# rho-pi and chi as static lane numbers (lane x + 5y), shared with the jnp permutation.
_SRC = tuple(int(s) for s in _k._SRC)
_ROT = tuple(int(r) for r in _k._ROT)
_NEXT1 = tuple(int(n) for n in _k._NEXT1)
_NEXT2 = tuple(int(n) for n in _k._NEXT2)

# Every Keccak round constant has its set bits among positions 2^j - 1 (j = 0..6); mask j holds
# bit j of every round's constant at bit position "round".
_RC_POSITIONS = tuple((1 << j) - 1 for j in range(7))
_RC_MASKS = tuple(sum(((c >> pos) & 1) << r for r, c in enumerate(_ROUND_CONSTANTS)) for pos in _RC_POSITIONS)
if any(
    c != sum(((m >> r) & 1) << pos for pos, m in zip(_RC_POSITIONS, _RC_MASKS, strict=True))
    for r, c in enumerate(_ROUND_CONSTANTS)
):
    raise AssertionError("a Keccak round constant has a bit outside positions 2^j - 1")


def _flip_top(v: Vec) -> Vec:
    """``v ^ 2^63``, written as two additions of ``2^62`` (adding ``2^63`` modulo ``2^64``
    flips bit 63) so that no ``uint64`` literal ``>= 2^63`` appears."""
    return v + _HALF_TOP + _HALF_TOP


def _xor_const(v: Vec, c: int) -> Vec:
    """``v ^ c`` for a static 64-bit ``c``, without a ``uint64`` literal ``>= 2^63``."""
    low = c & (_TOP - 1)
    if low:
        v = v ^ np.uint64(low)
    return _flip_top(v) if c & _TOP else v


def _round_constant(i: Array) -> Array:
    """The round constant of round ``i`` (a traced integer scalar), rebuilt from seven masks."""
    i = jnp.asarray(i).astype(jnp.uint32)
    rc = None
    for pos, mask in zip(_RC_POSITIONS, _RC_MASKS, strict=True):
        bit = (jnp.right_shift(np.uint32(mask), i) & np.uint32(1)).astype(jnp.uint64)
        term = bit << np.uint64(pos) if pos else bit
        rc = term if rc is None else rc | term
    return rc


def _rotl(v: Vec, r: int) -> Vec:
    """Rotate left by a static amount."""
    r %= 64
    if r == 0:
        return v
    return (v << np.uint64(r)) | (v >> np.uint64(64 - r))


def _round_without_iota(a: list[Vec]) -> list[Vec]:
    """theta, rho, pi and chi of one Keccak-f[1600] round (iota is applied by the caller)."""
    c = [a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] for x in range(5)]
    d = [c[(x - 1) % 5] ^ _rotl(c[(x + 1) % 5], 1) for x in range(5)]
    b = [_rotl(a[src] ^ d[src % 5], rot) for src, rot in zip(_SRC, _ROT, strict=True)]
    # chi: b ^ (~b1 & b2) == b ^ b2 ^ (b1 & b2); written without ``~`` because Triton lowers a
    # uint64 NOT as an XOR with the all-ones literal, which is >= 2^63.
    return [b[i] ^ b[n2] ^ (b[n1] & b[n2]) for i, n1, n2 in zip(range(STATE_LANES), _NEXT1, _NEXT2, strict=True)]


def permute(state: tuple[Vec, ...] | list[Vec], unroll: bool = False) -> tuple[Vec, ...]:
    """Keccak-f[1600] on 25 lane vectors (lane ``x + 5y``), element-wise.

    ``unroll=False``: the 24 rounds in a ``lax.fori_loop``, round constants from the loop index;
    ``unroll=True``: the rounds unrolled in Python with static constants (kernels only -- plain
    XLA compiles unrolled hash rounds very slowly)."""
    if len(state) != STATE_LANES:
        raise ValueError(f"keccak permute: expected {STATE_LANES} lane vectors, got {len(state)}")
    if unroll:
        a = list(state)
        for rc in _ROUND_CONSTANTS:
            a = _round_without_iota(a)
            a[0] = _xor_const(a[0], rc)
        return tuple(a)

    def body(i, a):
        a = _round_without_iota(list(a))
        a[0] = a[0] ^ _round_constant(i)
        return tuple(a)

    return lax.fori_loop(0, ROUNDS, body, tuple(state))


@dataclasses.dataclass(frozen=True)
class KeccakKernelHash:
    """Keccak-256 Merkle leaf and node hashing on lane vectors (see the module docstring).

    ``leaf(load, width)`` hashes the ``8 * width`` bytes of a row of ``width`` canonical field
    elements; ``compress(left, right)`` hashes the 65 bytes ``left || right || 0x01`` (the tag
    byte separates nodes from leaves, which are ``8 * width`` bytes). Frozen and hashable, so an
    instance can be a static argument."""

    unroll: bool = False
    name: ClassVar[str] = "keccak256"

    def _permute(self, state):
        return permute(state, self.unroll)

    def leaf(self, load: Callable[[int | Array], Vec], width: int) -> Digest:
        """Digest of each lane's row; ``load(j)`` gives column ``j`` (``j`` a Python int or a
        traced int32 scalar, always ``< width``).

        The message is the row's ``width`` lanes, then ``0x01``, zeros, and ``0x80`` in the last
        byte of its last 17-lane block. All blocks run in one ``fori_loop`` (one permutation in
        the program whatever the width): in a block lane ``j`` of the message reads column ``j``
        when ``j < width`` (a clamped index otherwise, replaced by the padding)."""
        width = int(width)
        if width < 1:
            raise ValueError(f"keccak leaf: width must be >= 1, got {width}")
        zero = jnp.zeros_like(load(0))
        blocks = width // RATE_LANES + 1
        last = blocks - 1

        def message_lane(j):
            if isinstance(j, int):
                return load(j) if j < width else zero + np.uint64(j == width)
            pad = (j == width).astype(jnp.uint64)
            return jnp.where(j < width, load(jnp.minimum(j, width - 1)), pad)

        def absorb(block, state):
            if not isinstance(block, int):
                block = block.astype(jnp.int32)  # so that load() gets int32 column indices
            lanes = list(state)
            for k in range(RATE_LANES):
                lanes[k] = lanes[k] ^ message_lane(block * RATE_LANES + k)
            if isinstance(block, int):
                if block == last:
                    lanes[RATE_LANES - 1] = _flip_top(lanes[RATE_LANES - 1])
            else:
                lanes[RATE_LANES - 1] = lanes[RATE_LANES - 1] ^ ((block == last).astype(jnp.uint64) << np.uint64(63))
            return self._permute(lanes)

        state = (zero,) * STATE_LANES
        state = absorb(0, state) if blocks == 1 else lax.fori_loop(0, blocks, absorb, state)
        return state[0], state[1], state[2], state[3]

    def compress(self, left: Digest, right: Digest) -> Digest:
        """Keccak-256 of the 65 bytes ``left || right || 0x01``: one padded block, lane 8 holding
        the node tag (byte 64) and the first padding byte ``0x01`` (byte 65)."""
        if len(left) != 4 or len(right) != 4:
            raise ValueError("keccak compress: a digest is four uint64 word vectors")
        zero = jnp.zeros_like(left[0])
        lanes = [*left, *right] + [zero] * (STATE_LANES - 8)
        lanes[8] = zero + np.uint64(_NODE_LANE)
        lanes[RATE_LANES - 1] = _flip_top(zero)
        out = self._permute(lanes)
        return out[0], out[1], out[2], out[3]


KECCAK = KeccakKernelHash()
