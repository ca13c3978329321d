"""Compile time of each round, from one ``jaxstark.plan`` of an example (fresh process).

python benchmarks/bench_compile.py --example alu --log-rows 12 --blowup 2
python benchmarks/bench_compile.py --fri-final-degree 4 --fri-scan-below 0   # every FRI layer unrolled
"""

from __future__ import annotations

import argparse
import sys
import time

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.rounds import r4_deep_fri


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--example", choices=sorted(EXAMPLES), default="alu")
    ap.add_argument("--log-rows", type=int, default=12)
    ap.add_argument("--blowup", type=int, default=2)
    ap.add_argument("--fri-final-degree", type=int, default=64, help="fewer FRI layers as it grows")
    ap.add_argument("--hash", default="blake3")
    ap.add_argument(
        "--fri-scan-below",
        type=int,
        default=None,
        help="FRI layers of at most this many evaluations share one scanned step (0: every layer unrolled)",
    )
    args = ap.parse_args(argv)
    if args.fri_scan_below is not None:
        r4_deep_fri.SCAN_LAYERS_BELOW = args.fri_scan_below
    seconds: dict[str, float] = {}

    def compiled(event):  # the planner reports every round it compiles (jaxstark.progress, phase "plan")
        seconds[event.round] = seconds.get(event.round, 0.0) + event.seconds

    air, trace, _ = EXAMPLES[args.example](args.log_rows)
    config = js.StarkConfig(
        blowup=args.blowup, num_queries=40, grinding_bits=16, fri_final_degree=args.fri_final_degree, hash=args.hash
    )
    t = time.perf_counter()
    js.plan(air, trace, config, progress=compiled)
    total = time.perf_counter() - t
    shape = f"{args.example} 2^{args.log_rows} b{args.blowup} f{args.fri_final_degree} {args.hash}"
    print(f"{shape} fri-scan-below {r4_deep_fri.SCAN_LAYERS_BELOW}: plan {total:.1f} s")
    for name, secs in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {name:22} {secs:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
