"""BLAKE3, Keccak-256 and the Poseidon2 hash against reference implementations, byte for byte."""

import time

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.hash import blake3 as jblake3
from jaxstark.hash import keccak as jkeccak
from jaxstark.hash.interface import HASHES, get_hash
from tests.poseidon2_reference import permute as poseidon2_permute
from tests.reference import NODE_LABEL, REFERENCE_HASHES, row_bytes

MAX_LEN = 4200
RNG = np.random.default_rng(2026)
LENGTH_MESSAGES = RNG.integers(0, 256, (MAX_LEN + 1, MAX_LEN), dtype=np.uint8)
LENGTHS = np.arange(MAX_LEN + 1)


@pytest.mark.parametrize(
    "name, impl", [("blake3", jblake3.digest_bytes), ("keccak256", jkeccak.digest_bytes)], ids=["blake3", "keccak256"]
)
def test_every_length_0_to_4200_matches_the_reference_package(name, impl):
    """One message of every length 0..4200 in a single mixed-length batch."""
    _, _, ref = REFERENCE_HASHES[name]
    got = np.asarray(impl(LENGTH_MESSAGES, LENGTHS))
    bad = [n for n in LENGTHS if bytes(got[n]) != ref(bytes(LENGTH_MESSAGES[n, :n]))]
    assert not bad, f"{name} differs for lengths {bad[:20]}"


@pytest.mark.parametrize("name", ["blake3", "keccak256"])
@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 135, 136, 137, 1023, 1024, 1025, 2048, 3073, 4200])
def test_fixed_length_batches_match(name, length):
    """A batch of messages of one length class, without the ``lengths`` argument."""
    _, _, ref = REFERENCE_HASHES[name]
    msgs = RNG.integers(0, 256, (5, length), dtype=np.uint8)
    got = np.asarray(get_hash(name).digest_bytes(jnp.asarray(msgs)))
    chex.assert_shape(got, (5, 32))
    for i in range(5):
        assert bytes(got[i]) == ref(bytes(msgs[i]))


def test_poseidon2_byte_hash_matches_the_python_twin():
    _, _, ref = REFERENCE_HASHES["poseidon2"]
    lengths = np.array([0, 1, 6, 7, 8, 55, 56, 57, 200])
    msgs = RNG.integers(0, 256, (len(lengths), 200), dtype=np.uint8)
    got = np.asarray(get_hash("poseidon2").digest_bytes(jnp.asarray(msgs), lengths))
    for i, n in enumerate(lengths):
        assert bytes(got[i]) == ref(bytes(msgs[i, :n])), n


@pytest.mark.parametrize("name", sorted(HASHES))
@pytest.mark.parametrize("width", [1, 3, 8, 9, 17, 62, 129])
def test_leaf_and_node_hashing_match_the_reference(name, width):
    leaf, node, _ = REFERENCE_HASHES[name]
    p = 2**64 - 2**32 + 1
    rows = RNG.integers(0, 2**63, (4, width), dtype=np.uint64) % np.uint64(p)
    h = get_hash(name)
    got = np.asarray(h.hash_rows(jnp.asarray(rows)))
    for i in range(4):
        assert bytes(got[i]) == leaf(rows[i].tolist())
    nodes = np.asarray(h.compress(jnp.asarray(got[:2]), jnp.asarray(got[2:])))
    for i in range(2):
        assert bytes(nodes[i]) == node(bytes(got[i]), bytes(got[i + 2]))


# --- Merkle nodes: domain-separated from leaves -------------------------------------------------

P = 2**64 - 2**32 + 1


def _node_oracles():
    """The public references of a node, written out here (not through tests/reference.py)."""
    blake3 = pytest.importorskip("blake3")
    keccak = pytest.importorskip("Crypto.Hash.keccak")
    key = blake3.blake3(b"jaxstark merkle node").digest()

    def poseidon2(data: bytes) -> bytes:
        state = [int.from_bytes(data[i : i + 8], "little") % P for i in range(0, 64, 8)] + [0, 2, 0, 0]
        return b"".join(v.to_bytes(8, "little") for v in poseidon2_permute(state)[:4])

    return {
        "blake3": lambda data: blake3.blake3(data, key=key).digest(),
        "keccak256": lambda data: keccak.new(digest_bits=256, data=data + b"\x01").digest(),
        "poseidon2": poseidon2,
    }


def test_blake3_node_key_is_the_hash_of_its_label():
    """The hard-coded key words are blake3(b"jaxstark merkle node"), by the reference package and
    by the package's own BLAKE3."""
    blake3 = pytest.importorskip("blake3")
    assert NODE_LABEL == b"jaxstark merkle node"
    key = np.asarray(jblake3.NODE_KEY)
    assert key.dtype == np.uint32 and key.shape == (8,)
    assert key.astype("<u4").tobytes() == blake3.blake3(NODE_LABEL).digest()
    own = jblake3.digest_bytes(jnp.asarray(np.frombuffer(NODE_LABEL, np.uint8)[None]))
    assert bytes(np.asarray(own)[0]) == key.astype("<u4").tobytes()
    assert jblake3.NODE_FLAGS == jblake3.CHUNK_START | jblake3.CHUNK_END | jblake3.ROOT | 16


@pytest.mark.parametrize("name", sorted(HASHES))
def test_node_compress_matches_the_public_reference_on_random_digests(name):
    """Keyed BLAKE3 (blake3 package), Keccak-256 of 65 bytes (pycryptodome), the Poseidon2
    permutation with capacity (0, 2, 0, 0) (Python twin). Random bytes, so Poseidon2 also sees
    non-canonical words (reduced mod p first); one pair is all 0xff, one all zero."""
    oracle = _node_oracles()[name]
    left = RNG.integers(0, 256, (12, 32), dtype=np.uint8)
    right = RNG.integers(0, 256, (12, 32), dtype=np.uint8)
    left[0], right[0] = 0xFF, 0xFF
    left[1], right[1] = 0, 0
    got = np.asarray(get_hash(name).compress(jnp.asarray(left), jnp.asarray(right)))
    chex.assert_shape(got, (12, 32))
    for i in range(12):
        assert bytes(got[i]) == oracle(bytes(left[i]) + bytes(right[i])), i
    # batched over two axes as the transcript and the tree's scan use it
    both = get_hash(name).compress(jnp.asarray(left.reshape(3, 4, 32)), jnp.asarray(right.reshape(3, 4, 32)))
    np.testing.assert_array_equal(np.asarray(both).reshape(12, 32), got)


@pytest.mark.parametrize("name", sorted(HASHES))
def test_a_width_8_row_is_not_a_node_of_its_two_halves(name):
    """A row of 8 elements is 64 bytes, as many as two digests: its leaf digest must differ from
    the node over its two halves. For BLAKE3 and Keccak-256 the leaf is the plain hash of those 64
    bytes -- the node rule before domain separation -- and the node is not."""
    rows = RNG.integers(0, 2**63, (6, 8), dtype=np.uint64) % np.uint64(P)
    h = get_hash(name)
    leaves = np.asarray(h.hash_rows(jnp.asarray(rows)))
    halves = np.stack([np.frombuffer(row_bytes(r.tolist()), np.uint8) for r in rows]).reshape(6, 2, 32)
    nodes = np.asarray(h.compress(jnp.asarray(halves[:, 0]), jnp.asarray(halves[:, 1])))
    _, _, plain = REFERENCE_HASHES[name]
    for i in range(6):
        assert bytes(leaves[i]) != bytes(nodes[i]), i
        if name != "poseidon2":
            assert bytes(leaves[i]) == plain(row_bytes(rows[i].tolist()))


def test_poseidon2_node_is_the_permutation_with_capacity_word_2():
    """state[9] separates the three uses of the permutation: 0 rows, 1 byte messages, 2 nodes.
    The same eight words with capacity (0, 0, 0, 0) (the unseparated rule) give another digest."""
    words = RNG.integers(0, 2**63, 8, dtype=np.uint64) % np.uint64(P)
    data = np.frombuffer(row_bytes(words.tolist()), np.uint8)
    got = bytes(np.asarray(get_hash("poseidon2").compress(jnp.asarray(data[:32]), jnp.asarray(data[32:]))))

    def out(capacity):
        return b"".join(v.to_bytes(8, "little") for v in poseidon2_permute([*map(int, words), *capacity])[:4])

    assert got == out([0, 2, 0, 0])
    assert got not in (out([0, 0, 0, 0]), out([0, 1, 0, 0]))


def test_unknown_hash_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown hash 'sha1'"):
        get_hash("sha1")


@pytest.mark.parametrize("name", sorted(HASHES))
def test_leaf_hashing_compiles_quickly(name):
    """Compile-time tripwire (rounds must stay in lax loops): < 30 s on the CI machine."""
    spec = jax.ShapeDtypeStruct((1024, 316), jnp.uint64)
    start = time.perf_counter()
    jax.jit(get_hash(name).hash_rows).lower(spec).compile()
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"{name} leaf hashing compile took {elapsed:.1f} s"
