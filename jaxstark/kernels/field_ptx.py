"""Goldilocks add, subtract and multiply for compiled Triton kernels, as inline PTX.

:mod:`jaxstark.field.goldilocks` writes the field on ``uint64`` values: every carry or borrow
is a 64-bit compare and every correction a 64-bit select, and the GPU runs each of those as
two or more 32-bit instructions. Here the same functions are written on 32-bit halves with the
carry flag (``add.cc`` / ``addc``, ``sub.cc`` / ``subc``, ``mad.lo.cc`` / ``madc.hi``), so a
carry costs nothing and a correction is one select per half:

* ``mul``: the 128-bit product from four 32 x 32 multiply-adds in one carry chain, then the
  reduction ``lo + hi_lo * (2^32 - 1) - hi_hi`` (``2^64 = 2^32 - 1``, ``2^96 = -1`` mod p)
  with the same case analysis as :func:`jaxstark.field.goldilocks._reduce128` and ``_fold``;
* ``add``: the 65-bit sum, then one conditional ``+ (2^32 - 1)`` (``_add``);
* ``sub``: the borrowed difference, then one conditional ``- (2^32 - 1)`` (``_sub``).

Inputs must be canonical (``< p``); outputs are canonical, bit for bit the values of the
``jnp`` functions (tested against them on a GPU; there is no PTX off a CUDA device, so a kernel
run in Pallas' interpreter uses the ``jnp`` functions: :func:`ops` chooses).

:func:`ops` also gives a mixed form, ``use_ptx="mul"``: the PTX product with the ``jnp`` add and
subtract, for kernels whose sums do not gain from the PTX add (it ran at 0.87x the ``jnp``
add's speed in an NTT). Poseidon2's Merkle kernels use it: their 2^23 x 62 tree took 125.8 ms
against 131.5 ms with every operation in PTX (H100, ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxstark.field import goldilocks as gl

__all__ = ["FieldOps", "JNP", "PTX", "PTX_FORMS", "ptx_form", "ops", "ext_mul"]

# Each block declares its own registers (a PTX ``{ }`` scope), so copies of it in one kernel
# never clash; $0 is the result, $1 and $2 the operands.
# The canonical value of the sum t1:t0 that wrapped 2^64 (c = 1) or not (c = 0), as ``_fold``:
# add 2^32 - 1 when it wrapped or when the sum is >= p (then the addition itself wraps).
_FOLD = """add.cc.u32 y0, t0, 0xFFFFFFFF;
addc.cc.u32 y1, t1, 0;
addc.u32 c, c, 0;
setp.ne.u32 q, c, 0;
selp.b32 t0, y0, t0, q;
selp.b32 t1, y1, t1, q;
mov.b64 $0, {t0, t1};
}"""

_MUL = (
    """{
.reg .u32 a0, a1, b0, b1, r0, r1, r2, r3, t0, t1, bw, y0, y1, c;
.reg .pred q;
mov.b64 {a0, a1}, $1;
mov.b64 {b0, b1}, $2;
mul.lo.u32 r0, a0, b0;
mul.hi.u32 r1, a0, b0;
mad.lo.cc.u32 r1, a0, b1, r1;
madc.hi.u32 r2, a0, b1, 0;
mad.lo.cc.u32 r1, a1, b0, r1;
madc.hi.cc.u32 r2, a1, b0, r2;
addc.u32 r3, 0, 0;
mad.lo.cc.u32 r2, a1, b1, r2;
madc.hi.u32 r3, a1, b1, r3;
sub.cc.u32 t0, r0, r3;
subc.cc.u32 t1, r1, 0;
subc.u32 bw, 0, 0;
sub.cc.u32 t0, t0, bw;
subc.u32 t1, t1, 0;
sub.cc.u32 y0, 0, r2;
subc.u32 y1, r2, 0;
add.cc.u32 t0, t0, y0;
addc.cc.u32 t1, t1, y1;
addc.u32 c, 0, 0;
"""
    + _FOLD
)

_ADD = (
    """{
.reg .u32 a0, a1, b0, b1, t0, t1, y0, y1, c;
.reg .pred q;
mov.b64 {a0, a1}, $1;
mov.b64 {b0, b1}, $2;
add.cc.u32 t0, a0, b0;
addc.cc.u32 t1, a1, b1;
addc.u32 c, 0, 0;
"""
    + _FOLD
)

_SUB = """{
.reg .u32 a0, a1, b0, b1, d0, d1, bw;
mov.b64 {a0, a1}, $1;
mov.b64 {b0, b1}, $2;
sub.cc.u32 d0, a0, b0;
subc.cc.u32 d1, a1, b1;
subc.u32 bw, 0, 0;
sub.cc.u32 d0, d0, bw;
subc.u32 d1, d1, 0;
mov.b64 $0, {d0, d1};
}"""


def _binary(asm: str):
    def op(a, b):
        from jax.experimental.pallas import triton as plt

        # Pallas types an inline-asm result from its dtype, and an unsigned one becomes an MLIR
        # ``ui64`` that Triton rejects (its integers are signless): run it on int64, the same bits.
        a, b = (jax.lax.bitcast_convert_type(v, jnp.int64) for v in jnp.broadcast_arrays(a, b))
        (out,) = plt.elementwise_inline_asm(
            asm,
            args=[a, b],
            constraints="=l,l,l",
            pack=1,
            result_shape_dtypes=[jax.ShapeDtypeStruct(a.shape, jnp.int64)],
        )
        return jax.lax.bitcast_convert_type(out, jnp.uint64)

    return op


class FieldOps(NamedTuple):
    """The three operations a kernel's butterflies and hashes need, on canonical ``uint64``."""

    name: str
    add: object
    sub: object
    mul: object


JNP = FieldOps("jnp", gl._add, gl._sub, gl._mul_inline)
PTX = FieldOps("ptx", _binary(_ADD), _binary(_SUB), _binary(_MUL))


PTX_FORMS = (False, True, "mul")


def ptx_form(use_ptx: bool | str) -> bool | str:
    """``use_ptx`` checked against :data:`PTX_FORMS` (``False``: the ``jnp`` functions; ``True``:
    all three in PTX; ``"mul"``: the PTX product, ``jnp`` add and subtract); bool-like values
    (``0``, ``np.True_``) come back as ``bool``."""
    if isinstance(use_ptx, str):
        if use_ptx == "mul":
            return use_ptx
    elif use_ptx in (False, True):
        return bool(use_ptx)
    raise ValueError(f"field_ptx: use_ptx must be one of {PTX_FORMS}, got {use_ptx!r}")


def ops(interpret: bool, use_ptx: bool | str = True) -> FieldOps:
    """The field a kernel body uses: inline PTX in a compiled (Triton) kernel when ``use_ptx``
    (only the product when it is ``"mul"``), else -- and always in the interpreter -- the
    ``jnp`` functions. ``use_ptx`` is checked (:func:`ptx_form`) in the interpreter too."""
    form = ptx_form(use_ptx)
    if interpret or form is False:
        return JNP
    if form is True:
        return PTX
    # built per call (from the module's PTX, so a test may stand other functions in for it); the
    # instances are equal and hash alike, as cache keys must
    return FieldOps("ptx-mul", JNP.add, JNP.sub, PTX.mul)


def ext_mul(f: FieldOps, a: tuple, b: tuple) -> tuple:
    """``a * b`` in GF(p^3) = GF(p)[w] / (w^3 - 2) on coordinate triples of lane vectors, with
    ``f``'s operations (Karatsuba: six base products; :mod:`jaxstark.field.extension`'s values)."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    m0, m1, m2 = f.mul(a0, b0), f.mul(a1, b1), f.mul(a2, b2)
    x01 = f.sub(f.sub(f.mul(f.add(a0, a1), f.add(b0, b1)), m0), m1)
    x02 = f.sub(f.sub(f.mul(f.add(a0, a2), f.add(b0, b2)), m0), m2)
    x12 = f.sub(f.sub(f.mul(f.add(a1, a2), f.add(b1, b2)), m1), m2)
    return f.add(m0, f.add(x12, x12)), f.add(x01, f.add(m2, m2)), f.add(x02, m1)
