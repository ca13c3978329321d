"""Compiled rounds kept across runs: JAX's persistent compilation cache, on by default.

Importing jaxstark points JAX's persistent cache at a per-user directory, so the second run of a
shape (a new process, a restarted notebook kernel, a CI job with a kept cache) loads its rounds
instead of compiling them again:

* ``JAXSTARK_CACHE_DIR=PATH`` -- the directory (default ``$XDG_CACHE_HOME/jaxstark/xla``, else
  ``~/.cache/jaxstark/xla``); ``JAXSTARK_CACHE_DIR=off`` switches the cache off;
* a cache configured for JAX itself (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)`` before importing jaxstark) is left as it
  is;
* programs that compiled in at least :data:`MIN_COMPILE_SECS` are kept (JAX's own default, one
  second, would skip most rounds on a CPU); ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` overrides it.

A directory that cannot be created leaves the cache off with a warning: the cache saves time, it
never decides what is computed (an entry is keyed by the program, its compile options, the
device and the JAX version).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

__all__ = [
    "ENV", "MIN_COMPILE_SECS", "configure", "cache_dir", "default_dir", "PROGRAM_ENV", "program_dir", "program_key",
    "store_program", "load_program", "Uncacheable", "CPU_COMPILER_OPTIONS", "compiler_options",
]  # fmt: skip

ENV = "JAXSTARK_CACHE_DIR"
OFF = ("off", "0", "none", "false")
MIN_COMPILE_SECS = 0.05


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxstark" / "xla"


def cache_dir() -> str | None:
    """The directory JAX's persistent cache uses now (None: off)."""
    return jax.config.jax_compilation_cache_dir or None


def configure() -> str | None:
    """Turn the cache on as described above (called when jaxstark is imported); returns the
    directory in use, or None when it is off."""
    if cache_dir():  # configured for JAX itself
        return cache_dir()
    text = os.environ.get(ENV, "").strip()
    if text.lower() in OFF and text:
        return None
    path = Path(text).expanduser() if text else default_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        warnings.warn(f"jaxstark: compiled rounds are not kept across runs: cannot create {path} ({exc}); "
                      f"set {ENV} to a writable directory or to 'off'", stacklevel=2)  # fmt: skip
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    if not os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECS)
    return str(path)


# --- How jaxstark's programs are compiled ------------------------------------------------------
#
# XLA:CPU emits a fusion either through its MLIR fusion emitters (the default) or through its
# elemental IR emitters. For jaxstark's rounds -- integer loops, gathers and scatters, no matrix
# products -- the elemental emitters compile in about 60-70% of the time and the rounds run as
# fast (benchmarks/RESULTS.md, "Compile time: XLA:CPU's elemental fusion emitters"), so the
# programs jaxstark compiles for a CPU ask for them. A setting named in ``XLA_FLAGS`` wins: set
# ``--xla_cpu_use_fusion_emitters=true`` there to compile with the fusion emitters. Compile
# options are part of the persistent cache's key, so a program compiled one way is never loaded
# for the other.
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


def compiler_options(devices) -> dict | None:
    """The compile options for a program that runs on ``devices`` (an iterable of JAX
    devices): :data:`CPU_COMPILER_OPTIONS` when every one is a CPU, less any option that
    ``XLA_FLAGS`` sets or this XLA does not know (:func:`cpu_option_known`); None (XLA's own
    settings) otherwise."""
    devices = list(devices)
    if not devices or any(d.platform != "cpu" for d in devices):
        return None
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in CPU_COMPILER_OPTIONS.items() if k not in flags and cpu_option_known(k, v)} or None


@functools.cache
def cpu_option_known(name: str, value) -> bool:
    """Whether this jaxlib's XLA:CPU takes compile option ``name`` (one tiny program compiled
    with it, once per process): options come and go between XLA versions (jax 0.11's XLA has
    no ``xla_cpu_use_fusion_emitters``), and an unknown one fails every compile."""
    cpu = jax.devices("cpu")[0]
    x = jax.ShapeDtypeStruct((), np.float32, sharding=jax.sharding.SingleDeviceSharding(cpu))
    try:
        jax.jit(lambda v: v + 1).lower(x).compile({name: value})
    except Exception as exc:  # noqa: BLE001 -- XLA names the option it refuses
        if name in str(exc):
            return False
        raise
    return True


# --- Rounds kept as lowered programs ---------------------------------------------------------
#
# JAX's cache is keyed by the lowered program, so finding an entry still costs tracing and
# lowering the round -- most of a warm start (seconds per round on a GPU, where the kernels and
# their jnp twins are both traced). Rounds whose code is all jaxstark's are therefore also kept
# *lowered*: the round is exported (``jax.export``) as a function of its flattened arguments and
# the serialised program stored under a key naming everything the trace depends on -- the
# jaxstark source, its module-level tunables as they are now, JAX's version and the settings
# that change a trace, the target platform, the round, its static arguments and its argument
# shapes, dtypes and placements. A later process with the same key deserialises the program and
# compiles it (from JAX's cache) without tracing anything. A round is traced as before when its
# statics hold anything but plain data and jaxstark's own AIRs and configs (a user's AIR is code
# jaxstark cannot fingerprint), when it is spread over several devices, or with
# ``JAXSTARK_PROGRAM_CACHE=off``. Every file read is checked (magic, format, the key it was
# stored under, the argument tree and shapes); anything that does not match is a miss.

PROGRAM_ENV = "JAXSTARK_PROGRAM_CACHE"
PROGRAM_FORMAT = 1
_MAGIC = b"jaxstark-program\n"
_SOURCE: list = []  # the digest of jaxstark's source and its files' (path, mtime, size), taken at import
_SERIALISES: list[bool] = []  # whether flatbuffers is importable (checked once)
_ALL_IMPORTED: list[bool] = []  # every jaxstark module imported (once, before the first key)
_TUNABLES: list[str] = []  # the tunables when the first key was made
# JAX settings a trace depends on
_JAX_FLAGS = ("jax_enable_x64", "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion", "jax_enable_checks",
              "jax_pallas_enable_debug_checks", "jax_default_matmul_precision")  # fmt: skip


def tunables_changed() -> bool:
    """Whether a tunable changed since this process made its first key. JAX reuses a function's
    trace within a process whatever a module global says now, so a round exported after such a
    change may hold the old setting: it is used, not kept."""
    return bool(_TUNABLES) and _tunables() != _TUNABLES[0]


class Uncacheable(Exception):
    """A round that is traced every time (see above)."""


def program_dir() -> Path | None:
    """Where lowered rounds are kept: ``jaxstark-programs`` beside JAX's cache (None: not kept --
    no cache, ``JAXSTARK_PROGRAM_CACHE=off``, or no ``flatbuffers`` to serialise them with)."""
    if os.environ.get(PROGRAM_ENV, "").strip().lower() in OFF or not cache_dir() or not _can_serialise():
        return None
    return Path(cache_dir()) / "jaxstark-programs"


def _can_serialise() -> bool:
    if not _SERIALISES:
        try:
            import flatbuffers  # noqa: F401 -- what jax.export serialises with
        except ImportError:
            _SERIALISES.append(False)
        else:
            _SERIALISES.append(True)
    return _SERIALISES[0]


def _source_files() -> list[tuple[Path, int, int]]:
    root = Path(__file__).resolve().parent
    return [(p, (st := p.stat()).st_mtime_ns, st.st_size) for p in sorted(root.rglob("*.py"))]


def _source_digest() -> str:
    """The digest of jaxstark's source as this process imported it (taken when this module is
    imported, before the rest of the package). If a file has changed on disk since, the code
    running may not be the code on disk, and nothing is kept: :class:`Uncacheable`."""
    if not _SOURCE:
        root = Path(__file__).resolve().parent
        files = _source_files()
        h = hashlib.sha256()
        for path, _, _ in files:
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        _SOURCE.extend([h.hexdigest(), files])
    elif _source_files() != _SOURCE[1]:
        raise Uncacheable("jaxstark's source changed on disk after it was imported")
    return _SOURCE[0]


def _plain(value) -> str | None:
    """A text for plain data -- scalars, and tuples, lists, dicts and dataclasses of them -- or
    None for anything else."""
    if isinstance(value, (bool, int, float, str, np.integer, np.bool_)) or value is None:
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        return None if None in items else f"{type(value).__name__}({','.join(items)})"
    if isinstance(value, dict):
        items = [(_plain(k), _plain(v)) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))]
        return None if any(None in kv for kv in items) else "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [(f.name, _plain(getattr(value, f.name))) for f in dataclasses.fields(value)]
        return None if any(v is None for _, v in fields) else f"{type(value).__qualname__}({fields})"
    return None


# modules whose settings decide how arrays reach a device, never what a program computes
_NO_PROGRAMS = ("jaxstark.transfer",)


def _tunables() -> str:
    """Every upper-case, plain-data global of every jaxstark module but :data:`_NO_PROGRAMS`, as
    it is now (a test or a benchmark may have changed one). All of them are imported first, so the key does not depend
    on which happened to be loaded."""
    if not _ALL_IMPORTED:
        import importlib
        import pkgutil

        package = sys.modules["jaxstark"]
        for info in pkgutil.walk_packages(package.__path__, "jaxstark."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
        _ALL_IMPORTED.append(True)
    out = []
    for name, module in sorted(
        (n, m) for n, m in list(sys.modules.items()) if n == "jaxstark" or n.startswith("jaxstark.")
    ):
        if name.endswith("__main__") or name in _NO_PROGRAMS:
            continue
        for key, value in sorted(vars(module).items()):
            if not key.isupper() or (isinstance(value, (dict, list)) and key.startswith("_")):
                continue  # a private dict or list is state (a counter, a cache), not a setting
            if (text := _plain(value)) is not None:
                out.append(f"{name}.{key}={text}")
    return "\n".join(out)


def _static_text(value) -> str:
    """A round's static argument in a key: an AIR or config of jaxstark's by its fingerprint and
    repr, else plain data that holds no object (a dataclass may be a user's AIR: code)."""
    cls = type(value)
    if cls.__module__.startswith("jaxstark.") and callable(getattr(value, "fingerprint", None)):
        return f"{cls.__module__}.{cls.__qualname__}:{value.fingerprint()}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{cls.__name__}[{','.join(_static_text(v) for v in value)}]"
    if not dataclasses.is_dataclass(value) and (text := _plain(value)) is not None:
        return text
    raise Uncacheable(f"static of type {cls.__module__}.{cls.__qualname__}")


def program_key(describe: str, static: dict, leaves: list, in_tree, platform: str, device_kind: str) -> str:
    """The key of a round's lowered program (raises :class:`Uncacheable`)."""
    import jaxlib

    tunables = _tunables()
    if not _TUNABLES:
        _TUNABLES.append(tunables)
    flags = [getattr(jax.config, f, None) for f in _JAX_FLAGS]
    parts = [
        f"format {PROGRAM_FORMAT}", f"jax {jax.__version__} jaxlib {jaxlib.__version__} equinox {eqx.__version__}",
        _source_digest(), tunables, f"flags {flags!r}",
        f"platform {platform} {device_kind}", describe,
        ";".join(f"{k}={_static_text(v)}" for k, v in sorted(static.items())),
        str(in_tree), ";".join(f"{tuple(x.shape)}:{np.dtype(x.dtype).str}" for x in leaves),
    ]  # fmt: skip
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# The tree of a round's outputs, written as plain data: containers and jaxstark's own pytree
# classes, with their static fields. Reading it imports nothing and accepts no other class.
_ALLOWED = {"builtins.tuple": tuple, "builtins.list": list, "builtins.dict": dict, "builtins.NoneType": type(None)}


def _missing():
    """The placeholder equinox puts in a module's tree for each array field."""

    class Probe(eqx.Module):
        x: object

    found = [v for v in (jax.tree.structure(Probe(1)).node_data()[1] or ()) if type(v).__name__ == "_Missing"]
    return found[0] if found else None


_MISSING = _missing()


def _aux_out(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if _MISSING is not None and value is _MISSING:
        return {"missing": True}
    if isinstance(value, (tuple, list)):
        return {"seq": type(value).__name__, "items": [_aux_out(v) for v in value]}
    raise Uncacheable(f"a static field of type {type(value).__name__} in the output tree")


def _aux_in(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict) and value.get("missing") is True and _MISSING is not None:
        return _MISSING
    if isinstance(value, dict) and value.get("seq") in ("tuple", "list"):
        items = [_aux_in(v) for v in value["items"]]
        return tuple(items) if value["seq"] == "tuple" else items
    raise ValueError("bad static field")


def encode_tree(treedef) -> object:
    """``treedef`` as JSON-able data (raises :class:`Uncacheable` for what it cannot write)."""
    data = treedef.node_data()
    if data is None:
        return "*"
    cls, aux = data
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name not in _ALLOWED and not cls.__module__.startswith("jaxstark."):
        raise Uncacheable(f"output node {name}")
    return {"node": name, "aux": _aux_out(aux), "children": [encode_tree(c) for c in treedef.children()]}


def decode_tree(data):
    """The treedef :func:`encode_tree` wrote; classes only from jaxstark's loaded modules."""
    if data == "*":
        return jax.tree.structure(0)
    name = data["node"]
    cls = _ALLOWED.get(name)
    if cls is None:
        module, _, qual = name.rpartition(".")
        owner = sys.modules.get(module) if module.startswith("jaxstark.") else None
        cls = getattr(owner, qual, None) if owner is not None and "." not in qual else None
        if not isinstance(cls, type):
            raise ValueError(f"unknown output node {name}")
    aux = _aux_in(data["aux"])
    if cls is dict:
        aux = list(aux) if aux is not None else []
    children = [decode_tree(c) for c in data["children"]]
    return jax.tree_util.PyTreeDef.from_node_data_and_children(jax.tree_util.default_registry, (cls, aux), children)


def store_program(key: str, exported, out_tree, in_tree) -> None:
    """Keep a round's exported program (best effort: a full disk only costs the next run)."""
    where = program_dir()
    if where is None:
        return
    program = bytes(exported.serialize())
    header = json.dumps({
        "format": PROGRAM_FORMAT, "key": key, "in_tree": str(in_tree), "out_tree": encode_tree(out_tree),
        "sha256": hashlib.sha256(program).hexdigest(),
    })  # fmt: skip
    body = _MAGIC + header.encode() + b"\n" + program
    try:
        where.mkdir(parents=True, exist_ok=True)
        tmp = where / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes(body)
        os.replace(tmp, where / f"{key}.bin")
    except OSError:
        pass


def load_program(key: str, leaves: list, in_tree):
    """``(exported, out_tree)`` kept under ``key``, or None: missing, unreadable, damaged (the
    program's digest is in the header), another format, or not the program of these arguments."""
    where = program_dir()
    path = where / f"{key}.bin" if where is not None else None
    if path is None or not path.is_file():
        return None
    try:
        data = path.read_bytes()
        if not data.startswith(_MAGIC):
            return None
        header_end = data.index(b"\n", len(_MAGIC))
        header = json.loads(data[len(_MAGIC) : header_end])
        if header.get("format") != PROGRAM_FORMAT or header.get("key") != key or header.get("in_tree") != str(in_tree):
            return None
        program = data[header_end + 1 :]
        if header.get("sha256") != hashlib.sha256(program).hexdigest():
            return None  # damaged
        exported = jax.export.deserialize(bytearray(program))
        avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in exported.in_avals]
        if avals != [(tuple(x.shape), np.dtype(x.dtype)) for x in leaves]:
            return None
        out_tree = decode_tree(header["out_tree"])
        if out_tree.num_leaves != len(exported.out_avals):
            return None
        return exported, out_tree
    except Exception:  # noqa: BLE001 -- a damaged entry is a miss, never an error
        return None


_source_digest()  # as imported: before the rest of the package is
