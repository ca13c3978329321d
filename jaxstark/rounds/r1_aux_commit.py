"""Round 1, second half: the aux (LogUp) trace of a table with interactions.

After every table's main root is absorbed (in table order), two extension challenges
``beta, gamma`` are drawn once (:func:`logup_challenges`) and shared by all tables. Each table with
interactions then builds its aux columns from its trace (:func:`jaxstark.logup.build_aux`:
fingerprints, one batch inversion, term columns, running sums), interpolates and extends them
like the main trace (each extension column as three base columns), commits them, and absorbs its
aux root and its bus contributions (in table order). Tables without interactions skip this round
entirely.

Keeps: the aux LDE (composition, DEEP, openings), its coefficients (OOD), its tree (openings),
the bus contributions (proof). Drops: the aux columns on the trace domain and every inverse.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark.air import AIR
from jaxstark.lde import _interpolate_extend
from jaxstark.logup import build_aux
from jaxstark.merkle import _build
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.fiat_shamir import absorb_aux
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["AuxCommitment", "aux_commit", "aux_commit_group", "logup_challenges"]


class AuxCommitment(eqx.Module):
    lde: UInt64[Array, " L a3"]
    coeffs: UInt64[Array, " n a3"]
    nodes: UInt8[Array, " two_L 32"]
    sums: UInt64[Array, " buses 3"]
    degenerate: Bool[Array, ""]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


@functools.partial(jax.jit, keep_unused=True)
def logup_challenges(tr: Transcript) -> tuple[Transcript, UInt64[Array, " 2 3"]]:
    """``(beta, gamma)``, drawn once after every main commitment."""
    return fs.logup_challenges(tr)


def _commit(trace: UInt64[Array, " n c"], domain: Domain, challenges: UInt64[Array, " 2 3"], air: AIR,
            hash_name: str) -> AuxCommitment:  # fmt: skip
    aux, sums, degenerate = build_aux(air, trace, challenges[0], challenges[1])
    coeffs, lde = _interpolate_extend(aux.reshape(domain.n, -1), domain.lde)
    return AuxCommitment(lde, coeffs, _build(lde, hash_name), sums, degenerate)


@functools.partial(jax.jit, static_argnames=("air", "hash_name"), keep_unused=True)
def aux_commit(
    trace: UInt64[Array, " n c"], domain: Domain, challenges: UInt64[Array, " 2 3"], tr: Transcript, *, air: AIR,
    hash_name: str,
) -> tuple[AuxCommitment, Transcript]:  # fmt: skip
    aux = _commit(trace, domain, challenges, air, hash_name)
    return aux, absorb_aux(tr, aux.root, aux.sums)


@functools.partial(jax.jit, static_argnames=("air", "hash_name"), keep_unused=True)
def aux_commit_group(
    traces: UInt64[Array, " g n c"], domain: Domain, challenges: UInt64[Array, " 2 3"], tr: Transcript, *, air: AIR,
    hash_name: str,
) -> tuple[AuxCommitment, Transcript]:  # fmt: skip
    """:func:`aux_commit` for a group of row chunks under ``vmap``; roots and bus sums absorbed
    in chunk order."""
    aux = jax.vmap(lambda t: _commit(t, domain, challenges, air, hash_name))(traces)
    return aux, tr.absorb_each(lambda t, x: absorb_aux(t, *x), (aux.nodes[:, 1], aux.sums))
