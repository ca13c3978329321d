"""XLA's temporaries of the trace commit's parts, each compiled alone, in bytes per trace value.

    python benchmarks/trace_commit_memory.py [--log-n 16] [--columns 8,13,24,32,64] [--blowup 2]

For each width: the interpolation and extension (``lde._interpolate_extend``), the extension
alone from bit-reversed coefficients (``lde._extend_bitrev``: the kernels' path, so CUDA only),
both with the Merkle tree over the LDE (the round's work without its transcript and field check),
and the tree alone (``merkle._build``). Compiles only (``memory_analysis()``); runs nothing.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp


def temporaries(f, *shapes) -> float:
    """XLA's temporaries for ``f`` at uint64 arguments of ``shapes``; NaN where it does not lower."""
    try:
        args = [jax.ShapeDtypeStruct(s, jnp.uint64) for s in shapes]
        return jax.jit(f).lower(*args).compile().memory_analysis().temp_size_in_bytes
    except Exception:  # noqa: BLE001  (the extension alone has no path off CUDA)
        return float("nan")


def main(argv=None) -> int:
    from jaxstark.lde import _extend_bitrev, _interpolate_extend, lde_tables
    from jaxstark.merkle import _build

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--columns", default="8,13,24,32,64")
    ap.add_argument("--blowup", type=int, default=2)
    args = ap.parse_args(argv)
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
