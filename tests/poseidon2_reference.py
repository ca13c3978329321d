"""Slow, obviously correct Poseidon2 (Goldilocks, width 12) on plain Python integers.

Follows the round structure of the HorizenLabs reference permutation step by step, one list element at a time;
the constants come from :mod:`jaxstark.hash.poseidon2_constants`.
"""

from jaxstark.hash import poseidon2_constants as C

P = 2**64 - 2**32 + 1


def sbox(x):
    return pow(x, C.SBOX_DEGREE, P)


def external_layer(state):
    """circ(2*M4, M4, ..., M4): M4 on every 4-chunk, then add the sum of the chunks column-wise."""
    t = len(state)
    chunks = []
    for c in range(0, t, 4):
        block = state[c : c + 4]
        chunks.append([sum(C.M4[r][k] * block[k] for k in range(4)) % P for r in range(4)])
    col_sums = [sum(chunk[j] for chunk in chunks) % P for j in range(4)]
    return [(chunks[i // 4][i % 4] + col_sums[i % 4]) % P for i in range(t)]


def internal_layer(state):
    """Matrix with 1 everywhere plus diag(INTERNAL_DIAG_M_1): x_i <- d_i * x_i + sum(x)."""
    s = sum(state) % P
    return [(d * x + s) % P for d, x in zip(C.INTERNAL_DIAG_M_1, state, strict=True)]


def full_round(state, rc):
    state = [sbox((x + c) % P) for x, c in zip(state, rc, strict=True)]
    return external_layer(state)


def partial_round(state, rc0):
    state = list(state)
    state[0] = sbox((state[0] + rc0) % P)
    return internal_layer(state)


def permute(state):
    """Poseidon2 permutation of a length-12 sequence of canonical ints; returns a list."""
    state = [int(x) for x in state]
    assert len(state) == C.WIDTH and all(0 <= x < P for x in state)
    half = C.ROUNDS_F // 2
    state = external_layer(state)
    for r in range(half):
        state = full_round(state, C.EXTERNAL_ROUND_CONSTANTS[r])
    for r in range(C.ROUNDS_P):
        state = partial_round(state, C.INTERNAL_ROUND_CONSTANTS[r])
    for r in range(half, C.ROUNDS_F):
        state = full_round(state, C.EXTERNAL_ROUND_CONSTANTS[r])
    return state
