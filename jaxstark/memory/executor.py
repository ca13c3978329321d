"""Running rounds through one schedule, abstractly (planning) or for real (proving).

The prover's data flow is written once (:func:`jaxstark.prover._schedule`) against an
*executor*. :class:`Planner` runs it on abstract values: each round is lowered for its device
with ``jax.ShapeDtypeStruct`` arguments and compiled (``jit(...).lower(...).compile()``); XLA's
``memory_analysis()`` gives the round's argument, output, temporary and aliased bytes, and the
executor's own bookkeeping knows which buffers from earlier rounds are still held. Nothing is
dispatched. :class:`Runner` runs the same flow on arrays, calling the executables the planner
compiled (looked up by signature -- no second compilation), counting dispatches, and turning
any device failure into the loud :class:`~jaxstark.errors.DeviceFailure`.

Buffers are tracked by identity: a round's outputs become *resident* under names like
``"table 0: trace commit.lde"`` until the schedule releases the table; a round's device set is
the resident buffers it does not take as arguments plus XLA's figure for the round itself.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

import jax
import numpy as np

from jaxstark.errors import DeviceFailure

__all__ = ["Planner", "Runner", "RoundMemory", "dispatch_count", "compiled_for", "FALLBACK_ENV"]

FALLBACK_ENV = "JAXSTARK_TEST_ONLY_HOST_FALLBACK"
_COMPILED: dict = {}  # signature -> compiled executable (shared by every plan and proof)
_DISPATCHES: dict[str, int] = {}  # round name -> executables dispatched
_BANNER_SHOWN = [False]


def dispatch_count(name: str | None = None) -> int:
    """How many round executables (of round ``name``, or of any) this process has dispatched."""
    return sum(_DISPATCHES.values()) if name is None else _DISPATCHES.get(name, 0)


def _sds(x, device: jax.Device):
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=jax.sharding.SingleDeviceSharding(device))
    return x


def _nbytes(tree) -> int:
    return sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def _signature(fn, static: dict, args: tuple, device: jax.Device):
    leaves, treedef = jax.tree.flatten(args)
    return (fn, tuple(sorted(static.items())), treedef, tuple((x.shape, np.dtype(x.dtype)) for x in leaves), device)


def compiled_for(fn, static: dict, args: tuple, device: jax.Device):
    """The executable of ``fn`` for these argument shapes on ``device`` (compiled once)."""
    key = _signature(fn, static, args, device)
    exe = _COMPILED.get(key)
    if exe is None:
        abstract = jax.tree.map(lambda x: _sds(x, device), args)
        exe = fn.lower(*abstract, **static).compile()
        _COMPILED[key] = exe
    return exe


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

    @property
    def resident_bytes(self) -> int:
        return sum(b for _, b in self.resident)

    @property
    def total(self) -> int:
        return self.resident_bytes + self.arguments + self.outputs + self.temporaries - self.aliased


class _Executor:
    """What planning and running share: the device of each table, the host-built domain tables,
    and the schedule's hooks for buffers held between rounds (only the planner keeps books)."""

    concrete = False

    def __init__(self, devices: dict[int, jax.Device], default: jax.Device):
        self.devices, self.default = devices, default

    def device(self, table: int | None) -> jax.Device:
        return self.default if table is None else self.devices[table]

    def _host_domain(self, log_n: int, blowup: int):
        from jaxstark.rounds.domain import make_domain

        with jax.default_device(jax.devices("cpu")[0]):  # tables are built on the host (cached per shape)
            return make_domain(log_n, blowup)

    def hold(self, name: str, tree, table: int | None, *, until_end: bool = False) -> None:
        """``tree``'s arrays are resident from now on: until ``release(table)``, or to the end of
        the proof with ``until_end`` (the caller's trace)."""

    def release(self, table: int) -> None:
        """Table ``table`` is done: the buffers held for it are dropped."""

    def chunk(self, trace, unit):
        """The rows of ``unit`` (a row chunk, :class:`jaxstark.chunking.Unit`) of a caller's trace."""
        return trace[unit.rows]

    def drop(self, tree) -> None:
        """``tree``'s arrays are no longer held (the schedule keeps no reference to them)."""


class Planner(_Executor):
    """Runs the schedule on abstract values, compiling each round and recording its memory."""

    def __init__(self, devices, default):
        super().__init__(devices, default)
        self.rounds: list[RoundMemory] = []
        # id(array) -> (name, array, owning table or None when shared, held until the end)
        self.held: dict[int, tuple[str, object, int | None, bool]] = {}

    def hold(self, name: str, tree, table: int | None, *, until_end: bool = False) -> None:
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            if hasattr(leaf, "shape"):
                self.held[id(leaf)] = (f"{name}{jax.tree_util.keystr(path)}", leaf, table, until_end)

    def release(self, table: int) -> None:
        self.held = {k: v for k, v in self.held.items() if v[2] != table or v[3]}

    def drop(self, tree) -> None:
        gone = {id(x) for x in jax.tree.leaves(tree)}
        self.held = {k: v for k, v in self.held.items() if k not in gone}

    def domain(self, table: int, log_n: int, blowup: int):
        device = self.device(table)
        return jax.tree.map(lambda x: _sds(x, device), self._host_domain(log_n, blowup))

    def chunk(self, trace, unit):
        return jax.ShapeDtypeStruct((1 << unit.log_rows, trace.shape[1]), trace.dtype)

    def run(self, table: int | None, name: str, fn: Callable, args: tuple, static: dict):
        device = self.device(table)
        exe = compiled_for(fn, static, args, device)
        mem = exe.memory_analysis()
        counted, passed = int(mem.argument_size_in_bytes), _nbytes(args)
        if counted < passed:
            raise RuntimeError(
                f"round {name!r}: XLA counts {counted:,} argument bytes of the {passed:,} passed -- it pruned "
                "unused arguments, which stay alive on the device; jit the round with keep_unused=True"
            )
        arg_ids = {id(x) for x in jax.tree.leaves(args)}
        by_name: dict[str, int] = {}
        for key, (buf, ref, owner, _) in self.held.items():
            if key not in arg_ids and self.device(owner) == device:
                by_name[buf] = by_name.get(buf, 0) + _nbytes(ref)
        out = exe.out_info
        self.rounds.append(
            RoundMemory(
                table,
                name,
                f"{device.platform}:{device.id}",
                tuple(sorted(by_name.items())),
                int(mem.argument_size_in_bytes),
                int(mem.output_size_in_bytes),
                int(mem.temp_size_in_bytes),
                int(mem.alias_size_in_bytes),
            )
        )
        self.hold(f"{'shared' if table is None else f'table {table}'}: {name}", out, table)
        return out


class Runner(_Executor):
    """Runs the schedule on arrays with the planner's executables."""

    concrete = True

    def __init__(self, devices, default, diagnostic: Callable[[int | None, str], str]):
        super().__init__(devices, default)
        self.diagnostic = diagnostic

    def domain(self, table: int, log_n: int, blowup: int):
        return jax.device_put(self._host_domain(log_n, blowup), self.device(table))

    def run(self, table: int | None, name: str, fn: Callable, args: tuple, static: dict):
        device = self.device(table)
        args = jax.device_put(args, device)
        exe = compiled_for(fn, static, args, device)
        _DISPATCHES[name] = _DISPATCHES.get(name, 0) + 1
        try:
            out = jax.block_until_ready(exe(*args))
        except Exception as exc:  # noqa: BLE001 -- every device failure is re-raised loudly
            if not _is_device_error(exc):
                raise
            if os.environ.get(FALLBACK_ENV) != "1":
                raise DeviceFailure(self.diagnostic(table, name), exc) from exc
            _banner()
            with jax.default_device(jax.devices("cpu")[0]):
                host_args = jax.device_put(args, jax.devices("cpu")[0])
                out = jax.device_put(jax.block_until_ready(fn(*host_args, **static)), device)
        return out


def _is_device_error(exc: BaseException) -> bool:
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
