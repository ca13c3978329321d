"""Hand-written device kernels (Pallas, Triton backend) and where they are used.

Every kernel here has a plain ``jnp`` twin elsewhere in the package -- the CPU path and the
reference it is tested against bit for bit. Which one runs is decided per *platform* when a
program is lowered, not per call: :func:`switch` wraps :func:`jax.lax.platform_dependent`, so
one traced program lowers to the kernel on a CUDA device and to the ``jnp`` twin on the CPU.
The memory planner compiles for the device it will run on and so sees the kernel's buffers.
Where the caller knows the one platform a program is traced for, it says so with
:func:`lowering_for` (the executor does, for every round): :func:`switch` then traces only the
branch that platform runs (tracing both cost about a seventh more of a round's export for
CUDA, benchmarks/RESULTS.md, 2026-12-05). The platform is a JAX user context, part of every ``jit`` cache key,
so a trace made for one platform is never reused for another.

``JAXSTARK_KERNELS`` (read once, at import) chooses the posture:

* ``auto`` (default): the kernels on CUDA devices (NTT passes, Merkle trees, the composition's
  transition constraints, the out-of-domain sums and power tables, DEEP's numerators and
  denominators, batch inversion, the transcript's compressions, the scanned FRI layers' row
  work), ``jnp`` elsewhere;
* ``jnp``: never use the kernels (the baseline the benchmarks compare against);
* ``interpret``: run every kernel everywhere, in Pallas' interpreter off the GPU -- slow, for
  testing the kernels' logic on a CPU at small sizes.

Modules: :mod:`.ntt` (radix-2^r butterfly passes along the row axis), :mod:`.field_ptx`
(Goldilocks arithmetic as inline PTX for compiled kernels), :mod:`.merkle` (leaf hashing and
fused tree levels, generic over an element-wise hash), :mod:`.blake3`, :mod:`.keccak`,
:mod:`.poseidon2` (the hashes in element-wise form), :mod:`.ood` (columns of coefficients
evaluated at extension points in one pass), :mod:`.inverse` (batch inversion in one launch),
:mod:`.sponge` (a transcript's chain of compressions in one launch), :mod:`.fri_scan` (a
scanned FRI layer's row work, in proportion to the layer), :mod:`.powers` (power tables of
extension elements in one launch), :mod:`.deep` (each LDE row's DEEP numerator and
denominator in one pass), :mod:`.composition` (the AIR's transition constraints
summed with their challenges in one pass).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable

import jax

__all__ = ["MODE", "MODES", "switch", "interpret", "kernel_platforms", "launch", "lowering_for"]

MODES = ("auto", "jnp", "interpret")


def _mode_from_env() -> str:
    mode = os.environ.get("JAXSTARK_KERNELS", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"JAXSTARK_KERNELS must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


MODE = _mode_from_env()


def interpret() -> bool:
    """Whether kernels run in Pallas' interpreter (the ``interpret`` posture)."""
    return MODE == "interpret"


def launch(interpret: bool, warps: int = 4, stages: int = 1) -> dict:
    """The ``pallas_call`` keywords of a kernel launch: Pallas' interpreter, or the Triton
    backend (named explicitly: the default GPU backend would be Mosaic) with ``warps`` warps and
    ``stages`` software-pipelining stages."""
    if interpret:
        return {"interpret": True}
    from jax.experimental.pallas import triton as plt

    _name_triton_dialect_module()
    return {"compiler_params": plt.CompilerParams(num_warps=warps, num_stages=stages)}


@functools.cache
def _name_triton_dialect_module() -> None:
    """Make the Triton dialect's Python module importable under the name MLIR's bindings look
    for. They look a dialect's module up by its namespace (``tt``) under their search prefixes
    whenever they type a value, and a lookup that finds nothing is not remembered: lowering a
    Triton kernel searched ``sys.path`` for ``jaxlib.mlir.dialects.tt`` and two other names
    about 30,000 times per plan (a fifth of the rounds' trace and export for CUDA; the lowered
    programs are byte for byte the same). Nothing is done where that name exists."""
    import importlib.util
    import sys

    name = "jaxlib.mlir.dialects.tt"
    try:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            return
        from jaxlib.triton import dialect
    except ImportError:  # another jaxlib layout: leave it
        return
    sys.modules[name] = dialect


def kernel_platforms() -> tuple[str, ...]:
    """Platforms whose lowering uses the kernels under the current posture: under ``auto``,
    CUDA -- when this process has a CUDA backend at all. Without one no program of this process
    can be lowered for CUDA, so the kernels are not even traced (tracing them is most of the
    tracing time of a round on a CPU-only machine)."""
    if MODE == "auto":
        return ("cuda",) if _has_cuda() else ()
    return {"jnp": (), "interpret": ("cpu", "cuda")}[MODE]


@functools.cache
def _has_cuda() -> bool:
    try:
        return bool(jax.devices("cuda"))
    except RuntimeError:  # no CUDA backend in this process
        return False


# The one platform the program being traced is lowered for ("cpu", "cuda"), or None: unknown.
_LOWERING = jax.make_user_context(None) if hasattr(jax, "make_user_context") else None


def lowering_for(platform: str | None):
    """A context in which traces are made for ``platform`` alone (None: for any platform); a
    no-op where this JAX has no user contexts."""
    return contextlib.nullcontext() if _LOWERING is None else _LOWERING(platform)


def switch(reference: Callable, kernel: Callable, *args):
    """``kernel(*args)`` where the posture puts kernels on the lowering platform, else
    ``reference(*args)``. Both must return the same shapes and dtypes (and the same values).
    Inside :func:`lowering_for` only the chosen one is traced; elsewhere both, and the
    lowering picks (:func:`jax.lax.platform_dependent`)."""
    platforms = kernel_platforms()
    if not platforms:
        return reference(*args)
    if MODE == "interpret":
        return kernel(*args)
    target = None if _LOWERING is None else _LOWERING.value
    if target is not None:
        return kernel(*args) if target in platforms else reference(*args)
    return jax.lax.platform_dependent(*args, default=reference, **{p: kernel for p in platforms})
