"""The protocol's algebra, written with operators only so the same code runs on the prover's
:class:`~jaxstark.field.val.Val` arrays (over the whole LDE, inside jitted rounds) and on the
verifier's :class:`~jaxstark.field.host.HostVal` values (at ``z`` and at the queried points).

* :func:`combine_constraints` -- ``sum_i alpha_i Q_i(x)`` over every constraint quotient;
* :func:`aux_quotient` -- the aux (LogUp) constraints' share of it;
* :func:`deep_weights`, :func:`deep_numerators` (:func:`deep_claims`), :func:`deep_value` -- the DEEP composition
  ``D(x) = N_z(x) / (x - z) + N_zw(x) / (x - z w)``;
* :func:`fold_pair` -- one binary FRI fold;
* :func:`layer_x_inv`, :func:`lde_point` -- the points those run at;
* :func:`constraints_at`, :func:`parts_at` -- the out-of-domain check's two sides on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal, interpolate
from jaxstark.lde import DEFAULT_OFFSET
from jaxstark.logup import AuxFrame, aux_constraints
from jaxstark.protocol.layout import num_deep_terms

__all__ = [
    "OFFSET",
    "INV2",
    "combine_constraints",
    "aux_quotient",
    "deep_weights",
    "deep_numerators",
    "deep_claims",
    "deep_value",
    "fold_pair",
    "layer_x_inv",
    "lde_point",
    "constraints_at",
    "parts_at",
]

P = gl.P
OFFSET = DEFAULT_OFFSET  # the LDE coset is OFFSET * <w_L>
INV2 = (P + 1) // 2


def combine_constraints(
    air,
    log_n: int,
    x,
    zn_inv,
    inverse: Callable,
    cur: Sequence,
    nxt: Sequence,
    periodic: Sequence,
    pub: Sequence,
    alphas: Sequence,
    aux: AuxFrame | None = None,
    transition_sum=None,
    aux_sum=None,
):
    """``sum_i alpha_i Q_i(x)`` over every constraint quotient at the point(s) ``x``, given
    ``zn_inv = 1 / (x^n - 1)``, a batch-capable ``inverse`` and, for a table with interactions,
    its aux frame:

        Q = C_i(x) (x - w^(n-1)) / (x^n - 1)  (transition; no factor for a row-local AIR)
          | (T_c(x) - v) / (x - w^r)          (boundary (c, r, v))
          | A_k(x) / (x^n - 1)                (aux, LogUp)

    Quotients that share a denominator are summed first and divided once (``f sum_i alpha_i C_i``
    for the transition constraints, ``zn_inv sum_k delta_k A_k`` for the aux ones): the same
    field value as dividing each, with one multiplication per group instead of one per
    constraint. ``transition_sum``, where given, is ``sum_i alpha_i C_i`` over the transition
    constraints, formed by the caller (:mod:`jaxstark.kernels.composition`); ``nxt`` is then
    not read. ``aux_sum``, where given, is the aux constraints' quotient (:func:`aux_quotient`),
    formed by the caller (over blocks of rows); ``aux`` is then not read."""
    n = 1 << log_n
    degrees = air.constraint_degrees()
    constraints = None
    if transition_sum is None:
        constraints = air.transition(cur, nxt, periodic, pub)
        if len(constraints) != len(degrees):
            raise ValueError(
                f"{air.name}.transition returned {len(constraints)} constraints but constraint_degrees() lists "
                f"{len(degrees)}"
            )
    g = gl.root_of_unity(log_n)
    # a row-local AIR constrains every row; otherwise the last row's frame wraps and is excluded
    factor = zn_inv if air.row_local else (x - pow(g, n - 1, P)) * zn_inv
    boundary = list(air.boundary(pub))
    k, m, a = len(degrees), len(degrees) + len(boundary), air.num_aux_columns
    if len(alphas) != m + a:  # one aux constraint per aux column (checked again by aux_quotient)
        raise ValueError(f"{air.name}: {len(alphas)} challenges for {m + a} constraints")
    if aux_sum is not None and not a:
        raise ValueError(f"{air.name} has no aux columns: an aux quotient was given for none")
    if a and aux_sum is None and aux is None:
        raise ValueError(f"{air.name} has {a} aux columns: give their values (aux) or their quotient (aux_sum)")
    # the quotients sharing a denominator are combined first and divided once:
    # sum_i alpha_i C_i f = f sum_i alpha_i C_i (exact field arithmetic: the same value)
    if k:
        terms = [(transition_sum if constraints is None else _dot(alphas[:k], constraints)) * factor]
    else:
        terms = []
    inverses: dict = {}
    for alpha, (col, row, value) in zip(alphas[k:m], boundary, strict=True):
        r = row % n
        if r not in inverses:
            inverses[r] = inverse(x - pow(g, r, P))
        terms.append(alpha * ((cur[col] - value) * inverses[r]))
    if a:
        terms.append(aux_quotient(air, log_n, cur, aux, alphas[m:], zn_inv) if aux_sum is None else aux_sum)
    if not terms:
        raise ValueError(f"{air.name} has no constraints (transition, boundary or interactions): nothing to prove")
    return sum(terms[1:], terms[0])


def aux_quotient(air, log_n: int, cur: Sequence, aux: AuxFrame, deltas: Sequence, zn_inv):
    """``zn_inv sum_k delta_k A_k(x)`` over the aux (LogUp) constraints ``A_k`` (one per aux
    column, all holding on every row, so sharing the zerofier ``x^n - 1``), one challenge
    ``delta_k`` each."""
    constraints = aux_constraints(air, log_n, cur, aux)
    if len(constraints) != len(deltas):
        raise ValueError(f"{air.name}: {len(deltas)} challenges for {len(constraints)} aux constraints")
    return _dot(deltas, constraints) * zn_inv


def _dot(weights: Sequence, values: Sequence):
    """``sum_i weights_i values_i``, left to right."""
    acc = None
    for w, v in zip(weights, values, strict=True):
        acc = w * v if acc is None else acc + w * v
    return acc


def deep_weights(g_pows, c: int, parts: int, aux: int) -> tuple:
    """The DEEP challenge's powers by term: main columns at ``z``, main at ``z w``, parts at
    ``z``, aux at ``z``, aux at ``z w`` (``num_deep_terms`` of them in all)."""
    at = np.cumsum([0, c, c, parts, aux, aux])
    return tuple(g_pows[at[i] : at[i + 1]] for i in range(5))


def deep_numerators(
    dot_base: Callable, dot_ext: Callable, lift: Callable, rows, parts_rows, aux_rows, ood, g_pows
) -> tuple:
    """``(N_z, N_zw)`` at the points whose opened values are ``rows`` (main, base ``(..., c)``),
    ``parts_rows`` and ``aux_rows`` (extension ``(..., P, 3)``, ``(..., a, 3)``), from the claims
    ``ood`` (``trace_z``, ``trace_zg``, ``parts_z``, ``aux_z``, ``aux_zg``: extension ``(k, 3)``):
    ``N_z = sum_t g_t (f_t(x) - f_t(z))`` over the main, part and aux terms, ``N_zw`` over the main
    and aux terms at ``z w``. ``dot_base(values, weights)`` and ``dot_ext(values, weights)`` are the
    weighted sums over the last column axis, ``lift(weight)`` one weight as a value to multiply
    by, for the caller's representation.

    ``g_pows`` are the powers ``1, g, g^2, ...`` of the DEEP challenge, so a main column's weight
    at ``z w`` is ``g^c = g_pows[c]`` times its weight at ``z`` (an aux column's ``g^a =
    g_pows[a]`` times): each row's weighted sum of its main (aux) values is formed once, and the
    one at ``z w`` is that times ``g^c`` (``g^a``) -- the same values as summing with the second
    weights."""
    c, parts, a = len(ood.trace_z), len(ood.parts_z), len(ood.aux_z)
    if len(g_pows) != num_deep_terms(c, parts, a):
        raise ValueError(f"deep_numerators: {len(g_pows)} weights for {num_deep_terms(c, parts, a)} terms")
    g1, _, g3, g4, _ = deep_weights(g_pows, c, parts, a)
    claim_z, claim_zg = deep_claims(dot_ext, ood, g_pows)
    main = dot_base(rows, g1)
    num_z = main + dot_ext(parts_rows, g3)
    num_zg = main * lift(g_pows[c])
    if a:
        aux = dot_ext(aux_rows, g4)
        num_z = num_z + aux
        num_zg = num_zg + aux * lift(g_pows[a])
    return num_z - claim_z, num_zg - claim_zg


def deep_claims(dot_ext: Callable, ood, g_pows) -> tuple:
    """``(C_z, C_zw)``: the claims' weighted sums that :func:`deep_numerators` takes from the
    rows' (``sum_t g_t f_t(z)`` over the main, part and aux terms; ``sum_t g_t f_t(z w)`` over the
    main and aux terms at ``z w``), for a caller that forms the rows' sums elsewhere (a kernel)."""
    c, parts, a = len(ood.trace_z), len(ood.parts_z), len(ood.aux_z)
    g1, g2, g3, g4, g5 = deep_weights(g_pows, c, parts, a)
    claim_z = dot_ext(ood.trace_z, g1) + dot_ext(ood.parts_z, g3)
    claim_zg = dot_ext(ood.trace_zg, g2)
    if a:
        claim_z = claim_z + dot_ext(ood.aux_z, g4)
        claim_zg = claim_zg + dot_ext(ood.aux_zg, g5)
    return claim_z, claim_zg


def deep_value(x, z, zg, num_z, num_zg, inverse: Callable):
    """``D(x) = N_z(x) / (x - z) + N_zw(x) / (x - z w)``, where ``N_z = sum_t g_t (f_t(x) -
    f_t(z))`` over the main, part and aux terms opened at ``z``, ``N_zw`` likewise at ``z w``.

    Formed as ``(N_z (x - z w) + N_zw (x - z)) / ((x - z) (x - z w))``: one ``inverse`` per point
    instead of two (``z`` is outside the base field, so neither factor is zero at a base ``x``),
    the same values."""
    dz, dzg = x - z, x - zg
    return (num_z * dzg + num_zg * dz) * inverse(dz * dzg)


def fold_pair(a, b, x_inv, beta):
    """One binary FRI fold of the pair ``(f(x), f(-x)) = (a, b)`` with ``x_inv = 1/x``:
    ``(a + b) / 2 + beta (a - b) / (2 x)``."""
    return ((a + b) + (a - b) * x_inv * beta) * INV2


def layer_x_inv(log_l: int, k: int, pos):
    """``1 / x`` of FRI layer ``k``'s leaf ``pos`` (the point ``s^(2^k) w_m^pos``, ``m = L / 2^k``)
    for Python ints or an ``object`` array of them."""
    w_inv = pow(gl.root_of_unity(log_l - k), P - 2, P)
    s_inv = pow(pow(OFFSET, 1 << k, P), P - 2, P)
    return _pow(w_inv, pos, P) * s_inv % P


def lde_point(log_size: int, pos, shift: int = 0):
    """The coset point ``s^(2^shift) w^pos`` of a domain of ``2^log_size`` points (``shift``: how
    many times the coset has been squared)."""
    return _pow(gl.root_of_unity(log_size), pos, P) * pow(OFFSET, 1 << shift, P) % P


_POW = np.frompyfunc(pow, 3, 1)


def _pow(base: int, e, mod: int):
    return _POW(base, e, mod) if isinstance(e, np.ndarray) else pow(base, int(e), mod)


def constraints_at(air, log_n: int, ood, alphas, public, challenges, sums) -> HostVal:
    """The AIR's constraints (main and aux) at ``ood.z`` from the claimed values there, divided by
    their zerofiers and combined with ``alphas`` -- what ``sum_j z^(jn) H_j(z)`` must equal
    (:func:`parts_at`) -- evaluated with Python integers. ``ood`` has the fields of
    :class:`~jaxstark.rounds.r3_ood.OutOfDomain` as ``uint64`` arrays."""
    n = 1 << log_n
    z = HostVal(np.asarray(ood.z))
    periodic = []
    for col in air.periodic_arrays():
        y, value = z ** (n // len(col)), HostVal(0)
        for coeff in reversed(interpolate(col.tolist())):  # Horner
            value = value * y + coeff
        periodic.append(value)
    pub = [HostVal(int(v)) for v in np.asarray(public).tolist()]
    aux = None
    if air.num_aux_columns:
        beta, gamma = _each(challenges)
        aux = AuxFrame(_each(ood.aux_z), _each(ood.aux_zg), beta, gamma, _each(sums))
    cur, nxt = _each(ood.trace_z), _each(ood.trace_zg)
    inv_zerofier = (z**n - 1).inv()
    return combine_constraints(air, log_n, z, inv_zerofier, HostVal.inv, cur, nxt, periodic, pub, _each(alphas), aux)


def parts_at(log_n: int, z, parts_z) -> HostVal:
    """``sum_j z^(jn) H_j(z)`` from the claimed part values."""
    z = HostVal(np.asarray(z))
    zn = z ** (1 << log_n)
    total, zpow = HostVal(0), HostVal(1)
    for part in _each(parts_z):
        total, zpow = total + zpow * part, zpow * zn
    return total


def _each(a) -> list[HostVal]:
    """Extension values ``(k, 3)`` as :class:`HostVal` scalars."""
    return [HostVal(tuple(x)) for x in np.asarray(a).reshape(-1, 3).tolist()]
