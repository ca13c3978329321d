"""The DEEP quotient kernel (``jaxstark.kernels.deep``) alone, per tiling, parts and columns.

    python benchmarks/bench_deep_tiling.py [--log-rows 23] [--repeats 10] [--json F] [--interpret]
                                           [--wide 62,150,600] [--only-wide]

On random inputs (``2^log-rows`` rows), each case compiles the kernel alone (``compile
s``) and times it (median of ``--repeats`` after a warm-up); every tiling's outputs are checked
against the default tiling's. The cases: 13 columns and 2 parts under several tilings (rows per
program, columns per chunk, warps; how many threads each row gets is ``32 warps / rows``),
inline PTX off, 0-3 parts, 2 and 62 columns, one aux column; with ``--wide``, tables of those
widths under the tilings :data:`WIDE` names (about 2^27 words of trace each). ``--interpret``
runs the kernels in Pallas' interpreter (a check of the script on a CPU at a small
``--log-rows``; its times mean nothing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np
from common import compile_timed, median, report, timed

TILINGS = [(64, 16, 4), (32, 16, 1), (32, 16, 2), (64, 16, 1), (64, 16, 2), (128, 16, 4), (128, 16, 8),
           (256, 16, 4), (256, 16, 8), (64, 4, 4), (64, 8, 4), (128, 8, 4)]  # fmt: skip
# for the wide tables (--wide): rows, columns per chunk, warps, chunks unrolled before a loop
WIDE = [(128, 8, 4, 8), (128, 8, 4, 1), (128, 8, 4, 64), (128, 4, 4, 8), (128, 16, 8, 8), (256, 8, 8, 8)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log-rows", type=int, default=23)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json", type=Path, default=Path("/tmp/bench_deep_tiling.json"))
    p.add_argument("--interpret", action="store_true")
    p.add_argument(
        "--wide",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[],
        help="column counts to sweep the wide tilings on (e.g. 62,150,600)",
    )
    p.add_argument("--only-wide", action="store_true", help="only the wide sweep (not the 13-column cases)")
    a = p.parse_args(argv)
    import jaxstark  # noqa: F401  (64-bit mode)
    from jaxstark.field import goldilocks as gl
    from jaxstark.kernels import deep as kd

    size = 1 << a.log_rows

    def inputs(c, parts, aux, size=size):
        ks = jax.random.split(jax.random.PRNGKey(c * 100 + parts), 6)
        shapes = [(size, c), (size, parts, 3), (size, aux, 3), (size,), (c + parts + aux, 3), (6, 3)]
        return tuple(gl.random(k, s) for k, s in zip(ks, shapes, strict=True))

    rows = []

    def case(what, c, parts, aux, tiling, log_rows=a.log_rows):
        args = inputs(c, parts, aux, 1 << log_rows)
        exe, compile_s = compile_timed(lambda *x: kd.quotient(*x, tiling=tiling, interpret=a.interpret), *args)
        name = f"{tiling.rows}/{tiling.block_cols}/{tiling.num_warps}{'' if tiling.ptx else ' no PTX'}"
        rows.append(dict(case=what, log_rows=log_rows, columns=c, parts=parts, aux=aux,
                         tiling=f"{name} u{tiling.unrolled}", compile_s=compile_s,
                         ms=median(timed(exe, *args, repeats=a.repeats)) * 1e3))  # fmt: skip
        print(rows[-1], file=sys.stderr, flush=True)
        return exe(*args)

    default = kd.Tiling()
    if not a.only_wide:
        want = case("default", 13, 2, 0, default)
        for r, bc, w in TILINGS:
            got = case("tiling", 13, 2, 0, default._replace(rows=r, block_cols=bc, num_warps=w))
            if not all((np.asarray(x) == np.asarray(y)).all() for x, y in zip(got, want, strict=True)):
                raise SystemExit(f"tiling {r}/{bc}/{w}: outputs differ from the default tiling's")
        case("no PTX", 13, 2, 0, default._replace(ptx=False))
        for parts in (0, 1, 3):
            case("parts", 13, parts, 0, default)
        for c in (2, 62):
            case("columns", c, 2, 0, default)
        case("aux", 13, 2, 1, default)
    for c in a.wide:  # wide tables: the main sums dominate
        base = None
        for r, bc, w, unrolled in WIDE:
            tiling = default._replace(rows=r, block_cols=bc, num_warps=w, unrolled=unrolled)
            # about 2^27 words of trace whatever the width
            got = case("wide", c, 2, 0, tiling, min(a.log_rows, ((1 << 27) // c).bit_length() - 1))
            base = got if base is None else base
            if not all((np.asarray(x) == np.asarray(y)).all() for x, y in zip(got, base, strict=True)):
                raise SystemExit(f"{c} columns, tiling {tiling}: outputs differ")
    columns = [("case", "case", "s"), ("log_rows", "log2 rows", "d"), ("columns", "columns", "d"),
               ("parts", "parts", "d"), ("aux", "aux", "d"),
               ("tiling", "rows/chunk/warps", "s"), ("compile_s", "compile s", ".2f"),
               ("ms", "median ms", ".2f")]  # fmt: skip
    report(f"DEEP quotient kernel, 2^{a.log_rows} rows", columns, rows, a.json, {"log_rows": a.log_rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
