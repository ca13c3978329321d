"""Cubic extension GF(p)[w]/(w^3 - 2) against a Python-integer reference and galois."""

import random

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxstark import ext, gl
from jaxstark.errors import NonCanonicalError, ShapeError
from tests.reference import ext_inv as ref_inv
from tests.reference import ext_mul as ref_mul
from tests.reference import ext_pow as ref_pow

P = gl.P
N_RANDOM = 100_000


def _rand(rng, n):
    return np.array([[rng.randrange(P) for _ in range(3)] for _ in range(n)], dtype=object)


EDGES = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [P - 1, P - 1, P - 1], [2**32, P - 1, 1], [0, 0, P - 1]],
    dtype=object,
)


def _operands(seed):
    rng = random.Random(seed)
    a = np.concatenate([_rand(rng, N_RANDOM), np.repeat(EDGES, len(EDGES), axis=0)])
    b = np.concatenate([_rand(rng, N_RANDOM), np.tile(EDGES, (len(EDGES), 1))])
    return a, b


A, B = _operands(2)


def _check(got, want):
    chex.assert_type(got, jnp.uint64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(ext.to_int(got), want)


def test_w_cubed_minus_two_is_irreducible():
    # p = 1 mod 3, so x^3 - 2 is irreducible iff 2 is not a cube
    assert (P - 1) % 3 == 0 and pow(2, (P - 1) // 3, P) != 1


def test_add_sub_neg_match_reference():
    a, b = ext.from_int(A), ext.from_int(B)
    _check(ext.add(a, b), (A + B) % P)
    _check(ext.sub(a, b), (A - B) % P)
    _check(ext.neg(a), (-A) % P)


def test_mul_and_square_match_reference():
    want = np.array([ref_mul(x, y) for x, y in zip(A, B, strict=True)], dtype=object)
    _check(ext.mul(ext.from_int(A), ext.from_int(B)), want)
    want_sq = np.array([ref_mul(x, x) for x in A[:20_000]], dtype=object)
    _check(ext.square(ext.from_int(A[:20_000])), want_sq)


def test_mul_base_and_embed():
    s = np.array([random.Random(3).randrange(P) for _ in range(len(A))], dtype=object)
    _check(ext.mul_base(ext.from_int(A), gl.from_int(s)), (A * s[:, None]) % P)
    _check(ext.embed(gl.from_int(s)), np.stack([s, 0 * s, 0 * s], axis=1))


def test_inverse_matches_reference_and_zero_maps_to_zero():
    sub = A[:3000].copy()
    sub[7] = 0
    want = np.array([ref_inv(tuple(int(v) for v in x)) for x in sub], dtype=object)
    _check(ext.inv(ext.from_int(sub)), want)
    _check(ext.batch_inv(ext.from_int(sub)), want)
    _check(ext.batch_inv(ext.from_int(sub.reshape(30, 100, 3))), want.reshape(30, 100, 3))


def test_pow_and_powers():
    x = tuple(int(v) for v in A[0])
    _check(
        ext.pow(ext.from_int(A[:50]), 12345),
        np.array([ref_pow(tuple(a), 12345) for a in A[:50]], dtype=object),
    )
    want = np.array([ref_pow(x, i) for i in range(20)], dtype=object)
    _check(ext.powers(ext.from_int(A[0]), 20), want)


def test_powers_of_several_bases_at_once():
    """One table for a stack of bases (the out-of-domain round's z and z w): column j holds the
    powers of base j."""
    bases = [tuple(int(v) for v in a) for a in A[:2]]
    for n in (1, 3, 33):
        got = ext._powers(ext.from_int(A[:2]), n)
        assert got.shape == (n, 2, 3)
        for j, b in enumerate(bases):
            _check(got[:, j], np.array([ref_pow(b, i) for i in range(n)], dtype=object))


@pytest.fixture(scope="module")
def gf3():
    galois = pytest.importorskip("galois")
    base = galois.GF(P)
    # the primitive element is the one galois finds itself (w + 5), named so that the class is
    # built without its 12 s search; nothing here uses it (the tests compare arithmetic)
    poly = galois.Poly([1, 0, 0, P - 2], field=base)
    return galois.GF(P**3, irreducible_poly=poly, primitive_element=galois.Poly([1, 5], field=base), verify=False)


def test_against_galois(gf3):
    def to_gf(rows):  # galois vectors list the highest power of w first
        return gf3.Vector([[int(r[2]), int(r[1]), int(r[0])] for r in rows])

    def from_gf(x):
        return np.array([[int(v[2]), int(v[1]), int(v[0])] for v in x.vector()], dtype=object)

    a, b = A[:200], B[:200]
    _check(ext.mul(ext.from_int(a), ext.from_int(b)), from_gf(to_gf(a) * to_gf(b)))
    nz = a[np.any(a != 0, axis=1)]
    _check(ext.inv(ext.from_int(nz)), from_gf(to_gf(nz) ** -1))


def test_shape_and_canonical_checks():
    with pytest.raises(ShapeError, match="trailing axis of size 3"):
        ext.mul(jnp.zeros((4, 2), jnp.uint64), jnp.zeros((4, 3), jnp.uint64))
    with pytest.raises(NonCanonicalError):
        ext.add(np.full((2, 3), P, np.uint64), np.zeros((2, 3), np.uint64))


def test_jit_and_vmap_agree():
    a = ext.random(jax.random.PRNGKey(0), (16,))
    b = ext.random(jax.random.PRNGKey(1), (16,))

    def f(x, y):
        return ext.mul(ext.add(x, y), ext.inv(y))

    eager = f(a, b)
    np.testing.assert_array_equal(jax.jit(f)(a, b), eager)
    np.testing.assert_array_equal(jax.vmap(f)(a, b), eager)
    chex.assert_shape(eager, (16, 3))


triples = st.tuples(*(st.integers(0, P - 1),) * 3)


@given(triples, triples, triples)
def test_extension_field_axioms(a, b, c):
    A_, B_, C_ = (np.array(x, dtype=np.uint64) for x in (a, b, c))

    def eq(x, y):
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))

    assert eq(ext.mul(A_, B_), ext.mul(B_, A_))
    assert eq(ext.mul(ext.mul(A_, B_), C_), ext.mul(A_, ext.mul(B_, C_)))
    assert eq(ext.mul(A_, ext.add(B_, C_)), ext.add(ext.mul(A_, B_), ext.mul(A_, C_)))
    assert eq(ext.add(A_, ext.neg(A_)), np.zeros(3, np.uint64))
    assert eq(ext.mul(A_, np.array([1, 0, 0], np.uint64)), A_)
    if any(a):
        assert eq(ext.mul(A_, ext.inv(A_)), np.array([1, 0, 0], np.uint64))
