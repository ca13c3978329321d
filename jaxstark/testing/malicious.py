"""Dishonest provers, for tests that show each of the verifier's checks rejecting the attack it
exists for.

:func:`prove` proves whole tables (no row chunks) the way :func:`jaxstark.prove` does, step by
step and in the open -- the same round functions, the same transcript -- except for the one step
a keyword replaces. With no keyword it is the honest prover: its proof is byte-identical to
``jaxstark.prove`` (tested), so every attack differs from an honest proof in exactly the step it
names, and every later step is recomputed honestly from the tampered one (new commitments
re-absorbed, new challenges, a proof of work and openings that match), as a real cheating prover
would do. The steps, for the ``target`` table:

* ``aux_trace``: build the LogUp aux columns (and the published bus contributions) from this trace
  instead of the committed one -- e.g. with a forged multiplicity column that makes a bus balance;
* ``composition_air``: build the composition polynomial from this AIR's constraints instead of
  the table's (the same width, constraint count and degrees) -- e.g. one whose constraints vanish
  identically, so a trace that violates the real AIR commits a zero composition;
* ``ood(values, context)``: replace the out-of-domain claims ``{"trace_z", "trace_zg", "parts_z",
  "aux_z", "aux_zg", "z"}`` (numpy arrays; ``z`` read-only) by the returned dict before they are
  absorbed; ``context`` holds what the verifier will use to check them (``air``, ``public``,
  ``log_n``, ``alphas``, ``challenges``, ``sums``);
* ``z``: use this extension element (three ints) as the out-of-domain point instead of the
  challenge (a prover that hit it by grinding; the verifier must be made to draw the same, see
  ``tests/test_attacks.py``);
* ``layer(k, values)``: replace FRI layer ``k``'s evaluations (``(m, 3)`` numpy, layer 0 the DEEP
  word) before they are committed;
* ``final(coeffs)``: replace the final polynomial's coefficients before they are absorbed.

:func:`consistent_claims` (an ``ood`` replacement) builds claims that satisfy the AIR's
constraints at ``z`` without being the trace's values, so the DEEP word is not low-degree.

Everything runs eagerly on small tables; it is a testing tool, not a prover.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR
from jaxstark.config import StarkConfig
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.lde import _coset_interpolate
from jaxstark.merkle import _build
from jaxstark.ntt import _make_tables
from jaxstark.poly import _evaluate
from jaxstark.proof import Proof
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import constraints_at
from jaxstark.protocol.layout import fri_num_layers, num_deep_terms
from jaxstark.protocol.statement import public_array
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r0_statement import fork_table, initial_transcript
from jaxstark.rounds.r1_aux_commit import aux_commit, logup_challenges
from jaxstark.rounds.r1_trace_commit import trace_commit
from jaxstark.rounds.r2_composition import composition
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.rounds.r4_deep import deep_combine
from jaxstark.rounds.r4_fri_layer import _fold, _s_inv, _w_inv
from jaxstark.rounds.r5_openings import openings
from jaxstark.rounds.r5_queries import queries
from jaxstark.schedule import _opened_fields, _table_proof

__all__ = ["prove", "consistent_claims"]

P = gl.P


def prove(
    tables: Sequence[tuple[AIR, object, Sequence[int]]],
    config: StarkConfig,
    *,
    target: int = 0,
    aux_trace=None,
    composition_air: AIR | None = None,
    ood: Callable[[dict, dict], dict] | None = None,
    z: Sequence[int] | None = None,
    layer: Callable[[int, np.ndarray], np.ndarray] | None = None,
    final: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Proof:
    """A proof of ``tables`` (``[(air, trace, public_inputs), ...]``) with the steps named by the
    keywords replaced for table ``target`` (see the module docstring)."""
    with jax.default_device(jax.local_devices(backend="cpu")[0]):
        return _prove(tables, config, target, aux_trace, composition_air, ood, z, layer, final)


def _prove(tables, config, target, aux_trace, composition_air, ood, z, layer, final) -> Proof:
    airs = tuple(a for a, _, _ in tables)
    traces = [jnp.asarray(np.asarray(t, np.uint64)) for _, t, _ in tables]
    publics = tuple(jnp.asarray(public_array(a, p)) for a, _, p in tables)
    log_ns = tuple(int(t.shape[0]).bit_length() - 1 for t in traces)
    domains = [make_domain(k, config.blowup) for k in log_ns]
    h = config.hash
    tr = initial_transcript(publics, airs=airs, config=config, log_ns=log_ns)
    mains = []
    for trace, dom in zip(traces, domains, strict=True):
        r1, tr = trace_commit(trace, dom, tr, hash_name=h)
        mains.append(r1)
    auxes, challenges = [None] * len(airs), None
    if any(a.num_aux_columns for a in airs):
        tr, challenges = logup_challenges(tr)
        for i, (a, trace, dom) in enumerate(zip(airs, traces, domains, strict=True)):
            if a.num_aux_columns:
                source = (
                    jnp.asarray(np.asarray(aux_trace, np.uint64)) if i == target and aux_trace is not None else trace
                )
                auxes[i], tr = aux_commit(source, dom, challenges, tr, air=a, hash_name=h)
    proofs = []
    for i, air in enumerate(airs):
        mine = i == target
        fork = fork_table(tr, jnp.asarray(np.uint64(i)))
        proofs.append(
            _table(air, (composition_air if mine and composition_air is not None else air), publics[i], config,
                   domains[i], mains[i], auxes[i], challenges, fork,
                   ood if mine else None, z if mine else None, layer if mine else None, final if mine else None)
        )  # fmt: skip
    return Proof(config_id=config.fingerprint(), tables=tuple(proofs), chunks=())


def _table(air, constraints_of, public, config, domain, r1, aux, challenges, tr, ood, z, layer, final):
    h, log_n = config.hash, domain.log_n
    aux_lde = None if aux is None else aux.lde
    logup = None if aux is None else (challenges, aux.sums)
    _, alphas = fs.composition_alphas(tr, air)  # what composition draws first
    comp, tr = composition(domain, r1.lde, aux_lde, logup, public, tr, air=constraints_of, hash_name=h)

    # round 3, in the open
    tr, drawn = fs.ood_point(tr)
    point = drawn if z is None else jnp.asarray(np.array(z, np.uint64))
    zg = fext._mul_base(point, np.uint64(gl.root_of_unity(log_n)))
    values = dict(
        z=np.asarray(point),
        trace_z=np.asarray(_evaluate(r1.coeffs, point, False)),
        trace_zg=np.asarray(_evaluate(r1.coeffs, zg, False)),
        parts_z=np.asarray(_evaluate(comp.parts_coeffs, point, True)),
        aux_z=np.zeros((0, 3), np.uint64),
        aux_zg=np.zeros((0, 3), np.uint64),
    )
    if aux is not None:
        ext = aux.coeffs.reshape(aux.coeffs.shape[0], -1, 3)
        values["aux_z"], values["aux_zg"] = (
            np.asarray(_evaluate(ext, point, True)),
            np.asarray(_evaluate(ext, zg, True)),
        )
    if ood is not None:
        context = dict(air=air, public=np.asarray(public), log_n=log_n, alphas=np.asarray(alphas),
                       challenges=None if aux is None else np.asarray(challenges),
                       sums=None if aux is None else np.asarray(aux.sums))  # fmt: skip
        values = dict(ood(dict(values), context), z=values["z"])
    claims = {k: jnp.asarray(np.asarray(v, np.uint64)) for k, v in values.items()}
    tr = fs.absorb_ood(tr, claims["trace_z"], claims["trace_zg"], claims["parts_z"], claims["aux_z"], claims["aux_zg"])
    oo = OutOfDomain(claims["z"], claims["trace_z"], claims["trace_zg"], claims["parts_z"], claims["aux_z"],
                     claims["aux_zg"])  # fmt: skip

    # round 4, in the open
    size = domain.size
    aux_rows = jnp.zeros((size, 0, 3), jnp.uint64) if aux is None else aux.lde.reshape(size, -1, 3)
    tr, gamma = fs.deep_gamma(tr)
    g_pows = fext._powers(gamma, num_deep_terms(air.width, air.composition_parts, aux_rows.shape[1]))
    f = deep_combine(domain.points(), r1.lde, aux_rows, comp.parts_lde, oo, g_pows, zg)
    layers = fri_num_layers(log_n, config.fri_final_degree)
    leaves, nodes = [], []
    for k in range(layers):
        if layer is not None:
            f = jnp.asarray(np.asarray(layer(k, np.asarray(f)), np.uint64))
        m = f.shape[0]
        first, second = f[: m // 2], f[m // 2 :]
        leaf = jnp.concatenate([first, second], axis=-1)
        tree = _build(leaf, h)
        tr, beta = fs.fri_layer(tr, fs.fri_labels(k), tree[1])
        x_inv = gl._mul(gl._powers(jnp.asarray(_w_inv(m)), m // 2), _s_inv(domain.offset, k))
        f = _fold(first, second, x_inv, beta)
        leaves.append(leaf)
        nodes.append(tree)
    if layer is not None and layers == 0:
        f = jnp.asarray(np.asarray(layer(0, np.asarray(f)), np.uint64))
    log_m = int(f.shape[0]).bit_length() - 1
    coeffs = _coset_interpolate(f, _make_tables(log_m), pow(domain.offset, 1 << layers, P))
    coeffs = coeffs[: domain.n >> layers]
    if final is not None:
        coeffs = jnp.asarray(np.asarray(final(np.asarray(coeffs)), np.uint64))
    tr = fs.absorb_fri_final(tr, coeffs)

    # round 5: the honest round functions on the (tampered) commitments
    q, _ = queries(tr, grinding_bits=config.grinding_bits, num_queries=config.num_queries, log_size=domain.log_size)
    host = np.asarray
    commitments = dict(trace=((r1.lde,), (r1.nodes,)), composition=((comp.parts_lde,), (comp.nodes,)),
                       FRI=(tuple(leaves), tuple(nodes)))  # fmt: skip
    if aux is not None:
        commitments["aux"] = ((aux.lde,), (aux.nodes,))
    opened = {what: jax.device_get(openings(*c, q.indices, hash_name=config.hash)) for what, c in commitments.items()}
    fields = dict(
        trace_z=host(oo.trace_z), trace_zg=host(oo.trace_zg), aux_z=host(oo.aux_z), aux_zg=host(oo.aux_zg),
        parts_z=host(oo.parts_z), fri_final=host(coeffs), nonce=host(q.nonce),
        bus_sums=None if aux is None else host(aux.sums), **_opened_fields(opened),
    )  # fmt: skip
    return _table_proof(air, log_n, fields)


def consistent_claims(values: dict, context: dict, seed: int = 1) -> dict:
    """An ``ood`` replacement for :func:`prove`: random ``T(z), T(zw)`` and aux values, and
    ``H_0(z)`` solved so that the AIR's constraints at ``z`` combine (with the composition
    challenges) to ``sum_j z^(jn) H_j(z)``. The out-of-domain check accepts them, yet they are not
    the trace's values, so the DEEP word is not low-degree."""
    air, public, log_n = context["air"], context["public"], context["log_n"]
    alphas, challenges, sums = context["alphas"], context["challenges"], context["sums"]
    rng = np.random.default_rng(seed)
    out = dict(values)
    for key in ("trace_z", "trace_zg", "aux_z", "aux_zg"):
        out[key] = rng.integers(0, P, size=np.shape(values[key]), dtype=np.uint64)
    z = HostVal(np.asarray(values["z"]))
    zn = z ** (1 << log_n)
    names = ("z", "trace_z", "trace_zg", "parts_z", "aux_z", "aux_zg")
    claims = OutOfDomain(*(np.asarray(out[k], np.uint64) for k in names))
    acc = constraints_at(air, log_n, claims, alphas, public, challenges, sums)
    parts = [HostVal(tuple(p)) for p in np.asarray(values["parts_z"]).tolist()]
    rest, zpow = HostVal(0), zn
    for part in parts[1:]:
        rest, zpow = rest + zpow * part, zpow * zn
    parts[0] = acc - rest
    out["parts_z"] = np.array([p.c for p in parts], np.uint64).reshape(-1, 3)
    return out
