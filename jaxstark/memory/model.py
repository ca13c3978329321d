"""The closed-form memory model: a table's device sets as arithmetic on its shape, compiling nothing.

:func:`model` mirrors :func:`jaxstark.schedule.schedule` for one table -- the same rounds, the same
buffers held between them, the same arguments and outputs, each a named term computed exactly
from the shape -- and adds each round's XLA temporaries as a linear form in the round's data
sizes, with coefficients per backend (:data:`TEMP_COEFFS`) fitted to ``memory_analysis()`` of
the compiled rounds by ``benchmarks/fit_memory_model.py`` (which records the figures it was
fitted on in ``benchmarks/data/``; ``tests/test_memory_model.py`` holds the model to them and to
live plans). On a GPU it replays its buffers through the allocator's pool in the schedule's
order, as the planner replays the schedule's (:mod:`jaxstark.memory.pool`, JAX's default
allocator), and adds what the pool's whole chunks hold beyond the buffers. A sweep over
thousands of shapes takes milliseconds: this is the model for what-if questions ("how wide a
table fits an 80 GB card at blowup 4?"); :func:`jaxstark.plan` remains the authority that
admission uses.

Notation: ``n`` rows, ``L = n * blowup`` LDE rows, ``c`` main columns, ``a`` aux (extension)
columns, ``P`` composition parts, ``q`` queries. A base element is 8 bytes, an extension element
24, a digest 32; a Merkle tree over ``m`` leaves is a ``2m x 32``-byte node array.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import jax
import numpy as np

from jaxstark import merkle, transfer
from jaxstark.air import AIR
from jaxstark.config import StarkConfig
from jaxstark.kernels import composition as composition_kernel
from jaxstark.memory import pool as allocator_pool
from jaxstark.memory.executor import PARK_MIN_BYTES
from jaxstark.poly import COLUMN_BLOCK
from jaxstark.progress import format_bytes
from jaxstark.protocol.layout import fri_num_layers
from jaxstark.rounds import (
    AUX_COMMIT,
    COMPOSITION,
    COMPOSITION_TREE,
    DEEP,
    FORK,
    FRI_FINAL,
    FRI_LAYER,
    LOGUP_CHALLENGES,
    MIN_BLOCK_ROWS,
    OPENED,
    OPENINGS,
    OUT_OF_DOMAIN,
    QUERIES,
    TRACE_COMMIT,
    fri_layer_name,
    openings_name,
    r3_ood,
    r4_deep,
    r4_fri_layer,
    registered,
)
from jaxstark.transcript import MAX_LABEL, grind_batch

__all__ = [
    "ModelRound", "TableModel", "model", "within", "search_held", "buffer_name", "features", "round_features",
    "fri_layer_sizes", "kernel_sums", "FEATURES", "ROUND_FEATURES", "TEMP_COEFFS", "FIT_QUALITY",
    "TREE_BUILD_COEFFS", "STRATEGIES",
]  # fmt: skip

OOD_BIG_ROWS = 1 << 20  # rows from which XLA:GPU keeps the out-of-domain products (the "n*cp*k" feature)

# What each round's temporaries are fitted on: the data sizes the round computes over (element
# counts; a coefficient is bytes per element). "grind" is the grinding batch (nonces), "1" a constant.
# A column reduction (jaxstark.poly) takes a batch of c < 2 * COLUMN_BLOCK columns whole and a
# wider one COLUMN_BLOCK at a time in a loop, its c % COLUMN_BLOCK remainder after it: "cw" is
# the columns it holds at once (c, or COLUMN_BLOCK), "cb" the loop's block (COLUMN_BLOCK, or 0
# when reduced whole), "cu" what is reduced outside the loop (c whole, or the remainder).
# Out-of-domain on a CUDA device is one kernel pass (jaxstark.kernels.ood): it holds its
# per-block partial sums (16 x 16 words per block of 256 rows and 16 columns: half a byte per
# coefficient, "nb*c", "nb*a", "nb*P") and two small power tables; "n*cp*k" (the products XLA:GPU
# kept from OOD_BIG_ROWS rows before the kernel) fits to almost nothing. On the CPU it sums
# blocks of r3_ood.OOD_BLOCK_ROWS coefficients one after another, so what it holds follows the
# block: "nb" is the rows of one block (n elsewhere, one block). DEEP likewise computes blocks
# of rows one after another on the CPU (r4_deep.row_blocks): "Ld" is the rows of one block (L
# elsewhere). DEEP is the larger of the loop's block ("Ld*cb": products and flags of a block of
# columns) and what is reduced after it or whole ("Ld", "Ld*cu", "Ld*a"). On a CUDA device DEEP
# is one kernel pass (jaxstark.kernels.deep: each row's numerator and denominator, six words),
# then XLA's inversion of the denominators and their product: about 80 bytes per LDE row
# ("Ld", a few more per part and aux column), whatever the width. The composition, where
# XLA fuses it, holds the values of many of the ``t`` transition constraints at once ("L*t",
# "L*t*P": a degree-d constraint takes d - 1 = P products); how many XLA:GPU's schedule keeps
# live is no function of the shape that the grid shows (about 1.4 words per row, constraint and
# part on most shapes, 0.2 to 2.2 on others, not monotone in the rows). Where the composition
# kernel sums them (on a CUDA device, an AIR it takes: jaxstark.kernels.composition.supported),
# the round holds the kernel's three sums and what XLA computes besides them (the boundary and
# aux quotients), whatever the constraints: "Lk" is L there and 0 elsewhere, and "L*t", "L*t*P"
# are 0 there. "m" is the evaluations of the FRI layer a round starts from (round_features):
# every FRI layer is one fit. "Lb" is min(L, merkle.BLOCK) and "Lb*c", "Lb*a", "Lb*P" it times
# the words of a leaf's row (in columns or extension columns): the plain-jnp tree hashes at most
# merkle.BLOCK leaves at a time, so its working set stops growing with L there (the CPU path;
# the GPU's tree kernels have their own); "Lbl" is Lb where the tree has more leaves than that
# and hashes them in a loop (which holds more than one block hashed whole), else 0.
ROUND_FEATURES: dict[str, tuple[str, ...]] = {
    TRACE_COMMIT: ("L", "L*logL", "L*c", "n*c", "Lb", "Lbl", "Lb*c", "1"),
    LOGUP_CHALLENGES: ("1",),
    AUX_COMMIT: ("L", "L*a", "n*c", "n*a", "Lb", "Lbl", "Lb*a", "1"),
    FORK: ("1",),
    COMPOSITION: ("L", "Lk", "L*t", "L*t*P", "L*a", "L*P", "n*P", "Lb", "Lbl", "Lb*P", "1"),
    OUT_OF_DOMAIN: ("n", "nb", "nb*c", "nb*cw", "n*cp*k", "nb*a", "nb*P", "1"),
    DEEP: ("L", "L*c", "Ld", "Ld*c", "Ld*cb", "Ld*cu", "Ld*a", "Ld*P", "1"),
    FRI_LAYER: ("m", "1"),
    FRI_FINAL: ("m", "1"),
    QUERIES: ("grind", "1"),
    OPENINGS: ("L", "1"),
}
FEATURES = ("n", "L", "Lk", "L*logL", "L*c", "L*t", "L*t*P", "L*a", "L*P", "n*c", "n*a", "n*P",
            "Ld", "Ld*c", "Ld*cb", "Ld*cu", "Ld*a", "Ld*P",
            "nb", "nb*c", "nb*cw", "nb*a", "nb*P", "n*cp*k", "Lb", "Lbl", "Lb*c", "Lb*a", "Lb*P",
            "grind", "m", "1")  # fmt: skip

# Per backend, per round: the temporaries as the largest of one or two linear forms (bytes per
# unit of each feature), fitted by ``python benchmarks/fit_memory_model.py fit`` on that
# backend's recorded figures (benchmarks/data/memory_<backend>.json). Paste its output here.
# fmt: off
TEMP_COEFFS: dict[str, dict[str, tuple[dict[str, float], ...]]] = {
    "cpu": {
        "DEEP": ({'L*c': 2.508, 'Ld*cu': 5.352, 'Ld*P': 191.5, '1': 28380.0},),
        "FRI final": ({'m': 263.2, '1': 18000.0},),
        "FRI layer": ({'m': 42.72, '1': 308900.0},),
        "aux commit": ({'L*a': 5.785, 'n*c': 0.663, 'n*a': 128.1, 'Lb': 38.06, '1': 377100.0},),
        "composition": (
            {'L': 15.82, 'L*t': 8.179, 'L*t*P': 0.087, 'L*a': 30.57, '1': 123500.0},
            {'L*P': 41.15, 'Lbl': 331.5, 'Lb*P': 95.16},
        ),
        "fork": ({'1': 456.0},),
        "logup challenges": ({'1': 1280.0},),
        "openings": ({'L': 0.0013, '1': 0.2083},),
        "out-of-domain": ({'n': 88.73, 'nb': 107.9, 'nb*cw': 54.06, 'nb*a': 19.55},),
        "queries": ({'grind': 368.1},),
        "trace commit": (
            {'L*logL': 0.04376, 'L*c': 6.519, 'Lb': 264.9, 'Lbl': 105.0, 'Lb*c': 3.691},
            {'L*c': 2.464, 'Lb*c': 18.49},
        ),
    },
    "gpu": {
        "DEEP": ({'Ld': 70.53, 'Ld*cu': 0.5768, 'Ld*a': 2.75, 'Ld*P': 6.363},),
        "FRI final": ({'m': 191.8},),
        "FRI layer": ({'m': 25.5, '1': 5128.0},),
        "aux commit": ({'L*a': 2.796, 'n*a': 51.89},),
        "composition": ({'Lk': 57.84, 'L*a': 14.94, 'n*P': 1.364, 'Lb': 3.884, 'Lb*P': 47.3},),
        "fork": ({'1': 1536.0},),
        "logup challenges": ({'1': 1536.0},),
        "openings": ({'L': 5.079e-05, '1': 35.24},),
        "out-of-domain": (
            {'n': 0.1152, 'nb*c': 0.5019, 'n*cp*k': 0.01007, 'nb*a': 0.6746, 'nb*P': 0.4843, '1': 38060.0},
        ),
        "queries": ({'grind': 288.0},),
        "trace commit": ({'L*logL': 0.01632, 'L*c': 0.02588, 'n*c': 0.9019},),
    },
}
# fmt: on

# How well each backend's fit matches XLA (peak of the device set, worst relative error), and
# on what -- reported with every model (TableModel.__str__).
FIT_QUALITY = {
    "cpu": "peak within 12.4% of XLA on 22 held-out shapes (9.2% on the 14 fitted; 2^8-2^16 rows, 2-400 columns, "
    "blowup 2-8), 2-core AMD EPYC CPU, jax 0.10.2, recorded 2026-12-04 (the out-of-domain sums in blocks of 4096); "
    "every round's device set within 26% on every recorded shape (trace commit 12.4%, out-of-domain 17.2%, DEEP "
    "25.7%), which matters where a round other than the grinding binds (few grinding bits)",
    "gpu": "peak within 0.7% of XLA on 20 held-out shapes (0.2% on the 12 fitted; 2^12-2^22 rows, 2-600 "
    "columns, blowup 2-4), H100, jax 0.11.2, recorded 2026-12-07 (the composition kernel summing every "
    "shape's constraints, in launches of 32, and the aux quotient in blocks of rows; each row's DEEP numerator "
    "and denominator in one kernel pass; the interpolation's coefficients put in natural order in place; the "
    "Merkle kernels, FRI layers up to 2^21 scanned with the FRI step kernel, the out-of-domain, power-table, "
    "inversion and sponge kernels, grinding batches of 2^18); model/XLA 0.993-1.003 (fitted 0.998-1.000), the "
    "allocator pool's whole chunks replayed as the planner replays them; every round's device set within 4.1% "
    "on every recorded shape (the composition 4.1%, the trace commit 2.6%, DEEP 2.5%, the aux commit 1.4%, "
    "the out-of-domain round, FRI, the queries and openings within 0.4%)",
}


# What building one Merkle tree again holds besides the tree (a recomputed tree's openings, the
# composition's tree built apart), as one linear form in "Lb" (the tree's leaves, at most
# merkle.BLOCK: the jnp builder hashes a block of leaves at a time) and "Lb*w" (times the words
# of a leaf's row). CPU: fitted on 25 rebuilds of 6 shapes (2^10-2^14 rows, 2-200 columns,
# blowup 2-4; benchmarks/bench_model_strategies.py --fit), within -29% / +47% of those
# temporaries. GPU: not recorded; the tree kernels write the node buffer in place, so only the
# tree is counted.
TREE_BUILD_COEFFS: dict[str, dict[str, float]] = {
    "cpu": {"Lb": 348.0, "Lb*w": 17.29},
    "gpu": {},
}

# What the model (and the planner) may do with buffers held between rounds: park them in host
# memory, recompute Merkle trees where they are opened, run a round in more blocks of rows.
STRATEGIES = ("park", "recompute", "blocks")


def features(
    log_n: int,
    blowup: int,
    c: int,
    a: int,
    parts: int,
    grinding_bits: int = 16,
    backend: str = "cpu",
    constraints: int | None = None,
    summed: bool = False,
    ood_blocks: int | None = None,
    deep_blocks: int | None = None,
) -> dict[str, int]:
    """The quantities of :data:`FEATURES` for one shape on ``backend``: ``constraints`` transition
    constraints (default: one per column), their sum computed by the composition kernel when
    ``summed``; the out-of-domain round and DEEP in ``ood_blocks`` and ``deep_blocks`` blocks of
    rows (default: as the round cuts them on ``backend``)."""
    t = c if constraints is None else constraints
    n = 1 << log_n
    size = n * blowup
    whole = c < 2 * COLUMN_BLOCK  # a column reduction takes the batch in one piece
    cw, cb = (c, 0) if whole else (COLUMN_BLOCK, COLUMN_BLOCK)
    cu = c if whole else c % COLUMN_BLOCK
    cp = 2 * c if whole else COLUMN_BLOCK
    k = (n >= OOD_BIG_ROWS) + (n >= 4 * OOD_BIG_ROWS)
    lb = min(size, merkle.BLOCK)
    nb = n // (ood_blocks or r3_ood.row_blocks(n, backend))
    ld = size // (deep_blocks or r4_deep.row_blocks(size, backend))
    return {
        "n": n, "L": size, "L*logL": size * (log_n + blowup.bit_length() - 1), "L*c": size * c,
        "Lk": size if summed else 0, "L*t": 0 if summed else size * t, "L*t*P": 0 if summed else size * t * parts,
        "L*a": size * a, "L*P": size * parts, "n*c": n * c, "n*a": n * a,
        "n*P": n * parts, "n*cp*k": n * cp * k, "Ld": ld, "Ld*c": ld * c, "Ld*cb": ld * cb, "Ld*cu": ld * cu,
        "Ld*a": ld * a, "Ld*P": ld * parts,
        "nb": nb, "nb*c": nb * c, "nb*cw": nb * cw, "nb*a": nb * a, "nb*P": nb * parts,
        "Lb": lb, "Lbl": lb if size > merkle.BLOCK else 0, "Lb*c": lb * c, "Lb*a": lb * a, "Lb*P": lb * parts,
        "grind": grind_batch(grinding_bits, backend) if grinding_bits else 0, "m": 0, "1": 1,
    }  # fmt: skip


def kernel_sums(air: AIR | None, constraints: int, backend: str) -> bool:
    """Whether the composition kernel sums the ``constraints`` transition constraints on
    ``backend``: on a GPU, for an AIR it takes (a hypothetical one, ``air=None``, base-valued)."""
    if backend != "gpu" or not 1 <= constraints <= composition_kernel.MAX_CONSTRAINTS:
        return False
    return air is None or composition_kernel.supported(air)


def fri_layer_sizes(log_n: int, blowup: int, final_degree: int, backend: str) -> tuple[list[int], int, int]:
    """The FRI commit phase of a table as the schedule cuts it on ``backend``: the evaluations of
    each layer dispatched on its own, then those the final round starts from and its number of
    small layers."""
    size, layers = blowup << log_n, fri_num_layers(log_n, final_degree)
    big = [size >> k for k in range(r4_fri_layer.large_layers(size, layers, backend))]
    return big, size >> len(big), layers - len(big)


def round_features(
    name: str, feats: dict[str, int], log_n: int, blowup: int, final_degree: int, backend: str
) -> dict[str, int]:
    """The features of round ``name`` (as planned: ``"FRI layer 3"``) of a table with features
    ``feats``: those, with ``m`` set for a FRI round (its first layer's evaluations)."""
    spec = registered(name)
    if spec is None or spec.name not in (FRI_LAYER, FRI_FINAL):
        return feats
    big, start, _ = fri_layer_sizes(log_n, blowup, final_degree, backend)
    return {**feats, "m": start if spec.name == FRI_FINAL else big[int(name.rsplit(" ", 1)[1])]}


Terms = tuple[tuple[str, int], ...]


@dataclasses.dataclass(eq=False)
class _Buf:
    """A buffer of the schedule (compared by identity, as the planner tracks arrays)."""

    name: str
    nbytes: int
    leaves: int = 1  # arrays it stands for (XLA keeps a pointer per output array)
    arrays: tuple[int, ...] = ()  # their bytes, where the allocator gets them one by one (else one array)


@dataclasses.dataclass(frozen=True)
class ModelRound:
    """One round's device set: buffers held from earlier rounds (not arguments of this one), the
    round's arguments and outputs (exact), and its temporaries (fitted)."""

    name: str
    held: Terms
    arguments: Terms
    outputs: Terms
    temporaries: int
    staging: int = 0  # a host trace's row blocks in flight while it is copied in (jaxstark.transfer)
    parked: Terms = ()  # held buffers parked in host memory during this round (not on the device)
    # what the GPU allocator's chunks hold beyond the buffers at the round's peak (jaxstark.memory.pool,
    # the model's buffers replayed as the planner replays the schedule's; 0 on the CPU)
    pool: int = 0

    @property
    def held_bytes(self) -> int:
        return sum(b for _, b in self.held)

    @property
    def argument_bytes(self) -> int:
        return sum(b for _, b in self.arguments)

    @property
    def output_bytes(self) -> int:
        return sum(b for _, b in self.outputs)

    @property
    def copy_in_binds(self) -> bool:
        """The host trace's blocks in flight exceed what the round adds to its arguments."""
        return self.staging > self.output_bytes + self.temporaries

    @property
    def total(self) -> int:
        adds = max(self.staging, self.output_bytes + self.temporaries)
        return self.held_bytes + self.argument_bytes + adds + self.pool

    def terms(self) -> dict[str, int]:
        """Every term by name (bytes), e.g. ``"held: main LDE"``, ``"temporaries (fitted)"``;
        when copying a host trace in binds (before the round runs), its blocks in flight instead
        of the outputs and temporaries."""
        out: dict[str, int] = {}
        staged = self.copy_in_binds
        for kind, pairs in (
            ("held", self.held),
            ("argument", self.arguments),
            ("output", () if staged else self.outputs),
        ):
            for name, b in pairs:
                out[f"{kind}: {name}"] = out.get(f"{kind}: {name}", 0) + b
        if staged:
            out["host trace blocks in flight"] = self.staging
        else:
            out["temporaries (fitted)"] = self.temporaries
        if self.pool:
            out["allocator's chunks beyond the buffers"] = self.pool
        return out


@dataclasses.dataclass(frozen=True)
class TableModel:
    """The model of one table's proof: ``rounds`` in execution order."""

    log_n: int
    width: int
    aux_columns: int
    parts: int
    blowup: int
    backend: str
    rounds: tuple[ModelRound, ...]
    chunks_log2: int = 0  # the table is split into 2^chunks_log2 chunks of 2^log_n rows ...
    group: int = 1  # ... and this models one group of that many chunks under vmap
    # held-buffer strategies modelled (model's buffer and round names), and what could be chosen
    parked: tuple[str, ...] = ()
    recomputed: tuple[str, ...] = ()
    row_blocks: tuple[tuple[str, int], ...] = ()  # (round, blocks of rows)
    parkable: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    recomputable: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    blockable: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict, repr=False)  # -> (default, most)

    def strategies(self) -> str:
        """The held-buffer strategies modelled, in words ("" when everything is kept)."""
        parts = [f"{what} {', '.join(names)}" for what, names in
                 (("parked", self.parked), ("recomputed", self.recomputed),
                  ("in more row blocks", [f"{r} ({k})" for r, k in self.row_blocks])) if names]  # fmt: skip
        return "; ".join(parts)

    @property
    def binding(self) -> ModelRound:
        return max(self.rounds, key=lambda r: r.total)

    @property
    def peak(self) -> int:
        return self.binding.total

    def round(self, name: str) -> ModelRound:
        return next(r for r in self.rounds if r.name == name)

    def to_dict(self) -> dict:
        """The model as plain data (``jaxstark plan --model --json``)."""
        skip = ("rounds", "parkable", "recomputable", "blockable")
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}
        fields["row_blocks"] = dict(self.row_blocks)
        rounds = [
            dict(round=r.name, terms=r.terms(), held_before=r.held_bytes, arguments=r.argument_bytes,
                 outputs=r.output_bytes, temporaries=r.temporaries, staging=r.staging, pool=r.pool, total=r.total,
                 parked=sum(b for _, b in r.parked))
            for r in self.rounds
        ]  # fmt: skip
        fit = FIT_QUALITY.get(self.backend, "custom")
        return dict(fields, rounds=rounds, binding=self.binding.name, peak_bytes=self.peak, fit_quality=fit)

    def __str__(self) -> str:
        aux = f" + {self.aux_columns} aux" if self.aux_columns else ""
        pooled = any(r.pool for r in self.rounds)  # the allocator's chunks, a column where there are any
        columns = ("held before", "arguments", "outputs", "temporaries", *(("chunks",) if pooled else ()))
        head = f"{'round':18}" + "".join(f" {c:>12}" for c in columns)
        head += f" {'device set':>12}"
        rows = f"2^{self.log_n} rows"
        if self.chunks_log2:
            rows = f"{self.group} of {1 << self.chunks_log2} chunks of 2^{self.log_n} rows (vmap)"
        lines = [f"model ({self.backend}): {rows} x {self.width} main{aux} @ blowup {self.blowup}", head]
        b = self.binding
        for r in self.rounds:
            values = (r.held_bytes, r.argument_bytes, r.output_bytes, r.temporaries, *((r.pool,) if pooled else ()),
                      r.total)  # fmt: skip
            mark = "  <- copy-in binds" if r.copy_in_binds else ""
            mark += "  <- binding" if r is b else ""
            lines.append(f"{r.name:18}" + "".join(f" {format_bytes(v):>12}" for v in values) + mark)
        fit = FIT_QUALITY.get(self.backend, "custom")
        lines.append(f"peak {format_bytes(b.total)} ({b.name}); temporaries fitted: {fit}")
        if self.strategies():
            lines.append(f"held buffers: {self.strategies()}")
        return "\n".join(lines)


def model(
    air: AIR | None,
    log_n: int,
    config: StarkConfig,
    *,
    width: int | None = None,
    aux_columns: int | None = None,
    parts: int | None = None,
    buses: int | None = None,
    public_inputs: int | None = None,
    constraints: int | None = None,
    backend: str | None = None,
    coeffs: dict[str, tuple[dict[str, float], ...]] | None = None,
    chunk_rows_log2: int | None = None,
    group: int = 1,
    host_trace: bool = False,
    park: Iterable[str] = (),
    recompute: Iterable[str] = (),
    blocks: Mapping[str, int] | None = None,
) -> TableModel:
    """Every round's device set for one table of ``2^log_n`` rows proved alone: ``air`` gives the
    width, aux columns, composition parts, buses and public inputs, or pass them with
    ``air=None`` for a hypothetical table (unset: no aux columns, one part, one transition
    constraint per column, base-valued: on a GPU the composition kernel sums up to
    :data:`jaxstark.kernels.composition.MAX_CONSTRAINTS` of them). ``backend`` picks
    the fitted temporaries (``"gpu"`` or ``"cpu"``; default: JAX's default backend, see
    :data:`FIT_QUALITY` for how well each fits); ``coeffs`` overrides them.

    With ``chunk_rows_log2=h`` the table is split into chunks of ``2^h`` rows
    (:mod:`jaxstark.chunking`) and the model is that of one group of ``group`` chunks proven
    together under ``vmap`` (on one device): the caller's whole trace and one set of domain
    tables of the chunk's height are held, every other buffer and the temporaries are
    ``group`` times a chunk's (an estimate: XLA's temporaries of a vmapped round were fitted on
    single tables). ``host_trace``: the caller's trace is in host memory, so it is on the device
    only as the argument of the rounds that take it, not held for the whole proof.

    The planner's held-buffer strategies, by the model's buffer and round names
    (:meth:`TableModel.parkable`, ``recomputable``, ``blockable``; :func:`buffer_name` turns a
    plan's names into these; :func:`within` chooses them as the planner does):

    * ``park``: these round outputs stay in host memory between the rounds that take them
      (each such round counts it as an argument, copied back; the others do not count it);
    * ``recompute``: these Merkle trees are built, kept as their root rows (64 bytes) only, and
      built again by their commitment's openings: the building round counts the tree as a
      temporary, the openings count it and the build's working set (:data:`TREE_BUILD_COEFFS`);
      the composition's tree is built in a round of its own (``"composition tree"``), where the
      composition's temporaries stay as fitted (the compiled round without its tree holds a
      little less);
    * ``blocks``: a round summing over its rows (composition, out-of-domain, DEEP) in this many
      blocks of rows, its fitted temporaries scaled by its default blocks over these (the
      planner's own estimate: only the part that grows with the rows shrinks)."""
    if backend is None:
        backend = "cpu" if jax.default_backend() == "cpu" else "gpu"
    c = width if width is not None else air.width
    a = aux_columns if aux_columns is not None else (air.num_aux_columns if air is not None else 0)
    p = parts if parts is not None else (air.composition_parts if air is not None else 1)
    if buses is None:
        buses = len({i.bus for i in air.interactions()}) if air is not None else (1 if a else 0)
    k = public_inputs if public_inputs is not None else (air.num_public_inputs if air is not None else 0)
    if constraints is None:
        constraints = len(air.constraint_degrees()) if air is not None else c
    if coeffs is None:
        if backend not in TEMP_COEFFS:
            raise ValueError(f"model: backend must be one of {sorted(TEMP_COEFFS)}, got {backend!r}")
        coeffs = TEMP_COEFFS[backend]
    positive = ("width", "parts")
    for name, value in (("width", c), ("aux_columns", a), ("parts", p), ("constraints", constraints), ("log_n", log_n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name in positive else 0):
            raise ValueError(f"model: {name} must be a {'positive' if name in positive else 'non-negative'} "
                             f"int, got {value!r}")  # fmt: skip
    summed = kernel_sums(air, constraints, backend)
    rows_log2 = log_n
    if chunk_rows_log2 is not None:
        h = chunk_rows_log2
        if isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= log_n:
            raise ValueError(f"model: chunk_rows_log2 must be an int in [1, log_n={log_n}], got {chunk_rows_log2!r}")
        log_n = chunk_rows_log2
    chunks = 1 << (rows_log2 - log_n)
    if isinstance(group, bool) or not isinstance(group, int) or group < 1 or group & (group - 1) or group > chunks:
        raise ValueError(f"model: group must be a power of two in [1, {chunks}] (the chunks), got {group!r}")
    g = group
    n, q = 1 << log_n, config.num_queries
    size = n * config.blowup
    park, recompute = _names("park", park), _names("recompute", recompute)
    blocks = dict(blocks or {})
    blockable = {
        COMPOSITION: (1, max(1, size // MIN_BLOCK_ROWS)),
        OUT_OF_DOMAIN: (r3_ood.row_blocks(n, backend), max(1, n // MIN_BLOCK_ROWS)),
        DEEP: (r4_deep.row_blocks(size, backend), max(1, size // MIN_BLOCK_ROWS)),
    }
    for name, value in blocks.items():
        if name not in blockable:
            raise ValueError(f"model: blocks: {name!r} is not a round in blocks of rows; those are {sorted(blockable)}")
        most = blockable[name][1]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value & (value - 1) or value > most:
            raise ValueError(f"model: blocks[{name!r}] must be a power of two in [1, {most}], got {value!r}")
    build = TREE_BUILD_COEFFS.get(backend, {})

    # the out-of-domain round and DEEP in the blocks asked for: their features follow a block's
    # rows ("nb", "Ld"); the composition's (no such feature) are scaled by the default blocks over these
    feats = features(log_n, config.blowup, c, a, p, config.grinding_bits, backend, constraints, summed,
                     ood_blocks=blocks.get(OUT_OF_DOMAIN), deep_blocks=blocks.get(DEEP))  # fmt: skip

    def temps(name: str) -> int:
        f = round_features(name, feats, log_n, config.blowup, config.fri_final_degree, backend)
        forms = coeffs.get(registered(name).name, ())
        fitted = max((sum(x * f[k] for k, x in form.items()) for form in forms), default=0)
        if name in blocks and name not in (OUT_OF_DOMAIN, DEEP):
            fitted *= blockable[name][0] / blocks[name]
        return g * round(fitted)

    def tree_build(leaves: int, words: int) -> int:  # what building a tree holds besides the tree
        lb = min(leaves, merkle.BLOCK)
        return g * round(sum(x * {"Lb": lb, "Lb*w": lb * words}[k] for k, x in build.items()))

    def buf(name: str, nbytes: int, leaves: int = 1) -> _Buf:  # a chunk's buffer, for each chunk of the group
        return _Buf(name, g * nbytes, leaves)

    def per_layer(name: str, sizes: list[int]) -> _Buf:  # an array per layer (each its own chunk of a GPU's pool)
        return _Buf(name, g * sum(sizes), len(sizes), tuple(g * x for x in sizes))

    trees: dict[str, int] = {}  # what may be recomputed -> its bytes held

    def tree(name: str, leaves: int) -> _Buf:  # a Merkle tree, or only its root rows when recomputed
        trees[name] = g * 64 * leaves
        return buf(f"{name} (root)", 64) if name in recompute else buf(name, 64 * leaves)

    def built_apart(name: str) -> int:  # the building round holds a recomputed tree as a temporary
        return trees[name] - g * 64 if name in recompute else 0

    trace = buf("trace (caller's)", 8 * n * c)
    others = _Buf("trace of the other chunks (caller's)", 8 * ((1 << rows_log2) - g * n) * c)
    domain = _Buf("domain tables", 8 * (n + 2 * size + 2))
    public = _Buf("public inputs", 8 * k)
    main = [buf("main LDE", 8 * size * c), buf("main coefficients", 8 * n * c), tree("main tree", size),
            buf("field check", 24)]  # fmt: skip
    aux = [buf("aux LDE", 24 * size * a), buf("aux coefficients", 24 * n * a), tree("aux tree", size),
           buf("bus sums", 24 * buses), buf("degenerate flag", 1)] if a else []  # fmt: skip
    parts_coeffs, parts_lde = buf("parts coefficients", 24 * n * p), buf("parts LDE", 24 * size * p)
    parts_tree, excess = tree("parts tree", size), buf("excess flag", 1)
    ood = [buf("out-of-domain values", 24 * (1 + 2 * c + p + 2 * a), leaves=6)]
    layers = fri_num_layers(log_n, config.fri_final_degree)
    heights = [size >> (j + 1) for j in range(layers)]
    big, start, small = fri_layer_sizes(log_n, config.blowup, config.fri_final_degree, backend)
    small_rows = [start >> (j + 1) for j in range(small)]  # each small layer's leaves and tree
    last = [per_layer("FRI small layers' leaves", [48 * h for h in small_rows]),
            per_layer("FRI small layers' trees", [64 * h for h in small_rows]),
            buf("FRI final + flag", 24 * (n >> layers) + 1, 2)]  # fmt: skip
    label = 2 * (1 + MAX_LABEL)  # a layer's two encoded labels (FriStep)
    path = lambda rows: 32 * q * (rows.bit_length() - 1)  # noqa: E731  (a path per query in a tree of `rows` leaves)
    row_words = dict(trace=c, aux=3 * a, composition=3 * p)
    rounds: list[ModelRound] = []
    held: list[_Buf] = [public, domain] if host_trace else [public, trace, domain, *([others] if others.nbytes else [])]
    tr: list[_Buf | None] = [None]  # the current transcript (every round returns a new one)
    outputs: dict[str, int] = {}  # every round output by name -> bytes (what may be parked)

    # a host trace is copied in by each round that takes it, in row blocks on an accelerator
    trace_shape = (g, n, c) if chunk_rows_log2 is not None else (n, c)
    staged = transfer.in_flight(trace_shape, np.uint64, backend) if host_trace else 0

    # on a GPU the buffers go through the allocator's pool in the schedule's order, as the planner
    # replays them (jaxstark.memory.pool): what its whole chunks hold beyond the buffers counts.
    # The held buffers stay in it; a parked buffer or a host trace a round takes is copied in for
    # that round; the small host arrays a round is passed are not replayed (nor by the planner).
    replay = allocator_pool.Replay() if backend == "gpu" and allocator_pool.simulated() else None
    placed: dict[int, _Buf] = {}  # id -> the buffer, for each one in the replay's pool

    def arrays(key, x: _Buf) -> list:  # (key, {device: bytes}) per array of the buffer, one key for all
        return [(key, {0: b}) for b in x.arrays or (x.nbytes,)]

    def replayed(index: int, args: list[_Buf], outs: list[_Buf], temporaries: int) -> int:
        if replay is None:
            return 0
        on_device = {id(h): h for h in held if h.name not in park}
        for key in [k for k in placed if k not in on_device]:  # dropped, or parked, since the last round
            replay.free(key)
            del placed[key]
        for key, x in on_device.items():  # held before the first round
            if key not in placed:
                for k, sizes in arrays(key, x):
                    replay.allocate(k, sizes)
                placed[key] = x
        copies = [c for x in args if x.name in park or (host_trace and x is trace) for c in arrays((index, id(x)), x)]
        outputs = [o for x in outs for o in arrays(id(x), x)]
        excess = replay.round(index, copies, outputs, {0: temporaries})
        placed.update((id(x), x) for x in outs)
        return excess

    def step(name: str, args: list[_Buf], outs: list[_Buf], transcript: bool = True, extra: int = 0) -> None:
        staging = staged if any(x is trace for x in args) else 0
        new_tr = [buf("transcript", 32)] if transcript else []  # a round that takes the transcript returns it
        args = [*args, *(tr[0:1] if tr[0] is not None and transcript else [])]
        others = [h for h in held if not any(h is x for x in args)]
        rest = tuple((h.name, h.nbytes) for h in others if h.name not in park)
        parked = tuple((h.name, h.nbytes) for h in others if h.name in park)
        pairs = lambda bufs: tuple((x.name, x.nbytes) for x in bufs)  # noqa: E731
        leaves = sum(x.leaves for x in [*outs, *new_tr])
        table = (("output pointers", 8 * leaves),) if leaves > 1 else ()  # XLA's tuple of output arrays
        t = temps(name) + extra
        excess = replayed(len(rounds), args, [*outs, *new_tr], t)
        rounds.append(ModelRound(name, rest, pairs(args), (*pairs([*outs, *new_tr]), *table), t, staging, parked,
                                 excess))  # fmt: skip
        held.extend([*outs, *new_tr])
        outputs.update((x.name, x.nbytes) for x in outs)
        tr[0] = new_tr[0] if transcript else tr[0]

    def drop(*bufs: _Buf) -> None:  # the schedule's drop after a buffer's last use
        for x in bufs:
            held.remove(x)

    tr[0] = _Buf("statement: transcript", 32)  # computed on the host, held to the end
    held.append(tr[0])
    step(TRACE_COMMIT, [trace, domain], main, extra=built_apart("main tree"))
    challenges = _Buf("LogUp challenges", 48)
    if a:
        step(LOGUP_CHALLENGES, [], [challenges])
        step(AUX_COMMIT, [trace, domain, challenges], aux, extra=built_apart("aux tree"))
    step(FORK, [buf("table index", 8)], [])
    logup = [challenges, aux[3]] if a else []
    if "parts tree" in recompute:  # the tree built in a round of its own, only its root rows kept
        placeholder = buf("parts tree (zero placeholder)", 64)
        step(COMPOSITION, [domain, main[0], *aux[:1], *logup, public], [parts_coeffs, parts_lde, placeholder, excess])
        step(COMPOSITION_TREE, [parts_lde], [parts_tree], extra=built_apart("parts tree") + tree_build(size, 3 * p))
        drop(placeholder)  # the root rows take its place
    else:
        step(COMPOSITION, [domain, main[0], *aux[:1], *logup, public], [parts_coeffs, parts_lde, parts_tree, excess])
    step(OUT_OF_DOMAIN, [main[1], *aux[1:2], parts_coeffs], ood)
    drop(main[1], *aux[1:2], parts_coeffs)
    f = buf("DEEP values", 24 * size)
    step(DEEP, [domain, main[0], *aux[:1], parts_lde, *ood], [f])
    fri, rebuilt_fri = [], []
    for j, m in enumerate(big):
        name = f"FRI layer {j} tree"
        layer = [buf(f"FRI layer {j} leaves", 24 * m), tree(name, m // 2)]
        folded = buf(f"FRI layer {j} folded", 12 * m)
        step(fri_layer_name(j), [f, _Buf("FRI step", label + 8, 2)], [*layer, folded], extra=built_apart(name))
        held.remove(f)
        fri += layer
        rebuilt_fri += [(trees[name], m // 2)] if name in recompute else []
        f = folded
    step(FRI_FINAL, [f, _Buf("FRI steps", (label + 8) * small, 2), _Buf("final coset offset", 8)], last)
    held.remove(f)
    fri += last
    indices = buf("query indices", 4 * q)
    step(QUERIES, [], [buf("nonce", 8), indices])
    # what each openings dispatch takes (not FRI's final polynomial: it is sent in clear)
    opened = dict(
        trace=[main[0], main[2]], aux=[aux[0], aux[2]] if a else [], composition=[parts_lde, parts_tree], FRI=fri[:-1]
    )
    # a recomputed tree is built again there: the tree and the build's working set (the FRI
    # layers' trees all at once: their roots are stacked at the end)
    again = dict(trace=("main tree", c), aux=("aux tree", 3 * a), composition=("parts tree", 3 * p))
    for what in OPENED:
        if not opened[what]:
            continue
        if what == "FRI":  # each layer's pair of rows (6 words), from a tree of half the previous layer's leaves
            nbytes = sum(48 * q + path(h) for h in heights) + 32 * layers
            extra = sum(b for b, _ in rebuilt_fri) + max((tree_build(h, 6) for _, h in rebuilt_fri), default=0)
        else:
            nbytes = 8 * q * row_words[what] + path(size) + 32
            name, words = again[what]
            extra = trees[name] + tree_build(size, words) if name in recompute else 0
        matrices = layers if what == "FRI" else 1  # each a tuple entry of rows and of paths, then the roots
        step(openings_name(what), [*opened[what], indices], [buf(f"{what} openings", nbytes, 2 * matrices + 1)],
             transcript=False, extra=extra)  # fmt: skip
        drop(*opened[what])
    unknown = sorted((recompute - set(trees)) | (park - set(outputs)))
    if unknown:
        raise ValueError(f"model: no such buffer to park or tree to recompute: {unknown}; round outputs: "
                         f"{sorted(outputs)}; trees: {sorted(trees)}")  # fmt: skip
    small_parked = sorted(n for n in park if outputs[n] < PARK_MIN_BYTES)
    if small_parked:
        raise ValueError(f"model: {small_parked} are under {PARK_MIN_BYTES} bytes: the planner never parks them")
    return TableModel(log_n, c, a, p, config.blowup, backend, tuple(rounds), rows_log2 - log_n, g,
                      tuple(sorted(park)), tuple(sorted(recompute)), tuple(sorted(blocks.items())),
                      tuple(sorted(n for n, b in outputs.items() if b >= PARK_MIN_BYTES and n not in trees)),
                      tuple(trees), blockable)  # fmt: skip


def _names(what: str, names) -> frozenset[str]:
    if isinstance(names, str) or not all(isinstance(x, str) for x in names):
        raise TypeError(f"model: {what} must be an iterable of buffer names, got {names!r:.80}")
    return frozenset(names)


def search_held(start, fits, ratio, where, candidates, replan):
    """The held-buffer search the planner (:func:`jaxstark.memory.plan.plan_checked`) and
    :func:`within` share, greedy: while ``fits(current)`` is false, take the candidate that
    frees the most from its binding round -- ``candidates(current, chosen, tried)`` lists them as
    (bytes freed, "park" | "recompute" | "blocks", name, blocks) -- plan again with it
    (``replan(chosen)``; ``chosen`` = (parked names, recomputed name -> bytes, round -> blocks)),
    and keep the step only if the binding round shrank: ``ratio`` (its size against its budget)
    did not grow, and where the same round binds (``where``), it is smaller. Returns the first
    plan that fits, else the one with the smallest ``ratio``."""
    best = current = start
    chosen, tried = (frozenset(), {}, {}), set()
    while not fits(current):
        found = candidates(current, chosen, tried)
        if not found:
            break
        b, kind, name, k = max(found, key=lambda c: (c[0], c[1], c[2]))
        tried.add((name, k) if kind == "blocks" else name)
        park, recompute, blocks = chosen
        more = (park | {name} if kind == "park" else park, {**recompute, name: b} if kind == "recompute" else recompute,
                {**blocks, name: k} if kind == "blocks" else blocks)  # fmt: skip
        q = replan(more)
        if ratio(q) > ratio(current) or (where(q) == where(current) and q.binding.total >= current.binding.total):
            continue  # it did not shrink the binding round (a tree built there may stay a temporary): not kept
        current, chosen = q, more
        if fits(current) or ratio(current) < ratio(best):
            best = current
    return best


def within(air: AIR | None, log_n: int, config: StarkConfig, budget: int, *, strategies: Iterable[str] | None = None,
           **kwargs) -> TableModel:  # fmt: skip
    """The model with held buffers parked, recomputed or in more row blocks as the planner
    chooses them (:func:`search_held` on the model's figures): a tree the binding round holds
    or builds (recomputed), another round output it holds without taking it (parked), or 8
    times its row blocks (counted as the share of its temporaries that would go).
    ``strategies``: what may be chosen (default: ``config.held_strategies``). Returns the first
    model within ``budget`` (bytes), else the one whose peak is smallest; its
    :meth:`TableModel.strategies` says what it chose. ``kwargs`` go to :func:`model`."""
    allowed = set(config.held_strategies if strategies is None else _names("strategies", strategies))
    if allowed - set(STRATEGIES):
        raise ValueError(f"within: unknown strategies {sorted(allowed - set(STRATEGIES))}; known: {list(STRATEGIES)}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"within: budget must be a positive number of bytes, got {budget!r}")

    def candidates(m: TableModel, chosen, tried) -> list:
        r, found = m.binding, []
        for name, b in r.held:
            if name in tried:
                continue
            if name in m.recomputable and "recompute" in allowed:
                found.append((b, "recompute", name, 0))
            elif name in m.parkable and "park" in allowed:
                found.append((b, "park", name, 0))
        found += [(b, "recompute", name, 0) for name, b in r.outputs
                  if name in m.recomputable and name not in tried and "recompute" in allowed]  # fmt: skip
        default, most = m.blockable.get(r.name, (1, 1))
        now = dict(m.row_blocks).get(r.name, default)
        if "blocks" in allowed and now < most and (r.name, min(most, 8 * now)) not in tried:
            k = min(most, 8 * now)
            found.append((int(r.temporaries * (1 - now / k)), "blocks", r.name, k))
        return found

    def replan(chosen) -> TableModel:
        return model(air, log_n, config, park=chosen[0], recompute=chosen[1], blocks=chosen[2], **kwargs)

    return search_held(model(air, log_n, config, **kwargs), lambda m: m.peak <= budget, lambda m: m.peak / budget,
                       lambda m: m.binding.name, candidates, replan)  # fmt: skip


_PLAN_FIELDS = {
    (TRACE_COMMIT, "lde"): "main LDE", (TRACE_COMMIT, "coeffs"): "main coefficients",
    (TRACE_COMMIT, "nodes"): "main tree",
    (AUX_COMMIT, "lde"): "aux LDE", (AUX_COMMIT, "coeffs"): "aux coefficients", (AUX_COMMIT, "nodes"): "aux tree",
    (COMPOSITION, "parts_coeffs"): "parts coefficients", (COMPOSITION, "parts_lde"): "parts LDE",
    (COMPOSITION, "nodes"): "parts tree", (FRI_LAYER, "leaves"): "leaves", (FRI_LAYER, "nodes"): "tree",
    (FRI_LAYER, "folded"): "folded", (FRI_FINAL, "leaves"): "FRI small layers' leaves",
    (FRI_FINAL, "nodes"): "FRI small layers' trees",
}  # fmt: skip


def buffer_name(plan_name: str) -> str | None:
    """The model's name of a buffer a plan names (``"table 0: trace commit[0].nodes"`` -> ``"main
    tree"``, ``"... FRI layer 2[0].leaves"`` -> ``"FRI layer 2 leaves"``): what :func:`model`'s
    ``park`` and ``recompute`` take for the strategies a plan chose; None for a buffer the model
    does not name alike. The model holds FRI's small layers as one buffer of leaves and one of
    trees: a plan's single small layer (``"FRI final[0].nodes[2]"``) names the whole buffer."""
    head, _, field = plan_name.rpartition(".")
    name = head.split(": ", 1)[-1].removesuffix("[0]")
    if name == FRI_FINAL:
        field = field.split("[", 1)[0]
    spec = registered(name)
    if spec is None or (spec.name, field) not in _PLAN_FIELDS:
        return None
    short = _PLAN_FIELDS[spec.name, field]
    return f"{name} {short}" if spec.name == FRI_LAYER else short
