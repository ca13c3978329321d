"""XLA's temporaries of the trace commit's parts, each compiled alone, in bytes per trace value.

    python benchmarks/trace_commit_memory.py [--log-n 16] [--columns 8,13,24,32,64] [--blowup 2]
    python benchmarks/trace_commit_memory.py --time 22x62,20x600,22x8 [--blowup 2]

For each width: the interpolation and extension (``lde._interpolate_extend``), the extension
alone from bit-reversed coefficients (``lde._extend_bitrev``: the kernels' path, so CUDA only),
both with the Merkle tree over the LDE (the round's work without its transcript and field check),
and the tree alone (``merkle._build``). Compiles only (``memory_analysis()``); runs nothing.

``--time`` instead runs the interpolation and extension at each ``<log2 rows>x<columns>`` on an
iota trace: compile seconds, the median of 5 runs after a warm-up, XLA's temporaries, and a
digest of the first 4096 coefficients and the last 4096 LDE rows (to compare two trees' runs).
"""

from __future__ import annotations

import argparse
import hashlib

import jax
import jax.numpy as jnp
import numpy as np
from common import compile_timed, median, timed


def temporaries(f, *shapes) -> float:
    """XLA's temporaries for ``f`` at uint64 arguments of ``shapes``; NaN where it does not lower."""
    try:
        args = [jax.ShapeDtypeStruct(s, jnp.uint64) for s in shapes]
        return jax.jit(f).lower(*args).compile().memory_analysis().temp_size_in_bytes
    except Exception:  # noqa: BLE001  (the extension alone has no path off CUDA)
        return float("nan")


def run_times(shapes: str, blowup: int) -> None:
    from jaxstark.lde import _interpolate_extend, lde_tables

    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}: interpolate + extend @ b{blowup}")
    for spec in shapes.split(","):
        log_n, c = (int(x) for x in spec.split("x"))
        t = lde_tables(log_n, blowup)
        x = jax.lax.iota(jnp.uint64, (1 << log_n) * c).reshape(1 << log_n, c)
        exe, compile_s = compile_timed(lambda a, t=t: _interpolate_extend(a, t), x)
        runs = timed(exe, x, repeats=5)
        coeffs, lde = exe(x)
        digest = hashlib.sha256(np.asarray(coeffs[:4096]).tobytes() + np.asarray(lde[-4096:]).tobytes()).hexdigest()
        temps = exe.memory_analysis().temp_size_in_bytes / 2**20
        print(f"2^{log_n} x {c}: compile {compile_s:.2f} s, median {1e3 * median(runs):.2f} ms, "
              f"temporaries {temps:.0f} MiB, sha {digest[:12]}")  # fmt: skip
        del x, coeffs, lde, exe


def main(argv=None) -> int:
    from jaxstark.lde import _extend_bitrev, _interpolate_extend, lde_tables
    from jaxstark.merkle import _build

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--columns", default="8,13,24,32,64")
    ap.add_argument("--blowup", type=int, default=2)
    ap.add_argument("--time", default=None, help="run the interpolation at these <log2 rows>x<columns> shapes instead")
    args = ap.parse_args(argv)
    if args.time:
        run_times(args.time, args.blowup)
        return 0
    n, b = 1 << args.log_n, args.blowup
    t = lde_tables(args.log_n, b)

    def commit(x):
        coeffs, lde = _interpolate_extend(x, t)
        return coeffs, lde, _build(lde, "blake3")

    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}: 2^{args.log_n} rows @ b{b}, bytes per trace value")
    print(f"{'columns':>8} {'interpolate+extend':>19} {'extend alone':>13} {'commit':>8} {'tree alone':>11}")
    for c in (int(x) for x in args.columns.split(",")):
        parts = [
            temporaries(lambda x: _interpolate_extend(x, t), (n, c)),
            temporaries(lambda x: _extend_bitrev(x, t, t.ntt.n_inv), (n, c)),
            temporaries(commit, (n, c)),
            temporaries(lambda lde: _build(lde, "blake3"), (n * b, c)),
        ]
        print(f"{c:>8} " + " ".join(f"{v / (n * c):>{w}.2f}" for v, w in zip(parts, (19, 13, 8, 11), strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
