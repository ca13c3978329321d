"""A row-local base-field ALU table, in the spirit of a zkVM ALU chip.

Each row is one operation ``out = op(a, b, c)`` or a padding row (every selector zero: a no-op
whose operands are unconstrained and whose output is 0).

Column layout (width 13, indices in :data:`ALU_COLUMNS`):

====  ============  ====================================================================
col   name          meaning
====  ============  ====================================================================
0     is_add        selector: ``out = a + b``
1     is_sub        selector: ``out = a - b``
2     is_mul        selector: ``out = a * b``
3     is_muladd     selector: ``out = a * b + c``
4     is_real       multiplicity: 1 on an operation row, 0 on padding (= selector sum)
5     op            opcode: 1 add, 2 sub, 3 mul, 4 muladd, 0 padding
6     a             first operand
7     b             second operand
8     c             addend (only read by muladd)
9     ab            the product ``a * b`` on real rows (shared by mul and muladd; free on padding)
10    out           the result
11    out_inv       ``1 / out`` when ``out != 0``, else 0
12    out_is_zero   1 when ``out == 0``, else 0
====  ============  ====================================================================

Transition constraints (15, none reads the next row; degrees in parentheses):

0-3.  ``s * (s - 1)`` for each selector s (2)
4.    ``is_real - (is_add + is_sub + is_mul + is_muladd)`` (1)
5.    ``is_real * (is_real - 1)``: at most one selector is set (2)
6.    ``op - (1*is_add + 2*is_sub + 3*is_mul + 4*is_muladd)`` (1)
7.    ``is_real * (ab - a * b)`` (3)
8.    ``is_add * (out - (a + b))`` (2)
9.    ``is_sub * (out - (a - b))`` (2)
10.   ``is_mul * (out - ab)`` (2)
11.   ``is_muladd * (out - (ab + c))`` (2)
12.   ``(1 - is_real) * out``: padding rows output 0 (2)
13.   ``out * out_is_zero`` (2)
14.   ``out * out_inv + out_is_zero - 1``: together with 13, ``out_is_zero`` is the is-zero flag (2)

No boundary constraints, no public inputs.

With ``Alu(bus=True)`` the table also talks to other tables (see :mod:`.machine`): every real
row sends ``(op, a, b, c, out)`` on the bus ``"alu"`` and its operands ``a`` and ``b`` on the
bus ``"range"``, each with multiplicity ``is_real``.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.field import goldilocks as gl
from jaxstark.logup import Interaction

__all__ = ["Alu", "alu_trace", "alu_rows", "alu_example", "ALU_COLUMNS", "ALU_OPS"]

P = gl.P

ALU_COLUMNS = (
    "is_add",
    "is_sub",
    "is_mul",
    "is_muladd",
    "is_real",
    "op",
    "a",
    "b",
    "c",
    "ab",
    "out",
    "out_inv",
    "out_is_zero",
)
ALU_OPS = {"pad": 0, "add": 1, "sub": 2, "mul": 3, "muladd": 4}
_COL = {name: i for i, name in enumerate(ALU_COLUMNS)}


class Alu(AIR):
    """Row-local ALU table (see the module docstring for the layout)."""

    width: int = eqx.field(static=True, default=len(ALU_COLUMNS))
    bus: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        if self.width != len(ALU_COLUMNS):
            raise ValueError(f"Alu has exactly {len(ALU_COLUMNS)} columns, got width={self.width}")

    @property
    def row_local(self) -> bool:
        return True

    def constraint_degrees(self) -> tuple[int, ...]:
        return (2, 2, 2, 2, 1, 2, 1, 3, 2, 2, 2, 2, 2, 2, 2)

    def interactions(self) -> list[Interaction]:
        if not self.bus:
            return []

        def is_real(row):
            return row[_COL["is_real"]]

        return [
            Interaction.send("alu", lambda row: [row[_COL[k]] for k in ("op", "a", "b", "c", "out")], is_real),
            Interaction.send("range", lambda row: [row[_COL["a"]]], is_real),
            Interaction.send("range", lambda row: [row[_COL["b"]]], is_real),
        ]

    def transition(
        self, cur: Sequence[Val], nxt: Sequence[Val], periodic: Sequence[Val], public: Sequence[Val]
    ) -> list[Val]:
        is_add, is_sub, is_mul, is_muladd, is_real, op, a, b, c, ab, out, out_inv, out_is_zero = (
            cur[_COL[name]] for name in ALU_COLUMNS
        )
        return [
            is_add * (is_add - 1),
            is_sub * (is_sub - 1),
            is_mul * (is_mul - 1),
            is_muladd * (is_muladd - 1),
            is_real - (is_add + is_sub + is_mul + is_muladd),
            is_real * (is_real - 1),
            op - (is_add + 2 * is_sub + 3 * is_mul + 4 * is_muladd),
            is_real * (ab - a * b),
            is_add * (out - (a + b)),
            is_sub * (out - (a - b)),
            is_mul * (out - ab),
            is_muladd * (out - (ab + c)),
            (1 - is_real) * out,
            out * out_is_zero,
            out * out_inv + out_is_zero - 1,
        ]


def alu_trace(log_n: int, seed: int = 0) -> tuple[jnp.ndarray, tuple[()]]:
    """An honest random ALU trace (``uint64[2^log_n, 13]``) and the (empty) public inputs.

    Operations are drawn at random (about 1/8 padding rows), operands uniformly from the field.
    The first rows are fixed to cover every case: add, sub, mul, muladd, padding, and (when
    there is room) a subtraction ``a - a`` with a zero result.
    """
    if not isinstance(log_n, (int, np.integer)) or not 1 <= log_n <= 30:
        raise ValueError(f"alu_trace: log_n must be an int in [1, 30], got {log_n!r}")
    n = 1 << int(log_n)
    rng = np.random.default_rng(seed)
    op = rng.choice(np.array([0, 1, 2, 3, 4], dtype=np.uint64), size=n, p=[0.125, 0.21875, 0.21875, 0.21875, 0.21875])
    prefix = np.array([1, 2, 3, 4, 0, 2], dtype=np.uint64)[:n]
    op[: len(prefix)] = prefix
    op[-1] = 0  # always end on a padding row
    a, b, c = (rng.integers(0, P, size=n, dtype=np.uint64, endpoint=False) for _ in range(3))
    if n > 5:
        b[5] = a[5]  # a zero result
    real = op != 0
    zero = np.zeros(n, np.uint64)
    a, b, c = (np.where(real, v, zero) for v in (a, b, c))  # padding rows hold zeros
    return _alu_columns(jnp.asarray(op), jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)), ()


@jax.jit
def _alu_columns(op: jnp.ndarray, a: jnp.ndarray, b: jnp.ndarray, c: jnp.ndarray) -> jnp.ndarray:
    """The full ``uint64[n, 13]`` trace from opcodes and (canonical, zero on padding) operands."""
    is_op = [op == np.uint64(k) for k in (1, 2, 3, 4)]
    ab = gl.mul(a, b)
    out = jnp.select(is_op, [gl.add(a, b), gl.sub(a, b), ab, gl.add(ab, c)], default=jnp.zeros_like(a))
    out_inv = gl.inv(out)  # element-wise a^(p-2); 0 -> 0
    out_is_zero = (out == np.uint64(0)).astype(jnp.uint64)
    is_real = (op != np.uint64(0)).astype(jnp.uint64)
    sel = [s.astype(jnp.uint64) for s in is_op]
    return jnp.stack([*sel, is_real, op, a, b, c, ab, out, out_inv, out_is_zero], axis=1)


def alu_example(log_n: int, seed: int = 0) -> tuple[Alu, jnp.ndarray, tuple[()]]:
    """``(air, trace, public)`` for ``EXAMPLES``."""
    trace, public = alu_trace(log_n, seed)
    return Alu(), trace, public


def alu_rows(op: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> jnp.ndarray:
    """The full trace from chosen operations (``op`` codes of :data:`ALU_OPS`; operands canonical
    and zero on padding rows)."""
    return _alu_columns(*(jnp.asarray(np.asarray(x, np.uint64)) for x in (op, a, b, c)))
