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
import functools
import math
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
from jaxstark.logup import AuxFrame, aux_degrees, check_bus_arity
from jaxstark.merkle import _verify as _verify_paths_core
from jaxstark.ntt import intt
from jaxstark.poly import _evaluate
from jaxstark.proof import MAX_CHUNKS_LOG2, MAX_TABLES, Proof, TableProof
from jaxstark.prover import bus_balance, fork_table, initial_transcript, public_array
from jaxstark.rounds.r1_aux_commit import absorb_aux, logup_challenges
from jaxstark.rounds.r1_trace_commit import absorb_trace
from jaxstark.rounds.r2_composition import combine_constraints, num_constraints
from jaxstark.rounds.r3_ood import OutOfDomain, absorb_ood
from jaxstark.rounds.r4_deep_fri import deep_combine, fold_pair, fri_num_layers, num_deep_terms

__all__ = ["verify", "annotated_transcript", "constraints_at"]

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
        if not isinstance(proof, Proof):
            _reject("malformed", f"expected a Proof or its bytes, got {type(proof).__name__}")
        with jax.default_device(jax.local_devices(backend="cpu")[0]):
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
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_CHUNKS_LOG2:
            _reject("chunks", f"a table is split into 2^{k!r:.20} chunks (0 ... {MAX_CHUNKS_LOG2} allowed)")


def _table_height(where: str, table: TableProof, config: StarkConfig) -> int:
    """A unit's claimed trace height, checked to be a height the config can prove."""
    if not isinstance(table, TableProof):
        _reject("malformed", f"{where}expected a TableProof, got {type(table).__name__}")
    log_n = table.log_n
    if isinstance(log_n, bool) or not isinstance(log_n, int) or not 1 <= log_n <= 31 - config.log_blowup:
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
    if not isinstance(table.fri_rows, (tuple, list)) or not isinstance(table.fri_paths, (tuple, list)):
        _reject("malformed", f"{where}the FRI openings must be tuples of arrays")
    if len(table.fri_rows) != layers or len(table.fri_paths) != layers:
        _reject("malformed", f"{where}expected {layers} FRI layers, got {len(table.fri_rows)} / {len(table.fri_paths)}")
    arrays["fri_rows"] = tuple(_expect(f"{where}fri_rows[{k}]", r, (q, 6), u64) for k, r in enumerate(table.fri_rows))
    arrays["fri_paths"] = tuple(
        _expect(f"{where}fri_paths[{k}]", p, (q, log_l - 1 - k, 32), u8) for k, p in enumerate(table.fri_paths)
    )
    if config.hash == "poseidon2":  # a digest is 4 field elements: only canonical words hash as themselves
        for name in ("trace_root", "aux_root", "parts_root", "fri_roots", "trace_paths", "aux_paths", "parts_paths"):
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
    a = jax.tree.map(jnp.asarray, arrays)
    fs = _replay(air, config, log_n, tr, a)
    z = np.asarray(fs["z"])
    if not z[1:].any():
        _reject("ood", "the out-of-domain point lies in the base field, which holds the trace domain and the LDE coset")
    ood = OutOfDomain(*(jnp.asarray(x) for x in (z, arrays["trace_z"], arrays["trace_zg"], arrays["parts_z"],
                                                  arrays["aux_z"], arrays["aux_zg"])))  # fmt: skip
    _check_ood(air, ood, jnp.asarray(fs["alphas"]), public, log_n, challenges, arrays["bus_sums"])
    if not bool(fs["pow_ok"]):
        _reject("pow", f"the nonce does not satisfy the {config.grinding_bits}-bit proof of work")
    out = jax.device_get(_openings(air, config, log_n, a, fs["z"], fs["gamma"], fs["betas"], fs["idx"]))
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
    return fs["log"]


def _first_bad(ok, code: str, message: str) -> None:
    ok = np.asarray(ok)
    if not ok.all():
        j = int(np.nonzero(~ok)[0][0])
        _reject(code, f"query {j}: {message}")


def _pow_index(base: int, exps: jax.Array, bits: int) -> jax.Array:
    """base^exps for a Python-int base and uint exponent array (square-and-multiply)."""
    return gl._pow_bits(jnp.asarray(np.uint64(base % P)), exps.astype(jnp.uint64), max(bits, 1))


def _replay(air: AIR, config: StarkConfig, log_n: int, tr, a) -> dict:
    """The table fork's Fiat-Shamir replay on the host: the composition challenges, ``z``,
    ``gamma``, the FRI folding challenges, the proof-of-work check and the query positions."""
    return jax.device_get(_replay_core(air, config, log_n, tr, a))


@functools.partial(jax.jit, static_argnames=("air", "config", "log_n"))
def _replay_core(air: AIR, config: StarkConfig, log_n: int, tr, a) -> dict:
    q = config.num_queries
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
    return dict(alphas=alphas, z=z, gamma=gamma, betas=betas, pow_ok=pow_ok, idx=idx, log=tr.log)


@functools.partial(jax.jit, static_argnames=("air", "config", "log_n"))
def _openings(air: AIR, config: StarkConfig, log_n: int, a, z, gamma, betas, idx) -> dict:
    """The expensive checks of one table as one compiled program (once per AIR, config and
    trace height): Merkle paths of every opening, the DEEP values at the queries, every fold
    and the final polynomial. Returns flags per query."""
    c, aux_cols, parts, q = air.width, air.num_aux_columns, air.composition_parts, config.num_queries
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)

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
        trace_ok=trace_ok, parts_ok=parts_ok, aux_ok=aux_ok, fri_ok=fri_ok, layer_ok=layer_ok, final_ok=final_ok
    )


def _host(a) -> list[HostVal]:
    """Extension values ``(k, 3)`` as :class:`HostVal` scalars."""
    return [HostVal(x) for x in np.asarray(a).reshape(-1, 3).tolist()]


def constraints_at(air: AIR, log_n: int, ood: OutOfDomain, alphas, public, challenges, sums) -> HostVal:
    """The AIR's constraints (main and aux) at ``ood.z`` from the claimed values there, divided by
    their zerofiers and combined with ``alphas`` -- what ``sum_j z^(jn) H_j(z)`` must equal --
    evaluated with Python integers (a few scalar operations per constraint)."""
    n = 1 << log_n
    (z,) = _host(ood.z)
    periodic = []
    for col in air.periodic_arrays():
        coeffs = np.asarray(intt(jnp.asarray(col)[:, None]))[:, 0].tolist()
        y, value = z ** (n // len(col)), HostVal(0)
        for coeff in reversed(coeffs):  # Horner
            value = value * y + coeff
        periodic.append(value)
    pub = [HostVal(int(v)) for v in np.asarray(public).tolist()]
    aux = None
    if air.num_aux_columns:
        beta, gamma = _host(challenges)
        aux = AuxFrame(_host(ood.aux_z), _host(ood.aux_zg), beta, gamma, _host(sums))
    cur, nxt = _host(ood.trace_z), _host(ood.trace_zg)
    inv_zerofier = (z**n - 1).inv()
    return combine_constraints(air, log_n, z, inv_zerofier, HostVal.inv, cur, nxt, periodic, pub, _host(alphas), aux)


def _check_ood(air: AIR, ood: OutOfDomain, alphas, public, log_n: int, challenges, sums) -> None:
    """Section 2': the AIR's constraints at ``z`` (evaluated with Python integers: a few scalar
    operations per constraint) against the composition parts' claimed values."""
    (z,) = _host(ood.z)
    acc = constraints_at(air, log_n, ood, alphas, public, challenges, sums)
    zn = z ** (1 << log_n)
    total, zpow = HostVal(0), HostVal(1)  # sum_j z^(j n) H_j(z)
    for part in _host(ood.parts_z):
        total, zpow = total + zpow * part, zpow * zn
    if acc != total:
        _reject("ood", "the composition polynomial's claimed value at z does not match the AIR's constraints there")
