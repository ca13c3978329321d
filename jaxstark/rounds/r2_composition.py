"""Round 2: the composition polynomial.

Draw one extension challenge per constraint (transition and boundary), evaluate every
constraint on the LDE, divide by its zerofier, combine:

    H(x) = sum_i alpha_i C_i(x) (x - w^(n-1)) / (x^n - 1) + sum_j beta_j (T_c(x) - v) / (x - w^r)

(for a row-local AIR the factor ``x - w^(n-1)`` is dropped: its constraints hold on every row,
the last one included)

``x^n`` takes only ``blowup`` distinct values on the coset, so the transition zerofier costs
``blowup`` inversions; each boundary row costs one batch inversion over the LDE. H has degree
below ``P * n`` (``P = max degree - 1`` parts); it is interpolated over the coset, split into
``P`` polynomials of degree < n (``H = sum_j x^(j n) H_j``), each re-evaluated on the LDE and the
``(L, P, 3)`` result committed. Coefficients of H at or beyond ``P * n`` must be zero; their
presence means the trace does not satisfy the AIR or a degree is understated, and the round
reports it (``excess``) so the prover can refuse.

Keeps: the parts' coefficients (OOD), their LDE and tree (DEEP, openings). Drops: H itself and
every constraint evaluation.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark.air import AIR, Val
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.lde import _evaluate_core, _lde_core
from jaxstark.merkle import _build
from jaxstark.ntt import _intt_core
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["Composition", "composition", "periodic_values", "num_constraints"]


class Composition(eqx.Module):
    parts_coeffs: UInt64[Array, " n P 3"]
    parts_lde: UInt64[Array, " L P 3"]
    nodes: UInt8[Array, " two_L 32"]
    excess: Bool[Array, ""]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


def num_constraints(air: AIR) -> int:
    return len(air.constraint_degrees()) + len(air.boundary(tuple(range(air.num_public_inputs))))


def periodic_values(air: AIR, domain: Domain) -> list[Array]:
    """Each periodic column evaluated on the LDE (the LDE of the column repeated to n rows)."""
    out = []
    for col in air.periodic_columns():
        base = jnp.asarray(np.array([int(v) % gl.P for v in col], np.uint64))
        reps = jnp.tile(base, domain.n // len(col))[:, None]
        out.append(_lde_core(reps, domain.lde)[:, 0])
    return out


def _accumulate(acc: Array, alpha: Array, q: Val) -> Array:
    term = fext._mul_base(alpha, q.v) if not q.is_ext else fext._mul(alpha, q.v)
    return fext._add(acc, term)


def _normalize_row(row: int, n: int) -> int:
    return row % n


@functools.partial(jax.jit, static_argnames=("air", "hash_name"))
def composition(
    air: AIR, domain: Domain, lde: UInt64[Array, " L c"], public: UInt64[Array, " k"], tr: Transcript, *, hash_name: str
) -> tuple[Composition, Transcript]:
    n, L, b = domain.n, domain.size, domain.blowup
    degrees = air.constraint_degrees()
    pub = [Val(public[i]) for i in range(public.shape[0])]
    boundary = air.boundary(pub)
    tr, alphas = tr.challenge_ext("composition alphas", len(degrees) + len(boundary))

    xs = domain.points()
    cur = [Val(lde[:, i]) for i in range(lde.shape[1])]
    nxt_lde = jnp.roll(lde, -b, axis=0)
    nxt = [Val(nxt_lde[:, i]) for i in range(lde.shape[1])]
    periodic = [Val(v) for v in periodic_values(air, domain)]
    constraints = air.transition(cur, nxt, periodic, pub)
    if len(constraints) != len(degrees):
        raise ValueError(
            f"{air.name}.transition returned {len(constraints)} constraints but constraint_degrees() lists "
            f"{len(degrees)}"
        )

    # x^n on the coset takes blowup distinct values: offset^n * w_b^t for t mod b
    s_n = pow(domain.offset, n, gl.P)
    w_b = gl.root_of_unity(domain.log_blowup)
    zn = [(s_n * pow(w_b, t, gl.P) - 1) % gl.P for t in range(b)]
    inv_zn = jnp.asarray(np.array([pow(v, gl.P - 2, gl.P) for v in zn], np.uint64))
    if air.row_local:  # every row is constrained (the frame never reads the next row)
        trans_factor = jnp.tile(inv_zn, n)
    else:  # the frame of the last row wraps around and is not constrained
        last = np.uint64(pow(gl.root_of_unity(domain.log_n), n - 1, gl.P))
        trans_factor = gl._mul(gl._sub(xs, last), jnp.tile(inv_zn, n))

    acc = jnp.zeros((L, 3), jnp.uint64)
    for i, c in enumerate(constraints):
        acc = _accumulate(acc, alphas[i], c * Val(trans_factor))
    inv_cache: dict[int, Array] = {}
    for j, (col, row, value) in enumerate(boundary):
        r = _normalize_row(row, n)
        if r not in inv_cache:
            point = np.uint64(pow(gl.root_of_unity(domain.log_n), r, gl.P))
            inv_cache[r] = gl._batch_inv(gl._sub(xs, point))
        q = (cur[col] - value) * Val(inv_cache[r])
        acc = _accumulate(acc, alphas[len(degrees) + j], q)

    parts = air.composition_parts
    shifted = _intt_core(acc, domain.big)  # coefficients of H(offset * y)
    inv_offset = np.uint64(pow(domain.offset, gl.P - 2, gl.P))
    coeffs = gl._mul(shifted, gl._powers(jnp.asarray(inv_offset), L)[:, None])
    excess = jnp.any(coeffs[parts * n :] != np.uint64(0))
    parts_coeffs = jnp.transpose(coeffs[: parts * n].reshape(parts, n, 3), (1, 0, 2))
    parts_lde = _evaluate_core(parts_coeffs, domain.lde)
    nodes = _build(parts_lde, hash_name)
    tr = tr.absorb_digest("composition root", nodes[1])
    return Composition(parts_coeffs, parts_lde, nodes, excess), tr
