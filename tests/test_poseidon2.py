"""Poseidon2 (Goldilocks, width 12): known answers, JAX vs the Python reference, jit/vmap/batching, compile time.

Known answer: HorizenLabs/poseidon2, ``plain_implementations/src/poseidon2/poseidon2.rs`` at commit
bb476b9ca38198cf5092487283c8b8c5d4317c4e, test ``poseidon2_tests_goldilocks::kats``: the permutation of
``[0, 1, ..., 11]`` under ``POSEIDON2_GOLDILOCKS_12_PARAMS``.
"""

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark  # noqa: F401  (turns on 64-bit mode before any uint64 array exists)
from jaxstark.errors import FieldDtypeError, NonCanonicalError, ShapeError
from jaxstark.hash import poseidon2
from jaxstark.hash import poseidon2_constants as C
from tests import poseidon2_reference as ref

P = ref.P

KAT_INPUT = list(range(12))
KAT_OUTPUT = [
    0x01EAEF96BDF1C0C1,
    0x1F0D2CC525B2540C,
    0x6282C1DFE1E0358D,
    0xE780D721F698E1E6,
    0x280C0B6F753D833B,
    0x1B942DD5023156AB,
    0x43F0DF3FCCCB8398,
    0xE8E8190585489025,
    0x56BDBF72F77ADA22,
    0x7911C32BF9DCD705,
    0xEC467926508FBE67,
    0x6A50450DDF85A6ED,
]


def _u64(rows) -> jax.Array:
    return jnp.asarray(np.array(rows, dtype=np.uint64))


def _ints(a) -> list:
    return np.asarray(a).tolist()


def _random_states(n: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    states = [[int(v) for v in rng.integers(0, P, size=12, dtype=np.uint64)] for _ in range(n)]
    edges = [
        [0] * 12,
        [P - 1] * 12,
        [1] * 12,
        [P - 1 if i % 2 else 0 for i in range(12)],
        [2**32 - 1] * 12,
        [2**32] * 12,
        [2**63 + i for i in range(12)],
        [P - 1 - i for i in range(12)],
    ]
    return edges + states


# ---------------------------------------------------------------------------------------------
# Parameters and the Python reference
# ---------------------------------------------------------------------------------------------


def test_parameters():
    assert poseidon2.WIDTH == 12 == C.WIDTH
    assert (C.ROUNDS_F, C.ROUNDS_P, C.SBOX_DEGREE) == (8, 22, 7)
    assert len(C.EXTERNAL_ROUND_CONSTANTS) == 8 and all(len(r) == 12 for r in C.EXTERNAL_ROUND_CONSTANTS)
    assert len(C.INTERNAL_ROUND_CONSTANTS) == 22 and len(C.INTERNAL_DIAG_M_1) == 12
    every = [v for r in C.EXTERNAL_ROUND_CONSTANTS for v in r] + list(C.INTERNAL_ROUND_CONSTANTS)
    assert all(0 <= v < P for v in every + list(C.INTERNAL_DIAG_M_1))
    assert math.gcd(7, P - 1) == 1  # x^7 is a permutation of the field


def test_reference_known_answer():
    assert ref.permute(KAT_INPUT) == KAT_OUTPUT


def test_reference_linear_layers_match_explicit_matrices():
    """The reference's layers equal the dense matrices they stand for."""
    m4 = C.M4
    m_ext = [[(2 if i // 4 == j // 4 else 1) * m4[i % 4][j % 4] for j in range(12)] for i in range(12)]
    m_int = [[1 + (C.INTERNAL_DIAG_M_1[i] if i == j else 0) for j in range(12)] for i in range(12)]
    for x in _random_states(5, seed=1):
        assert ref.external_layer(x) == [sum(m * v for m, v in zip(row, x, strict=True)) % P for row in m_ext]
        assert ref.internal_layer(x) == [sum(m * v for m, v in zip(row, x, strict=True)) % P for row in m_int]


# ---------------------------------------------------------------------------------------------
# The JAX permutation
# ---------------------------------------------------------------------------------------------


def test_jax_known_answer():
    out = poseidon2.permute(_u64(KAT_INPUT))
    assert out.dtype == jnp.uint64 and out.shape == (12,)
    assert _ints(out) == KAT_OUTPUT


def test_jax_matches_reference_on_random_and_edge_states():
    states = _random_states(240, seed=2024)
    assert len(states) >= 200
    out = poseidon2.permute(_u64(states))  # one batched call
    assert out.shape == (len(states), 12)
    expected = [ref.permute(s) for s in states]
    assert _ints(out) == expected


def test_jit_vmap_and_batch_shapes():
    states = _random_states(16, seed=7)  # 8 edge states + 16 random
    expected = [ref.permute(s) for s in states]
    flat = _u64(states)

    assert _ints(jax.jit(poseidon2.permute)(flat)) == expected
    assert _ints(jax.vmap(poseidon2.permute)(flat)) == expected
    assert _ints(jax.jit(jax.vmap(poseidon2.permute))(flat)) == expected

    grid = flat.reshape(4, 6, 12)  # 2-D batch
    out = poseidon2.permute(grid)
    assert out.shape == (4, 6, 12)
    assert _ints(out.reshape(24, 12)) == expected
    assert _ints(jax.vmap(jax.vmap(poseidon2.permute))(grid).reshape(24, 12)) == expected

    one = poseidon2.permute(flat[0])
    assert one.shape == (12,) and _ints(one) == expected[0]


def test_input_validation():
    with pytest.raises(ShapeError):
        poseidon2.permute(_u64(list(range(8))))
    with pytest.raises(FieldDtypeError):
        poseidon2.permute(jnp.arange(12, dtype=jnp.int64))
    with pytest.raises(NonCanonicalError):
        poseidon2.permute(_u64([P] + [0] * 11))


def test_compile_time_tripwire():
    """Rounds live in fori_loops; an unrolled version takes far longer to compile."""
    spec = jax.ShapeDtypeStruct((1024, 12), jnp.uint64)
    t0 = time.perf_counter()
    jax.jit(poseidon2.permute).lower(spec).compile()
    elapsed = time.perf_counter() - t0
    print(f"poseidon2.permute (1024, 12) lower+compile: {elapsed:.2f} s")
    assert elapsed < 30.0
