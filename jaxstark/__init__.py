"""jaxstark: a STARK prover and verifier in JAX with a static memory planner.

Importing jaxstark turns on JAX's 64-bit mode (``jax_enable_x64``): Goldilocks field elements
are ``uint64`` arrays and would otherwise be silently truncated to 32 bits. Every field
operation re-checks the flag and raises :class:`~jaxstark.errors.X64DisabledError` if it was
switched off later.
"""

import jax

jax.config.update("jax_enable_x64", True)

from jaxstark import compile_cache  # noqa: E402

compile_cache.configure()

from jaxstark import errors, field, hash, lde, merkle, ntt, poly, transcript  # noqa: E402, A004
from jaxstark.air import AIR, Val  # noqa: E402
from jaxstark.config import StarkConfig  # noqa: E402
from jaxstark.errors import (  # noqa: E402
    AirViolation,
    BusImbalance,
    DeviceBudgetExceeded,
    DeviceFailure,
    FieldDtypeError,
    InvalidProof,
    JaxstarkError,
    NonCanonicalError,
    ProofFormatError,
    ShapeError,
    X64DisabledError,
)
from jaxstark.field import ext, gl  # noqa: E402
from jaxstark.logup import Interaction  # noqa: E402
from jaxstark.memory import Plan, clear_caches, plan  # noqa: E402
from jaxstark.proof import Proof, TableProof  # noqa: E402
from jaxstark.prover import prove  # noqa: E402
from jaxstark.transcript import Transcript  # noqa: E402
from jaxstark.verifier import verify  # noqa: E402

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
    "AIR",
    "Val",
    "Interaction",
    "StarkConfig",
    "Proof",
    "TableProof",
    "prove",
    "verify",
    "plan",
    "Plan",
    "clear_caches",
    "AirViolation",
    "BusImbalance",
    "DeviceBudgetExceeded",
    "DeviceFailure",
    "InvalidProof",
    "ProofFormatError",
    "JaxstarkError",
    "NonCanonicalError",
    "FieldDtypeError",
    "ShapeError",
    "X64DisabledError",
]
