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

import os
import warnings
from pathlib import Path

import jax

__all__ = ["ENV", "MIN_COMPILE_SECS", "configure", "cache_dir", "default_dir"]

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
