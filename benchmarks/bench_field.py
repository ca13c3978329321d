"""Goldilocks arithmetic inside a Pallas kernel: the ``jnp`` formulas against inline PTX.

    python benchmarks/bench_field.py                 # on a CUDA device
    python benchmarks/bench_field.py --log-elems 24 --chain 64

One kernel per (operation, arithmetic): each lane loads ``x`` and ``y``, applies the operation
``--chain`` times (``x <- op(x, y)``, a dependent chain, so the compiler cannot drop work) and
stores ``x``. Both arithmetics' outputs are compared bit for bit, and a sample against Python
integers. Reports G operations/s (elements x chain / time): the arithmetic rate a butterfly or
hash kernel can reach, apart from memory traffic.
"""

from __future__ import annotations

import argparse
import functools
import sys

import jax
import numpy as np
from common import median, timed
from jax.experimental import pallas as pl

from jaxstark import gl
from jaxstark.kernels import field_ptx, launch

BLOCK = 1024


def _chain_kernel(x_ref, y_ref, o_ref, *, op, chain: int):
    x, y = x_ref[...], y_ref[...]
    x = jax.lax.fori_loop(0, chain, lambda _, v: op(v, y), x)  # Triton lowers unroll=1 only
    o_ref[...] = x


def chained(name: str, use_ptx: bool, chain: int, interpret: bool):
    op = getattr(field_ptx.ops(interpret, use_ptx), name)
    spec = pl.BlockSpec((BLOCK,), lambda i: (i,))

    @jax.jit
    def run(x, y):
        return pl.pallas_call(
            functools.partial(_chain_kernel, op=op, chain=chain),
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // BLOCK,),
            in_specs=[spec, spec],
            out_specs=spec,
            **launch(interpret),
        )(x, y)

    return run


def python_chain(name: str, x: int, y: int, chain: int) -> int:
    p = gl.P
    for _ in range(chain):
        x = {"add": (x + y) % p, "sub": (x - y) % p, "mul": x * y % p}[name]
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-elems", type=int, default=24)
    ap.add_argument("--chain", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    interpret = jax.default_backend() != "gpu"
    if interpret:  # a smoke run off the GPU: the interpreter, where both forms are the jnp one
        args.log_elems, args.chain = min(args.log_elems, 12), min(args.chain, 4)
    n = 1 << args.log_elems
    x = gl.random(jax.random.PRNGKey(1), (n,))
    y = gl.random(jax.random.PRNGKey(2), (n,))
    # edge values in the first lanes: 0, 1, p-1, 2^32-1, 2^32, p-2^32
    edges = np.array([0, 1, gl.P - 1, 2**32 - 1, 2**32, gl.P - 2**32, gl.P - 2, 2**63], dtype=np.uint64)
    x = x.at[: len(edges)].set(edges)
    y = y.at[: len(edges)].set(edges[::-1].copy())
    rng = np.random.default_rng(0)
    sample = np.concatenate([np.arange(len(edges)), rng.integers(0, n, 24)])
    print(f"device {jax.devices()[0].device_kind}; 2^{args.log_elems} lanes x chain {args.chain}")
    print(f"{'op':4} {'jnp G/s':>9} {'ptx G/s':>9} {'speedup':>8}  check")
    bad = False
    for name in ("mul", "add", "sub"):
        out, rate = {}, {}
        for label, use_ptx in (("jnp", False), ("ptx", True)):
            fn = chained(name, use_ptx, args.chain, interpret)
            out[label] = np.asarray(fn(x, y))
            rate[label] = n * args.chain / median(timed(fn, x, y, repeats=args.repeats)) / 1e9
        xs, ys = np.asarray(x), np.asarray(y)
        want = [python_chain(name, int(xs[i]), int(ys[i]), args.chain) for i in sample]
        ok = np.array_equal(out["jnp"], out["ptx"]) and out["ptx"][sample].tolist() == want
        bad |= not ok
        print(
            f"{name:4} {rate['jnp']:9.1f} {rate['ptx']:9.1f} {rate['ptx'] / rate['jnp']:7.2f}x  "
            f"{'exact' if ok else 'MISMATCH'}",
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
