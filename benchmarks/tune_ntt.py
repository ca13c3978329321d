"""Sweep the NTT kernel's launch shape (jaxstark.kernels.ntt.Tiling) on the current device.

    python benchmarks/tune_ntt.py                       # 2^22 x 64 DIF and 2^21 x 632 DIT
    python benchmarks/tune_ntt.py --cases dif:22:64 --radix 3,4,5 --lanes 128,256,512

Each tiling is checked against the default tiling's output (bit for bit) and timed (median of
``--repeats`` after a warm-up). Prints one line per tiling, fastest first per case, and the
one-pass floor (read + write once at the measured copy bandwidth) for scale.
"""

from __future__ import annotations

import argparse
import functools
import itertools

import jax
import numpy as np
from common import copy_bandwidth, median, timed

from jaxstark import gl, ntt
from jaxstark.kernels import ntt as kn


def _reference(kind: str, log_n: int, x, roots):
    """The plain-jnp transform: DIF's levels, or (DIT) the same between two bit reversals."""
    if kind == "dif":
        return ntt._dif_levels(x, roots, log_n)
    return ntt._bit_reverse_rows(ntt._dif_levels(ntt._bit_reverse_rows(x, log_n), roots, log_n), log_n)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="dif:22:64,dit:21:632")
    ap.add_argument("--radix", default="3,4,5")
    ap.add_argument("--lanes", default="128,256,512")
    ap.add_argument("--block-cols", default="16,32,64")
    ap.add_argument("--warps", default="4")
    ap.add_argument("--ptx", default="1,0", help="inline-PTX field arithmetic (1) or the jnp formulas (0)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    bw = copy_bandwidth(args.repeats, 28)
    print(f"device {jax.devices()[0].device_kind}, copy bandwidth {bw / 1e9:.0f} GB/s")
    for case in args.cases.split(","):
        kind, log_n, cols = case.split(":")
        log_n, cols = int(log_n), int(cols)
        x = gl.random(jax.random.PRNGKey(log_n), (1 << log_n, cols))
        roots = ntt.ntt_tables(log_n).forward
        interp = jax.default_backend() == "cpu"  # a smoke run off the GPU: the interpreter
        fn = functools.partial(kn.dif if kind == "dif" else kn.dit, interpret=interp)
        ref = np.asarray(jax.jit(functools.partial(_reference, kind, log_n))(x, roots))
        floor_ms = 2 * x.size * 8 / bw * 1e3
        rows = []
        for r, lanes, bc, warps, ptx in itertools.product(
            ints(args.radix), ints(args.lanes), ints(args.block_cols), ints(args.warps), ints(args.ptx)
        ):
            tiling = kn.Tiling(r, lanes, bc, warps, bool(ptx))
            f = jax.jit(functools.partial(fn, tiling=tiling))
            try:
                ok = np.array_equal(np.asarray(f(x, roots)), ref)
                ms = median(timed(f, x, roots, repeats=args.repeats)) * 1e3
            except Exception as e:  # a launch shape the backend rejects is reported, not fatal
                rows.append((float("inf"), tiling, f"failed: {str(e).splitlines()[0][:80]}"))
                continue
            rows.append((ms, tiling, "exact" if ok else "MISMATCH"))
            print(f"  ... {ms:8.2f} ms  {tiling}", flush=True)  # as it goes: a sweep can be cut short
        print(
            f"\n{kind} 2^{log_n} x {cols}: one-pass floor {floor_ms:.2f} ms, passes at radix 4: "
            f"{len(kn.pass_plan(log_n, 4))}"
        )
        for ms, t, note in sorted(rows, key=lambda z: z[0]):
            print(
                f"  {ms:8.2f} ms  radix 2^{t.max_radix_log2} lanes {t.lanes:4d} cols {t.block_cols:3d} "
                f"warps {t.num_warps} {'ptx' if t.ptx else 'jnp'}  {note}"
            )


if __name__ == "__main__":
    main()
