"""The proof's data flow, written once for the memory planner and the prover.

:func:`schedule` runs every round of :mod:`jaxstark.rounds` against an *executor*
(:mod:`jaxstark.memory.executor`): the :class:`~jaxstark.memory.executor.Planner` walks it on
abstract values (compiling each round and recording its memory), the
:class:`~jaxstark.memory.executor.Runner` on arrays (dispatching the planner's executables).
:func:`check_shape` and :func:`table_chunks` are what a table's height must satisfy, shared by
:func:`jaxstark.prove` and :func:`jaxstark.plan`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import warnings

import jax
import numpy as np

from jaxstark.air import AIR
from jaxstark.chunking import chunk_log, units
from jaxstark.config import StarkConfig
from jaxstark.errors import AirViolation, ShapeError
from jaxstark.field._check import non_canonical
from jaxstark.logup import bus_layout
from jaxstark.proof import TableProof
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.layout import fri_num_layers
from jaxstark.protocol.statement import bus_balance
from jaxstark.rounds import (
    AUX_COMMIT,
    AUX_COMMIT_AGAIN,
    COMPOSITION,
    COMPOSITION_TREE,
    DEEP,
    FORK,
    FRI_FINAL,
    FRI_LAYER,
    LOGUP_CHALLENGES,
    OPENED,
    OPENINGS,
    OUT_OF_DOMAIN,
    QUERIES,
    ROUNDS,
    TRACE_COMMIT,
    TRACE_COMMIT_AGAIN,
    FriCommitment,
    fri_layer_name,
    openings_name,
    r3_ood,
    r4_deep,
    r4_fri_layer,
)
from jaxstark.transcript import grind_batch

__all__ = ["schedule", "check_shape", "table_chunks"]


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


def schedule(ex, airs, traces, publics, log_ns, config: StarkConfig, order, debug: bool = False, chunks=(), groups=(),
             host_traces=()):  # fmt: skip
    """The proof's data flow, written once for the planner (abstract values, compiles and records
    memory) and the runner (arrays, dispatches): statement, main commits in unit order, LogUp
    challenges and aux commits, then each unit's rounds 2-5 on its forks in ``order``, each unit
    released when done. A unit is a table, or a group of row chunks of a split table proven
    under ``vmap`` (``chunks``, ``groups``: per table, log2 of its number of chunks and of the
    chunks per group; :mod:`jaxstark.chunking`). ``host_traces``: per table, whether the
    caller's trace is in host memory: then it is on the device only while a round that takes it
    runs, as that round's argument; else it is held on the device for the whole proof. Returns
    the proofs of every table or chunk in statement order (``None`` entries when abstract)."""
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
    # under jax.distributed whole tables are shared out over every process's devices: a process
    # runs only the units it owns, and the commitments' transcript chain is built on the host
    # from every unit's roots (and bus sums), exchanged between the processes
    owned = [ex.owns(i) for i in range(n)]
    shared_out = not all(owned)
    domains, shared = [None] * n, {}
    for i, u in enumerate(us):
        if not owned[i]:
            continue
        if not (host_traces and host_traces[u.table]):
            ex.hold(f"table {u.table}{u.words}: trace (caller's)", traces[i], i, until_end=True)
        else:
            ex.from_host(traces[i])
        if not u.split:
            domains[i] = ex.domain(i, u.log_rows, config.blowup)
            # to the end of the proof: the runner keeps them (for the next proof of this shape)
            ex.hold(f"table {u.table}: domain tables", domains[i], i, until_end=True)
        else:
            if u.table not in shared:
                shared[u.table] = ex.domain(i, u.log_rows, config.blowup)
                ex.hold(f"table {u.table}: domain tables (all chunks)", shared[u.table], i, until_end=True)
            domains[i] = shared[u.table]
    for t, public in enumerate(table_publics):  # held by the caller's proof to the end
        first = next(i for i, u in enumerate(us) if u.table == t)
        if owned[first]:
            ex.hold(f"table {t}: public inputs", public, first, until_end=True)
    tr = ex.statement(table_publics, statement)  # computed on the host: no program
    ex.hold("statement: transcript", tr, None)
    mains, bads, roots = [None] * n, [None] * n, {}
    for i, u in enumerate(us):
        if not owned[i]:
            continue
        r1, after = _run(ex, i, TRACE_COMMIT, (traces[i], domains[i], tr), config, _spread(u, 3), group=u.split)
        bads[i] = r1.bad  # the field check, read with the unit's first results on the host
        if shared_out:  # its root goes to every process; the chain is built on the host
            roots[i] = (ex.root(r1.nodes), r1.bad)
        else:
            tr = after
        if again[i]:
            ex.drop((r1.lde, r1.coeffs, r1.nodes))
            r1 = None
        mains[i] = r1
    r1 = None  # (the list holds each unit's commitment: dropped with it when the unit is released)
    if shared_out:
        tr, got = ex.exchange(tr, roots, _zero_roots, list(range(n)), _absorb_roots)
        for i in sorted(got):  # every process names the same first bad table
            _check_canonical(airs[i], us[i], got[i][1])
    auxes, challenges, sums_of = [None] * n, None, {}
    if any(a.num_aux_columns for a in airs):
        tr, challenges = _run(ex, None, LOGUP_CHALLENGES, (tr,), config)
        # what the host checks of each aux commit, read once they are all dispatched (a group of
        # row chunks whose commitments are computed again: read before they are dropped)
        read, got = {}, {}
        for i, (a, u) in enumerate(zip(airs, us, strict=True)):
            if a.num_aux_columns and owned[i]:
                args = (traces[i], domains[i], challenges, tr)
                auxes[i], after = _run(ex, i, AUX_COMMIT, args, config, _spread(u, 4), group=u.split, air=a)
                read[i] = (auxes[i].degenerate, auxes[i].sums, bads[i])
                if shared_out:
                    read[i] = (*read[i], ex.root(auxes[i].nodes))
                else:
                    tr = after
                if again[i]:
                    if ex.concrete:
                        got[i] = ex.host(read.pop(i), (i, AUX_COMMIT))
                    ex.drop(auxes[i])
                    auxes[i] = None
        if shared_out:  # the aux roots and bus sums of every unit, absorbed in order on the host
            mine = {**read, **got}
            with_aux = [i for i, a in enumerate(airs) if a.num_aux_columns]
            tr, got = ex.exchange(tr, mine, functools.partial(_zero_aux, airs), with_aux, _absorb_aux)
            read = {}
        if ex.concrete:
            if read:
                got.update(zip(read, ex.host(tuple(read.values()), (max(read), AUX_COMMIT)), strict=True))
            for i in sorted(got):  # the first bad table in statement order is the one named
                degenerate, sums, bad = got[i][:3]
                _check_canonical(airs[i], us[i], bad)
                if bool(np.any(degenerate)):
                    raise AirViolation(
                        f"{airs[i].name}: a LogUp fingerprint is zero (the challenges hit a tuple of the trace; "
                        "probability about n / p^3); change the trace and prove again"
                    )
                sums_of[i] = np.asarray(sums).reshape(-1, len(bus_layout(airs[i])), 3)
            each = [(a, s) for i, (a, u) in enumerate(zip(airs, us, strict=True))
                    for s in sums_of.get(i, np.zeros((u.count, 0, 3), np.uint64))]  # fmt: skip
            for bus, total in bus_balance([a for a, _ in each], [s for _, s in each]).items():
                if any(total):
                    warnings.warn(
                        f"bus {bus!r} does not balance over the tables (prove with debug=True for a witness tuple); "
                        "the proof will not verify",
                        stacklevel=3,
                    )
    # rounds 2-5 in waves of units on distinct devices: a wave's units are all dispatched, so
    # their devices work at once, then each is collected (the host's one wait for its values)
    # and released, in order
    proofs = [None] * n
    args = (ex, [i for i in order if owned[i]], us, again, traces, domains, mains, auxes, airs, publics, forks, config,
            challenges, tr, debug, proofs, bads)  # fmt: skip
    if not (shared_out and ex.concrete):
        _rounds_2_to_5(*args)
        return [p for i, u in enumerate(us) for p in (proofs[i] if ex.concrete else [None] * u.count)]
    # shared out: each unit's proof from the process that owns it, and every process's warnings
    # given again in every process; a failure in one is raised in all
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _rounds_2_to_5(*args)
        except Exception as exc:
            ex.share_proofs(proofs, owned, exc)  # every process learns of it; this one raises it
    ours = [w for w in caught if str(w.message).endswith(_WILL_NOT_VERIFY)]  # the table's own verdict
    for w in caught:
        if w not in ours:  # anything else, as it was given
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    proofs, notes = ex.share_proofs(proofs, owned, notes=tuple(str(w.message) for w in ours))
    for note in notes:
        warnings.warn(note, stacklevel=3)  # the caller of prove
    return [p for i, u in enumerate(us) for p in proofs[i]]


def _rounds_2_to_5(ex, order, us, again, traces, domains, mains, auxes, airs, publics, forks, config, challenges, tr,
                   debug, proofs, bads) -> None:  # fmt: skip
    """Each unit of ``order``: its rounds 2-5 in waves, its proof into ``proofs``."""
    for wave in waves(order, ex.devset):
        finishes = []
        for i in wave:
            u = us[i]
            if again[i]:  # the group's commitments again (the same executables; the transcript is not touched)
                args = (traces[i], domains[i], tr)
                mains[i], _ = _run(ex, i, TRACE_COMMIT_AGAIN, args, config, _spread(u, 3), group=True)
                if airs[i].num_aux_columns:
                    args = (traces[i], domains[i], challenges, tr)
                    auxes[i], _ = _run(ex, i, AUX_COMMIT_AGAIN, args, config, _spread(u, 4), group=True, air=airs[i])
            finishes.append(_table_rounds(ex, i, u, forks[i], airs[i], publics[i], config, domains[i], mains[i],
                                          auxes[i], challenges, tr, debug))  # fmt: skip
        for i, finish in zip(wave, finishes, strict=True):
            proofs[i] = finish()
            mains[i] = auxes[i] = bads[i] = None
            ex.release(i)


_WILL_NOT_VERIFY = "; the proof will not verify"


# what a process gives for a unit another process owns (its values come from the owner): a
# whole table (tables are shared out only when none is split: plan._shares_out)
def _zero_roots(i: int) -> tuple:
    return np.zeros(32, np.uint8), np.zeros(3, np.uint64)  # the trace root, the field check


def _zero_aux(airs, i: int) -> tuple:  # degenerate flag, bus sums, field check, aux root
    return np.zeros((), bool), np.zeros((len(bus_layout(airs[i])), 3), np.uint64), np.zeros(3, np.uint64), \
        np.zeros(32, np.uint8)  # fmt: skip


def _absorb_roots(tr, i: int, values: tuple):
    for root in np.asarray(values[0]).reshape(-1, 32):  # a group's chunks in order
        tr = fs.absorb_trace(tr, root)
    return tr


def _absorb_aux(tr, i: int, values: tuple):
    sums, roots = np.asarray(values[1]), np.asarray(values[3]).reshape(-1, 32)
    for root, s in zip(roots, sums.reshape(len(roots), *sums.shape[-2:]), strict=True):
        tr = fs.absorb_aux(tr, root, s)
    return tr


def waves(order, devset) -> list[list[int]]:
    """The units of ``order`` (rounds 2-5) in waves: each wave the longest run of units whose
    devices (``devset(unit)``, a set) no earlier unit of the wave uses. A wave's units are
    dispatched together, so their devices work at once; a unit that shares a device with the
    wave starts the next one (what a device holds stays one unit's at a time)."""
    if jax.process_count() > 1:  # every process issues the same dispatches and reads in one order
        return [[i] for i in order]
    out, busy = [], set()
    for i in order:
        d = devset(i)
        if not out or busy & d:
            out.append([])
            busy = set()
        out[-1].append(i)
        busy |= d
    return out


def _run(ex, table: int | None, name: str, args: tuple, config: StarkConfig, axes: tuple | None = None, /, *,
         group: bool = False, label: str | None = None, **given):  # fmt: skip
    """Round ``name`` (:data:`jaxstark.rounds.ROUNDS`) of unit ``table`` through the executor, its
    statics read from ``config`` or ``given``. ``axes``: the group axes of its arguments, for a
    group of row chunks; ``group``: the unit is such a group and the round batches it itself;
    ``label``: the name it is dispatched under, when not ``name`` (a FRI layer's)."""
    r = ROUNDS[name]
    fn = r.group_fn if group else r.fn
    return ex.run(table, label or name, fn, args, r.static(config, **given), axes, vmap=r.group_fn is None)


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


def _table_rounds(ex, i, unit, fork, air, public, config, domain, r1, aux, challenges, tr, debug):
    """Dispatch rounds 2-5 of unit ``i`` on its own fork(s) of the transcript: a table, or a
    group of row chunks under ``vmap`` (the domain, challenges and public inputs shared, the
    rest batched). Returns a function that waits for the unit's values and returns its table
    proofs (one per chunk; None when abstract)."""
    b = 0 if unit.split else None  # the vmap axis of a unit's own values
    grp = (lambda *axes: axes) if unit.split else (lambda *axes: None)  # noqa: E731
    no_aux = None if aux is None else b
    tr = _run(ex, i, FORK, (tr, fork), config, grp(None, 0))
    aux_lde, aux_coeffs = (None, None) if aux is None else (aux.lde, aux.coeffs)
    logup = None if aux is None else (challenges, aux.sums)
    tree = not ex.recomputes(i, COMPOSITION)  # else built apart, only its root kept
    comp, tr = _run(
        ex, i, COMPOSITION, (domain, r1.lde, aux_lde, logup, public, tr), config,
        grp(None, b, no_aux, None if aux is None else (None, b), None, b), air=air, tree=tree,
        blocks=ex.row_blocks(i, COMPOSITION, 1),
    )  # fmt: skip
    if not tree:
        nodes, tr = _run(ex, i, COMPOSITION_TREE, (comp.parts_lde, tr), config, grp(b, b))
        ex.drop(comp.nodes)  # the placeholder
        comp = dataclasses.replace(comp, nodes=nodes)
    ood, tr = _run(
        ex, i, OUT_OF_DOMAIN, (r1.coeffs, aux_coeffs, comp.parts_coeffs, tr), config, grp(b, no_aux, b, b),
        log_n=domain.log_n, blocks=ex.row_blocks(i, OUT_OF_DOMAIN, r3_ood.row_blocks(domain.n, ex.device(i).platform)),
    )  # fmt: skip
    ex.drop((r1.coeffs, aux_coeffs, comp.parts_coeffs))  # their last use
    deep = (domain, r1.lde, aux_lde, comp.parts_lde, ood, tr), grp(None, b, no_aux, b, b, b)
    fri, tr = _fri(ex, i, deep, config, domain, grp(b, b, None), grp(b, b, None, None))
    batch = grind_batch(config.grinding_bits, ex.device(i).platform)
    q, _ = _run(ex, i, QUERIES, (tr,), config, grp(b), log_size=domain.log_size, batch=batch)
    # each commitment opened in a dispatch of its own, and dropped once opened (its roots with it)
    commitments = dict(trace=((r1.lde,), (r1.nodes,)), aux=None if aux is None else ((aux.lde,), (aux.nodes,)),
                       composition=((comp.parts_lde,), (comp.nodes,)), FRI=(fri.leaves, fri.nodes))  # fmt: skip
    opened = {}
    for what in OPENED:
        if commitments[what] is None:
            continue
        leaves, nodes = commitments[what]
        opened[what] = _run(ex, i, OPENINGS, (leaves, nodes, q.indices), config, grp(b, b, b),
                            label=openings_name(what))  # fmt: skip
        ex.drop((leaves, nodes))
    if not ex.concrete:
        return lambda: None
    return functools.partial(_table_values, ex, i, unit, air, domain, opened, ood, fri, q, comp, aux, r1.bad, debug)


def _table_values(ex, i, unit, air, domain, opened, ood, fri, q, comp, aux, bad, debug) -> list:
    """A dispatched unit's (unit ``i``'s) table proofs from its device values, checked."""
    # everything the proof needs from the device, in one transfer (the rounds are not waited for
    # one by one: this is where the host first waits for the unit's results)
    got, values, excess, bad = ex.host((
        opened, dict(trace_z=ood.trace_z, trace_zg=ood.trace_zg, aux_z=ood.aux_z, aux_zg=ood.aux_zg,
                     parts_z=ood.parts_z, fri_final=fri.final, nonce=q.nonce,
                     bus_sums=None if aux is None else aux.sums),
        comp.excess,
        bad,
    ), (i, openings_name("FRI")))  # fmt: skip
    fields = dict(values, **_opened_fields(got))
    _check_canonical(air, unit, bad)
    if bool(np.any(excess)):
        message = (
            f"{air.name}: the composition polynomial is not of degree < {air.composition_parts} * n: the trace does "
            "not satisfy the AIR (prove with debug=True to name the constraint and row) or a constraint's declared "
            "degree is too low"
        )
        if debug:  # the trace passed check_trace, so a declared degree is wrong
            raise AirViolation(message)
        warnings.warn(message + _WILL_NOT_VERIFY, stacklevel=5)  # _rounds_2_to_5, schedule, prove
    if not unit.split:
        return [_table_proof(air, domain.log_n, fields)]
    return [_table_proof(air, domain.log_n, jax.tree.map(lambda x, j=j: x[j], fields)) for j in range(unit.count)]


def _opened_fields(opened: dict) -> dict:
    """A table proof's roots, rows and paths from the host values of its ``openings`` dispatches
    (commitment name -> :class:`~jaxstark.rounds.r5_openings.Opened`; no ``"aux"`` without
    interactions), for one table or, with a leading axis, a group of row chunks."""
    t, c, f = opened["trace"], opened["composition"], opened["FRI"]
    if "aux" in opened:
        a = opened["aux"]
        a_rows, a_paths, a_root = a.rows[0], a.paths[0], a.roots[..., 0, :]
    else:
        shape = np.shape(t.rows[0])[:-1]  # (q,), or (chunks, q) for a group
        a_rows, a_paths, a_root = np.zeros((*shape, 0), np.uint64), np.zeros((*shape, 0, 32), np.uint8), None
    return dict(
        trace_root=t.roots[..., 0, :], parts_root=c.roots[..., 0, :],
        fri_roots=[f.roots[..., k, :] for k in range(len(f.paths))], trace_rows=t.rows[0], trace_paths=t.paths[0],
        aux_rows=a_rows, aux_paths=a_paths, aux_root=a_root, parts_rows=c.rows[0], parts_paths=c.paths[0],
        fri_rows=tuple(f.rows), fri_paths=tuple(f.paths),
    )  # fmt: skip


def _check_canonical(air, unit, bad) -> None:
    """Raise :class:`~jaxstark.errors.NonCanonicalError` naming the first trace value ``>= p`` of
    ``unit`` (a table, or a group of row chunks: rows counted in the whole table), from its trace
    commit's :func:`~jaxstark.rounds.r1_trace_commit.field_check` read on the host."""
    bad = np.asarray(bad, np.uint64).reshape(-1, 3)  # a row per chunk of the unit
    total = int(bad[:, 1].sum())
    if not total:
        return
    j = int(np.argmax(bad[:, 1] > 0))
    first, value = int(bad[j, 0]), int(bad[j, 2])
    row, col = unit.rows.start + (j << unit.log_rows) + first // air.width, first % air.width
    rows = f" of rows {unit.rows.start}-{unit.rows.stop - 1}" if unit.split else ""
    first_at = f"first at index ({row}, {col}): {value}"
    raise non_canonical(f"prove: table {unit.table} ({air.name}) trace", total, first_at, rows)


def _fri(ex, i, deep: tuple, config: StarkConfig, domain, layer_axes, final_axes):
    """DEEP (``deep``: its arguments and their group axes) and the FRI commit phase of unit ``i``
    from D's evaluations: each layer of more than
    :func:`~jaxstark.rounds.r4_fri_layer.scan_layers_below` evaluations on the unit's platform a
    dispatch of its own
    (every layer, for an annotated transcript, which logs labels by name), then the small layers
    and the final polynomial in one. Each layer's input is dropped once the next dispatch has it
    -- by the planner, and here, where the only reference to it is ``f``. Returns every layer's
    commitment as the queries open it, and the transcript."""
    blocks = ex.row_blocks(i, DEEP, r4_deep.row_blocks(domain.size, ex.device(i).platform))
    f, tr = _run(ex, i, DEEP, deep[0], config, deep[1], blocks=blocks)
    layers = fri_num_layers(domain.log_n, config.fri_final_degree)
    big = layers if tr.annotated else r4_fri_layer.large_layers(domain.size, layers, ex.device(i).platform)
    leaves, nodes = [], []
    for k in range(big):
        names = fs.fri_labels(k) if tr.annotated else None
        layer, tr = _run(ex, i, FRI_LAYER, (f, tr, r4_fri_layer.fri_step(domain.offset, k)), config, layer_axes,
                         label=fri_layer_name(k), names=names)  # fmt: skip
        ex.drop(f)
        leaves.append(layer.leaves)
        nodes.append(layer.nodes)
        f = layer.folded
    shift_inv = np.asarray(r4_fri_layer._s_inv(domain.offset, layers))  # the final polynomial's coset
    args = (f, tr, r4_fri_layer.fri_step(domain.offset, range(big, layers)), shift_inv)
    last, tr = _run(ex, i, FRI_FINAL, args, config, final_axes, degree=domain.n >> layers)
    ex.drop(f)
    return FriCommitment((*leaves, *last.leaves), (*nodes, *last.nodes), last.final, last.excess), tr


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
