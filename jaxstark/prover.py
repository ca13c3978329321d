"""``prove``: run rounds 1-5 for one or more tables and assemble the proof.

Data flow (each round a jitted pure function in :mod:`jaxstark.rounds`)::

    statement (AIRs, heights, public inputs) ──> transcript
    for each table:  trace ──r1──> TraceCommitment(lde, coeffs, tree) ── root ──> transcript
    if any table has interactions:  transcript ──> LogUp challenges (beta, gamma), shared
      for each such table:  trace ──r1 aux──> AuxCommitment(lde, coeffs, tree, bus sums) ──> transcript
    for each table t, on the fork t of the transcript:
      lde, aux lde ──r2──> Composition(parts coeffs, parts lde, tree) ── root ──> transcript
      coeffs, aux coeffs, parts coeffs ──r3──> OutOfDomain(z, T(z), T(zw), A(z), A(zw), H_j(z))
      ldes, ood ──r4──> FriCommitment(layer leaves + trees, final poly) ──> transcript
      trees, ldes ──r5──> Openings(nonce, indices, rows + paths) ──> TableProof

The transcript starts from the protocol label and absorbs, before anything else, the config's
fingerprint, the number of tables and, per table, the AIR's fingerprint, the trace shape and the
public inputs, so a proof is bound to the whole statement. Every table's bus contributions are
published; the verifier checks that each bus sums to zero over the tables.
"""

from __future__ import annotations

import collections
import functools
import warnings
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.chunking import chunk_log, units
from jaxstark.config import StarkConfig
from jaxstark.errors import AirViolation, ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array
from jaxstark.hash.interface import get_hash
from jaxstark.logup import bus_layout, check_bus_arity, check_buses
from jaxstark.ntt import log2_exact
from jaxstark.proof import Proof, TableProof
from jaxstark.rounds.r1_aux_commit import aux_commit, aux_commit_group, logup_challenges
from jaxstark.rounds.r1_trace_commit import trace_commit, trace_commit_group
from jaxstark.rounds.r2_composition import composition
from jaxstark.rounds.r3_ood import out_of_domain
from jaxstark.rounds.r4_deep_fri import deep_fri
from jaxstark.rounds.r5_queries import queries
from jaxstark.transcript import Transcript

__all__ = [
    "prove",
    "check_trace",
    "check_shape",
    "schedule",
    "initial_transcript",
    "public_array",
    "fork_table",
    "bus_balance",
]

PROTOCOL = "jaxstark v2"


def public_array(air: AIR, public_inputs: Sequence[int]) -> jax.Array:
    """Public inputs as canonical uint64, checked against the AIR's declared count."""
    public_inputs = tuple(public_inputs)
    if len(public_inputs) != air.num_public_inputs:
        raise ValueError(f"{air.name} takes {air.num_public_inputs} public input(s), got {len(public_inputs)}")
    for i, v in enumerate(public_inputs):
        if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < gl.P:
            raise ValueError(f"public input {i} must be a canonical field element (int in [0, p)), got {v!r}")
    return jnp.asarray(np.array([int(v) for v in public_inputs], dtype=np.uint64).reshape(-1))


@functools.partial(jax.jit, static_argnames=("airs", "config", "log_ns", "chunks", "annotated"), keep_unused=True)
def initial_transcript(
    publics: tuple[jax.Array, ...],
    *,
    airs: tuple[AIR, ...],
    config: StarkConfig,
    log_ns: tuple[int, ...],
    chunks: tuple[int, ...] = (),
    annotated: bool = False,
) -> Transcript:
    """The transcript every proof starts from: protocol label, config fingerprint (hashed), the
    number of tables, and per table its AIR fingerprint (hashed), trace shape, log2 of its
    number of row chunks when it is split (:mod:`jaxstark.chunking`) and public inputs.
    ``annotated``: the transcript keeps a log of what it absorbs and squeezes."""
    h = get_hash(config.hash)

    def text_digest(text: str) -> jax.Array:
        return h.digest_bytes(jnp.asarray(np.frombuffer(text.encode("utf-8"), np.uint8)[None, :]))[0]

    tr = Transcript.new(PROTOCOL, config.hash, annotated).absorb_digest("config", text_digest(config.fingerprint()))
    tr = tr.absorb_base("tables", jnp.asarray(np.array([len(airs)], np.uint64)))
    for t, (air, log_n, public) in enumerate(zip(airs, log_ns, publics, strict=True)):
        tr = tr.absorb_digest("air", text_digest(air.fingerprint()))
        tr = tr.absorb_base("shape", jnp.asarray(np.array([log_n, air.width], np.uint64)))
        if chunks and chunks[t]:
            tr = tr.absorb_base("chunks", jnp.asarray(np.array([chunks[t]], np.uint64)))
        tr = tr.absorb_base("public inputs", public)
    return tr


@functools.partial(jax.jit, keep_unused=True)
def fork_table(tr: Transcript, index: jax.Array) -> Transcript:
    """Table ``index``'s own transcript for rounds 2-5."""
    return tr.fork(index)


def bus_balance(airs: Sequence[AIR], sums: Sequence[np.ndarray]) -> dict[str, tuple[int, int, int]]:
    """Every bus's total contribution over the tables (an extension element as three ints; zero
    when the bus balances). ``sums[t]`` holds table ``t``'s contributions, one per bus in name
    order. (Extension addition is coordinate-wise.)"""
    totals: dict[str, tuple[int, int, int]] = {}
    for air, table_sums in zip(airs, sums, strict=True):
        for lay, value in zip(bus_layout(air), np.asarray(table_sums).tolist(), strict=True):
            prev = totals.get(lay.bus, (0, 0, 0))
            totals[lay.bus] = tuple((x + int(y)) % gl.P for x, y in zip(prev, value, strict=True))
    return totals


def check_trace(air: AIR, trace, public_inputs: Sequence[int] = ()) -> None:
    """Raise :class:`AirViolation` naming the first failing constraint and row, if any."""
    trace = np.asarray(trace)
    n = trace.shape[0]
    public = public_array(air, public_inputs)
    pub = [Val(public[i]) for i in range(public.shape[0])]
    rows = n if air.row_local else n - 1  # a row-local AIR constrains the last row too
    if rows:
        cur = [Val(jnp.asarray(trace[:rows, i])) for i in range(air.width)]
        nxt = [Val(jnp.asarray(np.roll(trace[:, i], -1)[:rows])) for i in range(air.width)]
        periodic = [Val(jnp.asarray(np.resize(col, n)[:rows])) for col in air.periodic_arrays()]
        values = air.transition(cur, nxt, periodic, pub)
        degrees = air.constraint_degrees()
        if len(values) != len(degrees):
            raise AirViolation(
                f"{air.name}.transition returned {len(values)} constraints, constraint_degrees() lists {len(degrees)}"
            )
        for i, v in enumerate(values):
            arr = np.broadcast_to(np.asarray(v.v), (rows,))
            bad = np.nonzero(arr)[0]
            if bad.size:
                raise AirViolation(
                    f"{air.name}: transition constraint {i} fails at row {int(bad[0])} (frame rows {int(bad[0])} -> "
                    f"{int(bad[0]) + 1}; value {int(arr[bad[0]])}); {bad.size} failing row(s) in all"
                )
    for j, (col, row, value) in enumerate(air.boundary(pub)):
        want = int(np.asarray(value.v)) if isinstance(value, Val) else int(value) % gl.P
        got = int(trace[row % n, col])
        if got != want:
            raise AirViolation(
                f"{air.name}: boundary constraint {j} fails: column {col} at row {row % n} is {got}, expected {want}"
            )


def _tables(air_or_tables, trace, public_inputs) -> list[tuple[AIR, object, tuple]]:
    if isinstance(air_or_tables, AIR):
        return [(air_or_tables, trace, tuple(public_inputs))]
    if trace is not None or tuple(public_inputs):
        raise TypeError(
            "prove: with a list of tables, give each table as (air, trace) or (air, trace, public_inputs) and pass "
            "config by keyword"
        )
    try:
        tables = list(air_or_tables)
    except TypeError:
        raise TypeError(f"prove: expected an AIR or a list of tables, got {type(air_or_tables).__name__}") from None
    if not tables:
        raise ValueError("prove: the list of tables is empty")
    out = []
    for i, t in enumerate(tables):
        if not isinstance(t, (tuple, list)) or len(t) not in (2, 3) or not isinstance(t[0], AIR):
            raise TypeError(f"prove: table {i} must be (air, trace) or (air, trace, public_inputs), got {t!r:.80}")
        out.append((t[0], t[1], tuple(t[2]) if len(t) == 3 else ()))
    return out


def _checked(i: int, air: AIR, trace, public_inputs, config: StarkConfig):
    """Validate one table on the host (a numpy trace stays on the host until its device is
    planned); return (trace array, log_n, public array)."""
    where = f"prove: table {i} ({air.name})"
    trace = field_array(trace, f"{where} trace", keep_host=True)
    if trace.ndim != 2 or trace.shape[1] != air.width:
        raise ShapeError(f"{where}: trace must have shape (rows, {air.width}), got {tuple(trace.shape)}")
    log_n = log2_exact(trace.shape[0], f"{where}: trace rows")
    check_shape(air, log_n, config, where)
    return trace, log_n, public_array(air, public_inputs)


def check_shape(air: AIR, log_n: int, config: StarkConfig, where: str) -> None:
    """What a table's height and degree must satisfy to be provable (shared with the planner)."""
    if log_n < 1:
        raise ShapeError(f"{where}: the trace needs at least 2 rows")
    if air.max_degree - 1 > config.blowup:
        raise ValueError(
            f"{air.name} has constraints of degree {air.max_degree}; blowup {config.blowup} supports at most "
            f"degree {config.blowup + 1}"
        )
    if log_n + config.log_blowup > 31:
        raise ShapeError(f"{where}: an LDE of 2^{log_n} rows at blowup {config.blowup} exceeds 2^31 rows")
    air.check_height(log_n)


def prove(
    air: AIR | Sequence[tuple],
    trace=None,
    public_inputs: Sequence[int] = (),
    config: StarkConfig | None = None,
    *,
    debug: bool = False,
    device: jax.Device | None = None,
    devices: Sequence[jax.Device] | None = None,
    progress: Callable | None = None,
) -> Proof:
    """Prove that ``trace`` (``uint64[n, air.width]``, n a power of two >= 2) satisfies ``air``
    with ``public_inputs``; or, given a list of tables ``[(air, trace[, public_inputs]), ...]``
    (``config`` by keyword), prove them together, their buses balanced.

    Before anything is dispatched the proof is planned (:func:`jaxstark.plan`): every round is
    compiled for its device and its device set checked against the budget; over budget raises
    :class:`~jaxstark.errors.DeviceBudgetExceeded`, and a device failure during the run raises
    :class:`~jaxstark.errors.DeviceFailure` -- never a silent retry on the host. ``device``
    defaults to JAX's default device; tables below the config's row floor run on the CPU. A
    group of row chunks (:mod:`jaxstark.chunking`) is split over ``devices`` (default: ``[device]``
    when ``device`` is given, else every device of the target platform, of every process), and
    whole tables take this process's ``devices`` in turn.

    ``debug=True`` first checks every constraint of every table and every bus, and names the
    first failing constraint and row, or the unbalanced bus and a witness tuple. ``progress``
    is called with a :class:`~jaxstark.progress.RoundEvent` as each round starts and ends
    (:class:`~jaxstark.progress.TerminalProgress` displays them)."""
    from jaxstark.memory.executor import Runner
    from jaxstark.memory.plan import plan_checked

    config = config or StarkConfig()
    if not isinstance(config, StarkConfig):
        raise TypeError(f"prove: config must be a StarkConfig, got {type(config).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"prove: progress must be a callable taking a RoundEvent, got {type(progress).__name__}")
    tables = _tables(air, trace, public_inputs)
    checked = [_checked(i, a, t, p, config) for i, (a, t, p) in enumerate(tables)]
    airs = tuple(a for a, _, _ in tables)
    check_bus_arity(airs)
    if debug:
        for (a, _, p), (t, _, _) in zip(tables, checked, strict=True):
            check_trace(a, t, p)
        check_buses([(a, t) for a, (t, _, _) in zip(airs, checked, strict=True)])
    log_ns = tuple(log_n for _, log_n, _ in checked)
    chunks = table_chunks(airs, log_ns, config, "prove")
    the_plan = plan_checked(airs, log_ns, config, device, chunks, devices, progress)
    the_plan.admit()  # raises DeviceBudgetExceeded before any dispatch
    watch = None if progress is None else (progress, the_plan)
    runner = Runner(the_plan.devices, the_plan.default_device, the_plan.diagnostic, the_plan.meshes, watch)
    traces = [t for t, _, _ in checked]
    publics = tuple(p for _, _, p in checked)
    chunks, groups = the_plan.chunks, the_plan.groups
    proofs = schedule(runner, airs, traces, publics, log_ns, config, the_plan.order, debug, chunks, groups)
    return Proof(config_id=config.fingerprint(), tables=tuple(proofs), chunks=chunks)


def table_chunks(airs, log_ns, config: StarkConfig, who: str) -> tuple[int | None, ...]:
    """Per table, log2 of its number of row chunks under the config's cap (checked: only
    row-local tables without boundary constraints split, and each chunk must be provable);
    None for a table the planner may split (``"auto"``)."""
    out = []
    for i, (air, log_n) in enumerate(zip(airs, log_ns, strict=True)):
        where = f"{who}: table {i} ({air.name})"
        k = chunk_log(air, log_n, config, where)
        if k:
            check_shape(air, log_n - k, config, f"{where}, chunk of 2^{log_n - k} rows")
        out.append(k)
    return tuple(out)


def schedule(ex, airs, traces, publics, log_ns, config: StarkConfig, order, debug: bool = False, chunks=(), groups=()):
    """The proof's data flow, written once for the planner (abstract values, compiles and records
    memory) and the runner (arrays, dispatches): statement, main commits in unit order, LogUp
    challenges and aux commits, then each unit's rounds 2-5 on its forks in ``order``, each unit
    released when done. A unit is a table, or a group of row chunks of a split table proven
    under ``vmap`` (``chunks``, ``groups``: per table, log2 of its number of chunks and of the
    chunks per group; :mod:`jaxstark.chunking`). Returns the proofs of every table or chunk in
    statement order (``None`` entries when abstract)."""
    chunks = tuple(chunks) or (0,) * len(airs)
    us = units(tuple(log_ns), chunks, groups)
    statement = dict(airs=tuple(airs), config=config, log_ns=tuple(log_ns), chunks=chunks if any(chunks) else ())
    table_publics = tuple(publics)
    airs = [airs[u.table] for u in us]
    publics = tuple(publics[u.table] for u in us)
    traces = [ex.chunk(traces[u.table], u, i) if u.split else traces[u.table] for i, u in enumerate(us)]
    forks = _fork_indices(us, chunks)
    n = len(us)
    # a split table's chunks share one set of domain tables; with more than one group, a group's
    # commitments are dropped once its roots are absorbed and computed again for rounds 2-5
    per_table = collections.Counter(u.table for u in us)
    again = [u.split and per_table[u.table] > 1 for u in us]
    domains, shared = [], {}
    for i, u in enumerate(us):
        ex.hold(f"table {u.table}{u.words}: trace (caller's)", traces[i], i, until_end=True)
        if not u.split:
            domains.append(ex.domain(i, u.log_rows, config.blowup))
            ex.hold(f"table {u.table}: domain tables", domains[-1], i)
        else:
            if u.table not in shared:
                shared[u.table] = ex.domain(i, u.log_rows, config.blowup)
                ex.hold(f"table {u.table}: domain tables (all chunks)", shared[u.table], i, until_end=True)
            domains.append(shared[u.table])
    tr = ex.run(None, "statement", initial_transcript, (table_publics,), statement)
    mains = []
    for i, u in enumerate(us):
        commit = trace_commit_group if u.split else trace_commit
        static = dict(hash_name=config.hash)
        r1, tr = ex.run(i, "trace commit", commit, (traces[i], domains[i], tr), static, _spread(u, 3), vmap=False)
        if again[i]:
            ex.drop(r1)
            r1 = None
        mains.append(r1)
    auxes, challenges, sums_of = [None] * n, None, {}
    if any(a.num_aux_columns for a in airs):
        tr, challenges = ex.run(None, "logup challenges", logup_challenges, (tr,), {})
        for i, (a, u) in enumerate(zip(airs, us, strict=True)):
            if a.num_aux_columns:
                static = dict(air=a, hash_name=config.hash)
                commit = aux_commit_group if u.split else aux_commit
                args = (traces[i], domains[i], challenges, tr)
                auxes[i], tr = ex.run(i, "aux commit", commit, args, static, _spread(u, 4), vmap=False)
                if ex.concrete and bool(np.any(ex.host(auxes[i].degenerate))):
                    raise AirViolation(
                        f"{a.name}: a LogUp fingerprint is zero (the challenges hit a tuple of the trace; probability "
                        "about n / p^3); change the trace and prove again"
                    )
                if ex.concrete:
                    sums_of[i] = np.asarray(ex.host(auxes[i].sums)).reshape(-1, len(bus_layout(a)), 3)
                if again[i]:
                    ex.drop(auxes[i])
                    auxes[i] = None
        if ex.concrete:
            each = [(a, s) for i, (a, u) in enumerate(zip(airs, us, strict=True))
                    for s in sums_of.get(i, np.zeros((u.count, 0, 3), np.uint64))]  # fmt: skip
            for bus, total in bus_balance([a for a, _ in each], [s for _, s in each]).items():
                if any(total):
                    warnings.warn(
                        f"bus {bus!r} does not balance over the tables (prove with debug=True for a witness tuple); "
                        "the proof will not verify",
                        stacklevel=3,
                    )
    proofs = [None] * n
    for i in order:
        u = us[i]
        if again[i]:  # the group's commitments again (the same executables; the transcript is not touched)
            static = dict(hash_name=config.hash)
            args = (traces[i], domains[i], tr)
            mains[i], _ = ex.run(i, "trace commit again", trace_commit_group, args, static, _spread(u, 3), vmap=False)
            if airs[i].num_aux_columns:
                static = dict(air=airs[i], hash_name=config.hash)
                args = (traces[i], domains[i], challenges, tr)
                auxes[i], _ = ex.run(i, "aux commit again", aux_commit_group, args, static, _spread(u, 4), vmap=False)
        proofs[i] = _table_rounds(
            ex, i, u, forks[i], airs[i], publics[i], config, domains[i], mains[i], auxes[i], challenges, tr, debug
        )
        mains[i] = auxes[i] = None
        ex.release(i)
    return [p for i, u in enumerate(us) for p in (proofs[i] if ex.concrete else [None] * u.count)]


def _spread(unit, n: int) -> tuple | None:
    """The group axes of a commit round's ``n`` arguments (the trace group; the rest shared)."""
    return (0,) + (None,) * (n - 1) if unit.split else None


def _fork_indices(us, chunks) -> list:
    """Per unit, the index of its transcript fork (a table's or chunk's position in statement
    order, :func:`jaxstark.chunking.slots`): an int, or an array of the group's indices."""
    start = np.cumsum([0, *(1 << k for k in chunks)])  # each table's first slot
    first = [int(start[u.table]) + u.chunk for u in us]
    return [
        np.arange(f, f + u.count, dtype=np.uint64) if u.split else np.uint64(f) for f, u in zip(first, us, strict=True)
    ]


def _table_rounds(ex, i, unit, fork, air, public, config, domain, r1, aux, challenges, tr, debug) -> list | None:
    """Rounds 2-5 of unit ``i`` on its own fork(s) of the transcript: a table, or a group of
    row chunks under ``vmap`` (the domain, challenges and public inputs shared, the rest
    batched). Returns the unit's table proofs (one per chunk)."""
    b = 0 if unit.split else None  # the vmap axis of a unit's own values
    grp = (lambda *axes: axes) if unit.split else (lambda *axes: None)  # noqa: E731
    no_aux = None if aux is None else b
    tr = ex.run(i, "fork", fork_table, (tr, fork), {}, grp(None, 0))
    aux_lde, aux_coeffs = (None, None) if aux is None else (aux.lde, aux.coeffs)
    logup = None if aux is None else (challenges, aux.sums)
    comp, tr = ex.run(
        i,
        "composition",
        composition,
        (domain, r1.lde, aux_lde, logup, public, tr),
        dict(air=air, hash_name=config.hash),
        grp(None, b, no_aux, None if aux is None else (None, b), None, b),
    )
    if ex.concrete and bool(np.any(ex.host(comp.excess))):
        message = (
            f"{air.name}: the composition polynomial is not of degree < {air.composition_parts} * n: the trace does "
            "not satisfy the AIR (prove with debug=True to name the constraint and row) or a constraint's declared "
            "degree is too low"
        )
        if debug:  # the trace passed check_trace, so a declared degree is wrong
            raise AirViolation(message)
        warnings.warn(message + "; the proof will not verify", stacklevel=4)
    ood, tr = ex.run(
        i, "out-of-domain", out_of_domain, (r1.coeffs, aux_coeffs, comp.parts_coeffs, tr), dict(log_n=domain.log_n),
        grp(b, no_aux, b, b),
    )  # fmt: skip
    fri, tr = ex.run(
        i, "DEEP + FRI", deep_fri, (domain, r1.lde, aux_lde, comp.parts_lde, ood, tr),
        dict(hash_name=config.hash, final_degree=config.fri_final_degree), grp(None, b, no_aux, b, b, b),
    )  # fmt: skip
    op, _ = ex.run(
        i, "queries", queries, (r1, aux, comp, fri, tr),
        dict(grinding_bits=config.grinding_bits, num_queries=config.num_queries, log_size=domain.log_size),
        grp(b, no_aux, b, b, b),
    )  # fmt: skip
    if not ex.concrete:
        return None
    host = ex.host
    root = (lambda nodes: nodes[:, 1]) if unit.split else (lambda nodes: nodes[1])  # noqa: E731
    fields = dict(
        trace_root=host(root(r1.nodes)),
        parts_root=host(root(comp.nodes)),
        fri_roots=[host(root(nodes)) for nodes in fri.nodes],
        trace_z=host(ood.trace_z),
        trace_zg=host(ood.trace_zg),
        aux_z=host(ood.aux_z),
        aux_zg=host(ood.aux_zg),
        parts_z=host(ood.parts_z),
        fri_final=host(fri.final),
        nonce=host(op.nonce),
        trace_rows=host(op.trace_rows),
        trace_paths=host(op.trace_paths),
        aux_rows=host(op.aux_rows),
        aux_paths=host(op.aux_paths),
        parts_rows=host(op.parts_rows),
        parts_paths=host(op.parts_paths),
        fri_rows=tuple(host(r) for r in op.fri_rows),
        fri_paths=tuple(host(p) for p in op.fri_paths),
        aux_root=None if aux is None else host(root(aux.nodes)),
        bus_sums=None if aux is None else host(aux.sums),
    )
    if not unit.split:
        return [_table_proof(air, domain.log_n, fields)]
    return [_table_proof(air, domain.log_n, jax.tree.map(lambda x, j=j: x[j], fields)) for j in range(unit.count)]


def _table_proof(air, log_n, f) -> TableProof:
    """One table's (or chunk's) proof from its host values."""
    roots = f.pop("fri_roots")
    fri_roots = np.stack(roots) if len(roots) else np.zeros((0, 32), np.uint8)
    aux_root, bus_sums = f.pop("aux_root"), f.pop("bus_sums")
    return TableProof(
        air_id=air.fingerprint(),
        log_n=log_n,
        aux_root=np.zeros((0, 32), np.uint8) if aux_root is None else aux_root[None],
        bus_sums=np.zeros((0, 3), np.uint64) if bus_sums is None else bus_sums,
        fri_roots=fri_roots,
        **f,
    )
