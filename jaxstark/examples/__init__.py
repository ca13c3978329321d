"""Example AIRs with honest trace generators, for tests and benchmarks.

* :class:`Fibonacci` (:mod:`.fibonacci`): 2 columns, reads the next row, boundary constraints and
  one public input.
* :class:`Alu` (:mod:`.alu`): a 13-column row-local ALU table (add/sub/mul/muladd + padding).
* :class:`WideRounds` (:mod:`.wide`): a row-local table of 316 (default) columns of degree-3
  rounds, a memory stress shape.

``EXAMPLES[name](log_n, seed=0)`` returns ``(air, trace, public_inputs)`` with ``trace`` a
``uint64[2^log_n, air.width]`` JAX array.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from jaxstark.air import AIR
from jaxstark.examples.alu import ALU_COLUMNS, ALU_OPS, Alu, alu_example, alu_trace
from jaxstark.examples.fibonacci import Fibonacci, fibonacci_example, fibonacci_trace
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
    "EXAMPLES",
]

EXAMPLES: dict[str, Callable[..., tuple[AIR, jnp.ndarray, tuple[int, ...]]]] = {
    "fibonacci": fibonacci_example,
    "alu": alu_example,
    "wide": wide_example,
}
