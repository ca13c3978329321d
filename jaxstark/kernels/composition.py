"""The composition's transition constraints, summed with their challenges, as a Pallas (Triton) kernel.

``T[r] = sum_i alpha_i C_i(cur_r, nxt_r, periodic_r, public)`` over the rows ``r`` of the trace's
LDE, where ``nxt_r`` is row ``r + blowup`` (wrapping at the end) -- the transition part of the
composition round (:mod:`jaxstark.rounds.r2_composition`), whose ``jnp`` twin is the round's
XLA program over the whole LDE. There XLA:GPU's schedule decides how many per-column values it
keeps live (0.2 to 4.9 words per row and column), so the round's memory follows no law of the
shape. Here:

* the grid runs over blocks of :attr:`Tiling.rows` rows; a program calls the AIR's own
  ``transition`` on base :class:`~jaxstark.field.val.Val` lane vectors (one value per row),
  loading a column the first time the constraints read it (the matrix is addressed as one flat
  array, so the next rows are a gather of rows ``r + blowup`` mod ``L``);
* each constraint value times the three coordinates of its challenge is three base products,
  added into three running sums; only those sums are written;
* the products inside the constraints use the PTX product on a GPU (:mod:`.field_ptx`), the
  rest the ``jnp`` field functions.

Its device memory is its output, ``3 L`` words, whatever the AIR. Every value is the field
value itself, so the results equal the twin's bit for bit. An AIR whose transition constraints
are not base-field values of the frame, or that has more than :data:`MAX_CONSTRAINTS` of them
(:func:`supported`), keeps the twin.

Measured on an H100 (``benchmarks/bench_composition.py``, ``benchmarks/RESULTS.md``, 2026-12-07):
the ALU 2^22 @ b2 round 9.08 -> 7.99 ms and 992 -> 362 MiB of temporaries, compiled in 7.1 s
(10.6 s before); 62 degree-3 constraints over 2^20 rows 13.84 -> 4.83 ms and 1952 -> 123 MiB,
but compiled in 59.9 s against XLA's 16.0 s. Triton's compile time grows faster than the
kernel's body (a round of 16, 32, 62 degree-2 constraints in one launch: 9.1, 11.7, 73.7 s), so
a wider AIR is summed in launches of :attr:`Tiling.constraints` (32). That way, at 2^16 @ b2
(H100, 2026-12-07): 62 degree-2 constraints compile in 8.2 s against XLA's 12.8 s (1.52 against
1.37 ms), 316 degree-3 ones in 16.0 s against 49.6 s (2.07 against 4.38 ms), 600 degree-2 ones
in 30.1 s against more than a minute; each round holds 7 MiB of temporaries, where XLA's fusion
held 76 and 456 MiB. :data:`MAX_CONSTRAINTS` bounds the launches (a launch traces the whole
transition once, so tracing grows with the square of the constraints).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, UInt64

from jaxstark.field.goldilocks import P
from jaxstark.field.val import Val
from jaxstark.kernels import field_ptx, launch
from jaxstark.protocol.algebra import _dot

__all__ = ["Tiling", "TILING", "MAX_CONSTRAINTS", "supported", "transition_sum", "reference_sum"]

# The most transition constraints the kernel takes, in launches of Tiling.constraints (measured up to 600)
MAX_CONSTRAINTS = 1024


class Tiling(NamedTuple):
    """Rows per program (a power of two), Triton warps, inline PTX form (:data:`field_ptx.PTX_FORMS`),
    and the constraints one launch sums: an AIR with more is that many per launch, the running
    sums passed on in place, each launch's program holding only its group's arithmetic (JAX drops
    the rest of the traced transition before lowering, but traces it once per launch: lowering
    for CUDA on the 2-core CPU took 15.2 s for 315 constraints in 10 launches, 6.3 s in one, and
    37.2 s for 600 in 19). On a GPU launches of 32 compile faster than XLA's fusion of the
    whole AIR (the module docstring): an AIR of up to 32 constraints is one launch, a wider one
    several."""

    rows: int = 128
    num_warps: int = 4
    ptx: bool | str = "mul"
    constraints: int = 32


TILING = Tiling()


class _KernelVal(Val):
    """A base :class:`Val` whose products with another base value use the kernel's field
    operations (the same values as :func:`gl._mul`); everything else is :class:`Val`'s."""

    __slots__ = ()
    f: field_ptx.FieldOps = field_ptx.JNP

    def _other(self, o):
        if type(o) is Val and o.constant() is not None:  # a constant of the constraint code (Val.const)
            o = o.constant()
        if isinstance(o, (int, np.integer)) and int(o) % P >> 63:
            # Triton takes no unsigned constant of 2^63 or more: formed from its halves on the
            # lanes' own zero (a traced value, so JAX does not fold it back into one constant)
            v, zero = int(o) % P, self.v & np.uint64(0)
            return type(self)(((zero | np.uint64(v >> 32)) << np.uint64(32)) | np.uint64(v & 0xFFFFFFFF))
        return super()._other(o)

    def _binary(self, o, base_op, ext_op, swap=False, fold=None):  # results stay kernel values (constants too)
        out = super()._binary(o, base_op, ext_op, swap, fold)
        return out if out is NotImplemented or out.is_ext else type(self)(out.v)

    def __mul__(self, o):
        if type(o) is Val and o.constant() is not None:  # a Val.const: as a kernel value
            o = self._other(o)
        if isinstance(o, Val) and not o.is_ext and not self.is_ext:
            return type(self)(self.f.mul(*jnp.broadcast_arrays(self.v, o.v)))
        return super().__mul__(o)

    def __neg__(self):  # Val's is Val.const(0) - self, a plain Val
        return 0 - self

    # a subclass's reflected operators go first, so that a plain Val on the left
    # (Val.const(c) - x) meets this class's _other, not Val's
    def __radd__(self, o):
        return super().__radd__(o)

    def __rsub__(self, o):
        return super().__rsub__(o)

    def __rmul__(self, o):
        return super().__rmul__(o)


class _Columns(Sequence):
    """The frame's columns of one row block, each loaded the first time it is read."""

    def __init__(self, load, count: int):
        self._load, self._count, self._cache = load, count, {}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        if not -self._count <= i < self._count:
            raise IndexError(f"column {i} of a {self._count}-column frame")
        i %= self._count
        if i not in self._cache:
            self._cache[i] = self._load(i)
        return self._cache[i]


def supported(air) -> bool:
    """Whether ``air`` has 1 to :data:`MAX_CONSTRAINTS` transition constraints and they are
    base-field values of a base frame (what the kernel sums; an AIR that mixes in extension
    values keeps the ``jnp`` twin)."""
    return 1 <= len(air.constraint_degrees()) <= MAX_CONSTRAINTS and _base_valued(air)


@functools.cache
def _base_valued(air) -> bool:
    """Whether ``air``'s transition, run on a frame of base values, returns its number of
    constraints, each a base value."""
    lanes = lambda k: [Val(jnp.zeros((1,), jnp.uint64)) for _ in range(k)]  # noqa: E731
    cur, nxt, periodic = lanes(air.width), lanes(air.width), lanes(len(air.periodic_columns()))
    public = [Val(jnp.zeros((), jnp.uint64)) for _ in range(air.num_public_inputs)]
    flags = []

    def trace():
        flags.extend(isinstance(c, Val) and not c.is_ext for c in air.transition(cur, nxt, periodic, public))
        return jnp.zeros(())

    try:
        jax.make_jaxpr(trace)()
    except Exception:  # noqa: BLE001 - anything the frame cannot run keeps the twin, which reports it
        return False
    return len(flags) == len(air.constraint_degrees()) and all(flags)  # a miscount: the twin names it


def _sums(lde_ref, per_ref, pub_ref, alpha_ref, start_ref, *refs, air, cols: int, n_periodic: int, n_public: int,
          size: int, shift: int, group: tuple[int, int], f: field_ptx.FieldOps, index):  # fmt: skip
    """Constraints ``group[0] <= i < group[1]`` of a block of rows, added to the running sums
    ``refs[:3]`` when there are six refs (the last three are the outputs)."""
    from jax.experimental.pallas import triton as plt

    sums_in, (o0_ref, o1_ref, o2_ref) = refs[:-3], refs[-3:]
    rows = o0_ref.shape[0]
    lanes = jax.lax.broadcasted_iota(index, (rows,), 0)
    r = start_ref[0].astype(index) + pl.program_id(0).astype(index) * rows + lanes
    ahead = (r + shift) & (size - 1)
    kval = type("_KVal", (_KernelVal,), {"__slots__": (), "f": f})

    def gather(ref, at):
        return kval(plt.load(ref.at[at]))

    cur = _Columns(lambda i: gather(lde_ref, r * cols + i), cols)
    nxt = _Columns(lambda i: gather(lde_ref, ahead * cols + i), cols)
    periodic = [gather(per_ref, r * n_periodic + j) for j in range(n_periodic)]
    public = [gather(pub_ref, jnp.full((rows,), j, index)) for j in range(n_public)]
    constraints = air.transition(cur, nxt, periodic, public)
    if len(constraints) * 4 != alpha_ref.shape[0]:
        raise ValueError(f"{air.name}.transition returned {len(constraints)} constraints for {alpha_ref.shape[0] // 4} "
                         "challenges")  # fmt: skip
    acc = [ref[...] for ref in sums_in] or [jnp.zeros((rows,), jnp.uint64) for _ in range(3)]
    zero = kval(lanes.astype(jnp.uint64) & np.uint64(0))
    for i in range(*group):  # the others are traced but unused: dropped before lowering
        c = constraints[i]
        c = c if isinstance(c, _KernelVal) else zero + c  # a constant constraint: as a kernel value
        v = jnp.broadcast_to(c.v, (rows,))
        for k in range(3):
            alpha = plt.load(alpha_ref.at[jnp.full((rows,), 4 * i + k, index)])
            acc[k] = f.add(acc[k], f.mul(v, alpha))
    for k, o_ref in enumerate((o0_ref, o1_ref, o2_ref)):
        o_ref[...] = acc[k]


@functools.partial(jax.jit, static_argnames=("air", "shift", "rows", "interpret", "tiling"))
def transition_sum(
    lde: UInt64[Array, " L c"],
    periodic: UInt64[Array, " L q"],
    public: UInt64[Array, " k"],
    alphas: UInt64[Array, " t 3"],
    start: Array,
    *,
    air,
    shift: int,
    rows: int | None = None,
    interpret: bool = False,
    tiling: Tiling | None = None,
) -> UInt64[Array, " R 3"]:
    """``sum_i alphas[i] C_i`` at the LDE rows ``[start, start + rows)`` (all ``L`` by default),
    each row's frame being itself and row ``r + shift`` mod ``L``; ``periodic`` holds the periodic
    columns on the LDE (``(L, 0)`` without any), ``public`` the public inputs, ``alphas`` one
    extension challenge per transition constraint. ``L`` is a power of two, ``rows`` a multiple
    of the block's rows (or smaller than one block). ``tiling``: :data:`TILING` (read when the call
    is traced) by default."""
    tiling = TILING if tiling is None else tiling
    size, cols = lde.shape
    degrees = air.constraint_degrees()
    rows = size if rows is None else rows
    if size & (size - 1) or cols != air.width:
        raise ValueError(f"composition.transition_sum: the LDE must be (2^k, {air.width}), got {lde.shape}")
    if periodic.shape[0] != size or public.shape != (air.num_public_inputs,) or alphas.shape != (len(degrees), 3):
        raise ValueError(
            f"composition.transition_sum: periodic {periodic.shape}, public {public.shape}, alphas {alphas.shape} do "
            f"not fit {air.name} over {size} rows"
        )
    if not isinstance(tiling.constraints, int) or tiling.constraints < 1:
        raise ValueError(f"composition.transition_sum: constraints per launch must be a positive int, got "
                         f"{tiling.constraints!r}")  # fmt: skip
    block = min(tiling.rows, rows)
    if not 0 < rows <= size or rows % block or block & (block - 1):
        raise ValueError(f"composition.transition_sum: {rows} rows is not a multiple of the block's {block} rows")
    n_periodic = periodic.shape[1]
    index = jnp.int32 if size * max(cols, n_periodic, 1) < 2**31 else jnp.int64
    f = field_ptx.ops(interpret, tiling.ptx)
    flat = lambda a: a.reshape(-1) if a.size else jnp.zeros((1,), jnp.uint64)  # noqa: E731
    operands = (flat(lde), flat(periodic), flat(public), jnp.pad(alphas, ((0, 0), (0, 1))).reshape(-1),
                jnp.asarray(start, jnp.int64).reshape(1))  # fmt: skip
    spec = pl.BlockSpec((block,), lambda i: (i,))
    out = ()
    step = tiling.constraints
    for first in range(0, len(degrees), step):  # each group one launch, adding to the sums before it
        kernel = functools.partial(_sums, air=air, cols=cols, n_periodic=n_periodic, n_public=public.shape[0],
                                   size=size, shift=shift, group=(first, min(first + step, len(degrees))), f=f,
                                   index=index)  # fmt: skip
        out = pl.pallas_call(
            kernel,
            out_shape=tuple(jax.ShapeDtypeStruct((rows,), jnp.uint64) for _ in range(3)),
            grid=(rows // block,),
            in_specs=[pl.no_block_spec] * len(operands) + [spec] * len(out),
            out_specs=(spec, spec, spec),
            input_output_aliases={len(operands) + k: k for k in range(len(out))},
            name="composition_transition_sum",
            **launch(interpret, tiling.num_warps),
        )(*operands, *out)
    return jnp.stack(out, axis=-1)


def reference_sum(lde, periodic, public, alphas, *, air, shift: int) -> UInt64[Array, " L 3"]:
    """The twin over the whole LDE: the AIR's constraints on ``jnp`` arrays, summed in order."""
    nxt = jnp.roll(lde, -shift, axis=0)
    cs = air.transition([Val(lde[:, i]) for i in range(lde.shape[1])], [Val(nxt[:, i]) for i in range(lde.shape[1])],
                        [Val(periodic[:, j]) for j in range(periodic.shape[1])],
                        [Val(public[j]) for j in range(public.shape[0])])  # fmt: skip
    return jnp.broadcast_to(_dot([Val(a, True) for a in alphas], cs).v, (lde.shape[0], 3))
