"""The hash interface every commitment uses, and its three implementations.

A :class:`Hash` supplies exactly three traceable functions, all with 32-byte digests as
``uint8[..., 32]``:

* ``digest_bytes(msgs, lengths=None)`` -- the hash of byte messages ``uint8[batch, length]``
  (optionally of different lengths ``lengths[i] <= length``);
* ``hash_rows(rows)`` -- the leaf hash of field-element rows ``uint64[batch, width]``;
* ``compress(left, right)`` -- the 2-to-1 node compression (also the transcript's duplex
  step, :mod:`jaxstark.transcript`).

**Row serialisation** (leaves): a row is its elements in column order, each as the 8
little-endian bytes of its canonical value; an extension column contributes its three
coordinates in order. For BLAKE3 and Keccak-256 the leaf digest is the plain hash of those
``8 * width`` bytes. Poseidon2 absorbs the elements directly (see :class:`Poseidon2Hash`).

**Nodes** (``compress``) are domain-separated from leaves:

* BLAKE3: the keyed hash of the 64 bytes ``left || right`` under the fixed key
  ``NODE_KEY = blake3(b"jaxstark merkle node")`` (:data:`jaxstark.hash.blake3.NODE_KEY`);
* Keccak-256: the hash of the 65 bytes ``left || right || 0x01``;
* Poseidon2: ``permute(left || right || (0, 2, 0, 0))[0:4]`` -- capacity word ``state[9] = 2``,
  where the sponge has 0 (rows) or 1 (byte messages).

Why: with the plain hash for both, a row of 8 field elements (64 bytes) would hash exactly like
a node over two digests, so an internal node could be opened as if it were a leaf (or a leaf
extended into a subtree) and an authentication path shortened or lengthened. Separated, a leaf
digest and a node digest come from different functions (another key and flags, another
length, another capacity), so a leaf can never be mistaken for a node. Each digest keeps a
public reference: ``blake3.blake3(left + right, key=NODE_KEY)``, Keccak-256 of the 65 bytes,
the Poseidon2 permutation of that state.

Hashes are stateless singletons, looked up by name (:func:`get_hash`), so they can be static
arguments of ``jit``.
"""

from __future__ import annotations

import abc

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt8, UInt64

from jaxstark.field import goldilocks as gl
from jaxstark.hash import blake3, keccak, poseidon2
from jaxstark.hash.encoding import bytes_to_words, words_to_bytes

__all__ = ["Hash", "Blake3Hash", "Keccak256Hash", "Poseidon2Hash", "HASHES", "get_hash", "DIGEST_BYTES"]

DIGEST_BYTES = 32
KECCAK_NODE_TAG = 0x01  # the byte after left || right in a Keccak-256 node
POSEIDON2_NODE_KIND = 2  # state[9] of a Poseidon2 node (the sponge: 0 for rows, 1 for bytes)
POSEIDON2_NODE_CAPACITY = np.array([0, POSEIDON2_NODE_KIND, 0, 0], np.uint64)  # state[8:12] of a node


class Hash(abc.ABC):
    """A 32-byte hash for Merkle trees and the transcript.

    Subclasses implement ``_digest_bytes``, ``_hash_rows`` and ``_compress``; the public methods
    are their jitted versions (compiled once per shape, also when called eagerly)."""

    name: str

    def __init__(self) -> None:
        self._jit = {
            "digest_bytes": jax.jit(self._digest_bytes),
            "hash_rows": jax.jit(self._hash_rows),
            "compress": jax.jit(self._compress),
        }

    def digest_bytes(self, msgs, lengths=None):
        """Hash of each byte message (``lengths[i]`` bytes of row i when given)."""
        return self._jit["digest_bytes"](msgs, lengths)

    def hash_rows(self, rows):
        """Leaf hash of each row of canonical field elements."""
        return self._jit["hash_rows"](rows)

    def compress(self, left, right):
        """2-to-1 compression of two digests."""
        return self._jit["compress"](left, right)

    @abc.abstractmethod
    def _digest_bytes(
        self, msgs: UInt8[Array, " batch length"], lengths: Array | None = None
    ) -> UInt8[Array, " batch 32"]:
        """Hash of each byte message."""

    @abc.abstractmethod
    def _hash_rows(self, rows: UInt64[Array, " batch width"]) -> UInt8[Array, " batch 32"]:
        """Leaf hash of each row of canonical field elements."""

    @abc.abstractmethod
    def _compress(
        self, left: UInt8[Array, " *batch 32"], right: UInt8[Array, " *batch 32"]
    ) -> UInt8[Array, " *batch 32"]:
        """2-to-1 compression of two digests."""

    def __repr__(self) -> str:
        return f"<hash {self.name}>"

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hash) and other.name == self.name


def _rows_as_u32(rows: Array) -> Array:
    """(batch, w) uint64 -> (batch, 2w) uint32 little-endian words (lo, hi per element)."""
    lo = (rows & np.uint64(0xFFFFFFFF)).astype(jnp.uint32)
    hi = (rows >> np.uint64(32)).astype(jnp.uint32)
    return jnp.stack([lo, hi], axis=-1).reshape(*rows.shape[:-1], -1)


class Blake3Hash(Hash):
    """BLAKE3-256 (default for commitments)."""

    name = "blake3"

    def _digest_bytes(self, msgs, lengths=None):
        return blake3.digest_bytes(msgs, lengths)

    def _hash_rows(self, rows):
        return words_to_bytes(blake3.digest_words(_rows_as_u32(rows), 8 * rows.shape[-1]))

    def _compress(self, left, right):
        """Keyed BLAKE3 of ``left || right`` (key :data:`~jaxstark.hash.blake3.NODE_KEY`): one
        root block compressed from the key words instead of the IV, flag ``KEYED_HASH`` set."""
        batch = left.shape[:-1]
        block = bytes_to_words(jnp.concatenate([left, right], axis=-1))  # (*batch, 16)
        block = jnp.moveaxis(block, -1, 0)
        key = jnp.asarray(blake3.NODE_KEY).reshape(8, *((1,) * len(batch)))
        cv = blake3.compress_block(key, block, 0, blake3.BLOCK_LEN, blake3.NODE_FLAGS)
        return words_to_bytes(jnp.moveaxis(cv, 0, -1))


class Keccak256Hash(Hash):
    """Keccak-256 with the original padding (Ethereum's)."""

    name = "keccak256"

    def _digest_bytes(self, msgs, lengths=None):
        return keccak.digest_bytes(msgs, lengths)

    def _hash_rows(self, rows):
        return words_to_bytes(keccak.digest_lanes(rows, 8 * rows.shape[-1]))

    def _compress(self, left, right):
        """Keccak-256 of the 65 bytes ``left || right || KECCAK_NODE_TAG`` (still one block)."""
        lanes = bytes_to_words(jnp.concatenate([left, right], axis=-1), jnp.uint64)
        tag = jnp.full((*lanes.shape[:-1], 1), KECCAK_NODE_TAG, jnp.uint64)
        return words_to_bytes(keccak.digest_lanes(jnp.concatenate([lanes, tag], axis=-1), 2 * DIGEST_BYTES + 1))


class Poseidon2Hash(Hash):
    """Poseidon2 over Goldilocks, width 12: a sponge (rate 8, capacity 4) for leaves and byte
    messages, the truncated permutation for nodes.

    * Sponge: the state starts at zero except ``state[8] = n`` (the number of absorbed elements)
      and ``state[9] = 1`` for byte messages, which makes different lengths and the two input
      kinds distinct; each chunk of 8 elements (the last one zero-padded; at least one chunk)
      overwrites ``state[0:8]`` and is followed by a permutation; the digest is ``state[0:4]``.
    * Byte messages become elements 7 bytes at a time (little-endian, each < 2^56 < p) after
      appending the byte ``0x01``.
    * Nodes: ``permute(left || right || (0, 2, 0, 0))[0:4]`` where a digest is 4 elements: the
      capacity word ``state[9] = 2`` marks a node, where a sponge starts with 0 (rows) or 1
      (byte messages).
    * A digest's 32 bytes are its 4 elements, 8 little-endian bytes each. Digests that are not 4
      canonical elements never come out of this hash; ``compress`` reduces them mod p.
    """

    name = "poseidon2"

    def _sponge(self, elems: Array, counts: Array, kind: int) -> Array:
        batch = elems.shape[:-1]
        n = elems.shape[-1]
        chunks = max(1, -(-n // 8))
        pad = chunks * 8 - n
        if pad:
            elems = jnp.concatenate([elems, jnp.zeros((*batch, pad), jnp.uint64)], axis=-1)
        blocks = jnp.moveaxis(elems.reshape(*batch, chunks, 8), -2, 0)  # (chunks, *batch, 8)
        live = jnp.arange(chunks) < jnp.maximum(1, (counts[..., None] + 7) // 8)  # (*batch, chunks)
        live = jnp.moveaxis(live, -1, 0)[..., None]
        state = jnp.zeros((*batch, 12), jnp.uint64)
        state = state.at[..., 8].set(counts.astype(jnp.uint64)).at[..., 9].set(np.uint64(kind))

        def step(s, xs):
            block, alive = xs
            absorbed = jnp.concatenate([block, s[..., 8:]], axis=-1)
            return jnp.where(alive, poseidon2.permute(absorbed), s), None

        state, _ = lax.scan(step, state, (blocks, live))
        return words_to_bytes(state[..., :4])

    def _hash_rows(self, rows):
        counts = jnp.full(rows.shape[:-1], rows.shape[-1], jnp.int64)
        return self._sponge(rows, counts, 0)

    def _digest_bytes(self, msgs, lengths=None):
        batch, length = msgs.shape[:-1], msgs.shape[-1]
        ln = jnp.full(batch, length, jnp.int64) if lengths is None else jnp.asarray(lengths).astype(jnp.int64)
        pos = jnp.arange(length + 1)
        padded = jnp.concatenate([msgs, jnp.zeros((*batch, 1), jnp.uint8)], axis=-1)
        padded = jnp.where(pos < ln[..., None], padded, jnp.zeros((), jnp.uint8))
        padded = jnp.where(pos == ln[..., None], jnp.ones((), jnp.uint8), padded)
        n_elems = -(-(length + 1) // 7)
        padded = jnp.concatenate([padded, jnp.zeros((*batch, 7 * n_elems - length - 1), jnp.uint8)], axis=-1)
        seven = padded.reshape(*batch, n_elems, 7)
        eight = jnp.concatenate([seven, jnp.zeros((*batch, n_elems, 1), jnp.uint8)], axis=-1)
        elems = bytes_to_words(eight.reshape(*batch, 8 * n_elems), jnp.uint64)
        counts = (ln + 1 + 6) // 7
        return self._sponge(elems, counts, 1)

    def _compress(self, left, right):
        lr = gl._canon(bytes_to_words(jnp.concatenate([left, right], axis=-1), jnp.uint64))
        capacity = jnp.broadcast_to(jnp.asarray(POSEIDON2_NODE_CAPACITY), (*lr.shape[:-1], 4))
        state = jnp.concatenate([lr, capacity], axis=-1)
        return words_to_bytes(poseidon2.permute(state)[..., :4])


HASHES: dict[str, Hash] = {h.name: h for h in (Blake3Hash(), Keccak256Hash(), Poseidon2Hash())}


def get_hash(name: str | Hash) -> Hash:
    """The hash called ``name`` (``"blake3"``, ``"keccak256"`` or ``"poseidon2"``)."""
    if isinstance(name, Hash):
        return name
    try:
        return HASHES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown hash {name!r}; choose one of {sorted(HASHES)}") from None
