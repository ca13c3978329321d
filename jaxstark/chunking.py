"""Row chunks: a tall row-local table proven as several tables of the same AIR.

A table of ``2^log_n`` rows split into ``2^k`` chunks of ``2^(log_n - k)`` rows is proven as
``2^k`` *units*: each chunk commits to its own rows and does rounds 2-5 on its own fork of the
transcript, exactly like a table of a multi-table proof; its LogUp contributions (if the AIR has
interactions) add up with everyone else's on the buses. Only row-local AIRs can be chunked
(a next-row constraint would cross the chunk boundary), and only AIRs without boundary
constraints (a boundary row would belong to one chunk only).

The statement binds the layout: for a chunked table the transcript absorbs ``("chunks", k)``
right after the table's shape, so a proof cannot be replayed with another split. An unchunked
table (``k = 0``) absorbs nothing extra, so a one-chunk proof is byte for byte the unchunked
proof.

How many chunks: ``JAXSTARK_MAX_CHUNK_ROWS_LOG2`` (environment) or
``StarkConfig.max_chunk_rows_log2`` caps the chunk height; a table taller than the cap is split
into chunks of exactly the cap. ``"auto"`` splits a row-local table only when the plan of the
whole proof is over the budget, into the tallest power-of-two chunks whose plan fits (see
:func:`jaxstark.memory.plan.plan_checked`). Without a cap nothing is split.

Groups: the chunks of a split table are proven ``g`` at a time (``g`` a power of two): the
rounds run under ``vmap`` over a ``(g, chunk_rows, cols)`` slice of the trace, each chunk on its
own fork of the transcript with its own commitments; the commit rounds absorb the ``g`` roots in
chunk order, so the transcript -- and the proof -- does not depend on ``g``. ``g`` is the
planner's choice (the largest group whose device set fits the budget: all chunks when the
closed-form model expects them to fit, else estimated from the plan of groups of one chunk per
device; confirmed by planning it), or ``StarkConfig.chunk_group`` /
``JAXSTARK_CHUNK_GROUP``. A group is a *unit* of the schedule and of the plan.

Devices: a group is split along its group axis over a mesh of the devices given to
``prove``/``plan`` (default: every device of the target platform -- with ``jax.distributed``,
of every process), as many as it has chunks (a power of two): each device proves its share of
the group's chunks (``jax.sharding.NamedSharding`` over the mesh axis ``"chunks"``; the domain
tables, challenges and transcripts replicated), and the planner's figures are per device.
Tables that are not split get a device of this process each while there are enough, else are
balanced over them by estimated work (:func:`jaxstark.memory.plan._placement`); each device
holds its own tables' buffers, and the rounds 2-5 of units on distinct devices are dispatched
together (:func:`jaxstark.schedule.waves`).

Data flow (``jaxstark.schedule.schedule`` over units, not tables)::

    statement: per table (AIR, shape, [chunks,] public inputs)
    units: table t -> groups of chunks (t, 0..g-1), (t, g..2g-1), ... in statement order;
           chunk j of table t forks with its slot index (its position among all chunks)
    main roots of every unit -> LogUp challenges -> aux roots and bus sums of every unit
    -> rounds 2-5 of each unit on its forks

Memory: when a table has more than one group, a group's main and aux commitments are dropped as
soon as their roots (and bus sums) are absorbed, and computed again -- the same executables, the
same bytes -- right before its rounds 2-5 ("trace commit again", "aux commit again" in the
plan), so only one group's commitments are held at a time, plus one set of domain tables per
split table and the caller's trace. The price is one more trace (and aux) commitment per chunk.
"""

from __future__ import annotations

import dataclasses

from jaxstark.air import AIR
from jaxstark.config import StarkConfig, env_knob
from jaxstark.field.host import HostVal

__all__ = [
    "Unit",
    "CHUNK_ENV",
    "GROUP_ENV",
    "chunk_log",
    "units",
    "slots",
    "check_chunkable",
    "max_chunk_log",
    "chunk_group",
]

CHUNK_ENV = "JAXSTARK_MAX_CHUNK_ROWS_LOG2"
GROUP_ENV = "JAXSTARK_CHUNK_GROUP"


@dataclasses.dataclass(frozen=True)
class Unit:
    """One proven piece: ``count`` consecutive chunks of statement table ``table`` starting at
    chunk ``chunk`` (rows ``[chunk * 2^log_rows, (chunk + count) * 2^log_rows)``), proven
    together under ``vmap`` when ``split``; or a whole table (``split`` False)."""

    table: int
    chunk: int
    log_rows: int
    count: int = 1
    split: bool = False

    @property
    def rows(self) -> slice:
        n = 1 << self.log_rows
        return slice(self.chunk * n, (self.chunk + self.count) * n)

    @property
    def words(self) -> str:
        """``""`` for a whole table, else `` chunk 5`` or `` chunks 4-7``."""
        if not self.split:
            return ""
        return f" chunk {self.chunk}" if self.count == 1 else f" chunks {self.chunk}-{self.chunk + self.count - 1}"


def max_chunk_log(config: StarkConfig) -> int | str | None:
    """The chunk-height cap (log2 rows) from the environment or the config; ``"auto"``; or None
    (no cap)."""
    meaning = "an integer in [1, 31] (log2 of the chunk height) or 'auto'"
    env = env_knob(CHUNK_ENV, int, lambda v: 1 <= v <= 31, meaning, keywords=("auto",))
    return config.max_chunk_rows_log2 if env is None else env


def chunk_group(config: StarkConfig) -> int | None:
    """Chunks per ``vmap`` group from the environment or the config; None: the planner's choice."""
    env = env_knob(GROUP_ENV, int, lambda v: v >= 1 and not v & (v - 1), "a power of two >= 1 (chunks per group)")
    return config.chunk_group if env is None else env


def check_chunkable(air: AIR, where: str) -> None:
    """Raise ValueError, naming the table, if ``air`` cannot be split into row chunks."""
    if not chunkable(air):
        reason = "reads the next row" if not air.row_local else "has boundary constraints, which pin rows of the table"
        raise ValueError(
            f"{where}: {air.name} {reason}, so it cannot be split into row chunks (only row-local tables without "
            "boundary constraints can); raise the chunk height cap or prove it whole"
        )


def chunkable(air: AIR) -> bool:
    """Whether ``air`` can be split into row chunks (row-local, no boundary constraints)."""
    return air.row_local and not air.boundary([HostVal(0)] * air.num_public_inputs)


def chunk_log(air: AIR, log_n: int, config: StarkConfig, where: str) -> int | None:
    """log2 of the number of chunks table ``air`` of ``2^log_n`` rows is split into (0: whole);
    None under ``"auto"`` for a table that could be split (the planner decides)."""
    cap = max_chunk_log(config)
    if cap == "auto":
        return None if chunkable(air) and log_n > 1 else 0
    if cap is None or log_n <= cap:
        return 0
    check_chunkable(air, where)
    return log_n - cap


def units(log_ns: tuple[int, ...], chunks: tuple[int, ...], groups: tuple[int, ...] = ()) -> tuple[Unit, ...]:
    """Every table's groups of chunks in statement order (``groups``: per table, log2 of the
    chunks per group; default one chunk per group)."""
    groups = tuple(groups) or (0,) * len(chunks)
    out = []
    for t, (log_n, k, g) in enumerate(zip(log_ns, chunks, groups, strict=True)):
        if not k:
            out.append(Unit(t, 0, log_n))
            continue
        if not 0 <= g <= k:
            raise ValueError(f"table {t}: a group of 2^{g} chunks, but the table has 2^{k}")
        out += [Unit(t, j, log_n - k, 1 << g, True) for j in range(0, 1 << k, 1 << g)]
    return tuple(out)


def slots(chunks: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """``(table, chunk)`` of every chunk in statement order (what a verifier knows before it has
    read the heights); a chunk's position here is the index of its transcript fork."""
    return tuple((t, j) for t, k in enumerate(chunks) for j in range(1 << k))
