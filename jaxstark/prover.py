"""``prove``: run rounds 1-5 for one or more tables and assemble the proof.

Data flow (:func:`jaxstark.schedule.schedule`; each round a jitted pure function in
:mod:`jaxstark.rounds`)::

    statement (AIRs, heights, public inputs) ──> transcript
    for each table:  trace ──r1──> TraceCommitment(lde, coeffs, tree, field check) ── root ──> transcript
    if any table has interactions:  transcript ──> LogUp challenges (beta, gamma), shared
      for each such table:  trace ──r1 aux──> AuxCommitment(lde, coeffs, tree, bus sums) ──> transcript
    for each table t, on the fork t of the transcript:
      lde, aux lde ──r2──> Composition(parts coeffs, parts lde, tree) ── root ──> transcript
      coeffs, aux coeffs, parts coeffs ──r3──> OutOfDomain(z, T(z), T(zw), A(z), A(zw), H_j(z))
      ldes, ood ──r4 DEEP──> D on the LDE ──r4 FRI layer (each large one), FRI final──>
          FriCommitment(layer leaves + trees, final poly) ──> transcript
      trees, ldes ──r5──> Openings(nonce, indices, rows + paths) ──> TableProof

The transcript starts from the protocol label and absorbs, before anything else, the config's
fingerprint, the number of tables and, per table, the AIR's fingerprint, the trace shape and the
public inputs, so a proof is bound to the whole statement. Every table's bus contributions are
published; the verifier checks that each bus sums to zero over the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.config import StarkConfig
from jaxstark.errors import AirViolation, DeviceBudgetExceeded, ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array
from jaxstark.logup import check_bus_arity, check_buses
from jaxstark.memory.executor import Runner
from jaxstark.memory.plan import plan_checked
from jaxstark.ntt import log2_exact
from jaxstark.proof import Proof
from jaxstark.protocol.statement import public_array
from jaxstark.schedule import check_shape, schedule, table_chunks

__all__ = ["prove", "check_trace"]


def check_trace(air: AIR, trace, public_inputs: Sequence[int] = ()) -> None:
    """Raise :class:`AirViolation` naming the first failing constraint and row, if any."""
    trace = np.asarray(trace)
    n = trace.shape[0]
    public = jnp.asarray(public_array(air, public_inputs))
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


def _checked(i: int, air: AIR, trace, public_inputs, config: StarkConfig, debug: bool):
    """Validate one table on the host (a numpy trace stays on the host until its device is
    planned); return (trace array, log_n, public array). That its values are below p is checked
    on the host only with ``debug`` (whose checks read them); otherwise the trace commit checks
    it on the device (:func:`jaxstark.schedule.schedule`)."""
    where = f"prove: table {i} ({air.name})"
    trace = field_array(trace, f"{where} trace", keep_host=True, values=debug)
    if trace.ndim != 2 or trace.shape[1] != air.width:
        raise ShapeError(f"{where}: trace must have shape (rows, {air.width}), got {tuple(trace.shape)}")
    log_n = log2_exact(trace.shape[0], f"{where}: trace rows")
    check_shape(air, log_n, config, where)
    return trace, log_n, jnp.asarray(public_array(air, public_inputs))


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
    whole tables are placed on this process's ``devices`` (one each while there are enough,
    else balanced by estimated work), those on distinct devices proven at the same time; under
    ``jax.distributed`` on every process's devices, each process proving its own (every process
    returns the whole proof).

    A trace value ``>= p`` raises :class:`~jaxstark.errors.NonCanonicalError` naming its table,
    row and column: found by the trace commit on the device and raised when the table's values
    are read back (before the proof is returned); with ``debug``, found on the host before
    anything runs.

    ``debug=True`` first checks every constraint of every table and every bus, and names the
    first failing constraint and row, or the unbalanced bus and a witness tuple. ``progress``
    is called with a :class:`~jaxstark.progress.RoundEvent` as each round starts and ends
    (:class:`~jaxstark.progress.TerminalProgress` displays them)."""
    config = config or StarkConfig()
    if not isinstance(config, StarkConfig):
        raise TypeError(f"prove: config must be a StarkConfig, got {type(config).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"prove: progress must be a callable taking a RoundEvent, got {type(progress).__name__}")
    tables = _tables(air, trace, public_inputs)
    checked = [_checked(i, a, t, p, config, debug) for i, (a, t, p) in enumerate(tables)]
    airs = tuple(a for a, _, _ in tables)
    check_bus_arity(airs)
    if debug:
        for (a, _, p), (t, _, _) in zip(tables, checked, strict=True):
            check_trace(a, t, p)
        check_buses([(a, t) for a, (t, _, _) in zip(airs, checked, strict=True)])
    log_ns = tuple(log_n for _, log_n, _ in checked)
    chunks = table_chunks(airs, log_ns, config, "prove")
    host = tuple(isinstance(t, np.ndarray) for t, _, _ in checked)  # a numpy trace is copied in per round
    the_plan = plan_checked(airs, log_ns, config, device, chunks, devices, progress, host)
    if the_plan.others:  # whole tables shared out over jax.distributed processes: admitted together
        _admitted_everywhere(the_plan)
    else:
        the_plan.admit()  # raises DeviceBudgetExceeded before any dispatch
    watch = None if progress is None else (progress, the_plan)
    shapes = frozenset((t.log_n, t.blowup, t.device) for t in the_plan.tables)
    park = frozenset(name for name, _, _ in the_plan.parked)
    recompute = frozenset(name for name, _, _ in the_plan.recomputed)
    runner = Runner(the_plan.devices, the_plan.default_device, the_plan.diagnostic, the_plan.meshes, watch, shapes,
                    park, recompute, dict(the_plan.row_blocks))  # fmt: skip
    traces = [t for t, _, _ in checked]
    publics = tuple(p for _, _, p in checked)
    chunks, groups = the_plan.chunks, the_plan.groups
    proofs = schedule(runner, airs, traces, publics, log_ns, config, the_plan.order, debug, chunks, groups)
    return Proof(config_id=config.fingerprint(), tables=tuple(proofs), chunks=chunks)


def _admitted_everywhere(the_plan) -> None:
    """Every process's share of a statement whose whole tables are shared out fits, or every
    process raises :class:`~jaxstark.errors.DeviceBudgetExceeded` before anything is dispatched
    (the one over budget with its own diagnostic): none waits for another in an exchange."""
    from jaxstark.memory.executor import agreed

    said = agreed("" if the_plan.fits else "over budget")
    the_plan.admit()
    over = [p for p, message in enumerate(said) if message]
    if over:
        raise DeviceBudgetExceeded(
            f"jax.distributed process(es) {over}: their share of the statement exceeds their devices' budget "
            "(nothing was dispatched; their own error names the binding round)"
        )
