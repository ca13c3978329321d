"""``jaxstark.plan``: every round's device set, from shapes alone, before anything runs.

For each table and each round the plan lists the buffers still held from earlier rounds (by
name: the caller's trace, the domain tables, LDEs, trees, ...) and XLA's own figures for the
round's executable (arguments, outputs, temporaries, aliased), compiled for the device the table
will run on; on a GPU, also what the allocator's chunks hold beyond those buffers (a free chunk
less than twice a request is handed out whole), from a replay of the proof's buffers through a
simulated pool (:mod:`jaxstark.memory.pool`). The sum is the round's **device set**; the largest
over the whole proof is the **peak**, and the round where it occurs is the **binding** round.

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

**Held buffers** (``StarkConfig.held_strategies``): when keeping every buffer held between
rounds on the device does not fit, :func:`plan_checked` searches from that plan upward
(:func:`_held_strategies`): while the plan does not fit, it takes the buffer that frees the most
bytes from the binding round -- a Merkle tree the binding round holds or builds is
*recomputed* (its round returns only the root, the openings build it again from its matrix; one
more tree build), any other held output the round does not take is *parked* in host memory
(copied out once, back in for each round that takes it), and a round that works row by row
(out-of-domain, DEEP, the composition's constraints) binding on its own temporaries runs in more
*row blocks* -- and plans again; the first plan that fits is admitted, else the one with the
smallest binding round is refused with what bound it. None of them changes the proof
(:mod:`jaxstark.memory.executor`).

**Row chunks or held buffers**: a row-local table the planner may split
(``max_chunk_rows_log2="auto"``) that is over the budget whole is planned both ways -- in row
chunks, and whole with the held-buffer search -- and the plan that fits with the smaller
estimated extra work per proof (:mod:`jaxstark.memory.cost`) is kept, a tie going to the whole
table (its proof is the unsplit one). Both are named in :attr:`Plan.compared`. Chunks proven in
one group do no extra work, chunks spread over several devices do theirs at once, and a whole
table whose rounds cannot fit whatever is parked or recomputed cannot win, so none of these
cases plans the whole table's strategies.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxstark import rounds, transfer
from jaxstark.air import AIR
from jaxstark.chunking import chunk_group, units
from jaxstark.config import StarkConfig
from jaxstark.errors import DeviceBudgetExceeded, ShapeError
from jaxstark.memory import cost
from jaxstark.memory.budget import _POSTURE_VARS, ENV_BUDGET, Budget, allocator_posture, device_budget, live_memory
from jaxstark.memory.executor import CHUNK_AXIS, PLANNING, Planner, RoundMemory, device_label, held_name
from jaxstark.memory.model import model, search_held
from jaxstark.ntt import _target_device
from jaxstark.progress import format_bytes as _size
from jaxstark.rounds import OPENED, openings_name, r4_fri_layer, registered
from jaxstark.schedule import check_shape, schedule, table_chunks, waves

__all__ = ["Plan", "TablePlan", "plan", "plan_checked"]


@dataclasses.dataclass(frozen=True)
class TablePlan:
    """One proven unit: a table, or a group of ``group`` row chunks of ``2^log_n`` rows each of
    statement table ``table``, proven together under ``vmap``."""

    index: int
    name: str
    log_n: int
    width: int
    aux_columns: int
    blowup: int
    device: str
    policy: str
    table: int = 0
    group: int = 1

    @property
    def shape(self) -> str:
        aux = f" + {self.aux_columns} aux (extension)" if self.aux_columns else ""
        rows = f"{self.group} chunks of 2^{self.log_n} rows (vmap)" if self.group > 1 else f"2^{self.log_n} rows"
        return f"{rows} x {self.width} main{aux} @ blowup {self.blowup}"


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """The memory plan of one proof. ``rounds`` in execution order; ``peak``/``binding`` over all."""

    tables: tuple[TablePlan, ...]
    rounds: tuple[RoundMemory, ...]
    budgets: dict[str, Budget]
    order: tuple[int, ...]
    devices: dict[int, jax.Device] = dataclasses.field(repr=False)
    default_device: jax.Device = dataclasses.field(repr=False)
    chunks: tuple[int, ...] = ()  # per statement table, log2 of its number of row chunks
    groups: tuple[int, ...] = ()  # per statement table, log2 of the chunks proven at once under vmap
    meshes: dict[int, Mesh] = dataclasses.field(default_factory=dict, repr=False)  # unit -> devices it spans
    host_traces: tuple[bool, ...] = ()  # per statement table: its trace assumed in host memory (else on the device)
    # held outputs parked in host memory between the rounds that take them: (name, bytes, rounds copying it back)
    parked: tuple[tuple[str, int, int], ...] = ()
    parkable: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)  # what may be parked -> bytes
    may_park: bool = True  # StarkConfig.held_strategies allowed parking (and one process runs the proof)
    # held trees recomputed where they are opened: (name, bytes no longer held, the round that builds it again)
    recomputed: tuple[tuple[str, int, str], ...] = ()
    recomputable: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)  # trees -> bytes
    may_recompute: bool = True  # StarkConfig.held_strategies allowed recomputing
    # rounds run in more blocks of rows than their platform's default: (held_name(unit, round), blocks)
    row_blocks: tuple[tuple[str, int], ...] = ()
    blockable: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict, repr=False)  # -> (now, most)
    may_block: bool = True  # StarkConfig.held_strategies allowed more row blocks
    # estimated seconds of extra work per proof against keeping everything, whole, by way (memory.cost)
    extra: dict[str, float] = dataclasses.field(default_factory=dict)
    # the same per parked or recomputed buffer and per round in more row blocks, by name
    item_extra: dict[str, float] = dataclasses.field(default_factory=dict, repr=False)
    # the ways of fitting the planner compared for a table it may split: (way, fits, peak bytes,
    # estimated extra seconds; fits, peak and seconds None where it was not planned, and why), the
    # chosen one first
    compared: tuple[tuple[str, bool | None, int | None, float | None, str], ...] = ()
    # units another jax.distributed process proves (whole tables shared out): not planned here
    others: tuple[int, ...] = ()

    def chunking(self, table: int) -> str:
        """How statement table ``table`` is split, in words ('' when whole)."""
        k = self.chunks[table] if self.chunks else 0
        if not k:
            return ""
        mine = [u for u in self.tables if u.table == table]
        indices = {u.index for u in mine}
        peak = max(r.total for r in self.rounds if r.table in indices)
        g = 1 << self.groups[table]
        mesh = self.meshes.get(mine[0].index)
        spread = f", each group split over {mesh.devices.size} devices ({mine[0].device})" if mesh is not None else ""
        return (
            f"{mine[0].name.split(' chunk')[0]}: {1 << k} chunks of 2^{mine[0].log_n} rows, {g} at a time under vmap "
            f"({len(mine)} group{'s' if len(mine) > 1 else ''}{spread}; group peak {_size(peak)} per device)"
        )

    @property
    def waves(self) -> list[list[int]]:
        """The units' rounds 2-5 in waves (:func:`jaxstark.schedule.waves`): a wave's units, on
        distinct devices, are dispatched together and their devices work at once."""
        return waves(self.order, functools.partial(_devset, self.meshes, self.devices))

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
        out["round arguments"] = r.arguments
        if r.copy_in_binds:  # before the round runs
            out["host trace blocks in flight (copied in before the round)"] = r.staging
            if r.pool:
                out["allocator's chunks beyond the buffers"] = r.pool
            return out
        out.update({"round outputs": r.outputs, "round temporaries": r.temporaries})
        if r.aliased:
            out["aliased (counted twice above)"] = -r.aliased
        if r.pool:
            out["allocator's chunks beyond the buffers"] = r.pool
        return out

    def to_dict(self) -> dict:
        """The plan as plain data (what ``jaxstark plan --json`` prints; bytes as ints): the
        budgets, the units, every round term by term, the binding round, the peak, the verdict
        and how each statement table is split."""
        b = self.binding
        units = [dict(dataclasses.asdict(t), shape=t.shape) for t in self.tables]
        rounds = [
            dict(unit=r.table, round=r.name, device=r.device, terms=self.terms(r), held_before=r.resident_bytes,
                 arguments=r.arguments, outputs=r.outputs, temporaries=r.temporaries, aliased=r.aliased,
                 staging=r.staging, parked_on_host=r.parked_bytes, copied_in=r.copied_in, pool=r.pool, total=r.total)
            for r in self.rounds
        ]  # fmt: skip
        return dict(
            fits=self.fits,
            peak_bytes=b.total,
            binding=dict(unit=b.table, round=b.name, device=b.device),
            budgets={dev: dict(bytes=x.bytes, source=x.source, device=x.device) for dev, x in self.budgets.items()},
            units=units,
            order=list(self.order),
            waves=self.waves,
            chunks_log2=list(self.chunks),
            group_log2=list(self.groups),
            chunking=[self.chunking(t) for t in range(len(self.chunks))],
            host_traces=list(self.host_traces),
            parked=[
                dict(buffer=n, bytes=b, copies_in=k, extra_seconds=self.item_extra.get(n)) for n, b, k in self.parked
            ],
            recomputed=[
                dict(buffer=n, bytes=b, rebuilt_in=w, extra_seconds=self.item_extra.get(n))
                for n, b, w in self.recomputed
            ],
            row_blocks=[dict(round=n, blocks=k, extra_seconds=self.item_extra.get(n)) for n, k in self.row_blocks],
            extra_seconds=dict(self.extra),
            compared=[
                dict(way=w, fits=f, peak_bytes=b, extra_seconds=x, note=why) for w, f, b, x, why in self.compared
            ],
            rounds=rounds,
        )

    def trace_residency(self) -> str:
        """Where the plan assumed each caller's trace, in words."""
        host = [t for t, h in enumerate(self.host_traces) if h]
        if not host:
            return "caller's traces: on the device, held for the whole proof"
        staged = max((r.staging for r in self.rounds), default=0)
        blocks = f"; copied in row blocks, at most {_size(staged)} in flight" if staged else ""
        if len(host) == len(self.host_traces):
            return ("caller's traces: in host memory, on the device only as arguments of the rounds that take them"
                    + blocks)  # fmt: skip
        return (f"caller's traces: tables {host} in host memory (on the device only as arguments of the rounds that "
                f"take them{blocks}), the rest on the device for the whole proof")  # fmt: skip

    def held_strategy(self) -> str:
        """What the plan does with the buffers held between rounds, in words."""
        if not self.parked and not self.recomputed and not self.row_blocks:
            return "held buffers: all kept on the device"
        lines = [f"round in row blocks: {n} in {k} blocks of rows, one after another (its temporaries a block's)"
                 + self._est(n) for n, k in self.row_blocks]  # fmt: skip
        if self.recomputed:
            total = sum(b for _, b, _ in self.recomputed)
            lines.append(f"held buffers: {len(self.recomputed)} tree(s) recomputed ({_size(total)} not held; each "
                         "built once more, from its matrix, where it is opened):")  # fmt: skip
            lines += [f"  recompute {n:39} {_size(b):>12}  built again in '{w}'" + self._est(n)
                      for n, b, w in self.recomputed]  # fmt: skip
        if self.parked:
            total = sum(b for _, b, _ in self.parked)
            lines.append(f"held buffers: {len(self.parked)} parked in host memory between the rounds that take them "
                         f"({_size(total)}; copied out once, back in for each such round):")  # fmt: skip
            lines += [f"  park {n:44} {_size(b):>12}  copied back {k} time{'s' if k != 1 else ''}" + self._est(n)
                      for n, b, k in self.parked]  # fmt: skip
        return "\n".join(lines)

    def _est(self, name: str) -> str:
        """A buffer's or round's estimated extra work, for the listing ('' when not estimated)."""
        x = self.item_extra.get(name)
        return "" if x is None else f" (est. +{x * 1e3:.1f} ms)"

    def cost_lines(self) -> list[str]:
        """The estimated extra work per proof and the ways compared, in words (none when the
        plan keeps everything and no way was compared)."""
        lines = []
        if self.extra:
            parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.extra.items())
            lines.append(f"estimated extra work per proof: {sum(self.extra.values()) * 1e3:.1f} ms ({parts}; "
                         "jaxstark.memory.cost)")  # fmt: skip
        for i, (way, fits, peak, x, why) in enumerate(self.compared):
            if x is None:
                lines.append(f"over {way}: {why}")
                continue
            verdict = "fits" if fits else ("refused: does not fit" if i == 0 else "does not fit")
            lines.append(f"{'chose' if i == 0 else 'over'} {way}: est. +{x * 1e3:.1f} ms, peak {_size(peak)}, "
                         f"{verdict}")  # fmt: skip
        return lines

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
        if self.parked:
            names = ", ".join(n for n, _, _ in self.parked)
            lines.append(f"  with {len(self.parked)} held buffer(s) parked in host memory: {names}")
        if self.recomputed:
            names = ", ".join(n for n, _, _ in self.recomputed)
            lines.append(f"  with {len(self.recomputed)} tree(s) recomputed where they are opened: {names}")
        if self.row_blocks:
            names = ", ".join(f"{n} ({k})" for n, k in self.row_blocks)
            lines.append(f"  with round(s) in more blocks of rows: {names}")
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
            + "".join("\n  " + line for line in self.cost_lines() if not line.startswith("estimated"))
            + "\n  to fit: lower the blowup, split a row-local table into row chunks "
            "(StarkConfig.max_chunk_rows_log2)" + self._strategies_refused() + ", or use a larger device",
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

    def _strategies_refused(self) -> str:
        """The advice, for a refusal, to allow what ``held_strategies`` forbade and could have
        shrunk the plan ('' when nothing was forbidden or there was nothing to apply it to)."""
        park = not self.may_park and bool(self.parkable)
        recompute = not self.may_recompute and bool(self.recomputable)
        now, most = self.blockable.get(held_name(self.binding.table, self.binding.name), (1, 1))
        block = not self.may_block and now < most  # the binding round could run in more row blocks
        if not (park or recompute or block):
            return ""
        what = " or ".join(w for w, x in (("parking held buffers in host memory", park),
                                           ("recomputing held trees", recompute),
                                           ("more row blocks", block)) if x)  # fmt: skip
        return f", allow {what} (StarkConfig.held_strategies)"

    def __str__(self) -> str:
        lines = []
        for dev, budget in self.budgets.items():
            lines.append(f"budget {dev}: {budget}")
        for t in range(len(self.chunks)):
            if words := self.chunking(t):
                lines.append(f"statement table {t} {words}")
        for t in self.tables:
            lines.append(f"unit {t.index} {t.name}: {t.shape} on {t.device}{' -- ' + t.policy if t.policy else ''}")
        together = [w for w in self.waves if len(w) > 1]
        lines.append(f"rounds 2-5 in table order {list(self.order)}"
                     + (f"; units on distinct devices at once: {together}" if together else ""))  # fmt: skip
        lines.append(self.trace_residency())
        lines.append(self.held_strategy())
        lines += self.cost_lines()
        pooled = any(r.pool for r in self.rounds)  # the allocator's chunks beyond the buffers (a GPU)
        cols = ("held before", "arguments", "outputs", "temporaries") + (("chunks over",) if pooled else ())
        cols += ("device set",)
        head = f"{'table':>5} {'round':18}" + "".join(f" {c:>12}" for c in cols)
        lines += [head, "-" * len(head)]
        b = self.binding
        for r in self.rounds:
            mark = "  <- copy-in binds" if r.copy_in_binds else ""
            mark += "  <- binding" if r is b else ""
            t = "all" if r.table is None else str(r.table)
            values = (r.resident_bytes, r.arguments, r.outputs, r.temporaries) + ((r.pool,) if pooled else ())
            values += (r.total,)
            lines.append(f"{t:>5} {r.name:18}" + "".join(f" {_size(v):>12}" for v in values) + mark)
        verdict = "fits" if self.fits else "DOES NOT FIT"
        where = "all tables" if b.table is None else f"table {b.table}"
        lines.append(f"peak {_size(b.total)} ({b.name}, {where}); {verdict} the budget")
        return "\n".join(lines)


def _shares_out(us, config: StarkConfig, whole: list) -> bool:
    """Whether whole tables are shared out over the processes of ``jax.distributed`` (each
    process proving its own): only for a statement no table of which is split into row chunks,
    without the planner's own chunking choice (``max_chunk_rows_log2="auto"``, which each process
    would make from its own tables' rounds), and with a whole table for every process. Else
    every process proves every whole table on its own devices."""
    return (jax.process_count() > 1 and not any(u.split for u in us) and config.max_chunk_rows_log2 != "auto"
            and len(whole) >= jax.process_count())  # fmt: skip


def _placement(us, airs, config: StarkConfig, default: jax.Device, spread: tuple):
    """Where each unit runs: below the row floor, on the CPU by policy; a group of chunks, split
    over as many devices of ``spread`` as it has chunks (a mesh); whole tables, one per device of
    this process (under ``jax.distributed``, of every process: each proves its own) in
    statement order where there are enough, else balanced by estimated work
    (:func:`jaxstark.memory.cost.table_work`: the largest first, each onto the device with the
    least so far). Each device holds its own tables' buffers. Returns (devices: the unit's
    device, the first of its mesh; meshes; policies)."""
    local = [d for d in spread if d.process_index == jax.process_index()]
    devices, meshes, policies = {}, {}, {}
    floor = default.platform != "cpu" and config.device_row_floor_log2
    whole = [i for i, u in enumerate(us) if not u.split and not (floor and u.log_rows < floor)]
    if _shares_out(us, config, whole):  # every process's devices, in turn by process
        rank: dict = {}  # a device's place among its process's devices
        for d in spread:
            rank[d] = sum(x.process_index == d.process_index for x in rank)
        local = sorted(spread, key=lambda d: (rank[d], d.process_index))
    if len(whole) <= len(local):  # a device each, in statement order
        onto = {i: local[k] for k, i in enumerate(whole)}
    else:  # the largest estimated work first, each onto the device with the least so far
        load, onto = [0.0] * len(local), {}
        work = {i: cost.table_work(airs[us[i].table], us[i].log_rows, config.blowup) for i in whole}
        for i in sorted(whole, key=lambda i: (-work[i], i)):
            k = min(range(len(local)), key=lambda k: (load[k], k))
            onto[i], load[k] = local[k], load[k] + work[i]
    for i, u in enumerate(us):
        devices[i], policies[i] = default, ""
        if default.platform != "cpu" and u.log_rows < config.device_row_floor_log2:
            devices[i] = jax.local_devices(backend="cpu")[0]
            policies[i] = f"below the row floor 2^{config.device_row_floor_log2}: runs on the CPU by policy"
        elif u.split:
            d = 1 << (min(len(spread), u.count).bit_length() - 1)
            if jax.process_count() > 1 and d < len(spread):
                raise ValueError(
                    f"plan: table {u.table} ({airs[u.table].name}) is proven in groups of {u.count} chunk(s), fewer "
                    f"than the {len(spread)} devices of the {jax.process_count()} processes: under jax.distributed "
                    "every group is split over all of them; split the table into more chunks or fix chunk_group"
                )
            if d > 1:
                meshes[i] = Mesh(np.array(spread[:d]), (CHUNK_AXIS,))
        else:
            devices[i] = onto[i]
    return devices, meshes, policies


def _run_planner(airs, log_ns, chunks, groups, config, default, devices, meshes, order, host, park,
                 recompute, blocks) -> Planner:  # fmt: skip
    planner = Planner(devices, default, meshes, park, recompute, blocks)
    u64 = jnp.uint64
    traces = [jax.ShapeDtypeStruct((1 << log_n, air.width), u64) for air, log_n in zip(airs, log_ns, strict=True)]
    publics = tuple(jax.ShapeDtypeStruct((air.num_public_inputs,), u64) for air in airs)
    schedule(planner, airs, traces, publics, log_ns, config, order, chunks=chunks, groups=groups, host_traces=host)
    planner.rounds  # noqa: B018 -- waits for the programs still compiling
    return planner


def plan_checked(
    airs: tuple[AIR, ...],
    log_ns: tuple[int, ...],
    config: StarkConfig,
    device: jax.Device | None = None,
    chunks: tuple[int | None, ...] = (),
    devices: Sequence[jax.Device] | None = None,
    progress=None,
    host_traces: tuple[bool, ...] = (),
) -> Plan:
    """The plan for already validated tables (what :func:`jaxstark.prove` calls); ``chunks``:
    per table, log2 of its number of row chunks, or None where the planner chooses
    (``max_chunk_rows_log2="auto"``; :mod:`jaxstark.chunking`). The plan's units are the tables
    and the groups of chunks of the split ones; the group size is the config's
    ``chunk_group`` or the planner's choice. ``devices``: what a group of chunks is spread over
    (split along the group axis, :data:`~jaxstark.memory.executor.CHUNK_AXIS`); default
    ``[device]`` when a device is given, else every device of the target platform (of every
    process). ``progress`` hears of every round compiled (:mod:`jaxstark.progress`, phase
    "plan"); a plan already made for these shapes is returned at once. ``host_traces``: per
    table, whether the caller's trace will be in host memory (default: on the device; see
    :func:`jaxstark.schedule.schedule`)."""
    chunks = tuple(chunks) or (0,) * len(airs)
    host = tuple(bool(h) for h in host_traces) or (False,) * len(airs)
    if len(host) != len(airs):
        raise ValueError(f"plan: {len(host)} host_traces flags for {len(airs)} tables")
    fixed = chunk_group(config)
    default = device or _target_device()
    if default.process_index != jax.process_index():
        raise ValueError(f"plan: device {default} belongs to jax.distributed process {default.process_index}; this "
                         f"is process {jax.process_index()}: pass one of its own (jax.local_devices())")  # fmt: skip
    spread = tuple(devices) if devices else (default,) if device else tuple(jax.devices(default.platform))
    if default not in spread:
        spread = (default, *spread)
    # a plan is a function of these and of the process's environment: the next proof of the same
    # shapes reuses it instead of walking the schedule again
    key = (tuple(airs), tuple(log_ns), config, default, spread, chunks, fixed, host,
           tuple(os.environ.get(name) for name in PLAN_ENV), transfer.settings(),
           (r4_fri_layer.SCAN_LAYERS_BELOW, r4_fri_layer.SCAN_LAYERS_BELOW_JNP, r4_fri_layer.SCAN_LAYERS_BELOW_CPU,
            rounds.MIN_BLOCK_ROWS),
           repr(cost.rates(default.platform)))  # fmt: skip
    if key not in _PLANS:
        token = PLANNING.set(progress)
        try:
            may = ("park" in config.held_strategies and jax.process_count() == 1,
                   "recompute" in config.held_strategies, "blocks" in config.held_strategies)  # fmt: skip
            p, whole = _plan_checked(airs, log_ns, config, (default, spread), chunks, fixed, host)
            p = _fitted(p, airs, log_ns, config, (default, spread), host, may)
            p = _compared(p, whole, airs, log_ns, config, (default, spread), chunks, host, may)
            p = dataclasses.replace(p, may_park=may[0], may_recompute=may[1], may_block=may[2],
                                    extra=cost.extra_seconds(p, config),
                                    item_extra=cost.item_seconds(p, config))  # fmt: skip
            _PLANS[key] = p
        finally:
            PLANNING.reset(token)
    return _PLANS[key]


_PLANS: dict = {}
PLAN_ENV = (ENV_BUDGET, *_POSTURE_VARS)  # what a budget depends on besides the device


def _plan_checked(airs, log_ns, config, device, chunks, fixed, host) -> tuple[Plan, Plan]:
    """The plan with every table the planner may split (``chunks`` None) split as needed, and
    the plan with those tables whole (the first tried)."""
    if all(k is not None for k in chunks):
        p = _grouped(airs, log_ns, config, device, chunks, fixed, host)
        return p, p
    # "auto": whole where the proof fits; else split the binding auto table into chunks whose
    # device set the plan of the whole table says will fit, confirmed by planning them
    auto = {t for t, k in enumerate(chunks) if k is None}
    current = [k or 0 for k in chunks]
    last: dict[int, int] = {}  # per table, the binding device set before its last split
    first = None
    while True:
        p = _grouped(airs, log_ns, config, device, tuple(current), fixed, host)
        first = p if first is None else first
        if p.fits:
            return p, first
        r = p.binding
        t = None if r.table is None else p.tables[r.table].table
        budget = p.budgets[r.device].bytes
        if t not in auto or r.total > 0.75 * last.get(t, 2 * r.total):
            return p, first  # not a split table's round, or splitting it further no longer shrinks it: refused
        last[t] = r.total
        scaled = r.total - r.fixed
        levels = max(1, math.ceil(math.log2(scaled / max(budget - r.fixed, 1)))) if scaled > 0 else 1
        k = min(current[t] + levels, log_ns[t] - 1)
        while k > current[t] and not _splits(airs[t], log_ns[t] - k, config):
            k -= 1
        if k <= current[t]:
            return p, first  # no taller split fits the AIR's height rules: admission refuses it
        current[t] = k


def _fitted(p: Plan, airs, log_ns, config, device, host, may: tuple[bool, bool, bool]) -> Plan:
    """``p``, or when it does not fit and ``may`` (park, recompute, blocks) allows any, the plan
    the held-buffer search finds from it."""
    if p.fits or not any(may):
        return p
    return _held_strategies(p, airs, log_ns, config, device, host, *may)


def _compared(p: Plan, whole: Plan, airs, log_ns, config, device, chunks, host, may) -> Plan:
    """For tables the planner may split (``chunks`` None) that ``p`` splits into row chunks: the
    same statement with those tables whole (``whole``, kept everything), fitted by the
    held-buffer search, against ``p``, by
    the estimated extra work per proof (:mod:`jaxstark.memory.cost`); the cheaper plan that fits
    is returned (a tie: the whole tables -- the proof is the unsplit one, and smaller), with both
    ways in :attr:`Plan.compared` (when neither fits, the chunked plan is the one refused). The
    whole tables are not planned when chunks proven in one group do no extra work, when the
    chunks are spread over several devices (the estimate prices one device's work), or when one
    of the whole tables' rounds cannot fit whatever the search does (:func:`_least`)."""
    auto = [t for t, k in enumerate(chunks) if k is None and p.chunks[t]]
    if not auto:
        return p
    split = (
        "row chunks ("
        + "; ".join(f"table {t}: {1 << p.chunks[t]} chunks in groups of {1 << p.groups[t]}" for t in auto)
        + ")"
    )
    px = cost.extra_seconds(p, config)
    tables = "whole table" + ("s" if len(auto) > 1 else "")
    whole_way = tables + " with held buffers recomputed, parked or in row blocks"

    def unplanned(why: str) -> Plan:
        return dataclasses.replace(p, compared=((split, p.fits, p.peak, sum(px.values()), ""),
                                                (whole_way, None, None, None, "not planned: " + why)))  # fmt: skip

    if p.fits and not px:
        return unplanned("chunks in one group do no extra work")
    spread = {len(p.meshes[u.index].devices.flat) for u in p.tables if u.table in auto and u.index in p.meshes}
    if spread:  # the estimate prices one device's work: chunks spread over several do theirs at once
        return unplanned(f"the chunks are spread over {max(spread)} devices")
    w = whole
    if over := [r for r in w.rounds if _least(w, r) > w.budgets[r.device].bytes]:
        return unplanned(f"round '{over[0].name}' alone needs {_size(_least(w, over[0]))} whatever is parked or "
                         "recomputed")  # fmt: skip
    w = _fitted(w, airs, log_ns, config, device, host, may)
    wx = cost.extra_seconds(w, config)
    used = ", ".join(k for k in ("recompute", "park", "blocks") if k in wx)
    ways = [(w, tables + (f" ({used})" if used else ""), sum(wx.values())),
            (p, split, sum(px.values()))]  # fmt: skip

    if w.fits or p.fits:
        ways.sort(key=lambda e: (not e[0].fits, e[2]))  # stable: the whole tables first on a tie
    else:
        ways.reverse()  # neither fits: the chunks are refused, as before they were compared
    return dataclasses.replace(ways[0][0], compared=tuple((way, q.fits, q.peak, x, "") for q, way, x in ways))


def _least(p: Plan, r: RoundMemory) -> int:
    """A lower bound of round ``r``'s device set under any held-buffer strategy: its arguments
    and, unless it can run in more row blocks, its temporaries (nothing held is needed). 0 for an
    openings round, whose arguments include trees that recomputing replaces."""
    if any(r.name == openings_name(what) for what in OPENED):
        return 0
    blockable = held_name(r.table, r.name) in p.blockable
    return r.arguments + max(0, (0 if blockable else r.temporaries) - r.aliased)


def _held_strategies(p: Plan, airs, log_ns, config, device, host, may_park: bool, may_recompute: bool,
                     may_block: bool) -> Plan:  # fmt: skip
    """The plan with held buffers recomputed or parked and rounds in more row blocks, chosen
    greedily: while the plan does not fit, take the candidate that frees the most bytes from
    the binding round -- a tree it holds or builds (recomputed, when allowed: the copies a
    parked tree costs are more than one tree build; :attr:`jaxstark.rounds.Round.trees`),
    another buffer it holds without taking it (parked), or, for a round that sums over its rows
    (:attr:`jaxstark.rounds.Round.blocked`), 8 times its row blocks (up to the most; counted as
    the share of its temporaries that would go) -- and plan again, keeping the step only if the
    binding round shrank (or another round, no larger, binds now). Parking compiles nothing new;
    recomputing compiles the variant of the round that built the tree and of its openings, more
    row blocks the round again. Returns the first plan that fits, else the one whose binding
    round is smallest against its budget."""

    def ratio(q: Plan) -> float:
        return q.binding.total / q.budgets[q.binding.device].bytes

    trees: dict[str, int] = {}  # trees the plans so far may recompute (their held sizes as first seen)

    def candidates(q: Plan, chosen, tried) -> list:
        park, recompute, _ = chosen
        if may_recompute:  # a variant compiled since may hold trees of its own
            trees.update((n, b) for n, b in q.recomputable.items() if n not in trees)
        r, found = q.binding, []
        for n, b in r.resident:
            if n in park or n in recompute or n in tried:
                continue
            if n in trees:
                found.append((b, "recompute", n, 0))
            elif may_park and n in q.parkable:
                found.append((b, "park", n, 0))
        here = held_name(r.table, r.name)
        found += [(b, "recompute", n, 0) for n, b in trees.items()
                  if n.startswith(here + "[") and n not in recompute and n not in tried]  # fmt: skip
        now, most = q.blockable.get(here, (1, 1))
        if may_block and now < most and (here, min(most, 8 * now)) not in tried:
            k = min(most, 8 * now)
            found.append((int(r.temporaries * (1 - now / k)), "blocks", here, k))
        return found

    def replan(chosen) -> Plan:
        return _plan_units(airs, log_ns, config, device, p.chunks, p.groups, host, frozenset(chosen[0]), chosen[1],
                           chosen[2])  # fmt: skip

    best = search_held(p, lambda q: q.fits, ratio, lambda q: (q.binding.table, q.binding.name), candidates, replan)
    return dataclasses.replace(best, recomputable=trees if may_recompute else best.recomputable)


def _splits(air: AIR, log_rows: int, config: StarkConfig) -> bool:
    try:
        check_shape(air, log_rows, config, "chunk")
    except (ValueError, ShapeError):
        return False
    return True


def _grouped(airs, log_ns, config, device, chunks, fixed_group, host) -> Plan:
    """The plan with every split table's chunks in groups: of ``fixed_group`` chunks, or the
    largest group whose device set fits: all chunks at once when the closed-form model expects
    that to fit with room to spare and the plan confirms it; else estimated from the plan of
    groups of one chunk per device (what each round holds that another unit owns or that is
    held to the end stays; the rest grows with the group), confirmed by planning it, halved
    until it fits."""
    spread = len(device[1]).bit_length() - 1  # log2 of the devices a group may be split over
    # the smallest group: one chunk on each device it is split over (as many as the chunks allow)
    least = tuple(min(spread, k) for k in chunks)
    if not any(chunks):
        return _plan_units(airs, log_ns, config, device, chunks, least, host)
    if fixed_group is not None:
        g = fixed_group.bit_length() - 1
        return _plan_units(airs, log_ns, config, device, chunks, tuple(min(g, k) for k in chunks), host)
    if _one_group_fits(airs, log_ns, config, device, chunks, least, host):  # the model's first guess
        p = _plan_units(airs, log_ns, config, device, chunks, tuple(chunks), host)
        if p.fits:
            return p
    one = _plan_units(airs, log_ns, config, device, chunks, least, host)
    if not one.fits:
        return one
    groups = list(chunks)
    for r in one.rounds:
        if r.table is None or not chunks[one.tables[r.table].table]:
            continue
        t, scaled, room = one.tables[r.table].table, r.total - r.fixed, one.budgets[r.device].bytes - r.fixed
        if scaled > 0:
            groups[t] = min(groups[t], least[t] + max(0, (room // scaled).bit_length() - 1))
    while groups != list(least):
        p = _plan_units(airs, log_ns, config, device, chunks, tuple(groups), host)
        if p.fits:
            return p
        t = max(range(len(groups)), key=lambda i: groups[i] - least[i])
        groups[t] -= 1
    return one


def _one_group_fits(airs, log_ns, config, device, chunks, least, host) -> bool:
    """Whether the closed-form model (:mod:`jaxstark.memory.model`) expects every split table to
    fit in one group, with a fifth of the budget to spare: then that plan is tried first (one
    compilation instead of two when it fits)."""
    target = device[0]
    backend = "cpu" if target.platform == "cpu" else "gpu" if target.platform in ("gpu", "cuda", "rocm") else None
    if backend is None:
        return False
    budget = device_budget(target, config.vram_budget_mb).bytes
    return all(
        model(airs[t], log_ns[t], config, backend=backend, host_trace=host[t]).peak / (1 << least[t]) <= 0.8 * budget
        for t, k in enumerate(chunks)
        if k
    )


def _plan_units(airs, log_ns, config, device, chunks, groups, host, park: frozenset = frozenset(),
                recompute: dict | None = None, blocks: dict | None = None) -> Plan:  # fmt: skip
    """The plan of these units (the best of a few table orders), with the buffers named in
    ``park`` parked, the trees of ``recompute`` (name -> bytes when held) recomputed and the
    rounds of ``blocks`` (held_name(unit, round) -> row blocks) in those blocks."""
    recompute, blocks = recompute or {}, blocks or {}
    us = units(tuple(log_ns), chunks, groups)
    unit_airs = tuple(airs[u.table] for u in us)
    default, spread = device
    devices, meshes, policies = _placement(us, airs, config, default, spread)
    budgets, mine = {}, set()
    for i in (None, *devices):  # the devices of this process's units (another process plans its own)
        dev = default if i is None else devices[i]
        mesh = meshes.get(i)
        if any(d.process_index == jax.process_index() for d in (mesh.devices.flat if mesh is not None else [dev])):
            budgets[device_label(mesh, dev)] = device_budget(dev, config.vram_budget_mb)
            mine.add(i)

    def worst(rounds):
        return max(r.total / budgets[r.device].bytes for r in rounds)

    def run(order):  # an order already interleaved over the devices
        return _run_planner(airs, log_ns, chunks, groups, config, default, devices, meshes, order, host, park,
                            frozenset(recompute), blocks)  # fmt: skip

    devset = functools.partial(_devset, meshes, devices)
    statement = tuple(range(len(us)))
    best_order = _interleaved(statement, devset)
    best = run(best_order)
    # (under jax.distributed statement order: the processes' reads of the units they share must
    # come in one order, and with tables shared out each would weigh them by its own rounds)
    if len(us) > 1 and jax.process_count() == 1:
        weight = dict.fromkeys(statement, 0)
        for r in best.rounds:
            if r.table is not None:
                weight[r.table] = max(weight[r.table], r.total)
        heavy_first = tuple(sorted(statement, key=lambda i: -weight[i]))
        for order in (heavy_first, heavy_first[::-1]):
            order = _interleaved(order, devset)
            if order != best_order:
                walked = run(order)
                if worst(walked.rounds) < worst(best.rounds):
                    best_order, best = order, walked
    tables = tuple(
        TablePlan(i, air.name + u.words + (f" of {1 << chunks[u.table]}" if u.split else ""), u.log_rows, air.width,
                  air.num_aux_columns, config.blowup, device_label(meshes.get(i), devices[i]), policies[i], u.table,
                  u.count)
        for i, (air, u) in enumerate(zip(unit_airs, us, strict=True))
    )  # fmt: skip
    parked = tuple((n, b, best.copies_in.get(n, 0)) for n, b in sorted(best.parkable.items()) if n in park)
    recomputed = tuple((n, b, _rebuilt_in(n)) for n, b in sorted(recompute.items()))
    return Plan(tables, tuple(best.rounds), budgets, best_order, devices, default, tuple(chunks), tuple(groups), meshes,
                host, parked, dict(best.parkable), recomputed=recomputed,
                recomputable=dict(best.recomputable), row_blocks=tuple(sorted(blocks.items())),
                blockable=dict(best.blocked), others=tuple(sorted(set(devices) - mine)))  # fmt: skip


def _devset(meshes: dict, devices: dict, unit: int) -> frozenset:
    """The devices ``unit`` runs on: its mesh's, else its one device."""
    return frozenset(meshes[unit].devices.flat) if unit in meshes else frozenset([devices[unit]])


def _interleaved(order: tuple, devset) -> tuple:
    """``order`` with the units of distinct devices taken in turn (each device's units keep their
    order): the first unit of every device, then the second, ... -- so that the waves of rounds
    2-5 (:func:`jaxstark.schedule.waves`) hold as many devices as they can. What a device holds
    does not change: only its own units' buffers count on it, in the same order. Unchanged when
    two units' devices overlap without being the same (a group of row chunks over a mesh) and
    under ``jax.distributed`` (where waves hold one unit)."""
    sets = {devset(i) for i in order}
    if jax.process_count() > 1 or any(a != b and a & b for a in sets for b in sets):
        return tuple(order)
    rank, seen = {}, {}
    for i in order:
        d = devset(i)
        rank[i] = seen.get(d, 0)
        seen[d] = rank[i] + 1
    return tuple(sorted(order, key=lambda i: rank[i]))  # stable: the order within each rank kept


def _rebuilt_in(tree: str) -> str:
    """The round that builds a recomputed tree (a held name) again: its commitment's openings."""
    name = tree.split(": ", 1)[1].rsplit("[", 1)[0]
    return openings_name(registered(name).opened)


def plan(
    tables: AIR | Sequence,
    rows=None,
    config: StarkConfig | None = None,
    *,
    device: jax.Device | None = None,
    devices: Sequence[jax.Device] | None = None,
    progress=None,
    host_traces: bool | Sequence[bool] | None = None,
) -> Plan:
    """Plan a proof without running it: ``plan(air, rows, config)`` for one table or
    ``plan([(air, rows), ...], config=config)``, where ``rows`` is a trace (its shape is used)
    or the log2 of the row count. Compiles every round for its device (the executables are
    reused by :func:`jaxstark.prove`); dispatches nothing. ``progress`` is called with a
    :class:`~jaxstark.progress.RoundEvent` for every round compiled. ``host_traces`` (one flag,
    or one per table): the traces will be in host memory (numpy), so each is on the device only
    as the argument of the rounds that take it; default: inferred from each ``rows`` -- a numpy
    trace is on the host, anything else (a JAX array, a height) on the device for the whole
    proof, which is what :func:`jaxstark.prove` assumes for such traces. The plan says which
    (:meth:`Plan.trace_residency`)."""
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
    if host_traces is None:
        host = tuple(isinstance(entry[1], np.ndarray) for entry in entries)
    elif isinstance(host_traces, (bool, np.bool_)):
        host = (bool(host_traces),) * len(entries)
    else:
        host = tuple(host_traces)
        if len(host) != len(entries) or not all(isinstance(h, (bool, np.bool_)) for h in host):
            raise TypeError(f"plan: host_traces must be a bool or one per table ({len(entries)}); got {host!r:.80}")
    chunks = table_chunks(airs, log_ns, config, "plan")
    return plan_checked(tuple(airs), tuple(log_ns), config, device, chunks, devices, progress, host)
