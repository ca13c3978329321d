"""What fits a card: the budget of a card of a given size, and the chunking frontier.

A card's budget is what :func:`jaxstark.memory.budget.device_budget` gives on it under JAX's
default posture: the allocator pool (``POOL_FRACTION`` = 75% of the card, JAX's default
preallocation) times the preallocated headroom (:data:`~jaxstark.memory.budget.HEADROOM`). On
the H200 (139.8 GiB of device memory) this gives 94.37 GiB, the budget measured there
(``benchmarks/RESULTS.md``). :data:`CARDS` names the usual sizes.

The **chunking frontier** of a row-local table on a card (:func:`frontier`): for each chunk
height, the largest group of chunks proven at once under ``vmap`` whose device set the
closed-form model (:func:`jaxstark.memory.model.model`) puts within the budget. It is the
model's answer, compiled nothing; :func:`jaxstark.plan` (what ``prove`` admits with) confirms it
for a real shape.
"""

from __future__ import annotations

import dataclasses

from jaxstark.air import AIR
from jaxstark.config import StarkConfig
from jaxstark.memory.budget import HEADROOM
from jaxstark.memory.model import model

__all__ = ["CARDS", "POOL_FRACTION", "card_budget", "Frontier", "frontier", "best_split"]

POOL_FRACTION = 0.75  # JAX preallocates 75% of the card (XLA_PYTHON_CLIENT_MEM_FRACTION)
GIB = 2**30

# device memory (GiB) of common cards, by the name users know them by
CARDS: dict[str, float] = {
    "24 GB (RTX 4090)": 24.0,
    "32 GB (RTX 5090)": 32.0,
    "80 GB (A100/H100)": 80.0,
    "141 GB (H200)": 139.8,  # what the H200 reports: bytes_limit 112,583,507,968 B = 75% of it
}


def card_budget(gib: float) -> int:
    """The budget in bytes of a card with ``gib`` GiB of device memory, under JAX's default
    (preallocated) posture."""
    if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not gib > 0:
        raise ValueError(f"card_budget: the card's memory must be a positive number of GiB, got {gib!r}")
    return int(gib * GIB * POOL_FRACTION * HEADROOM)


@dataclasses.dataclass(frozen=True)
class Frontier:
    """For one chunk height: the largest group that fits (0: not even one chunk) and its peak."""

    chunk_rows_log2: int
    chunks: int
    group: int
    peak: int  # the modelled device set of that group (of one chunk when group is 0)

    @property
    def fits(self) -> bool:
        return self.group > 0


def frontier(
    air: AIR | None, log_n: int, config: StarkConfig, budget: int, *, backend: str = "gpu", lowest: int = 10, **shape
) -> list[Frontier]:
    """For every chunk height from the whole table (``2^log_n`` rows) down to ``2^lowest`` rows:
    the largest power-of-two group of chunks whose modelled device set is within ``budget``
    bytes. ``shape``: the width etc. of a hypothetical table (as for :func:`model`)."""
    out = []
    for h in range(log_n, min(lowest, log_n) - 1, -1):
        chunks = g = 1 << (log_n - h)
        while True:
            m = model(air, log_n, config, backend=backend, chunk_rows_log2=h, group=g, **shape)
            if m.peak <= budget or g == 1:
                break
            g //= 2
        out.append(Frontier(h, chunks, g if m.peak <= budget else 0, m.peak))
    return out


def best_split(points: list[Frontier]) -> Frontier | None:
    """The split the frontier suggests: the tallest chunks that fit, and the largest group of
    them (None when no height fits)."""
    return next((f for f in points if f.fits), None)
