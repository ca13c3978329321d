"""Whole tables on several devices at once: a statement's warm proof on 1, 2, ... devices.

    python benchmarks/bench_devices.py --tables machine:16 --devices 1,3            # the three-table machine
    python benchmarks/bench_devices.py --tables alu:14:4 --devices 1,2,4            # four ALU tables of 2^14 rows
    python benchmarks/bench_devices.py --tables machine:22 --devices 1,3 --device gpu

For each device count, a fresh process (on the CPU: that many host devices,
``--xla_force_host_platform_device_count``) builds the statement's traces, plans it on the first
N devices (whole tables: one per device while there are enough, else balanced by estimated work;
rounds 2-5 of units on distinct devices dispatched together, ``jaxstark.schedule.waves``),
proves it once after planning, then ``--repeats`` times (the median is "warm"), checks that the
proof is the same bytes for every device count, and verifies it. Prints a table last: plan
(compile, cold in that process), warm proof, speed-up over one device, where each table ran.
Config: blowup 2, 40 queries, 16 grinding bits, FRI final degree 64, BLAKE3.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time


def tables_of(spec: str):
    from jaxstark.examples import EXAMPLES
    from jaxstark.examples.machine import machine_example

    kind, *rest = spec.split(":")
    if kind == "machine":
        return machine_example(int(rest[0]), bits=8)
    air, trace, public = EXAMPLES[kind](int(rest[0]))
    return [(air, trace, public)] * int(rest[1] if len(rest) > 1 else 1)


def child(spec: str, ndev: int, platform: str, repeats: int) -> dict:
    import jax
    import numpy as np

    import jaxstark as js

    devices = jax.devices(platform)[:ndev]
    if len(devices) < ndev:
        raise SystemExit(f"{ndev} devices asked for, {len(devices)} {platform} device(s) here")
    tables = [(air, np.asarray(trace), public) for air, trace, public in tables_of(spec)]
    config = js.StarkConfig(blowup=2, num_queries=40, grinding_bits=16, fri_final_degree=64)
    t = time.perf_counter()
    plan = js.plan([(air, trace) for air, trace, _ in tables], config=config, device=devices[0], devices=devices)
    planned = time.perf_counter() - t
    proof = js.prove(tables, config=config, device=devices[0], devices=devices)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        proof = js.prove(tables, config=config, device=devices[0], devices=devices)
        times.append(time.perf_counter() - t)
    data = proof.to_bytes()
    ok = js.verify([(air, public) for air, _, public in tables], data, config=config)
    return dict(devices=ndev, plan_s=planned, warm_s=statistics.median(times), waves=plan.waves,
                placed=[f"{u.name}@{u.device}" for u in plan.tables], sha=hashlib.sha256(data).hexdigest()[:16],
                verified=bool(ok))  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", default="machine:14", help="machine:LOG, or EXAMPLE:LOG:COUNT (COUNT copies)")
    ap.add_argument("--devices", default="1,3")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(args.tables, args.child, args.device, args.repeats)), flush=True)
        return 0
    rows = []
    for n in (int(x) for x in args.devices.split(",")):
        env = dict(os.environ)
        if args.device == "cpu":
            flags = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}".strip()
            env.update(XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
        cmd = [sys.executable, __file__, "--tables", args.tables, "--device", args.device,
               "--repeats", str(args.repeats), "--child", str(n)]  # fmt: skip
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
        if out.returncode or line is None:
            print(out.stderr[-3000:], file=sys.stderr)
            return 1
        rows.append(json.loads(line[7:]))
    base = rows[0]["warm_s"]
    same = len({r["sha"] for r in rows}) == 1
    print(f"{args.tables} on {args.device}; blowup 2, 40 queries, 16 grinding bits; proof bytes the same for every "
          f"device count: {same}")  # fmt: skip
    print(f"{'devices':>7} {'plan s':>8} {'warm s':>8} {'speed-up':>8}  verified  waves / placement")
    for r in rows:
        print(f"{r['devices']:>7} {r['plan_s']:>8.2f} {r['warm_s']:>8.3f} {base / r['warm_s']:>7.2f}x  "
              f"{str(r['verified']):8}  {r['waves']} {', '.join(r['placed'])}")  # fmt: skip
    return 0 if same and all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
