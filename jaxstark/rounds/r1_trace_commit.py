"""Round 1: commit to the main trace.

Interpolate every column over the size-n subgroup (coefficients), evaluate on the LDE coset,
and build the Merkle tree over the LDE rows; absorb its root. The same program checks that every
trace value is below p (:func:`field_check`, one reduction over the trace it reads anyway); the
prover reads the result with the round's other values and names the first bad row and column.

Keeps for later rounds: the LDE (composition, DEEP, openings), the coefficients (out-of-domain
evaluation), the tree (openings) and the field check. Drops: the trace itself.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt8, UInt64

from jaxstark.field.goldilocks import P
from jaxstark.lde import _interpolate_extend
from jaxstark.merkle import _build
from jaxstark.protocol.fiat_shamir import absorb_trace
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["TraceCommitment", "trace_commit", "trace_commit_group", "field_check"]


class TraceCommitment(eqx.Module):
    lde: UInt64[Array, " L c"]
    coeffs: UInt64[Array, " n c"]
    nodes: UInt8[Array, " two_L 32"]
    bad: UInt64[Array, " 3"]  # field_check of the trace

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


def field_check(trace: UInt64[Array, " n c"]) -> UInt64[Array, " 3"]:
    """``[first, count, value]``: the row-major index of the first value ``>= p`` (``n * c`` when
    there is none), how many there are, and the first one (0 when none)."""
    flat = trace.reshape(-1)
    size = np.uint64(flat.shape[0])  # a trace has at least 2 rows and 1 column
    bad = flat >= np.uint64(P)
    first = jnp.min(jnp.where(bad, jnp.arange(flat.shape[0], dtype=jnp.uint64), size))
    count = jnp.sum(bad, dtype=jnp.uint64)
    value = jnp.where(count > 0, flat[jnp.minimum(first, size - 1)], np.uint64(0))
    return jnp.stack([first, count, value])


def _commit(trace: UInt64[Array, " n c"], domain: Domain, hash_name: str) -> TraceCommitment:
    coeffs, lde = _interpolate_extend(trace, domain.lde)
    return TraceCommitment(lde, coeffs, _build(lde, hash_name), field_check(trace))


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
