"""NTT, coset LDE and polynomial evaluation against naive Python-integer formulas."""

import random
import time

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark import ext, gl, lde, ntt, poly
from jaxstark.errors import NonCanonicalError, ShapeError
from tests.reference import ext_mul

P = gl.P


def rand_matrix(rng, rows, cols):
    return np.array([[rng.randrange(P) for _ in range(cols)] for _ in range(rows)], dtype=object)


def naive_dft(coeffs, root):
    """y_i = sum_k c_k root^(ik), columns independent (object-array matrix product)."""
    n = coeffs.shape[0]
    vander = np.array([[pow(root, i * k, P) for k in range(n)] for i in range(n)], dtype=object)
    return vander.dot(coeffs) % P


def interpolate(evals):
    """Coefficients of the degree-<n interpolant of evals on the size-n subgroup (Python ints)."""
    n = evals.shape[0]
    return naive_dft(evals, pow(gl.root_of_unity(n.bit_length() - 1), P - 2, P)) * pow(n, P - 2, P) % P


def horner(coeffs, x):
    acc = np.zeros(coeffs.shape[1:], dtype=object)
    for c in coeffs[::-1]:
        acc = (acc * x + c) % P
    return acc


@pytest.mark.parametrize("log_n", range(0, 11))
def test_ntt_equals_naive_dft(log_n):
    rng = random.Random(log_n)
    cols = 2 if log_n == 10 else 3
    c = rand_matrix(rng, 1 << log_n, cols)
    got = ntt.ntt(gl.from_int(c))
    chex.assert_type(got, jnp.uint64)
    np.testing.assert_array_equal(gl.to_int(got), naive_dft(c, gl.root_of_unity(log_n)))


BATCHES = [1, 2, 3, 5, 8, 13, 16, 31, 64]


@pytest.mark.parametrize("log_n", range(0, 17))
def test_ntt_round_trip(log_n):
    cols = BATCHES[log_n % len(BATCHES)] if log_n < 16 else 64
    x = gl.random(jax.random.PRNGKey(log_n), (1 << log_n, cols))
    y = ntt.ntt(x)
    chex.assert_shape(y, x.shape)
    np.testing.assert_array_equal(ntt.intt(y), x)
    np.testing.assert_array_equal(ntt.ntt(ntt.intt(x)), x)


def test_ntt_batches_over_any_trailing_axes():
    x = gl.random(jax.random.PRNGKey(7), (64, 4, 3))
    y = ntt.ntt(x)
    for i in range(4):
        np.testing.assert_array_equal(y[:, i, :], ntt.ntt(x[:, i, :]))


def test_ntt_matches_galois():
    galois = pytest.importorskip("galois")
    # galois uses omega = primitive_root(p)^((p-1)/n) with primitive root 7, as jaxstark does
    rng = random.Random(9)
    vals = [rng.randrange(P) for _ in range(64)]
    want = np.array([int(v) for v in galois.ntt(vals, modulus=P)], dtype=object)
    got = ntt.ntt(gl.from_int(np.array(vals, dtype=object)[:, None]))[:, 0]
    np.testing.assert_array_equal(gl.to_int(got), want)
    back = [int(v) for v in galois.intt(list(want), modulus=P)]
    np.testing.assert_array_equal(gl.to_int(ntt.intt(got[:, None])[:, 0]), np.array(back, dtype=object))


def test_bit_reverse_helpers():
    assert list(ntt.bit_reverse_indices(3)) == [0, 4, 2, 6, 1, 5, 3, 7]
    x = jnp.arange(16, dtype=jnp.uint64).reshape(2, 8)
    np.testing.assert_array_equal(ntt.bit_reverse(x, axis=1), np.asarray(x)[:, ntt.bit_reverse_indices(3)])
    np.testing.assert_array_equal(ntt.bit_reverse(ntt.bit_reverse(x, axis=1), axis=1), x)


def test_tables_are_cached_and_checked():
    assert ntt.ntt_tables(10) is ntt.ntt_tables(10)
    assert lde.lde_tables(6, 4) is lde.lde_tables(6, 4)
    with pytest.raises(ShapeError, match="tables are for size 2\\^10"):
        ntt.ntt(jnp.zeros((8, 1), jnp.uint64), tables=ntt.ntt_tables(10))


def test_ntt_inside_user_jit_with_and_without_tables():
    x = gl.random(jax.random.PRNGKey(3), (256, 5))
    want = ntt.ntt(x)
    np.testing.assert_array_equal(jax.jit(ntt.ntt)(x), want)
    np.testing.assert_array_equal(jax.jit(ntt.ntt)(x, ntt.ntt_tables(8)), want)
    np.testing.assert_array_equal(jax.vmap(ntt.ntt, in_axes=1, out_axes=1)(x), want)


@pytest.mark.parametrize("log_n, blowup", [(0, 2), (1, 2), (3, 4), (5, 2), (6, 8), (8, 2)])
def test_coset_lde_equals_interpolant_on_the_coset(log_n, blowup):
    rng = random.Random(100 + log_n)
    n, cols = 1 << log_n, 3
    t = rand_matrix(rng, n, cols)
    got = lde.coset_lde(gl.from_int(t), blowup)
    chex.assert_shape(got, (n * blowup, cols))
    w_l = gl.root_of_unity(log_n + blowup.bit_length() - 1)
    coeffs = interpolate(t)
    rows = range(n * blowup) if n * blowup <= 64 else rng.sample(range(n * blowup), 40)
    for r in rows:
        x = 3 * pow(w_l, r, P) % P
        np.testing.assert_array_equal(gl.to_int(got[r]), horner(coeffs, x))
    # the LDE restricted to every blowup-th row is the interpolant on the coset 3 * <w_n>
    np.testing.assert_array_equal(got[::blowup], lde.coset_evaluate(ntt.intt(gl.from_int(t)), 2)[::2])


def test_coset_lde_of_extension_columns_is_coordinate_wise():
    x = ext.random(jax.random.PRNGKey(4), (32, 2))
    y = lde.coset_lde(x, 4)
    chex.assert_shape(y, (128, 2, 3))
    for k in range(3):
        np.testing.assert_array_equal(y[..., k], lde.coset_lde(x[..., k], 4))


def test_coset_lde_at_size_2_pow_16_is_consistent_with_ntt():
    x = gl.random(jax.random.PRNGKey(5), (1 << 14, 4))
    y = lde.coset_lde(x, 4)
    # shifted coefficients c_k * 3^k evaluated on <w_L> by one size-L NTT give the same values
    coeffs = ntt.intt(x)
    shifted = gl.mul(coeffs, gl.powers(3, 1 << 14)[:, None])
    padded = jnp.concatenate([shifted, jnp.zeros((3 << 14, 4), jnp.uint64)])
    np.testing.assert_array_equal(y, ntt.ntt(padded))


def test_coset_points():
    pts = gl.to_int(lde.coset_points(4))
    w = gl.root_of_unity(4)
    assert list(pts) == [3 * pow(w, t, P) % P for t in range(16)]


def test_lde_argument_errors():
    good = jnp.zeros((8, 2), jnp.uint64)
    with pytest.raises(ShapeError, match="row count must be a power of two >= 1, got 6"):
        lde.coset_lde(jnp.zeros((6, 2), jnp.uint64), 2)
    with pytest.raises(ShapeError, match="blowup must be a power of two"):
        lde.coset_lde(good, 3)
    with pytest.raises(ShapeError, match="blowup must be a power of two >= 2"):
        lde.coset_lde(good, 1)
    with pytest.raises(ValueError, match="lies in the size-2\\^4 subgroup"):
        lde.coset_lde(good, 2, offset=gl.root_of_unity(3))
    with pytest.raises(NonCanonicalError):
        lde.coset_lde(np.full((8, 2), P, np.uint64), 2)
    with pytest.raises(ShapeError, match="scalar"):
        ntt.ntt(np.uint64(3))


# --- evaluation at a point ------------------------------------------------------------------


def test_evaluate_at_base_and_extension_points():
    rng = random.Random(11)
    c = rand_matrix(rng, 50, 3)  # any length, not only powers of two
    x = rng.randrange(P)
    want = np.array([sum(int(c[k, j]) * pow(x, k, P) for k in range(50)) % P for j in range(3)], dtype=object)
    got = poly.evaluate(gl.from_int(c), np.uint64(x))
    chex.assert_shape(got, (3,))
    np.testing.assert_array_equal(gl.to_int(got), want)
    want_base = want

    z = tuple(rng.randrange(P) for _ in range(3))
    zp = [(1, 0, 0)]
    for _ in range(49):
        zp.append(ext_mul(zp[-1], z))
    want = np.array(
        [[sum(int(c[k, j]) * zp[k][i] for k in range(50)) % P for i in range(3)] for j in range(3)],
        dtype=object,
    )
    got = poly.evaluate(gl.from_int(c), ext.from_int(list(z)))
    chex.assert_shape(got, (3, 3))
    np.testing.assert_array_equal(gl.to_int(got), want)

    ce = np.stack([c, c, c], axis=-1)  # extension coefficients (c, c, c) = c * (1 + w + w^2)
    got_e = poly.evaluate(gl.from_int(ce), ext.from_int(list(z)), ext_coeffs=True)
    one_w_w2 = ext.from_int([1, 1, 1])
    np.testing.assert_array_equal(got_e, ext.mul(got, jnp.broadcast_to(one_w_w2, (3, 3))))
    got_eb = poly.evaluate(gl.from_int(ce), np.uint64(x), ext_coeffs=True)
    np.testing.assert_array_equal(gl.to_int(got_eb), np.stack([want_base] * 3, axis=-1))


@pytest.mark.parametrize("width", [8, 16, 21])  # one block, two full blocks, blocks and a rest
def test_evaluate_wide_batches_block_by_block(width):
    rng = random.Random(width)
    c = rand_matrix(rng, 9, width)
    z = tuple(rng.randrange(P) for _ in range(3))
    zp = [(1, 0, 0)]
    for _ in range(8):
        zp.append(ext_mul(zp[-1], z))
    want = np.array(
        [[sum(int(c[k, j]) * zp[k][i] for k in range(9)) % P for i in range(3)] for j in range(width)], dtype=object
    )
    got = poly.evaluate(gl.from_int(c), ext.from_int(list(z)))
    chex.assert_shape(got, (width, 3))
    np.testing.assert_array_equal(gl.to_int(got), want)
    x = rng.randrange(P)
    want_base = np.array([sum(int(c[k, j]) * pow(x, k, P) for k in range(9)) % P for j in range(width)], dtype=object)
    np.testing.assert_array_equal(gl.to_int(poly.evaluate(gl.from_int(c), np.uint64(x))), want_base)
    ce = np.stack([c, c, c], axis=-1).reshape(9, width // 2 if width % 2 == 0 else width, -1, 3)
    got_e = poly.evaluate(gl.from_int(ce), ext.from_int(list(z)), ext_coeffs=True)
    one_w_w2 = ext.from_int([1, 1, 1])
    np.testing.assert_array_equal(got_e.reshape(width, 3), ext.mul(got, jnp.broadcast_to(one_w_w2, (width, 3))))


def test_evaluate_interpolant_reproduces_trace_values():
    x = gl.random(jax.random.PRNGKey(8), (64, 2))
    coeffs = ntt.intt(x)
    w = gl.root_of_unity(6)
    for i in (0, 1, 17, 63):
        np.testing.assert_array_equal(poly.evaluate(coeffs, np.uint64(pow(w, i, P))), x[i])


def test_evaluate_point_shape_error():
    with pytest.raises(ShapeError, match="point must have shape"):
        poly.evaluate(jnp.zeros((4, 1), jnp.uint64), jnp.zeros((2,), jnp.uint64))


# --- compile-time tripwire ------------------------------------------------------------------


def test_ntt_2_pow_20_compiles_quickly():
    """Tripwire against unrolled graphs: the 2^20-row NTT must compile in well under 30 s on
    the CI machine (measured about 2 s on a 2-core CPU machine)."""
    spec = jax.ShapeDtypeStruct((1 << 20, 8), jnp.uint64)
    tables = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), ntt.ntt_tables(20))
    start = time.perf_counter()
    jax.jit(ntt._ntt_core).lower(spec, tables).compile()
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"NTT 2^20 compile took {elapsed:.1f} s"


def test_tables_first_asked_for_inside_a_trace_are_cached_concrete():
    """The per-shape caches must never keep a tracer: a later caller outside the trace would
    receive it (and fail far from the cause)."""
    x = jax.ShapeDtypeStruct((1 << 7, 2), jnp.uint64)
    jax.jit(lambda m: lde._lde_core(m, lde.lde_tables(7, 8))).trace(x)
    jax.jit(lambda m: ntt._ntt_core(m, ntt.ntt_tables(7))).trace(x)
    for leaf in jax.tree.leaves((lde.lde_tables(7, 8), ntt.ntt_tables(7))):
        assert not isinstance(leaf, jax.core.Tracer)
    assert lde.coset_lde(jnp.zeros((1 << 7, 2), jnp.uint64), 8).shape == (1 << 10, 2)


def _same_tables(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).shape == np.asarray(y).shape
        and np.asarray(x).dtype == np.asarray(y).dtype
        and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(la, lb, strict=True)
    )


def test_small_tables_built_on_the_host_equal_the_compiled_builders():
    """Domains of at most ``HOST_TABLES_UP_TO`` entries get their twiddles and coset shifts from
    Python integers (no program to load); they equal the compiled builders' bit for bit, on
    both sides of the threshold."""
    dev = jax.devices()[0]
    top = ntt.HOST_TABLES_UP_TO.bit_length()  # size 2^top: half of it is the threshold, the last host size
    for log_n in range(top + 2):
        assert _same_tables(ntt._cached_tables(log_n, dev), ntt.concrete(ntt._make_tables_jit, log_n, device=dev))
    for log_n, log_b in ((1, 1), (5, 2), (10, 2), (top - 2, 1), (top - 2, 2), (3, 4)):
        built = ntt.concrete(lde._make_lde_tables_jit, log_n, log_b, lde.DEFAULT_OFFSET, device=dev)
        assert _same_tables(lde._cached(log_n, log_b, lde.DEFAULT_OFFSET, dev), built), (log_n, log_b)
    w = gl.root_of_unity(5)
    np.testing.assert_array_equal(ntt._host_tables(5)[0], [pow(w, j, gl.P) for j in range(16)])


def test_host_tables_first_asked_for_inside_a_trace_are_concrete():
    ntt._cached_tables.cache_clear()
    jax.jit(lambda x: x + ntt.ntt_tables(4).forward[1])(np.uint64(1))
    cached = ntt.ntt_tables(4)
    assert not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(cached))
    assert int(cached.forward[1]) == gl.root_of_unity(4)
