"""The powers kernel (jaxstark.kernels.powers) against Python integers (the host field) and the
jnp square-and-multiply it replaces, bit for bit: in Pallas' interpreter on the CPU, through the
Triton lowering (no GPU needed), and compiled on a GPU at the out-of-domain round's size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark.kernels as kernels
from jaxstark.field import extension as fext
from jaxstark.field.host import HostVal
from jaxstark.kernels import powers


def _exponents(n: int, nbits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    e[:4] = [0, 1, 2**64 - 1, 2**nbits - 1 if nbits < 64 else 2**63]
    return e


@pytest.mark.parametrize(("k", "n", "nbits"), [(1, 5, 3), (2, 300, 14), (2, 64, 64), (1, 8, 0)], ids=str)
def test_the_kernel_is_the_power_of_python_integers(k, n, nbits):
    points = np.asarray(fext.random(jax.random.PRNGKey(n + k), (k,)))
    e = _exponents(n, nbits, seed=n)
    got = np.asarray(powers.ext_powers_at(jnp.asarray(points), jnp.asarray(e), nbits=nbits, interpret=True,
                                          tiling=powers.Tiling(lanes=64)))  # fmt: skip
    assert got.shape == (n, powers.COLUMNS)
    assert not got[:, 3 * k :].any()
    mask = (1 << nbits) - 1
    for j in range(k):
        x = HostVal(points[j])
        want = np.array([(x ** (int(v) & mask)).c for v in e], np.uint64)
        np.testing.assert_array_equal(got[:, 3 * j : 3 * j + 3], want, err_msg=f"point {j}")


@pytest.mark.parametrize("n", [0, 1, 2, 131])
def test_the_powers_of_one_element_take_the_kernel_in_the_interpreter(n, monkeypatch):
    x = fext.random(jax.random.PRNGKey(n), ())
    want = np.asarray(fext._powers(x, n))
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = np.asarray(jax.jit(lambda x: powers.ext_powers(x, n))(x))  # a new function: traced under the posture
    assert got.shape == (n, 3)
    np.testing.assert_array_equal(got, want)


def test_bad_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match="lanes per program must be a power of two"):
        powers.ext_powers_at(jnp.zeros((1, 3), jnp.uint64), jnp.zeros((4,), jnp.uint64), tiling=powers.Tiling(lanes=3))
    with pytest.raises(ValueError, match="powers.ext_powers_at"):
        powers.ext_powers_at(jnp.zeros((3, 3), jnp.uint64), jnp.zeros((4,), jnp.uint64), interpret=True)
    with pytest.raises(ValueError, match="powers.ext_powers_at"):
        powers.ext_powers_at(jnp.zeros((1, 3), jnp.uint64), jnp.zeros((2, 2), jnp.uint64), interpret=True)


def test_the_kernel_lowers_to_triton():
    args = (jax.ShapeDtypeStruct((2, 3), jnp.uint64), jax.ShapeDtypeStruct((1 << 14,), jnp.uint64))
    fn = jax.jit(lambda x, e: powers.ext_powers_at(x, e, nbits=22))
    assert "triton" in fn.trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [(1 << 14) + 256, 4, 1])  # the out-of-domain table; one-lane programs
def test_the_kernel_matches_the_cpu_on_a_gpu(n):
    points = np.asarray(fext.random(jax.random.PRNGKey(5), (2,)))
    e = _exponents(max(n, 4), 64, seed=5)[:n]
    gpu, cpu = jax.devices("gpu")[0], jax.devices("cpu")[0]
    got = np.asarray(powers.ext_powers_at(jax.device_put(points, gpu), jax.device_put(e, gpu)))
    with jax.default_device(cpu):
        x = [jnp.broadcast_to(jnp.asarray(points[j]), (len(e), 3)) for j in range(2)]
        want = [np.asarray(fext._pow_bits(x[j], jnp.asarray(e)[:, None], 64)) for j in range(2)]
    np.testing.assert_array_equal(got[:, :6], np.concatenate(want, axis=1))
