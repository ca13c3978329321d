"""Example AIRs with honest trace generators, for tests and benchmarks.

* :class:`Fibonacci` (:mod:`.fibonacci`): 2 columns, reads the next row, boundary constraints and
  one public input.
* :class:`Alu` (:mod:`.alu`): a 13-column row-local ALU table (add/sub/mul/muladd + padding).
* :class:`WideRounds` (:mod:`.wide`): a row-local table of 316 (default) columns of degree-3
  rounds, a memory stress shape.
* the machine (:mod:`.machine`): ``Alu(bus=True)``, :class:`Program` and :class:`RangeTable`,
  three tables of different heights on two LogUp buses.

``EXAMPLES[name](log_n, seed=0)`` returns ``(air, trace, public_inputs)`` with ``trace`` a
``uint64[2^log_n, air.width]`` JAX array; ``example_tables(name, log_n)`` returns any example,
the machine included, as a list of such tables (what :func:`jaxstark.prove` takes), and
``example_shapes(name, log_n)`` its ``(air, log2 rows)`` pairs without building traces (what
:func:`jaxstark.plan` takes).
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from jaxstark.air import AIR
from jaxstark.examples.alu import ALU_COLUMNS, ALU_OPS, Alu, alu_example, alu_trace
from jaxstark.examples.fibonacci import Fibonacci, fibonacci_example, fibonacci_trace
from jaxstark.examples.machine import Program, RangeTable, machine_example
from jaxstark.examples.wide import DEFAULT_WIDTH, WideRounds, round_constants, wide_example, wide_trace

__all__ = [
    "Fibonacci",
    "fibonacci_trace",
    "Alu",
    "alu_trace",
    "ALU_COLUMNS",
    "ALU_OPS",
    "WideRounds",
    "wide_trace",
    "round_constants",
    "DEFAULT_WIDTH",
    "Program",
    "RangeTable",
    "EXAMPLES",
    "TABLE_EXAMPLES",
    "example_tables",
    "example_shapes",
]

EXAMPLES: dict[str, Callable[..., tuple[AIR, jnp.ndarray, tuple[int, ...]]]] = {
    "fibonacci": fibonacci_example,
    "alu": alu_example,
    "wide": wide_example,
}

TABLE_EXAMPLES = (*EXAMPLES, "machine")


def example_tables(name: str, log_n: int, seed: int = 0) -> list[tuple[AIR, jnp.ndarray, tuple[int, ...]]]:
    """Any example as a list of ``(air, trace, public_inputs)`` tables (the machine's ALU has
    ``2^log_n`` rows)."""
    if name == "machine":
        return machine_example(log_n, seed=seed)
    if name not in EXAMPLES:
        raise ValueError(f"unknown example {name!r}; choose from {list(TABLE_EXAMPLES)}")
    return [EXAMPLES[name](log_n, seed)]


def example_shapes(name: str, log_n: int) -> list[tuple[AIR, int]]:
    """The ``(air, log2 rows)`` of each table of ``example_tables(name, log_n)``, without
    building the traces."""
    airs = {"fibonacci": Fibonacci, "alu": Alu, "wide": WideRounds}
    if name == "machine":
        return [(Alu(bus=True), log_n), (Program(), max(1, log_n - 2)), (RangeTable(bits=8), 8)]
    if name not in airs:
        raise ValueError(f"unknown example {name!r}; choose from {list(TABLE_EXAMPLES)}")
    return [(airs[name](), log_n)]
