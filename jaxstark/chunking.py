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
into chunks of exactly the cap. Without a cap nothing is split.

Data flow (``jaxstark.prover.schedule`` over units, not tables)::

    statement: per table (AIR, shape, [chunks,] public inputs)
    units: table t -> chunks (t, 0) ... (t, 2^k - 1), in statement order; unit u forks with index u
    main roots of every unit -> LogUp challenges -> aux roots and bus sums of every unit
    -> rounds 2-5 of each unit on its fork

Memory: a chunk's main and aux commitments are dropped as soon as their roots (and bus sums) are
absorbed, and computed again -- the same executables, the same bytes -- right before its rounds
2-5 ("trace commit again", "aux commit again" in the plan), so only one chunk's commitments are
held at a time, plus one set of domain tables per split table and the caller's trace. The price
is one more trace (and aux) commitment per chunk. Not built yet: groups of ``k`` chunks under
``vmap`` with ``k`` chosen by the planner, the automatic choice of the chunk height from the
plan, and spreading groups over several devices and processes.
"""

from __future__ import annotations

import dataclasses
import os

from jaxstark.air import AIR, Val
from jaxstark.config import StarkConfig

__all__ = ["Unit", "CHUNK_ENV", "chunk_log", "units", "slots", "check_chunkable", "max_chunk_log"]

CHUNK_ENV = "JAXSTARK_MAX_CHUNK_ROWS_LOG2"


@dataclasses.dataclass(frozen=True)
class Unit:
    """One proven piece: chunk ``chunk`` of statement table ``table`` (rows
    ``[chunk * 2^log_rows, (chunk + 1) * 2^log_rows)``)."""

    table: int
    chunk: int
    log_rows: int

    @property
    def rows(self) -> slice:
        n = 1 << self.log_rows
        return slice(self.chunk * n, (self.chunk + 1) * n)


def max_chunk_log(config: StarkConfig) -> int | None:
    """The chunk-height cap (log2 rows) from the environment or the config; None: no cap."""
    env = os.environ.get(CHUNK_ENV)
    if env is not None and env.strip():
        try:
            value = int(env)
        except ValueError:
            raise ValueError(f"{CHUNK_ENV}={env!r} is not an integer (log2 of the chunk height)") from None
        if not 1 <= value <= 31:
            raise ValueError(f"{CHUNK_ENV}={env!r} must be in [1, 31] (log2 of the chunk height)")
        return value
    return config.max_chunk_rows_log2


def check_chunkable(air: AIR, where: str) -> None:
    """Raise ValueError, naming the table, if ``air`` cannot be split into row chunks."""
    if not air.row_local:
        raise ValueError(
            f"{where}: {air.name} reads the next row, so it cannot be split into row chunks (only row-local "
            "tables can); raise the chunk height cap or prove it whole"
        )
    if air.boundary([Val.const(0)] * air.num_public_inputs):
        raise ValueError(
            f"{where}: {air.name} has boundary constraints, which pin rows of the whole table, so it cannot be split "
            "into row chunks; raise the chunk height cap or prove it whole"
        )


def chunk_log(air: AIR, log_n: int, config: StarkConfig, where: str) -> int:
    """log2 of the number of chunks table ``air`` of ``2^log_n`` rows is split into (0: whole)."""
    cap = max_chunk_log(config)
    if cap is None or log_n <= cap:
        return 0
    check_chunkable(air, where)
    return log_n - cap


def units(log_ns: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[Unit, ...]:
    """Every table's chunks in statement order."""
    return tuple(
        Unit(t, j, log_n - k) for t, (log_n, k) in enumerate(zip(log_ns, chunks, strict=True)) for j in range(1 << k)
    )


def slots(chunks: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """``(table, chunk)`` of every unit in statement order (what a verifier knows before it has
    read the heights)."""
    return tuple((t, j) for t, k in enumerate(chunks) for j in range(1 << k))
