"""The memory budget of a device, and the facts a diagnostic reports about it.

The budget is a **process constant**: it depends on the device and the environment, never on
how much memory happens to be free at the moment, so every admission check of a shape agrees
with the first. Sources, in order of precedence:

1. ``JAXSTARK_VRAM_BUDGET_MB`` (environment; MiB, a positive number);
2. ``StarkConfig.vram_budget_mb`` (a config field; MiB);
3. XLA's allocator limit ``device.memory_stats()["bytes_limit"]`` times ``HEADROOM`` (0.8): the
   pool JAX's allocator may use (75% of the card by default, or what
   ``XLA_PYTHON_CLIENT_MEM_FRACTION`` says), less a margin for fragmentation and for buffers
   XLA's per-executable analysis does not see (the allocator's own bookkeeping, cuBLAS/cuFFT
   workspaces);
4. on a backend that reports no memory statistics (the CPU): the machine's physical memory
   (``sysconf(SC_PHYS_PAGES) * SC_PAGE_SIZE``) times ``HEADROOM``.

Live free/total memory is read only for diagnostics (:func:`live_memory`).
"""

from __future__ import annotations

import dataclasses
import os

import jax

__all__ = ["Budget", "device_budget", "live_memory", "allocator_posture", "HEADROOM", "ENV_BUDGET"]

HEADROOM = 0.8
ENV_BUDGET = "JAXSTARK_VRAM_BUDGET_MB"
MIB = 1 << 20
_POSTURE_VARS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR")


@dataclasses.dataclass(frozen=True)
class Budget:
    """Bytes a proof may hold on ``device`` at once, and where the figure came from."""

    bytes: int
    source: str
    device: str

    def __str__(self) -> str:
        return f"{self.bytes / 2**30:.2f} GiB on {self.device} ({self.source})"


def _describe(device: jax.Device) -> str:
    return f"{device.platform}:{device.id} ({device.device_kind})"


def _memory_stats(device: jax.Device) -> dict | None:
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 -- backends without the call raise various errors
        return None
    return stats or None


def device_budget(device: jax.Device, config_mb: float | None = None) -> Budget:
    """The budget for ``device`` (see the module docstring for the order of sources)."""
    where = _describe(device)
    env = os.environ.get(ENV_BUDGET)
    if env is not None and env.strip():
        try:
            mb = float(env)
        except ValueError:
            raise ValueError(f"{ENV_BUDGET}={env!r} is not a number of MiB") from None
        if not mb > 0:
            raise ValueError(f"{ENV_BUDGET}={env!r} must be a positive number of MiB")
        return Budget(int(mb * MIB), f"{ENV_BUDGET}={env}", where)
    if config_mb is not None:
        return Budget(int(config_mb * MIB), f"StarkConfig.vram_budget_mb={config_mb}", where)
    stats = _memory_stats(device)
    if stats and stats.get("bytes_limit"):
        limit = int(stats["bytes_limit"])
        return Budget(int(limit * HEADROOM), f"XLA allocator limit {limit:,} B x headroom {HEADROOM}", where)
    phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return Budget(
        int(phys * HEADROOM), f"host physical memory {phys:,} B x headroom {HEADROOM} (no device stats)", where
    )


def live_memory(device: jax.Device) -> str:
    """Free and total device memory right now, for diagnostics only."""
    stats = _memory_stats(device)
    if not stats or not stats.get("bytes_limit"):
        return f"{_describe(device)} reports no memory statistics"
    limit, used = int(stats["bytes_limit"]), int(stats.get("bytes_in_use", 0))
    peak = int(stats.get("peak_bytes_in_use", 0))
    return (
        f"{(limit - used) / 2**30:.2f} GiB free of {limit / 2**30:.2f} GiB (allocator limit) on {_describe(device)}; "
        f"in use {used / 2**30:.2f} GiB, peak {peak / 2**30:.2f} GiB"
    )


def allocator_posture() -> str:
    """The environment that shapes JAX's GPU allocator."""
    return ", ".join(f"{name}={os.environ.get(name, '(unset)')}" for name in _POSTURE_VARS)
