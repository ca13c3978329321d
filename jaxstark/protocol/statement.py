"""What a statement binds besides the transcript: its public inputs as field elements, and the
buses' balance over the tables."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxstark.field.goldilocks import P
from jaxstark.logup import bus_layout

__all__ = ["public_array", "bus_balance"]


def public_array(air, public_inputs: Sequence[int]) -> np.ndarray:
    """Public inputs as canonical ``uint64``, checked against the AIR's declared count."""
    public_inputs = tuple(public_inputs)
    if len(public_inputs) != air.num_public_inputs:
        raise ValueError(f"{air.name} takes {air.num_public_inputs} public input(s), got {len(public_inputs)}")
    for i, v in enumerate(public_inputs):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < P:
            raise ValueError(f"public input {i} must be a canonical field element (int in [0, p)), got {v!r}")
    return np.array([int(v) for v in public_inputs], dtype=np.uint64).reshape(-1)


def bus_balance(airs: Sequence, sums: Sequence[np.ndarray]) -> dict[str, tuple[int, int, int]]:
    """Every bus's total contribution over the tables (an extension element as three ints; zero
    when the bus balances). ``sums[t]`` holds table ``t``'s contributions, one per bus in name
    order. (Extension addition is coordinate-wise.)"""
    totals: dict[str, tuple[int, int, int]] = {}
    for air, table_sums in zip(airs, sums, strict=True):
        for lay, value in zip(bus_layout(air), np.asarray(table_sums).tolist(), strict=True):
            prev = totals.get(lay.bus, (0, 0, 0))
            totals[lay.bus] = tuple((x + int(y)) % P for x, y in zip(prev, value, strict=True))
    return totals
