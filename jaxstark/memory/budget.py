"""The memory budget of a device, and the facts a diagnostic reports about it.

The budget is a **process constant**: it depends on the device and the environment, never on
how much memory happens to be free at the moment, so every admission check of a shape agrees
with the first. Sources, in order of precedence:

1. ``JAXSTARK_VRAM_BUDGET_MB`` (environment; MiB, a positive number);
2. ``StarkConfig.vram_budget_mb`` (a config field; MiB);
3. XLA's allocator limit ``device.memory_stats()["bytes_limit"]`` (the pool JAX's allocator may
   use: 75% of the card by default, or what ``XLA_PYTHON_CLIENT_MEM_FRACTION`` says) times a
   headroom that depends on the allocator posture (:func:`headroom`), measured on an H200
   (``benchmarks/bench_memory.py --headroom``, results in ``benchmarks/RESULTS.md``):

   * preallocated (JAX's default: one region reserved up front): ``HEADROOM`` = 0.9. A proof
     planned at 80, 90, 95, 98 and 100% of the limit ran every time (measured peak 96% of the
     limit); the remaining 10% covers what the plan does not see -- the small arrays the host
     code makes between rounds, plan error and XLA's compile-time autotuning scratch (up to
     2 GiB, while planning, before the proof's buffers exist). Chunks the allocator hands out
     larger than their request (measured up to +192 MiB at the trace commit) are counted by the
     plan since it replays the proof's buffers through a simulated pool (:mod:`.pool`);
   * growing on demand (``XLA_PYTHON_CLIENT_PREALLOCATE=false``) or the platform allocator:
     ``HEADROOM_GROWTH`` = 0.7. Regions are allocated one by one and a large buffer needs one
     contiguous region: the same proof ran at 50, 60 and 70% of the limit and ran out of memory
     at 80%;
4. on a backend that reports no memory statistics (the CPU): the machine's physical memory
   (``sysconf(SC_PHYS_PAGES) * SC_PAGE_SIZE``) times ``HEADROOM_GROWTH``.

Live free/total memory is read only for diagnostics (:func:`live_memory`).
"""

from __future__ import annotations

import dataclasses
import os
import threading

import jax
import numpy as np

from jaxstark.config import env_knob

__all__ = [
    "Budget", "device_budget", "live_memory", "allocator_posture", "headroom", "HEADROOM", "HEADROOM_GROWTH",
    "ENV_BUDGET", "reserve_pool",
]  # fmt: skip

HEADROOM = 0.9  # preallocated allocator pool (JAX's default)
HEADROOM_GROWTH = 0.7  # a pool that grows region by region, and the host
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


def headroom() -> tuple[float, str]:
    """The fraction of the allocator limit a plan may use, and why (see the module docstring)."""
    prealloc = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").strip().lower() not in ("false", "0", "no")
    allocator = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default").strip().lower()
    if allocator == "platform":
        return HEADROOM_GROWTH, "platform allocator"
    if not prealloc:
        return HEADROOM_GROWTH, "allocator grows on demand"
    return HEADROOM, "preallocated allocator"


def device_budget(device: jax.Device, config_mb: float | None = None) -> Budget:
    """The budget for ``device`` (see the module docstring for the order of sources)."""
    where = _describe(device)
    mb = env_knob(ENV_BUDGET, float, lambda v: v > 0, "a positive number of MiB")
    if mb is not None:
        return Budget(int(mb * MIB), f"{ENV_BUDGET}={os.environ[ENV_BUDGET]}", where)
    if config_mb is not None:
        return Budget(int(config_mb * MIB), f"StarkConfig.vram_budget_mb={config_mb}", where)
    stats = _memory_stats(device)
    if stats and stats.get("bytes_limit"):
        limit = int(stats["bytes_limit"])
        frac, why = headroom()
        return Budget(int(limit * frac), f"XLA allocator limit {limit:,} B x headroom {frac} ({why})", where)
    phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    frac = HEADROOM_GROWTH
    return Budget(int(phys * frac), f"host physical memory {phys:,} B x headroom {frac} (no device stats)", where)


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


_RESERVING: dict[jax.Device, threading.Thread] = {}
_RESERVING_LOCK = threading.Lock()


def _first_allocation(device: jax.Device) -> None:
    try:
        jax.device_put(np.zeros(1, np.uint64), device).block_until_ready()
    except Exception:  # noqa: BLE001 -- the proof's own first allocation meets it again and reports it
        pass


def reserve_pool(device: jax.Device) -> threading.Thread | None:
    """Make the first allocation on ``device`` on a background thread, once per process.

    JAX's GPU allocator reserves its pool (75% of the card by default) at the device's first
    allocation, not when the backend starts: on an H200 that first allocation takes 1.5-2.5 s
    for the default pool, 0.4 s with ``XLA_PYTHON_CLIENT_MEM_FRACTION=0.2`` and 4 ms with
    ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (``benchmarks/RESULTS.md``). From a thread it runs
    while the caller goes on with host work (building a trace in numpy, loading compiled
    rounds); an allocation made meanwhile waits for it, as it would have anyway. Nothing is kept
    on the device, and a failure is left to the caller's own first allocation to raise. Returns
    the thread (None on a CPU device, where nothing is reserved); a process that may exit soon
    after should join it first (the CLI does)."""
    if device.platform == "cpu":
        return None
    with _RESERVING_LOCK:
        if device not in _RESERVING:
            thread = threading.Thread(
                target=_first_allocation, args=(device,), name="jaxstark-reserve-pool", daemon=True
            )
            thread.start()
            _RESERVING[device] = thread
        return _RESERVING[device]
