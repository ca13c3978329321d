"""Algebraic intermediate representations (AIRs): what a table proves.

An AIR describes a trace of ``n`` rows by ``width`` base-field columns through

* **transition constraints** -- a pure function of a frame (current row, next row), the
  periodic values at that row and the public inputs, returning one value per constraint; each
  must vanish on every row except the last (the frame of row ``n-1`` wraps to row 0 and is not
  constrained);
* their **degrees** (as polynomials in the frame's values; periodic values count as degree 1);
* **boundary constraints** ``(column, row, value)`` (``row`` may be negative: ``-1`` is the last
  row; ``value`` an int or a :class:`Val` built from the public inputs, which ``boundary``
  receives as ``Val`` scalars so that a new public input never recompiles the prover);
* **periodic columns** (lists of values whose length is a power of two dividing ``n``);
* ``row_local``: no constraint reads the next row (such tables can later be split by rows);
* **interactions** with other tables over named buses (:class:`~jaxstark.logup.Interaction`):
  sends and receives of tuples of column expressions with multiplicities. Their aux columns and
  constraints are derived (see :mod:`jaxstark.logup`); ``row_local`` speaks of the main
  constraints only.

The same transition function serves the prover and the verifier: it is written with ``+``,
``-``, ``*``, ``**`` and integer constants (or ``Val.const(c)``) on :class:`Val` objects, which
the prover fills with base-field arrays over the whole low-degree extension and the verifier
with extension-field values at the out-of-domain point. Example::

    class Fibonacci(AIR):
        width = 2
        def constraint_degrees(self): return (1, 1)
        def transition(self, cur, nxt, periodic, public):
            return [nxt[0] - cur[1], nxt[1] - (cur[0] + cur[1])]
        def boundary(self, public): return [(0, 0, 1), (1, 0, 1), (1, -1, public[0])]
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
from collections.abc import Sequence

import equinox as eqx
import jax
import numpy as np

from jaxstark.errors import ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.field.val import Val
from jaxstark.logup import aux_degrees, signature

__all__ = ["AIR", "Val"]  # Val: jaxstark.field.val

P = gl.P


class AIR(eqx.Module):
    """Base class of every AIR. Subclasses define ``width`` (a class attribute or static field)
    and the methods below; everything else has a default."""

    width: int = eqx.field(static=True, default=0)

    MAX_WIDTH = 1 << 16

    def __check_init__(self) -> None:
        w = self.width
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or not 1 <= w <= self.MAX_WIDTH:
            raise ValueError(f"{type(self).__name__}.width must be an int in [1, {self.MAX_WIDTH}], got {w!r:.40}")

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def row_local(self) -> bool:
        """True when no transition constraint reads the next row (override to declare it)."""
        return False

    @property
    def num_public_inputs(self) -> int:
        return 0

    @abc.abstractmethod
    def constraint_degrees(self) -> tuple[int, ...]:
        """The degree of each transition constraint, in the order ``transition`` returns them."""

    @abc.abstractmethod
    def transition(
        self, cur: Sequence[Val], nxt: Sequence[Val], periodic: Sequence[Val], public: Sequence[Val]
    ) -> list[Val]:
        """Constraint values for one frame (vectorised: each ``Val`` may hold a batch)."""

    def boundary(self, public: Sequence[Val]) -> list[tuple[int, int, int | Val]]:
        """``(column, row, value)`` triples; negative rows count from the end; ``public`` holds
        the public inputs as base-field ``Val`` scalars (return them, or ints, as values)."""
        return []

    def interactions(self) -> list:
        """Sends and receives on buses (a list of :class:`~jaxstark.logup.Interaction`)."""
        return []

    @property
    def interactions_per_column(self) -> int:
        """How many interactions of a bus share one aux column: 2 (default, one degree higher)
        or 1 (see :mod:`jaxstark.logup`)."""
        return 2

    @property
    def num_aux_columns(self) -> int:
        """Extension-field aux columns derived from the interactions (0 without any)."""
        return len(self.aux_degrees())

    def aux_degrees(self) -> tuple[int, ...]:
        return aux_degrees(self)

    def periodic_columns(self) -> list[list[int]]:
        """Periodic columns (each a list of ints, length a power of two)."""
        return []

    def periodic_arrays(self) -> list[np.ndarray]:
        """The periodic columns as canonical ``uint64`` arrays."""
        return [np.array([int(v) % P for v in col], np.uint64) for col in self.periodic_columns()]

    @property
    def max_degree(self) -> int:
        return max((*self.constraint_degrees(), *self.aux_degrees(), 1))

    @property
    def composition_parts(self) -> int:
        """Number of degree-< n pieces the composition polynomial is split into."""
        return max(1, self.max_degree - 1)

    def check_height(self, log_n: int) -> None:
        """Raise :class:`~jaxstark.errors.ShapeError` if a trace of ``2^log_n`` rows cannot carry
        this AIR: a periodic column longer than the trace or not a power of two long, or a
        boundary row outside ``[-n, n)``."""
        n = 1 << log_n
        for i, col in enumerate(self.periodic_columns()):
            m = len(col)
            if m < 1 or m & (m - 1) or m > n:
                raise ShapeError(
                    f"{self.name}: periodic column {i} has length {m}; it must be a power of two no longer than the "
                    f"trace ({n} rows)"
                )
        for j, (col, row, _) in enumerate(self.boundary([HostVal(0)] * self.num_public_inputs)):
            if not 0 <= col < self.width or not -n <= row < n:
                raise ShapeError(
                    f"{self.name}: boundary constraint {j} is at column {col}, row {row}, outside a {n} x "
                    f"{self.width} trace"
                )

    def fingerprint(self) -> str:
        """A string binding the AIR's identity into the transcript and the proof: name, width,
        degrees, and a digest of its fields (every dataclass field, canonically encoded, so a
        statement's parameters are fixed before any challenge is drawn), boundary positions (and
        constant values), periodic columns, public-input count, row-locality and interactions
        (bus, kind, tuple length, degrees). (The constraint function itself is code; the verifier
        evaluates its own copy.)"""
        boundary = [
            (col, row, int(v) if isinstance(v, (int, np.integer)) else "public")
            for col, row, v in self.boundary([HostVal(0)] * self.num_public_inputs)
        ]
        periodic = [col.tolist() for col in self.periodic_arrays()]
        fields = [(f.name, _canonical(getattr(self, f.name))) for f in dataclasses.fields(self)]
        extra = repr((fields, boundary, periodic, self.num_public_inputs, self.row_local, signature(self))).encode()
        digest = hashlib.sha256(extra).hexdigest()[:16]
        return f"{self.name}/w{self.width}/d{','.join(map(str, self.constraint_degrees()))}/{digest}"


def _canonical(value) -> str:
    """An injective text for a field value: plain data as its repr, sequences item by item,
    arrays by dtype, shape and a digest of their bytes, anything else by type and repr."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}[{','.join(_canonical(v) for v in value)}]"
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        a = np.asarray(value)
        return f"array:{a.dtype.str}:{a.shape}:{hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}"
    return f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"
