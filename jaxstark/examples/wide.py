"""A wide row-local table: the rounds of a MiMC-style cube map laid out across one row.

Column layout (``width`` columns, default 316): column 0 is the input ``x``; column ``j + 1`` is
``(column j + c_j)^3`` for ``j = 0 .. width - 2``, so the last column is the output after
``width - 1`` rounds.

Round constants: ``c_j = (j + 1) * 0x9E3779B97F4A7C15 mod p`` (the 64-bit golden-ratio constant;
:func:`round_constants`). They are fixed and public. This is a *stress shape* for memory and
constraint-evaluation throughput (many columns, many degree-3 constraints), not a claimed-secure
hash: the round count and constants were not chosen for security.

Transition constraints: ``width - 1`` of them, all degree 3, none reads the next row:
``cur[j + 1] - (cur[j] + c_j)^3`` for ``j = 0 .. width - 2``. No boundary constraints, no public
inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxstark.air import AIR, Val
from jaxstark.field import goldilocks as gl

__all__ = ["WideRounds", "wide_trace", "wide_example", "round_constants", "DEFAULT_WIDTH", "ROUND_CONSTANT_STEP"]

P = gl.P
DEFAULT_WIDTH = 316
ROUND_CONSTANT_STEP = 0x9E3779B97F4A7C15


@functools.lru_cache(maxsize=32)
def round_constants(width: int) -> tuple[int, ...]:
    """``c_j = (j + 1) * 0x9E3779B97F4A7C15 mod p`` for ``j = 0 .. width - 2``."""
    return tuple((j + 1) * ROUND_CONSTANT_STEP % P for j in range(width - 1))


def _check_width(width) -> int:
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 2:
        raise ValueError(f"WideRounds: width must be an int >= 2, got {width!r}")
    return int(width)


class WideRounds(AIR):
    """``width - 1`` cube rounds per row, one column per round (see the module docstring)."""

    width: int = eqx.field(static=True, default=DEFAULT_WIDTH)

    def __check_init__(self):
        _check_width(self.width)

    @property
    def row_local(self) -> bool:
        return True

    def constraint_degrees(self) -> tuple[int, ...]:
        return (3,) * (self.width - 1)

    def transition(
        self, cur: Sequence[Val], nxt: Sequence[Val], periodic: Sequence[Val], public: Sequence[Val]
    ) -> list[Val]:
        consts = round_constants(self.width)
        return [cur[j + 1] - (cur[j] + consts[j]) ** 3 for j in range(self.width - 1)]


@jax.jit
def _rounds(x: jnp.ndarray, consts: jnp.ndarray) -> jnp.ndarray:
    """All round outputs for inputs ``x`` (``uint64[n]``): ``uint64[n, 1 + len(consts)]``."""

    def step(col, c):
        t = gl.add(col, c)
        nxt = gl.mul(gl.square(t), t)
        return nxt, nxt

    _, cols = lax.scan(step, x, consts)  # [width - 1, n]
    return jnp.concatenate([x[None, :], cols], axis=0).T


def wide_trace(log_n: int, width: int = DEFAULT_WIDTH, seed: int = 0) -> tuple[jnp.ndarray, tuple[()]]:
    """An honest trace (``uint64[2^log_n, width]``): random inputs in column 0, the rounds after
    it (computed column by column on device with ``lax.scan``). Public inputs are empty."""
    width = _check_width(width)
    if not isinstance(log_n, (int, np.integer)) or not 0 <= log_n <= 30:
        raise ValueError(f"wide_trace: log_n must be an int in [0, 30], got {log_n!r}")
    n = 1 << int(log_n)
    x = gl.random(jax.random.key(seed), (n,))
    consts = jnp.asarray(np.array(round_constants(width), dtype=np.uint64))
    return _rounds(x, consts), ()


def wide_example(log_n: int, seed: int = 0, width: int = DEFAULT_WIDTH) -> tuple[WideRounds, jnp.ndarray, tuple[()]]:
    """``(air, trace, public)`` for ``EXAMPLES``."""
    trace, public = wide_trace(log_n, width=width, seed=seed)
    return WideRounds(width=width), trace, public
