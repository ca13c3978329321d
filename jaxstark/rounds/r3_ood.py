"""Round 3: out-of-domain evaluations.

Draw ``z`` in the extension field; evaluate every trace column (main, then aux when the table
has interactions) at ``z`` and at ``z * w`` (the next row) and every composition part at ``z``;
absorb them.

Keeps: the evaluations (DEEP, proof). Drops: the trace, aux and part coefficients.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt64

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.poly import _evaluate_powers
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.transcript import Transcript

__all__ = ["OutOfDomain", "out_of_domain"]


class OutOfDomain(eqx.Module):
    z: UInt64[Array, " 3"]
    trace_z: UInt64[Array, " c 3"]
    trace_zg: UInt64[Array, " c 3"]
    parts_z: UInt64[Array, " P 3"]
    aux_z: UInt64[Array, " a 3"]  # (0, 3) without interactions
    aux_zg: UInt64[Array, " a 3"]


@functools.partial(jax.jit, static_argnames="log_n", keep_unused=True)
def out_of_domain(
    trace_coeffs: UInt64[Array, " n c"],
    aux_coeffs: UInt64[Array, " n a3"] | None,
    parts_coeffs: UInt64[Array, " n P 3"],
    tr: Transcript,
    *,
    log_n: int,
) -> tuple[OutOfDomain, Transcript]:
    tr, z = fs.ood_point(tr)
    g = jnp.asarray(np.uint64(gl.root_of_unity(log_n)))
    zg = fext._mul_base(z, g)
    # the powers of z and z w as one table, which every evaluation below reads (one powers
    # computation in the program instead of one per evaluation)
    both = fext._powers(jnp.stack([z, zg]), trace_coeffs.shape[0])  # (n, 2, 3)
    xz, xzg = both[:, 0], both[:, 1]
    trace_z = _evaluate_powers(trace_coeffs, xz, False)
    trace_zg = _evaluate_powers(trace_coeffs, xzg, False)
    parts_z = _evaluate_powers(parts_coeffs, xz, True)
    if aux_coeffs is None:
        aux_z = aux_zg = jnp.zeros((0, 3), jnp.uint64)
    else:
        ext_coeffs = aux_coeffs.reshape(aux_coeffs.shape[0], -1, 3)
        aux_z, aux_zg = _evaluate_powers(ext_coeffs, xz, True), _evaluate_powers(ext_coeffs, xzg, True)
    tr = fs.absorb_ood(tr, trace_z, trace_zg, parts_z, aux_z, aux_zg)
    return OutOfDomain(z, trace_z, trace_zg, parts_z, aux_z, aux_zg), tr
