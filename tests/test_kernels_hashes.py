"""The element-wise Keccak-256 and Poseidon2 Merkle hashes of :mod:`jaxstark.kernels` against the
package's ``jnp`` hashes, bit for bit: as plain ``jnp``, inside interpret-mode ``pallas_call``\\ s,
and through the Pallas -> Triton lowering (which runs on a CPU-only machine too).

The ``jnp`` hashes are the oracles here; ``tests/test_hashes.py`` holds them to pycryptodome and
the Python Poseidon2 twin. Every form of a kernel hash runs the same functions with different
loops: the default, interpreter-friendly forms (``KECCAK``, ``POSEIDON2``) are checked at every
width, plain and in Pallas' interpreter; the unrolled forms meant for compiled kernels
(``unroll=True``, and Poseidon2's ``"all"``), whose XLA compile is slow, are checked op by op
without ``jit`` on a few widths.

Poseidon2's PTX field forms (``ptx=True`` and ``"mul"``) compute only on a GPU; here their code
path -- the field operations taken from a ``FieldOps``, the multipliers built at run time -- runs
with the PTX functions stood in for by wrapped ``jnp`` ones, and the real PTX reaches the Triton
lowering.
"""

import dataclasses
import functools
import time

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plt

from jaxstark.field import goldilocks as gl
from jaxstark.hash import keccak as jkeccak
from jaxstark.hash import poseidon2 as jposeidon2
from jaxstark.hash.encoding import bytes_to_words, words_to_bytes
from jaxstark.hash.interface import get_hash
from jaxstark.kernels import field_ptx
from jaxstark.kernels import keccak as kkeccak
from jaxstark.kernels import poseidon2 as kposeidon2
from jaxstark.kernels.keccak import KECCAK, KeccakKernelHash
from jaxstark.kernels.poseidon2 import POSEIDON2, Poseidon2KernelHash
from tests.reference import REFERENCE_HASHES

P = 2**64 - 2**32 + 1
RNG = np.random.default_rng(20261130)
WIDTHS = [1, 4, 8, 17, 40, 62]  # 40 and 62: several Keccak blocks and Poseidon2 chunks
NAMES = ["keccak256", "poseidon2"]
KERNEL_HASHES = {"keccak256": KECCAK, "poseidon2": POSEIDON2}
KECCAK_COMPILED = dataclasses.replace(KECCAK, unroll=True)
POSEIDON2_COMPILED = dataclasses.replace(POSEIDON2, unroll=True)
POSEIDON2_UNROLLED = Poseidon2KernelHash(unroll="all")
PTX_ADD, PTX_MUL = "addc.cc.u32 t1, a1, b1", "madc.hi"  # a line of field_ptx's add, and of its product
LANES = 16  # lanes per call: two interpret-mode programs of 8


def _rows(n: int, width: int) -> np.ndarray:
    """Random canonical rows with the edge values 0, 1, p - 1 and 2^32 mixed in."""
    rows = RNG.integers(0, 2**64, (n, width), dtype=np.uint64)
    rows = np.where(rows >= np.uint64(P), rows - np.uint64(P), rows)
    edges = np.array([0, 1, P - 1, 2**32], dtype=np.uint64)
    mask = RNG.random((n, width)) < 0.2
    return np.where(mask, edges[RNG.integers(0, 4, (n, width))], rows)


def _words(n: int) -> np.ndarray:
    """Random digests as words, non-canonical values (>= p) included."""
    words = RNG.integers(0, 2**64, (n, 4), dtype=np.uint64)
    words[0] = [P, P + 1, 2**64 - 1, P - 1]
    return words


def _oracle_leaf(name: str, rows: np.ndarray) -> np.ndarray:
    return np.asarray(bytes_to_words(get_hash(name).hash_rows(jnp.asarray(rows)), jnp.uint64))


ROWS = {width: _rows(LANES, width) for width in WIDTHS}
EXTRA = {width: RNG.integers(0, 2**64, (LANES, 3), dtype=np.uint64) for width in WIDTHS}


@functools.cache
def _oracle_leaves(name: str) -> dict[int, np.ndarray]:
    """The jnp hash of ``ROWS`` at every width, from one compiled program (one per width would
    cost twice the compile time)."""
    h = get_hash(name)
    digests = jax.jit(lambda *rows: [h._hash_rows(r) for r in rows])(*(jnp.asarray(ROWS[w]) for w in WIDTHS))
    return {w: np.asarray(bytes_to_words(d, jnp.uint64)) for w, d in zip(WIDTHS, digests, strict=True)}


def _oracle_compress(name: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    digest = get_hash(name).compress(words_to_bytes(jnp.asarray(left)), words_to_bytes(jnp.asarray(right)))
    return np.asarray(bytes_to_words(digest, jnp.uint64))


def _split(words):
    return tuple(words[:, i] for i in range(words.shape[1]))


def _leaf_plain(h, width: int):
    """The leaf hash as a plain ``jnp`` function of ``uint64[lanes, width]`` rows."""
    return lambda rows: jnp.stack(h.leaf(lambda j: rows[:, j], width), axis=-1)


def _compress_plain(h):
    return lambda left, right: jnp.stack(h.compress(_split(left), _split(right)), axis=-1)


def _leaf_pallas(h, width: int, block: int, interpret: bool):
    """The leaf hash in a ``pallas_call``: one program per ``block`` rows, columns loaded with
    ``x_ref[:, j]``. The input may carry extra columns past ``width`` (never to be read)."""

    def kernel(x_ref, o_ref):
        out = h.leaf(lambda j: x_ref[:, j], width)
        for i in range(4):
            o_ref[:, i] = out[i]

    def call(rows):
        n, cols = rows.shape
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((n, 4), jnp.uint64),
            grid=(n // block,),
            in_specs=[pl.BlockSpec((block, cols), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((block, 4), lambda i: (i, 0)),
            interpret=interpret,
            compiler_params=plt.CompilerParams(num_warps=4, num_stages=1),
        )(rows)

    return call


def _compress_pallas(h, block: int, interpret: bool):
    def kernel(l_ref, r_ref, o_ref):
        out = h.compress(tuple(l_ref[:, i] for i in range(4)), tuple(r_ref[:, i] for i in range(4)))
        for i in range(4):
            o_ref[:, i] = out[i]

    def call(left, right):
        n = left.shape[0]
        spec = pl.BlockSpec((block, 4), lambda i: (i, 0))
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((n, 4), jnp.uint64),
            grid=(n // block,),
            in_specs=[spec, spec],
            out_specs=spec,
            interpret=interpret,
            compiler_params=plt.CompilerParams(num_warps=4, num_stages=1),
        )(left, right)

    return call


def _assert_words_equal(got, want, what: str):
    got = np.asarray(got)
    chex.assert_shape(got, want.shape)
    assert got.dtype == np.uint64, what
    bad = np.flatnonzero((got != want).any(axis=-1))
    assert bad.size == 0, f"{what}: lanes {bad.tolist()} differ"


# --- the default forms at every width: plain jnp and Pallas' interpreter ------------------------


@pytest.mark.parametrize("name", NAMES)
def test_leaf_as_plain_jnp_matches_the_jnp_hash(name):
    h = KERNEL_HASHES[name]
    leaves = jax.jit(lambda *rows: [_leaf_plain(h, r.shape[1])(r) for r in rows])
    got = leaves(*(jnp.asarray(ROWS[w]) for w in WIDTHS))
    for width, digest in zip(WIDTHS, got, strict=True):
        _assert_words_equal(digest, _oracle_leaves(name)[width], f"{name} leaf, width {width}")


@pytest.mark.parametrize("name", NAMES)
def test_leaf_in_an_interpreted_pallas_kernel_matches_the_jnp_hash(name):
    """Extra random columns past the row's width must not change the digest."""
    h = KERNEL_HASHES[name]
    leaves = jax.jit(lambda *rows: [_leaf_pallas(h, r.shape[1] - 3, 8, interpret=True)(r) for r in rows])
    got = leaves(*(jnp.asarray(np.concatenate([ROWS[w], EXTRA[w]], axis=1)) for w in WIDTHS))
    for width, digest in zip(WIDTHS, got, strict=True):
        _assert_words_equal(digest, _oracle_leaves(name)[width], f"{name} pallas leaf, width {width}")


@pytest.mark.parametrize("name", NAMES)
def test_compress_as_plain_jnp_and_in_a_pallas_kernel_matches_the_jnp_hash(name):
    """The node rule (Keccak-256 of ``left || right || 0x01``; Poseidon2 with capacity
    ``(0, 2, 0, 0)``): the jnp oracle is first held to the public reference lane by lane."""
    h = KERNEL_HASHES[name]
    left, right = _words(LANES), _words(LANES)
    want = _oracle_compress(name, left, right)
    _, node, _ = REFERENCE_HASHES[name]
    as_bytes = lambda words: words.astype("<u8").tobytes()  # noqa: E731
    for i in range(LANES):
        assert as_bytes(want[i]) == node(as_bytes(left[i]), as_bytes(right[i])), f"{name} node, lane {i}"
    got = jax.jit(_compress_plain(h))(jnp.asarray(left), jnp.asarray(right))
    _assert_words_equal(got, want, f"{name} compress")
    got = _compress_pallas(h, 8, interpret=True)(jnp.asarray(left), jnp.asarray(right))
    _assert_words_equal(got, want, f"{name} pallas compress")


def test_permutations_match_the_jnp_permutations():
    """Whole states (capacity included), not only the states the sponges reach."""
    states = RNG.integers(0, 2**64, (LANES, 25), dtype=np.uint64)
    got = jax.jit(lambda s: jnp.stack(kkeccak.permute(_split(s)), axis=-1))(jnp.asarray(states))
    want = np.asarray(jkeccak.permute(jnp.asarray(states.T))).T
    _assert_words_equal(got, want, "keccak-f[1600]")

    states = _rows(LANES, 12)
    states[0] = np.arange(12, dtype=np.uint64)  # the known-answer input
    got = jax.jit(lambda s: jnp.stack(kposeidon2.permute(_split(s), "none"), axis=-1))(jnp.asarray(states))
    _assert_words_equal(got, np.asarray(jposeidon2.permute(jnp.asarray(states))), "poseidon2 permutation")
    assert int(np.asarray(got)[0, 0]) == 0x01EAEF96BDF1C0C1


def test_plain_jnp_compile_time_stays_small():
    """Compile-time tripwire for the default forms at a realistic width (316 columns): rounds,
    positions and chunks must stay in loops, not unrolled into the XLA program."""
    spec = jax.ShapeDtypeStruct((1024, 316), jnp.uint64)
    for name in NAMES:
        h = KERNEL_HASHES[name]
        start = time.perf_counter()
        jax.jit(_leaf_plain(h, 316)).lower(spec).compile()
        elapsed = time.perf_counter() - start
        assert elapsed < 20, f"{name}: {elapsed:.1f} s to compile the 316-column leaf"


# --- the compiled-kernel forms, op by op ----------------------------------------------------


@pytest.mark.parametrize(
    "h, widths, compress",
    [
        (KECCAK_COMPILED, [20], True),
        (POSEIDON2_COMPILED, [5], False),
        (POSEIDON2_UNROLLED, [], True),
    ],
    ids=["keccak-compiled", "poseidon2-compiled", "poseidon2-unrolled"],
)
def test_kernel_variants_match_the_jnp_hash_op_by_op(h, widths, compress):
    """Without ``jit`` (loops run in Python) these forms take a few seconds, less than an XLA
    compile of their unrolled bodies. One or two permutations each: they differ from the default
    forms only inside the permutation, the absorption and padding code being the same."""
    for width in widths:
        rows = _rows(4, width)
        want = _oracle_leaf(h.name, rows)
        with jax.disable_jit():
            got = _leaf_plain(h, width)(jnp.asarray(rows))
        _assert_words_equal(got, want, f"{h} leaf, width {width}")
    if compress:
        left, right = _words(4), _words(4)
        want = _oracle_compress(h.name, left, right)
        with jax.disable_jit():
            got = _compress_plain(h)(jnp.asarray(left), jnp.asarray(right))
        _assert_words_equal(got, want, f"{h} compress")


# --- Poseidon2's PTX field forms, with jnp stand-ins for the PTX ---------------------------------


def _stand_in(fn):
    """``fn`` under another function object: to the permutation a product that is not
    ``_mul_inline`` -- so it takes the PTX forms' path, multipliers built at run time -- with
    ``jnp``'s values."""
    return lambda a, b: fn(a, b)


@pytest.fixture
def ptx_stand_ins(monkeypatch):
    """``field_ptx.PTX`` replaced by wrapped ``jnp`` functions: ``field_ptx.ops`` (and so the
    kernel hash's ``ptx`` forms) then runs the PTX forms' code on a CPU."""
    stand_ins = field_ptx.FieldOps("stand-in", *(_stand_in(fn) for fn in (gl._add, gl._sub, gl._mul_inline)))
    monkeypatch.setattr(field_ptx, "PTX", stand_ins)
    return stand_ins


# every form's operations rolled (cheap), and each unrolled form, whose static multipliers take the
# run-time path, with one of the two PTX forms (each an XLA compile of several seconds)
@pytest.mark.parametrize(("unroll", "ptx"), [("none", True), ("none", "mul"), ("positions", True), ("all", "mul")])
def test_the_ptx_forms_permutation_matches_the_jnp_permutation(ptx, unroll, ptx_stand_ins):
    """Every unroll form with ``field_ptx.ops``' operations for ``ptx`` (the PTX functions stood
    in for): whole random states, the known answer and edge values, against
    :func:`jaxstark.hash.poseidon2.permute`. ``"none"`` under ``jit``; the unrolled forms, whose
    XLA compile is slow, op by op."""
    ops = field_ptx.ops(interpret=False, use_ptx=ptx)
    assert ops.mul is ptx_stand_ins.mul and not kposeidon2._splits_statics(ops)
    assert (ops.add, ops.sub) == ((ptx_stand_ins.add, ptx_stand_ins.sub) if ptx is True else (gl._add, gl._sub))
    lanes = 8 if unroll == "none" else 2
    states = _rows(lanes, 12)
    states[0] = np.arange(12, dtype=np.uint64)  # the known-answer input
    states[1] = np.uint64(P - 1)
    want = np.asarray(jposeidon2.permute(jnp.asarray(states)))
    permute = lambda s: jnp.stack(kposeidon2.permute(_split(s), unroll, ops), axis=-1)  # noqa: E731
    if unroll == "none":
        got = jax.jit(permute)(jnp.asarray(states))
    else:
        with jax.disable_jit():
            got = permute(jnp.asarray(states))
    _assert_words_equal(got, want, f"poseidon2 permutation, unroll {unroll}, ptx {ptx}")
    assert int(np.asarray(got)[0, 0]) == 0x01EAEF96BDF1C0C1


@pytest.mark.parametrize("ptx", [True, "mul"])
def test_the_ptx_forms_hash_matches_the_jnp_hash(ptx, ptx_stand_ins):
    """The kernel hash with ``ptx`` on (its operations from ``field_ptx.ops``, stood in for):
    leaves of two widths and node compressions, in an interpreted ``pallas_call``."""
    h = Poseidon2KernelHash(ptx=ptx)
    assert h.ops == field_ptx.ops(interpret=False, use_ptx=ptx) and h.ops.mul is ptx_stand_ins.mul
    for width in (8, 17):
        got = _leaf_pallas(h, width, 8, interpret=True)(jnp.asarray(ROWS[width]))
        _assert_words_equal(got, _oracle_leaves("poseidon2")[width], f"poseidon2 ptx {ptx} leaf, width {width}")
    left, right = _words(LANES), _words(LANES)
    got = _compress_pallas(h, 8, interpret=True)(jnp.asarray(left), jnp.asarray(right))
    _assert_words_equal(got, _oracle_compress("poseidon2", left, right), f"poseidon2 ptx {ptx} compress")


# --- the Triton lowering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "h, leaf",
    [
        (KECCAK, True),
        (KECCAK_COMPILED, True),
        (POSEIDON2, True),
        (POSEIDON2_COMPILED, True),
        (POSEIDON2_UNROLLED, False),
        *((Poseidon2KernelHash(unroll=u, ptx=x), u != "all") for x in (True, "mul") for u in kposeidon2.UNROLL),
    ],
    ids=lambda v: str(v) if not isinstance(v, bool) else "",
)
def test_triton_lowering_succeeds(h, leaf):
    """Lowering for CUDA runs Pallas' Triton lowering on any machine: it rejects uint64 literals
    >= 2^63 (``std::bad_cast``), unsupported primitives and non-power-of-two values. Leaves of
    wide, ragged rows (316 = 18 Keccak blocks + 10 columns = 39 Poseidon2 chunks + 4 columns;
    the fully unrolled Poseidon2, whose tracing alone takes seconds, only through its node
    compression -- the same permutation)."""
    words = jax.ShapeDtypeStruct((1024, 4), jnp.uint64)
    node = jax.jit(_compress_pallas(h, 256, interpret=False)).trace(words, words).lower(lowering_platforms=("cuda",))
    texts = [node.as_text()]
    if leaf:
        rows = jax.ShapeDtypeStruct((1024, 316), jnp.uint64)
        lowered = jax.jit(_leaf_pallas(h, 316, 256, interpret=False)).trace(rows).lower(lowering_platforms=("cuda",))
        texts.append(lowered.as_text())
    ptx = getattr(h, "ptx", False)
    for text in texts:  # Poseidon2's PTX forms: the products in PTX, the additions too for ptx=True
        assert "triton" in text
        assert (PTX_MUL in text, PTX_ADD in text) == (bool(ptx), ptx is True)


# --- the interface --------------------------------------------------------------------------


def test_interface_names_variants_and_errors():
    assert (KECCAK.name, POSEIDON2.name) == ("keccak256", "poseidon2")
    assert hash(POSEIDON2) == hash(Poseidon2KernelHash()) and POSEIDON2 == Poseidon2KernelHash(unroll="none")
    assert POSEIDON2_COMPILED == Poseidon2KernelHash(unroll="positions") and POSEIDON2_COMPILED.unroll == "positions"
    assert KECCAK == KeccakKernelHash(unroll=False) and KECCAK_COMPILED.unroll is True
    with pytest.raises(ValueError, match="unroll must be one of"):
        Poseidon2KernelHash(unroll="rounds")
    assert POSEIDON2.ptx is False and POSEIDON2.ops is field_ptx.JNP and POSEIDON2 == Poseidon2KernelHash(ptx=0)
    assert Poseidon2KernelHash(ptx=1).ptx is True and Poseidon2KernelHash(ptx=True).ops is field_ptx.PTX
    mul_form = Poseidon2KernelHash(unroll=True, ptx="mul")
    assert hash(mul_form) == hash(Poseidon2KernelHash(unroll="positions", ptx="mul")) and mul_form != POSEIDON2_COMPILED
    assert (mul_form.ops.add, mul_form.ops.sub, mul_form.ops.mul) == (gl._add, gl._sub, field_ptx.PTX.mul)
    for bad in ("add", "ptx", 2, None):
        with pytest.raises(ValueError, match="ptx must be one of"):
            Poseidon2KernelHash(ptx=bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        POSEIDON2.ptx = True
    for h in (KECCAK, POSEIDON2):
        with pytest.raises(ValueError, match="width must be >= 1"):
            h.leaf(lambda j: jnp.zeros(4, jnp.uint64), 0)
