"""Whole tables on several devices at once: a statement's warm proof on 1, 2, ... devices.

    python benchmarks/bench_devices.py --tables machine:16 --devices 1,3            # the three-table machine
    python benchmarks/bench_devices.py --tables alu:14:4 --devices 1,2,4            # four ALU tables of 2^14 rows
    python benchmarks/bench_devices.py --tables machine:22 --devices 1,3 --device gpu
    python benchmarks/bench_devices.py --tables alu:14:4 --devices 2 --processes 2     # jax.distributed

For each device count, a fresh process (on the CPU: that many host devices,
``--xla_force_host_platform_device_count``) builds the statement's traces, plans it on the first
N devices (whole tables: one per device while there are enough, else balanced by estimated work;
rounds 2-5 of units on distinct devices dispatched together, ``jaxstark.schedule.waves``),
proves it once after planning, then ``--repeats`` times (the median is "warm"), checks that the
proof is the same bytes for every device count, and verifies it. Prints a table last: plan
(compile, cold in that process), warm proof, speed-up over one device, where each table ran.
Config: blowup 2, 40 queries, 16 grinding bits, FRI final degree 64, BLAKE3.

``--processes P`` runs each device count as P ``jax.distributed`` processes on localhost (N/P
devices each, CPU collectives over gloo): whole tables are then shared out over the processes,
each proving its own (``jaxstark/schedule.py``); process 0's figures are printed.
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


def child(spec: str, ndev: int, platform: str, repeats: int, distributed: tuple | None = None) -> dict:
    import jax
    import numpy as np

    if distributed is not None:  # (process id, processes, port)
        pid, processes, port = distributed
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=processes, process_id=pid)

    import jaxstark as js

    devices = jax.devices(platform)[:ndev]  # of every process; this process's first as the default
    here = jax.local_devices(backend=platform)[0]
    if len(devices) < ndev:
        raise SystemExit(f"{ndev} devices asked for, {len(devices)} {platform} device(s) here")
    tables = [(air, np.asarray(trace), public) for air, trace, public in tables_of(spec)]
    config = js.StarkConfig(blowup=2, num_queries=40, grinding_bits=16, fri_final_degree=64)
    t = time.perf_counter()
    plan = js.plan([(air, trace) for air, trace, _ in tables], config=config, device=here, devices=devices)
    planned = time.perf_counter() - t
    proof = js.prove(tables, config=config, device=here, devices=devices)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        proof = js.prove(tables, config=config, device=here, devices=devices)
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
    ap.add_argument("--processes", type=int, default=1, help="jax.distributed processes per device count (CPU)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--distributed", help=argparse.SUPPRESS)  # PID,PROCESSES,PORT
    args = ap.parse_args(argv)
    if args.child:
        dist = tuple(int(x) for x in args.distributed.split(",")) if args.distributed else None
        print("RESULT " + json.dumps(child(args.tables, args.child, args.device, args.repeats, dist)), flush=True)
        return 0
    rows = []
    for n in (int(x) for x in args.devices.split(",")):
        p = args.processes if n > 1 else 1
        if n % p:
            raise SystemExit(f"{n} devices do not split over {p} processes")
        env = dict(os.environ)
        if args.device == "cpu":
            flags = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n // p}".strip()
            env.update(XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
        cmd = [sys.executable, __file__, "--tables", args.tables, "--device", args.device,
               "--repeats", str(args.repeats), "--child", str(n)]  # fmt: skip
        if p > 1:
            import socket

            with socket.socket() as sock:
                sock.bind(("localhost", 0))
                port = sock.getsockname()[1]
            procs = [subprocess.Popen([*cmd, "--distributed", f"{k},{p},{port}"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for k in range(p)]  # fmt: skip
            outs = [proc.communicate() for proc in procs]
            code, stdout, stderr = max(proc.returncode for proc in procs), outs[0][0], "".join(e for _, e in outs)
        else:
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            code, stdout, stderr = out.returncode, out.stdout, out.stderr
        line = next((x for x in stdout.splitlines() if x.startswith("RESULT ")), None)
        if code or line is None:
            print(stderr[-3000:], file=sys.stderr)
            return 1
        rows.append(json.loads(line[7:]) | dict(processes=p))
    base = rows[0]["warm_s"]
    same = len({r["sha"] for r in rows}) == 1
    print(f"{args.tables} on {args.device}; blowup 2, 40 queries, 16 grinding bits; proof bytes the same for every "
          f"device count: {same}")  # fmt: skip
    print(f"{'devices':>7} {'procs':>5} {'plan s':>8} {'warm s':>8} {'speed-up':>8}  verified  waves / placement")
    for r in rows:
        where = f"{r['waves']} {', '.join(r['placed'])}"
        print(f"{r['devices']:>7} {r['processes']:>5} {r['plan_s']:>8.2f} {r['warm_s']:>8.3f} "
              f"{base / r['warm_s']:>7.2f}x  {str(r['verified']):8}  {where}")  # fmt: skip
    return 0 if same and all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
