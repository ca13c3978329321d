"""``verify``: check a proof of one or more tables on the host CPU.

The proof is hostile input: every field is type-, shape- and range-checked before it is used,
and the statement and the security level are the caller's, never the proof's. Sections mirror
the prover's rounds, cheap checks first:

0. floor, format and shape: the config gives at least the caller's ``min_security_bits``; the
   proof has the statement's tables, each for its AIR and the config; every array has the shape
   the AIR, config and trace height imply, every field element is canonical (and, with
   Poseidon2, every digest word); every bus balances (the published contributions sum to zero);
1. shared transcript replay: statement, main roots, LogUp challenges, aux roots and bus sums;
2.-4. per table, on its fork: the same absorbs and squeezes as the prover, giving the
   composition challenges, ``z``, ``gamma``, the FRI folding challenges and the query positions;
2'. out-of-domain check: ``z`` lies outside the base field (which holds the trace domain and
   the LDE coset), and the constraints (main and aux) evaluated at ``z`` from the claimed
   ``T(z), T(zw), A(z), A(zw)``, divided by their zerofiers and combined, equal
   ``sum_j z^(jn) H_j(z)``;
5. the proof of work; then (the expensive part) the Merkle paths of every opening, the DEEP value
   at each query from the opened rows equals the first FRI layer, every fold is consistent, and
   the last fold equals the final polynomial.

Every rejection raises :class:`~jaxstark.errors.InvalidProof` with a ``code`` and a sentence
naming the table (or the bus); malformed input of any kind is a rejection, never a crash.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import numpy as np

from jaxstark.air import AIR
from jaxstark.chunking import Unit, check_chunkable, slots
from jaxstark.config import StarkConfig
from jaxstark.errors import InvalidProof, JaxstarkError, ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal, batch
from jaxstark.hash.host import verify_paths
from jaxstark.logup import aux_degrees, check_bus_arity
from jaxstark.proof import MAX_CHUNKS_LOG2, MAX_TABLES, Proof, TableProof
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import (
    constraints_at,
    deep_numerators,
    deep_value,
    fold_pair,
    layer_x_inv,
    lde_point,
    parts_at,
)
from jaxstark.protocol.layout import DIGEST_FIELDS, fri_num_layers, num_deep_terms, table_shapes
from jaxstark.protocol.statement import bus_balance, public_array
from jaxstark.transcript import HostTranscript

__all__ = ["verify", "annotated_transcript"]

P = gl.P


def _reject(code: str, message: str):
    raise InvalidProof(code, message)


def _expect(name: str, value, shape: tuple, dtype) -> np.ndarray:
    try:
        a = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 -- a proof built in Python may hold anything
        _reject("malformed", f"{name} is not an array ({type(exc).__name__}: {str(exc)[:100]})")
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
    min_security_bits: float | None = None,
) -> bool:
    """Return True if ``proof`` is valid for ``air``, ``public_inputs`` and ``config`` -- or, for
    a statement of several tables ``[air or (air, public_inputs), ...]`` (``config`` by keyword),
    for all of them with every bus balanced; otherwise raise :class:`InvalidProof` (``.code``
    says which check failed, the message names the table or bus).

    Trace heights are the prover's choice and bound into the transcript; pass ``log_n`` (one
    per table for a statement) when the statement fixes them (a proof of another height is then
    rejected with ``wrong-height``).

    ``min_security_bits``: reject (code ``security``) a config whose conjectured level
    (:meth:`StarkConfig.security_bits`) is lower, before anything else is checked. Default None:
    no floor -- the caller's ``config`` is the level. ``jaxstark verify``, which reads the config
    from a file the prover wrote, applies 100 bits unless told otherwise."""
    return _checked_verify(air, proof, public_inputs, config, log_n, None, min_security_bits)


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
    _checked_verify(air, proof, public_inputs, config, log_n, log, None)
    return log


def _checked_verify(air, proof, public_inputs, config, log_n, log, min_security_bits) -> bool:
    config = config or StarkConfig()
    if not isinstance(config, StarkConfig):
        raise TypeError(f"verify: config must be a StarkConfig, got {type(config).__name__}")
    if min_security_bits is not None and (
        isinstance(min_security_bits, bool)
        or not isinstance(min_security_bits, (int, float))
        or not math.isfinite(min_security_bits)
    ):
        raise TypeError(f"verify: min_security_bits must be a finite number of bits or None, got {min_security_bits!r}")
    statement = _statement(air, public_inputs, log_n)
    _check_statement([a for a, _, _ in statement])
    if min_security_bits is not None and config.security_bits() < min_security_bits:
        _reject(
            "security",
            f"the parameters {config.fingerprint()} give {config.security_bits():.1f} conjectured bits "
            f"({config.security_report()}), below the verifier's floor of {min_security_bits:g} bits",
        )
    try:
        if isinstance(proof, (bytes, bytearray, memoryview)):
            proof = Proof.from_bytes(proof)
        if type(proof) is not Proof:  # a subclass could override what the checks read
            _reject("malformed", f"expected a Proof or its bytes, got {type(proof).__name__}")
        _verify(statement, proof, config, log)
    except JaxstarkError:
        raise
    except (ValueError, TypeError, IndexError, OverflowError, KeyError, AttributeError) as exc:
        raise InvalidProof("malformed", f"proof could not be checked: {type(exc).__name__}: {exc}") from exc
    return True


def _check_statement(airs: list[AIR]) -> None:
    """The caller's AIRs work (their fingerprint, layout and degrees evaluate) and their buses
    carry tuples of one length; a ValueError names the table otherwise -- a fault of the
    statement, not of the proof, so it is never reported as a rejection."""
    for i, air in enumerate(airs):
        try:
            air.fingerprint(), air.constraint_degrees(), air.max_degree, aux_degrees(air)
        except Exception as exc:  # noqa: BLE001 -- the statement's own AIR may fail in any way
            raise ValueError(
                f"verify: statement table {i} ({type(air).__name__}) is not a usable AIR: {type(exc).__name__}: "
                f"{str(exc)[:300]}"
            ) from None
    check_bus_arity(airs)


def _entries(where: str, entries) -> list[tuple[str, str, str, np.ndarray]]:
    return [(where, e.label, e.kind, np.asarray(e.value)) for e in entries]


def _verify(statement, proof: Proof, config: StarkConfig, log: list | None = None) -> None:
    """Every check; ``log``: a list that receives the annotated transcript (:func:`annotated_transcript`)."""
    # -- 0. identity, shapes, buses -----------------------------------------------------------
    _check_proof_object(proof)
    if proof.config_id != config.fingerprint():
        _reject("wrong-config", f"the proof used config '{proof.config_id}', not '{config.fingerprint()}'")
    layout = proof.layout
    if len(layout) != len(statement):
        _reject("tables", f"the proof has {len(layout)} table(s), the statement {len(statement)}")
    want = sum(1 << k for k in layout)
    if len(proof.tables) != want:
        _reject("tables", f"the proof has {len(proof.tables)} table proofs; its chunk layout needs {want}")
    us = [Unit(t, j, 0, split=bool(layout[t])) for t, j in slots(layout)]  # heights: from the table proofs
    for t, ((air, _, _), k) in enumerate(zip(statement, layout, strict=True)):
        if k:
            try:
                check_chunkable(air, f"table {t}")
            except ValueError as exc:
                _reject("chunks", str(exc))
    unit_heights = [
        _table_height(f"table {u.table}{u.words} ({statement[u.table][0].name}): ", table, config)
        for u, table in zip(us, proof.tables, strict=True)
    ]
    heights_of = collections.defaultdict(set)
    for u, log_n in zip(us, unit_heights, strict=True):
        heights_of[u.table].add(log_n)
    for t, heights in heights_of.items():
        if len(heights) != 1:
            _reject("chunks", f"table {t}: the chunks have different heights {sorted(heights)}")
    checked = []
    for u, table, log_n in zip(us, proof.tables, unit_heights, strict=True):
        air, pub, pin = statement[u.table]
        pin = None if pin is None else pin - layout[u.table]
        checked.append(_check_table(f"{u.table}{u.words}", air, pub, pin, table, log_n, config))
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
    chunks = layout if any(layout) else ()
    annotated = log is not None
    tr, challenges = _shared_transcript(airs, config, log_ns, chunks, unit_airs, publics, checked, annotated)
    if annotated:
        log.extend(_entries("statement", tr.log))

    # -- 2.-5. each unit on its fork ------------------------------------------------------------
    for i, (u, (log_n, public, arrays)) in enumerate(zip(us, checked, strict=True)):
        air = unit_airs[i]
        where = f"table {u.table}{u.words} ({air.name})"
        try:
            replayed = _verify_table(air, config, log_n, public, fs.fork_table(tr, i), challenges, arrays)
            if annotated:
                log.extend(_entries(where, replayed))
        except InvalidProof as exc:
            raise InvalidProof(exc.code, f"{where}: {exc.reason}") from None


def _shared_transcript(airs, config, log_ns, chunks, unit_airs, publics, checked, annotated=False):
    """Section 1: the statement, every unit's main root, the LogUp challenges (``None`` when no
    table has interactions), every aux root and bus sums."""
    tr = HostTranscript.new(fs.PROTOCOL, config.hash, annotated)
    tr = fs.bind_statement(tr, airs, config, log_ns, chunks, publics)
    for _, _, arrays in checked:
        tr = fs.absorb_trace(tr, arrays["trace_root"])
    challenges = None
    if any(air.num_aux_columns for air in unit_airs):
        tr, challenges = fs.logup_challenges(tr)
        for air, (_, _, arrays) in zip(unit_airs, checked, strict=True):
            if air.num_aux_columns:
                tr = fs.absorb_aux(tr, arrays["aux_root"][0], arrays["bus_sums"])
    return tr, challenges


def _check_proof_object(proof: Proof) -> None:
    """The proof's own fields have the types and bounds the byte format gives them (a
    :class:`Proof` can be built in Python, bypassing the parser)."""
    if not isinstance(proof.config_id, str):
        _reject("malformed", f"the config id is a {type(proof.config_id).__name__}, not a str")
    if not isinstance(proof.chunks, tuple) or not isinstance(proof.tables, tuple):
        _reject("malformed", "the proof's chunks and tables must be tuples")
    if not 1 <= len(proof.tables) <= MAX_TABLES or len(proof.chunks) > MAX_TABLES:
        _reject("malformed", f"the proof holds {len(proof.tables)} table proofs (1 ... {MAX_TABLES} allowed)")
    for k in proof.chunks:
        if type(k) is not int or not 0 <= k <= MAX_CHUNKS_LOG2:  # exactly int: no subclass with its own ==
            _reject("chunks", f"a table is split into 2^{k!r:.20} chunks (0 ... {MAX_CHUNKS_LOG2} allowed)")


def _table_height(where: str, table: TableProof, config: StarkConfig) -> int:
    """A unit's claimed trace height, checked to be a height the config can prove."""
    if type(table) is not TableProof:
        _reject("malformed", f"{where}expected a TableProof, got {type(table).__name__}")
    log_n = table.log_n
    if type(log_n) is not int or not 1 <= log_n <= 31 - config.log_blowup:
        _reject("malformed", f"{where}trace height 2^{log_n} is out of range")
    return log_n


def _check_table(t: int | str, air: AIR, public_inputs, pin, table: TableProof, log_n: int, config: StarkConfig):
    """Section 0 for one table (its height ``log_n`` already checked by :func:`_table_height`):
    identity, height, and every array's shape; returns
    ``(log_n, public, arrays)``."""
    where = f"table {t} ({air.name}): "
    if type(table.air_id) is not str or table.air_id != air.fingerprint():
        _reject("wrong-air", f"{where}the proof is for AIR {str(table.air_id)[:200]!r}, not '{air.fingerprint()}'")
    try:
        public = public_array(air, public_inputs)
    except ValueError as exc:
        _reject("public-inputs", f"{where}{exc}")
    if pin is not None and log_n != pin:
        _reject("wrong-height", f"{where}the proof is for 2^{log_n} rows, the statement says 2^{pin}")
    try:
        air.check_height(log_n)
    except ShapeError as exc:
        _reject("wrong-height", f"{where}{exc}")
    shapes = table_shapes(air, config, log_n)
    fri_shapes = {k: shapes.pop(k) for k in ("fri_rows", "fri_paths")}
    arrays = {name: _expect(where + name, getattr(table, name), *spec) for name, spec in shapes.items()}
    if not isinstance(table.fri_rows, (tuple, list)) or not isinstance(table.fri_paths, (tuple, list)):
        _reject("malformed", f"{where}the FRI openings must be tuples of arrays")
    layers = len(fri_shapes["fri_rows"])
    if len(table.fri_rows) != layers or len(table.fri_paths) != layers:
        _reject("malformed", f"{where}expected {layers} FRI layers, got {len(table.fri_rows)} / {len(table.fri_paths)}")
    for name, specs in fri_shapes.items():
        values = zip(getattr(table, name), specs, strict=True)
        arrays[name] = tuple(_expect(f"{where}{name}[{k}]", v, *spec) for k, (v, spec) in enumerate(values))
    if config.hash == "poseidon2":  # a digest is 4 field elements: only canonical words hash as themselves
        for name in DIGEST_FIELDS:
            _canonical_digests(where + name, arrays[name])
        for k, p in enumerate(arrays["fri_paths"]):
            _canonical_digests(f"{where}fri_paths[{k}]", p)
    return log_n, public, arrays


def _canonical_digests(name: str, digests: np.ndarray) -> None:
    """Poseidon2 digests are 4 canonical field elements (8 little-endian bytes each); the node
    compression reduces its input mod p, so a word ``w + p`` would hash like ``w`` and make the
    proof malleable."""
    words = np.ascontiguousarray(digests).reshape(-1, 8).view("<u8")
    if words.size and int(words.max()) >= P:
        _reject("digest", f"{name} holds a Poseidon2 digest word >= p (digests must be canonical field elements)")


def _verify_table(air: AIR, config: StarkConfig, log_n: int, public, tr, challenges, arrays) -> tuple:
    """Every check of one table, the cheap ones first: the transcript replay, the out-of-domain
    point and the constraints there, the proof of work; then the Merkle paths and FRI. Returns
    its fork's log (empty unless ``tr`` is annotated)."""
    layers = fri_num_layers(log_n, config.fri_final_degree)
    fs_ = _replay(air, config, log_n, tr, arrays)
    z = np.asarray(fs_["z"])
    if not z[1:].any():
        _reject("ood", "the out-of-domain point lies in the base field, which holds the trace domain and the LDE coset")
    ood = _Claims(z, arrays["trace_z"], arrays["trace_zg"], arrays["parts_z"], arrays["aux_z"], arrays["aux_zg"])
    _check_ood(air, ood, fs_["alphas"], public, log_n, challenges, arrays["bus_sums"])
    if not fs_["pow_ok"]:
        _reject("pow", f"the nonce does not satisfy the {config.grinding_bits}-bit proof of work")
    out = _openings(air, config, log_n, arrays, ood, fs_["gamma"], fs_["betas"], fs_["idx"])
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
    return fs_["log"]


class _Claims(collections.namedtuple("_Claims", "z trace_z trace_zg parts_z aux_z aux_zg")):
    """The out-of-domain point and the claimed values there (``uint64`` arrays)."""


def _first_bad(ok, code: str, message: str) -> None:
    ok = np.asarray(ok)
    if not ok.all():
        j = int(np.nonzero(~ok)[0][0])
        _reject(code, f"query {j}: {message}")


def _replay(air: AIR, config: StarkConfig, log_n: int, tr, a) -> dict:
    """The table fork's Fiat-Shamir replay: the composition challenges, ``z``, ``gamma``, the FRI
    folding challenges, the proof-of-work check and the query positions."""
    return fs.replay_table(tr, air, config, log_n, a)


def _weights(weights: list[HostVal]) -> np.ndarray:
    return np.array([g.c for g in weights], dtype=object).reshape(-1, 3)


def _dot_base(values: np.ndarray, weights: list[HostVal]) -> HostVal:
    """``sum_t values[:, t] * weights[t]`` for base-field ``values`` ``(q, k)`` (an ``object``
    array) and ``k`` extension scalars: one extension value per row."""
    w = _weights(weights)
    return HostVal(tuple(values @ w[:, i] for i in range(3)))


def _dot_ext(values: np.ndarray, weights: list[HostVal]) -> HostVal:
    """``sum_t values[..., t, :] * weights[t]`` for extension ``values`` ``(..., k, 3)`` (an
    ``object`` array) and ``k`` extension scalars."""
    w = _weights(weights)
    r0, r1, r2 = values[..., 0], values[..., 1], values[..., 2]
    w0, w1, w2 = w[:, 0], w[:, 1], w[:, 2]
    return HostVal((r0 @ w0 + 2 * (r1 @ w2 + r2 @ w1), r0 @ w1 + r1 @ w0 + 2 * (r2 @ w2), r0 @ w2 + r1 @ w1 + r2 @ w0))


def _openings(air: AIR, config: StarkConfig, log_n: int, a, ood, gamma, betas, idx) -> dict:
    """The expensive checks of one table on the host: Merkle paths of every opening, the DEEP
    values at the queries, every fold and the final polynomial. Returns flags per query."""
    c, aux_cols, parts, q = air.width, air.num_aux_columns, air.composition_parts, config.num_queries
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)
    idx = np.asarray(idx).astype(np.int64)

    trees = [(log_l, a["trace_root"], idx, a["trace_rows"], a["trace_paths"]),
             (log_l, a["parts_root"], idx, a["parts_rows"], a["parts_paths"])]  # fmt: skip
    if aux_cols:
        trees.append((log_l, a["aux_root"][0], idx, a["aux_rows"], a["aux_paths"]))
    for k in range(layers):
        pos = idx & ((1 << (log_l - 1 - k)) - 1)
        trees.append((log_l - 1 - k, a["fri_roots"][k], pos, a["fri_rows"][k], a["fri_paths"][k]))
    ok = verify_paths(config.hash, trees)
    trace_ok, parts_ok = ok[0], ok[1]
    aux_ok = ok[2] if aux_cols else np.ones((q,), bool)
    fri_ok = ok[3 if aux_cols else 2 :]

    # DEEP at the queried points
    g = HostVal(np.asarray(gamma))
    g_pows, p = [], HostVal(1)
    for _ in range(num_deep_terms(c, parts, aux_cols)):
        g_pows.append(p)
        p = p * g
    rows = batch(a["trace_rows"])
    parts_rows = batch(a["parts_rows"]).reshape(q, parts, 3)
    aux_rows = batch(a["aux_rows"]).reshape(q, aux_cols, 3)
    claims = ood._replace(**{k: batch(v) for k, v in ood._asdict().items() if k != "z"})
    num_z, num_zg = deep_numerators(_dot_base, _dot_ext, lambda w: w, rows, parts_rows, aux_rows, claims, g_pows)
    z = HostVal(np.asarray(ood.z))
    zg = z * gl.root_of_unity(log_n)
    xs = lde_point(log_l, batch(idx))
    current = deep_value(xs, z, zg, num_z, num_zg, HostVal.inv)

    # every fold, then the final polynomial
    layer_ok = []
    cur_idx = idx
    for k in range(layers):
        half = 1 << (log_l - 1 - k)
        pos = cur_idx & (half - 1)
        upper = (cur_idx & half) != 0
        fri = a["fri_rows"][k]
        lo, hi = HostVal(fri[:, :3]), HostVal(fri[:, 3:])
        layer_ok.append(HostVal(np.where(upper[:, None], fri[:, 3:], fri[:, :3])).equals(current))
        current = fold_pair(lo, hi, layer_x_inv(log_l, k, batch(pos)), HostVal(np.asarray(betas[k])))
        cur_idx = pos
    pts = lde_point(log_l - layers, batch(cur_idx), shift=layers)
    on_final = HostVal(0)
    for coeff in reversed(a["fri_final"].tolist()):  # Horner
        on_final = on_final * pts + HostVal(tuple(coeff))
    final_ok = on_final.equals(current)
    return dict(
        trace_ok=trace_ok, parts_ok=parts_ok, aux_ok=aux_ok, fri_ok=fri_ok, layer_ok=layer_ok, final_ok=final_ok
    )


def _check_ood(air: AIR, ood, alphas, public, log_n: int, challenges, sums) -> None:
    """Section 2': the AIR's constraints at ``z`` (evaluated with Python integers: a few scalar
    operations per constraint) against the composition parts' claimed values."""
    acc = constraints_at(air, log_n, ood, alphas, public, challenges, sums)
    if acc != parts_at(log_n, ood.z, ood.parts_z):
        _reject("ood", "the composition polynomial's claimed value at z does not match the AIR's constraints there")
