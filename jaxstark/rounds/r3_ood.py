"""Round 3: out-of-domain evaluations.

Draw ``z`` in the extension field; evaluate every trace column (main, then aux when the table
has interactions) at ``z`` and at ``z * w`` (the next row) and every composition part at ``z``;
absorb them.

On the CPU the sums run over blocks of :data:`OOD_BLOCK_ROWS` coefficients one after another
(:func:`row_blocks`): each block is evaluated with the powers ``1 .. x^(B-1)`` of one table and
scaled by ``x^(jB)``, so the round holds one block's products instead of every coefficient's
(the field sum is the same, in any order). On a CUDA device the sums are one kernel pass over
each coefficient matrix (:mod:`jaxstark.kernels.ood`: each block of rows forms its own powers,
nothing of size n is held besides the coefficients); elsewhere, one ``jnp`` piece.

Keeps: the evaluations (DEEP, proof). Drops: the trace, aux and part coefficients.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt64

from jaxstark import kernels
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.kernels import ood as ood_kernel
from jaxstark.kernels import switch
from jaxstark.poly import _evaluate_powers
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.transcript import Transcript

__all__ = ["OutOfDomain", "out_of_domain", "row_blocks", "OOD_BLOCK_ROWS"]

OOD_BLOCK_ROWS = 1 << 12  # on the CPU: coefficients per block of the out-of-domain sums


def row_blocks(n: int, platform: str) -> int:
    """How many blocks of coefficients the out-of-domain round of ``n`` rows on ``platform``
    sums one after another: on the CPU blocks of :data:`OOD_BLOCK_ROWS` (or one, below that);
    elsewhere 1."""
    return max(1, n // OOD_BLOCK_ROWS) if platform == "cpu" else 1


def _times_w(a: Array, j: int) -> Array:
    """``a w^j`` in GF(p^3) = GF(p)[w] / (w^3 - 2), for ``j`` in 0..2 (coordinates rotate, the
    wrapped ones doubled)."""
    for _ in range(j):
        a = jnp.stack([gl._add(a[..., 2], a[..., 2]), a[..., 0], a[..., 1]], axis=-1)
    return a


def _kernel_evaluations(trace, aux, parts, *, z, zg):
    """The round's evaluations by :func:`jaxstark.kernels.ood.evaluate`: base columns directly;
    an extension column ``a0 + a1 w + a2 w^2`` as its three base columns, ``sum_j w^j a_j(x)``."""
    both = jnp.stack([z, zg])

    def extension(coeffs, points):  # (n, E, 3) -> (E, K, 3)
        n, e = coeffs.shape[:2]
        s = ood_kernel.evaluate(coeffs.reshape(n, 3 * e), points, interpret=kernels.interpret())
        s = s.reshape(e, 3, *s.shape[1:])
        return gl._add(gl._add(s[:, 0], _times_w(s[:, 1], 1)), _times_w(s[:, 2], 2))

    t = ood_kernel.evaluate(trace, both, interpret=kernels.interpret())
    out = [t[:, 0], t[:, 1], extension(parts, z[None])[:, 0]]
    if aux is None:
        return (*out, jnp.zeros((0, 3), jnp.uint64), jnp.zeros((0, 3), jnp.uint64))
    a = extension(aux, both)
    return (*out, a[:, 0], a[:, 1])


class OutOfDomain(eqx.Module):
    z: UInt64[Array, " 3"]
    trace_z: UInt64[Array, " c 3"]
    trace_zg: UInt64[Array, " c 3"]
    parts_z: UInt64[Array, " P 3"]
    aux_z: UInt64[Array, " a 3"]  # (0, 3) without interactions
    aux_zg: UInt64[Array, " a 3"]


@functools.partial(jax.jit, static_argnames=("log_n", "blocks"), keep_unused=True)
def out_of_domain(
    trace_coeffs: UInt64[Array, " n c"],
    aux_coeffs: UInt64[Array, " n a3"] | None,
    parts_coeffs: UInt64[Array, " n P 3"],
    tr: Transcript,
    *,
    log_n: int,
    blocks: int = 1,
) -> tuple[OutOfDomain, Transcript]:
    """``z`` drawn and every evaluation absorbed; the sums over ``blocks`` blocks of
    coefficients one after another (:func:`row_blocks`)."""
    tr, z = fs.ood_point(tr)
    g = jnp.asarray(np.uint64(gl.root_of_unity(log_n)))
    zg = fext._mul_base(z, g)
    n = trace_coeffs.shape[0]
    if not isinstance(blocks, int) or not 1 <= blocks <= n or n % blocks:
        raise ValueError(f"out_of_domain: blocks must be an int dividing the {n} coefficients, got {blocks!r}")
    ext_aux = None if aux_coeffs is None else aux_coeffs.reshape(n, -1, 3)
    rows = n // blocks
    # the powers of z and z w as one table, which every evaluation below reads (one powers
    # computation in the program instead of one per evaluation)
    both = fext._powers(jnp.stack([z, zg]), rows)  # (rows, 2, 3)

    def evaluations(trace, aux, parts):  # (trace_z, trace_zg, parts_z, aux_z, aux_zg) of a block
        xz, xzg = both[:, 0], both[:, 1]
        out = [_evaluate_powers(trace, xz, False), _evaluate_powers(trace, xzg, False),
               _evaluate_powers(parts, xz, True)]  # fmt: skip
        if aux is None:
            return (*out, jnp.zeros((0, 3), jnp.uint64), jnp.zeros((0, 3), jnp.uint64))
        return (*out, _evaluate_powers(aux, xz, True), _evaluate_powers(aux, xzg, True))

    if blocks == 1:  # on a CUDA device: one pass of the kernel over each coefficient matrix
        values = switch(evaluations, functools.partial(_kernel_evaluations, z=z, zg=zg), trace_coeffs, ext_aux,
                        parts_coeffs)  # fmt: skip
    else:  # block j's sums times x^(j rows), added up block after block
        step = fext._mul(both[-1], jnp.stack([z, zg]))  # z^rows, (z w)^rows

        def body(j, carry):
            acc, scale = carry
            block = lambda x: None if x is None else jax.lax.dynamic_slice_in_dim(x, j * rows, rows)  # noqa: E731
            part = evaluations(block(trace_coeffs), block(ext_aux), block(parts_coeffs))
            at = (0, 1, 0, 0, 1)  # each evaluation's point: z or z w
            acc = tuple(gl._add(a, fext._mul(v, scale[k])) for a, v, k in zip(acc, part, at, strict=True))
            return acc, fext._mul(scale, step)

        first = None if ext_aux is None else ext_aux[:rows]
        shapes = jax.eval_shape(evaluations, trace_coeffs[:rows], first, parts_coeffs[:rows])
        zero = tuple(jnp.zeros(v.shape, v.dtype) for v in shapes)
        values, _ = jax.lax.fori_loop(0, blocks, body, (zero, fext._one_like(jnp.zeros((2, 3), jnp.uint64))))
    trace_z, trace_zg, parts_z, aux_z, aux_zg = values
    tr = fs.absorb_ood(tr, trace_z, trace_zg, parts_z, aux_z, aux_zg)
    return OutOfDomain(z, trace_z, trace_zg, parts_z, aux_z, aux_zg), tr
