"""Goldilocks base field against Python-integer arithmetic."""

import random

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxstark import gl
from jaxstark.errors import FieldDtypeError, NonCanonicalError

P = gl.P
N_RANDOM = 100_000
EDGES = [0, 1, 2, P - 1, P - 2, 2**32, 2**32 - 1, 2**32 + 1, 2**63, 2**63 - 1, 2**64 - 2**32, (P - 1) // 2]

elements = st.integers(min_value=0, max_value=P - 1)


def _operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """10^5 random pairs plus every pair of edge cases, as object arrays of Python ints."""
    rng = random.Random(seed)
    a = [rng.randrange(P) for _ in range(N_RANDOM)] + [x for x in EDGES for _ in EDGES]
    b = [rng.randrange(P) for _ in range(N_RANDOM)] + [y for _ in EDGES for y in EDGES]
    return np.array(a, dtype=object), np.array(b, dtype=object)


def _check(got, want):
    chex.assert_type(got, jnp.uint64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(gl.to_int(got), want)


A, B = _operands(1)


@pytest.mark.parametrize(
    "op, ref",
    [
        (gl.add, lambda a, b: (a + b) % P),
        (gl.sub, lambda a, b: (a - b) % P),
        (gl.mul, lambda a, b: (a * b) % P),
    ],
    ids=["add", "sub", "mul"],
)
def test_binary_ops_match_python_ints(op, ref):
    _check(op(gl.from_int(A), gl.from_int(B)), ref(A, B))


@pytest.mark.parametrize(
    "op, ref",
    [
        (gl.neg, lambda a: (-a) % P),
        (gl.square, lambda a: (a * a) % P),
    ],
    ids=["neg", "square"],
)
def test_unary_ops_match_python_ints(op, ref):
    _check(op(gl.from_int(A)), ref(A))


def test_inverse_matches_fermat_and_zero_maps_to_zero():
    want = np.array([pow(int(x), P - 2, P) for x in A], dtype=object)  # pow(0, p-2) == 0
    _check(gl.inv(gl.from_int(A)), want)
    assert gl.to_int(gl.inv(np.uint64(0))) == 0


def test_batch_inverse_matches_single_inverses_including_zeros():
    sub = A[:20_000].copy()
    sub[::97] = 0
    want = np.array([pow(int(x), P - 2, P) for x in sub], dtype=object)
    _check(gl.batch_inv(gl.from_int(sub)), want)
    grid = gl.from_int(sub[:1200].reshape(30, 40))
    _check(gl.batch_inv(grid), want[:1200].reshape(30, 40))


def test_batch_inverse_of_empty_and_single():
    assert gl.batch_inv(jnp.zeros((0,), jnp.uint64)).shape == (0,)
    assert gl.to_int(gl.batch_inv(gl.from_int([5]))[0]) == pow(5, P - 2, P)


def test_inv_nonzero_raises_on_zero():
    with pytest.raises(ZeroDivisionError, match="contains 0"):
        gl.inv_nonzero(gl.from_int([3, 0]))


@pytest.mark.parametrize("e", [0, 1, 2, 7, 2**32, P - 2, P - 1, 2**64 - 1, 2**70 + 5, -1, -7])
def test_pow_static_exponents(e):
    a = A[:2000]
    if e < 0:
        want = np.array([pow(pow(int(x), P - 2, P), -e, P) for x in a], dtype=object)
    else:
        want = np.array([pow(int(x), e, P) if (int(x) or e == 0) else 0 for x in a], dtype=object)
    _check(gl.pow(gl.from_int(a), e), want)


def test_pow_array_exponents():
    rng = random.Random(5)
    a = A[:5000]
    e = [rng.randrange(2**64) for _ in a]
    want = np.array([pow(int(x), y, P) for x, y in zip(a, e, strict=True)], dtype=object)
    _check(gl.pow(gl.from_int(a), jnp.asarray(np.array(e, dtype=np.uint64))), want)


def test_sum_matches_python_including_overflowing_totals():
    a = np.array([P - 1] * 5000 + list(A[:5000]), dtype=object)
    assert gl.to_int(gl.sum(gl.from_int(a))) == int(a.sum()) % P
    m = gl.from_int(A[:6000].reshape(100, 60))
    want = (A[:6000].reshape(100, 60).sum(axis=0)) % P
    _check(gl.sum_axis(m, 0), want)


def test_canonicalize_and_from_int_reduce_anything():
    raw = np.array([0, P - 1, P, P + 5, 2**64 - 1], dtype=np.uint64)
    _check(gl.canonicalize(jnp.asarray(raw)), np.array([int(v) % P for v in raw], dtype=object))
    vals = [-1, -(2**70), 2**200 + 3, P, 12]
    _check(gl.from_int(vals), np.array([v % P for v in vals], dtype=object))


def test_roots_of_unity_have_exact_orders():
    for k in range(gl.TWO_ADICITY + 1):
        w = gl.root_of_unity(k)
        assert pow(w, 1 << k, P) == 1
        if k:
            assert pow(w, 1 << (k - 1), P) == P - 1  # primitive: w^(n/2) = -1
            assert pow(gl.root_of_unity(k), 2, P) == gl.root_of_unity(k - 1)
    with pytest.raises(ValueError, match="log_n"):
        gl.root_of_unity(33)


def test_generator_generates_the_multiplicative_group():
    assert P - 1 == 2**32 * 3 * 5 * 17 * 257 * 65537
    for q in (2, 3, 5, 17, 257, 65537):
        assert pow(gl.GENERATOR, (P - 1) // q, P) != 1


def test_powers():
    want = np.array([pow(11, i, P) for i in range(37)], dtype=object)
    _check(gl.powers(11, 37), want)
    assert gl.powers(11, 0).shape == (0,)


def test_powers_of_every_table_split_against_python_ints():
    """Lengths around the two-table split (sqrt(n) rows times sqrt(n) columns, cut to n)."""
    base = random.Random(3).randrange(P)
    for n in (1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 63, 65, 1000):
        _check(gl.powers(base, n), np.array([pow(base, i, P) for i in range(n)], dtype=object))


def test_against_galois_on_a_sample():
    galois = pytest.importorskip("galois")
    gf = galois.GF(P)
    a, b = A[:300], B[:300]
    ga, gb = gf(list(a)), gf(list(b))
    _check(gl.mul(gl.from_int(a), gl.from_int(b)), np.array([int(v) for v in ga * gb], dtype=object))
    nz = [int(v) or 1 for v in a]
    _check(gl.inv(gl.from_int(nz)), np.array([int(v) for v in gf(nz) ** -1], dtype=object))


# --- the public boundary --------------------------------------------------------------------


def test_non_canonical_input_is_rejected_with_location():
    bad = np.array([1, 2, P, 3], dtype=np.uint64)
    with pytest.raises(NonCanonicalError, match=r"mul argument 1: 1 value\(s\) are >= p .*index \(2,\)"):
        gl.mul(gl.from_int([1, 2, 3, 4]), bad)
    with pytest.raises(NonCanonicalError):
        gl.add(jnp.asarray(bad), jnp.asarray(bad))
    with pytest.raises(NonCanonicalError, match="from_int"):
        gl.mul(P, 1)


@pytest.mark.parametrize("dtype", [np.uint32, np.int64, np.int32, np.float64])
def test_wrong_dtype_is_rejected(dtype):
    with pytest.raises(FieldDtypeError, match=f"expected dtype uint64, got {np.dtype(dtype)}"):
        gl.add(np.ones(3, dtype), np.ones(3, np.uint64))


def test_lists_and_bools_are_rejected():
    with pytest.raises(FieldDtypeError):
        gl.add([1, 2], [3, 4])
    with pytest.raises(FieldDtypeError):
        gl.neg(True)


def test_ops_are_jittable_vmappable_and_keep_uint64():
    a = gl.random(jax.random.PRNGKey(0), (8, 5))
    b = gl.random(jax.random.PRNGKey(1), (8, 5))
    f = jax.jit(lambda x, y: gl.mul(gl.add(x, y), gl.inv(y)))
    out = f(a, b)
    chex.assert_type(out, jnp.uint64)
    chex.assert_shape(out, (8, 5))
    np.testing.assert_array_equal(out, jax.vmap(lambda x, y: gl.mul(gl.add(x, y), gl.inv(y)))(a, b))
    np.testing.assert_array_equal(out, gl.mul(gl.add(a, b), gl.inv(b)))


# --- axioms ---------------------------------------------------------------------------------


def _e(x):
    return np.uint64(x)


@given(elements, elements, elements)
def test_field_axioms(a, b, c):
    A_, B_, C_ = _e(a), _e(b), _e(c)
    assert gl.add(A_, B_) == gl.add(B_, A_)
    assert gl.mul(A_, B_) == gl.mul(B_, A_)
    assert gl.add(gl.add(A_, B_), C_) == gl.add(A_, gl.add(B_, C_))
    assert gl.mul(gl.mul(A_, B_), C_) == gl.mul(A_, gl.mul(B_, C_))
    assert gl.mul(A_, gl.add(B_, C_)) == gl.add(gl.mul(A_, B_), gl.mul(A_, C_))
    assert gl.add(A_, gl.neg(A_)) == 0
    assert gl.sub(A_, B_) == gl.add(A_, gl.neg(B_))
    assert gl.mul(A_, _e(1)) == A_
    if a:
        assert gl.mul(A_, gl.inv(A_)) == 1
