"""DEEP's quotient per row as a kernel (jaxstark.kernels.deep) against the jnp twin it replaces
and Python integers, bit for bit: in Pallas' interpreter on the CPU at small sizes (the DEEP
round's kernel path there is tests/test_kernels_inverse.py's round test), through the Triton
lowering (no GPU needed), and compiled on a GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.kernels import deep as kd
from jaxstark.protocol.layout import num_deep_terms
from jaxstark.rounds import r4_deep
from jaxstark.rounds.r3_ood import OutOfDomain


def _inputs(size, c, parts, a, seed=0):
    key = jax.random.PRNGKey(seed)
    k = lambda i: jax.random.fold_in(key, i)  # noqa: E731
    ood = OutOfDomain(*(fext.random(k(i), s) for i, s in enumerate([(), (c,), (c,), (parts,), (a,), (a,)])))
    g_pows = fext.random(k(7), (num_deep_terms(c, parts, a),))
    zg = fext.random(k(8), ())
    rows = (gl.random(k(9), (size,)), gl.random(k(10), (size, c)), fext.random(k(11), (size, a)),
            fext.random(k(12), (size, parts)))  # fmt: skip
    return (*rows, ood, g_pows, zg)


@pytest.mark.parametrize(("size", "c", "parts", "a", "unrolled"),
                         [(32, 13, 1, 2, 8), (32, 5, 2, 0, 8), (32, 40, 3, 1, 8), (32, 40, 3, 1, 2), (16, 1, 1, 0, 8)],
                         ids=str)  # fmt: skip
def test_the_kernel_path_is_the_twin(size, c, parts, a, unrolled, monkeypatch):
    """(40 columns in chunks of 8 with 2 unrolled: the main columns walked in a loop)"""
    args = _inputs(size, c, parts, a, seed=size + c)
    want = np.asarray(r4_deep._combine(*args))
    monkeypatch.setattr(kd, "TILING", kd.Tiling(rows=16, block_cols=8, unrolled=unrolled))
    from jaxstark import kernels

    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = np.asarray(r4_deep._combine_kernel(*args))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tiling", [kd.Tiling(rows=8), kd.Tiling(rows=8, block_cols=4, unrolled=1)], ids=str)
def test_the_quotient_is_python_integers(tiling):
    size, c, parts, a = 16, 6, 2, 1
    xs, t, aux, ph, ood, g_pows, zg = _inputs(size, c, parts, a, seed=3)
    t = t.at[5].set(gl.P - 1)  # the largest trace values
    g = np.asarray(g_pows)
    consts = np.asarray(fext.random(jax.random.PRNGKey(4), (6,)))
    weights = jnp.concatenate([g_pows[:c], g_pows[2 * c : 2 * c + parts], g_pows[2 * c + parts : 2 * c + parts + a]])
    num, den = kd.quotient(t, ph, aux, xs, weights, jnp.asarray(consts), interpret=True, tiling=tiling)
    H = lambda v: HostVal(np.asarray(v))  # noqa: E731
    cz, czw, gc, ga, z, zw = (H(v) for v in consts)
    for r in (0, 5, 15):
        main, rest, aux_sum = HostVal(0), HostVal(0), HostVal(0)
        for i in range(c):
            main = main + H(g[i]) * int(t[r, i])
        for j in range(parts):
            rest = rest + H(g[2 * c + j]) * H(ph[r, j])
        for j in range(a):
            aux_sum = aux_sum + H(g[2 * c + parts + j]) * H(aux[r, j])
        x = HostVal(int(xs[r]))
        num_z, num_zw = main + rest + aux_sum - cz, main * gc + aux_sum * ga - czw
        np.testing.assert_array_equal(np.asarray(num[r]), np.array((num_z * (x - zw) + num_zw * (x - z)).c, np.uint64))
        np.testing.assert_array_equal(np.asarray(den[r]), np.array(((x - z) * (x - zw)).c, np.uint64))


def test_bad_shapes_are_refused_by_name():
    xs, t, aux, ph, *_ = _inputs(64, 4, 1, 0)
    w, k = jnp.zeros((5, 3), jnp.uint64), jnp.zeros((6, 3), jnp.uint64)
    with pytest.raises(ValueError, match="deep.quotient: rows of trace"):
        kd.quotient(t, ph[:32], aux, xs, w, k, interpret=True)
    with pytest.raises(ValueError, match="deep.quotient: weights"):
        kd.quotient(t, ph, aux, xs, w[:4], k, interpret=True)
    with pytest.raises(ValueError, match="deep.quotient: the rows"):
        kd.quotient(t[:48], ph[:48], aux[:48], xs[:48], w, k, interpret=True)
    with pytest.raises(ValueError, match="deep.quotient: the columns per chunk"):
        kd.quotient(t, ph, aux, xs, w, k, interpret=True, tiling=kd.Tiling(block_cols=6))


@pytest.mark.parametrize("c", [62, 600], ids=["unrolled", "loop"])
def test_the_kernel_lowers_to_triton(c):
    S = jax.ShapeDtypeStruct
    L = 1 << 23
    args = (S((L, c), jnp.uint64), S((L, 1, 3), jnp.uint64), S((L, 2, 3), jnp.uint64), S((L,), jnp.uint64),
            S((c + 3, 3), jnp.uint64), S((6, 3), jnp.uint64))  # fmt: skip
    assert "triton" in jax.jit(kd.quotient).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "c", "parts", "a"), [(23, 62, 1, 0), (12, 316, 2, 0), (20, 8, 1, 2)], ids=str)
def test_the_kernel_path_matches_the_cpu_on_a_gpu(log_n, c, parts, a):
    args = jax.tree.map(np.asarray, _inputs(1 << log_n, c, parts, a, seed=log_n))
    gpu, cpu = jax.devices("gpu")[0], jax.devices("cpu")[0]
    got = np.asarray(jax.jit(r4_deep._combine_kernel)(*jax.device_put(args, gpu)))
    with jax.default_device(cpu):
        want = np.asarray(jax.jit(r4_deep._combine)(*jax.device_put(args, cpu)))
    np.testing.assert_array_equal(got, want)
