"""Shared benchmark plumbing: timing, the device's copy bandwidth, the table and the JSON file,
and the memory benchmarks' shapes."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np


def timed(fn, *args, repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls after one warm-up, each waited for with block_until_ready."""
    jax.block_until_ready(fn(*args))
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        out.append(time.perf_counter() - t)
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def compile_timed(fn, *args):
    """(compiled executable, seconds spent lowering and compiling)."""
    t = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile() if not hasattr(fn, "lower") else fn.lower(*args).compile()
    return compiled, time.perf_counter() - t


def copy_bandwidth(repeats: int, log_elems: int) -> float:
    """Bytes/s of an element-wise uint64 read + write through jnp (the practical ceiling)."""
    x = jnp.arange(1 << log_elems, dtype=jnp.uint64)
    f = jax.jit(lambda a: a ^ np.uint64(1))
    return 2 * x.size * 8 / median(timed(f, x, repeats=repeats))


def report(title: str, columns: list[tuple[str, str, str]], rows: list[dict], path: Path, extra_meta: dict) -> None:
    """Print ``rows`` as a table (``columns``: key, header, format) and write them as JSON."""
    dev = jax.devices()[0]
    print(f"{title} -- device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}")
    cells = [[format(r[key], fmt) for key, _, fmt in columns] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h, _) in enumerate(columns)]
    widths = [max(widths[0], 24)] + [max(w, 10) for w in widths[1:]]

    def line(cells: list[str]) -> str:
        padded = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded)

    print(line([h for _, h, _ in columns]))
    for c in cells:
        print(line(c))
    meta = dict(
        device=dev.device_kind,
        platform=dev.platform,
        jax=jax.__version__,
        python=platform.python_version(),
        date=time.strftime("%Y-%m-%d"),
        **extra_meta,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(meta=meta, results=rows), indent=2))


def memory_shape(spec: str):
    """``(air, numpy trace, public inputs, config)`` of a memory benchmark's shape
    ``example:log_rows:blowup[:width]`` (the width for ``wide``): the trace built on the CPU and
    kept in host memory, 40 queries, 16 grinding bits, final degree 64."""
    import jaxstark as js
    from jaxstark.examples import EXAMPLES, wide_example

    name, log_n, blowup, *width = spec.split(":")
    with jax.default_device(jax.devices("cpu")[0]):
        air, trace, public = wide_example(int(log_n), width=int(width[0])) if width else EXAMPLES[name](int(log_n))
    config = js.StarkConfig(blowup=int(blowup), num_queries=40, grinding_bits=16, fri_final_degree=64)
    return air, np.asarray(trace), public, config


def no_allocator_stats(device) -> str | None:
    """Why ``device`` cannot be measured by the memory benchmarks (its allocator reports no
    statistics: a CPU), or None."""
    if "bytes_in_use" not in (device.memory_stats() or {}):
        return f"{device.platform} reports no allocator statistics: run this on a GPU"
    return None
