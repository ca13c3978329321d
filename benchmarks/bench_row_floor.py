"""Where small tables stop being faster on the host CPU than on the accelerator: the row floor.

    python benchmarks/bench_row_floor.py                       # ALU, 2^8 ... 2^16 rows, blowup 2
    python benchmarks/bench_row_floor.py --sizes 8,12 --runs 3  # a quick run

``StarkConfig.device_row_floor_log2`` sends tables of fewer than ``2^k`` rows to the CPU device
when the target is an accelerator. This measures the warm proof time (median of ``--runs``
after one warm-up, compile excluded) of the ALU example at each size on the host CPU and on the
default accelerator, each (device, size) in its own process. The processes compile at the same
time, then take turns timing (a file lock), so timings do not share the machine. Prints a table
and the smallest size from which the accelerator is faster at every larger size.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def child(device_kind: str, log_n: int, blowup: int, runs: int, lock: str) -> dict:
    import jax
    import numpy as np

    import jaxstark as js
    from jaxstark.examples import EXAMPLES

    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        air, trace, public = EXAMPLES["alu"](log_n)
        trace = np.asarray(trace)
    device = cpu if device_kind == "cpu" else jax.devices()[0]
    config = js.StarkConfig(blowup=blowup, device_row_floor_log2=0)
    t = time.perf_counter()
    js.plan(air, log_n, config, device=device)
    compile_s = time.perf_counter() - t
    with open(lock, "a") as fh:  # one process times at a time
        fcntl.flock(fh, fcntl.LOCK_EX)
        js.prove(air, trace, public, config, device=device)  # warm-up
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            js.prove(air, trace, public, config, device=device)
            times.append(time.perf_counter() - t)
        fcntl.flock(fh, fcntl.LOCK_UN)
    return dict(device=device_kind, platform=device.platform, log_n=log_n, compile_s=compile_s,
                median_ms=1e3 * statistics.median(times))  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8,10,12,13,14,15,16")
    ap.add_argument("--blowup", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "row_floor.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, log_n, lock = args.child.split(",", 2)
        print(json.dumps(child(kind, int(log_n), args.blowup, args.runs, lock)), flush=True)
        return 0
    lock = tempfile.mktemp(prefix="jaxstark-row-floor-")
    env = dict(
        os.environ,
        XLA_PYTHON_CLIENT_PREALLOCATE="false",
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]),
    )
    sizes = [int(s) for s in args.sizes.split(",")]
    jobs = [(kind, s) for s in sizes for kind in ("cpu", "accelerator")]

    def run(job):
        kind, s = job
        cmd = [sys.executable, __file__, "--child", f"{kind},{s},{lock}", "--blowup", str(args.blowup)]
        cmd += ["--runs", str(args.runs)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            return dict(device=kind, log_n=s, error=proc.stderr[-800:])
        return json.loads(lines[-1])

    with ThreadPoolExecutor(len(jobs)) as pool:
        rows = list(pool.map(run, jobs))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1))
    by = {(r["device"], r["log_n"]): r for r in rows}
    print(f"{'rows':>6} {'host CPU ms':>12} {'accelerator ms':>15} {'ratio':>7}")
    faster = []
    for s in sizes:
        c, a = by[("cpu", s)], by[("accelerator", s)]
        if "error" in c or "error" in a:
            print(f"2^{s:<4} failed: {c.get('error', '') or a.get('error', '')}")
            continue
        faster.append((s, a["median_ms"] < c["median_ms"]))
        ratio = c["median_ms"] / a["median_ms"]
        print(f"2^{s:<4} {c['median_ms']:12.1f} {a['median_ms']:15.1f} {ratio:7.2f}  ({a['platform']})")
    floor = next((s for i, (s, _) in enumerate(faster) if all(f for _, f in faster[i:])), None)
    print(f"accelerator faster from 2^{floor} rows up" if floor is not None else "accelerator never faster throughout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
