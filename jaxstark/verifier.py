"""``verify``: check a proof of one or more tables on the host CPU.

Sections mirror the prover's rounds:

0. format and shape: the proof has the statement's tables, each for its AIR and the config;
   every array has the shape the AIR, config and trace height imply, and every field element is
   canonical; every bus balances (the tables' published contributions sum to zero);
1. shared transcript replay: statement, main roots, LogUp challenges, aux roots and bus sums;
2.-4. per table, on its fork: the same absorbs and squeezes as the prover, giving the
   composition challenges, ``z``, ``gamma``, the FRI folding challenges;
2'. out-of-domain check: the constraints (main and aux) evaluated at ``z`` from the claimed
   ``T(z), T(zw), A(z), A(zw)``, divided by their zerofiers and combined, equal
   ``sum_j z^(jn) H_j(z)``;
5. proof of work, query indices, Merkle paths of every opening, the DEEP value at each query
   from the opened rows equals the first FRI layer, every fold is consistent, and the last fold
   equals the final polynomial.

Every rejection raises :class:`~jaxstark.errors.InvalidProof` with a ``code`` and a sentence
naming the table (or the bus); malformed input of any kind is a rejection, never a crash.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR
from jaxstark.chunking import Unit, check_chunkable, slots
from jaxstark.config import StarkConfig
from jaxstark.errors import InvalidProof, JaxstarkError, ShapeError
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.lde import DEFAULT_OFFSET
from jaxstark.logup import AuxFrame
from jaxstark.merkle import _verify as _verify_paths_core
from jaxstark.ntt import intt
from jaxstark.poly import _evaluate
from jaxstark.proof import Proof, TableProof
from jaxstark.prover import bus_balance, fork_table, initial_transcript, public_array
from jaxstark.rounds.r1_aux_commit import absorb_aux, logup_challenges
from jaxstark.rounds.r1_trace_commit import absorb_trace
from jaxstark.rounds.r2_composition import combine_constraints, num_constraints
from jaxstark.rounds.r3_ood import OutOfDomain, absorb_ood
from jaxstark.rounds.r4_deep_fri import deep_combine, fold_pair, fri_num_layers, num_deep_terms

__all__ = ["verify", "annotated_transcript"]

P = gl.P


def _reject(code: str, message: str):
    raise InvalidProof(code, message)


def _expect(name: str, value, shape: tuple, dtype) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype != dtype or a.shape != shape:
        _reject("malformed", f"{name} has {a.dtype}{a.shape}, expected {np.dtype(dtype)}{shape}")
    if dtype == np.uint64 and a.size and int(a.max()) >= P:
        _reject("malformed", f"{name} holds a non-canonical field element")
    return a


def _statement(air_or_statement, public_inputs, log_n) -> list[tuple[AIR, tuple, int | None]]:
    if isinstance(air_or_statement, AIR):
        if not (log_n is None or isinstance(log_n, int)):
            raise TypeError(f"verify: log_n must be an int or None for one table, got {log_n!r}")
        return [(air_or_statement, public_inputs, log_n)]
    if tuple(public_inputs):
        raise TypeError("verify: with a list of tables, give each as air or (air, public_inputs); config by keyword")
    try:
        entries = list(air_or_statement)
    except TypeError:
        raise TypeError(f"verify: expected an AIR or a list of tables, got {type(air_or_statement).__name__}") from None
    pins = [None] * len(entries) if log_n is None else list(log_n)
    if len(pins) != len(entries):
        raise TypeError(f"verify: log_n lists {len(pins)} heights for {len(entries)} tables")
    out = []
    for i, e in enumerate(entries):
        if isinstance(e, AIR):
            air, pub = e, ()
        elif isinstance(e, (tuple, list)) and len(e) == 2 and isinstance(e[0], AIR):
            air, pub = e
        else:
            raise TypeError(f"verify: table {i} must be an AIR or (air, public_inputs), got {e!r:.80}")
        out.append((air, pub, pins[i]))
    return out


def verify(
    air: AIR | Sequence,
    proof: Proof | bytes,
    public_inputs: Sequence[int] = (),
    config: StarkConfig | None = None,
    *,
    log_n: int | Sequence[int | None] | None = None,
) -> bool:
    """Return True if ``proof`` is valid for ``air``, ``public_inputs`` and ``config`` -- or, for
    a statement of several tables ``[air or (air, public_inputs), ...]`` (``config`` by keyword),
    for all of them with every bus balanced; otherwise raise :class:`InvalidProof` (``.code``
    says which check failed, the message names the table or bus).

    Trace heights are the prover's choice and bound into the transcript; pass ``log_n`` (one
    per table for a statement) when the statement fixes them (a proof of another height is then
    rejected with ``wrong-height``)."""
    return _checked_verify(air, proof, public_inputs, config, log_n, None)


def annotated_transcript(
    air: AIR | Sequence,
    proof: Proof | bytes,
    public_inputs: Sequence[int] = (),
    config: StarkConfig | None = None,
    *,
    log_n: int | Sequence[int | None] | None = None,
) -> list[tuple[str, str, str, np.ndarray]]:
    """Verify like :func:`verify` and return the Fiat-Shamir transcript the verifier replayed,
    one ``(where, label, kind, value)`` per operation: ``where`` is ``"statement"`` for the
    shared part (statement, main and aux roots, LogUp challenges) or the table (and chunk) whose
    fork it is; ``kind`` says whether the value was absorbed (``digest``, ``base``, ``ext``) or
    squeezed (``challenge_*``, ``queries``). Raises :class:`InvalidProof` like ``verify``."""
    log: list = []
    _checked_verify(air, proof, public_inputs, config, log_n, log)
    return log


def _checked_verify(air, proof, public_inputs, config, log_n, log) -> bool:
    config = config or StarkConfig()
    if not isinstance(config, StarkConfig):
        raise TypeError(f"verify: config must be a StarkConfig, got {type(config).__name__}")
    statement = _statement(air, public_inputs, log_n)
    try:
        if isinstance(proof, (bytes, bytearray, memoryview)):
            proof = Proof.from_bytes(proof)
        if not isinstance(proof, Proof):
            _reject("malformed", f"expected a Proof or its bytes, got {type(proof).__name__}")
        with jax.default_device(jax.local_devices(backend="cpu")[0]):
            _verify(statement, proof, config, log)
    except JaxstarkError:
        raise
    except (ValueError, TypeError, IndexError, OverflowError, KeyError) as exc:
        raise InvalidProof("malformed", f"proof could not be checked: {type(exc).__name__}: {exc}") from exc
    return True


def _entries(where: str, entries) -> list[tuple[str, str, str, np.ndarray]]:
    return [(where, e.label, e.kind, np.asarray(e.value)) for e in entries]


def _verify(statement, proof: Proof, config: StarkConfig, log: list | None = None) -> None:
    """Every check; ``log``: a list that receives the annotated transcript (:func:`annotated_transcript`)."""
    # -- 0. identity, shapes, buses -----------------------------------------------------------
    if proof.config_id != config.fingerprint():
        _reject("wrong-config", f"the proof used config '{proof.config_id}', not '{config.fingerprint()}'")
    layout = proof.layout
    if len(layout) != len(statement):
        _reject("tables", f"the proof has {len(layout)} table(s), the statement {len(statement)}")
    want = sum(1 << k for k in layout)
    if not isinstance(proof.tables, tuple) or len(proof.tables) != want:
        _reject("tables", f"the proof has {len(proof.tables)} table proofs; its chunk layout needs {want}")
    us = [Unit(t, j, 0, split=bool(layout[t])) for t, j in slots(layout)]  # heights: from the table proofs
    for t, ((air, _, _), k) in enumerate(zip(statement, layout, strict=True)):
        if k:
            try:
                check_chunkable(air, f"table {t}")
            except ValueError as exc:
                _reject("chunks", str(exc))
    checked = []
    for u, table in zip(us, proof.tables, strict=True):
        air, pub, pin = statement[u.table]
        pin = None if pin is None else pin - layout[u.table]
        checked.append(_check_table(f"{u.table}{u.words}", air, pub, pin, table, config))
    heights_of = collections.defaultdict(set)
    for u, (log_n, _, _) in zip(us, checked, strict=True):
        heights_of[u.table].add(log_n)
    for t, heights in heights_of.items():
        if len(heights) != 1:
            _reject("chunks", f"table {t}: the chunks have different heights {sorted(heights)}")
    unit_airs = tuple(statement[u.table][0] for u in us)
    for bus, total in bus_balance(unit_airs, [arrays["bus_sums"] for _, _, arrays in checked]).items():
        if any(total):
            tables = [f"{t} ({air.name})" for t, (air, _, _) in enumerate(statement)
                      if bus in {i.bus for i in air.interactions()}]  # fmt: skip
            _reject(
                "bus", f"bus {bus!r} does not balance: the contributions of tables {', '.join(tables)} sum to {total}"
            )

    # -- 1. the shared transcript ---------------------------------------------------------------
    first = {u.table: i for i, u in reversed(list(enumerate(us)))}
    airs = tuple(air for air, _, _ in statement)
    log_ns = tuple(checked[first[t]][0] + layout[t] for t in range(len(statement)))
    publics = tuple(checked[first[t]][1] for t in range(len(statement)))
    commitments = [
        {k: jnp.asarray(arrays[k]) for k in ("trace_root", "aux_root", "bus_sums")} for _, _, arrays in checked
    ]
    chunks = layout if any(layout) else ()
    annotated = log is not None
    tr, challenges = _shared_transcript(airs, config, log_ns, chunks, unit_airs, publics, commitments, annotated)
    if annotated:
        log.extend(_entries("statement", tr.log))

    # -- 2.-5. each unit on its fork ------------------------------------------------------------
    for i, (u, (log_n, public, arrays)) in enumerate(zip(us, checked, strict=True)):
        air = unit_airs[i]
        where = f"table {u.table}{u.words} ({air.name})"
        try:
            fork = fork_table(tr, jnp.asarray(np.uint64(i)))
            replayed = _verify_table(air, config, log_n, public, fork, challenges, arrays)
            if annotated:
                log.extend(_entries(where, replayed))
        except InvalidProof as exc:
            raise InvalidProof(exc.code, f"{where}: {exc.reason}") from None


@functools.partial(jax.jit, static_argnames=("airs", "config", "log_ns", "chunks", "unit_airs", "annotated"))
def _shared_transcript(airs, config, log_ns, chunks, unit_airs, publics, commitments, annotated=False):
    """Section 1 as one compiled program: the statement, every unit's main root, the LogUp
    challenges (``None`` when no table has interactions), every aux root and bus sums."""
    tr = initial_transcript(publics, airs=airs, config=config, log_ns=log_ns, chunks=chunks, annotated=annotated)
    for c in commitments:
        tr = absorb_trace(tr, c["trace_root"])
    challenges = None
    if any(air.num_aux_columns for air in unit_airs):
        tr, challenges = logup_challenges(tr)
        for air, c in zip(unit_airs, commitments, strict=True):
            if air.num_aux_columns:
                tr = absorb_aux(tr, c["aux_root"][0], c["bus_sums"])
    return tr, challenges


def _check_table(t: int | str, air: AIR, public_inputs, pin, table: TableProof, config: StarkConfig):
    """Section 0 for one table: identity, height, and every array's shape; returns
    ``(log_n, public, arrays)``."""
    where = f"table {t} ({air.name}): "
    if not isinstance(table, TableProof):
        _reject("malformed", f"{where}expected a TableProof, got {type(table).__name__}")
    if table.air_id != air.fingerprint():
        _reject("wrong-air", f"{where}the proof is for AIR '{table.air_id}', not '{air.fingerprint()}'")
    try:
        public = public_array(air, public_inputs)
    except ValueError as exc:
        _reject("public-inputs", f"{where}{exc}")
    log_n = table.log_n
    if not isinstance(log_n, int) or not 1 <= log_n <= 31 - config.log_blowup:
        _reject("malformed", f"{where}trace height 2^{log_n} is out of range")
    if pin is not None and log_n != pin:
        _reject("wrong-height", f"{where}the proof is for 2^{log_n} rows, the statement says 2^{pin}")
    try:
        air.check_height(log_n)
    except ShapeError as exc:
        _reject("wrong-height", f"{where}{exc}")
    c, a, parts, q = air.width, air.num_aux_columns, air.composition_parts, config.num_queries
    buses = len({i.bus for i in air.interactions()})
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)
    u8, u64 = np.uint8, np.uint64
    shapes = dict(
        trace_root=((32,), u8), aux_root=((1 if a else 0, 32), u8), bus_sums=((buses, 3), u64),
        parts_root=((32,), u8), fri_roots=((layers, 32), u8), trace_z=((c, 3), u64), trace_zg=((c, 3), u64),
        aux_z=((a, 3), u64), aux_zg=((a, 3), u64), parts_z=((parts, 3), u64),
        fri_final=(((1 << log_n) >> layers, 3), u64), nonce=((), u64), trace_rows=((q, c), u64),
        trace_paths=((q, log_l, 32), u8), aux_rows=((q, 3 * a), u64), aux_paths=((q, log_l if a else 0, 32), u8),
        parts_rows=((q, 3 * parts), u64), parts_paths=((q, log_l, 32), u8),
    )  # fmt: skip
    arrays = {name: _expect(where + name, getattr(table, name), *spec) for name, spec in shapes.items()}
    if len(table.fri_rows) != layers or len(table.fri_paths) != layers:
        _reject("malformed", f"{where}expected {layers} FRI layers, got {len(table.fri_rows)} / {len(table.fri_paths)}")
    arrays["fri_rows"] = tuple(_expect(f"{where}fri_rows[{k}]", r, (q, 6), u64) for k, r in enumerate(table.fri_rows))
    arrays["fri_paths"] = tuple(
        _expect(f"{where}fri_paths[{k}]", p, (q, log_l - 1 - k, 32), u8) for k, p in enumerate(table.fri_paths)
    )
    return log_n, public, arrays


def _verify_table(air: AIR, config: StarkConfig, log_n: int, public, tr, challenges, arrays) -> tuple:
    """Every check of one table; returns its fork's log (empty unless ``tr`` is annotated)."""
    layers = fri_num_layers(log_n, config.fri_final_degree)
    out = jax.device_get(_verify_core(air, config, log_n, public, tr, challenges, jax.tree.map(jnp.asarray, arrays)))
    ood = OutOfDomain(*(jnp.asarray(x) for x in (out["z"], arrays["trace_z"], arrays["trace_zg"], arrays["parts_z"],
                                                  arrays["aux_z"], arrays["aux_zg"])))  # fmt: skip
    _check_ood(air, ood, jnp.asarray(out["alphas"]), public, log_n, challenges, arrays["bus_sums"])
    if not out["pow_ok"]:
        _reject("pow", f"the nonce does not satisfy the {config.grinding_bits}-bit proof of work")
    for key, code, what in (
        ("trace_ok", "trace-path", "trace"),
        ("aux_ok", "aux-path", "aux trace"),
        ("parts_ok", "composition-path", "composition"),
    ):
        _first_bad(out[key], code, f"the {what} opening does not match its Merkle root")
    for k, ok in enumerate(out["fri_ok"]):
        _first_bad(ok, "fri-path", f"the FRI layer {k} opening does not match its Merkle root")
    for k, ok in enumerate(out["layer_ok"]):
        what = "the DEEP composition of the opened rows" if k == 0 else f"the fold of FRI layer {k - 1}"
        _first_bad(ok, "deep" if k == 0 else "fri-fold", f"the opened FRI layer {k} value does not match {what}")
    code = "deep" if not layers else "fri-final"
    _first_bad(out["final_ok"], code, "the last FRI value does not lie on the final polynomial")
    return out["log"]


def _first_bad(ok, code: str, message: str) -> None:
    ok = np.asarray(ok)
    if not ok.all():
        j = int(np.nonzero(~ok)[0][0])
        _reject(code, f"query {j}: {message}")


def _pow_index(base: int, exps: jax.Array, bits: int) -> jax.Array:
    """base^exps for a Python-int base and uint exponent array (square-and-multiply)."""
    return gl._pow_bits(jnp.asarray(np.uint64(base % P)), exps.astype(jnp.uint64), max(bits, 1))


@functools.partial(jax.jit, static_argnames=("air", "config", "log_n"))
def _verify_core(air: AIR, config: StarkConfig, log_n: int, public, tr, challenges, a) -> dict:
    """Every check of one table after the shape checks except the out-of-domain one, as one
    compiled program (compiled once per AIR, config and trace height), from the table's fork of
    the transcript: replay, proof of work, Merkle paths, DEEP values, folds and the final
    polynomial. Returns flags per query."""
    c, aux_cols, parts, q = air.width, air.num_aux_columns, air.composition_parts, config.num_queries
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)

    tr, alphas = tr.challenge_ext("composition alphas", num_constraints(air))
    tr = tr.absorb_digest("composition root", a["parts_root"])
    tr, z = tr.challenge_ext("ood point")
    tr = absorb_ood(tr, a["trace_z"], a["trace_zg"], a["parts_z"], a["aux_z"], a["aux_zg"])
    tr, gamma = tr.challenge_ext("deep gamma")
    betas = []
    for k in range(layers):
        tr = tr.absorb_digest(f"fri layer {k}", a["fri_roots"][k])
        tr, beta = tr.challenge_ext(f"fri beta {k}")
        betas.append(beta)
    tr = tr.absorb_ext("fri final poly", a["fri_final"])
    pow_ok = tr.pow_ok(a["nonce"], config.grinding_bits)
    tr = tr.absorb_base("pow nonce", a["nonce"][None])
    tr, idx = tr.query_indices("fri queries", q, 1 << log_l)

    trace_ok = _verify_paths_core(config.hash, log_l, a["trace_root"], idx, a["trace_rows"], a["trace_paths"])
    parts_ok = _verify_paths_core(config.hash, log_l, a["parts_root"], idx, a["parts_rows"], a["parts_paths"])
    aux_ok = jnp.ones((q,), bool)
    if aux_cols:
        aux_ok = _verify_paths_core(config.hash, log_l, a["aux_root"][0], idx, a["aux_rows"], a["aux_paths"])
    fri_ok = []
    for k in range(layers):
        pos = idx & np.uint32((1 << (log_l - 1 - k)) - 1)
        fri_ok.append(
            _verify_paths_core(config.hash, log_l - 1 - k, a["fri_roots"][k], pos, a["fri_rows"][k], a["fri_paths"][k])
        )

    xs = gl._mul(_pow_index(gl.root_of_unity(log_l), idx, log_l), np.uint64(DEFAULT_OFFSET))
    ood = OutOfDomain(z, a["trace_z"], a["trace_zg"], a["parts_z"], a["aux_z"], a["aux_zg"])
    zg = fext._mul_base(z, np.uint64(gl.root_of_unity(log_n)))
    g_pows = fext._powers(gamma, num_deep_terms(c, parts, aux_cols))
    aux_rows, parts_rows = a["aux_rows"].reshape(q, aux_cols, 3), a["parts_rows"].reshape(q, parts, 3)
    current = deep_combine(xs, a["trace_rows"], aux_rows, parts_rows, ood, g_pows, zg)
    layer_ok = []
    cur_idx = idx
    for k in range(layers):
        half = 1 << (log_l - 1 - k)
        pos = cur_idx & np.uint32(half - 1)
        upper = ((cur_idx & np.uint32(half)) != np.uint32(0))[:, None]
        lo, hi = a["fri_rows"][k][:, :3], a["fri_rows"][k][:, 3:]
        layer_ok.append(jnp.all(jnp.where(upper, hi, lo) == current, axis=-1))
        w_inv = pow(gl.root_of_unity(log_l - k), P - 2, P)
        s_inv = pow(pow(DEFAULT_OFFSET, 1 << k, P), P - 2, P)
        x_inv = gl._mul(_pow_index(w_inv, pos, log_l - k), np.uint64(s_inv))
        current = fold_pair(lo, hi, x_inv, betas[k])
        cur_idx = pos
    log_m = log_l - layers
    pts = gl._mul(_pow_index(gl.root_of_unity(log_m), cur_idx, log_m), np.uint64(pow(DEFAULT_OFFSET, 1 << layers, P)))
    on_final = jax.vmap(lambda x: _evaluate(a["fri_final"], x, True))(pts)
    final_ok = jnp.all(on_final == current, axis=-1)
    return dict(
        alphas=alphas,
        z=z,
        pow_ok=pow_ok,
        trace_ok=trace_ok,
        parts_ok=parts_ok,
        aux_ok=aux_ok,
        fri_ok=fri_ok,
        layer_ok=layer_ok,
        final_ok=final_ok,
        log=tr.log,
    )


def _host(a) -> list[HostVal]:
    """Extension values ``(k, 3)`` as :class:`HostVal` scalars."""
    return [HostVal(x) for x in np.asarray(a).reshape(-1, 3).tolist()]


def _check_ood(air: AIR, ood: OutOfDomain, alphas, public, log_n: int, challenges, sums) -> None:
    """Section 2': the AIR's constraints at ``z`` (evaluated with Python integers: a few scalar
    operations per constraint) against the composition parts' claimed values."""
    n = 1 << log_n
    (z,) = _host(ood.z)
    cur, nxt = _host(ood.trace_z), _host(ood.trace_zg)
    periodic = []
    for col in air.periodic_arrays():
        coeffs = np.asarray(intt(jnp.asarray(col)[:, None]))[:, 0].tolist()
        y, value = z ** (n // len(col)), HostVal(0)
        for coeff in reversed(coeffs):  # Horner
            value = value * y + coeff
        periodic.append(value)
    pub = [HostVal(int(v)) for v in np.asarray(public).tolist()]
    zn = z**n
    if not zn - 1:
        _reject("ood", "the out-of-domain point lies in the trace domain")
    aux = None
    if air.num_aux_columns:
        beta, gamma = _host(challenges)
        aux = AuxFrame(_host(ood.aux_z), _host(ood.aux_zg), beta, gamma, _host(sums))
    acc = combine_constraints(air, log_n, z, (zn - 1).inv(), HostVal.inv, cur, nxt, periodic, pub, _host(alphas), aux)
    total, zpow = HostVal(0), HostVal(1)  # sum_j z^(j n) H_j(z)
    for part in _host(ood.parts_z):
        total, zpow = total + zpow * part, zpow * zn
    if acc != total:
        _reject("ood", "the composition polynomial's claimed value at z does not match the AIR's constraints there")
