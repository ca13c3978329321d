"""Round 1: commit to the main trace.

Interpolate every column over the size-n subgroup (coefficients), evaluate on the LDE coset,
and build the Merkle tree over the LDE rows; absorb its root.

Keeps for later rounds: the LDE (composition, DEEP, openings), the coefficients (out-of-domain
evaluation) and the tree (openings). Drops: the trace itself.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
from jaxtyping import Array, UInt8, UInt64

from jaxstark.lde import _evaluate_core
from jaxstark.merkle import _build
from jaxstark.ntt import _intt_core
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["TraceCommitment", "trace_commit"]


class TraceCommitment(eqx.Module):
    lde: UInt64[Array, " L c"]
    coeffs: UInt64[Array, " n c"]
    nodes: UInt8[Array, " two_L 32"]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


@functools.partial(jax.jit, static_argnames="hash_name", keep_unused=True)
def trace_commit(
    trace: UInt64[Array, " n c"], domain: Domain, tr: Transcript, *, hash_name: str
) -> tuple[TraceCommitment, Transcript]:
    coeffs = _intt_core(trace, domain.lde.ntt)
    lde = _evaluate_core(coeffs, domain.lde)
    nodes = _build(lde, hash_name)
    return TraceCommitment(lde, coeffs, nodes), tr.absorb_digest("trace root", nodes[1])
