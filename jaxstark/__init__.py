"""jaxstark: a STARK prover and verifier in JAX with a static memory planner.

Importing jaxstark turns on JAX's 64-bit mode (``jax_enable_x64``): Goldilocks field elements
are ``uint64`` arrays and would otherwise be silently truncated to 32 bits. Every field
operation re-checks the flag and raises :class:`~jaxstark.errors.X64DisabledError` if it was
switched off later.
"""

import jax

jax.config.update("jax_enable_x64", True)

from jaxstark import errors, field, hash, lde, merkle, ntt, poly, transcript  # noqa: E402, A004
from jaxstark.errors import (  # noqa: E402
    FieldDtypeError,
    JaxstarkError,
    NonCanonicalError,
    ShapeError,
    X64DisabledError,
)
from jaxstark.field import ext, gl  # noqa: E402
from jaxstark.transcript import Transcript  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "errors",
    "field",
    "gl",
    "ext",
    "ntt",
    "lde",
    "poly",
    "hash",
    "merkle",
    "transcript",
    "Transcript",
    "JaxstarkError",
    "NonCanonicalError",
    "FieldDtypeError",
    "ShapeError",
    "X64DisabledError",
]
