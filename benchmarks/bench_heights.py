"""Plan time of one example at several heights in one process: what a notebook that changes the
height pays for each new shape (programs shared between heights, such as the FRI layers of one
size, are compiled once).

    JAXSTARK_CACHE_DIR=off python benchmarks/bench_heights.py [--example alu] [--log-rows 14,15,16] [--blowup 2]
"""

from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--example", default="alu")
    ap.add_argument("--log-rows", default="14,15,16", help="heights (log2 rows), comma-separated")
    ap.add_argument("--blowup", type=int, default=2)
    args = ap.parse_args(argv)

    import jaxstark as js
    from jaxstark.examples import example_shapes

    config = js.StarkConfig(blowup=args.blowup, num_queries=40, grinding_bits=16)
    for log in (int(x) for x in args.log_rows.split(",")):
        t = time.perf_counter()
        js.plan(example_shapes(args.example, log), config=config)
        print(f"{args.example} 2^{log} @ b{args.blowup}: plan {time.perf_counter() - t:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
