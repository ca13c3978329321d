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

from jaxstark.lde import _interpolate_extend
from jaxstark.merkle import _build
from jaxstark.protocol.fiat_shamir import absorb_trace
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["TraceCommitment", "trace_commit", "trace_commit_group"]


class TraceCommitment(eqx.Module):
    lde: UInt64[Array, " L c"]
    coeffs: UInt64[Array, " n c"]
    nodes: UInt8[Array, " two_L 32"]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


def _commit(trace: UInt64[Array, " n c"], domain: Domain, hash_name: str) -> TraceCommitment:
    coeffs, lde = _interpolate_extend(trace, domain.lde)
    return TraceCommitment(lde, coeffs, _build(lde, hash_name))


@functools.partial(jax.jit, static_argnames="hash_name", keep_unused=True)
def trace_commit(
    trace: UInt64[Array, " n c"], domain: Domain, tr: Transcript, *, hash_name: str
) -> tuple[TraceCommitment, Transcript]:
    r1 = _commit(trace, domain, hash_name)
    return r1, absorb_trace(tr, r1.root)


@functools.partial(jax.jit, static_argnames="hash_name", keep_unused=True)
def trace_commit_group(
    traces: UInt64[Array, " g n c"], domain: Domain, tr: Transcript, *, hash_name: str
) -> tuple[TraceCommitment, Transcript]:
    """:func:`trace_commit` for a group of row chunks under ``vmap`` (every leaf of the result
    gains a leading group axis); the roots are absorbed in chunk order, so the transcript is
    that of the chunks committed one after another."""
    r1 = jax.vmap(lambda t: _commit(t, domain, hash_name))(traces)
    return r1, tr.absorb_each(absorb_trace, r1.nodes[:, 1])
