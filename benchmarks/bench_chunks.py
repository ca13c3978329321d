"""A tall table proven through row chunks: the planner's chunk groups on one or more devices.

    python benchmarks/bench_chunks.py --log-rows 26 --chunk 22 --devices 1,2   # ALU at 2^26 rows, two H200s
    python benchmarks/bench_chunks.py --log-rows 12 --chunk 8 --devices 1,2    # quick (CPU: 2 host devices)

For each device count, a fresh process builds the ALU trace on the host, plans the proof with
the chunk height capped at ``2^chunk`` rows (``jaxstark.plan``: the planner chooses how many
chunks go at once under ``vmap``, each group split over the devices), proves it twice (the
second proof is timed: "warm"), verifies it, and reads every device's allocator peak. Prints a
table and writes JSON. Config: blowup ``--blowup`` (2), 40 queries, 16 grinding bits, FRI final
degree 64, BLAKE3; JAX's default allocator posture.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(log_rows: int, chunk: int, blowup: int, ndev: int) -> dict:
    import dataclasses

    import jax
    import numpy as np

    import jaxstark as js
    from jaxstark.examples import EXAMPLES
    from jaxstark.examples.shape import shape_config

    devices = jax.devices()[:ndev]
    out = dict(log_rows=log_rows, chunk=chunk, blowup=blowup, devices=ndev, device=devices[0].device_kind)
    t = time.perf_counter()
    cache = Path(tempfile.gettempdir()) / f"jaxstark-alu-{log_rows}.npy"  # the next child loads it
    with jax.default_device(jax.local_devices(backend="cpu")[0]):  # the caller's trace, on the host
        air, trace, public = EXAMPLES["alu"](log_rows if not cache.exists() else 1)
        trace = np.load(cache) if cache.exists() else np.asarray(trace)
        if not cache.exists():
            np.save(cache, trace)
    out["trace_s"] = time.perf_counter() - t
    config = dataclasses.replace(shape_config(blowup), max_chunk_rows_log2=chunk)
    t = time.perf_counter()
    plan = js.plan(air, log_rows, config, devices=devices)
    out.update(plan_s=time.perf_counter() - t, chunking=plan.chunking(0), group=1 << plan.groups[0],
               chunks=1 << plan.chunks[0], predicted=plan.peak, budget=plan.budgets[plan.binding.device].bytes,
               fits=plan.fits)  # fmt: skip
    print(json.dumps(out), flush=True)
    t = time.perf_counter()
    proof = js.prove(air, trace, public, config, devices=devices)
    out["cold_s"] = time.perf_counter() - t
    t = time.perf_counter()
    proof = js.prove(air, trace, public, config, devices=devices)
    out["warm_s"] = time.perf_counter() - t
    out["rows_per_s"] = (1 << log_rows) / out["warm_s"]
    out["measured"] = [(d.memory_stats() or {}).get("peak_bytes_in_use", 0) for d in devices]
    t = time.perf_counter()
    out["verified"] = bool(js.verify(air, proof.to_bytes(), public, config))
    out["verify_s"] = time.perf_counter() - t
    out["proof_bytes"] = len(proof.to_bytes())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-rows", type=int, default=26)
    ap.add_argument("--chunk", type=int, default=22, help="log2 of the chunk height cap")
    ap.add_argument("--blowup", type=int, default=2)
    ap.add_argument("--devices", default="1,2", help="device counts to run, each in a fresh process")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "chunks.json")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.log_rows, args.chunk, args.blowup, args.child)), flush=True)
        return 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    counts = [int(x) for x in args.devices.split(",")]
    if "XLA_FLAGS" not in env:  # on a CPU-only machine, as many host devices as asked for
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={max(counts)}"
    rows = []
    for n in counts:
        cmd = [sys.executable, __file__, "--child", str(n), "--log-rows", str(args.log_rows),
               "--chunk", str(args.chunk), "--blowup", str(args.blowup)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        row = json.loads(lines[-1]) if lines else dict(devices=n)
        if proc.returncode:
            row["error"] = proc.stderr[-2000:]
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1))
    gib = 2**30
    print(f"\n{'devices':>7} {'chunks':>7} {'group':>6} {'plan s':>7} {'warm s':>7} {'Mrows/s':>8} "
          f"{'predicted GiB':>14} {'measured GiB (per device)':>26} {'budget GiB':>11}  verified")  # fmt: skip
    for r in rows:
        if "warm_s" not in r:
            print(f"{r['devices']:>7}  failed: {r.get('error', '')[-600:]}")
            continue
        measured = "/".join(f"{m / gib:.2f}" for m in r["measured"])
        print(f"{r['devices']:>7} {r['chunks']:>7} {r['group']:>6} {r['plan_s']:7.1f} {r['warm_s']:7.2f} "
              f"{r['rows_per_s'] / 1e6:8.2f} {r['predicted'] / gib:14.2f} {measured:>26} {r['budget'] / gib:11.2f}  "
              f"{r['verified']}")  # fmt: skip
    if len(rows) > 1 and all("warm_s" in r for r in rows):
        print(f"speed-up of {rows[-1]['devices']} devices over {rows[0]['devices']}: "
              f"{rows[0]['warm_s'] / rows[-1]['warm_s']:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
