"""Planned against measured device memory: each shape proved in a fresh process.

    python benchmarks/bench_memory.py                     # the default shape list, 4 processes at a time
    python benchmarks/bench_memory.py --shapes alu:10:2,fibonacci:12:4 --jobs 2   # a quick run

For each shape ``example:log_rows:blowup[:width]`` a child process builds the trace on the host
CPU, plans the proof on the default device (``jaxstark.plan``: the predicted peak), proves it
(the same executables), and reads the allocator's ``peak_bytes_in_use``. Children run a few at
a time (separate processes, separate allocators) with ``XLA_PYTHON_CLIENT_PREALLOCATE=false``:
each would otherwise reserve 75% of the card up front and the others would fail for lack of
memory (the in-use peak that is measured does not depend on preallocation). ``--over-budget``
adds one shape proved under a reduced ``JAXSTARK_VRAM_BUDGET_MB``, which must abort before
anything is dispatched. Prints a table (shape, predicted, measured, predicted / measured) and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DEFAULT_SHAPES = (
    "fibonacci:16:2,fibonacci:20:4,fibonacci:22:2,alu:16:4,alu:20:2,alu:22:2,alu:22:4,"
    "wide:20:2:8,wide:20:2:64,wide:18:2:316,wide:16:2:600,wide:21:4:128"
)


def child(spec: str) -> dict:
    import jax
    import numpy as np

    import jaxstark as js
    from jaxstark.examples import EXAMPLES, wide_example

    name, log_n, blowup, *width = spec.split(":")
    log_n, blowup = int(log_n), int(blowup)
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        if name == "wide" and width:
            air, trace, public = wide_example(log_n, width=int(width[0]))
        else:
            air, trace, public = EXAMPLES[name](log_n)
        trace = np.asarray(trace)
    config = js.StarkConfig(blowup=blowup, num_queries=40, grinding_bits=16, fri_final_degree=64)
    dev = jax.devices()[0]
    out = dict(spec=spec, rows=log_n, width=air.width, blowup=blowup, device=dev.device_kind)
    t = time.perf_counter()
    plan = js.plan(air, log_n, config)
    out.update(plan_s=time.perf_counter() - t, predicted=plan.peak, binding=plan.binding.name)
    before = (dev.memory_stats() or {}).get("peak_bytes_in_use", 0)
    try:
        t = time.perf_counter()
        js.prove(air, trace, public, config)
        out.update(prove_s=time.perf_counter() - t, outcome="proved")
    except js.DeviceBudgetExceeded as exc:
        out.update(outcome="refused before dispatch", budget=exc.budget, message=str(exc).splitlines()[0])
    stats = dev.memory_stats() or {}
    out.update(measured=stats.get("peak_bytes_in_use", 0), measured_before_prove=before)
    return out


def run_child(spec: str, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--child", spec]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return dict(spec=spec, outcome=f"failed rc={proc.returncode}", error=proc.stderr[-1500:])
    return json.loads(lines[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--over-budget", default="alu:22:2", help="shape to prove under a reduced budget ('' for none)")
    ap.add_argument("--reduced-budget-mb", default="2048")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "memory.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return 0
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("JAXSTARK_VRAM_BUDGET_MB", None)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    jobs = [(s, env) for s in args.shapes.split(",") if s]
    if args.over_budget:
        jobs.append((args.over_budget, dict(env, JAXSTARK_VRAM_BUDGET_MB=args.reduced_budget_mb)))
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda j: run_child(*j), jobs):
            print(
                json.dumps({k: v for k, v in row.items() if k != "error"}), flush=True
            )  # partial results survive a cut
            rows.append(row)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1))
    head = f"{'shape':22} {'rows x cols @ b':>20} {'binding':>14} {'predicted GiB':>14} {'measured GiB':>13}"
    print(head + f" {'ratio':>7}  outcome")
    for r in rows:
        if "predicted" not in r:
            print(f"{r['spec']:22} {r['outcome']}: {r.get('error', '')[-300:]}")
            continue
        shape = f"2^{r['rows']} x {r['width']} @ {r['blowup']}"
        ratio = r["predicted"] / r["measured"] if r["measured"] else float("nan")
        print(
            f"{r['spec']:22} {shape:>20} {r['binding']:>14} {r['predicted'] / 2**30:14.3f} "
            f"{r['measured'] / 2**30:13.3f} {ratio:7.3f}  {r['outcome']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
