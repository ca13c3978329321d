"""Round 2: the composition polynomial.

Draw one extension challenge per constraint (transition, boundary, aux), evaluate every
constraint on the LDE, divide by its zerofier, combine:

    H(x) = sum_i alpha_i C_i(x) (x - w^(n-1)) / (x^n - 1) + sum_j beta_j (T_c(x) - v) / (x - w^r)
         + sum_k delta_k A_k(x) / (x^n - 1)

(for a row-local AIR the factor ``x - w^(n-1)`` is dropped: its constraints hold on every row,
the last one included; the aux (LogUp) constraints ``A_k`` always hold on every row, see
:mod:`jaxstark.logup`)

``x^n`` takes only ``blowup`` distinct values on the coset, so the transition zerofier costs
``blowup`` inversions; each boundary row costs one batch inversion over the LDE (one kernel pass
where the kernels run, :func:`jaxstark.kernels.inverse.base_batch_inv`). H has degree
below ``P * n`` (``P = max degree - 1`` parts); it is interpolated over the coset, split into
``P`` polynomials of degree < n (``H = sum_j x^(j n) H_j``), each re-evaluated on the LDE and the
``(L, P, 3)`` result committed. Coefficients of H at or beyond ``P * n`` must be zero; their
presence means the trace does not satisfy the AIR or a degree is understated, and the round
reports it (``excess``) so the prover can refuse.

Where the kernels run (a CUDA device), ``sum_i alpha_i C_i`` over the transition constraints is
one kernel pass per 32 constraints that calls the AIR's ``transition`` itself
(:mod:`jaxstark.kernels.composition`, for AIRs of up to its ``MAX_CONSTRAINTS``): the round
then holds that sum, not the per-column values XLA's fusion would keep live; the boundary and
aux quotients are XLA's either way (but for the boundary rows' inversions), the aux quotient
over :func:`aux_blocks` blocks of rows one after another where the round runs whole.

Keeps: the parts' coefficients (OOD), their LDE and tree (DEEP, openings). Drops: H itself and
every constraint evaluation.

When the planner recomputes the parts' tree (:mod:`jaxstark.memory.plan`), the round runs with
``tree=False`` -- no tree, the root not yet absorbed -- and :func:`composition_tree` builds the
tree in a program of its own, absorbs the root and keeps only it; the openings build the tree
again. (In one program XLA:CPU gives the tree's loop buffer an allocation of its own beside
the constraint temporaries, so the split is what makes the round's device set smaller.)
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark import kernels
from jaxstark.air import AIR
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.kernels import composition as kc
from jaxstark.kernels.inverse import base_batch_inv
from jaxstark.lde import _coset_interpolate, _evaluate_core, _lde_core
from jaxstark.logup import AuxFrame
from jaxstark.merkle import _build
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import aux_quotient, combine_constraints
from jaxstark.rounds.domain import Domain
from jaxstark.transcript import Transcript

__all__ = ["Composition", "composition", "composition_tree", "periodic_values", "aux_blocks"]

# Where the kernel sums the transition constraints and the round runs whole (blocks=1), the aux
# quotient is formed over blocks of at least AUX_BLOCK_ROWS LDE rows, at most AUX_MAX_BLOCKS of
# them, one after another (aux_blocks)
AUX_MAX_BLOCKS = 8
AUX_BLOCK_ROWS = 1 << 17


def aux_blocks(size: int, blowup: int) -> int:
    """The blocks of rows the aux quotient of a ``size``-row LDE at ``blowup`` is formed in where
    the kernel sums the transition constraints and the round runs whole: as many as
    :data:`AUX_MAX_BLOCKS`, each at least :data:`AUX_BLOCK_ROWS` rows and a multiple of
    ``blowup`` (one block below that). XLA:GPU's fusion of the quotient over the whole LDE keeps
    one to four extension values per row live, as its schedule picks (72-146 bytes per LDE row
    with one aux column at 2^16-2^22 rows on an H200, 80-136 at 2^20-2^22 on an H100); in blocks
    it holds a block's (the round 67-87 bytes per LDE row with aux columns, 50-67 without; H100,
    2026-12-07, ``benchmarks/RESULTS.md``)."""
    count = max(1, min(AUX_MAX_BLOCKS, size // max(AUX_BLOCK_ROWS, 1)))
    while count > 1 and (size % count or (size // count) % blowup):
        count -= 1
    return count


class Composition(eqx.Module):
    parts_coeffs: UInt64[Array, " n P 3"]
    parts_lde: UInt64[Array, " L P 3"]
    nodes: UInt8[Array, " two_L 32"]
    excess: Bool[Array, ""]

    @property
    def root(self) -> UInt8[Array, " 32"]:
        return self.nodes[1]


def periodic_values(air: AIR, domain: Domain) -> list[Array]:
    """Each periodic column evaluated on the LDE (the LDE of the column repeated to n rows)."""
    out = []
    for col in air.periodic_arrays():
        reps = jnp.tile(jnp.asarray(col), domain.n // len(col))[:, None]
        out.append(_lde_core(reps, domain.lde)[:, 0])
    return out


def _ext_columns(a: Array) -> list[Val]:
    """Extension columns ``(rows, 3a)`` (three base columns each) as ``a`` extension ``Val``s."""
    return [Val(a[:, 3 * j : 3 * j + 3], True) for j in range(a.shape[1] // 3)]


@functools.partial(jax.jit, static_argnames=("air", "hash_name", "tree", "blocks"), keep_unused=True)
def composition(
    domain: Domain,
    lde: UInt64[Array, " L c"],
    aux_lde: UInt64[Array, " L a3"] | None,
    logup: tuple[UInt64[Array, " 2 3"], UInt64[Array, " buses 3"]] | None,
    public: UInt64[Array, " k"],
    tr: Transcript,
    *,
    air: AIR,
    hash_name: str,
    tree: bool = True,
    blocks: int = 1,
) -> tuple[Composition, Transcript]:
    """``logup`` is ``(challenges, bus sums)``; ``aux_lde`` and ``logup`` are ``None`` for a table
    without interactions. ``tree=False``: ``nodes`` is a zero ``(2, 32)`` placeholder and the
    root is not absorbed (:func:`composition_tree` does both). ``blocks``: the constraints are
    evaluated over that many blocks of LDE rows one after another (each row's value is its own,
    and a batch inversion per block gives the same inverses), so that their temporaries are a
    block's; the planner chooses it when the round binds (:attr:`jaxstark.rounds.Round.blocked`).
    Where the kernel sums the transition constraints and ``blocks`` is 1, the aux quotient alone
    is formed in :func:`aux_blocks` blocks of rows."""
    n, b = domain.n, domain.blowup
    pub = [Val(public[i]) for i in range(public.shape[0])]
    tr, alphas = fs.composition_alphas(tr, air)
    xs = domain.points()
    size = lde.shape[0]
    if not isinstance(blocks, int) or blocks < 1 or size % blocks or (size // blocks) % b:
        raise ValueError(f"composition: blocks must be an int dividing the {size} LDE rows into multiples of {b}, "
                         f"got {blocks!r}")  # fmt: skip
    periodic = periodic_values(air, domain)
    # x^n on the coset takes blowup distinct values: offset^n * w_b^t for t mod b
    s_n = pow(domain.offset, n, gl.P)
    w_b = gl.root_of_unity(domain.log_blowup)
    inv_zn = np.array([pow((s_n * pow(w_b, t, gl.P) - 1) % gl.P, gl.P - 2, gl.P) for t in range(b)], np.uint64)
    alpha_vals = [Val(alphas[i], True) for i in range(alphas.shape[0])]

    def frame(aux_rows, aux_nxt):
        challenges, sums = logup
        return AuxFrame(
            _ext_columns(aux_rows), _ext_columns(aux_nxt), Val(challenges[0], True), Val(challenges[1], True),
            [Val(s, True) for s in sums],
        )  # fmt: skip

    zn_rows = lambda rows: Val(jnp.tile(jnp.asarray(inv_zn), rows // b))  # noqa: E731
    columns = lambda rows: [Val(rows[:, i]) for i in range(rows.shape[1])]  # noqa: E731

    def evaluate(x, cur_rows, nxt_rows, periodic_rows, aux_rows, aux_nxt, tsum=None, asum=None):  # -> (rows, 3)
        aux = frame(aux_rows, aux_nxt) if air.num_aux_columns and asum is None else None
        return combine_constraints(
            air, domain.log_n, Val(x), zn_rows(x.shape[0]), lambda d: Val(base_batch_inv(d.v)), columns(cur_rows),
            [] if nxt_rows is None else columns(nxt_rows), [Val(v) for v in periodic_rows], pub, alpha_vals, aux,
            None if tsum is None else Val(tsum, True), None if asum is None else Val(asum, True),
        ).v  # fmt: skip

    def in_blocks(count, body):  # body(start, rows, cut, ahead) -> (rows, 3), over `count` blocks of rows
        rows = size // count  # block j: rows [j R, (j + 1) R), their next rows b further on (wrapping at the end)

        def block(j):
            start = j * rows
            cut = lambda a: jax.lax.dynamic_slice_in_dim(a, start, rows)  # noqa: E731
            return body(start, rows, cut, (start + b + jnp.arange(rows)) % size)

        return jax.lax.map(block, jnp.arange(count)).reshape(size, 3)

    def aux_block(start, rows, cut, ahead):  # the aux quotient of a block of rows
        aux = frame(cut(aux_lde), jnp.take(aux_lde, ahead, axis=0))
        # a column at a time: the block of the columns the buses read, not of the whole matrix
        cur = [Val(jax.lax.dynamic_slice(lde, (start, i), (rows, 1))[:, 0]) for i in range(lde.shape[1])]
        deltas = alpha_vals[len(alpha_vals) - air.num_aux_columns :]
        return aux_quotient(air, domain.log_n, cur, aux, deltas, zn_rows(rows)).v

    has_aux = bool(air.num_aux_columns)
    k = len(air.constraint_degrees())
    # where the kernels run, the transition constraints' sum is one kernel pass
    # (jaxstark.kernels.composition): its memory is its output, whatever XLA would keep live
    # (size and blocks are powers of two, so every block's rows tile the kernel's)
    summed = bool(kernels.kernel_platforms()) and kc.supported(air)
    stacked = None
    if summed:  # the periodic columns as one matrix, once
        stacked = jnp.stack(periodic, axis=1) if periodic else jnp.zeros((size, 0), jnp.uint64)

    def kernel_sum(start, rows):
        return kc.transition_sum(lde, stacked, public, alphas[:k], start, air=air, shift=b, rows=rows,
                                 interpret=kernels.interpret())  # fmt: skip

    if blocks == 1:
        aux_nxt = lambda: jnp.roll(aux_lde, -b, axis=0) if has_aux else None  # noqa: E731
        reference = lambda: evaluate(xs, lde, jnp.roll(lde, -b, axis=0), periodic, aux_lde, aux_nxt())  # noqa: E731
        count = aux_blocks(size, b) if has_aux else 1

        def kernel():  # the aux quotient whole (one block) or in `count` blocks of rows
            if count == 1:
                return evaluate(xs, lde, None, periodic, aux_lde, aux_nxt(), kernel_sum(0, size))
            asum = in_blocks(count, aux_block)
            return evaluate(xs, lde, None, periodic, None, None, kernel_sum(0, size), asum)

        acc = kernels.switch(reference, kernel) if summed else reference()
    else:

        def block(start, rows, cut, ahead):
            aux_rows = (cut(aux_lde), jnp.take(aux_lde, ahead, axis=0)) if has_aux else (None, None)
            reference = lambda: evaluate(cut(xs), cut(lde), jnp.take(lde, ahead, axis=0),  # noqa: E731
                                         [cut(v) for v in periodic], *aux_rows)  # fmt: skip
            kernel = lambda: evaluate(cut(xs), cut(lde), None, [cut(v) for v in periodic], *aux_rows,  # noqa: E731
                                      kernel_sum(start, rows))  # fmt: skip
            return kernels.switch(reference, kernel) if summed else reference()

        acc = in_blocks(blocks, block)

    parts = air.composition_parts
    coeffs = _coset_interpolate(acc, domain.big, domain.offset)
    excess = jnp.any(coeffs[parts * n :] != np.uint64(0))
    parts_coeffs = jnp.transpose(coeffs[: parts * n].reshape(parts, n, 3), (1, 0, 2))
    parts_lde = _evaluate_core(parts_coeffs, domain.lde)
    if not tree:
        return Composition(parts_coeffs, parts_lde, jnp.zeros((2, 32), jnp.uint8), excess), tr
    nodes = _build(parts_lde, hash_name)
    tr = fs.absorb_composition(tr, nodes[1])
    return Composition(parts_coeffs, parts_lde, nodes, excess), tr


@functools.partial(jax.jit, static_argnames="hash_name", keep_unused=True)
def composition_tree(
    parts_lde: UInt64[Array, " L P 3"], tr: Transcript, *, hash_name: str
) -> tuple[UInt8[Array, " 2 32"], Transcript]:
    """The parts' tree, its root absorbed; returns only its first two rows (the zero row and the
    root) -- the tree of a round run with ``tree=False``."""
    nodes = _build(parts_lde, hash_name)
    return nodes[:2], fs.absorb_composition(tr, nodes[1])
