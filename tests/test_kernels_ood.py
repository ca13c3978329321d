"""The out-of-domain kernel (jaxstark.kernels.ood) against the jnp sums it replaces, bit for bit:
in Pallas' interpreter on the CPU at small sizes (and the round's kernel path there), through the
Triton lowering (no GPU needed), and compiled on a GPU at full size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark.kernels as kernels
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.kernels import ood as ko
from jaxstark.poly import _evaluate_powers
from jaxstark.rounds import r3_ood


def _by_definition(m: np.ndarray, points: np.ndarray) -> np.ndarray:
    """sum_i m[i, c] x^i with Python integers (x in GF(p)[w] / (w^3 - 2))."""
    p = gl.P

    def mul(a, b):
        c = [0] * 5
        for i in range(3):
            for j in range(3):
                c[i + j] += a[i] * b[j]
        return [(c[0] + 2 * c[3]) % p, (c[1] + 2 * c[4]) % p, c[2] % p]

    out = np.zeros((m.shape[1], len(points), 3), np.uint64)
    for k, x in enumerate(points):
        x = [int(v) for v in x]
        for c in range(m.shape[1]):
            acc, power = [0, 0, 0], [1, 0, 0]
            for i in range(m.shape[0]):
                acc = [(a + int(m[i, c]) * q) % p for a, q in zip(acc, power, strict=True)]
                power = mul(power, x)
            out[c, k] = acc
    return out


def test_the_sums_are_the_polynomials_by_definition():
    m = np.array(gl.random(jax.random.PRNGKey(0), (64, 3)))
    m[0, 0], m[-1, 1] = gl.P - 1, gl.P - 1  # the largest canonical values
    points = np.asarray(fext.random(jax.random.PRNGKey(1), (2,)))
    got = ko.evaluate(jnp.asarray(m), jnp.asarray(points), interpret=True, tiling=ko.Tiling(rows=16, block_cols=2))
    np.testing.assert_array_equal(np.asarray(got), _by_definition(m, points))


@pytest.mark.parametrize(
    ("log_n", "cols", "k", "tiling"),
    [
        (0, 2, 2, ko.Tiling()),  # one row
        (1, 3, 1, ko.Tiling()),
        (4, 1, 1, ko.Tiling(rows=16)),  # one block
        (8, 13, 2, ko.Tiling(rows=64)),  # columns overhanging a block of 16
        (9, 17, 2, ko.Tiling(rows=128, block_cols=8)),  # three column blocks, the last overhanging
        (10, 6, 1, ko.Tiling()),
    ],
)
def test_the_kernel_matches_the_jnp_sums(log_n, cols, k, tiling):
    n = 1 << log_n
    m = gl.random(jax.random.PRNGKey(log_n), (n, cols))
    points = fext.random(jax.random.PRNGKey(cols), (k,))
    got = ko.evaluate(m, points, interpret=True, tiling=tiling)
    want = jnp.stack([_evaluate_powers(m, fext._powers(points[j], n), False) for j in range(k)], axis=1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_bad_points_or_rows_are_refused_by_name():
    m = jnp.zeros((64, 2), jnp.uint64)
    with pytest.raises(ValueError, match="points must be"):
        ko.evaluate(m, jnp.zeros((3, 3), jnp.uint64), interpret=True)
    with pytest.raises(ValueError, match="rows must be 1 to 2"):
        ko.evaluate(jnp.zeros((0, 2), jnp.uint64), jnp.zeros((1, 3), jnp.uint64), interpret=True)
    with pytest.raises(ValueError, match="multiple of the block"):
        ko.evaluate(jnp.zeros((96, 2), jnp.uint64), jnp.zeros((1, 3), jnp.uint64), interpret=True,
                    tiling=ko.Tiling(rows=64))  # fmt: skip


@pytest.mark.parametrize("aux", [False, True])
def test_the_rounds_kernel_path_matches_its_jnp_path(aux, monkeypatch):
    """Base trace columns at z and z w, extension part columns at z, extension aux columns at
    both: the kernel path's five results equal the jnp path's."""
    n, key = 1 << 7, jax.random.PRNGKey(7)
    trace = gl.random(key, (n, 5))
    parts = gl.random(jax.random.fold_in(key, 1), (n, 2, 3))
    ext_aux = gl.random(jax.random.fold_in(key, 2), (n, 3, 3)) if aux else None
    z = fext.random(jax.random.fold_in(key, 3), ())
    zg = fext.random(jax.random.fold_in(key, 4), ())
    monkeypatch.setattr(kernels, "MODE", "interpret")  # the kernel in Pallas' interpreter
    got = r3_ood._kernel_evaluations(trace, ext_aux, parts, z=z, zg=zg)
    powers = {"z": fext._powers(z, n), "zg": fext._powers(zg, n)}
    want = [_evaluate_powers(trace, powers["z"], False), _evaluate_powers(trace, powers["zg"], False),
            _evaluate_powers(parts, powers["z"], True)]  # fmt: skip
    want += [_evaluate_powers(ext_aux, powers[p], True) for p in ("z", "zg")] if aux else [np.zeros((0, 3))] * 2
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w).astype(np.uint64))


def test_the_round_takes_the_kernel_path_in_the_interpreter_and_keeps_its_values(monkeypatch):
    from jaxstark.transcript import Transcript

    n = 1 << 6
    key = jax.random.PRNGKey(11)
    args = (gl.random(key, (n, 4)), gl.random(jax.random.fold_in(key, 1), (n, 6)),
            gl.random(jax.random.fold_in(key, 2), (n, 2, 3)), Transcript.new("ood kernel test"))  # fmt: skip

    def run():  # a new function object each time: traced again under the posture of the moment
        return jax.jit(lambda *a: r3_ood.out_of_domain.__wrapped__(*a, log_n=6))(*args)

    want = run()
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = run()
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("cols", [1, 13, 62])
def test_the_kernel_lowers_to_triton(cols):
    m = jax.ShapeDtypeStruct((1 << 12, cols), jnp.uint64)
    points = jax.ShapeDtypeStruct((2, 3), jnp.uint64)
    text = jax.jit(ko.evaluate).trace(m, points).lower(lowering_platforms=("cuda",)).as_text()
    assert "triton" in text


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "cols"), [(22, 13), (20, 62)])
def test_the_kernel_matches_the_cpu_at_full_size(log_n, cols):
    m = np.asarray(gl.random(jax.random.PRNGKey(log_n), (1 << log_n, cols)))
    points = np.asarray(fext.random(jax.random.PRNGKey(cols), (2,)))
    gpu = jax.devices("gpu")[0]
    got = ko.evaluate(jax.device_put(m, gpu), jax.device_put(points, gpu))
    with jax.default_device(jax.devices("cpu")[0]):
        want = jnp.stack([_evaluate_powers(m, fext._powers(points[j], 1 << log_n), False) for j in range(2)], axis=1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
