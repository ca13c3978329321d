"""What every round needs to know about the evaluation domains, as one PyTree argument.

``Domain`` holds the static sizes (trace rows ``n = 2^log_n``, LDE size ``L = n * blowup``, coset
offset) and the device tables the rounds use: the size-n LDE tables (twiddles and coset shifts)
and the size-L twiddles (for interpolating the composition polynomial over the coset). Passing
it as an argument keeps the tables out of the compiled programs (no embedded constants) and
makes them visible to the memory planner.
"""

from __future__ import annotations

import equinox as eqx
from jaxtyping import Array, UInt64

from jaxstark.lde import DEFAULT_OFFSET, LDETables, _coset_points, lde_tables
from jaxstark.ntt import NTTTables, ntt_tables

__all__ = ["Domain", "make_domain"]


class Domain(eqx.Module):
    log_n: int = eqx.field(static=True)
    log_blowup: int = eqx.field(static=True)
    offset: int = eqx.field(static=True)
    lde: LDETables
    big: NTTTables  # size-L twiddles

    @property
    def n(self) -> int:
        return 1 << self.log_n

    @property
    def size(self) -> int:
        return self.n << self.log_blowup

    @property
    def log_size(self) -> int:
        return self.log_n + self.log_blowup

    @property
    def blowup(self) -> int:
        return 1 << self.log_blowup

    def points(self) -> UInt64[Array, " L"]:
        """The LDE coset ``offset * w_L^t`` in natural order (traceable)."""
        return _coset_points(self.log_size, self.offset)


def make_domain(log_n: int, blowup: int, offset: int = DEFAULT_OFFSET) -> Domain:
    """Tables for a 2^log_n-row trace at ``blowup`` (cached per shape)."""
    tables = lde_tables(log_n, blowup, offset)
    return Domain(log_n, tables.log_blowup, offset, tables, ntt_tables(log_n + tables.log_blowup))
