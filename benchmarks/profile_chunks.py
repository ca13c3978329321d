"""Where a chunked proof spends its time: the same ALU table proven whole and through row chunks.

    python benchmarks/profile_chunks.py --log-rows 22 --chunk 20     # on the accelerator

Proves the ALU table (blowup 2, 40 queries, 16 grinding bits, FRI final 64, BLAKE3) three ways
in one process -- whole; 4 chunks in one group under ``vmap``; 4 groups of one chunk (each
committed twice, its trace copied to the device twice) -- and prints, for a warm proof of each,
the wall time of every round (each round is waited for; the host copies of its arguments
included) summed by round name.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections import defaultdict


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-rows", type=int, default=22)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--ways", default="0,1,2", help="which of: 0 whole, 1 one group, 2 groups of one")
    args = ap.parse_args(argv)
    import jax
    import numpy as np

    import jaxstark as js
    from jaxstark.examples import EXAMPLES
    from jaxstark.examples.shape import shape_config
    from jaxstark.memory import executor

    with jax.default_device(jax.local_devices(backend="cpu")[0]):
        air, trace, public = EXAMPLES["alu"](args.log_rows)
        trace = np.asarray(trace)
    base = shape_config(2)
    k = args.log_rows - args.chunk
    ways = {
        "whole": base,
        f"{1 << k} chunks, 1 group": dataclasses.replace(base, max_chunk_rows_log2=args.chunk, chunk_group=1 << k),
        f"{1 << k} groups of 1": dataclasses.replace(base, max_chunk_rows_log2=args.chunk, chunk_group=1),
    }
    ways = {label: c for i, (label, c) in enumerate(ways.items()) if str(i) in args.ways.split(",")}
    times: dict[str, float] = defaultdict(float)
    run = executor.Runner.run

    def timed(self, table, name, *rest, **kw):
        t = time.perf_counter()
        out = run(self, table, name, *rest, **kw)
        times[name] += time.perf_counter() - t
        return out

    results = {}
    for label, config in ways.items():
        t = time.perf_counter()
        js.plan(air, args.log_rows, config)
        plan_s = time.perf_counter() - t
        js.prove(air, trace, public, config)  # cold
        executor.Runner.run = timed
        times.clear()
        t = time.perf_counter()
        js.prove(air, trace, public, config)
        total = time.perf_counter() - t
        executor.Runner.run = run
        results[label] = dict(plan_s=plan_s, warm_s=total, rounds=dict(times))
        print(json.dumps({label: results[label]}), flush=True)
    names = sorted({n for r in results.values() for n in r["rounds"]})
    print(f"\n{'round':22}" + "".join(f" {label:>20}" for label in results))
    for n in names:
        print(f"{n:22}" + "".join(f" {r['rounds'].get(n, 0.0):20.3f}" for r in results.values()))
    print(f"{'warm proof':22}" + "".join(f" {r['warm_s']:20.3f}" for r in results.values()))
    print(f"{'plan (compile)':22}" + "".join(f" {r['plan_s']:20.1f}" for r in results.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
