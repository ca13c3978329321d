"""The device allocator's pool, simulated: what a sequence of buffers really holds on a GPU.

JAX's GPU client gives every buffer a chunk of one pool, managed by XLA's best-fit allocator
with coalescing (BFC). Its rules, which this module follows:

* a request is rounded up to a multiple of :data:`MIN_CHUNK` (256) bytes;
* it takes the smallest free chunk that holds it (the lowest address among chunks of one size);
* that chunk is split, the rest staying free, only when it is at least twice the request or
  larger than the request by :data:`MAX_INTERNAL_FRAGMENTATION` (128 MiB) or more; otherwise the
  request gets the **whole** chunk, and the allocator counts the whole chunk in use;
* a freed chunk merges with the free chunks on either side of it.

So a 24 MiB buffer given a 32 MiB free chunk holds 32 MiB until it is freed. The planner
(:class:`jaxstark.memory.executor.Planner`) replays each device's buffers -- the tables and
trace copies it holds, each round's outputs (largest first, as XLA allocates them), its
temporaries (one allocation, after the outputs), the frees between rounds -- through a
:class:`Pool`, and adds what the chunks hold beyond the buffers at each round's peak
(:attr:`~jaxstark.memory.executor.RoundMemory.pool`) to the round's device set. The few small
arrays the host code makes between rounds (bytes each) are not replayed.

The simulation is of one contiguous pool: exact for JAX's default preallocated pool; where the
pool grows region by region (``XLA_PYTHON_CLIENT_PREALLOCATE=false``) chunks do not merge across
regions, and the budget's larger headroom covers the difference (:mod:`jaxstark.memory.budget`).
"""

from __future__ import annotations

import bisect
import os

__all__ = ["Pool", "Replay", "MIN_CHUNK", "MAX_INTERNAL_FRAGMENTATION", "rounded", "simulated"]

MIN_CHUNK = 256
MAX_INTERNAL_FRAGMENTATION = 128 << 20


def simulated() -> bool:
    """Whether a GPU's buffers come from the pool this module simulates: JAX's default allocator
    (``XLA_PYTHON_CLIENT_ALLOCATOR`` unset, ``default`` or ``bfc``)."""
    return os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").strip().lower() in ("", "default", "bfc")


def rounded(nbytes: int) -> int:
    """The bytes a request of ``nbytes`` asks the pool for."""
    return max(MIN_CHUNK, -(-nbytes // MIN_CHUNK) * MIN_CHUNK)


class Pool:
    """One device's pool of ``size`` bytes (default: more than any card), all free.

    :meth:`allocate` returns the chunk's address; :meth:`free` takes it back. ``in_use`` is what
    the allocator counts (whole chunks), ``requested`` the bytes asked for; ``peak`` the most
    ``in_use`` so far."""

    def __init__(self, size: int = 1 << 48):
        if not isinstance(size, int) or size < MIN_CHUNK:
            raise ValueError(f"Pool: size must be an int of at least {MIN_CHUNK} bytes, got {size!r}")
        self._chunks: dict[int, list] = {0: [size, False]}  # address -> [size, in use]
        self._addresses = [0]  # every chunk's address, sorted
        self._free = [(size, 0)]  # free chunks as (size, address), sorted
        self._asked: dict[int, int] = {}  # address of a chunk in use -> the bytes asked for
        self.in_use = self.requested = self.peak = 0

    def allocate(self, nbytes: int) -> int:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ValueError(f"Pool.allocate: nbytes must be a positive int, got {nbytes!r}")
        want = rounded(nbytes)
        i = bisect.bisect_left(self._free, (want, -1))
        if i == len(self._free):
            raise MemoryError(f"Pool.allocate: no free chunk of {want:,} bytes")
        size, address = self._free.pop(i)
        if size >= 2 * want or size - want >= MAX_INTERNAL_FRAGMENTATION:
            rest = address + want
            self._chunks[rest] = [size - want, False]
            bisect.insort(self._addresses, rest)
            bisect.insort(self._free, (size - want, rest))
            size = want
        self._chunks[address] = [size, True]
        self._asked[address] = nbytes
        self.in_use += size
        self.requested += nbytes
        self.peak = max(self.peak, self.in_use)
        return address

    def free(self, address: int) -> None:
        chunk = self._chunks.get(address)
        if chunk is None or not chunk[1]:
            raise ValueError(f"Pool.free: no chunk in use at {address!r}")
        size = chunk[0]
        self.in_use -= size
        self.requested -= self._asked.pop(address)
        i = bisect.bisect_left(self._addresses, address)
        if i + 1 < len(self._addresses):  # merge the next chunk into this one
            after = self._addresses[i + 1]
            after_size, used = self._chunks[after]
            if not used:
                self._unfree(after_size, after)
                del self._chunks[after], self._addresses[i + 1]
                size += after_size
        if i > 0:  # merge this chunk into the previous one
            before = self._addresses[i - 1]
            before_size, used = self._chunks[before]
            if not used:
                self._unfree(before_size, before)
                del self._chunks[address], self._addresses[i]
                address, size = before, size + before_size
        self._chunks[address] = [size, False]
        bisect.insort(self._free, (size, address))

    def _unfree(self, size: int, address: int) -> None:
        i = bisect.bisect_left(self._free, (size, address))
        del self._free[i]

    @property
    def excess(self) -> int:
        """Bytes the chunks in use hold beyond what their buffers asked for."""
        return self.in_use - self.requested

    def chunks(self) -> list[tuple[int, int, bool]]:
        """Every chunk as ``(address, size, in use)``, by address."""
        return [(a, *self._chunks[a]) for a in self._addresses]


class Replay:
    """A planner's buffers replayed through one :class:`Pool` per device, event by event.

    Buffers are named by any hashable key and given as ``{device: bytes}`` (a buffer split over
    several devices is a chunk on each); a device with no pool yet gets a fresh one."""

    def __init__(self):
        self.pools: dict = {}
        self._where: dict = {}  # key -> [(device, address)]

    def allocate(self, key, sizes: dict) -> None:
        spots = self._where.setdefault(key, [])
        for device, nbytes in sizes.items():
            if nbytes > 0:
                spots.append((device, self.pools.setdefault(device, Pool()).allocate(nbytes)))

    def free(self, key) -> None:
        """Free ``key``'s chunks (nothing for a key that holds none)."""
        for device, address in self._where.pop(key, ()):
            self.pools[device].free(address)

    def round(self, index, copies, outputs, temporaries: dict, blocks=()) -> int:
        """Round ``index``: ``copies`` (host arrays copied in for it) and ``outputs`` (freed later
        by key), lists of ``(key, {device: bytes})``, are allocated -- the outputs largest
        first, as XLA orders them -- then ``temporaries`` (``{device: bytes}``, one allocation);
        the temporaries and copies are freed when it ends. ``blocks``: ``({device: bytes},
        count)`` per copy brought in by row blocks (:func:`jaxstark.transfer.put`): that many
        blocks are allocated after the copies and freed before the round runs. Returns what the
        chunks of the round's device that holds the most hold beyond their buffers at the
        round's peak: after its last allocation, or with the blocks in flight where that holds
        more."""
        devices = list(temporaries)

        def moment() -> tuple[int, int]:  # (in use, excess) of the round's device that holds the most
            return max(
                ((self.pools[d].in_use, self.pools[d].excess) for d in devices if d in self.pools), default=(0, 0)
            )

        for key, sizes in copies:
            self.allocate(key, sizes)
        peak = (0, 0)
        for j, (sizes, count) in enumerate(blocks):
            for k in range(count):
                self.allocate(("block", index, j, k), sizes)
            peak = max(peak, moment())
            for k in range(count):
                self.free(("block", index, j, k))
        for key, sizes in sorted(outputs, key=lambda o: -max(o[1].values(), default=0)):
            self.allocate(key, sizes)
        self.allocate(("temporaries", index), temporaries)
        peak = max(peak, moment())
        self.free(("temporaries", index))
        for key, _ in copies:
            self.free(key)
        return peak[1]
