"""Round 5: grinding, query sampling and openings.

Search a proof-of-work nonce (``config.grinding_bits`` zero bits, see
:meth:`Transcript.grind`), absorb it, draw ``num_queries`` positions in the LDE domain, and open
at each position ``t``: the trace row ``t`` (main, and aux when the table has interactions),
the composition-part row ``t``, and in FRI layer
``k`` the leaf ``t mod (L / 2^(k+1))`` -- each with its Merkle path.

Keeps: only the openings, which go into the proof. Drops: every LDE and tree.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt8, UInt32, UInt64

from jaxstark.merkle import _open
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.rounds.r1_aux_commit import AuxCommitment
from jaxstark.rounds.r1_trace_commit import TraceCommitment
from jaxstark.rounds.r2_composition import Composition
from jaxstark.rounds.r4_fri_final import FriCommitment
from jaxstark.transcript import Transcript

__all__ = ["Openings", "queries"]


class Openings(eqx.Module):
    nonce: UInt64[Array, ""]
    indices: UInt32[Array, " q"]
    trace_rows: UInt64[Array, " q c"]
    trace_paths: UInt8[Array, " q logL 32"]
    aux_rows: UInt64[Array, " q a3"]  # (q, 0) and (q, 0, 32) without interactions
    aux_paths: UInt8[Array, " q logL 32"]
    parts_rows: UInt64[Array, " q P3"]
    parts_paths: UInt8[Array, " q logL 32"]
    fri_rows: tuple[UInt64[Array, " q 6"], ...]
    fri_paths: tuple[UInt8[Array, " q logh 32"], ...]


@functools.partial(jax.jit, static_argnames=("grinding_bits", "num_queries", "log_size"), keep_unused=True)
def queries(
    trace: TraceCommitment,
    aux: AuxCommitment | None,
    comp: Composition,
    fri: FriCommitment,
    tr: Transcript,
    *,
    grinding_bits: int,
    num_queries: int,
    log_size: int,
) -> tuple[Openings, Transcript]:
    nonce = tr.grind(grinding_bits)
    tr = fs.absorb_nonce(tr, nonce)
    tr, idx = fs.query_positions(tr, num_queries, log_size)
    t_rows, t_paths = _open(trace.nodes, trace.lde, idx)
    if aux is None:
        a_rows, a_paths = jnp.zeros((num_queries, 0), jnp.uint64), jnp.zeros((num_queries, 0, 32), jnp.uint8)
    else:
        a_rows, a_paths = _open(aux.nodes, aux.lde, idx)
    p_rows, p_paths = _open(comp.nodes, comp.parts_lde, idx)
    f_rows, f_paths = [], []
    for leaves, nodes in zip(fri.leaves, fri.nodes, strict=True):
        pos = idx & np.uint32(leaves.shape[0] - 1)
        r, p = _open(nodes, leaves, pos)
        f_rows.append(r)
        f_paths.append(p)
    return Openings(nonce, idx, t_rows, t_paths, a_rows, a_paths, p_rows, p_paths, tuple(f_rows), tuple(f_paths)), tr
