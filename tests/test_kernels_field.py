"""The inline-PTX Goldilocks arithmetic (jaxstark.kernels.field_ptx): lowered on any machine,
and on a GPU equal to the jnp formulas and to Python integers, edge values included."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxstark import gl
from jaxstark.kernels import field_ptx, launch

EDGES = [0, 1, 2, gl.P - 1, gl.P - 2, 2**32 - 1, 2**32, 2**32 + 1, gl.P - 2**32, 2**63, 2**64 - 2**33]


def _kernel(a_ref, b_ref, o_ref, *, op):
    o_ref[...] = op(a_ref[...], b_ref[...])


def _apply(f: field_ptx.FieldOps, name: str, a, b, interpret: bool = False):
    spec = pl.BlockSpec((256,), lambda i: (i,))
    return pl.pallas_call(
        functools.partial(_kernel, op=getattr(f, name)),
        out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
        grid=(a.shape[0] // 256,),
        in_specs=[spec, spec],
        out_specs=spec,
        **launch(interpret),
    )(a, b)


def _operands(n: int, seed: int):
    """Every pair of edge values first, then random canonical values."""
    pairs = np.array([(x, y) for x in EDGES for y in EDGES], dtype=np.uint64)
    a = np.array(gl.random(jax.random.PRNGKey(seed), (n,)))
    b = np.array(gl.random(jax.random.PRNGKey(seed + 1), (n,)))
    a[: len(pairs)], b[: len(pairs)] = pairs[:, 0], pairs[:, 1]
    return a, b


def _python(name: str, x: int, y: int) -> int:
    return {"add": (x + y) % gl.P, "sub": (x - y) % gl.P, "mul": x * y % gl.P}[name]


def test_the_interpreter_and_the_opt_out_use_the_jnp_formulas():
    assert field_ptx.ops(interpret=True) is field_ptx.JNP
    assert field_ptx.ops(interpret=False, use_ptx=False) is field_ptx.JNP
    assert field_ptx.ops(interpret=False) is field_ptx.PTX
    assert field_ptx.ops(interpret=True, use_ptx="mul") is field_ptx.JNP


def test_the_mul_form_is_the_ptx_product_with_the_jnp_sums():
    f = field_ptx.ops(interpret=False, use_ptx="mul")
    assert (f.add, f.sub, f.mul) == (gl._add, gl._sub, field_ptx.PTX.mul)
    assert f == field_ptx.ops(False, "mul") and hash(f) == hash(field_ptx.ops(False, "mul"))  # a cache key
    assert [field_ptx.ptx_form(v) for v in (0, 1, np.True_, "mul")] == [False, True, True, "mul"]
    for bad in ("add", "True", 2, None):
        with pytest.raises(ValueError, match="use_ptx must be one of"):
            field_ptx.ops(interpret=True, use_ptx=bad)


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_the_ptx_reaches_the_cuda_lowering(name):
    a = jax.ShapeDtypeStruct((1024,), jnp.uint64)
    text = jax.jit(functools.partial(_apply, field_ptx.PTX, name)).trace(a, a).lower(lowering_platforms=("cuda",))
    text = text.as_text()
    assert "triton" in text
    assert {"add": "addc.u32", "sub": "subc.u32", "mul": "madc.hi"}[name] in text


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_the_jnp_kernel_form_equals_python_integers(name):
    a, b = _operands(1024, 3)
    got = np.asarray(_apply(field_ptx.JNP, name, jnp.asarray(a), jnp.asarray(b), interpret=True))
    assert got.tolist() == [_python(name, int(x), int(y)) for x, y in zip(a, b, strict=True)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_ptx_equals_the_jnp_formulas_and_python_on_a_gpu(name):
    a, b = _operands(1 << 20, 7)
    a_d, b_d = jax.device_put(a, jax.devices("gpu")[0]), jax.device_put(b, jax.devices("gpu")[0])
    ptx = np.asarray(jax.jit(functools.partial(_apply, field_ptx.PTX, name))(a_d, b_d))
    ref = np.asarray(jax.jit(functools.partial(_apply, field_ptx.JNP, name))(a_d, b_d))
    np.testing.assert_array_equal(ptx, ref)
    head = 4096  # the edge pairs and random values, against Python integers
    assert ptx[:head].tolist() == [_python(name, int(x), int(y)) for x, y in zip(a[:head], b[:head], strict=True)]
