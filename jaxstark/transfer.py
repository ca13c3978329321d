"""A host array onto one accelerator at the link's speed.

One ``jax.device_put`` of a pageable numpy array is bound by one host thread's copy (3.9-7.9
GB/s for a 2 GB trace on the H200's host, ``benchmarks/RESULTS.md``); row blocks put from
several threads at once reach 26-30 GB/s. :func:`put` copies a large array in row blocks from a
pool of threads and writes each block in place into one device buffer (a donated
``dynamic_update_slice``), keeping at most ``slots`` blocks on the device beside that buffer:
the device holds the array once, plus :func:`in_flight` bytes while it is copied in. The
planner adds that figure to the device set of each round that takes a host trace
(:class:`jaxstark.memory.executor.RoundMemory`'s ``staging``), so a plan still counts what is
really on the device.

Arrays on a CPU device, under :data:`MIN_BYTES`, spread over several devices or processes, or
too small for blocks over two threads are put whole, as before (:func:`layout`).
``JAXSTARK_TRANSFER_THREADS`` sets the threads (default: the host's cores, at most 16; 0 or 1:
every array put whole).
"""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import jax
import numpy as np
from jax import lax
from jax.sharding import SingleDeviceSharding

__all__ = ["MIN_BYTES", "THREADS_ENV", "threads", "settings", "platform", "layout", "in_flight", "wanted", "put"]

THREADS_ENV = "JAXSTARK_TRANSFER_THREADS"
MIN_BYTES = 64 << 20  # below this one device_put is as fast
WHOLE_ON = frozenset({"cpu"})  # platforms whose arrays are always put whole (a host device needs no link)
MAX_THREADS = 16  # 16 threads reached 26-30 GB/s on the H200's host (RESULTS.md, "A host trace in row blocks")
# blocks of about 16 MiB (a power of two rows, so 8-16 MiB): a 416 MiB trace in 4 MiB blocks came
# in at 11 GB/s, in 16 MiB blocks at 19-21 GB/s (8-16 threads, H200; RESULTS.md); a larger array
# in blocks of a quarter of it over the threads
MIN_BLOCK_BYTES = 16 << 20
BLOCKS_PER_SLOT = 4  # at most a quarter of the array in flight


def threads() -> int:
    """Copy threads for one array (``JAXSTARK_TRANSFER_THREADS``; default the host's cores, at most 16)."""
    env = os.environ.get(THREADS_ENV)
    if env is None or env.strip() == "":
        return min(MAX_THREADS, os.cpu_count() or 1)
    try:
        n = int(env)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"{THREADS_ENV} must be a whole number >= 0 (0: put every array whole), got {env!r}")
    return n


def settings() -> tuple:
    """What :func:`layout` depends on besides the array (a plan made under other settings is stale)."""
    return threads(), MIN_BYTES, MIN_BLOCK_BYTES, BLOCKS_PER_SLOT, WHOLE_ON


def platform(sharding) -> str | None:
    """The platform of ``sharding``'s one device (None when it spans several devices or the run
    spans several processes: put whole)."""
    if not isinstance(sharding, SingleDeviceSharding) or jax.process_count() > 1:
        return None
    (device,) = sharding.device_set
    return device.platform


def layout(shape: tuple[int, ...], itemsize: int, platform: str | None) -> tuple[int, int] | None:
    """``(block_rows, slots)`` for copying an array of ``shape`` onto one device of ``platform``
    in row blocks (blocks of ``block_rows`` rows of its second-to-last axis, a power of two
    dividing it; at most ``slots`` blocks on the device at once, a quarter of the array), or
    None when it is put whole (too small, too few blocks for two threads, or blocks under
    1/16 of :data:`MIN_BLOCK_BYTES`)."""
    t = threads()
    nbytes = math.prod(shape) * itemsize
    if platform is None or platform in WHOLE_ON or len(shape) < 2 or t < 2 or nbytes < MIN_BYTES:
        return None
    rows, row_bytes = shape[-2], shape[-1] * itemsize
    if rows == 0 or row_bytes == 0:
        return None
    target = max(nbytes // (BLOCKS_PER_SLOT * t), MIN_BLOCK_BYTES)
    br = min(1 << max(target // row_bytes, 1).bit_length() - 1, rows & -rows)  # a power of two dividing rows
    blocks = math.prod(shape[:-1]) // br
    slots = min(t, blocks // BLOCKS_PER_SLOT)
    if slots < 2 or br * row_bytes * 16 < MIN_BLOCK_BYTES:
        return None
    return br, slots


def in_flight(shape: tuple[int, ...], dtype, platform: str | None) -> int:
    """Bytes of blocks on the device beside the array while :func:`put` copies it onto one device
    of ``platform`` (0 when it is put whole)."""
    itemsize = np.dtype(dtype).itemsize
    lay = layout(tuple(shape), itemsize, platform)
    return 0 if lay is None else lay[0] * lay[1] * shape[-1] * itemsize


def wanted(x, sharding) -> bool:
    """Whether :func:`put` copies ``x`` in blocks (a numpy array with a layout)."""
    return isinstance(x, np.ndarray) and layout(x.shape, x.dtype.itemsize, platform(sharding)) is not None


def put(x: np.ndarray, sharding) -> jax.Array:
    """``x`` on the one device of ``sharding``: in row blocks from several threads when
    :func:`wanted`, else by one ``jax.device_put``. The result equals ``jax.device_put(x, sharding)``."""
    lay = layout(x.shape, x.dtype.itemsize, platform(sharding)) if isinstance(x, np.ndarray) else None
    if lay is None:
        return jax.device_put(x, sharding)
    br, slots = lay
    lead, rows = x.shape[:-2], x.shape[-2]
    count = math.prod(lead) * rows // br
    block_shape = (1,) * len(lead) + (br, x.shape[-1])
    landed: dict[int, jax.Array] = {}  # block j on the device, until the main thread takes it

    def starts(j: int) -> tuple:
        first = j * br
        return (*np.unravel_index(first // rows, lead), first % rows, 0) if lead else (first, 0)

    def copy(j: int) -> int:
        *index, r, _ = starts(j)
        rows_j = np.ascontiguousarray(x[(*index, slice(r, r + br))]).reshape(block_shape)
        landed[j] = jax.device_put(rows_j, sharding).block_until_ready()
        return j

    full = _zeros(x.shape, x.dtype, sharding)
    pool = _pool(slots)
    pending = {pool.submit(copy, j) for j in range(min(slots, count))}
    following = len(pending)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                j = fut.result()
                full = _update(full, landed.pop(j), tuple(np.int32(s) for s in starts(j)))
                full.block_until_ready()  # block j is freed before another is copied in
                if following < count:
                    pending.add(pool.submit(copy, following))
                    following += 1
    except BaseException:
        for fut in pending:
            fut.cancel()
        wait(pending)  # no copy outlives the call
        landed.clear()
        raise
    return full


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(size: int) -> ThreadPoolExecutor:
    """The copy threads of ``size``, started once per process and kept for the next array."""
    key = (os.getpid(), size)  # a forked child starts its own
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ThreadPoolExecutor(size, thread_name_prefix="jaxstark-put")
        return _POOLS[key]


@functools.partial(jax.jit, donate_argnums=0)
def _update(full, block, starts):
    return lax.dynamic_update_slice(full, block, starts)


def _zeros(shape, dtype, sharding) -> jax.Array:
    return _zeros_fn(tuple(shape), np.dtype(dtype), sharding)()


@functools.lru_cache(maxsize=64)
def _zeros_fn(shape, dtype, sharding):
    return jax.jit(lambda: jax.numpy.zeros(shape, dtype), out_shardings=sharding)
