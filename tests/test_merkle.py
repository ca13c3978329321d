"""The Merkle tree builder against a textbook tree built with the reference hashes."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark import gl, merkle
from jaxstark.errors import NonCanonicalError, ShapeError
from jaxstark.hash.interface import HASHES
from tests.reference import REFERENCE_HASHES, merkle_nodes, merkle_root

SHAPES = [(1, 1), (2, 3), (8, 400), (64, 7), (1024, 2), (4096, 1)]


@pytest.mark.parametrize("name", sorted(HASHES))
@pytest.mark.parametrize("rows, cols", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
def test_root_equals_reference_and_paths_verify(name, rows, cols):
    m = gl.random(jax.random.PRNGKey(rows * 1000 + cols), (rows, cols))
    tree = merkle.commit(m, name)
    chex.assert_shape(tree.nodes, (2 * rows, 32))
    assert bytes(np.asarray(tree.root)) == merkle_root(np.asarray(m).tolist(), name)

    idx = np.unique(np.random.default_rng(rows).integers(0, rows, 16))
    op = merkle.open_rows(tree, m, idx)
    chex.assert_shape(op.paths, (len(idx), tree.log_n, 32))
    np.testing.assert_array_equal(op.rows, np.asarray(m)[idx])
    assert bool(jnp.all(merkle.verify_paths(name, tree.root, tree.log_n, op.indices, op.rows, op.paths)))


@pytest.mark.parametrize("name", sorted(HASHES))
def test_every_node_equals_the_textbook_tree_in_each_phase_of_the_build(name, monkeypatch):
    """With the block lowered to 4, a 64-row tree goes through every phase of the plain-jnp build
    (the leaves a block at a time, the large levels a block of pairs at a time, the top levels
    in one loop over a fixed buffer): every node, not just the root, is the textbook one."""
    monkeypatch.setattr(merkle, "BLOCK", 4)
    m = gl.random(jax.random.PRNGKey(64), (64, 3))
    nodes = np.asarray(jax.jit(merkle._reference_build, static_argnums=1)(m, name))
    assert [bytes(x) for x in nodes] == merkle_nodes(np.asarray(m).tolist(), name)


@pytest.mark.parametrize("name", sorted(HASHES))
def test_tampering_is_rejected(name):
    m = gl.random(jax.random.PRNGKey(9), (256, 5))
    tree = merkle.commit(m, name)
    op = merkle.open_rows(tree, m, np.array([0, 77, 255]))
    v = lambda idx, rows, paths: np.asarray(  # noqa: E731
        merkle.verify_paths(name, tree.root, tree.log_n, idx, rows, paths)
    )
    assert v(op.indices, op.rows, op.paths).all()
    bad_rows = op.rows.at[1, 2].set(gl.add(op.rows[1, 2], np.uint64(1)))
    assert list(v(op.indices, bad_rows, op.paths)) == [True, False, True]
    bad_paths = op.paths.at[2, 4, 0].set(op.paths[2, 4, 0] ^ np.uint8(1))
    assert list(v(op.indices, op.rows, bad_paths)) == [True, True, False]
    bad_idx = jnp.asarray([1, 77, 255])
    assert list(v(bad_idx, op.rows, op.paths)) == [False, True, True]
    out_of_range = jnp.asarray([0, 77, 256])
    assert list(v(out_of_range, op.rows, op.paths)) == [True, True, False]
    other_root = merkle.commit(gl.random(jax.random.PRNGKey(10), (256, 5)), name).root
    assert not np.asarray(merkle.verify_paths(name, other_root, 8, op.indices, op.rows, op.paths)).any()


@pytest.mark.parametrize("name", sorted(HASHES))
def test_an_internal_node_cannot_be_opened_as_a_leaf(name):
    """Two sibling digests are 64 bytes, a row of 8 elements. Presented as the leaf of a tree one
    level shallower, with the root's other child as its path, they must not reach the root: a
    node is not the leaf hash of its children's bytes (domain separation). Under the plain hash
    for both, this opening of a tree of 2 leaves would verify against the 4-leaf root."""
    m = gl.random(jax.random.PRNGKey(11), (4, 8))
    tree = merkle.commit(m, name)
    nodes = np.asarray(tree.nodes)
    fake_row = np.frombuffer(nodes[4].tobytes() + nodes[5].tobytes(), "<u8").astype(np.uint64)  # children of node 2
    fake = jnp.asarray(fake_row[None])
    path = jnp.asarray(nodes[3][None, None])  # node 2's sibling, the path of a depth-1 tree
    assert not bool(merkle.verify_paths(name, tree.root, 1, jnp.asarray([0]), fake, path)[0])
    leaf, node, _ = REFERENCE_HASHES[name]
    assert node(bytes(nodes[4]), bytes(nodes[5])) == bytes(nodes[2])
    assert leaf(fake_row.tolist()) != bytes(nodes[2])
    # the honest opening of leaf 0 still verifies
    op = merkle.open_rows(tree, m, np.array([0]))
    assert bool(merkle.verify_paths(name, tree.root, tree.log_n, op.indices, op.rows, op.paths)[0])


def test_extension_columns_flatten_coordinate_by_coordinate():
    m = gl.random(jax.random.PRNGKey(3), (16, 4, 3))
    assert bytes(np.asarray(merkle.commit(m).root)) == merkle_root(np.asarray(m).reshape(16, 12).tolist(), "blake3")


def test_bad_inputs_are_named():
    with pytest.raises(ShapeError, match="number of rows must be a power of two >= 1, got 12"):
        merkle.commit(jnp.zeros((12, 2), jnp.uint64))
    with pytest.raises(NonCanonicalError):
        merkle.commit(np.full((4, 2), 2**64 - 1, np.uint64))
    m = gl.random(jax.random.PRNGKey(3), (16, 2))
    tree = merkle.commit(m)
    with pytest.raises(ShapeError, match="indices must lie in"):
        merkle.open_rows(tree, m, np.array([16]))
    with pytest.raises(ShapeError, match="inconsistent shapes"):
        merkle.verify_paths("blake3", tree.root, 4, jnp.zeros((2,), jnp.int32), m[:2], jnp.zeros((2, 3, 32), jnp.uint8))


def test_tree_is_deterministic_and_jittable():
    m = gl.random(jax.random.PRNGKey(4), (128, 9))
    a = merkle.commit(m)
    b = jax.jit(lambda x: merkle.commit(x).nodes)(m)
    np.testing.assert_array_equal(a.nodes, b)
