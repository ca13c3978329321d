"""DEEP's row sums as a kernel (jaxstark.kernels.dot) against the jnp twin it replaces and Python
integers, bit for bit: in Pallas' interpreter on the CPU at small sizes (the DEEP round's kernel
path there is tests/test_kernels_inverse.py's round test), through the Triton lowering (no GPU
needed), and compiled on a GPU at the ALU 2^22 @ b2 shape."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.kernels import dot
from jaxstark.rounds.r4_deep import _dot_base_ext


@pytest.mark.parametrize(("n", "cols"), [(64, 62), (16, 5), (128, 16), (8, 1), (256, 33)], ids=str)
def test_the_kernel_is_the_twin(n, cols):
    t = gl.random(jax.random.PRNGKey(n), (n, cols))
    g = fext.random(jax.random.PRNGKey(cols), (cols,))
    got = dot.dot_base_ext(t, g, interpret=True, tiling=dot.Tiling(rows=16, block_cols=8))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_dot_base_ext(t, g)))


def test_the_kernel_is_the_sum_of_python_integers():
    t = np.full((16, 40), gl.P - 1, np.uint64)  # the largest values: the halves' sums at their widest
    t[3] = np.array(gl.random(jax.random.PRNGKey(1), (40,)))
    g = np.array(fext.random(jax.random.PRNGKey(2), (40,)))
    g[5] = [gl.P - 1] * 3
    got = np.asarray(dot.dot_base_ext(jnp.asarray(t), jnp.asarray(g), interpret=True, tiling=dot.Tiling(rows=8)))
    for r in (0, 3, 15):
        want = HostVal(0)
        for c in range(40):
            want = want + HostVal(g[c]) * int(t[r, c])
        np.testing.assert_array_equal(got[r], np.array(want.c, np.uint64))


def test_bad_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match="dot.dot_base_ext: weights of shape"):
        dot.dot_base_ext(jnp.zeros((8, 4), jnp.uint64), jnp.zeros((3, 3), jnp.uint64), interpret=True)
    with pytest.raises(ValueError, match="dot.dot_base_ext: the rows"):
        dot.dot_base_ext(jnp.zeros((96, 4), jnp.uint64), jnp.zeros((4, 3), jnp.uint64), interpret=True)


def test_the_kernel_lowers_to_triton():
    args = (jax.ShapeDtypeStruct((1 << 23, 62), jnp.uint64), jax.ShapeDtypeStruct((62, 3), jnp.uint64))
    assert "triton" in jax.jit(dot.dot_base_ext).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "cols"), [(23, 62), (12, 316)])
def test_the_kernel_matches_the_cpu_on_a_gpu(log_n, cols):
    t = np.asarray(gl.random(jax.random.PRNGKey(log_n), (1 << log_n, cols)))
    g = np.asarray(fext.random(jax.random.PRNGKey(cols), (cols,)))
    gpu = jax.devices("gpu")[0]
    got = np.asarray(dot.dot_base_ext(jax.device_put(t, gpu), jax.device_put(g, gpu)))
    with jax.default_device(jax.devices("cpu")[0]):
        want = np.asarray(_dot_base_ext(jnp.asarray(t), jnp.asarray(g)))
    np.testing.assert_array_equal(got, want)
