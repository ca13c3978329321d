"""Number-theoretic transform over Goldilocks, batched over columns.

Layout
------
A batch of polynomials or evaluation vectors is one ``uint64`` array of shape
``(n, *batch)`` -- **rows first, row-major**: row ``i`` holds coefficient/evaluation ``i`` of
every column, contiguously. A trace is ``(rows, cols)``; an extension-valued column set is
``(rows, cols, 3)`` (the transform is linear over the base field, so extension coordinates are
just more batch columns). Reasons:

* Merkle leaves are rows, so every later commitment reads each leaf as one contiguous run;
* the transform runs along axis 0, so each butterfly combines two whole rows and the
  vector lanes walk the contiguous column axis (coalesced on a GPU);
* row chunking (``(chunks, chunk_rows, cols)``) and ``vmap`` over chunks add a leading axis
  without touching this layout.

Transform
---------
:func:`ntt` maps coefficients ``c_k`` (natural order) to evaluations ``y_i = sum_k c_k w^(ik)``
at ``w^i`` for ``i = 0..n-1`` (natural order), ``w = gl.root_of_unity(log2 n)``. :func:`intt`
is its inverse. Internally: decimation in frequency (Gentleman-Sande) to bit-reversed order,
then a bit-reversal gather. The butterflies are :func:`dif_bitrev`: on a CUDA device the
radix-2^r Pallas kernel of :mod:`jaxstark.kernels.ntt` (several levels per pass over memory),
elsewhere -- and as its reference -- plain ``jnp`` radix-2, one pass per level, every level
the same constant-geometry step in one ``fori_loop`` (:func:`_dif_levels`; the program holds
one butterfly whatever n). :mod:`jaxstark.kernels` says how the choice is made.

Twiddles are computed once per size by :func:`ntt_tables` (cached; an :class:`NTTTables`
PyTree) and passed to the jitted transform as *arguments*, never baked into the program as
constants. Inside a caller's own ``jit``, pass ``tables=`` explicitly (as an argument of that
``jit``); without it the tables are recomputed inside the traced program (``n/2``
multiplications -- correct, just not cached).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt64

from jaxstark.compile_cache import compiler_options
from jaxstark.errors import ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field import host
from jaxstark.field._check import field_array
from jaxstark.kernels import interpret as _interpret
from jaxstark.kernels import ntt as _kntt
from jaxstark.kernels import switch

__all__ = [
    "NTTTables",
    "ntt_tables",
    "ntt",
    "intt",
    "bit_reverse",
    "bit_reverse_indices",
    "log2_exact",
]

MAX_LOG_N = gl.TWO_ADICITY


def log2_exact(n: int, what: str = "size") -> int:
    """log2(n) for a power of two n >= 1, else a ShapeError naming ``what``."""
    if not isinstance(n, (int, np.integer)) or n < 1 or n & (n - 1):
        raise ShapeError(f"{what} must be a power of two >= 1, got {n}")
    return int(n).bit_length() - 1


class NTTTables(eqx.Module):
    """Twiddle factors for transforms of size ``2^log_n``: ``forward[j] = w^j`` and
    ``inverse[j] = w^-j`` for ``j < n/2`` (one entry for n = 1), and ``n_inv = 1/n``."""

    log_n: int = eqx.field(static=True)
    forward: UInt64[Array, " half"]
    inverse: UInt64[Array, " half"]
    n_inv: UInt64[Array, ""]

    @property
    def n(self) -> int:
        return 1 << self.log_n

    @property
    def nbytes(self) -> int:
        return int(self.forward.size + self.inverse.size + 1) * 8


def _table_scalars(log_n: int) -> tuple[int, int, int, int]:
    """``(w, 1/w, entries, 1/n)`` of the size-``2^log_n`` tables."""
    w = gl.root_of_unity(log_n)
    return w, pow(w, gl.P - 2, gl.P), max((1 << log_n) >> 1, 1), pow(1 << log_n, gl.P - 2, gl.P)


def _make_tables(log_n: int) -> NTTTables:
    w, w_inv, half, n_inv = _table_scalars(log_n)
    fwd = gl._powers(jnp.asarray(np.uint64(w)), half)
    inv = gl._powers(jnp.asarray(np.uint64(w_inv)), half)
    return NTTTables(log_n, fwd, inv, jnp.asarray(np.uint64(n_inv)))


_make_tables_jit = jax.jit(_make_tables, static_argnums=0)


def concrete(jitted, *static, device: jax.Device):
    """``jitted(*static)`` -- a jitted table builder whose arguments are all static -- computed
    on ``device`` as concrete arrays, even when first asked for inside a trace (a cached tracer
    would leak into every later caller): the builder is compiled and its executable called,
    which no trace stages out. One program per shape, kept by the persistent compilation cache
    (evaluating the builder op by op, as ``jax.ensure_compile_time_eval`` does, compiles every
    primitive separately)."""
    with jax.default_device(device):
        return jitted.lower(*static).compile(compiler_options([device]))()


# Tables of at most this many entries are computed with Python integers on the host and copied
# to the device (milliseconds), not by a compiled builder (loading or compiling its executable
# costs a new process tenths of a second per table); both give the same values (tested).
HOST_TABLES_UP_TO = 1 << 14


def _host_tables(log_n: int) -> tuple:
    """:func:`_make_tables`' ``(forward, inverse, n_inv)`` as numpy arrays, in Python integers."""
    w, w_inv, half, n_inv = _table_scalars(log_n)
    return host.powers(w, half), host.powers(w_inv, half), np.uint64(n_inv)


def on_device(tree, device: jax.Device):
    """Host (numpy) tables as concrete arrays on ``device``, even when first asked for inside a
    trace (a cached tracer would leak into every later caller)."""
    with jax.ensure_compile_time_eval():
        return jax.device_put(tree, device)


@functools.lru_cache(maxsize=64)
def _cached_tables(log_n: int, device) -> NTTTables:
    if (1 << log_n) // 2 <= HOST_TABLES_UP_TO:
        return NTTTables(log_n, *on_device(_host_tables(log_n), device))
    return concrete(_make_tables_jit, log_n, device=device)


def ntt_tables(log_n: int) -> NTTTables:
    """Twiddle tables for size ``2^log_n`` on the default device, computed once and cached."""
    if not isinstance(log_n, (int, np.integer)) or not 0 <= log_n <= MAX_LOG_N:
        raise ShapeError(f"ntt_tables: log_n must be an int in [0, {MAX_LOG_N}], got {log_n!r}")
    return _cached_tables(int(log_n), _target_device())


def _target_device() -> jax.Device:
    """Where new arrays land: ``jax_default_device`` if set, else this process's first device."""
    d = jax.config.jax_default_device
    if d is None:
        return jax.local_devices()[0]
    return jax.local_devices(backend=d)[0] if isinstance(d, str) else d


def bit_reverse_indices(log_n: int) -> np.ndarray:
    """Host-side permutation ``rev`` with ``rev[i]`` = i's ``log_n``-bit reversal (int64)."""
    n = 1 << log_n
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(log_n):
        rev |= ((idx >> b) & 1) << (log_n - 1 - b)
    return rev


def _bit_reverse_iota(log_n: int) -> Array:
    """Bit-reversal permutation computed inside the program (no embedded constant)."""
    return _kntt.reverse_bits(jnp.arange(1 << log_n, dtype=jnp.uint32), log_n)


def _bit_reverse_rows(x: Array, log_n: int) -> Array:
    if log_n == 0:
        return x
    return jnp.take(x, _bit_reverse_iota(log_n), axis=0, indices_are_sorted=False, unique_indices=True)


def bit_reverse(x: Array, axis: int = 0) -> Array:
    """Permute ``x`` along ``axis`` (a power-of-two length) into bit-reversed index order."""
    n = x.shape[axis]
    log_n = log2_exact(n, f"bit_reverse: length of axis {axis}")
    return jnp.moveaxis(_bit_reverse_rows(jnp.moveaxis(x, axis, 0), log_n), 0, axis)


def _dif_levels(x: Array, twiddles: Array, log_n: int) -> Array:
    """Radix-2 DIF butterflies along axis 0; natural-order input, bit-reversed output.
    ``twiddles[j] = w_n^j`` (j < n/2) for the transform's root ``w_n``.

    In constant-geometry (Pease) form, so every level is the same step and the levels run in
    one ``fori_loop`` (one copy of the butterfly in the program, whatever n): level ``s`` pairs
    ``x[i]`` with ``x[i + n/2]``, writes ``x[i] + x[i + n/2]`` to row ``2i`` and
    ``(x[i] - x[i + n/2]) w_n^((i >> s) << s)`` to row ``2i + 1``. That is the in-place
    radix-2 DIF with its rows permuted at every level and none at the end: the same output."""
    if log_n == 0:
        return x
    n = 1 << log_n
    half = n // 2
    batch = x.shape[1:]
    i = jnp.arange(half, dtype=jnp.uint32)

    def level(s, x):
        a, b = x[:half], x[half:]
        s = s.astype(jnp.uint32)
        w = twiddles[(i >> s) << s].reshape(half, *((1,) * len(batch)))
        return jnp.stack([gl._add(a, b), gl._mul(gl._sub(a, b), w)], axis=1).reshape(n, *batch)

    return lax.fori_loop(0, log_n, level, x)


def dif_bitrev(x: Array, roots: Array) -> Array:
    """DIF butterflies along axis 0 (natural in, bit-reversed out, unscaled) with
    ``roots[j] = w^j``: the Pallas kernel on CUDA, :func:`_dif_levels` elsewhere. Traceable."""
    log_n = x.shape[0].bit_length() - 1
    return switch(
        lambda a, w: _dif_levels(a, w, log_n),
        lambda a, w: _kntt.dif(a, w, interpret=_interpret()),
        x,
        roots,
    )


def _ntt_core(x: Array, tables: NTTTables) -> Array:
    return _bit_reverse_rows(dif_bitrev(x, tables.forward), tables.log_n)


def _intt_core(x: Array, tables: NTTTables) -> Array:
    y = _bit_reverse_rows(dif_bitrev(x, tables.inverse), tables.log_n)
    return gl._mul(y, tables.n_inv)


_ntt_jit = jax.jit(_ntt_core)
_intt_jit = jax.jit(_intt_core)


def check_rows(x, name: str) -> tuple[Array, int]:
    """Validate a ``(n, *batch)`` field array whose row count n is a power of two <= 2^32."""
    x = field_array(x, name)
    if x.ndim < 1:
        raise ShapeError(f"{name}: expected an array of shape (rows, ...), got a scalar")
    log_n = log2_exact(x.shape[0], f"{name}: row count")
    if log_n > MAX_LOG_N:
        raise ShapeError(f"{name}: {x.shape[0]} rows exceed the field's 2^{MAX_LOG_N} two-adic limit")
    return x, log_n


def resolve_tables(tables: NTTTables | None, log_n: int, traced: bool, name: str) -> NTTTables:
    """The tables to use for a size-2^log_n transform: the caller's (checked), the cache, or,
    under tracing without tables, freshly computed inside the program."""
    if tables is None:
        return _make_tables(log_n) if traced else ntt_tables(log_n)
    if not isinstance(tables, NTTTables):
        raise TypeError(f"{name}: tables must be NTTTables, got {type(tables).__name__}")
    if tables.log_n != log_n:
        raise ShapeError(f"{name}: tables are for size 2^{tables.log_n}, input needs 2^{log_n}")
    return tables


def ntt(x: UInt64[Array, " n *batch"], tables: NTTTables | None = None) -> UInt64[Array, " n *batch"]:
    """Forward NTT along axis 0: coefficients (natural order) to evaluations at ``w^i``."""
    x, log_n = check_rows(x, "ntt input")
    traced = isinstance(x, jax.core.Tracer)
    return _ntt_jit(x, resolve_tables(tables, log_n, traced, "ntt"))


def intt(x: UInt64[Array, " n *batch"], tables: NTTTables | None = None) -> UInt64[Array, " n *batch"]:
    """Inverse NTT along axis 0: evaluations at ``w^i`` to coefficients."""
    x, log_n = check_rows(x, "intt input")
    traced = isinstance(x, jax.core.Tracer)
    return _intt_jit(x, resolve_tables(tables, log_n, traced, "intt"))
