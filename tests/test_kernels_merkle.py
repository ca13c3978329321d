"""The Pallas Merkle builder (:mod:`jaxstark.kernels.merkle`) and the element-wise BLAKE3
(:mod:`jaxstark.kernels.blake3`) against the ``jnp`` builder and hash, bit for bit.

On a CPU the kernels run in Pallas' interpreter at small sizes (tilings shrunk so that a build
has several programs per kernel and masked lanes in its upper passes), and the Pallas -> Triton
lowering -- which needs no GPU -- is checked for the shapes the prover uses. The ``gpu`` tests
compare the compiled kernels with the reference at full size.
"""

import dataclasses
import functools
import re

import chex
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark import gl, kernels, lde, merkle
from jaxstark.hash.encoding import bytes_to_words, words_to_bytes
from jaxstark.hash.interface import get_hash
from jaxstark.kernels import field_ptx
from jaxstark.kernels import merkle as km
from jaxstark.kernels.blake3 import BLAKE3, Blake3KernelHash
from jaxstark.kernels.poseidon2 import Poseidon2KernelHash
from tests.reference import REFERENCE_HASHES, merkle_root
from tests.test_kernels_hashes import PTX_ADD, PTX_MUL


@pytest.fixture(autouse=True)
def _lowering_for_cuda_without_a_gpu(monkeypatch):
    """These tests lower for CUDA on any machine (``lowering_platforms=("cuda",)``). The default
    posture traces the kernels only in a process with a CUDA backend; here they are traced as
    if it had one."""
    monkeypatch.setattr(kernels, "_has_cuda", lambda: True)
    jax.clear_caches()  # no trace made under the other answer is reused
    yield
    jax.clear_caches()


P = 2**64 - 2**32 + 1
RNG = np.random.default_rng(20261201)
SMALL = km.Tiling(leaf_block=8, tree_block=4, max_levels=2)  # several programs, masked upper passes


def _rows(n: int, width: int) -> np.ndarray:
    """Random canonical rows with the edge values 0, 1, p - 1 and 2^32 mixed in."""
    rows = RNG.integers(0, 2**64, (n, width), dtype=np.uint64)
    rows = np.where(rows >= np.uint64(P), rows - np.uint64(P), rows)
    edges = np.array([0, 1, P - 1, 2**32], dtype=np.uint64)
    return np.where(RNG.random((n, width)) < 0.2, edges[RNG.integers(0, 4, (n, width))], rows)


def _reference(matrix) -> np.ndarray:
    return np.asarray(jax.jit(merkle._reference_build, static_argnums=1)(jnp.asarray(matrix), "blake3"))


def _kernel_build(tiling: km.Tiling, hash_name: str = "blake3"):
    return jax.jit(lambda m: km.build_nodes(m, hash_name, interpret=True, tiling=tiling))


# --- the element-wise BLAKE3 ----------------------------------------------------------------


def test_blake3_leaf_as_plain_jnp_matches_the_hash_and_the_package():
    """Widths around the block (8 columns) and chunk (128 columns) edges, ragged and multi-chunk
    (316 columns = 3 chunks), in one compiled program."""
    widths = [1, 5, 8, 62, 128, 129, 316]
    rows = [jnp.asarray(_rows(4, w)) for w in widths]
    got = jax.jit(lambda *rs: [jnp.stack(BLAKE3.leaf(lambda j, r=r: r[:, j], r.shape[1]), -1) for r in rs])(*rows)
    leaf, _, _ = REFERENCE_HASHES["blake3"]
    for w, r, g in zip(widths, rows, got, strict=True):
        chex.assert_shape(g, (4, 4))
        want = np.asarray(get_hash("blake3").hash_rows(r))
        np.testing.assert_array_equal(np.asarray(words_to_bytes(g)), want, err_msg=f"width {w}")
        assert bytes(np.asarray(words_to_bytes(g))[0]) == leaf(np.asarray(r)[0].tolist())


def test_blake3_compress_matches_the_hash():
    """Looped rounds under jit; unrolled rounds op by op (XLA compiles them very slowly). The
    node is the keyed hash (the blake3 package's ``key=`` mode), not the plain one."""
    left, right = (jnp.asarray(RNG.integers(0, 2**64, (8, 4), dtype=np.uint64)) for _ in range(2))
    want = bytes_to_words(get_hash("blake3").compress(words_to_bytes(left), words_to_bytes(right)), jnp.uint64)
    _, node, plain = REFERENCE_HASHES["blake3"]
    pairs = zip(np.asarray(words_to_bytes(left)), np.asarray(words_to_bytes(right)), np.asarray(want), strict=True)
    for a, b, w in pairs:
        assert w.astype("<u8").tobytes() == node(a.tobytes(), b.tobytes()) != plain(a.tobytes() + b.tobytes())
    got = jax.jit(lambda a, b: jnp.stack(BLAKE3.compress(tuple(a.T), tuple(b.T)), -1))(left, right)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with jax.disable_jit():
        got = jnp.stack(Blake3KernelHash(unroll=True).compress(tuple(left.T), tuple(right.T)), -1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_blake3_unrolled_leaf_matches_op_by_op():
    """The unrolled rounds (compiled kernels only; XLA compiles them slowly) op by op: with jit
    disabled the block loop runs in Python too. Two chunks, the second one ragged."""
    rows = jnp.asarray(_rows(2, 130))
    with jax.disable_jit():
        got = Blake3KernelHash(unroll=True).leaf(lambda j: rows[:, j], 130)
    want = get_hash("blake3").hash_rows(rows)
    np.testing.assert_array_equal(np.asarray(words_to_bytes(jnp.stack(got, -1))), np.asarray(want))


def test_blake3_interface_and_errors():
    assert BLAKE3.name == "blake3" and BLAKE3 == Blake3KernelHash(unroll=False)
    assert hash(dataclasses.replace(BLAKE3, unroll=True)) == hash(Blake3KernelHash(unroll=True))
    with pytest.raises(ValueError, match="width must be >= 1"):
        BLAKE3.leaf(lambda j: jnp.zeros(4, jnp.uint64), 0)
    with pytest.raises(ValueError, match="four uint64"):
        BLAKE3.compress((jnp.zeros(4, jnp.uint64),) * 3, (jnp.zeros(4, jnp.uint64),) * 4)


# --- the builder in the interpreter ---------------------------------------------------------


@pytest.mark.parametrize("width", [1, 5, 62, 130])
def test_leaf_kernel_matches_hash_rows(width):
    rows = _rows(32, width)
    buf = jax.jit(lambda r: km.leaf_digests(r, BLAKE3, interpret=True, tiling=SMALL))(jnp.asarray(rows))
    chex.assert_shape(buf, (64, 4))
    want = get_hash("blake3").hash_rows(jnp.asarray(rows))
    np.testing.assert_array_equal(np.asarray(words_to_bytes(buf[32:])), np.asarray(want))


@pytest.mark.parametrize(
    ("log_n", "width"), [(0, 1), (1, 5), (2, 3), (3, 62), (5, 130), (8, 5), (4, 316)], ids=lambda v: str(v)
)
def test_build_matches_the_reference(log_n, width):
    m = _rows(1 << log_n, width)
    got = np.asarray(_kernel_build(SMALL)(jnp.asarray(m)))
    chex.assert_shape(got, (2 << log_n, 32))
    np.testing.assert_array_equal(got, _reference(m))


def test_build_with_the_default_blake3_tiling_and_extension_columns():
    """Three fused levels per pass (7 compressions per tree kernel), then one pass of two levels:
    2^5 leaves of 4 extension columns (12 elements each, flattened coordinate by coordinate)."""
    m = np.stack([_rows(32, 4) for _ in range(3)], axis=-1)
    assert km.pass_plan(5, km.TILINGS["blake3"].max_levels) == [3, 2]
    got = np.asarray(jax.jit(lambda x: km.build_nodes(x, "blake3", interpret=True))(jnp.asarray(m)))
    np.testing.assert_array_equal(got, _reference(m))
    assert bytes(got[1]) == merkle.commit(jnp.asarray(m.reshape(32, 12)), "blake3").root.tobytes()
    assert bytes(got[1]) == merkle_root(m.reshape(32, 12).tolist(), "blake3")


@pytest.mark.parametrize("log_n", [0, 3, 6])
def test_build_under_vmap(log_n):
    """Rounds prove row chunks as ``vmap(_build)``: the batch becomes a grid axis."""
    stack = np.stack([_rows(1 << log_n, 5) for _ in range(3)])
    got = jax.jit(jax.vmap(lambda m: km.build_nodes(m, "blake3", interpret=True, tiling=SMALL)))(jnp.asarray(stack))
    want = jax.vmap(lambda m: merkle._reference_build(m, "blake3"))(jnp.asarray(stack))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["keccak256", "poseidon2"])
def test_other_kernel_hashes_build_the_reference_tree(name):
    """The builder is generic: the other hashes' element-wise forms, when present."""
    if km.kernel_hash(name) is None:
        pytest.skip(f"no kernel form of {name}")
    m = _rows(8, 9)
    got = jax.jit(lambda x: km.build_nodes(x, name, interpret=True, tiling=SMALL))(jnp.asarray(m))
    want = jax.jit(merkle._reference_build, static_argnums=1)(jnp.asarray(m), name)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert bytes(np.asarray(got)[1]) == merkle_root(m.tolist(), name)


def test_the_tiling_sets_poseidon2s_field_form_in_compiled_kernels_only():
    """``Tiling.ptx`` (``"mul"`` by default) reaches a compiled kernel's Poseidon2; the interpreter's
    runs the jnp functions whatever the tiling or the hash says; BLAKE3 has no such field."""
    h = km.kernel_hash("poseidon2")
    assert km.Tiling().ptx == "mul" and km.TILINGS["poseidon2"].ptx == "mul" and h.ptx is False
    for ptx in field_ptx.PTX_FORMS:
        tiling = km.TILINGS["poseidon2"]._replace(ptx=ptx, unroll=True)
        compiled = km._compiled_form(h, False, tiling)
        assert compiled == Poseidon2KernelHash(unroll=True, ptx=ptx)
        assert compiled.ops == field_ptx.ops(interpret=False, use_ptx=ptx)
        assert km._compiled_form(h, True, tiling) is h
        assert km._compiled_form(Poseidon2KernelHash(ptx=ptx), True, tiling) == h
    assert km._compiled_form(BLAKE3, False, km.Tiling(ptx="mul")) == dataclasses.replace(BLAKE3, unroll=False)


@pytest.mark.parametrize("ptx", [True])  # the default "mul" is the same path (_compiled_form's test)
def test_interpreted_poseidon2_kernels_ignore_the_ptx_form(ptx):
    """A tiling or a hash asking for PTX still builds the reference tree in the interpreter."""
    m = jnp.asarray(_rows(8, 9))
    tiling = SMALL._replace(ptx=ptx)
    buf = jax.jit(lambda r: km.leaf_digests(r, Poseidon2KernelHash(ptx=ptx), interpret=True, tiling=tiling))(m)
    np.testing.assert_array_equal(np.asarray(words_to_bytes(buf[8:])), np.asarray(get_hash("poseidon2").hash_rows(m)))
    got = jax.jit(lambda x: km.build_nodes(x, "poseidon2", interpret=True, tiling=tiling))(m)
    want = jax.jit(merkle._reference_build, static_argnums=1)(m, "poseidon2")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_commit_takes_the_kernels_in_the_interpret_posture(monkeypatch):
    m = jnp.asarray(_rows(16, 7))
    want = merkle.commit(m, "blake3").nodes
    monkeypatch.setattr(kernels, "MODE", "interpret")
    got = jax.jit(lambda x: merkle._build.__wrapped__(x, "blake3"))(m)  # traced again, past _build's cache
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _subtree_rows(log_n: int, shift: int) -> np.ndarray:
    """The heap rows of node ``2^shift``'s subtree in a tree of ``2^log_n`` leaves."""
    return np.concatenate([np.arange(1 << l, (1 << l) + (1 << (l - shift))) for l in range(shift, log_n + 1)])


@pytest.mark.parametrize(("log_n", "shift"), [(6, 0), (6, 3), (7, 5), (5, 5), (8, 2), (7, 1), (7, 2)], ids=str)
def test_build_of_a_leftmost_subtree(log_n, shift):
    """``live_shift``: the subtree of node ``2^shift`` equals the full tree's there, and the
    leaves past it are not hashed (SMALL's 8-row leaf blocks: past the subtree's rows, whole
    blocks are skipped)."""
    m = _rows(1 << log_n, 5)
    build = jax.jit(lambda x, s: km.build_nodes(x, "blake3", interpret=True, tiling=SMALL, live_shift=s))
    got = np.asarray(build(jnp.asarray(m), jnp.int32(shift)))
    want = _reference(m)
    rows = _subtree_rows(log_n, shift)
    np.testing.assert_array_equal(got[rows], want[rows])
    if (1 << log_n) >> shift <= (1 << log_n) - SMALL.leaf_block:  # the last leaf block is past the subtree
        assert not np.array_equal(got[-1], want[-1]), "the leaves past the subtree were hashed"


def test_fri_small_layers_with_the_kernels_equal_the_jnp_ones(monkeypatch):
    """The FRI scan (every layer padded to the first's size) with the kernels, which build only
    each layer's real tree (``merkle._build``'s ``live_shift``) and do only its rows' fold and
    copies (:mod:`jaxstark.kernels.fri_scan`), gives the ``jnp`` scan's leaves, trees, final
    polynomial and transcript, bit for bit."""
    from jaxstark.kernels import fri_scan
    from jaxstark.rounds import r4_fri_final, r4_fri_layer
    from jaxstark.transcript import Transcript

    f = gl.random(jax.random.PRNGKey(3), (64, 3))
    steps = r4_fri_layer.fri_step(7, [0, 1, 2, 3])
    shift_inv = jnp.uint64(pow(pow(7, 16, P), P - 2, P))

    def run():
        fn = jax.jit(r4_fri_final.fri_final.__wrapped__, static_argnames=("hash_name", "degree"))
        return fn(f, Transcript.new("t"), steps, shift_inv, hash_name="blake3", degree=2)

    want = run()
    monkeypatch.setattr(kernels, "MODE", "interpret")
    monkeypatch.setitem(km.TILINGS, "blake3", SMALL)  # several leaf blocks: some skipped
    monkeypatch.setattr(fri_scan, "TILING", fri_scan.Tiling(block=4))  # the row work's programs too
    if kernels._LOWERING is None:  # a JAX without user contexts: drop the jnp run's traces
        jax.clear_caches()
    with kernels.lowering_for("cpu"):  # a context of its own: no trace of the jnp run is reused
        got = run()
    assert len(got[0].nodes) == 4
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# --- plans, registry, lowering --------------------------------------------------------------


def test_pass_plan_covers_every_level():
    for log_n in range(0, 30):
        for depth in (1, 2, 3, 4, 5):
            plan = km.pass_plan(log_n, depth)
            assert sum(plan) == log_n and all(1 <= r <= depth for r in plan)
            assert plan[:-1] == [depth] * (len(plan) - 1)


def test_kernel_hash_registry():
    assert km.kernel_hash("blake3") is BLAKE3
    for name in ("keccak256", "poseidon2"):
        h = km.kernel_hash(name)
        assert h is None or h.name == name
    with pytest.raises(ValueError, match="unknown hash"):
        km.kernel_hash("sha256")


@pytest.mark.parametrize(("shape", "batch"), [((1, 1), ()), ((2, 5), ()), ((1 << 10, 62), ()), ((1 << 8, 316), (3,))])
def test_triton_lowering_succeeds(shape, batch, monkeypatch):
    """Lowering for CUDA runs Pallas' Triton lowering on any machine: no uint64 literal >= 2^63,
    no unsupported primitive, power-of-two value shapes; also for ``merkle._build`` under vmap,
    where the platform switch picks the kernels (the default posture)."""
    monkeypatch.setattr(kernels, "MODE", "auto")
    jax.clear_caches()  # _build's trace under another posture must not be reused
    x = jax.ShapeDtypeStruct((*batch, *shape), jnp.uint64)
    build = lambda m: merkle._build(m, "blake3")  # noqa: E731
    fn = jax.vmap(build) if batch else build
    text = jax.jit(fn).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert "merkle_leaves_blake3" in text
    assert ("merkle_tree_blake3" in text) == (shape[0] > 1)
    assert "triton" not in jax.jit(fn).trace(x).lower(lowering_platforms=("cpu",)).as_text()


def test_triton_lowering_of_a_leftmost_subtree(monkeypatch):
    """The kernels with a traced ``live_shift`` (the FRI scan's) lower for CUDA too."""
    monkeypatch.setattr(kernels, "MODE", "auto")
    jax.clear_caches()
    x = jax.ShapeDtypeStruct((1 << 10, 6), jnp.uint64)
    s = jax.ShapeDtypeStruct((), jnp.int32)
    text = jax.jit(lambda m, k: merkle._build(m, "blake3", k)).trace(x, s).lower(lowering_platforms=("cuda",))
    assert "merkle_tree_blake3" in text.as_text()


def test_lowering_for_cuda_does_not_search_for_the_triton_dialect_module(monkeypatch):
    """MLIR's bindings look up the ``tt`` dialect's module whenever they type a value; the
    kernels name it once (``kernels._name_triton_dialect_module``), so lowering a tree does not
    search ``sys.path`` for it again and again."""
    import sys

    searched = []

    class Spy:
        def find_spec(self, name, path=None, target=None):
            searched.append(name)

    monkeypatch.setattr(kernels, "MODE", "auto")
    jax.clear_caches()
    monkeypatch.setattr(sys, "meta_path", [Spy(), *sys.meta_path])
    x = jax.ShapeDtypeStruct((1 << 8, 6), jnp.uint64)
    jax.jit(lambda m: merkle._build(m, "blake3")).trace(x).lower(lowering_platforms=("cuda",))
    assert searched.count("jaxlib.mlir.dialects.tt") <= 1, searched.count("jaxlib.mlir.dialects.tt")


def test_a_trace_for_one_platform_holds_only_its_branch(monkeypatch):
    """Under ``kernels.lowering_for(p)`` a switch traces only the branch ``p`` runs (no
    ``platform_dependent``): the kernel for CUDA, the ``jnp`` twin for the CPU. The platform is
    part of jit's cache key: a jitted function traced for one is traced again for the other, and
    outside any context both branches come back."""
    monkeypatch.setattr(kernels, "MODE", "auto")
    jax.clear_caches()
    build = jax.jit(lambda m: merkle._build(m, "blake3"))
    x = jax.ShapeDtypeStruct((1 << 6, 8), jnp.uint64)

    def jaxpr(platform):
        with kernels.lowering_for(platform):
            return str(jax.make_jaxpr(build)(x))

    cuda, cpu, anywhere = jaxpr("cuda"), jaxpr("cpu"), jaxpr(None)
    assert "pallas_call" in cuda and "platform_index" not in cuda
    assert "pallas_call" not in cpu and "platform_index" not in cpu
    assert "pallas_call" in anywhere and "platform_index" in anywhere
    assert jaxpr("cuda") == cuda and "pallas_call" not in jaxpr("cpu")  # each its own cache entry
    with kernels.lowering_for("cuda"):
        text = build.trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert "merkle_leaves_blake3" in text
    with kernels.lowering_for("cpu"):
        assert "triton" not in build.trace(x).lower(lowering_platforms=("cpu",)).as_text()


@pytest.mark.parametrize("mode", ["auto", "jnp"])
def test_the_posture_decides_tree_and_ntt_kernels_together(mode, monkeypatch):
    """``auto`` lowers both the tree and the LDE to kernels for CUDA; ``jnp`` neither."""
    monkeypatch.setattr(kernels, "MODE", mode)
    jax.clear_caches()
    x = jax.ShapeDtypeStruct((1 << 10, 8), jnp.uint64)
    text = jax.jit(lambda m: merkle._build(m, "blake3")).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert ("merkle_leaves_blake3" in text) == (mode == "auto")
    tables = lde.lde_tables(10, 2)
    text = jax.jit(lde._lde_core).trace(x, tables).lower(lowering_platforms=("cuda",))
    assert ("triton" in text.as_text()) == (mode == "auto")


@pytest.mark.parametrize("unroll", [False, True], ids=["rolled", "unrolled"])
# ptx=False lowers the jnp form, which test_kernels_hashes' lowering tests cover
@pytest.mark.parametrize("ptx", [True, "mul"], ids=str)
def test_poseidon2_kernels_lower_in_every_field_form(ptx, unroll):
    """The leaf kernel and the tree kernels lower for CUDA with Poseidon2's field in each form:
    every kernel's Triton program holds the PTX product iff ``ptx``, the PTX add iff ``ptx is
    True`` (and no literal >= 2^63: the lowering would crash). The interpreter's lowering holds
    no PTX."""
    x = jax.ShapeDtypeStruct((1 << 10, 62), jnp.uint64)
    tiling = km.TILINGS["poseidon2"]._replace(ptx=ptx, unroll=unroll, max_levels=3)  # passes of 3 levels, then 1
    text = jax.jit(lambda m: km.build_nodes(m, "poseidon2", tiling=tiling)).trace(x).lower(lowering_platforms=("cuda",))
    text = text.as_text()
    assert all(f"merkle_{k}" in text for k in ("leaves_poseidon2", "tree_poseidon2_r3", "tree_poseidon2_r1"))
    kernels_ir = re.findall(r'ir = "(.*?)", ', text)
    assert len(kernels_ir) == 3
    for ir in kernels_ir:
        assert (PTX_MUL in ir, PTX_ADD in ir) == (bool(ptx), ptx is True)
    x = jax.ShapeDtypeStruct((1 << 4, 9), jnp.uint64)
    text = jax.jit(lambda m: km.build_nodes(m, "poseidon2", interpret=True, tiling=tiling)).trace(x)
    assert PTX_MUL not in text.lower(lowering_platforms=("cpu",)).as_text()


def _triton_ir_chars(fn, x) -> int:
    text = jax.jit(fn).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    kernels_ir = re.findall(r'ir = "(.*?)", ', text)
    assert kernels_ir
    return sum(len(k) for k in kernels_ir)


def test_rolled_rounds_make_a_shorter_kernel():
    """``Tiling(unroll=False)`` keeps the hash's rounds a loop inside a compiled kernel: the
    Triton program handed to the GPU compiler is a fraction of the unrolled one's length."""
    x = jax.ShapeDtypeStruct((1 << 10, 62), jnp.uint64)
    tilings = {unroll: km.TILINGS["blake3"]._replace(unroll=unroll) for unroll in (False, True)}
    size = {
        u: _triton_ir_chars(functools.partial(km.build_nodes, hash_name="blake3", tiling=t), x)
        for u, t in tilings.items()
    }
    assert size[False] * 2 < size[True], size


CALLS = ("jit", "pjit")  # the primitive of a jitted call, by JAX version


def _eqns(jaxpr):
    """Every equation of ``jaxpr`` and of the sub-jaxprs of its control flow (not of calls)."""
    for e in jaxpr.eqns:
        yield e
        for v in e.params.values():
            for sub in v if isinstance(v, tuple) else (v,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr) and e.primitive.name not in CALLS:
                    yield from _eqns(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield from _eqns(sub)


def test_tree_kernel_traces_its_compression_once():
    """Every CPU build traces the kernel branch of the platform switch too: the ``2^r - 1``
    compressions of a tree kernel are calls of one traced function, so that stays cheap."""
    x = jax.ShapeDtypeStruct((1 << 10, 62), jnp.uint64)
    closed = jax.make_jaxpr(lambda m: km.build_nodes(m, "blake3", tiling=km.Tiling(max_levels=5)))(x)
    trees = [e for e in _eqns(closed.jaxpr) if e.primitive.name == "pallas_call" and "tree" in str(e.params["name"])]
    assert len(trees) == 1
    calls = [e for e in _eqns(trees[0].params["jaxpr"]) if e.primitive.name in CALLS]
    assert len(calls) == 31 and len({id(e.params["jaxpr"]) for e in calls}) == 1


# --- on a GPU -------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["blake3", "keccak256", "poseidon2"])
@pytest.mark.parametrize(("log_n", "width"), [(20, 62), (18, 316), (21, 5)])
def test_kernels_match_the_reference_at_full_size(name, log_n, width):
    if km.kernel_hash(name) is None:
        pytest.skip(f"no kernel form of {name}")
    m = gl.random(jax.random.PRNGKey(log_n * 1000 + width), (1 << log_n, width))
    got = jax.jit(functools.partial(km.build_nodes, hash_name=name, interpret=False))(m)  # the kernels themselves
    want = jax.jit(merkle._reference_build, static_argnums=1)(m, name)
    assert bool(jnp.array_equal(got, want))
    small = np.asarray(m[:64])
    with jax.default_device(jax.devices("cpu")[0]):
        cpu_root = merkle.commit(jnp.asarray(small), name).root
    assert np.array_equal(np.asarray(merkle.commit(jnp.asarray(small), name).root), np.asarray(cpu_root))


@pytest.mark.gpu
def test_kernels_under_vmap_on_the_gpu():
    stack = gl.random(jax.random.PRNGKey(7), (4, 1 << 16, 62))
    got = jax.jit(jax.vmap(functools.partial(km.build_nodes, hash_name="blake3", interpret=False)))(stack)
    want = jax.jit(jax.vmap(lambda m: merkle._reference_build(m, "blake3")))(stack)
    assert bool(jnp.array_equal(got, want))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["blake3", "keccak256", "poseidon2"])
@pytest.mark.parametrize("width", [1, 8, 16, 62, 128, 316])
@pytest.mark.parametrize("unroll", [False, True], ids=["rolled", "unrolled"])
def test_compiled_leaf_kernel_equals_hash_rows(name, width, unroll):
    """The leaf kernel alone, compiled, per width (one block, ragged blocks, whole and several
    chunks for BLAKE3): a wrong leaf hash shows here, apart from the tree passes."""
    h = km.kernel_hash(name)
    tiling = km.TILINGS[name]._replace(unroll=unroll)
    m = gl.random(jax.random.PRNGKey(width), (1 << 10, width))
    buf = jax.jit(lambda r: km.leaf_digests(r, h, tiling=tiling))(m)
    want = get_hash(name).hash_rows(m)
    np.testing.assert_array_equal(np.asarray(words_to_bytes(buf[1 << 10 :])), np.asarray(want))


@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [False, True], ids=["rolled", "unrolled"])
@pytest.mark.parametrize("ptx", field_ptx.PTX_FORMS, ids=str)
def test_compiled_poseidon2_kernels_in_every_field_form(ptx, unroll):
    """Poseidon2's leaf kernel (one ragged chunk; several chunks, the last ragged) and a tree
    (passes of two levels, then one), compiled with each field form, against the jnp hash and
    builder, and a small tree's root against the Python reference."""
    h = km.kernel_hash("poseidon2")
    tiling = km.TILINGS["poseidon2"]._replace(ptx=ptx, unroll=unroll, max_levels=2)
    for width in (5, 62):
        m = gl.random(jax.random.PRNGKey(width), (1 << 10, width))
        buf = jax.jit(lambda r: km.leaf_digests(r, h, tiling=tiling))(m)
        want = get_hash("poseidon2").hash_rows(m)
        np.testing.assert_array_equal(np.asarray(words_to_bytes(buf[1 << 10 :])), np.asarray(want))
    build = jax.jit(lambda x: km.build_nodes(x, "poseidon2", tiling=tiling))
    m = gl.random(jax.random.PRNGKey(11), (1 << 11, 62))
    want = jax.jit(merkle._reference_build, static_argnums=1)(m, "poseidon2")
    np.testing.assert_array_equal(np.asarray(build(m)), np.asarray(want))
    small = _rows(32, 9)
    assert bytes(np.asarray(build(jnp.asarray(small)))[1]) == merkle_root(small.tolist(), "poseidon2")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["blake3", "keccak256", "poseidon2"])
@pytest.mark.parametrize("levels", [1, 2, 4])
def test_compiled_tree_pass_over_reference_leaves(name, levels):
    """One tree pass, compiled, over leaf digests from the jnp builder: the compression alone."""
    n = 1 << 10
    m = gl.random(jax.random.PRNGKey(levels), (n, 5))
    want = jax.jit(merkle._reference_build, static_argnums=1)(m, name)
    words = jax.lax.bitcast_convert_type(want.reshape(2 * n, 4, 8), jnp.uint64)  # (2n, 4) node words
    nodes = words.at[:n].set(0).reshape(-1)
    h = km.kernel_hash(name)
    out = jax.jit(lambda b: km._tree_pass(b, jnp.int32(n), h, levels, n, False, km.TILINGS[name]))(nodes)
    out = np.asarray(out).reshape(2 * n, 4)
    lo = n >> levels  # the pass wrote heap rows n >> levels .. n - 1
    np.testing.assert_array_equal(out[lo:n], np.asarray(words[lo:n]))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["blake3", "keccak256", "poseidon2"])
@pytest.mark.parametrize("shift", [0, 1, 4, 9])
def test_compiled_kernels_build_a_leftmost_subtree(name, shift):
    """``live_shift`` compiled: the subtree of node ``2^shift`` is the full tree's, and the
    leaves past it are not hashed."""
    if km.kernel_hash(name) is None:
        pytest.skip(f"no kernel form of {name}")
    log_n = 12
    m = gl.random(jax.random.PRNGKey(shift), (1 << log_n, 6))
    got = np.asarray(jax.jit(lambda x, s: km.build_nodes(x, name, live_shift=s))(m, jnp.int32(shift)))
    want = np.asarray(jax.jit(merkle._reference_build, static_argnums=1)(m, name))
    rows = _subtree_rows(log_n, shift)
    np.testing.assert_array_equal(got[rows], want[rows])
