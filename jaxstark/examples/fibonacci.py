"""The Fibonacci AIR: two columns, one step of the sequence per row.

Column layout (width 2): ``x = col 0``, ``y = col 1``; row ``i`` holds ``(F(i+1), F(i+2))`` of the
sequence F(1) = F(2) = 1, so row 0 is ``(1, 1)``.

Constraints (2 transition, both degree 1; the frame of the last row is not constrained):

* ``next[0] - cur[1]``
* ``next[1] - (cur[0] + cur[1])``

Boundary: ``(col 0, row 0) = 1``, ``(col 1, row 0) = 1``, ``(col 1, row -1) = public[0]`` (the
claimed result F(n+1) mod p). One public input. Not row-local (it reads the next row).
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.field import goldilocks as gl

__all__ = ["Fibonacci", "fibonacci_trace", "fibonacci_example"]

P = gl.P


class Fibonacci(AIR):
    """Two-column Fibonacci table; the public input is the last row's second column."""

    width: int = eqx.field(static=True, default=2)

    def __check_init__(self):
        if self.width != 2:
            raise ValueError(f"Fibonacci has exactly 2 columns, got width={self.width}")

    @property
    def num_public_inputs(self) -> int:
        return 1

    def constraint_degrees(self) -> tuple[int, ...]:
        return (1, 1)

    def transition(
        self, cur: Sequence[Val], nxt: Sequence[Val], periodic: Sequence[Val], public: Sequence[Val]
    ) -> list[Val]:
        return [nxt[0] - cur[1], nxt[1] - (cur[0] + cur[1])]

    def boundary(self, public: Sequence[Val]) -> list[tuple[int, int, int | Val]]:
        return [(0, 0, 1), (1, 0, 1), (1, -1, public[0])]


def _add_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a + b) mod p`` of canonical uint64 arrays (a wrapped sum is short of the true one by
    2^64, which is ``p + 2^32 - 1``)."""
    s = a + b
    return np.where(s < a, s + np.uint64((1 << 32) - 1), np.where(s >= np.uint64(P), s - np.uint64(P), s))


def fibonacci_trace(log_n: int) -> tuple[jnp.ndarray, tuple[int]]:
    """The honest trace (``uint64[2^log_n, 2]``) and the public inputs ``(result,)``. Built in
    blocks of up to 4096 rows side by side: each block's first row from the one before by the
    step matrix ``[[0, 1], [1, 1]]`` raised to the block's height (Python integers), then one
    numpy step per row across all blocks."""
    if not isinstance(log_n, (int, np.integer)) or not 1 <= log_n <= 32:
        raise ValueError(f"fibonacci_trace: log_n must be an int in [1, 32], got {log_n!r}")
    n = 1 << int(log_n)
    rows = min(n, 1 << 12)

    def mul(a, b):  # 2x2 matrices mod p
        return [[(a[i][0] * b[0][j] + a[i][1] * b[1][j]) % P for j in range(2)] for i in range(2)]

    jump, base, e = [[1, 0], [0, 1]], [[0, 1], [1, 1]], rows
    while e:
        if e & 1:
            jump = mul(jump, base)
        base, e = mul(base, base), e >> 1
    firsts, (x, y) = [], (1, 1)
    for _ in range(n // rows):
        firsts.append((x, y))
        x, y = (jump[0][0] * x + jump[0][1] * y) % P, (jump[1][0] * x + jump[1][1] * y) % P
    out = np.empty((n // rows, rows, 2), dtype=np.uint64)
    x, y = (np.array(c, dtype=np.uint64) for c in zip(*firsts, strict=True))
    for j in range(rows):
        out[:, j, 0], out[:, j, 1] = x, y
        x, y = y, _add_mod(x, y)
    out = out.reshape(n, 2)
    return jnp.asarray(out), (int(out[-1, 1]),)


def fibonacci_example(log_n: int, seed: int = 0) -> tuple[Fibonacci, jnp.ndarray, tuple[int]]:
    """``(air, trace, public)`` for ``EXAMPLES``; ``seed`` is ignored (the trace is fixed)."""
    del seed
    trace, public = fibonacci_trace(log_n)
    return Fibonacci(), trace, public
