"""A scanned FRI step's row work (jaxstark.kernels.fri_scan) against its jnp twin
(r4_fri_final._place_jnp) on random inputs, in the rows a proof reads, bit for bit: in Pallas'
interpreter on the CPU over several programs and every layer height, through the Triton
lowering (no GPU needed), and compiled on a GPU at full size. The twin itself is held to
unrolled layers by tests/test_rounds.py and to whole proofs by the proof digests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.kernels import fri_scan
from jaxstark.rounds import r4_fri_final


def _inputs(half: int, h: int, seed: int):
    """One step's arguments for a layer of ``h`` leaf rows in buffers of ``half`` (random
    leaves, table, tree and buffers: the row work reads them as opaque words)."""
    key = jax.random.PRNGKey(seed)
    k = jax.random.split(key, 6)
    shift = (half // h).bit_length() - 1
    leaf_off, node_off = 5 + half // 2, 3 + half  # any rows with a buffer's room after them
    ints = jnp.array([h, shift, leaf_off, node_off], jnp.int32)
    words = jnp.concatenate([gl.random(k[0], (1,)), fext.random(k[1], ())])
    row = np.arange(2 * half)
    level_start = jnp.asarray(np.where(row > 0, 1 << np.floor(np.log2(np.maximum(row, 1))).astype(int), 1), jnp.int32)
    words_of = lambda key, shape: jax.random.bits(key, shape, jnp.uint64)  # noqa: E731
    return (
        ints, words, gl.random(k[2], (half, 6)), gl.random(k[3], (half,)), level_start,
        words_of(k[4], (2 * half, 4)), gl.random(k[5], (leaf_off + half, 6)),
        words_of(jax.random.fold_in(key, 7), (node_off + 2 * half, 4)),
    )  # fmt: skip


def _read_rows(args, out):
    """What a proof reads of a step's outputs: the next leaves' ``h'`` rows (one row's first
    three words where ``h = 1``), the same rows of the leaf buffer at its offset, the node
    buffer's ``2h`` rows at its offset; and every buffer row before the offsets (untouched)."""
    h, _, leaf_off, node_off = (int(v) for v in args[0])
    nxt, leaf_buf, node_buf = (np.asarray(o) for o in out)
    h2, cols = (h // 2, 6) if h > 1 else (1, 3)
    return (
        nxt[:h2, :cols], leaf_buf[leaf_off : leaf_off + h2, :cols], leaf_buf[:leaf_off],
        node_buf[node_off : node_off + 2 * h], node_buf[:node_off],
    )  # fmt: skip


@pytest.mark.parametrize("half", [1, 2, 8, 64])
def test_the_kernel_is_the_twin_in_the_rows_a_proof_reads(half):
    place = jax.jit(lambda *a: fri_scan.place(*a, interpret=True, tiling=fri_scan.Tiling(block=4)))
    twin = jax.jit(r4_fri_final._place_jnp)
    for j, h in enumerate(1 << np.arange(half.bit_length())):  # every height, 1 .. half
        args = _inputs(half, int(h), seed=half + j)
        got, want = _read_rows(args, place(*args)), _read_rows(args, twin(*args))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"h = {h}")


def test_the_kernel_leaves_rows_past_the_layer_as_they_were():
    """Programs past the layer's rows write nothing: the leaf buffer past the next layer's
    ``h'`` rows and the node buffer past the layer's ``2h`` keep their words."""
    args = _inputs(64, 8, seed=1)
    _, leaf_buf, node_buf = fri_scan.place(*args, interpret=True, tiling=fri_scan.Tiling(block=4))
    leaf_off, node_off = int(args[0][2]), int(args[0][3])
    np.testing.assert_array_equal(np.asarray(leaf_buf)[leaf_off + 4 :], np.asarray(args[6])[leaf_off + 4 :])
    np.testing.assert_array_equal(np.asarray(node_buf)[node_off + 16 :], np.asarray(args[7])[node_off + 16 :])


def test_bad_shapes_are_refused_by_name():
    args = list(_inputs(8, 4, seed=2))
    with pytest.raises(ValueError, match="fri_scan.place: the block's rows"):
        fri_scan.place(*args, interpret=True, tiling=fri_scan.Tiling(block=3))
    args[2] = args[2][:, :5]
    with pytest.raises(ValueError, match="fri_scan.place: leaves"):
        fri_scan.place(*args, interpret=True)


def test_the_kernel_lowers_to_triton():
    shapes = [jax.ShapeDtypeStruct(np.shape(a), jnp.asarray(a).dtype) for a in _inputs(1 << 10, 1 << 10, seed=3)]
    assert "triton" in jax.jit(fri_scan.place).trace(*shapes).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.gpu
@pytest.mark.parametrize("half", [1 << 20, 4, 2, 1])  # the ALU 2^22 scan's size; blocks of 1-4 rows
def test_the_kernel_matches_the_cpu_on_a_gpu(half):
    gpu, cpu = jax.devices("gpu")[0], jax.devices("cpu")[0]
    for h in sorted({min(v, half) for v in (half, half >> 1, 1 << 9, 1 << 8, 2, 1)} - {0}):
        with jax.default_device(cpu):
            args = [np.asarray(a) for a in _inputs(half, h, seed=h)]
            want = _read_rows(args, jax.jit(r4_fri_final._place_jnp)(*args))
        got = _read_rows(args, fri_scan.place(*(jax.device_put(a, gpu) for a in args)))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"h = {h}")
