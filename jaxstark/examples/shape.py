"""A stand-in table of a given shape, for planning tables that do not exist yet.

``ShapeTable(width=c, aux_columns=a, degree=d)`` has ``c`` main columns, one transition
constraint of degree ``d`` per column (``next[i] - cur[i]^d``, so it reads the next row; with
``local=True``, ``cur[i]^d - cur[i+1]``, a row-local table that can be split into row chunks)
and ``a`` aux columns (``a`` sends of one column each on one bus, one per aux column). Its traces
are not meant to satisfy it: it exists so that ``jaxstark.plan`` and the memory model can be
asked about any (rows, columns, aux columns, blowup) without writing an AIR.
"""

from __future__ import annotations

import equinox as eqx

from jaxstark.air import AIR, Val
from jaxstark.logup import Interaction

__all__ = ["ShapeTable", "shape_config"]


def shape_config(blowup: int):
    """The config the memory model's recorded figures use (``benchmarks/fit_memory_model.py``):
    40 queries, 16 grinding bits, FRI final degree 64, BLAKE3."""
    from jaxstark.config import StarkConfig

    return StarkConfig(blowup=blowup, num_queries=40, grinding_bits=16, fri_final_degree=64)


class ShapeTable(AIR):
    width: int = eqx.field(static=True, default=8)
    aux_columns: int = eqx.field(static=True, default=0)
    degree: int = eqx.field(static=True, default=2)
    local: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        if not isinstance(self.width, int) or self.width < 1:
            raise ValueError(f"ShapeTable.width must be a positive int, got {self.width!r}")
        if not isinstance(self.aux_columns, int) or not 0 <= self.aux_columns <= 1 << 12:
            raise ValueError(f"ShapeTable.aux_columns must be an int in [0, 4096], got {self.aux_columns!r:.40}")
        if self.degree not in (1, 2, 3, 4, 5):
            raise ValueError(f"ShapeTable.degree must be 1 ... 5, got {self.degree!r}")
        if not isinstance(self.local, bool):
            raise ValueError(f"ShapeTable.local must be a bool, got {self.local!r}")

    @property
    def row_local(self) -> bool:
        return self.local

    @property
    def interactions_per_column(self) -> int:
        return 1

    def constraint_degrees(self) -> tuple[int, ...]:
        return (self.degree,) * self.width

    def transition(self, cur, nxt, periodic, public) -> list[Val]:
        if self.local:
            return [cur[i] ** self.degree - cur[(i + 1) % self.width] for i in range(self.width)]
        return [nxt[i] - cur[i] ** self.degree for i in range(self.width)]

    def interactions(self) -> list[Interaction]:
        return [Interaction.send("shape", lambda row, j=j: [row[j % self.width]]) for j in range(self.aux_columns)]
