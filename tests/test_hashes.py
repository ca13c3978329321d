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
from tests.reference import REFERENCE_HASHES

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
