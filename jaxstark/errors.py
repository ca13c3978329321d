"""Exceptions raised by jaxstark.

Every error a user can provoke with bad input is one of these, and its message names the
problem (which argument, which shape or value, what was expected).
"""

from __future__ import annotations


class JaxstarkError(Exception):
    """Base class of every jaxstark error."""


class NonCanonicalError(JaxstarkError, ValueError):
    """A field element is not in canonical form (its value is >= p)."""


class FieldDtypeError(JaxstarkError, TypeError):
    """An array that should hold Goldilocks elements does not have dtype uint64."""


class ShapeError(JaxstarkError, ValueError):
    """An array has the wrong rank or size (e.g. a row count that is not a power of two)."""


class X64DisabledError(JaxstarkError, RuntimeError):
    """JAX's 64-bit mode was switched off after jaxstark enabled it."""


REJECTIONS = {
    "format": "the proof bytes do not follow the documented format",
    "malformed": "a field of the proof has the wrong type, shape or dtype, or a non-canonical field element",
    "security": "the parameters give fewer conjectured bits than the verifier's floor",
    "wrong-config": "the proof was made with other parameters",
    "tables": "the proof has another number of tables than the statement or its chunk layout",
    "chunks": "the chunk layout is out of bounds, splits a table that cannot be split, or mixes heights",
    "wrong-air": "a table's proof is for another AIR",
    "public-inputs": "the statement's public inputs do not fit the AIR",
    "wrong-height": "a table's height differs from the statement's or cannot carry its AIR",
    "digest": "a Poseidon2 digest word is not a canonical field element",
    "bus": "a bus's published contributions do not sum to zero",
    "ood": "the out-of-domain point is in the base field, or the claimed values there break the constraints",
    "pow": "the proof-of-work nonce is wrong",
    "trace-path": "a main-trace opening does not match its Merkle root",
    "aux-path": "an aux-trace opening does not match its Merkle root",
    "composition-path": "a composition opening does not match its Merkle root",
    "fri-path": "a FRI layer opening does not match its Merkle root",
    "deep": "the first FRI layer (or, without layers, the final polynomial) disagrees with the DEEP value",
    "fri-fold": "a FRI layer disagrees with the fold of the layer before",
    "fri-final": "the last fold disagrees with the final polynomial",
}


class InvalidProof(JaxstarkError):
    """The verifier rejected a proof. ``code`` names the failed check, one of
    :data:`REJECTIONS` (e.g. ``"ood"``, ``"trace-path"``, ``"fri-fold"``); the message says what
    and where."""

    def __init__(self, code: str, message: str):
        if code not in REJECTIONS:
            raise ValueError(f"InvalidProof: unknown rejection code {code!r} (known: {sorted(REJECTIONS)})")
        super().__init__(f"proof rejected [{code}]: {message}")
        self.code = code
        self.reason = message


class ProofFormatError(InvalidProof):
    """The proof bytes do not follow the documented format."""

    def __init__(self, message: str):
        super().__init__("format", message)


class AirViolation(JaxstarkError, ValueError):
    """The trace does not satisfy its AIR (raised by the prover, before or instead of proving)."""


class BusImbalance(AirViolation):
    """The tables' sends and receives on a bus differ as multisets (raised by the prover's debug
    check). ``bus`` names the bus; the message gives a witness tuple and its net multiplicity."""

    def __init__(self, bus: str, message: str):
        super().__init__(message)
        self.bus = bus


class DeviceBudgetExceeded(JaxstarkError, MemoryError):
    """A round's planned device set exceeds the memory budget; raised by the planner before any
    round is dispatched. Attributes: ``table``, ``round``, ``shape``, ``terms`` (name -> bytes),
    ``total``, ``budget``, ``budget_source``, ``live_memory``, ``allocator_posture``."""

    def __init__(self, message: str, **facts):
        super().__init__(message)
        for key, value in facts.items():
            setattr(self, key, value)


class DeviceFailure(JaxstarkError, RuntimeError):
    """A device error during an admitted run (e.g. XLA's ``RESOURCE_EXHAUSTED``), re-raised with
    the planner's diagnostic for the round that raised it -- or, for a failure while rounds run
    on the device (the host does not wait for each), for the last round dispatched when the host
    reads the results -- and XLA's own message. Never retried on the host
    (except under the test-only ``JAXSTARK_TEST_ONLY_HOST_FALLBACK=1``)."""

    def __init__(self, diagnostic: str, cause: BaseException):
        super().__init__(f"device failure during an admitted run: {diagnostic}\nXLA: {type(cause).__name__}: {cause}")
        self.diagnostic = diagnostic
        self.xla_message = str(cause)
