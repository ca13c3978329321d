"""NTT / coset-LDE benchmark.

    python benchmarks/bench_ntt.py                 # the standard cases on the default device
    python benchmarks/bench_ntt.py --quick         # tiny cases (a smoke test; runs in CI)

For each case: compile time (reported separately), then the median of ``--repeats`` timed runs
after one warm-up. "Bytes" is the one-pass floor of the operation (read the input once, write
the output once); "of copy" compares the achieved rate with the device's measured copy
bandwidth (an element-wise uint64 read+write of 2 GiB, same timing method). Before timing, each
case is checked for correctness: small instances against the CPU backend bit for bit, large ones
by evaluating sampled output rows directly from the interpolant's coefficients.

Prints a table and writes JSON (``--json``, default benchmarks/out/ntt.json).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np
from common import compile_timed, copy_bandwidth, median, report, timed

from jaxstark import gl, lde, ntt, poly

STANDARD = [("ntt", 20, 64, 1), ("ntt", 22, 64, 1), ("lde", 21, 316, 2)]
QUICK = [("ntt", 10, 8, 1), ("lde", 10, 8, 2)]


def build(kind: str, log_n: int, cols: int, blowup: int):
    """(compiled function, its arguments, reference check) for one case."""
    x = gl.random(jax.random.PRNGKey(log_n * 1000 + cols), (1 << log_n, cols))
    if kind == "ntt":
        tables = ntt.ntt_tables(log_n)
        fn, args = ntt._ntt_jit, (x, tables)
    else:
        tables = lde.lde_tables(log_n, blowup)
        fn, args = lde._lde_jit, (x, tables)
    compiled, compile_s = compile_timed(fn, *args)
    return compiled, args, compile_s


def check(kind: str, log_n: int, cols: int, blowup: int, compiled, args) -> str:
    x = args[0]
    out = compiled(*args)
    if log_n <= 12:  # bit-exact against the CPU backend
        cpu = jax.devices("cpu")[0]
        with jax.default_device(cpu):
            xc = jax.device_put(x, cpu)
            want = ntt.ntt(xc) if kind == "ntt" else lde.coset_lde(xc, blowup)
        ok = np.array_equal(np.asarray(out), np.asarray(want))
        return "cpu-exact" if ok else "MISMATCH"
    # sampled rows against direct evaluation of the interpolant (a few columns)
    rng = np.random.default_rng(log_n)
    size = (1 << log_n) * blowup
    rows = rng.integers(0, size, size=4)
    cols_ = rng.choice(cols, size=min(cols, 4), replace=False)
    coeffs = x[:, cols_] if kind == "ntt" else ntt.intt(x[:, cols_])
    log_size = log_n + blowup.bit_length() - 1
    w = gl.root_of_unity(log_size)
    offset = 1 if kind == "ntt" else lde.DEFAULT_OFFSET
    for r in rows:
        pt = np.uint64(offset * pow(w, int(r), gl.P) % gl.P)
        if not np.array_equal(np.asarray(poly.evaluate(coeffs, pt)), np.asarray(out[int(r)][cols_])):
            return "MISMATCH"
    return "sampled-exact"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny cases, for a smoke test")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "ntt.json")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")

    cases = QUICK if args.quick else STANDARD
    bw = copy_bandwidth(args.repeats, 16 if args.quick else 28)
    rows = []
    for kind, log_n, cols, blowup in cases:
        compiled, fargs, compile_s = build(kind, log_n, cols, blowup)
        status = check(kind, log_n, cols, blowup, compiled, fargs)
        times = timed(compiled, *fargs, repeats=args.repeats)
        med = median(times)
        nbytes = (1 << log_n) * cols * 8 * (1 + blowup)
        rows.append(
            dict(
                op=kind,
                shape=f"{kind} 2^{log_n} x {cols}" + (f" @ b{blowup}" if kind == "lde" else ""),
                log_n=log_n,
                cols=cols,
                blowup=blowup,
                compile_s=compile_s,
                median_ms=med * 1e3,
                min_ms=min(times) * 1e3,
                bytes=nbytes,
                gbps=nbytes / med / 1e9,
                frac_of_copy=nbytes / med / bw,
                check=status,
            )
        )
    columns = [
        ("shape", "op / shape", "s"),
        ("compile_s", "compile s", ".2f"),
        ("median_ms", "median ms", ".2f"),
        ("mbytes", "MB moved", ".1f"),
        ("gbps", "GB/s", ".1f"),
        ("pct_of_copy", "% of copy", ".1f"),
        ("check", "check", "s"),
    ]
    for r in rows:
        r["mbytes"], r["pct_of_copy"] = r["bytes"] / 1e6, 100 * r["frac_of_copy"]
    report(
        f"NTT/LDE benchmark (copy bandwidth {bw / 1e9:.0f} GB/s)",
        columns,
        rows,
        args.json,
        dict(copy_gbps=bw / 1e9, repeats=args.repeats),
    )
    return 0 if all(r["check"] != "MISMATCH" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
