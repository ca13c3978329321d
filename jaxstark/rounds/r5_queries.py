"""Round 5: grinding and query sampling.

Search a proof-of-work nonce (``config.grinding_bits`` zero bits, see
:meth:`Transcript.grind`), absorb it, and draw ``num_queries`` positions in the LDE domain. The
rows at those positions are opened per commitment by :mod:`jaxstark.rounds.r5_openings`.

Keeps: the nonce and the positions. Takes only the transcript, so no LDE or tree is on the
device for the grinding.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
from jaxtyping import Array, UInt32, UInt64

from jaxstark.protocol import fiat_shamir as fs
from jaxstark.transcript import Transcript

__all__ = ["Queries", "queries"]


class Queries(eqx.Module):
    nonce: UInt64[Array, ""]
    indices: UInt32[Array, " q"]


@functools.partial(jax.jit, static_argnames=("grinding_bits", "num_queries", "log_size", "batch"), keep_unused=True)
def queries(
    tr: Transcript, *, grinding_bits: int, num_queries: int, log_size: int, batch: int | None = None
) -> tuple[Queries, Transcript]:
    """``batch``: nonces per grinding step (default :func:`~jaxstark.transcript.grind_batch` on
    the CPU; the schedule passes the device's). The nonce found does not depend on it."""
    nonce = tr.grind(grinding_bits, batch)
    tr = fs.absorb_nonce(tr, nonce)
    tr, idx = fs.query_positions(tr, num_queries, log_size)
    return Queries(nonce, idx), tr
