"""The Poseidon2 permutation over Goldilocks, state width 12.

Parameters (t = 12, S-box x^7, R_F = 8 full rounds split 4 + 4, R_P = 22 partial rounds) and constants are those
of the Poseidon2 paper's reference implementation, repository HorizenLabs/poseidon2, file
``plain_implementations/src/poseidon2/poseidon2_instance_goldilocks.rs`` at commit
bb476b9ca38198cf5092487283c8b8c5d4317c4e (``POSEIDON2_GOLDILOCKS_12_PARAMS``); they live in
:mod:`jaxstark.hash.poseidon2_constants`. The known answer checked by the tests is the ``kats`` test of
``plain_implementations/src/poseidon2/poseidon2.rs`` at the same commit: ``permute([0, 1, ..., 11])`` starts
``0x01eaef96bdf1c0c1, 0x1f0d2cc525b2540c, ...`` (HorizenLabs' main branch; several independent ports test against
the same vector, and Plonky3's ``MATRIX_DIAG_12_GOLDILOCKS`` is the same internal diagonal). Older revisions of
that repository used other constants with other known answers (e.g. ``0xed3dbcc4ff1e8d33, ...`` and
``0x12a0e34a20879ec7, ...``); those are not this permutation.

Structure, for a state ``x`` of 12 elements:

1. external linear layer ``M_E`` once, before any round;
2. 4 full rounds: add 12 round constants, S-box every element, ``M_E``;
3. 22 partial rounds: add one constant to ``x[0]``, S-box ``x[0]`` only, internal layer ``M_I``;
4. 4 full rounds as in 2.

``M_E = circ(2*M4, M4, M4)``: the 4x4 block ``M4`` (rows 5 7 1 3 / 4 6 1 1 / 1 3 5 7 / 1 1 4 6) is applied to
each of the three 4-element chunks, then each element gets the sum of its position across the three chunks
added. ``M_I = 1 + diag(d)``: ``x_i <- d_i * x_i + sum(x)``.

The rounds run in ``lax.fori_loop`` over constant arrays (three loops: 4 full, 22 partial, 4 full), so the
traced graph holds one copy of each round body and compile time does not grow with the round count.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.errors import ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array
from jaxstark.hash import poseidon2_constants as _c

__all__ = ["WIDTH", "ROUNDS_F", "ROUNDS_P", "permute"]

WIDTH = _c.WIDTH
ROUNDS_F = _c.ROUNDS_F
ROUNDS_P = _c.ROUNDS_P
_HALF_F = ROUNDS_F // 2

# Constants as numpy uint64 (never Python literals >= 2^63 in arithmetic).
_EXT_RC = np.array(_c.EXTERNAL_ROUND_CONSTANTS, dtype=np.uint64)  # (ROUNDS_F, WIDTH)
_INT_RC = np.array(_c.INTERNAL_ROUND_CONSTANTS, dtype=np.uint64)  # (ROUNDS_P,)
_DIAG = np.array(_c.INTERNAL_DIAG_M_1, dtype=np.uint64)  # (WIDTH,)

State = UInt64[Array, "*batch 12"]


def _sbox(x, mul=gl._mul):
    """x^7 with four multiplications (``mul``: a kernel body passes the written-out product)."""
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x6 = mul(x3, x3)
    return mul(x6, x)


def _dbl(x, add=gl._add):
    return add(x, x)


def _m4(a, b, c, d, add=gl._add):
    """The 4x4 block applied to one chunk (a, b, c, d), as an addition chain:
    rows (5 7 1 3), (4 6 1 1), (1 3 5 7), (1 1 4 6) (``add``: a kernel body may pass its own)."""
    ab = add(a, b)  # a + b
    cd = add(c, d)  # c + d
    b2cd = add(_dbl(b, add), cd)  # 2b + c + d
    d2ab = add(_dbl(d, add), ab)  # a + b + 2d
    r3 = add(_dbl(_dbl(cd, add), add), d2ab)  # a + b + 4c + 6d
    r1 = add(_dbl(_dbl(ab, add), add), b2cd)  # 4a + 6b + c + d
    r0 = add(d2ab, r1)  # 5a + 7b + c + 3d
    r2 = add(b2cd, r3)  # a + 3b + 5c + 7d
    return r0, r1, r2, r3


def _external_layer(x):
    """circ(2*M4, M4, M4) on the last axis (size 12)."""
    chunks = x.reshape(*x.shape[:-1], 3, 4)  # (..., chunk, position)
    y = jnp.stack(_m4(*(chunks[..., k] for k in range(4))), axis=-1)  # M4 on every chunk
    col = gl._add(gl._add(y[..., 0, :], y[..., 1, :]), y[..., 2, :])  # (..., 4): per-position sum over chunks
    return gl._add(y, col[..., None, :]).reshape(x.shape)


def _internal_layer(x, diag):
    s = gl._sum(x, -1)[..., None]
    return gl._add(gl._mul(x, diag), s)


def _full_rounds(x, rc, first: int, count: int):
    def body(i, x):
        x = _sbox(gl._add(x, rc[i]))
        return _external_layer(x)

    return lax.fori_loop(first, first + count, body, x)


def _partial_rounds(x, rc, diag):
    def body(i, x):
        x0 = _sbox(gl._add(x[..., :1], rc[i]))
        x = jnp.concatenate([x0, x[..., 1:]], axis=-1)
        return _internal_layer(x, diag)

    return lax.fori_loop(0, rc.shape[0], body, x)


def _permute(x):
    """The permutation on the last axis. Traceable; assumes canonical inputs."""
    ext_rc = jnp.asarray(_EXT_RC)
    x = _external_layer(x)
    x = _full_rounds(x, ext_rc, 0, _HALF_F)
    x = _partial_rounds(x, jnp.asarray(_INT_RC), jnp.asarray(_DIAG))
    return _full_rounds(x, ext_rc, _HALF_F, ROUNDS_F - _HALF_F)


_permute_jit = jax.jit(_permute)


def permute(state: State) -> State:
    """Poseidon2 permutation of ``state``, a ``uint64`` array of shape ``(..., 12)`` of canonical Goldilocks
    elements (any leading batch shape); returns the permuted states, same shape and dtype.

    Works eagerly, under ``jit`` and under ``vmap``. Concrete inputs are checked (dtype, canonical values,
    trailing axis of size 12); traced inputs only for dtype and shape.
    """
    state = field_array(state, "poseidon2.permute state")
    if state.ndim == 0 or state.shape[-1] != WIDTH:
        raise ShapeError(f"poseidon2.permute: expected a trailing axis of size {WIDTH}, got shape {tuple(state.shape)}")
    return _permute_jit(state)
