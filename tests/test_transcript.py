"""The Fiat-Shamir transcript: pure, jittable, vmappable over forks, replayable on the host."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark import ext, gl
from jaxstark.hash.interface import HASHES
from jaxstark.transcript import Transcript, encode_label


def script(t: Transcript, root, values, ext_values):
    """A fixed sequence of transcript operations, as a prover round would issue them."""
    t = t.absorb_digest("trace root", root)
    t = t.absorb_base("public", values)
    t, alpha = t.challenge_ext("alpha")
    t = t.absorb_ext("ood", ext_values)
    t, betas = t.challenge_base("betas", 5)
    t, q = t.query_indices("queries", 30, 1 << 12)
    return t, (alpha, betas, q)


ROOT = jnp.arange(32, dtype=jnp.uint8)
VALUES = gl.from_int([1, 2, 3, 2**40, 7, 9])
EXT_VALUES = ext.from_int([[1, 2, 3], [4, 5, 6]])


def host_replay(name):
    with jax.default_device(jax.devices("cpu")[0]):
        return script(Transcript.new("jaxstark-test", name, annotated=True), ROOT, VALUES, EXT_VALUES)


@pytest.mark.parametrize("name", sorted(HASHES))
def test_jit_and_host_replay_agree_including_logs(name):
    t0 = Transcript.new("jaxstark-test", name, annotated=True)
    tj, outs_j = jax.jit(script)(t0, ROOT, VALUES, EXT_VALUES)
    th, outs_h = host_replay(name)
    for a, b in zip(jax.tree.leaves(outs_j), jax.tree.leaves(outs_h), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(tj.state, th.state)
    assert [(e.label, e.kind) for e in tj.log] == [(e.label, e.kind) for e in th.log]
    assert [e.kind for e in th.log] == ["digest", "base", "challenge_ext", "ext", "challenge_base", "queries"]
    for a, b in zip(tj.log, th.log, strict=True):
        np.testing.assert_array_equal(a.value, b.value)
    alpha, betas, q = outs_h
    chex.assert_shape((alpha, betas, q), ((3,), (5,), (30,)))
    chex.assert_type((alpha, betas, q), (jnp.uint64, jnp.uint64, jnp.uint32))
    assert int(jnp.max(q)) < 1 << 12


def test_challenges_depend_on_every_absorbed_value_and_label():
    base = host_replay("blake3")[1]
    t = Transcript.new("jaxstark-test", annotated=True)
    changed = script(t, ROOT.at[0].set(99), VALUES, EXT_VALUES)[1]
    assert not np.array_equal(base[0], changed[0])
    relabeled = Transcript.new("jaxstark-test2").absorb_digest("trace root", ROOT).challenge_ext("alpha")[1]
    assert not np.array_equal(base[0], relabeled)


def test_vmap_over_forks_matches_individual_forks():
    t = Transcript.new("forks").absorb_digest("root", ROOT)

    def child(i):
        return t.fork(i).challenge_ext("gamma")[1]

    batched = jax.vmap(child)(jnp.arange(6, dtype=jnp.uint32))
    chex.assert_shape(batched, (6, 3))
    for i in range(6):
        np.testing.assert_array_equal(batched[i], child(i))
    assert len({tuple(np.asarray(r).tolist()) for r in batched}) == 6


def test_outputs_are_canonical_and_query_indices_cover_the_domain():
    t = Transcript.new("stats")
    t, xs = t.challenge_base("many", 4000)
    assert int(jnp.sum(gl.canonicalize(xs) != xs)) == 0
    _, q = t.query_indices("q", 4000, 16)
    counts = np.bincount(np.asarray(q), minlength=16)
    assert counts.min() > 150  # 250 expected per bucket


def test_bad_arguments():
    t = Transcript.new("x")
    with pytest.raises(ValueError, match="at most 22 bytes"):
        t.absorb_digest("a label that is far too long to fit", ROOT)
    with pytest.raises(ValueError, match="power of two"):
        t.query_indices("q", 3, 12)
    with pytest.raises(ValueError, match="uint8"):
        t.absorb_digest("root", jnp.zeros((32,), jnp.uint32))
    with pytest.raises(ValueError, match="unknown hash"):
        Transcript.new("x", "md5")


def test_labels_as_data_absorb_the_same_tags_also_inside_a_scan():
    """A label passed as ``encode_label(label)`` -- also one row of an array of labels scanned
    over -- gives exactly the string's transcript; arrays of another shape or dtype, and array
    labels on an annotated transcript (logged by name), are refused."""
    labels = ["fri layer 3", "fri layer 12", ""]
    digest = jnp.arange(32, dtype=jnp.uint8)

    def step(t, label):
        t = t.absorb_digest(label, digest)
        t, c = t.challenge_ext(label)
        return t, c

    want_t, want = Transcript.new("labels"), []
    for label in labels:
        want_t, c = step(want_t, label)
        want.append(c)
    got_t, got = jax.lax.scan(step, Transcript.new("labels"), jnp.asarray(np.stack([encode_label(x) for x in labels])))
    np.testing.assert_array_equal(got_t.state, want_t.state)
    np.testing.assert_array_equal(got, np.stack(want))
    assert encode_label("ab").tolist()[:4] == [2, ord("a"), ord("b"), 0] and encode_label("ab").shape == (23,)
    with pytest.raises(ValueError, match="labels"):
        Transcript.new("x").absorb_digest(np.zeros(22, np.uint8), digest)
    with pytest.raises(ValueError, match="labels"):
        Transcript.new("x").absorb_digest(np.zeros(23, np.uint32), digest)
    with pytest.raises(ValueError, match="by name"):
        Transcript.new("x", annotated=True).absorb_digest(encode_label("y"), digest)
    with pytest.raises(ValueError, match="labels"):
        encode_label("x" * 23)


def test_the_grinding_batch_follows_the_platform_and_not_the_nonce():
    """A GPU's batch holds about every nonce a search needs (each step of the search's loop costs
    it tens of microseconds); the CPU's stays small; the nonce found is the smallest whatever the
    batch, so the proof bytes do not depend on the platform."""
    from jaxstark.rounds.r5_queries import queries
    from jaxstark.transcript import grind_batch

    assert grind_batch(16, "cpu") == 1 << 14 and grind_batch(3, "cpu") == 1 << 6
    assert grind_batch(16, "cuda") == grind_batch(16, "gpu") == 1 << 18 and grind_batch(5, "cuda") == 1 << 7
    tr = Transcript.new("grinding batch test")
    small = queries(tr, grinding_bits=9, num_queries=4, log_size=10, batch=16)
    large = queries(tr, grinding_bits=9, num_queries=4, log_size=10, batch=grind_batch(9, "cuda"))
    for a, b in zip(jax.tree.leaves(small), jax.tree.leaves(large), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
