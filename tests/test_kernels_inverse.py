"""The batch-inversion kernel (jaxstark.kernels.inverse) against Python integers and the jnp
Montgomery trick it replaces, bit for bit: in Pallas' interpreter on the CPU at small sizes (and
the DEEP round's kernel path there), through the Triton lowering (no GPU needed), and compiled on a
GPU at full size. Also the DEEP value's single inversion against the two it replaced."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark.kernels as kernels
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.kernels import inverse as ki
from jaxstark.protocol.algebra import deep_value


def _awkward(n: int, seed: int) -> np.ndarray:
    """Random canonical elements with zeros, ones and p - 1 among them."""
    a = np.array(gl.random(jax.random.PRNGKey(seed), (n,)))
    for i, v in zip((0, n // 2, n - 1, 3), (0, gl.P - 1, 0, 1), strict=True):
        if i < n:
            a[i] = v
    return a


@pytest.mark.parametrize(
    ("n", "tiling"),
    [
        (1, ki.Tiling()),
        (7, ki.Tiling()),  # fewer elements than rows
        (1000, ki.Tiling(rows=8, block_cols=16)),  # padded up to whole blocks
        (1 << 12, ki.Tiling()),
        (3 * 256, ki.Tiling(rows=4, block_cols=64)),  # three column blocks
    ],
)
def test_the_inverses_are_the_inverses_by_definition(n, tiling):
    a = _awkward(n, n)
    got = np.asarray(ki.batch_inv(jnp.asarray(a), interpret=True, tiling=tiling))
    want = np.array([pow(int(v), gl.P - 2, gl.P) for v in a], np.uint64)  # 0 -> 0
    np.testing.assert_array_equal(got, want)


def test_the_kernel_matches_the_jnp_trick_on_any_shape():
    a = gl.random(jax.random.PRNGKey(3), (5, 96, 3)).at[2, 7, 1].set(0)
    got = ki.batch_inv(a, interpret=True, tiling=ki.Tiling(rows=16, block_cols=32))
    assert got.shape == a.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(gl._batch_inv(a)))
    assert ki.batch_inv(jnp.zeros((0, 3), jnp.uint64), interpret=True).shape == (0, 3)


def test_base_inverses_take_the_kernel_in_the_interpreter(monkeypatch):
    a = gl.random(jax.random.PRNGKey(5), (4, 200)).at[3, 9].set(0)
    want, calls, kernel = gl._batch_inv(a), [], ki.batch_inv
    monkeypatch.setattr(ki, "batch_inv", lambda *x, **kw: calls.append(kw) or kernel(*x, **kw))
    np.testing.assert_array_equal(np.asarray(jax.jit(ki.base_batch_inv)(a)), np.asarray(want))
    assert not calls  # the twin under the default posture on the CPU
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = jax.jit(lambda x: ki.base_batch_inv(x))(a)  # a new function: traced again under this posture
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert calls == [{"interpret": True}]


def test_extension_inverses_take_the_kernel_in_the_interpreter(monkeypatch):
    a = fext.random(jax.random.PRNGKey(4), (2, 300)).at[1, 5].set(0)
    want = fext._batch_inv(a)
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = jax.jit(ki.ext_batch_inv)(a)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    one = np.asarray(fext._mul(a, got))
    assert (one[1, 5] == 0).all() and (np.delete(one.reshape(-1, 3), 305, axis=0) == [1, 0, 0]).all()


def test_the_deep_value_inverts_once_and_keeps_its_values():
    key = jax.random.PRNGKey(5)
    x = gl.random(key, (64,))
    z, zg, num_z, num_zg = (fext.random(jax.random.fold_in(key, i), s) for i, s in enumerate([(), (), (64,), (64,)]))
    calls = []

    def inverse(d):
        calls.append(d.v.shape)
        return Val(fext._batch_inv(d.v), True)

    got = deep_value(Val(x), Val(z, True), Val(zg, True), Val(num_z, True), Val(num_zg, True), inverse).v
    dz = fext._sub(fext._embed(x), jnp.broadcast_to(z, (64, 3)))
    dzg = fext._sub(fext._embed(x), jnp.broadcast_to(zg, (64, 3)))
    want = fext._add(fext._mul(num_z, fext._batch_inv(dz)), fext._mul(num_zg, fext._batch_inv(dzg)))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert calls == [(64, 3)]


@pytest.mark.parametrize("aux_columns", [0, 2])
def test_the_deep_round_takes_the_kernel_path_in_the_interpreter_and_keeps_its_values(monkeypatch, aux_columns):
    """The same values on the kernel path as the XLA round, with and without aux columns."""
    from jaxstark.rounds.domain import make_domain
    from jaxstark.rounds.r3_ood import OutOfDomain
    from jaxstark.rounds.r4_deep import deep
    from jaxstark.transcript import Transcript

    domain = make_domain(5, 2)
    key = jax.random.PRNGKey(6)
    size = domain.size
    trace, parts = gl.random(key, (size, 3)), gl.random(jax.random.fold_in(key, 1), (size, 2, 3))
    aux = gl.random(jax.random.fold_in(key, 9), (size, 3 * aux_columns)) if aux_columns else None
    ood = OutOfDomain(*(fext.random(jax.random.fold_in(key, 2 + i), s) for i, s in
                        enumerate([(), (3,), (3,), (2,), (aux_columns,), (aux_columns,)])))  # fmt: skip
    args = (domain, trace, aux, parts, ood, Transcript.new("inverse kernel test"))

    def run():  # a new function object each time: traced again under the posture of the moment
        return jax.jit(lambda *a: deep.__wrapped__(*a))(*args)

    want = run()
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = run()
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_the_kernel_lowers_to_triton():
    x = jax.ShapeDtypeStruct((1 << 23,), jnp.uint64)
    assert "triton" in jax.jit(ki.batch_inv).trace(x).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize("log_n", [10, 23])
def test_the_kernel_matches_the_cpu_at_full_size(log_n):
    a = _awkward(1 << log_n, log_n)
    got = ki.batch_inv(jax.device_put(a, jax.devices("gpu")[0]))
    with jax.default_device(jax.devices("cpu")[0]):
        want = gl._batch_inv(jnp.asarray(a))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
