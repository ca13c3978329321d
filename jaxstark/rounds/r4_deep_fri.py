"""Round 4: DEEP composition and the FRI commit phase.

DEEP: with one extension challenge ``gamma`` and its powers ``g_k``,

    D(x) = [sum_i g_i (T_i(x) - T_i(z)) + sum_j g_(2c+j) (H_j(x) - H_j(z))
            + sum_k g_(2c+P+k) (A_k(x) - A_k(z))] / (x - z)
         + [sum_i g_(c+i) (T_i(x) - T_i(z w)) + sum_k g_(2c+P+a+k) (A_k(x) - A_k(z w))] / (x - z w)

(``T`` the ``c`` main columns, ``H`` the ``P`` composition parts, ``A`` the ``a`` aux columns)

evaluated on the LDE (one batch inversion each for ``x - z`` and ``x - z w``). D has degree < n
when every claimed OOD value is right.

FRI (binary folding): layer ``k`` holds ``f`` on the coset ``s^(2^k) <w_m>`` (natural order,
``m = L / 2^k``); its Merkle leaves are the pairs ``(f[t], f[t + m/2])`` for ``t < m/2`` (6 base
elements each), and after absorbing its root a challenge ``beta_k`` folds it:

    f'[t] = (f[t] + f[t + m/2]) / 2 + beta_k (f[t] - f[t + m/2]) / (2 x_t),  x_t = s^(2^k) w_m^t.

After ``K = log2(n / d_f)`` folds (``d_f <= fri_final_degree``) the remaining evaluations are
interpolated and the ``d_f`` coefficients of the final polynomial are sent in clear; any
coefficient beyond them means D was not low-degree (``excess``).

Keeps: every layer's leaves and tree (openings), the final polynomial. Drops: D's extension
inverses and the folded values of the last layer.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, UInt8, UInt64

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.lde import _coset_interpolate
from jaxstark.merkle import _build
from jaxstark.ntt import _make_tables
from jaxstark.poly import sum_column_blocks
from jaxstark.rounds.domain import Domain
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.transcript import Transcript

__all__ = ["FriCommitment", "deep_fri", "fri_num_layers", "deep_combine", "fold_pair", "num_deep_terms"]

INV2 = np.uint64((gl.P + 1) // 2)


class FriCommitment(eqx.Module):
    leaves: tuple[UInt64[Array, " h 6"], ...]
    nodes: tuple[UInt8[Array, " two_h 32"], ...]
    final: UInt64[Array, " d 3"]
    excess: Bool[Array, ""]


def fri_num_layers(log_n: int, final_degree: int) -> int:
    """Folds until the degree bound ``n / 2^K`` is at most ``final_degree``."""
    return max(0, log_n - (final_degree.bit_length() - 1))


def _dot_base_ext(t: Array, g: Array) -> Array:
    """sum_i t[..., i] * g[i] for base t (..., c) and extension g (c, 3) -> (..., 3), reduced a
    block of columns at a time (:func:`~jaxstark.poly.sum_column_blocks`), so at most a block's
    products are ever materialised, whatever the width."""

    def partial(start, size):
        tb = lax.dynamic_slice_in_dim(t, start, size, axis=t.ndim - 1)
        gb = lax.dynamic_slice_in_dim(g, start, size, axis=0)
        return jnp.stack([gl._sum(gl._mul(tb, gb[:, k]), -1) for k in range(3)], axis=-1)

    return sum_column_blocks(partial, t.shape[-1])


def _dot_ext_ext(h: Array, g: Array) -> Array:
    """sum_j h[..., j, :] * g[j] for extension h (..., P, 3) and g (P, 3) -> (..., 3)."""
    return gl._sum(fext._mul(h, g), -2)


def num_deep_terms(c: int, parts: int, aux: int) -> int:
    return 2 * c + parts + 2 * aux


def deep_combine(xs, trace_rows, aux_rows, parts_rows, ood: OutOfDomain, g_pows, zg):
    """D at points ``xs`` (base, (q,)) from trace rows (q, c), aux rows (q, a, 3) and part rows
    (q, P, 3). Used by the prover over the whole LDE and by the verifier at the queried points."""
    c, parts, a = trace_rows.shape[-1], parts_rows.shape[-2], aux_rows.shape[-2]
    g1, g2, g3 = g_pows[:c], g_pows[c : 2 * c], g_pows[2 * c : 2 * c + parts]
    g4, g5 = g_pows[2 * c + parts : 2 * c + parts + a], g_pows[2 * c + parts + a :]
    const_z = fext._add(_dot_ext_ext(ood.trace_z, g1), _dot_ext_ext(ood.parts_z, g3))
    const_zg = _dot_ext_ext(ood.trace_zg, g2)
    num_z = fext._sub(fext._add(_dot_base_ext(trace_rows, g1), _dot_ext_ext(parts_rows, g3)), const_z)
    num_zg = fext._sub(_dot_base_ext(trace_rows, g2), const_zg)
    if a:
        num_z = fext._add(num_z, fext._sub(_dot_ext_ext(aux_rows, g4), _dot_ext_ext(ood.aux_z, g4)))
        num_zg = fext._add(num_zg, fext._sub(_dot_ext_ext(aux_rows, g5), _dot_ext_ext(ood.aux_zg, g5)))
    x = fext._embed(xs)
    inv_z = fext._batch_inv(fext._sub(x, ood.z))
    inv_zg = fext._batch_inv(fext._sub(x, zg))
    return fext._add(fext._mul(num_z, inv_z), fext._mul(num_zg, inv_zg))


def fold_pair(a: Array, b: Array, x_inv: Array, beta: Array) -> Array:
    """One binary FRI fold of the pair (f(x), f(-x)) = (a, b) with ``x_inv = 1/x``."""
    even = fext._add(a, b)
    odd = fext._mul_base(fext._sub(a, b), x_inv)
    return fext._mul_base(fext._add(even, fext._mul(odd, beta)), INV2)


@functools.partial(jax.jit, static_argnames=("hash_name", "final_degree"), keep_unused=True)
def deep_fri(
    domain: Domain,
    trace_lde: UInt64[Array, " L c"],
    aux_lde: UInt64[Array, " L a3"] | None,
    parts_lde: UInt64[Array, " L P 3"],
    ood: OutOfDomain,
    tr: Transcript,
    *,
    hash_name: str,
    final_degree: int,
) -> tuple[FriCommitment, Transcript]:
    c, parts = trace_lde.shape[1], parts_lde.shape[1]
    size = trace_lde.shape[0]
    aux_rows = jnp.zeros((size, 0, 3), jnp.uint64) if aux_lde is None else aux_lde.reshape(size, -1, 3)
    tr, gamma = tr.challenge_ext("deep gamma")
    g_pows = fext._powers(gamma, num_deep_terms(c, parts, aux_rows.shape[1]))
    zg = fext._mul_base(ood.z, np.uint64(gl.root_of_unity(domain.log_n)))
    f = deep_combine(domain.points(), trace_lde, aux_rows, parts_lde, ood, g_pows, zg)

    layers = fri_num_layers(domain.log_n, final_degree)
    offset = domain.offset
    leaves, nodes = [], []
    for k in range(layers):
        m = f.shape[0]
        h = m // 2
        leaf = jnp.concatenate([f[:h], f[h:]], axis=-1)  # (h, 6)
        tree = _build(leaf, hash_name)
        leaves.append(leaf)
        nodes.append(tree)
        tr = tr.absorb_digest(f"fri layer {k}", tree[1])
        tr, beta = tr.challenge_ext(f"fri beta {k}")
        w_inv = pow(gl.root_of_unity(m.bit_length() - 1), gl.P - 2, gl.P)
        s_inv = pow(pow(offset, 1 << k, gl.P), gl.P - 2, gl.P)
        x_inv = gl._mul(gl._powers(jnp.asarray(np.uint64(w_inv)), h), np.uint64(s_inv))
        f = fold_pair(f[:h], f[h:], x_inv, beta)

    m = f.shape[0]
    log_m = m.bit_length() - 1
    d_f = domain.n >> layers
    coeffs = _coset_interpolate(f, _make_tables(log_m), pow(offset, 1 << layers, gl.P))
    excess = jnp.any(coeffs[d_f:] != np.uint64(0))
    final = coeffs[:d_f]
    tr = tr.absorb_ext("fri final poly", final)
    return FriCommitment(tuple(leaves), tuple(nodes), final, excess), tr
