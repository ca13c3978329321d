"""Poseidon2 (Goldilocks, width 12) leaf hash and node compression written element-wise, for
Pallas Merkle kernels.

The same digests as :class:`jaxstark.hash.interface.Poseidon2Hash` (``hash_rows``, and
``compress``, whose capacity ``(0, 2, 0, 0)`` marks a node), bit for bit, but on 12 separate
``uint64`` state vectors instead of one ``(..., 12)`` array: no gathers, stacks, reshapes or
concatenations, only ``+``, ``*``, shifts, bitwise ops, comparisons, ``jnp.where``, casts and
``lax.fori_loop`` -- the subset a Pallas kernel (Triton backend) lowers, which also runs as
plain ``jnp``. The S-box and the 4x4 block of the external layer are
:mod:`jaxstark.hash.poseidon2`'s (given this module's add and multiply), and the constants are
:mod:`jaxstark.hash.poseidon2_constants`.

Every vector has one common shape ``S`` (one lane per independent message); a digest is four
``uint64`` vectors, the first four state elements (word ``i`` = digest bytes ``8i .. 8i+7``
little-endian).

**Loops.** The permutation is written as ``E, (P^22 if r == 4; add constants; S-box; E) for r in
0..7`` (``E`` the external layer, ``P`` a partial round), and both levels of it can be loops:

* *rounds*: the 8 full rounds in one ``fori_loop``, the 22 partial rounds in a ``fori_loop``
  whose trip count is 22 in round 4 and 0 otherwise;
* *positions*: the 12 S-boxes of a full round, the 12 products of the internal layer and the 3
  chunks of the external layer in ``fori_loop``\\ s that rotate the state tuple by one element
  (or one chunk) per step, carrying their constants along in the same rotation.

``unroll`` picks what Python unrolls instead:

* ``"none"`` (also ``False``; the default): both levels looped, so each loop body holds one
  S-box or one multiplication. This is the form to run through XLA (plain ``jnp``, Pallas'
  interpreter): one permutation compiles in under a second on a CPU, against about seven with
  the positions unrolled;
* ``"positions"`` (also ``True``; the form for a compiled kernel): positions unrolled, rounds
  looped -- twelve independent S-boxes side by side, no register rotation, a program of
  moderate size;
* ``"all"``: every round unrolled with static constants (no constant selection at all; a program
  of some 35,000 operations, for kernels only).

So ``dataclasses.replace(POSEIDON2, unroll=True)`` is the compiled-kernel form of the
interpreter-friendly :data:`POSEIDON2`, as for the other in-kernel hashes. The three forms run
the same functions and give the same digests; they have not yet been timed against each other
on a GPU.

**Field arithmetic.** Every add, subtract and product of the permutation (round constants, the
S-boxes, the external layer's 4x4 blocks and column sums, the internal layer's diagonal products
and the sum added to them) goes through a :class:`~jaxstark.kernels.field_ptx.FieldOps`, chosen
by ``ptx`` (:data:`PTX_FORMS`, as :func:`jaxstark.kernels.field_ptx.ops`):

* ``False`` (:data:`POSEIDON2`'s): :mod:`jaxstark.field.goldilocks`' ``_add``, ``_sub`` and
  ``_mul_inline`` -- plain ``jnp``, for Pallas' interpreter and XLA;
* ``True``: the inline PTX of :mod:`jaxstark.kernels.field_ptx` for all three;
* ``"mul"``: the PTX product, the ``jnp`` add and subtract -- the fastest of the three on a 2^23 x
  62 tree on an H100 (125.8 ms, against 131.5 ms for ``True`` and 146.7 ms for ``False``;
  ``benchmarks/RESULTS.md``), so the Merkle kernels' default (``merkle.Tiling.ptx``).

PTX exists only in a compiled kernel: the Merkle and sponge kernels take ``ptx`` from their
``Tiling`` when compiled and use ``ptx=False`` in the interpreter
(:func:`jaxstark.kernels.merkle._compiled_form`). The sum of the twelve elements in the internal
layer stays plain 64-bit additions with a wrap count (``_sum``) in every form, and the final
reductions of a node's inputs are ``goldilocks._canon``.

**No uint64 literal >= 2^63.** Pallas' Triton lowering crashes on one (``std::bad_cast``), and
many round and diagonal constants are that large:

* a constant picked by a traced round index is ``(h << 1) | b`` with ``h = c >> 1`` chosen by a
  ``jnp.where`` chain (never a table lookup, which would be a gather) and the low bit ``b`` taken
  from a bit mask, so the large value only exists at run time;
* adding a static ``c >= 2^63`` is written as subtracting ``p - c`` (below ``2^63``), in every
  field form;
* with the ``jnp`` product, a static multiplier goes through ``goldilocks._mul_inline``, which
  splits it into 32-bit limbs in numpy before anything is traced; a multiplier carried by a
  loop, and with any other product (PTX's, which takes whole 64-bit operands) every multiplier
  ``>= 2^63``, is built at run time as ``(hi << 32) | lo``.

A row's 8-element chunks are absorbed in one ``fori_loop`` (one permutation in the program
whatever the width); the columns past the row's end read as zero.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import ClassVar

import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.field import goldilocks as gl
from jaxstark.hash import poseidon2 as _p
from jaxstark.hash import poseidon2_constants as _c
from jaxstark.hash.interface import POSEIDON2_NODE_CAPACITY
from jaxstark.kernels import field_ptx
from jaxstark.kernels.field_ptx import FieldOps

__all__ = ["Poseidon2KernelHash", "POSEIDON2", "permute", "UNROLL", "PTX_FORMS"]

Vec = UInt64[Array, "*lanes"]
Digest = tuple[Vec, Vec, Vec, Vec]
Const = int | Array  # a static Python int or a traced uint64 scalar

WIDTH = _c.WIDTH
RATE = 8
CHUNKS = WIDTH // 4
UNROLL = ("none", "positions", "all")
PTX_FORMS = field_ptx.PTX_FORMS
_UNROLL_ALIASES = {False: "none", True: "positions"}
_PARTIAL_AT = _c.ROUNDS_F // 2  # the partial rounds run before this full round
_TOP = 1 << 63
_M32 = (1 << 32) - 1
_NODE_CAPACITY = tuple(int(c) for c in POSEIDON2_NODE_CAPACITY)  # state[8:12] of a node

_EXT_RC = tuple(tuple(int(v) for v in row) for row in _c.EXTERNAL_ROUND_CONSTANTS)  # [round][position]
_EXT_RC_BY_POSITION = tuple(tuple(row[k] for row in _EXT_RC) for k in range(WIDTH))  # [position][round]
_INT_RC = tuple(int(v) for v in _c.INTERNAL_ROUND_CONSTANTS)
_DIAG = tuple(int(v) for v in _c.INTERNAL_DIAG_M_1)
if not all(0 <= v < gl.P for v in (*(v for row in _EXT_RC for v in row), *_INT_RC, *_DIAG)):
    raise AssertionError("Poseidon2 constants must be canonical field elements")


def _loop(n: int | Array, body: Callable, carry, unrolled: bool):
    """``n`` steps of ``body(i, carry)``: a Python loop (``i`` a Python int; ``n`` must be
    static) or a ``lax.fori_loop`` (``i`` traced; ``n`` may be traced)."""
    if unrolled:
        for i in range(n):
            carry = body(i, carry)
        return carry
    return lax.fori_loop(0, n, body, carry)


def _runtime_u64(c: int) -> Array | np.uint64:
    """The constant ``c`` as a uint64 scalar, built at run time when ``c >= 2^63``."""
    if c < _TOP:
        return np.uint64(c)
    return jnp.left_shift(np.uint64(c >> 32), np.uint64(32)) | np.uint64(c & _M32)


def _pick(i: int | Array, values: Sequence[int]) -> Const:
    """``values[i]``: a Python int for a static ``i``; for a traced ``i`` a uint64 scalar
    ``(h << 1) | b`` -- ``h = values[i] >> 1`` from a ``jnp.where`` chain, ``b`` from a mask of
    the low bits."""
    if isinstance(i, int):
        return values[i]
    h = np.uint64(values[-1] >> 1)
    for k in range(len(values) - 2, -1, -1):
        h = jnp.where(i == k, np.uint64(values[k] >> 1), h)
    low_bits = sum((v & 1) << k for k, v in enumerate(values))
    b = (jnp.right_shift(np.uint32(low_bits), jnp.asarray(i).astype(jnp.uint32)) & np.uint32(1)).astype(jnp.uint64)
    return (h << np.uint64(1)) | b


def _splits_statics(f: FieldOps) -> bool:
    """Whether ``f``'s product is ``_mul_inline``, which splits a static multiplier into 32-bit
    limbs in numpy; any other product (PTX's) must get a multiplier >= 2^63 built at run time."""
    return f.mul is gl._mul_inline


def _add_c(x: Vec, c: Const, f: FieldOps) -> Vec:
    """``x + c`` mod p; a static ``c >= 2^63`` is subtracted as ``p - c`` instead."""
    if not isinstance(c, int):
        return f.add(x, c)
    if c < _TOP:
        return f.add(x, np.uint64(c))
    return f.sub(x, np.uint64(gl.P - c))


def _mul_c(x: Vec, d: Const, f: FieldOps) -> Vec:
    """``x * d`` mod p: a static ``d`` is split into 32-bit limbs in numpy by ``_mul_inline``, or,
    for another product, built at run time (:func:`_runtime_u64`; the compiler folds the shift
    and the or back into one constant, past the point where a literal >= 2^63 would crash)."""
    if isinstance(d, int):
        d = np.uint64(d) if _splits_statics(f) else _runtime_u64(d)
    return f.mul(x, d)


def _sum(xs: Sequence[Vec]) -> Vec:
    """Sum of canonical elements mod p: plain 64-bit additions counting the wrap-arounds, each
    worth ``2^64 = 2^32 - 1`` (mod p), folded in once at the end (fewer than ``2^32`` terms).

    Plain ``jnp`` in every field form: per term one 64-bit add and one compare feeding a counter,
    and a single fold at the end, where eleven field additions (PTX's or ``jnp``'s) would each
    fold their own carry -- so the PTX add has nothing to save here, and the sum is the same
    program whichever field the rest of the permutation uses."""
    s = xs[0]
    wraps = None
    for v in xs[1:]:
        s = s + v
        w = (s < v).astype(jnp.uint64)
        wraps = w if wraps is None else wraps + w
    if wraps is None:
        return s
    t = wraps * gl._EPS
    u = s + t
    u = jnp.where(u < t, u + gl._EPS, u)  # u + 2^64 == u + eps (mod p); cannot wrap again
    return gl._canon(u)


def _external_layer(x: Sequence[Vec], unrolled: bool, f: FieldOps) -> tuple[Vec, ...]:
    """``circ(2*M4, M4, M4)``: the 4x4 block on each chunk of 4 (one chunk per step, the column
    sums accumulated on the way), then the column sums added to every chunk."""

    def mix(k, carry):
        x, col = carry
        y = _p._m4(*x[:4], add=f.add)
        col = y if isinstance(k, int) and k == 0 else tuple(f.add(a, b) for a, b in zip(col, y, strict=True))
        return (*x[4:], *y), col

    zero = jnp.zeros_like(x[0])
    x, col = _loop(CHUNKS, mix, (tuple(x), (zero,) * 4), unrolled)

    def spread(k, x):
        return (*x[4:], *(f.add(a, b) for a, b in zip(x[:4], col, strict=True)))

    return _loop(CHUNKS, spread, x, unrolled)


def _sbox_layer(x: Sequence[Vec], consts: Sequence[Const], unrolled: bool, f: FieldOps) -> tuple[Vec, ...]:
    """``x_k <- (x_k + c_k)^7`` for every position, one position per step."""
    if not unrolled:
        consts = tuple(_runtime_u64(c) if isinstance(c, int) else c for c in consts)

    def step(k, carry):
        x, c = carry
        return (*x[1:], _p._sbox(_add_c(x[0], c[0], f), f.mul)), (*c[1:], c[0])

    x, _ = _loop(WIDTH, step, (tuple(x), tuple(consts)), unrolled)
    return x


def _internal_layer(x: Sequence[Vec], unrolled: bool, f: FieldOps) -> tuple[Vec, ...]:
    """``x_i <- d_i * x_i + sum(x)``, one position per step."""
    s = _sum(x)
    diag = _DIAG if unrolled else tuple(_runtime_u64(d) for d in _DIAG)

    def step(k, carry):
        x, d = carry
        return (*x[1:], f.add(_mul_c(x[0], d[0], f), s)), (*d[1:], d[0])

    x, _ = _loop(WIDTH, step, (tuple(x), diag), unrolled)
    return x


def _unroll_form(unroll: bool | str) -> str:
    """``unroll`` as one of :data:`UNROLL` (``False`` and ``True`` name ``"none"`` and
    ``"positions"``)."""
    form = _UNROLL_ALIASES.get(unroll, unroll) if isinstance(unroll, bool) else unroll
    if form not in UNROLL:
        raise ValueError(f"poseidon2: unroll must be one of {UNROLL} (or False / True), got {unroll!r}")
    return form


def permute(state: Sequence[Vec], unroll: bool | str = "none", ops: FieldOps = field_ptx.JNP) -> tuple[Vec, ...]:
    """The Poseidon2 permutation on 12 canonical element vectors, element-wise (the same function
    as :func:`jaxstark.hash.poseidon2.permute`); ``unroll`` as in the module docstring, ``ops``
    the field's add, subtract and multiply (:func:`jaxstark.kernels.field_ptx.ops`)."""
    unroll = _unroll_form(unroll)
    f = ops
    if len(state) != WIDTH:
        raise ValueError(f"poseidon2 permute: expected {WIDTH} element vectors, got {len(state)}")
    rounds_unrolled = unroll == "all"
    positions_unrolled = unroll != "none"

    def partial_round(i, x):
        x0 = _p._sbox(_add_c(x[0], _pick(i, _INT_RC), f), f.mul)
        return _internal_layer((x0, *x[1:]), positions_unrolled, f)

    def full_round(r, x):
        if isinstance(r, int):
            partials = len(_INT_RC) if r == _PARTIAL_AT else 0
        else:
            partials = jnp.where(r == _PARTIAL_AT, np.int32(len(_INT_RC)), np.int32(0))
        x = _loop(partials, partial_round, x, rounds_unrolled)
        x = _sbox_layer(x, [_pick(r, column) for column in _EXT_RC_BY_POSITION], positions_unrolled, f)
        return _external_layer(x, positions_unrolled, f)

    x = _external_layer(state, positions_unrolled, f)
    return _loop(len(_EXT_RC), full_round, x, rounds_unrolled)


@dataclasses.dataclass(frozen=True)
class Poseidon2KernelHash:
    """Poseidon2 Merkle leaf and node hashing on element vectors (see the module docstring).

    ``leaf(load, width)`` is the sponge of :class:`~jaxstark.hash.interface.Poseidon2Hash` over
    a row of ``width`` canonical elements (state ``[0]*8 + [width, 0, 0, 0]``; each 8-element
    chunk, the last zero-padded, overwrites ``state[0:8]`` before a permutation);
    ``compress(left, right)`` is ``permute(left || right || (0, 2, 0, 0))[0:4]`` after reducing
    the digest words mod p. Frozen and hashable, so an instance can be a static argument.

    ``unroll`` picks the loops (module docstring); ``ptx`` the field arithmetic of the
    permutation, one of :data:`PTX_FORMS`: ``False`` the ``jnp`` functions, ``True`` every add,
    subtract and product as inline PTX, ``"mul"`` only the products. An instance with ``ptx`` on
    is the form a *compiled* kernel runs (there is no PTX in Pallas' interpreter):
    :func:`jaxstark.kernels.merkle._compiled_form` gives a kernel the form for its launch, which
    in the interpreter has ``ptx=False``."""

    unroll: bool | str = False
    ptx: bool | str = False
    name: ClassVar[str] = "poseidon2"

    def __post_init__(self):
        object.__setattr__(self, "unroll", _unroll_form(self.unroll))
        try:
            object.__setattr__(self, "ptx", field_ptx.ptx_form(self.ptx))
        except ValueError:
            raise ValueError(f"poseidon2: ptx must be one of {PTX_FORMS}, got {self.ptx!r}") from None

    @property
    def ops(self) -> FieldOps:
        """The permutation's field operations: ``field_ptx.ops`` of a compiled kernel for
        ``ptx`` (the interpreter's kernels get a ``ptx=False`` copy of the hash instead)."""
        return field_ptx.ops(interpret=False, use_ptx=self.ptx)

    def _permute(self, state):
        return permute(state, self.unroll, self.ops)

    def leaf(self, load: Callable[[int | Array], Vec], width: int) -> Digest:
        """Digest of each lane's row; ``load(j)`` gives column ``j`` (``j`` a Python int or a
        traced int32 scalar, always ``< width``). The chunks run in one ``fori_loop``; in a
        ragged last chunk the columns past the row read a clamped index and are replaced by
        zero."""
        width = int(width)
        if width < 1:
            raise ValueError(f"poseidon2 leaf: width must be >= 1, got {width}")
        zero = jnp.zeros_like(load(0))
        chunks = -(-width // RATE)

        def column(j):
            if isinstance(j, int):
                return load(j) if j < width else zero
            if width % RATE == 0:
                return load(j)
            return jnp.where(j < width, load(jnp.minimum(j, width - 1)), zero)

        def absorb(chunk, state):
            if not isinstance(chunk, int):
                chunk = chunk.astype(jnp.int32)  # so that load() gets int32 column indices
            rate = [column(chunk * RATE + k) for k in range(RATE)]
            return self._permute([*rate, *state[RATE:]])

        state = (zero,) * RATE + (zero + np.uint64(width), zero, zero, zero)
        state = absorb(0, state) if chunks == 1 else lax.fori_loop(0, chunks, absorb, state)
        return state[0], state[1], state[2], state[3]

    def compress(self, left: Digest, right: Digest) -> Digest:
        """``permute(left || right || (0, 2, 0, 0))[0:4]``, the words first reduced mod p
        (``state[9] = 2`` marks a node)."""
        if len(left) != 4 or len(right) != 4:
            raise ValueError("poseidon2 compress: a digest is four uint64 element vectors")
        zero = jnp.zeros_like(left[0])
        capacity = [zero + np.uint64(c) if c else zero for c in _NODE_CAPACITY]
        out = self._permute([*(gl._canon(v) for v in (*left, *right)), *capacity])
        return out[0], out[1], out[2], out[3]


POSEIDON2 = Poseidon2KernelHash()
