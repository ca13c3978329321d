"""The compression-chain kernel (jaxstark.kernels.sponge) against the jnp compressions, bit for
bit, for every hash: in Pallas' interpreter on the CPU (and a transcript's operations on the
kernel path there, against the same operations on the jnp path and the host twin), through the
Triton lowering (no GPU needed), and compiled on a GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxstark.kernels as kernels
from jaxstark.hash.interface import get_hash
from jaxstark.kernels import sponge
from jaxstark.transcript import HostTranscript, Transcript
from tests.test_kernels_hashes import PTX_MUL

HASHES = ("blake3", "keccak256", "poseidon2")


def _bytes(key, shape):
    return jax.random.randint(key, shape, 0, 256).astype(jnp.uint8)


def _jnp_chain(name, state, blocks):
    h = get_hash(name)
    return lax.scan(lambda s, b: (h.compress(s, b), None), state, blocks)[0]


@pytest.mark.parametrize("name", HASHES)
@pytest.mark.parametrize(("batch", "count"), [((), 1), ((), 7), ((3,), 1), ((2, 17), 2), ((300,), 1)])
def test_the_chain_is_the_compressions_in_turn(name, batch, count):
    key = jax.random.PRNGKey(count + len(batch))
    state, blocks = _bytes(key, (*batch, 32)), _bytes(jax.random.fold_in(key, 1), (count, *batch, 32))
    got = sponge.chain(state, blocks, hash_name=name, interpret=True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_jnp_chain(name, state, blocks)))


def test_bad_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match="sponge.chain: expected"):
        sponge.chain(jnp.zeros((32,), jnp.uint8), jnp.zeros((0, 32), jnp.uint8), hash_name="blake3", interpret=True)
    with pytest.raises(ValueError, match="sponge.chain: expected"):
        sponge.chain(
            jnp.zeros((2, 32), jnp.uint8), jnp.zeros((1, 3, 32), jnp.uint8), hash_name="blake3", interpret=True
        )


def _operations(t):
    """A run of every operation that compresses: absorb (one block and several), squeeze
    (one and several counter blocks), queries and a fork."""
    t = t.absorb_digest("root", np.arange(32, dtype=np.uint8))
    t = t.absorb_ext("values", np.arange(3 * 13, dtype=np.uint64).reshape(13, 3))
    t, a = t.challenge_ext("alpha")
    t, b = t.challenge_base("betas", 5)
    t, q = t.query_indices("queries", 9, 1 << 10)
    t = t.fork(3)
    return t.state, a, b, q


@pytest.mark.parametrize("name", HASHES)
def test_grinding_on_the_kernel_path_finds_the_jnp_nonce(name, monkeypatch):
    """Batches of 256 nonces (two programs of 128 lanes): the same smallest nonce as the jnp
    path, and the host's check accepts it and rejects every nonce before it."""

    def run():
        return jax.jit(lambda: Transcript.new("grind test", hash=name).grind(7, batch=256))()

    want = run()
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = int(run())
    assert got == int(want)
    host = HostTranscript.new("grind test", hash=name)
    assert host.pow_ok(got, 7) and all(not host.pow_ok(n, 7) for n in range(got))


@pytest.mark.parametrize("name", HASHES)
def test_a_transcript_on_the_kernel_path_is_the_jnp_one_and_the_hosts(name, monkeypatch):
    def run():  # a new function object each time: traced again under the posture of the moment
        return jax.jit(lambda: _operations(Transcript.new("sponge test", hash=name)))()

    want = run()
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = run()
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    host = _operations(HostTranscript.new("sponge test", hash=name))
    for g, h in zip(got, host, strict=True):
        h = np.frombuffer(h, np.uint8) if isinstance(h, bytes) else np.asarray(h)
        np.testing.assert_array_equal(np.asarray(g), h)


def test_the_kernel_lowers_to_triton():
    """Also: Poseidon2's compression takes its field from the Merkle tiling, inline PTX by
    default (its product's ``madc.hi``), in the compiled kernel only."""
    one = (jax.ShapeDtypeStruct((32,), jnp.uint8), jax.ShapeDtypeStruct((49, 32), jnp.uint8))
    grind = (jax.ShapeDtypeStruct((1 << 14, 32), jnp.uint8), jax.ShapeDtypeStruct((1, 1 << 14, 32), jnp.uint8))
    for name in HASHES:
        fn = jax.jit(lambda s, b, name=name: sponge.chain(s, b, hash_name=name))
        for args in (one, grind):  # one program; 128 programs of 128 lanes
            text = fn.trace(*args).lower(lowering_platforms=("cuda",)).as_text()
            assert "triton" in text
            assert (PTX_MUL in text) == (name == "poseidon2")
    interpreted = jax.jit(lambda s, b: sponge.chain(s, b, hash_name="poseidon2", interpret=True))
    assert PTX_MUL not in interpreted.trace(*one).lower(lowering_platforms=("cpu",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize("name", HASHES)
def test_the_kernel_matches_the_cpu_on_a_gpu(name):
    key = jax.random.PRNGKey(9)
    for batch, count in [((), 1), ((), 49), ((41,), 1), ((1 << 14,), 1), ((300,), 3)]:
        state = np.asarray(_bytes(key, (*batch, 32)))
        blocks = np.asarray(_bytes(jax.random.fold_in(key, count), (count, *batch, 32)))
        gpu = jax.devices("gpu")[0]
        got = sponge.chain(jax.device_put(state, gpu), jax.device_put(blocks, gpu), hash_name=name)
        with jax.default_device(jax.devices("cpu")[0]):
            want = _jnp_chain(name, jnp.asarray(state), jnp.asarray(blocks))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
