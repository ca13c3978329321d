"""Prove and verify the example AIRs end to end.

    python benchmarks/bench_stark.py                       # 2^16 and 2^20 rows (ALU also 2^22), b2 and b4
    python benchmarks/bench_stark.py --sizes 3 --alu-sizes '' --blowups 2 --examples fibonacci --quick  # smoke

For each case: the first prove (compile + run), then the median of ``--repeats`` further proves
(run only); "compile" is their difference. The same for verify (host CPU). Every proof is
checked to verify. Results are printed as they come and written to JSON after each case.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
from common import median, report

import jaxstark as js
from jaxstark.examples import EXAMPLES

CONFIG = dict(num_queries=40, grinding_bits=16, fri_final_degree=64, hash="blake3")


def cases(
    sizes: list[int], alu_sizes: list[int], blowups: list[int], examples: list[str]
) -> list[tuple[str, int, int]]:
    out = []
    for blowup in blowups:
        for name in examples:
            out += [(name, log_n, blowup) for log_n in sizes + (alu_sizes if name == "alu" else [])]
    return out


def timed_call(fn):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,20", help="comma-separated log2 row counts")
    ap.add_argument("--alu-sizes", default="22", help="extra sizes for the ALU example ('' for none)")
    ap.add_argument("--blowups", default="2,4")
    ap.add_argument("--examples", default="fibonacci,alu,wide")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="4 queries, no grinding (smoke test)")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "stark.json")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    alu_sizes = [int(s) for s in args.alu_sizes.split(",") if s]
    unknown = sorted(set(args.examples.split(",")) - set(EXAMPLES))
    if unknown:
        ap.error(f"unknown example(s) {unknown}; choose from {sorted(EXAMPLES)}")
    blowups = [int(b) for b in args.blowups.split(",")]
    cfg_kw = dict(CONFIG, num_queries=4, grinding_bits=0) if args.quick else CONFIG
    rows = []
    columns = [
        ("case", "example / rows / blowup", "s"),
        ("prove_compile_s", "prove compile s", ".2f"),
        ("prove_ms", "prove ms", ".1f"),
        ("verify_compile_s", "verify compile s", ".2f"),
        ("verify_ms", "verify ms", ".1f"),
        ("proof_kib", "proof KiB", ".1f"),
    ]
    for name, log_n, blowup in cases(sizes, alu_sizes, blowups, [e for e in args.examples.split(",") if e]):
        cfg = js.StarkConfig(blowup=blowup, **cfg_kw)
        air, trace, public = EXAMPLES[name](log_n)
        trace = jax.block_until_ready(trace)
        proof, first = timed_call(lambda: js.prove(air, trace, public, cfg))  # noqa: B023
        runs = [timed_call(lambda: js.prove(air, trace, public, cfg))[1] for _ in range(args.repeats)]  # noqa: B023
        ok, vfirst = timed_call(lambda: js.verify(air, proof, public, cfg))  # noqa: B023
        vruns = [timed_call(lambda: js.verify(air, proof, public, cfg))[1] for _ in range(args.repeats)]  # noqa: B023
        assert ok
        row = dict(
            case=f"{name} 2^{log_n} x {air.width} b{blowup}",
            example=name,
            log_n=log_n,
            width=air.width,
            blowup=blowup,
            prove_compile_s=first - median(runs),
            prove_ms=median(runs) * 1e3,
            verify_compile_s=vfirst - median(vruns),
            verify_ms=median(vruns) * 1e3,
            proof_kib=len(proof.to_bytes()) / 1024,
            security_bits=cfg.security_bits(),
        )
        rows.append(row)
        print(row, flush=True)
        report("STARK benchmark (partial)", columns, rows, args.json, dict(config=cfg_kw, repeats=args.repeats))
    report("STARK benchmark", columns, rows, args.json, dict(config=cfg_kw, repeats=args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
