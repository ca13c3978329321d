"""A small machine of three tables tied together by two buses (LogUp).

* :class:`~jaxstark.examples.alu.Alu` with ``bus=True`` (``2^log_n`` rows): executes operations
  and sends each real row's ``(op, a, b, c, out)`` on bus ``"alu"`` and its operands ``a``, ``b``
  on bus ``"range"``.
* :class:`Program` (``2^(log_n - 2)`` rows, at least 2): the program's distinct instructions
  ``(op, a, b, c, out)`` with a multiplicity column ``count`` (how often each was executed);
  receives them on bus ``"alu"``. It has no constraints of its own: it is the claimed
  instruction list, and the bus proves that the ALU executed exactly these, as often as claimed.
* :class:`RangeTable` (``2^bits`` rows): the values ``0 ... 2^bits - 1`` (a counter from 0 whose
  last row is pinned to ``2^bits - 1``, so the height cannot be changed) with a multiplicity
  column; receives on bus ``"range"``. Together with the ALU's sends this proves
  ``a, b < 2^bits`` on every real ALU row.

``machine_example(log_n, bits=8)`` returns the tables as ``[(air, trace, public), ...]`` for
``jaxstark.prove``; their heights differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.examples.alu import Alu, alu_rows
from jaxstark.logup import Interaction

__all__ = ["Program", "RangeTable", "machine_example", "machine_traces"]


class Program(AIR):
    """Columns ``op, a, b, c, out, count``; receives ``(op, a, b, c, out)`` x ``count`` on
    ``"alu"``."""

    width: int = eqx.field(static=True, default=6)

    def __check_init__(self):
        if self.width != 6:
            raise ValueError(f"Program has exactly 6 columns, got width={self.width!r:.40}")

    @property
    def row_local(self) -> bool:
        return True

    def constraint_degrees(self) -> tuple[int, ...]:
        return ()

    def transition(self, cur, nxt, periodic, public) -> list[Val]:
        return []

    def interactions(self) -> list[Interaction]:
        return [Interaction.receive("alu", lambda row: list(row[:5]), lambda row: row[5])]


class RangeTable(AIR):
    """Columns ``value, count``: ``value`` counts 0, 1, ..., ``2^bits - 1``; receives ``value`` x
    ``count`` on ``"range"``."""

    width: int = eqx.field(static=True, default=2)
    bits: int = eqx.field(static=True, default=8)

    def __check_init__(self):
        if self.width != 2:
            raise ValueError(f"RangeTable has exactly 2 columns, got width={self.width!r:.40}")
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 1 <= self.bits <= 30:
            raise ValueError(f"RangeTable.bits must be an int in [1, 30], got {self.bits!r:.40}")

    def constraint_degrees(self) -> tuple[int, ...]:
        return (1,)

    def transition(self, cur: Sequence[Val], nxt: Sequence[Val], periodic, public) -> list[Val]:
        return [nxt[0] - cur[0] - 1]

    def boundary(self, public) -> list[tuple[int, int, int]]:
        return [(0, 0, 0), (0, -1, (1 << self.bits) - 1)]

    def interactions(self) -> list[Interaction]:
        return [Interaction.receive("range", lambda row: [row[0]], lambda row: row[1])]


def machine_traces(log_n: int, bits: int = 8, seed: int = 0) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Honest traces ``(alu, program, range)``: the ALU runs ``2^log_n`` rows (about 1/8 padding)
    drawn from a program of ``max(2, 2^(log_n - 2))`` random instructions with operands below
    ``2^bits``."""
    if not isinstance(log_n, (int, np.integer)) or not 2 <= log_n <= 30:
        raise ValueError(f"machine_traces: log_n must be an int in [2, 30], got {log_n!r}")
    if not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 20:
        raise ValueError(f"machine_traces: bits must be an int in [1, 20], got {bits!r}")
    n, m = 1 << log_n, max(2, 1 << (log_n - 2))
    rng = np.random.default_rng(seed)
    prog_op = rng.integers(1, 5, size=m, dtype=np.uint64)
    prog_a, prog_b, prog_c = (rng.integers(0, 1 << bits, size=m, dtype=np.uint64) for _ in range(3))
    pick = rng.integers(0, m, size=n)
    real = rng.random(n) >= 0.125
    real[0] = True
    op = np.where(real, prog_op[pick], 0).astype(np.uint64)
    a, b, c = (np.where(real, x[pick], 0).astype(np.uint64) for x in (prog_a, prog_b, prog_c))
    alu = alu_rows(op, a, b, c)
    prog_out = np.asarray(alu_rows(prog_op, prog_a, prog_b, prog_c))[:, 10]
    count = np.bincount(pick[real], minlength=m).astype(np.uint64)
    program = np.stack([prog_op, prog_a, prog_b, prog_c, prog_out, count], axis=1)
    values = np.arange(1 << bits, dtype=np.uint64)
    uses = np.bincount(np.concatenate([a[real], b[real]]).astype(np.int64), minlength=1 << bits).astype(np.uint64)
    return alu, jnp.asarray(program), jnp.asarray(np.stack([values, uses], axis=1))


def machine_example(log_n: int, bits: int = 8, seed: int = 0) -> list[tuple[AIR, jnp.ndarray, tuple[()]]]:
    """``[(Alu(bus=True), alu trace, ()), (Program(), program, ()), (RangeTable(bits), range, ())]``."""
    alu, program, rng = machine_traces(log_n, bits, seed)
    return [(Alu(bus=True), alu, ()), (Program(), program, ()), (RangeTable(bits=bits), rng, ())]
