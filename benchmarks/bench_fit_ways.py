"""Row chunks or held buffers: the planner's estimate of each way's extra work against its measured cost.

    python benchmarks/bench_fit_ways.py --example alu --log-rows 16 --fractions 0.8,0.6
    python benchmarks/bench_fit_ways.py --example alu --log-rows 24 --fractions 0.8 --device gpu

For each budget (a fraction of the table's keep-everything device set), the table is planned
with ``max_chunk_rows_log2="auto"``: the planner compares row chunks with the whole table under
the held-buffer strategies (``jaxstark.memory.cost``) and keeps the cheaper by its estimate.
Then each way is proven on its own -- the whole table under the budget (strategies as the
planner applies them), and the chunks the planner planned (their height and group forced) --
and timed warm (the median of ``--repeats`` after one proof), beside keeping everything. Every
proof is verified. Prints a table last: per way, the estimate, the measured extra time over
keeping everything, the peak and which way the planner chose. Config: 40 queries, 16 grinding
bits, FRI final degree 64, BLAKE3; a device trace.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

from cli_args import add_proof_args


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_proof_args(ap)
    ap.add_argument("--fractions", default="0.8,0.6", help="budgets, as fractions of the keep-everything set")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    import jax

    import jaxstark as js
    from jaxstark.examples import EXAMPLES

    device = jax.devices(args.device)[0]
    air, trace, public = EXAMPLES[args.example](args.log_rows)
    trace = jax.device_put(trace, device)
    base = dict(blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash)

    def timed(config) -> tuple[float, object]:
        plan = js.plan(air, trace, config, device=device)
        proof = js.prove(air, trace, public, config, device=device)
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            proof = js.prove(air, trace, public, config, device=device)
            times.append(time.perf_counter() - t)
        if not js.verify(air, proof, public, js.StarkConfig(**base)):
            raise SystemExit(f"a proof under {config} did not verify")
        return statistics.median(times), plan

    keep_s, keep = timed(js.StarkConfig(**base))
    rows = []
    for frac in (float(x) for x in args.fractions.split(",")):
        mb = keep.peak * frac / 2**20
        auto = js.plan(air, trace, js.StarkConfig(**base, vram_budget_mb=mb, max_chunk_rows_log2="auto"), device=device)
        for k, (way, fits, peak, estimate, note) in enumerate(auto.compared or ()):
            if estimate is None or not fits:
                rows.append((frac, way, None, None, peak, note or "does not fit", ""))
                continue
            if way.startswith("row chunks"):
                chunks, group = (int(x) for x in re.search(r"table 0: (\d+) chunks in groups of (\d+)", way).groups())
                height = args.log_rows - (chunks.bit_length() - 1)
                config = js.StarkConfig(**base, vram_budget_mb=mb, max_chunk_rows_log2=height, chunk_group=group)
            else:
                config = js.StarkConfig(**base, vram_budget_mb=mb)
            s, p = timed(config)
            rows.append((frac, way, estimate, s - keep_s, p.peak, "", "chosen" if k == 0 else ""))
    print(f"{args.example} 2^{args.log_rows} @ b{args.blowup} on {device.device_kind}; keep everything: "
          f"peak {keep.peak / 2**20:.1f} MiB, warm {keep_s * 1e3:.1f} ms (median of {args.repeats})")  # fmt: skip
    print(f"{'budget':>6}  {'way':58} {'estimate ms':>11} {'measured ms':>11} {'peak MiB':>9}")
    for frac, way, est, extra, peak, note, chosen in rows:
        e = "-" if est is None else f"+{est * 1e3:.1f}"
        m = "-" if extra is None else f"+{extra * 1e3:.1f}"
        size = "-" if peak is None else f"{peak / 2**20:.1f}"
        print(f"{frac:>6.2f}  {way[:58]:58} {e:>11} {m:>11} {size:>9}  {chosen}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
