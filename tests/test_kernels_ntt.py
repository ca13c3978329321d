"""The radix-2^r NTT kernels (jaxstark.kernels.ntt) against the plain jnp transforms, bit for
bit: in Pallas' interpreter on the CPU at small sizes, through the Triton lowering (which runs
on any machine), and at full size on a GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark.kernels as kernels
from jaxstark import gl, lde, ntt
from jaxstark.errors import ShapeError
from jaxstark.kernels import ntt as kn

SMALL = kn.Tiling(max_radix_log2=3, lanes=64, block_cols=8)


@pytest.mark.parametrize(
    ("log_n", "shape", "tiling"),
    [
        (0, (3,), SMALL),
        (1, (2,), SMALL),
        (4, (), SMALL),  # a single column
        (5, (5,), kn.Tiling(max_radix_log2=2, lanes=32, block_cols=4)),
        (6, (2, 3), SMALL),  # extension-shaped batch, columns overhanging the block
        (7, (19,), kn.Tiling(max_radix_log2=4, lanes=256, block_cols=16)),
    ],
)
def test_dif_and_dit_match_the_reference(log_n, shape, tiling):
    x = gl.random(jax.random.PRNGKey(log_n), (1 << log_n, *shape))
    tables = ntt.ntt_tables(log_n)
    for roots in (tables.forward, tables.inverse):
        got = kn.dif(x, roots, interpret=True, tiling=tiling)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ntt._dif_levels(x, roots, log_n)))
        # DIT takes bit-reversed input to natural order: the same transform as DIF + reversal
        got = kn.dit(ntt._bit_reverse_rows(x, log_n), roots, interpret=True, tiling=tiling)
        want = ntt._bit_reverse_rows(ntt._dif_levels(x, roots, log_n), log_n)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize(
    ("log_n", "cols", "blowup", "tiling"),
    [
        (0, 3, 2, SMALL),
        (3, 1, 2, SMALL),
        (5, 5, 4, kn.Tiling(max_radix_log2=2, lanes=32, block_cols=4)),  # columns overhanging the block
        (6, 8, 2, SMALL),
        (7, 19, 8, kn.Tiling(max_radix_log2=4, lanes=256, block_cols=16)),
    ],
)
def test_dit_shifted_is_dit_of_the_coset_copies(log_n, cols, blowup, tiling):
    key = jax.random.PRNGKey(100 + log_n)
    x = gl.random(key, (1 << log_n, cols))
    shifts = gl.random(jax.random.fold_in(key, 1), (1 << log_n, blowup))
    roots = ntt.ntt_tables(log_n).forward
    copies = gl._mul(x[:, None, :], shifts[:, :, None])
    want = kn.dit(copies, roots, interpret=True, tiling=tiling)
    got = kn.dit_shifted(x, shifts, roots, interpret=True, tiling=tiling)
    assert got.shape == (1 << log_n, blowup, cols)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # and under vmap (chunked tables batch the LDE over row slices)
    xs = jnp.stack([x, gl._add(x, x)])
    got = jax.vmap(lambda a: kn.dit_shifted(a, shifts, roots, interpret=True, tiling=tiling))(xs)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want))
    want1 = kn.dit(gl._mul(xs[1][:, None, :], shifts[:, :, None]), roots, interpret=True, tiling=tiling)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want1))


@pytest.mark.parametrize(
    ("log_n", "cols", "tiling"),
    [
        (0, 3, SMALL),
        (1, 2, SMALL),
        (3, 1, SMALL),
        (5, 6, kn.Tiling(lanes=32, block_cols=4)),  # column blocks of 2 (the interpreter's whole blocks)
        (6, 8, SMALL),
        (7, 19, kn.Tiling(lanes=64, block_cols=16)),  # odd width: blocks of one column
        (9, 40, kn.TILING),
    ],
)
def test_bit_reverse_scaled_is_the_permutation_times_the_scale(log_n, cols, tiling):
    """In place, row i gets row rev(i) times the scale: against the jnp gather and product."""
    key = jax.random.PRNGKey(200 + log_n)
    x = gl.random(key, (1 << log_n, cols))
    scale = gl.random(jax.random.fold_in(key, 1), ())
    want = gl._mul(ntt._bit_reverse_rows(x, log_n), scale)
    got = jax.jit(lambda a, s: kn.bit_reverse_scaled(a, s, interpret=True, tiling=tiling))(x, scale)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_bit_reverse_scaled_under_vmap():
    """A group of row chunks (the chunked commitment's vmap): each permuted on its own."""
    x = gl.random(jax.random.PRNGKey(5), (3, 1 << 5, 6))
    scale = gl.random(jax.random.PRNGKey(6), ())
    tiling = kn.Tiling(lanes=32, block_cols=4)
    got = jax.jit(jax.vmap(lambda a: kn.bit_reverse_scaled(a, scale, interpret=True, tiling=tiling)))(x)
    want = jax.vmap(lambda a: gl._mul(ntt._bit_reverse_rows(a, 5), scale))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_bit_reverse_scaled_rejects_what_it_cannot_permute():
    with pytest.raises(ShapeError, match="power of two"):
        kn.bit_reverse_scaled(jnp.zeros((6, 2), jnp.uint64), np.uint64(1), interpret=True)
    with pytest.raises(ShapeError, match="uint64"):
        kn.bit_reverse_scaled(jnp.zeros((8, 2), jnp.uint32), np.uint64(1), interpret=True)
    with pytest.raises(ShapeError, match="uint64"):
        kn.bit_reverse_scaled(jnp.zeros((8,), jnp.uint64), np.uint64(1), interpret=True)
    with pytest.raises(ValueError, match="lanes must be a power of two"):
        kn.bit_reverse_scaled(jnp.zeros((8, 2), jnp.uint64), np.uint64(1), interpret=True, tiling=kn.Tiling(lanes=48))


def test_dit_shifted_rejects_mismatched_shifts():
    with pytest.raises(ShapeError, match="shifts"):
        kn.dit_shifted(jnp.zeros((8, 2), jnp.uint64), jnp.zeros((4, 2), jnp.uint64), jnp.zeros((4,), jnp.uint64))


def test_the_transform_is_the_ntt_by_definition():
    """Independent of the reference: y_i = sum_k c_k w^(ik) with Python integers."""
    log_n = 4
    c = np.asarray(gl.random(jax.random.PRNGKey(9), (1 << log_n, 2)))
    w = gl.root_of_unity(log_n)
    want = [[sum(int(c[k, j]) * pow(w, i * k, gl.P) for k in range(16)) % gl.P for j in range(2)] for i in range(16)]
    roots = ntt.ntt_tables(log_n).forward
    y = kn.dit(ntt._bit_reverse_rows(jnp.asarray(c), log_n), roots, interpret=True, tiling=SMALL)
    assert np.asarray(y).tolist() == want


@pytest.mark.parametrize("log_n", [0, 1, 5, 12, 22, 23])
@pytest.mark.parametrize("radix", [1, 3, 4, 5])
def test_pass_plan_covers_every_level_once(log_n, radix):
    plan = kn.pass_plan(log_n, radix)
    assert sum(r for _, r in plan) == log_n
    assert all(1 <= r <= radix for _, r in plan)
    assert len(plan) == -(-log_n // radix)
    # strides: each pass starts where the previous one stopped, ending at stride 1
    expect = log_n
    for log_t, r in plan:
        assert log_t == expect - r
        expect = log_t
    assert not plan or plan[-1][0] == 0


@pytest.mark.parametrize("cols", [1, 62, 632])
def test_kernels_lower_to_triton(cols):
    """The Pallas -> Triton lowering (no GPU needed) accepts both directions: no mulhi, no
    uint64 literal >= 2^63, power-of-two value shapes, also under vmap."""
    x = jax.ShapeDtypeStruct((1 << 12, cols), jnp.uint64)
    roots = jax.ShapeDtypeStruct((1 << 11,), jnp.uint64)
    for fn in (kn.dif, kn.dit):
        text = jax.jit(fn).trace(x, roots).lower(lowering_platforms=("cuda",)).as_text()
        assert "triton" in text
    shifts = jax.ShapeDtypeStruct((1 << 12, 4), jnp.uint64)
    text = jax.jit(kn.dit_shifted).trace(x, shifts, roots).lower(lowering_platforms=("cuda",)).as_text()
    assert "ntt_dit_shifted" in text
    xs = jax.ShapeDtypeStruct((3, 1 << 8, cols), jnp.uint64)
    jax.jit(jax.vmap(kn.dif, (0, None))).trace(xs, jax.ShapeDtypeStruct((128,), jnp.uint64)).lower(
        lowering_platforms=("cuda",)
    )
    small = jax.ShapeDtypeStruct((1 << 8, 2), jnp.uint64), jax.ShapeDtypeStruct((128,), jnp.uint64)
    jax.jit(jax.vmap(kn.dit_shifted, (0, None, None))).trace(xs, *small).lower(lowering_platforms=("cuda",))
    scale = jax.ShapeDtypeStruct((), jnp.uint64)
    text = jax.jit(kn.bit_reverse_scaled).trace(x, scale).lower(lowering_platforms=("cuda",)).as_text()
    assert "ntt_bit_reverse_scaled" in text
    jax.jit(jax.vmap(kn.bit_reverse_scaled, (0, None))).trace(xs, scale).lower(lowering_platforms=("cuda",))


def test_lde_paths_agree_in_the_interpreter(monkeypatch):
    """With the posture forced to ``interpret`` the LDE entry points take the kernel path
    (bit-reversed coefficients, no permutation of the LDE) and still match the jnp path."""
    x = gl.random(jax.random.PRNGKey(3), (1 << 5, 3))
    tables = lde.lde_tables(5, 4)
    fns = {
        "lde": lambda a, t: lde._lde_core(a, t),
        "evaluate": lambda a, t: lde._evaluate_core(a, t),
        "both": lambda a, t: lde._interpolate_extend(a, t),
        "ntt": lambda a, t: ntt._ntt_core(a, t.ntt),
        "intt": lambda a, t: ntt._intt_core(a, t.ntt),
    }
    want = {k: jax.jit(f)(x, tables) for k, f in fns.items()}
    monkeypatch.setattr(kernels, "MODE", "interpret")
    for k, f in fns.items():
        # a new function object, so traced again, now with kernels (jit caches traces by the
        # function: jax.jit(f) of the same f would return the jnp trace)
        got = jax.jit(lambda a, t, f=f: f(a, t))(x, tables)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want[k]), strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=k)


def test_the_cpu_lowering_never_contains_a_kernel():
    x = jax.ShapeDtypeStruct((1 << 10, 4), jnp.uint64)
    text = jax.jit(lde._lde_core).lower(x, lde.lde_tables(10, 2)).as_text()
    assert "triton" not in text


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "cols", "blowup"), [(20, 64, 2), (18, 62, 4), (16, 316, 2)])
def test_kernels_match_the_cpu_at_full_size(log_n, cols, blowup):
    cpu, gpu = jax.devices("cpu")[0], jax.devices("gpu")[0]
    x = np.asarray(gl.random(jax.random.PRNGKey(log_n), (1 << log_n, cols)))
    out = {}
    for dev in (cpu, gpu):
        with jax.default_device(dev):
            a = jax.device_put(x, dev)
            out[dev.platform] = [np.asarray(v) for v in (ntt.ntt(a), ntt.intt(a), lde.coset_lde(a, blowup))]
    for a, b in zip(out["cpu"], out["gpu"], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "cols", "blowup"), [(22, 64, 2), (16, 316, 4)])
def test_dit_shifted_matches_dit_of_the_copies_on_a_gpu(log_n, cols, blowup):
    """The compiled kernels (masked and int32-indexed paths included; the 2^22 case writes 4 GiB)
    against the compiled plain DIT of the explicit copies."""
    gpu = jax.devices("gpu")[0]
    with jax.default_device(gpu):
        key = jax.random.PRNGKey(log_n)
        x = gl.random(key, (1 << log_n, cols))
        shifts = gl.random(jax.random.fold_in(key, 1), (1 << log_n, blowup))
        roots = ntt.ntt_tables(log_n).forward
        got = jax.jit(kn.dit_shifted)(x, shifts, roots)
        want = jax.jit(lambda a, s, w: kn.dit(gl._mul(a[:, None, :], s[:, :, None]), w))(x, shifts, roots)
        mismatched = int(jnp.sum(got != want))
    assert mismatched == 0, f"{mismatched} of {got.size} values differ"


@pytest.mark.gpu
@pytest.mark.parametrize(("log_n", "cols"), [(3, 1), (5, 13), (6, 4), (20, 13), (16, 316), (22, 520)])
def test_bit_reverse_scaled_matches_the_permutation_on_a_gpu(log_n, cols):
    """Compiled, in place (the interpreter writes to a copy, so only the compiled kernel shows a
    race): small tables whose rows and partners share a program, masked column blocks (13, 316
    columns) and 64-bit addresses (2^22 x 520 is more than 2^31 words). Each value is its own
    index, so the expected row ``i`` (row ``rev(i)`` times the scale) is formed inside the
    comparison: the card holds the input and the output (16.25 GiB each at the largest)."""
    gpu = jax.devices("gpu")[0]
    n = 1 << log_n
    with jax.default_device(gpu):
        x = jax.lax.iota(jnp.uint64, n * cols).reshape(n, cols)
        got = jax.jit(kn.bit_reverse_scaled)(x, np.uint64(3))
        del x
        rev = ntt._bit_reverse_iota(log_n).astype(jnp.uint64)[:, None]
        want = lambda: (rev * np.uint64(cols) + jnp.arange(cols, dtype=jnp.uint64)[None, :]) * np.uint64(3)  # noqa: E731
        mismatched = int(jax.jit(lambda g: jnp.sum(g != want()))(got))
    assert mismatched == 0, f"{mismatched} of {n * cols} values differ"
