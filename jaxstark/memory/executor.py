"""Running rounds through one schedule, abstractly (planning) or for real (proving).

The prover's data flow is written once (:func:`jaxstark.schedule.schedule`) against an
*executor*. :class:`Planner` runs it on abstract values: each round is lowered for its device
with ``jax.ShapeDtypeStruct`` arguments and compiled (``jit(...).lower(...).compile()``); XLA's
``memory_analysis()`` gives the round's argument, output, temporary and aliased bytes, and the
executor's own bookkeeping knows which buffers from earlier rounds are still held. Nothing is
dispatched. :class:`Runner` runs the same flow on arrays, calling the executables the planner
compiled (looked up by signature -- no second compilation), counting dispatches, and turning
any device failure into the loud :class:`~jaxstark.errors.DeviceFailure`.

Buffers are tracked by identity: a round's outputs become *resident* under names like
``"table 0: trace commit[0].lde"`` until the schedule releases the table; a round's device set is
the resident buffers it does not take as arguments plus XLA's figure for the round itself.

**Parking** (``park``: names of held round outputs, chosen by :func:`jaxstark.memory.plan.plan`
when keeping everything does not fit): a parked buffer is copied to host memory once the round
that made it is done and its device copy is deleted; each later round that takes it as an
argument gets a fresh device copy, dropped when the round is done. The planner counts a parked
buffer on the device only as such an argument (and lists it under the round's ``parked`` host
bytes otherwise). The values are the same bytes, so the proof does not change.

**Recomputing** (``recompute``: names of held Merkle node arrays, :attr:`jaxstark.rounds.Round.trees`,
of units that are not groups of row chunks): the round that builds such a tree is compiled as a
variant that returns only its first two rows (the zero row and the root, which the round has
already absorbed), so the tree is one of the round's temporaries instead of an output held to the
openings; the openings round builds it again from the matrix it commits to
(:mod:`jaxstark.rounds.r5_openings`). The same function computes both, so the roots, paths and
proof are the same bytes; the price is one more tree build per recomputed tree.

**Row blocks** (``blocks``: ``held_name(unit, round)`` -> blocks): a round that sums over its
rows (:attr:`jaxstark.rounds.Round.blocked`) gets that many blocks as its static ``blocks``
(:meth:`_Executor.row_blocks`, which the schedule asks) instead of its platform's default.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from jaxstark import compile_cache, faults, kernels, lde, ntt, transfer
from jaxstark.errors import DeviceFailure, JaxstarkError
from jaxstark.hash.interface import DIGEST_BYTES, get_hash
from jaxstark.memory import pool
from jaxstark.progress import RoundEvent
from jaxstark.rounds import TRACE_COMMIT, registered
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r0_statement import initial_transcript
from jaxstark.transcript import HostTranscript, Transcript

__all__ = [
    "Planner", "Runner", "RoundMemory", "CompileRecord", "compile_log", "dispatch_count", "compiled_for", "placements",
    "clear_caches", "compile_threads", "wait_for_compiles", "held_name", "roots_only", "FALLBACK_ENV", "CHUNK_AXIS",
    "COMPILE_THREADS_ENV", "PARK_MIN_BYTES",
]  # fmt: skip

FALLBACK_ENV = "JAXSTARK_TEST_ONLY_HOST_FALLBACK"
CHUNK_AXIS = "chunks"  # the mesh axis a group of row chunks is split along
COMPILE_THREADS_ENV = "JAXSTARK_COMPILE_THREADS"
_COMPILED: dict = {}  # signature -> compiled executable (shared by every plan and proof)
_GROUPED: dict = {}  # (round, statics, vmap axes) -> jitted vmapped round
_TRIMMED: dict = {}  # (round, statics, output paths) -> jitted round returning only those trees' roots
_DISPATCHES: dict[str, int] = {}  # round name -> executables dispatched
_COMPILE_LOG: list = []  # CompileRecord per program compiled (a _Compiling job while it compiles)
_POOLS: dict = {}  # number of threads -> the pool compiling planned programs
_DOMAINS: dict = {}  # (log_n, blowup, device label, shardings) -> domain tables on the device (the last proof's)
_BANNER_SHOWN = [False]
PARK_MIN_BYTES = 1 << 16  # a held output smaller than this is never parked (the copies cost more than it frees)
# the callback that hears of every round the planner compiles (jaxstark.progress; set by plan_checked)
PLANNING: contextvars.ContextVar = contextvars.ContextVar("jaxstark_planning_progress", default=None)


def dispatch_count(name: str | None = None) -> int:
    """How many round executables (of round ``name``, or of any) this process has dispatched
    (every FRI layer's count under :data:`~jaxstark.rounds.FRI_LAYER`, ``"FRI layer"``)."""
    return sum(_DISPATCHES.values()) if name is None else _DISPATCHES.get(name, 0)


def clear_caches() -> int:
    """Forget every compiled round executable, the cached twiddle and LDE tables, and JAX's own
    in-memory caches; returns how many round executables were dropped. A process that plans or
    proves many shapes (a notebook exploring memory, a test run) holds each shape's
    executables until then; afterwards the next proof of a shape compiles again, or loads
    from JAX's persistent compilation cache where one is configured."""
    dropped = len(_COMPILED)
    _DOMAINS.clear()
    concurrent.futures.wait([x.future for x in _COMPILE_LOG if isinstance(x, _Compiling)])
    _COMPILED.clear()
    _COMPILE_LOG.clear()
    _GROUPED.clear()
    _TRIMMED.clear()
    ntt._cached_tables.cache_clear()
    lde._cached.cache_clear()
    jax.clear_caches()
    return dropped


def _sds(x, sharding):
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
    return x


def _nbytes(tree) -> int:
    """Bytes of the arrays in ``tree`` on each device that holds them (a leaf split over a mesh
    counts its shard)."""
    total = 0
    for x in jax.tree.leaves(tree):
        shape = x.shape
        sharding = getattr(x, "sharding", None)
        if isinstance(sharding, NamedSharding):
            shape = sharding.shard_shape(shape)
        total += math.prod(shape) * np.dtype(x.dtype).itemsize
    return total


def _signature(fn, static: dict, args: tuple, shardings):
    leaves, treedef = jax.tree.flatten(args)
    return (
        fn,
        tuple(sorted(static.items())),
        treedef,
        tuple((x.shape, np.dtype(x.dtype)) for x in leaves),
        tuple(jax.tree.leaves(shardings)),
    )


def device_label(mesh: Mesh | None, device: jax.Device) -> str:
    """``gpu:0``, or ``gpu:0+1`` for a mesh."""
    if mesh is None:
        return f"{device.platform}:{device.id}"
    return f"{device.platform}:" + "+".join(str(d.id) for d in mesh.devices.flat)


def placements(args: tuple, axes: tuple | None, mesh: Mesh | None, device: jax.Device):
    """Per array of ``args``, its sharding: ``device``; or, for a group of row chunks spread over
    ``mesh``, split along the group axis where ``axes`` (the rounds' ``vmap`` axes, a prefix of
    ``args``) says 0 and replicated elsewhere (domain tables, challenges, transcripts)."""
    if mesh is None:
        one = SingleDeviceSharding(device)
        return jax.tree.map(lambda _: one, args)
    split, whole = NamedSharding(mesh, PartitionSpec(CHUNK_AXIS)), NamedSharding(mesh, PartitionSpec())

    def place(ax, sub):
        if isinstance(ax, tuple):
            return tuple(place(a, x) for a, x in zip(ax, sub, strict=True))
        return jax.tree.map(lambda _: split if ax == 0 else whole, sub)

    return place(axes, args)


def held_name(table: int | None, name: str) -> str:
    """The prefix under which round ``name`` of unit ``table`` holds its outputs (each leaf's
    tree path follows it: ``"table 0: trace commit[0].lde"``)."""
    return f"{'shared' if table is None else f'table {table}'}: {name}"


def _named_leaves(prefix: str, tree) -> list[tuple[str, object]]:
    """``(name, leaf)`` of every array of ``tree``, named as the planner holds it."""
    return [(f"{prefix}{jax.tree_util.keystr(path)}", leaf)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0] if hasattr(leaf, "shape")]  # fmt: skip


def grouped(fn, static: dict, axes: tuple):
    """``fn`` (a round, its static arguments bound) under ``vmap`` with ``in_axes=axes``, jitted
    (one function object per round, statics and axes, so its executables are cached)."""
    key = (fn, tuple(sorted(static.items())), axes)
    g = _GROUPED.get(key)
    if g is None:
        g = _GROUPED[key] = jax.jit(jax.vmap(functools.partial(fn, **static), in_axes=axes), keep_unused=True)
    return g


def roots_only(fn, static: dict, paths: frozenset):
    """``fn`` (a round, its static arguments bound) returning, of each output at one of
    ``paths`` (key paths, ``jax.tree_util.keystr``: ``"[0].nodes"``), a Merkle node array,
    only its first two rows -- the zero row and the root -- jitted (one function object per
    round, statics and paths, so its executables are cached)."""
    key = (fn, tuple(sorted(static.items())), paths)
    g = _TRIMMED.get(key)
    if g is None:

        def trimmed(*args):
            out = fn(*args, **static)
            return jax.tree_util.tree_map_with_path(lambda p, x: x[:2] if jax.tree_util.keystr(p) in paths else x, out)

        g = _TRIMMED[key] = jax.jit(trimmed, keep_unused=True)
    return g


def compiled_for(fn, static: dict, args: tuple, shardings):
    """The executable of ``fn`` for these argument shapes and placements (compiled once)."""
    return _compiled(fn, static, args, shardings)[0]


@dataclasses.dataclass(frozen=True)
class CompileRecord:
    """How long one program took to become an executable (seconds): tracing to a jaxpr (and,
    for a round kept lowered, exporting it; or reading it back), lowering to StableHLO, and
    XLA's compilation (or loading it from the persistent cache; on a compile thread, its own
    time there, which may overlap the tracing of later programs). ``started`` and ``finished``:
    ``time.perf_counter()`` when its tracing began and its executable was ready (a timeline of
    a plan's programs)."""

    name: str
    device: str
    trace: float
    lower: float
    compile: float
    source: str = "traced"  # "traced"; "exported" (traced, and kept lowered); "program cache" (loaded, not traced)
    started: float = 0.0
    finished: float = 0.0

    @property
    def total(self) -> float:
        return self.trace + self.lower + self.compile


def compile_log() -> list[CompileRecord]:
    """Every program this process compiled for a round, in order (waits for those still
    compiling; one whose compilation failed is not listed; cleared by :func:`clear_caches`)."""
    out = []
    for x in _COMPILE_LOG:
        if isinstance(x, _Compiling):
            if x.future.exception() is not None:
                continue
            x = x.result()[1]
        out.append(x)
    return out


def compile_threads() -> int:
    """How many threads compile a plan's programs while the planner traces the next ones
    (``JAXSTARK_COMPILE_THREADS``; default one per core, at most 8). 0: each program is
    compiled where it is traced, before the next is traced."""
    text = os.environ.get(COMPILE_THREADS_ENV, "").strip()
    if not text:
        return max(1, min(8, os.cpu_count() or 1))
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{COMPILE_THREADS_ENV}={text!r}: expected a whole number of threads (0: none)")
    return int(text)


def wait_for_compiles() -> int:
    """Wait until no compile thread is working (a plan cut short -- an error, an interrupt --
    may leave programs compiling, each then writing its persistent-cache entry); returns how
    many were waited for."""
    pending = [job.future for job in list(_COMPILE_LOG) if isinstance(job, _Compiling) and not job.future.done()]
    concurrent.futures.wait(pending)
    return len(pending)


def _pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
    pool = _POOLS.get(threads)
    if pool is None:
        pool = _POOLS[threads] = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="jaxstark-compile")
    return pool


class _Compiling:
    """A program handed to the compile threads: its output shapes (from its lowering) are known
    before its executable is."""

    def __init__(self, key, future: concurrent.futures.Future, out_info, retrace: Callable):
        self.key, self.future, self.out_info, self.retrace = key, future, out_info, retrace
        self.done: tuple | None = None  # (executable, record) once finished (:func:`_finish`)

    def result(self):
        """(the executable, its :class:`CompileRecord`); raises what its compilation raised."""
        return self.done or self.future.result()


def _finish(job: _Compiling):
    """``job``'s executable, waited for; it replaces the job in the executable cache (a job
    that failed is dropped from it and from the compile log, so that the next request compiles
    again). A kept program that did not compile is traced again here, on the caller's thread
    (where the caller's JAX settings apply)."""
    try:
        exe, record = job.result()
        if exe is None:
            exe, record = job.retrace(record)
        job.done = exe, record
    except BaseException:
        if _COMPILED.get(job.key) is job:
            del _COMPILED[job.key]
        if job in _COMPILE_LOG:
            _COMPILE_LOG.remove(job)
        raise
    if _COMPILED.get(job.key) is job:
        _COMPILED[job.key] = exe
    return exe


def _compiled(fn, static: dict, args: tuple, shardings, name: str | None = None, describe: str | None = None,
              defer: bool = False):  # fmt: skip
    """(the executable, whether this call compiled it); ``name``: the round's, for the log;
    ``describe``: what the program is, for the lowered-program cache (None: not kept).
    ``defer``: the program is traced and lowered here and compiled on a compile thread
    (:func:`compile_threads`); the first value is then a :class:`_Compiling` job (also when an
    earlier deferred compilation of it is not done) -- unless there are no compile threads or
    the program is spread over several devices (compiled here: XLA places its outputs)."""
    key = _signature(fn, static, args, shardings)
    exe = _COMPILED.get(key)
    if exe is not None:
        if isinstance(exe, _Compiling) and not defer:
            exe = _finish(exe)
        return exe, False
    abstract = jax.tree.map(_sds, args, shardings)
    placed = {d for s in jax.tree.leaves(shardings) for d in s.device_set}
    platforms = {_export_platform(d) for d in placed}
    # traced for the one platform it runs on: a kernel switch traces only that branch
    lowering = functools.partial(kernels.lowering_for, platforms.pop() if len(platforms) == 1 else None)
    start = time.perf_counter()
    with lowering():
        kept = _kept(fn, static, abstract, describe)
        if kept is not None:
            lowered, out_tree, source, t1 = kept
        else:
            source, out_tree = "traced", None
            traced = fn.trace(*abstract, **static)
            t1 = time.perf_counter()
            lowered = traced.lower()
    t2 = time.perf_counter()
    device = ",".join(sorted(f"{d.platform}:{d.id}" for d in placed))
    options = compile_cache.compiler_options(placed)

    def record(seconds: float, how: str = source) -> CompileRecord:
        return CompileRecord(name or _name(fn), device, t1 - start, t2 - t1, seconds, how, start, time.perf_counter())

    def build():
        """(the executable, its record); (None, record) for a kept program that does not compile
        here: it is then traced as usual, by ``retrace``, on the thread that needs it."""
        t3 = time.perf_counter()
        if out_tree is None:
            return lowered.compile(options), record(time.perf_counter() - t3)
        try:
            return _FlatProgram(lowered.compile(options), out_tree), record(time.perf_counter() - t3)
        except Exception:  # noqa: BLE001 -- a kept program that does not compile here is traced as usual
            return None, record(time.perf_counter() - t3)

    def retrace(failed: CompileRecord):
        t4 = time.perf_counter()
        with lowering():
            exe = fn.trace(*abstract, **static).lower().compile(options)
        return exe, record(failed.compile + time.perf_counter() - t4, "traced (kept program did not compile)")

    threads = compile_threads() if defer else 0
    # deferred only on one device: the lowering's output shapes carry no sharding, which is that
    # device's (a round over a mesh is compiled here, since XLA places its outputs)
    if threads and all(isinstance(s, SingleDeviceSharding) for s in jax.tree.leaves(shardings)):
        flat = jax.tree.leaves(lowered.out_info)
        out_info = jax.tree.unflatten(out_tree, flat) if out_tree is not None else lowered.out_info
        job = _COMPILED[key] = _Compiling(key, _pool(threads).submit(build), out_info, retrace)
        _COMPILE_LOG.append(job)
        return job, True
    exe, done = build()
    if exe is None:
        exe, done = retrace(done)
    _COMPILED[key] = exe
    _COMPILE_LOG.append(done)
    return exe, True


class _FlatProgram:
    """A round compiled from its exported program (a function of the flattened arguments),
    called and read like the round's own executable."""

    def __init__(self, compiled, out_tree):
        self.compiled, self.out_tree = compiled, out_tree

    def __call__(self, *args):
        return self.out_tree.unflatten(self.compiled(*jax.tree.leaves(args)))

    def memory_analysis(self):
        return self.compiled.memory_analysis()

    @property
    def out_info(self):
        return self.out_tree.unflatten(jax.tree.leaves(self.compiled.out_info))

    @property
    def output_shardings(self):
        return self.out_tree.unflatten(self.compiled.output_shardings)


# custom calls of the kernels (Pallas' Triton backend) that an exported round may contain
_KERNEL_CALLS = tuple(
    jax.export.DisabledSafetyCheck.custom_call(t) for t in ("__gpu$xla.gpu.triton", "triton_kernel_call")
)


def _kept(fn, static: dict, abstract: tuple, describe: str | None):
    """The round through the lowered-program cache (:mod:`jaxstark.compile_cache`): loaded, or
    exported and stored; ``(its lowering, the output tree, source, when its trace ended)``
    (``time.perf_counter``), or None when it is not kept (then it is traced as usual)."""
    if describe is None or compile_cache.program_dir() is None:
        return None
    leaves, in_tree = jax.tree.flatten(abstract)
    devices = {d for x in leaves for d in x.sharding.device_set}
    if len(devices) != 1 or not all(isinstance(x.sharding, SingleDeviceSharding) for x in leaves):
        return None  # spread over a mesh: traced every time
    (device,) = devices
    platform = _export_platform(device)
    if platform is None:
        return None
    try:
        key = compile_cache.program_key(describe, static, leaves, in_tree, platform, device.device_kind)
    except compile_cache.Uncacheable:
        return None
    hit = compile_cache.load_program(key, leaves, in_tree)
    if hit is not None:
        exported, out_tree = hit
        source = "program cache"
    else:
        box = {}

        def flat(*xs):
            out, box["tree"] = jax.tree.flatten(fn(*jax.tree.unflatten(in_tree, xs), **static))
            return out

        try:
            exported = jax.export.export(jax.jit(flat, keep_unused=True), platforms=(platform,),
                                         disabled_checks=_KERNEL_CALLS)(*leaves)  # fmt: skip
        except Exception:  # noqa: BLE001 -- a program export cannot write is traced as usual
            return None
        out_tree = box["tree"]
        source = "exported"
        try:
            if compile_cache.tunables_changed():
                raise compile_cache.Uncacheable("a tunable changed in this process")
            compile_cache.store_program(key, exported, out_tree, in_tree)
        except Exception:  # noqa: BLE001 -- not kept (an output tree it cannot write, ...): this run still uses it
            source = "exported, not kept"
    traced = time.perf_counter()
    try:
        return jax.jit(exported.call, keep_unused=True).lower(*leaves), out_tree, source, traced
    except Exception:  # noqa: BLE001 -- a program that does not lower here is traced as usual
        return None


def _export_platform(device) -> str | None:
    """The export platform of ``device``: ``cpu``, or ``cuda`` for a CUDA GPU; None (rounds not
    kept) for anything else."""
    if device.platform == "cpu":
        return "cpu"
    return "cuda" if device.platform == "gpu" and kernels._has_cuda() else None


def _describe(fn, static: dict, axes: tuple | None) -> str | None:
    """What a round's program is, for the lowered-program cache: the round function, and for a
    group of row chunks the ``vmap`` axes and the statics bound into it (None: not kept)."""
    module = getattr(fn, "__module__", None) or ""
    if not module.startswith("jaxstark."):
        return None  # not jaxstark's code: it cannot tell when it changed
    base = f"{module}.{getattr(fn, '__qualname__', '?')}"
    if axes is None:
        return base
    bound = _bound_text(static)
    return None if bound is None else f"vmap {axes!r} of {base} with {bound}"


def _describe_trimmed(describe: str | None, static: dict, paths: frozenset) -> str | None:
    """What a round compiled by :func:`roots_only` is, for the lowered-program cache (its
    statics are bound into it, so the text carries them)."""
    bound = None if describe is None else _bound_text(static)
    return None if bound is None else f"roots only of {sorted(paths)!r} of {describe} with {bound}"


def _bound_text(static: dict) -> str | None:
    """The statics bound into a wrapped round, as text for its description (None: uncacheable)."""
    try:
        return ";".join(f"{k}={compile_cache._static_text(v)}" for k, v in sorted(static.items()))
    except compile_cache.Uncacheable:
        return None


def _name(fn) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", type(fn).__name__)


@dataclasses.dataclass(frozen=True)
class RoundMemory:
    """One round of one table, as the planner sees it (bytes)."""

    table: int | None  # None for a step shared by all tables
    name: str
    device: str
    resident: tuple[tuple[str, int], ...]  # buffers held from earlier rounds, not arguments of this one
    arguments: int
    outputs: int
    temporaries: int
    aliased: int
    fixed: int = 0  # bytes of the total that another unit owns or that are held to the end of the proof
    # bytes of a host trace's row blocks on the device beside its arguments while they are copied
    # in (jaxstark.transfer), before the round runs: the larger of this and what the round adds counts
    staging: int = 0
    parked: tuple[tuple[str, int], ...] = ()  # held buffers parked in host memory during this round
    copied_in: int = 0  # bytes of the arguments copied back from host memory for this round (parked)
    # bytes the device's allocator holds beyond the buffers at the round's peak: chunks handed out
    # whole, requests rounded up (jaxstark.memory.pool; 0 where no pool is simulated: the CPU)
    pool: int = 0

    @property
    def parked_bytes(self) -> int:
        return sum(b for _, b in self.parked)

    @property
    def resident_bytes(self) -> int:
        return sum(b for _, b in self.resident)

    @property
    def copy_in_binds(self) -> bool:
        """The host trace's blocks in flight exceed what the round adds to its arguments."""
        return self.staging > self.outputs + self.temporaries - self.aliased

    @property
    def total(self) -> int:
        adds = max(self.staging, self.outputs + self.temporaries - self.aliased)
        return self.resident_bytes + self.arguments + adds + self.pool


class _Executor:
    """What planning and running share: the device of each table, the host-built domain tables,
    and the schedule's hooks for buffers held between rounds (only the planner keeps books)."""

    concrete = False

    def __init__(self, devices: dict[int, jax.Device], default: jax.Device, meshes: dict[int, Mesh] | None = None,
                 recompute: frozenset = frozenset(), blocks: dict | None = None):  # fmt: skip
        self.devices, self.default = devices, default
        self.meshes = meshes or {}  # unit -> the devices its group of row chunks is spread over
        self.recompute = recompute  # held names of the trees built again where they are opened
        self.blocks = dict(blocks or {})  # held_name(unit, round) -> the row blocks the plan runs it in

    def device(self, table: int | None) -> jax.Device:
        """The unit's device (the first of its mesh when it is spread)."""
        return self.default if table is None else self.devices[table]

    def devset(self, table: int | None) -> frozenset:
        mesh = self.meshes.get(table)
        return frozenset(mesh.devices.flat) if mesh is not None else frozenset([self.device(table)])

    def owns(self, table: int | None) -> bool:
        """Whether this process runs unit ``table``'s rounds: a unit on one of its devices, or
        spread over some of them (under ``jax.distributed`` whole tables are shared out over
        every process's devices; a shared step, ``None``, runs everywhere)."""
        return table is None or any(d.process_index == jax.process_index() for d in self.devset(table))

    def root(self, nodes):
        """The root rows of a Merkle node array (``nodes[..., 1, :]``: one per chunk of a group),
        to be exchanged with other processes (:meth:`exchange`); the planner keeps nothing."""
        return None

    def exchange(self, tr: Transcript, mine: dict, zeros, units: list, absorb) -> tuple[Transcript, dict]:
        """Under ``jax.distributed``, when other processes own some units: the values of each of
        ``units`` -- ``mine`` (unit -> a tuple of small arrays or host values) where this
        process owns the unit, the owner's elsewhere (``zeros(i)`` gives their shapes) -- and
        ``tr`` after ``absorb(host transcript, unit, values)`` for each of ``units`` in order,
        computed on the host and placed like the statement's. Here (the planner): the
        transcript, abstract, and no values."""
        return self._abstract_transcript(tr.hash_name), {}

    def share_proofs(self, proofs: list, owned: list, failure: BaseException | None = None,
                     notes: tuple[str, ...] = ()) -> tuple[list, list[str]]:  # fmt: skip
        """Every unit's table proofs, each from the process that owns the unit (the planner has
        none), and every process's ``notes`` (the warnings it gave proving its units), in
        process order. ``failure``: what this process raised proving its units; every process
        learns of it and raises (this one ``failure``, the others an error naming the process)."""
        return proofs, list(notes)

    def label(self, table: int | None) -> str:
        """``gpu:0``, or ``gpu:0+1`` for a unit spread over a mesh."""
        return device_label(self.meshes.get(table), self.device(table))

    def placements(self, table: int | None, args: tuple, axes: tuple | None):
        return placements(args, axes, self.meshes.get(table), self.device(table))

    def _round(self, table: int | None, name: str, fn: Callable, args: tuple, static: dict, axes: tuple | None,
               vmap: bool):  # fmt: skip
        """What ``run`` calls and how its arguments are placed: ``fn`` (vmapped over ``axes``
        unless the round batches itself; returning only the roots of the trees it builds that
        the plan recomputes), its statics, the arguments' shardings."""
        shardings = self.placements(table, args, axes)
        describe = _describe(fn, static, axes if axes is not None and vmap else None)
        if axes is not None and vmap:
            fn, static = grouped(fn, static, axes), {}
        elif axes is None and (paths := self._trimmed(table, name)):
            describe = _describe_trimmed(describe, static, paths)
            fn, static = roots_only(fn, static, paths), {}
        return fn, static, shardings, describe

    def _trimmed(self, table: int | None, name: str) -> frozenset:
        """The output paths of round ``name`` of unit ``table`` that the plan recomputes (none
        for a round that then builds its tree apart, :attr:`~jaxstark.rounds.Round.tree_round`)."""
        spec = registered(name)
        if not self.recompute or spec is None or spec.tree_round is not None:
            return frozenset()
        prefix = held_name(table, name)
        return frozenset(n[len(prefix) :] for n in self.recompute if n.startswith(prefix + "["))

    def row_blocks(self, table: int | None, name: str, default: int) -> int:
        """How many blocks of rows round ``name`` of unit ``table`` runs in: the plan's choice
        (:attr:`~jaxstark.rounds.Round.blocked`), else ``default`` (the platform's)."""
        return self.blocks.get(held_name(table, name), default)

    def recomputes(self, table: int | None, name: str, tree: str = "nodes") -> bool:
        """Whether the plan recomputes output ``tree`` of round ``name`` of unit ``table``."""
        return f"{held_name(table, name)}[0].{tree}" in self.recompute

    def _host_domain(self, log_n: int, blowup: int):
        with jax.default_device(jax.local_devices(backend="cpu")[0]):  # tables are built on the host (cached per shape)
            return make_domain(log_n, blowup)

    def statement(self, publics: tuple, statement: dict) -> Transcript:
        """The transcript after the statement (:func:`~jaxstark.rounds.r0_statement.initial_transcript`
        of ``publics`` and ``statement``: AIRs, config, heights, chunks), on the default device.
        It is computed on the host; here, abstract (the public inputs' values are not known)."""
        return self._abstract_transcript(get_hash(statement["config"].hash).name)

    def _abstract_transcript(self, hash_name: str) -> Transcript:
        sds = jax.ShapeDtypeStruct((DIGEST_BYTES,), np.uint8)
        return Transcript(hash_name, False, _sds(sds, self._statement_sharding()))

    def _statement_sharding(self):
        return self.placements(None, (jax.ShapeDtypeStruct((DIGEST_BYTES,), np.uint8),), None)[0]

    def hold(self, name: str, tree, table: int | None, *, until_end: bool = False) -> None:
        """``tree``'s arrays are resident from now on: until ``release(table)``, or to the end of
        the proof with ``until_end`` (the caller's trace)."""

    def release(self, table: int) -> None:
        """Table ``table`` is done: the buffers held for it are dropped."""

    def chunk(self, trace, unit, table: int):
        """The rows of ``unit`` (a group of row chunks, :class:`jaxstark.chunking.Unit`; unit
        ``table`` of the schedule) of a caller's trace, as ``(chunks, chunk_rows, cols)``."""
        return trace[unit.rows].reshape(unit.count, 1 << unit.log_rows, trace.shape[1])

    def drop(self, tree) -> None:
        """``tree``'s arrays are no longer held: the schedule does not use them again."""

    def from_host(self, trace) -> None:
        """``trace`` is a caller's trace in host memory: each round that takes it copies it in."""


class Planner(_Executor):
    """Runs the schedule on abstract values, compiling each round and recording its memory."""

    def __init__(self, devices, default, meshes=None, park: frozenset = frozenset(),
                 recompute: frozenset = frozenset(), blocks: dict | None = None):  # fmt: skip
        super().__init__(devices, default, meshes, recompute, blocks)
        self.blocked: dict[str, tuple[int, int]] = {}  # held_name(unit, round) -> (its row blocks, the most)
        self.park = park  # names of held outputs parked in host memory between the rounds that take them
        self.parkable: dict[str, int] = {}  # held round outputs that may be parked -> bytes
        self.recomputable: dict[str, int] = {}  # held trees that may be recomputed -> bytes
        self.copies_in: dict[str, int] = {}  # parked name -> rounds that copy it back in
        self._rounds: list[RoundMemory] = []
        self._pending: list[tuple] = []  # rounds whose program is still compiling, in order
        # id(array) -> (name, array, owning table or None when shared, held until the end, its bytes)
        self.held: dict[int, tuple[str, object, int | None, bool, int]] = {}
        self.on_host: dict[int, object] = {}  # id(array) -> a caller's trace in host memory (kept alive)
        self._devsets: dict[int | None, frozenset] = {}  # unit -> its devices (the schedule asks per round)
        self._memory: dict[int, tuple] = {}  # id(executable) -> (it, its memory_analysis()): one read each
        # the device buffers' allocations and frees in the schedule's order, replayed through the
        # allocator's pool as rounds are measured (jaxstark.memory.pool)
        self._events: list[tuple] = []
        self._replay = pool.Replay()

    def hold(self, name: str, tree, table: int | None, *, until_end: bool = False, outputs: bool = False) -> None:
        """``outputs``: the arrays are a round's outputs, allocated by its round event; any other
        array is allocated here, on the unit's devices unless it says where it is."""
        for leaf_name, leaf in _named_leaves(name, tree):
            self.held[id(leaf)] = (leaf_name, leaf, table, until_end, _nbytes(leaf))
            if not outputs:
                self._events.append(("alloc", id(leaf), _pooled(leaf, self.devset(table))))

    def release(self, table: int) -> None:
        gone = [k for k, v in self.held.items() if v[2] == table and not v[3]]
        for k in gone:
            del self.held[k]
            self._events.append(("free", k))

    def drop(self, tree) -> None:
        for x in jax.tree.leaves(tree):
            if self.held.pop(id(x), None) is not None:
                self._events.append(("free", id(x)))

    def devset(self, table: int | None) -> frozenset:
        if table not in self._devsets:
            self._devsets[table] = super().devset(table)
        return self._devsets[table]

    def from_host(self, trace) -> None:
        self.on_host[id(trace)] = trace
        self._events = [e for e in self._events if e[:2] != ("alloc", id(trace))]  # it is not on the device

    def domain(self, table: int, log_n: int, blowup: int):
        host = self._host_domain(log_n, blowup)
        return jax.tree.map(_sds, host, self.placements(table, (host,), (None,))[0])

    def chunk(self, trace, unit, table: int):
        shape = (unit.count, 1 << unit.log_rows, trace.shape[1])
        sds = jax.ShapeDtypeStruct(shape, trace.dtype)
        return _sds(sds, self.placements(table, (sds,), (0,))[0])

    def run(
        self, table: int | None, name: str, fn: Callable, args: tuple, static: dict, axes: tuple | None = None,
        vmap: bool = True,
    ):  # fmt: skip
        """Compile round ``name`` of unit ``table`` and record its memory. ``axes``: the round
        takes a group of row chunks along these axes of its arguments -- run it under ``vmap``
        (unless ``vmap`` is False: the round batches itself) and, when the unit is spread over
        a mesh, split those arguments over its devices."""
        spec = registered(name)
        if spec is not None and spec.blocked is not None and axes is None:
            self.blocked[held_name(table, name)] = (static["blocks"], spec.blocked(args))
        fn, static, shardings, describe = self._round(table, name, fn, args, static, axes, vmap)
        start = time.perf_counter()
        exe, fresh = _compiled(fn, static, args, shardings, name, describe, defer=True)
        seconds = time.perf_counter() - start
        passed = _nbytes(jax.tree.map(_sds, args, shardings))
        parked_ids = {k for k, v in self.held.items() if v[0] in self.park and not v[3]} if self.park else set()
        staging = max(
            (
                transfer.in_flight(x.shape, x.dtype, transfer.platform(s))
                for x, s in zip(jax.tree.leaves(args), jax.tree.leaves(shardings), strict=True)
                if id(x) in self.on_host or id(x) in parked_ids
            ),
            default=0,
        )  # host arrays (a caller's trace, parked buffers) are copied in one after another
        arg_ids = {id(x) for x in jax.tree.leaves(args)}
        by_name: dict[str, int] = {}
        on_host: dict[str, int] = {}
        fixed = copied_in = 0
        here = self.devset(table)
        shares = {}  # owner -> whether it holds buffers on this round's devices
        for key, (buf, _, owner, until_end, size) in self.held.items():
            share = shares.get(owner)
            if share is None:
                share = shares[owner] = bool(self.devset(owner) & here)
            if not share:
                continue
            parked = not until_end and buf in self.park
            if key not in arg_ids:
                if parked:
                    on_host[buf] = on_host.get(buf, 0) + size
                    continue
                by_name[buf] = by_name.get(buf, 0) + size
            elif parked:
                copied_in += size
                self.copies_in[buf] = self.copies_in.get(buf, 0) + 1
            if until_end or owner != table:
                fixed += size
        resident = tuple(sorted(by_name.items()))
        extra = (tuple(sorted(on_host.items())), copied_in)
        index = len(self._rounds) + len(self._pending)
        self._pending.append((table, name, exe, fresh, seconds, passed, resident, fixed, staging, extra))
        # a fresh abstract value per dispatch: the buffers are tracked by identity, and one
        # executable (or one pending compile job) serves several dispatches
        out = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=s.sharding), exe.out_info)
        prefix = held_name(table, name)
        self.hold(prefix, out, table, outputs=True)
        copies, blocks = [], []  # host arrays copied in for the round; their row blocks in flight
        for x, sh in zip(jax.tree.leaves(args), jax.tree.leaves(shardings), strict=True):
            if id(x) in self.on_host or id(x) in parked_ids:
                copies.append(((index, id(x)), _pooled(_sds(x, sh))))
                lay = transfer.layout(x.shape, np.dtype(x.dtype).itemsize, transfer.platform(sh))
                if lay is not None:
                    block = jax.ShapeDtypeStruct((lay[0], x.shape[-1]), x.dtype, sharding=sh)
                    blocks.append((_pooled(block), lay[1]))
        outputs = [(id(x), _pooled(x, here)) for x in jax.tree.leaves(out)]
        self._events.append(("round", index, copies, outputs, sorted(here, key=lambda d: d.id), blocks))
        if self.park:  # a parked output leaves the device once the round is done
            self._events += [("free", id(x)) for n, x in _named_leaves(prefix, out) if n in self.park]
        self._measure(wait=False)
        trees = {f"{prefix}[0].{f}" for f in spec.trees} if spec is not None and axes is None else set()
        for leaf_name, leaf in _named_leaves(prefix, out):
            if _nbytes(leaf) >= PARK_MIN_BYTES:
                self.parkable[leaf_name] = _nbytes(leaf)
                if leaf_name in trees:
                    self.recomputable[leaf_name] = _nbytes(leaf)
        return out

    @property
    def rounds(self) -> list[RoundMemory]:
        """Every round planned so far, in order (waits for the programs still compiling)."""
        self._measure()
        return self._rounds

    def _measure(self, wait: bool = True) -> None:
        """Record the memory of the pending rounds from their executables, in order, telling the
        planning callback of each one compiled; ``wait=False``: only those at the front of the
        queue whose compilation is done."""
        while self._pending:
            table, name, exe, fresh, seconds, passed, resident, fixed, staging, (parked, copied_in) = self._pending[0]
            if isinstance(exe, _Compiling) and not wait and not exe.future.done():
                return
            self._pending.pop(0)
            if isinstance(exe, _Compiling):
                job = exe
                exe = _finish(job)
                if fresh:
                    seconds = job.result()[1].total
            if id(exe) not in self._memory:  # the executable is kept with it: its id is not reused
                self._memory[id(exe)] = exe, exe.memory_analysis()
            mem = self._memory[id(exe)][1]
            counted = int(mem.argument_size_in_bytes)
            if counted < passed:
                raise RuntimeError(
                    f"round {name!r}: XLA counts {counted:,} argument bytes of the {passed:,} passed -- it pruned "
                    "unused arguments, which stay alive on the device; jit the round with keep_unused=True"
                )
            temporaries = int(mem.temp_size_in_bytes)
            excess = self._replayed(len(self._rounds), temporaries)
            self._rounds.append(
                RoundMemory(
                    table, name, self.label(table), resident, counted, int(mem.output_size_in_bytes),
                    temporaries, int(mem.alias_size_in_bytes), fixed, staging, parked, copied_in, excess,
                )
            )  # fmt: skip
            if fresh and (callback := PLANNING.get()) is not None:
                unit = "all tables" if table is None else f"unit {table}"
                callback(RoundEvent(len(self._rounds), 0, unit, name, self.label(table), self._rounds[-1].total,
                                    seconds, "plan"))  # fmt: skip

    def _replayed(self, index: int, temporaries: int) -> int:
        """Replay the buffer events up to round ``index`` (whose temporaries are now known)
        through the devices' pools; the round's pool excess (:attr:`RoundMemory.pool`)."""
        while self._events:
            event = self._events.pop(0)
            if event[0] == "alloc":
                self._replay.allocate(event[1], event[2])
            elif event[0] == "free":
                self._replay.free(event[1])
            else:
                _, at, copies, outputs, devices, blocks = event
                if at != index:
                    raise RuntimeError(f"planner: round {at} replayed where round {index} was measured")
                temps = {d: temporaries for d in devices if _has_pool(d)}
                return self._replay.round(index, copies, outputs, temps, blocks)
        raise RuntimeError(f"planner: round {index} measured before it was planned")


def _has_pool(device: jax.Device) -> bool:
    """Whether ``device``'s buffers come from XLA's pool allocator (a GPU under JAX's default
    allocator), which :mod:`jaxstark.memory.pool` simulates."""
    return device.platform == "gpu" and pool.simulated()


def _pooled(x, devices=()) -> dict:
    """``{device: bytes}`` of array ``x`` on each device with a simulated pool (empty for a host
    array or a CPU device); ``devices``: where an abstract ``x`` without a sharding lives (a
    round's outputs, known before its program is compiled, on its one device; the unit's
    devices for what the schedule holds)."""
    sharding = getattr(x, "sharding", None)
    if not hasattr(x, "shape") or (sharding is None and not devices):
        return {}
    nbytes = int(_nbytes(x))  # a shape may hold numpy integers (an AIR's width)
    return {d: nbytes for d in (devices if sharding is None else sharding.device_set) if _has_pool(d)}


class Runner(_Executor):
    """Runs the schedule on arrays with the planner's executables."""

    concrete = True

    def __init__(self, devices, default, diagnostic: Callable[[int | None, str], str], meshes=None, progress=None,
                 shapes: frozenset = frozenset(), park: frozenset = frozenset(),
                 recompute: frozenset = frozenset(), blocks: dict | None = None):  # fmt: skip
        super().__init__(devices, default, meshes, recompute, blocks)
        self.park = park  # the plan's parked outputs (by held name)
        self._parked: dict[int, tuple[int | None, object, np.ndarray]] = {}  # id(array) -> (unit, array, host copy)
        # device copies of the domain tables are kept for the next proof of the same shapes on the
        # same devices; the others are dropped before this proof dispatches anything (its plan
        # counts only its own: (log_n, blowup, device label) of each unit)
        for key in [k for k in _DOMAINS if k[:3] not in shapes]:
            del _DOMAINS[key]
        self.diagnostic = diagnostic
        # progress: (callback, the plan) -- the callback gets a RoundEvent as each round starts and ends
        self.progress, self.step = progress, 0
        self.last: tuple[int | None, str] = (0, TRACE_COMMIT)  # the round dispatched last (or first)

    def domain(self, table: int, log_n: int, blowup: int):
        """The unit's domain tables on its device(s): copied in once, then kept for later proofs of
        the same shape (``shapes`` of the runner; :func:`clear_caches` drops them)."""
        host = self._host_domain(log_n, blowup)
        shardings = self.placements(table, (host,), (None,))[0]
        key = (log_n, blowup, self.label(table), tuple(jax.tree.leaves(shardings)))
        if key in _DOMAINS:
            return _DOMAINS[key]
        try:
            placed = self._to_device(host, shardings)
            _DOMAINS[key] = placed
            return placed
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            self._failed(exc, table, TRACE_COMMIT, faults.TO_DEVICE)
            return host  # test-only fallback: the tables stay on the host

    def statement(self, publics: tuple, statement: dict) -> Transcript:
        tr = initial_transcript(publics, **statement)
        try:
            return self._to_device(tr, jax.tree.map(lambda _: self._statement_sharding(), tr))
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            self._failed(exc, 0, TRACE_COMMIT, faults.TO_DEVICE)  # (the round that takes it first)
            return tr  # test-only fallback: the state stays on the host

    def run(
        self, table: int | None, name: str, fn: Callable, args: tuple, static: dict, axes: tuple | None = None,
        vmap: bool = True,
    ):  # fmt: skip
        """Dispatch round ``name`` of unit ``table`` with the planner's executable. Its arguments
        are copied to the unit's device(s) (fault site "host to device"), the round runs (fault
        site ``name``); a device failure in either raises :class:`DeviceFailure` with the plan's
        diagnostic (or, under the test-only fallback, the round is recomputed on the host).
        The host does not wait for the round unless progress is shown (then its event carries
        the round's own time): the next round is dispatched behind it, and a failure while it
        runs on the device is reported where the host next reads a result (:meth:`host`)."""
        args = self._unparked(args)  # a parked argument: its host copy, copied in below
        spec = registered(name)
        site = name if spec is None else spec.name  # a FRI layer's dispatches are the FRI layer round's
        sites = (site,) if spec is None else (site, *spec.stage_sites(spec.fri_layers(args, static)))
        fn, static, shardings, _ = self._round(table, name, fn, args, static, axes, vmap)
        exe = compiled_for(fn, static, args, shardings)  # the planner's (no second compilation)
        _DISPATCHES[site] = _DISPATCHES.get(site, 0) + 1
        event = self._event(table, name)
        start = time.perf_counter()
        self.last = (table, name)
        try:
            placed = self._to_device(args, shardings)
            for stage in sites:  # the round, then each stage its executable runs
                faults.check(stage)
            out = exe(*placed)
            if event is not None:  # progress is being shown: the round's time is its own
                out = jax.block_until_ready(out)
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            self._failed(exc, table, name, getattr(exc, "site", site))
            with jax.default_device(jax.local_devices(backend="cpu")[0]):
                host_args = jax.device_put(jax.device_get(args), jax.local_devices(backend="cpu")[0])
                out = jax.device_put(jax.block_until_ready(fn(*host_args, **static)), exe.output_shardings)
        if self.park:
            self._park(table, name, out)
        if event is not None:
            self.progress[0](dataclasses.replace(event, seconds=time.perf_counter() - start))
        return out

    def _park(self, table: int | None, name: str, out) -> None:
        """Copy the round's outputs the plan parks to host memory and delete their device copies
        (the arrays stay as handles: :meth:`run` and :meth:`host` read the host copy)."""
        leaves = [leaf for leaf_name, leaf in _named_leaves(held_name(table, name), out) if leaf_name in self.park]
        try:
            faults.check(faults.TO_HOST)
            for leaf in leaves:  # every copy is started before the first is waited for
                leaf.copy_to_host_async()
            hosts = [np.asarray(leaf) for leaf in leaves]
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            self._failed(exc, table, name, faults.TO_HOST)
            hosts = [np.asarray(jax.device_get(leaf)) for leaf in leaves]  # test-only fallback
        for leaf, host in zip(leaves, hosts, strict=True):
            self._parked[id(leaf)] = (table, leaf, host)
            leaf.delete()

    def _unparked(self, tree):
        return jax.tree.map(lambda x: self._parked[id(x)][2] if id(x) in self._parked else x, tree)

    def drop(self, tree) -> None:
        """Delete the device copies of ``tree``'s arrays (round outputs the schedule no longer
        needs), so that they are gone when the plan counts them gone, whoever still refers to them."""
        for x in jax.tree.leaves(tree):
            if self._parked.pop(id(x), None) is None and isinstance(x, jax.Array) and not x.is_deleted():
                x.delete()

    def release(self, table: int) -> None:
        self._parked = {k: v for k, v in self._parked.items() if v[0] != table}

    def _to_device(self, tree, shardings):
        faults.check(faults.TO_DEVICE)
        return _put(tree, shardings)

    def root(self, nodes):
        return nodes[..., 1, :]  # a 32-byte slice per tree, on its device

    def exchange(self, tr: Transcript, mine: dict, zeros, units: list, absorb) -> tuple[Transcript, dict]:
        local = self.host(mine) if mine else {}
        values = _gathered({i: tuple(local[i]) if i in local else zeros(i) for i in units})
        host = HostTranscript(tr.hash_name, False, bytes(np.asarray(self.host(tr.state))))
        for i in units:
            host = absorb(host, i, values[i])
        out = host.as_transcript()
        return self._to_device(out, jax.tree.map(lambda _: self._statement_sharding(), out)), values

    def share_proofs(self, proofs: list, owned: list, failure: BaseException | None = None,
                     notes: tuple[str, ...] = ()) -> tuple[list, list[str]]:  # fmt: skip
        from jaxstark.proof import Proof  # (the proof format: only a shared statement needs it here)

        # one exchange carries both, so that every process reaches the same exchanges in order
        said = agreed(json.dumps(dict(failure=None if failure is None else f"{type(failure).__name__}: {failure}",
                                      notes=[n[:500] for n in notes[:6]])))  # fmt: skip
        if failure is not None:
            raise failure
        heard = [_said(text) for text in said]
        for p, (failed, _) in enumerate(heard):
            if failed:
                raise JaxstarkError(f"jax.distributed process {p} failed proving its tables: {failed}")

        blobs = {i: Proof("", tuple(p)).to_bytes() for i, p in enumerate(proofs) if owned[i]}
        sizes = _gathered({i: (np.array(len(blobs.get(i, b"")), np.uint64),) for i in range(len(proofs))})
        width = int(max((int(v[0]) for v in sizes.values()), default=0))
        rows = {i: (np.frombuffer(blobs.get(i, b"").ljust(width, b"\0"), np.uint8),) for i in range(len(proofs))}
        got = _gathered(rows)
        shared = [list(Proof.from_bytes(bytes(got[i][0][: int(sizes[i][0])])).tables) for i in range(len(proofs))]
        return shared, [note for _, notes in heard for note in notes]

    def _failed(self, exc: BaseException, table: int | None, name: str, site: str) -> None:
        """Re-raise ``exc`` unless it is a device failure; then raise :class:`DeviceFailure` with
        the plan's diagnostic for round ``name`` of unit ``table``, or return for the test-only
        host fallback (after its banner)."""
        if not _is_device_error(exc):
            raise exc
        if os.environ.get(FALLBACK_ENV) != "1":
            raise DeviceFailure(f"at site {site!r}: " + self.diagnostic(table, name), exc) from exc
        _banner()

    def _event(self, table: int | None, name: str):
        """The progress event of the round starting now (sent), or None without a callback."""
        self.step += 1
        if self.progress is None:
            return None
        callback, plan = self.progress
        planned = plan.rounds[self.step - 1]
        if (planned.table, planned.name) != (table, name):
            raise RuntimeError(f"round {self.step} is {name!r} of unit {table}; the plan has {planned.name!r} of "
                               f"unit {planned.table}")  # fmt: skip
        unit = "all tables" if table is None else plan.tables[table].name
        event = RoundEvent(self.step, len(plan.rounds), unit, name, planned.device, planned.total)
        callback(event)
        return event

    def host(self, tree, made_by: tuple[int | None, str] | None = None):
        """``tree``'s arrays on the host, gathered from every process when they are spread over
        devices of several processes (fault site "device to host"; a failure is reported with
        the diagnostic of ``made_by``, the unit and round whose results these are -- default the
        round dispatched last)."""
        made_by = made_by or self.last
        tree = self._unparked(tree)
        try:
            faults.check(faults.TO_HOST)
            if jax.process_count() == 1:
                return jax.device_get(tree)
            from jax.experimental import multihost_utils  # only a run over several processes loads it

            # an array spread over several processes' devices is gathered from all of them (every
            # process reads it at the same point); one on this process's devices is read here
            return jax.tree.map(
                lambda x: (
                    multihost_utils.process_allgather(x, tiled=True)
                    if isinstance(x, jax.Array) and not x.is_fully_addressable
                    else jax.device_get(x)
                ),
                tree,
            )
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            self._failed(exc, *made_by, faults.TO_HOST)
            return jax.tree.map(np.asarray, tree)  # test-only fallback: a second copy, element by element


def agreed(message: str) -> list[str]:
    """Every ``jax.distributed`` process's ``message`` ("" for none; at most 4096 bytes of its
    UTF-8 kept), in process order: what lets every process raise when one of them fails, rather
    than the others waiting for it in the next exchange. One process: ``[message]``."""
    if jax.process_count() == 1:
        return [message]
    width = 4096
    slots = np.zeros((jax.process_count(), width), np.uint8)
    data = message.encode()[:width]
    slots[jax.process_index(), : len(data)] = np.frombuffer(data, np.uint8)
    got = _gathered({0: (slots,)})[0][0]
    return [bytes(row).rstrip(b"\0").decode(errors="replace") for row in got]


def _said(text: str) -> tuple[str | None, list[str]]:
    """(failure, notes) of a process's :func:`agreed` message in :meth:`Runner.share_proofs`
    (cut at 4096 bytes: a message that no longer parses is kept as the failure's text)."""
    try:
        data = json.loads(text)
        return data["failure"], list(data["notes"])
    except (ValueError, KeyError, TypeError):
        return text or None, []


def _gathered(values: dict[int, tuple]) -> dict[int, tuple]:
    """Per unit, the values of the process that owns it: every process gives every unit's tuple
    of host arrays, zeros for the units it does not own, and each element is the largest over
    the processes (unsigned and boolean values: the owner's; a unit spread over every process
    has the same values in each)."""
    if jax.process_count() == 1:
        return values
    from jax.experimental import multihost_utils  # only a run over several processes loads it

    every = multihost_utils.process_allgather(values, tiled=False)  # a leading axis of processes
    return jax.tree.map(lambda x: np.asarray(x).max(axis=0), every)


def _put(tree, shardings):
    """``jax.device_put`` of ``tree`` onto ``shardings``, also across processes: a value spread
    over the devices of several processes is built from the host copy every process holds (or
    from the local copy of a replicated array), and a replicated one is read from a local device."""
    if jax.process_count() == 1:  # a large host array onto one accelerator in row blocks from threads
        tree = jax.tree.map(lambda x, s: transfer.put(x, s) if transfer.wanted(x, s) else x, tree, shardings)
        return jax.device_put(tree, shardings)

    def put(x, s):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if x.sharding == s or not s.is_fully_addressable:
                return jax.device_put(x, s)
            x = x.addressable_data(0)  # fully replicated: the whole value is on a local device
        if s.is_fully_addressable:
            return jax.device_put(x, s)
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, s, lambda index: host[index])

    return jax.tree.map(put, tree, shardings)


def _is_device_error(exc: BaseException) -> bool:
    if isinstance(exc, faults.InjectedFault):
        return True
    runtime = getattr(jax.errors, "JaxRuntimeError", None)
    if runtime is not None and isinstance(exc, runtime):
        return True
    return type(exc).__name__ in ("XlaRuntimeError", "JaxRuntimeError")


def _banner() -> None:
    if not _BANNER_SHOWN[0]:
        _BANNER_SHOWN[0] = True
        print(
            f"jaxstark: {FALLBACK_ENV}=1 -- a device failure is being recomputed on the HOST CPU. This is a test-only "
            "setting and never a production configuration.",
            file=sys.stderr,
            flush=True,
        )
