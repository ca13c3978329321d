"""Validation at the public boundary of the field modules.

Field operations are plain traceable functions. When they are called on concrete values (eager
use, notebooks, tests) their inputs are checked here: dtype must be ``uint64`` and every value
must be canonical (< p). Under ``jit``/``vmap``/``grad`` tracing the arguments are tracers and
only the (static) dtype and shape are checked, so traced code pays nothing at run time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.errors import FieldDtypeError, NonCanonicalError, ShapeError, X64DisabledError

P = 0xFFFF_FFFF_0000_0001
_P_U64 = np.uint64(P)


def require_x64() -> None:
    """Raise if JAX's 64-bit mode is off (jaxstark turns it on at import)."""
    if not jax.config.jax_enable_x64:
        raise X64DisabledError(
            "jaxstark needs JAX's 64-bit mode (Goldilocks elements are uint64), but "
            "jax_enable_x64 is off. jaxstark enables it at import; something switched it "
            "off afterwards. Re-enable it with jax.config.update('jax_enable_x64', True)."
        )


def _is_tracer(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _first_bad(values: np.ndarray) -> str:
    flat = values.reshape(-1)
    idx = int(np.argmax(flat >= _P_U64))
    where = np.unravel_index(idx, values.shape) if values.ndim else ()
    return f"first at index {tuple(int(i) for i in where)}: {int(flat[idx])}"


def non_canonical(name: str, count: int, first: str, among: str = "") -> NonCanonicalError:
    """The error for ``count`` values of ``name`` (``among``: of which part of it) that are
    ``>= p``; ``first``: where the first is."""
    return NonCanonicalError(
        f"{name}: {count} value(s){among} are >= p = {P} ({first}); field inputs must be canonical (use "
        "goldilocks.canonicalize for arbitrary uint64 values)"
    )


def field_array(x: Any, name: str, *, ext: bool = False, keep_host: bool = False, values: bool = True) -> Any:
    """Return ``x`` as a uint64 array of canonical Goldilocks elements, or raise.

    Accepts Python ints in ``[0, p)``, numpy and JAX ``uint64`` arrays, and tracers (checked
    for dtype and shape only). ``ext=True`` additionally requires a trailing axis of size 3.
    ``keep_host=True`` returns host (numpy) input as a numpy array instead of moving it to the
    default device. ``values=False`` checks the dtype and shape only: the caller checks that
    the values are below p itself (the prover, on the device, in its first round).
    """
    require_x64()
    if isinstance(x, bool):
        raise FieldDtypeError(f"{name}: expected a Goldilocks element, got a bool")
    if isinstance(x, int):
        if not 0 <= x < P:
            raise NonCanonicalError(
                f"{name}: {x} is not a canonical Goldilocks element (need 0 <= x < p = {P}); "
                "use goldilocks.from_int to reduce arbitrary integers"
            )
        x = np.uint64(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        raise FieldDtypeError(
            f"{name}: expected a uint64 array of Goldilocks elements, got {type(x).__name__}; "
            "use goldilocks.from_int to convert Python integers"
        )
    if np.dtype(dtype) != np.uint64:
        raise FieldDtypeError(
            f"{name}: expected dtype uint64, got {np.dtype(dtype)} with shape {tuple(x.shape)}; "
            "jaxstark never converts field elements implicitly (a 32-bit or signed array "
            "would silently lose or misread values). Convert with goldilocks.from_int."
        )
    if ext and (x.ndim == 0 or x.shape[-1] != 3):
        raise ShapeError(f"{name}: cubic-extension elements need a trailing axis of size 3, got shape {tuple(x.shape)}")
    if _is_tracer(x):
        return x
    if not values:
        return x if isinstance(x, jax.Array) else np.asarray(x) if keep_host else jnp.asarray(x)
    if isinstance(x, jax.Array):
        if bool(jnp.any(x >= _P_U64)):
            host = np.asarray(x)
            raise non_canonical(name, int(np.count_nonzero(host >= _P_U64)), _first_bad(host))
        return x
    host = np.asarray(x)
    if host.size and host.max() >= _P_U64:  # one pass, no mask (twice as fast as any(host >= p))
        raise non_canonical(name, int(np.count_nonzero(host >= _P_U64)), _first_bad(host))
    return host if keep_host else jnp.asarray(host)


def checked(n_field_args: int, *, ext: tuple[bool, ...] | None = None) -> Callable:
    """Decorator: validate the first ``n_field_args`` positional arguments, then call the
    jitted body. ``ext[i]`` says whether argument ``i`` is an extension element."""
    ext = ext or (False,) * n_field_args

    def deco(raw: Callable) -> Callable:
        jitted = jax.jit(raw)

        @functools.wraps(raw)
        def op(*args: Any) -> Any:
            if len(args) != n_field_args:
                raise TypeError(f"{raw.__name__} takes {n_field_args} argument(s), got {len(args)}")
            args = tuple(field_array(a, f"{raw.__name__} argument {i}", ext=ext[i]) for i, a in enumerate(args))
            return jitted(*args)

        return op

    return deco
