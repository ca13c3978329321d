"""Low-degree extension on a coset.

``coset_lde(trace, blowup)`` interpolates each column of a ``(n, *batch)`` trace over the
size-n subgroup and evaluates it on the coset ``offset * <w_L>`` of size ``L = n * blowup``:
output row ``t`` is the value at ``offset * w_L^t`` (natural order), ``w_L =
gl.root_of_unity(log2 L)``, default ``offset = 3`` (not in the subgroup, so the LDE domain and
the trace domain are disjoint).

Method (no zero-padding, no size-L transform): write ``t = i * blowup + j``. Then
``offset * w_L^t = w_n^i * (offset * w_L^j)``, so the values for a fixed ``j`` are a size-n NTT
of the coefficients scaled by ``(offset * w_L^j)^k``. All ``blowup`` shifted copies are
transformed together as one ``(n, blowup, *batch)`` batch, whose row-major reshape to
``(L, *batch)`` is exactly natural order. The shift factors are an ``(n, blowup)`` table,
cached per shape with the size-n twiddles in :class:`LDETables`.

On a CUDA device the transforms are the Pallas kernels of :mod:`jaxstark.kernels.ntt` and the
bit reversals cancel: the inverse transform (DIF) leaves the coefficients in bit-reversed order,
the shift factors are read in that order, and the forward transform (DIT) takes bit-reversed
input to natural-order output -- no permutation of the big array at all. The ``blowup`` shifted
copies are formed in the forward transform's first pass as it loads the coefficients
(:func:`jaxstark.kernels.ntt.dit_shifted`), so the ``(L, *batch)`` shifted batch is never written
and read back. The coefficients the commitment rounds keep (:func:`_interpolate_extend`) are put
in natural order in place once the extension has read them
(:func:`jaxstark.kernels.ntt.bit_reverse_scaled`), so no second copy of them is held. Elsewhere
the plain ``jnp`` path below runs; both give identical values.

Device memory (plain ``jnp`` path): input ``n*c``, shifted batch ``L*c``, butterfly ping-pong
``2*L*c`` and output ``L*c`` elements at the widest point; the memory planner reads the exact
figure from XLA.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt64

from jaxstark.errors import ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field import host
from jaxstark.kernels import interpret as _interpret
from jaxstark.kernels import ntt as _kntt
from jaxstark.kernels import switch
from jaxstark.ntt import (
    HOST_TABLES_UP_TO,
    MAX_LOG_N,
    NTTTables,
    _bit_reverse_rows,
    _dif_levels,
    _host_tables,
    _intt_core,
    _make_tables,
    _target_device,
    check_rows,
    concrete,
    dif_bitrev,
    on_device,
    resolve_tables,
)

__all__ = ["DEFAULT_OFFSET", "LDETables", "lde_tables", "coset_lde", "coset_evaluate", "coset_points"]

DEFAULT_OFFSET = 3


class LDETables(eqx.Module):
    """Everything a size-n -> size-n*blowup coset LDE needs: the size-n twiddles and
    ``shifts[k, j] = (offset * w_L^j)^k``."""

    log_blowup: int = eqx.field(static=True)
    offset: int = eqx.field(static=True)
    ntt: NTTTables
    shifts: UInt64[Array, " n blowup"]

    @property
    def log_n(self) -> int:
        return self.ntt.log_n

    @property
    def nbytes(self) -> int:
        return self.ntt.nbytes + int(self.shifts.size) * 8


def _shift_bases(log_n: int, log_blowup: int, offset: int) -> list[int]:
    """``offset * w_L^j`` for each column ``j`` of the shifts table."""
    w_l = gl.root_of_unity(log_n + log_blowup)
    return [offset * pow(w_l, j, gl.P) % gl.P for j in range(1 << log_blowup)]


def _make_shifts(log_n: int, log_blowup: int, offset: int) -> Array:
    cols = [gl._powers(jnp.asarray(np.uint64(b)), 1 << log_n) for b in _shift_bases(log_n, log_blowup, offset)]
    return jnp.stack(cols, axis=1)


def _make_lde_tables(log_n: int, log_blowup: int, offset: int) -> LDETables:
    return LDETables(log_blowup, offset, _make_tables(log_n), _make_shifts(log_n, log_blowup, offset))


_make_lde_tables_jit = jax.jit(_make_lde_tables, static_argnums=(0, 1, 2))


def _host_shifts(log_n: int, log_blowup: int, offset: int) -> np.ndarray:
    """:func:`_make_shifts` as a numpy array, in Python integers."""
    return np.stack([host.powers(b, 1 << log_n) for b in _shift_bases(log_n, log_blowup, offset)], axis=1)


@functools.lru_cache(maxsize=32)
def _cached(log_n: int, log_blowup: int, offset: int, device) -> LDETables:
    if (1 << (log_n + log_blowup)) <= HOST_TABLES_UP_TO:  # small: on the host (see ntt.HOST_TABLES_UP_TO)
        ntt = NTTTables(log_n, *on_device(_host_tables(log_n), device))
        return LDETables(log_blowup, offset, ntt, on_device(_host_shifts(log_n, log_blowup, offset), device))
    return concrete(_make_lde_tables_jit, log_n, log_blowup, offset, device=device)


def _check_params(log_n: int, blowup: int, offset: int) -> int:
    if not isinstance(blowup, (int, np.integer)) or blowup < 2 or blowup & (blowup - 1):
        raise ShapeError(f"blowup must be a power of two >= 2, got {blowup!r}")
    log_blowup = int(blowup).bit_length() - 1
    if log_n + log_blowup > MAX_LOG_N:
        raise ShapeError(f"LDE size 2^{log_n} * {blowup} exceeds the field's 2^{MAX_LOG_N} two-adic limit")
    if not isinstance(offset, (int, np.integer)) or not 0 < offset < gl.P:
        raise ValueError(f"coset offset must be a nonzero canonical field element, got {offset!r}")
    if pow(int(offset), 1 << (log_n + log_blowup), gl.P) == 1:
        raise ValueError(
            f"coset offset {offset} lies in the size-2^{log_n + log_blowup} subgroup; the coset "
            "would be the subgroup itself"
        )
    return log_blowup


def lde_tables(log_n: int, blowup: int, offset: int = DEFAULT_OFFSET) -> LDETables:
    """Tables for a ``2^log_n``-row LDE at ``blowup``, computed once per shape and cached."""
    log_blowup = _check_params(log_n, blowup, offset)
    return _cached(int(log_n), log_blowup, int(offset), _target_device())


def _evaluate_reference(coeffs: Array, tables: LDETables) -> Array:
    n = coeffs.shape[0]
    batch = coeffs.shape[1:]
    b = 1 << tables.log_blowup
    shifts = tables.shifts.reshape(n, b, *((1,) * len(batch)))
    y = gl._mul(coeffs[:, None], shifts)  # (n, blowup, *batch)
    y = _bit_reverse_rows(_dif_levels(y, tables.ntt.forward, tables.log_n), tables.log_n)
    return y.reshape(n * b, *batch)


def _extend_bitrev(coeffs_br: Array, tables: LDETables, scale: Array | None = None) -> Array:
    """The LDE from coefficients in bit-reversed order (optionally times ``scale``), by the
    kernels: the coset copies formed in the first DIT pass, straight to natural order."""
    n = coeffs_br.shape[0]
    batch = coeffs_br.shape[1:]
    shifts = _bit_reverse_rows(tables.shifts, tables.log_n)
    if scale is not None:
        shifts = gl._mul(shifts, scale)
    y = _kntt.dit_shifted(coeffs_br.reshape(n, -1), shifts, tables.ntt.forward, interpret=_interpret())
    return y.reshape(n << tables.log_blowup, *batch)


def _evaluate_core(coeffs: Array, tables: LDETables) -> Array:
    def kernel(c, t):
        return _extend_bitrev(_bit_reverse_rows(c, t.log_n), t)

    return switch(_evaluate_reference, kernel, coeffs, tables)


def _interpolate_extend(trace: Array, tables: LDETables) -> tuple[Array, Array]:
    """``(coefficients, LDE)`` of a trace: what the commitment rounds keep."""

    def reference(x, t):
        coeffs = _intt_core(x, t.ntt)
        return coeffs, _evaluate_reference(coeffs, t)

    def kernel(x, t):
        coeffs_br = dif_bitrev(x, t.ntt.inverse)
        lde = _extend_bitrev(coeffs_br, t, t.ntt.n_inv)
        # the extension has read the bit-reversed coefficients before they are put in natural
        # order in their own buffer (the barrier orders the two), so the round holds no copy
        coeffs_br, lde = jax.lax.optimization_barrier((coeffs_br, lde))
        n = coeffs_br.shape[0]
        coeffs = _kntt.bit_reverse_scaled(coeffs_br.reshape(n, -1), t.ntt.n_inv, interpret=_interpret())
        return coeffs.reshape(coeffs_br.shape), lde

    return switch(reference, kernel, trace, tables)


def _lde_core(trace: Array, tables: LDETables) -> Array:
    def kernel(x, t):
        return _extend_bitrev(dif_bitrev(x, t.ntt.inverse), t, t.ntt.n_inv)

    return switch(lambda x, t: _evaluate_reference(_intt_core(x, t.ntt), t), kernel, trace, tables)


_evaluate_jit = jax.jit(_evaluate_core)
_lde_jit = jax.jit(_lde_core)


def _resolve(tables: LDETables | None, log_n: int, blowup: int, offset: int, traced: bool) -> LDETables:
    log_blowup = _check_params(log_n, blowup, offset)
    if tables is None:
        return _make_lde_tables(log_n, log_blowup, offset) if traced else lde_tables(log_n, blowup, offset)
    if not isinstance(tables, LDETables):
        raise TypeError(f"tables must be LDETables, got {type(tables).__name__}")
    if (tables.log_n, tables.log_blowup, tables.offset) != (log_n, log_blowup, offset):
        raise ShapeError(
            f"LDE tables are for 2^{tables.log_n} rows, blowup {1 << tables.log_blowup}, offset "
            f"{tables.offset}; the call needs 2^{log_n} rows, blowup {blowup}, offset {offset}"
        )
    resolve_tables(tables.ntt, log_n, traced, "coset_lde")
    return tables


def coset_lde(
    trace: UInt64[Array, " n *batch"],
    blowup: int,
    offset: int = DEFAULT_OFFSET,
    tables: LDETables | None = None,
) -> UInt64[Array, " n_times_blowup *batch"]:
    """Evaluations of each column's interpolant on ``offset * <w_L>``, ``L = n * blowup``,
    in natural order. ``trace`` is ``(n, *batch)`` with n a power of two."""
    trace, log_n = check_rows(trace, "coset_lde trace")
    traced = isinstance(trace, jax.core.Tracer)
    return _lde_jit(trace, _resolve(tables, log_n, blowup, offset, traced))


def coset_evaluate(
    coeffs: UInt64[Array, " n *batch"],
    blowup: int,
    offset: int = DEFAULT_OFFSET,
    tables: LDETables | None = None,
) -> UInt64[Array, " n_times_blowup *batch"]:
    """Like :func:`coset_lde`, but from coefficients (degree < n) instead of evaluations."""
    coeffs, log_n = check_rows(coeffs, "coset_evaluate coefficients")
    traced = isinstance(coeffs, jax.core.Tracer)
    return _evaluate_jit(coeffs, _resolve(tables, log_n, blowup, offset, traced))


def _coset_points(log_size: int, offset: int) -> Array:
    w = gl._powers(jnp.asarray(np.uint64(gl.root_of_unity(log_size))), 1 << log_size)
    return gl._mul(w, np.uint64(offset % gl.P))


def _coset_interpolate(evals: Array, tables: NTTTables, offset: int) -> Array:
    """Coefficients of the polynomial taking ``evals`` on ``offset * <w_m>`` (natural order):
    an inverse NTT gives the coefficients of ``f(offset * y)``; coefficient k is then divided by
    ``offset^k``. Traceable."""
    return _interpolate_on_coset(evals, tables, np.uint64(pow(offset, gl.P - 2, gl.P)))


def _interpolate_on_coset(evals: Array, tables: NTTTables, inv_offset) -> Array:
    """:func:`_coset_interpolate` given ``1 / offset`` (a constant or a traced uint64 scalar)."""
    shifted = _intt_core(evals, tables)
    scale = gl._powers(jnp.asarray(inv_offset), evals.shape[0])
    return gl._mul(shifted, scale.reshape(-1, *((1,) * (evals.ndim - 1))))


def coset_points(log_size: int, offset: int = DEFAULT_OFFSET) -> UInt64[Array, " size"]:
    """The domain ``offset * w^t`` for ``t < 2^log_size`` as a uint64 array (natural order)."""
    if not 0 <= log_size <= MAX_LOG_N:
        raise ShapeError(f"coset_points: log_size must be in [0, {MAX_LOG_N}], got {log_size}")
    return _coset_points(log_size, offset)
