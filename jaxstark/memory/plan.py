"""``jaxstark.plan``: every round's device set, from shapes alone, before anything runs.

For each table and each round the plan lists the buffers still held from earlier rounds (by
name: the caller's trace, the domain tables, LDEs, trees, ...) and XLA's own figures for the
round's executable (arguments, outputs, temporaries, aliased), compiled for the device the table
will run on. The sum is the round's **device set**; the largest over the whole proof is the
**peak**, and the round where it occurs is the **binding** round.

Admission (:meth:`Plan.admit`, called by :func:`jaxstark.prove` before any dispatch):

* a table below the config's row floor (``device_row_floor_log2``) runs on the CPU device by
  policy when the target is an accelerator (small tables do not pay for a kernel launch per
  operation) -- the plan says so;
* every round's device set must fit its device's budget (:mod:`jaxstark.memory.budget`);
  otherwise :class:`~jaxstark.errors.DeviceBudgetExceeded` names the table, round, shape, every
  term, the total, the budget and its source, live device memory and the allocator posture.

Order of rounds 2-5: the main (and aux) commitments of every table exist before the shared
challenges are drawn, so all of them are held when the first table's rounds 2-5 begin, and each
table's are released when it is done. The planner tries the statement order, heaviest table
first and heaviest table last, and keeps the order with the lowest peak relative to the budget
(the transcript does not depend on it: each table has its own fork).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR
from jaxstark.chunking import units
from jaxstark.config import StarkConfig
from jaxstark.errors import DeviceBudgetExceeded
from jaxstark.memory.budget import Budget, allocator_posture, device_budget, live_memory
from jaxstark.memory.executor import Planner, RoundMemory
from jaxstark.ntt import _target_device

__all__ = ["Plan", "TablePlan", "plan", "plan_checked"]

GIB = 2**30


def _size(b: int) -> str:
    """Bytes in a readable unit (GiB, MiB or KiB)."""
    for unit, scale in (("GiB", GIB), ("MiB", 2**20)):
        if abs(b) >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b / 1024:.1f} KiB"


@dataclasses.dataclass(frozen=True)
class TablePlan:
    index: int
    name: str
    log_n: int
    width: int
    aux_columns: int
    blowup: int
    device: str
    policy: str

    @property
    def shape(self) -> str:
        aux = f" + {self.aux_columns} aux (extension)" if self.aux_columns else ""
        return f"2^{self.log_n} rows x {self.width} main{aux} @ blowup {self.blowup}"


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """The memory plan of one proof. ``rounds`` in execution order; ``peak``/``binding`` over all."""

    tables: tuple[TablePlan, ...]
    rounds: tuple[RoundMemory, ...]
    budgets: dict[str, Budget]
    order: tuple[int, ...]
    devices: dict[int, jax.Device] = dataclasses.field(repr=False)
    default_device: jax.Device = dataclasses.field(repr=False)

    @property
    def binding(self) -> RoundMemory:
        """The round with the largest device set relative to its device's budget."""
        return max(self.rounds, key=lambda r: r.total / self.budgets[r.device].bytes)

    @property
    def peak(self) -> int:
        return self.binding.total

    def table_peak(self, table: int) -> int:
        return max(r.total for r in self.rounds if r.table == table)

    @property
    def fits(self) -> bool:
        return all(r.total <= self.budgets[r.device].bytes for r in self.rounds)

    def terms(self, r: RoundMemory) -> dict[str, int]:
        """The device set of round ``r`` term by term (bytes; aliased bytes count negative)."""
        out = dict(r.resident)
        out.update({"round arguments": r.arguments, "round outputs": r.outputs, "round temporaries": r.temporaries})
        if r.aliased:
            out["aliased (counted twice above)"] = -r.aliased
        return out

    def diagnostic(self, table: int | None, name: str) -> str:
        """Everything known about one round, for an error message."""
        r = next(r for r in self.rounds if r.table == table and r.name == name)
        budget = self.budgets[r.device]
        where = "all tables" if table is None else f"table {table} ({self.tables[table].name})"
        shape = "" if table is None else f"; shape {self.tables[table].shape}"
        lines = [f"{where}, round '{name}' on {budget.device}{shape}"]
        lines += [f"    {k:48} {_size(v):>12} ({v:,} B)" for k, v in self.terms(r).items()]
        lines.append(f"    {'total device set':48} {_size(r.total):>12} ({r.total:,} B)")
        lines.append(f"  budget {budget}")
        lines.append(f"  live memory: {live_memory(self.devices.get(table, self.default_device))}")
        lines.append(f"  allocator posture: {allocator_posture()}")
        return "\n".join(lines)

    def admit(self) -> None:
        """Raise :class:`DeviceBudgetExceeded` if any round is over its device's budget, naming
        the binding round (the largest device set relative to its budget)."""
        if self.fits:
            return
        r = self.binding
        budget = self.budgets[r.device]
        table = self.tables[r.table] if r.table is not None else None
        raise DeviceBudgetExceeded(
            "the planned device set exceeds the memory budget (nothing was dispatched): "
            + self.diagnostic(r.table, r.name)
            + "\n  to fit: lower the blowup, split a row-local table into row chunks "
            "(StarkConfig.max_chunk_rows_log2), or use a larger device",
            table=None if table is None else table.name,
            table_index=r.table,
            round=r.name,
            shape=None if table is None else table.shape,
            terms=self.terms(r),
            total=r.total,
            budget=budget.bytes,
            budget_source=budget.source,
            live_memory=live_memory(self.devices.get(r.table, self.default_device)),
            allocator_posture=allocator_posture(),
        )

    def __str__(self) -> str:
        lines = []
        for dev, budget in self.budgets.items():
            lines.append(f"budget {dev}: {budget}")
        for t in self.tables:
            lines.append(f"table {t.index} {t.name}: {t.shape} on {t.device}{' -- ' + t.policy if t.policy else ''}")
        lines.append(f"rounds 2-5 in table order {list(self.order)}")
        cols = ("held before", "arguments", "outputs", "temporaries", "device set")
        head = f"{'table':>5} {'round':18}" + "".join(f" {c:>12}" for c in cols)
        lines += [head, "-" * len(head)]
        b = self.binding
        for r in self.rounds:
            mark = "  <- binding" if r is b else ""
            t = "all" if r.table is None else str(r.table)
            values = (r.resident_bytes, r.arguments, r.outputs, r.temporaries, r.total)
            lines.append(f"{t:>5} {r.name:18}" + "".join(f" {_size(v):>12}" for v in values) + mark)
        verdict = "fits" if self.fits else "DOES NOT FIT"
        where = "all tables" if b.table is None else f"table {b.table}"
        lines.append(f"peak {_size(b.total)} ({b.name}, {where}); {verdict} the budget")
        return "\n".join(lines)


def _devices(airs, log_ns, config: StarkConfig, device: jax.Device | None):
    default = device or _target_device()
    devices, policies = {}, {}
    for i, log_n in enumerate(log_ns):
        if default.platform != "cpu" and log_n < config.device_row_floor_log2:
            devices[i] = jax.devices("cpu")[0]
            policies[i] = f"below the row floor 2^{config.device_row_floor_log2}: runs on the CPU by policy"
        else:
            devices[i], policies[i] = default, ""
    return default, devices, policies


def _run_planner(airs, log_ns, chunks, config, default, devices, order) -> list[RoundMemory]:
    from jaxstark.prover import schedule

    planner = Planner(devices, default)
    u64 = jnp.uint64
    traces = [jax.ShapeDtypeStruct((1 << log_n, air.width), u64) for air, log_n in zip(airs, log_ns, strict=True)]
    publics = tuple(jax.ShapeDtypeStruct((air.num_public_inputs,), u64) for air in airs)
    schedule(planner, airs, traces, publics, log_ns, config, order, chunks=chunks)
    return planner.rounds


def plan_checked(
    airs: tuple[AIR, ...],
    log_ns: tuple[int, ...],
    config: StarkConfig,
    device: jax.Device | None = None,
    chunks: tuple[int, ...] = (),
) -> Plan:
    """The plan for already validated tables (what :func:`jaxstark.prove` calls); ``chunks``:
    per table, log2 of its number of row chunks (:mod:`jaxstark.chunking`). The plan's tables
    are the proven units: the tables, a split table's chunks one by one."""
    chunks = tuple(chunks) or (0,) * len(airs)
    us = units(tuple(log_ns), chunks)
    unit_airs = tuple(airs[u.table] for u in us)
    unit_logs = tuple(u.log_rows for u in us)
    default, devices, policies = _devices(unit_airs, unit_logs, config, device)
    budgets = {}
    for dev in {default, *devices.values()}:
        budgets[f"{dev.platform}:{dev.id}"] = device_budget(dev, config.vram_budget_mb)

    def worst(rounds):
        return max(r.total / budgets[r.device].bytes for r in rounds)

    def run(order):
        return _run_planner(airs, log_ns, chunks, config, default, devices, order)

    statement = tuple(range(len(us)))
    best_order, best = statement, run(statement)
    if len(us) > 1:
        weight = {i: max(r.total for r in best if r.table == i) for i in statement}
        heavy_first = tuple(sorted(statement, key=lambda i: -weight[i]))
        for order in (heavy_first, heavy_first[::-1]):
            if order != best_order:
                rounds = run(order)
                if worst(rounds) < worst(best):
                    best_order, best = order, rounds
    tables = tuple(
        TablePlan(i, air.name + (f" chunk {u.chunk} of {1 << chunks[u.table]}" if chunks[u.table] else ""),
                  u.log_rows, air.width, air.num_aux_columns, config.blowup,
                  f"{devices[i].platform}:{devices[i].id}", policies[i])
        for i, (air, u) in enumerate(zip(unit_airs, us, strict=True))
    )  # fmt: skip
    return Plan(tables, tuple(best), budgets, best_order, devices, default)


def plan(
    tables: AIR | Sequence, rows=None, config: StarkConfig | None = None, *, device: jax.Device | None = None
) -> Plan:
    """Plan a proof without running it: ``plan(air, rows, config)`` for one table or
    ``plan([(air, rows), ...], config=config)``, where ``rows`` is a trace (its shape is used)
    or the log2 of the row count. Compiles every round for its device (the executables are
    reused by :func:`jaxstark.prove`); dispatches nothing."""
    from jaxstark.prover import check_shape, table_chunks

    config = config or StarkConfig()
    entries = [(tables, rows)] if isinstance(tables, AIR) else list(tables)
    airs, log_ns = [], []
    for i, entry in enumerate(entries):
        if not isinstance(entry, (tuple, list)) or len(entry) < 2 or not isinstance(entry[0], AIR):
            raise TypeError(
                f"plan: table {i} must be (air, rows), rows a trace or log2 of the row count; got {entry!r:.80}"
            )
        air, size = entry[0], entry[1]
        if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
            log_n = int(size)
        elif hasattr(size, "shape") and len(size.shape) == 2 and size.shape[1] == air.width:
            n = int(size.shape[0])
            if n < 2 or n & (n - 1):
                raise ValueError(f"plan: table {i} has {n} rows; a power of two >= 2 is needed")
            log_n = n.bit_length() - 1
        else:
            raise TypeError(f"plan: table {i}: rows must be an int (log2 rows) or an (n, {air.width}) trace")
        check_shape(air, log_n, config, f"plan: table {i} ({air.name})")
        airs.append(air)
        log_ns.append(log_n)
    chunks = table_chunks(airs, log_ns, config, "plan")
    return plan_checked(tuple(airs), tuple(log_ns), config, device, chunks)
