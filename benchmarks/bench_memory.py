"""Planned against measured device memory: each shape proved in a fresh process.

    python benchmarks/bench_memory.py                     # the default shape list, 4 processes at a time
    python benchmarks/bench_memory.py --shapes alu:10:2,fibonacci:12:4 --jobs 2   # a quick run
    python benchmarks/bench_memory.py --headroom alu:22:2  # also: that shape against shrinking allocator limits

For each shape ``example:log_rows:blowup[:width]`` two child processes run one after the other,
sharing a persistent compilation cache: the first plans the proof (``jaxstark.plan`` compiles
every round; XLA:GPU's autotuning allocates device scratch while it compiles -- that
*compile-time* peak is reported on its own); the second, fresh, plans again (the executables
come from the cache, nothing is autotuned), proves, and reads the allocator's
``peak_bytes_in_use``: the *measured* peak of the proof, for the whole process. Children run a
few at a time (separate processes, separate allocators). Planning children grow their pool on
demand (``XLA_PYTHON_CLIENT_PREALLOCATE=false``); proving children by default preallocate, as JAX
does, a pool of ``predicted / 0.8 + 256 MiB`` (``XLA_PYTHON_CLIENT_MEM_FRACTION``), so that
several fit on the card at once (``--growth`` proves with pools grown on demand instead).
``--over-budget`` adds one shape proved under a reduced ``JAXSTARK_VRAM_BUDGET_MB``, which must
abort before anything is dispatched. ``--headroom SPEC`` proves SPEC again with the allocator
limited (``XLA_PYTHON_CLIENT_MEM_FRACTION``, preallocated as JAX does by default) so that the
predicted peak is 80 ... 100% of the limit, admission forced by a large
``JAXSTARK_VRAM_BUDGET_MB``: how close to the allocator's limit a plan can go. Each proof also
records the allocator's in-use and peak bytes after every round. Prints tables and writes JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DEFAULT_SHAPES = (
    "fibonacci:16:2,fibonacci:20:4,fibonacci:22:2,alu:16:4,alu:20:2,alu:22:2,alu:22:4,"
    "wide:20:2:8,wide:20:2:64,wide:18:2:316,wide:16:2:600,wide:21:4:128"
)


def child(spec: str, phase: str) -> dict:
    import jax
    from common import memory_shape, no_allocator_stats

    import jaxstark as js

    air, trace, public, config = memory_shape(spec)
    dev = jax.devices()[0]
    if why := no_allocator_stats(dev):
        return dict(spec=spec, outcome=f"not measured: {why}")
    out = dict(spec=spec, rows=int(spec.split(":")[1]), width=air.width, blowup=config.blowup,
               device=dev.device_kind, phase=phase)  # fmt: skip
    t = time.perf_counter()
    plan = js.plan(air, trace, config)  # as js.prove will plan it: the numpy trace in host memory
    stats = dev.memory_stats() or {}
    out.update(plan_s=time.perf_counter() - t, predicted=plan.peak, binding=plan.binding.name, fits=plan.fits,
               parked=[[n, b, k] for n, b, k in plan.parked], recomputed=[[n, b, w] for n, b, w in plan.recomputed],
               row_blocks=[[n, k] for n, k in plan.row_blocks],
               bytes_limit=stats.get("bytes_limit", 0), peak_after_plan=stats.get("peak_bytes_in_use", 0),
               budget=plan.budgets[plan.binding.device].bytes)  # fmt: skip
    if (
        plan.parked or plan.recomputed or plan.row_blocks or not plan.fits
    ):  # the keep-everything set (its programs are compiled)
        import dataclasses

        keep = js.plan(air, trace, dataclasses.replace(config, held_strategies=()))
        out.update(keep_predicted=keep.peak, keep_binding=keep.binding.name)
    if phase == "compile":
        return out
    from jaxstark.memory import executor

    rounds, run = [], executor.Runner.run

    def traced(self, table, name, *rest, **kw):  # the allocator's figures after each round
        result = run(self, table, name, *rest, **kw)
        st = dev.memory_stats() or {}
        rounds.append((name, st.get("bytes_in_use", 0), st.get("peak_bytes_in_use", 0)))
        return result

    executor.Runner.run = traced
    planned, peak_so_far = {}, 0
    for r in plan.rounds:
        peak_so_far = max(peak_so_far, r.total)
        planned.setdefault(r.name, peak_so_far)
    out["planned_peak_by_round"] = planned
    out["measured_by_round"] = rounds
    try:
        t = time.perf_counter()
        proof = js.prove(air, trace, public, config)
        out.update(prove_s=time.perf_counter() - t, outcome="proved")
        t = time.perf_counter()
        out.update(verified=bool(js.verify(air, proof, public, config)), verify_s=time.perf_counter() - t,
                   digest=hashlib.sha256(proof.to_bytes()).hexdigest()[:16])  # fmt: skip
    except js.DeviceBudgetExceeded as exc:
        out.update(outcome="refused before dispatch", budget=exc.budget, message=str(exc).splitlines()[0])
    except js.DeviceFailure as exc:
        out.update(outcome="device failure (raised loudly)", message=str(exc).splitlines()[-1][:300])
    stats = dev.memory_stats() or {}
    out.update(measured=stats.get("peak_bytes_in_use", 0))
    if out["outcome"] == "proved":  # a second, warm proof: the proving time without first-call costs
        executor.Runner.run = run
        t = time.perf_counter()
        js.prove(air, trace, public, config)
        out.update(warm_prove_s=time.perf_counter() - t)
    return out


def run_child(spec: str, phase: str, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--child", spec, "--phase", phase]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return dict(spec=spec, outcome=f"failed rc={proc.returncode}", error=proc.stderr[-1500:])
    return json.loads(lines[-1])


def card_bytes(first: dict) -> float:
    """The card's memory, from a planning child's allocator limit (0.75 of it unless the caller
    set ``XLA_PYTHON_CLIENT_MEM_FRACTION``)."""
    return first["bytes_limit"] / float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75"))


def pool_env(env: dict, first: dict, pool_bytes: float) -> dict:
    """``env`` with JAX's preallocated pool of ``pool_bytes`` (unchanged without an allocator limit: CPU)."""
    total = card_bytes(first)
    if not total:
        return env
    return dict(env, XLA_PYTHON_CLIENT_PREALLOCATE="true", XLA_PYTHON_CLIENT_MEM_FRACTION=f"{pool_bytes / total:.6f}")


def compile_then_prove(spec: str, env: dict, growth: bool = False) -> dict:
    first = run_child(spec, "compile", env)
    if "predicted" not in first:
        return first
    penv = env if growth else pool_env(env, first, first["predicted"] / 0.8 + 2**28)
    row = run_child(spec, "prove", penv)
    row.update(compile_peak=first["peak_after_plan"], compile_s=first["plan_s"], card_bytes=card_bytes(first),
               posture="grows on demand" if growth or penv is env else "preallocated")  # fmt: skip
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--over-budget", default="alu:22:2", help="shape to prove under a reduced budget ('' for none)")
    ap.add_argument("--reduced-budget-mb", default="2048")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "memory.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--phase", default="prove", help=argparse.SUPPRESS)
    ap.add_argument("--headroom", default="", help="shape to prove against shrinking allocator limits")
    ap.add_argument("--targets", default="0.8,0.9,0.95,0.98,1.0", help="predicted / limit for --headroom")
    ap.add_argument("--growth", action="store_true", help="prove with pools grown on demand, not preallocated")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.phase)), flush=True)
        return 0
    cache = tempfile.mkdtemp(prefix="jaxstark-xla-cache-")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]),
        XLA_PYTHON_CLIENT_PREALLOCATE="false",
        JAX_COMPILATION_CACHE_DIR=cache,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
    )
    env.pop("JAXSTARK_VRAM_BUDGET_MB", None)
    jobs = [(s, env) for s in args.shapes.split(",") if s]
    if args.over_budget:
        jobs.append((args.over_budget, dict(env, JAXSTARK_VRAM_BUDGET_MB=args.reduced_budget_mb)))
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda j: compile_then_prove(*j, growth=args.growth), jobs):
            print(json.dumps({k: v for k, v in row.items() if k != "error"}), flush=True)  # survives a cut
            rows.append(row)
    headroom = []
    if args.headroom:
        base = next((r for r in rows if r.get("spec") == args.headroom and "measured" in r), None)
        base = base or compile_then_prove(args.headroom, env, growth=args.growth)
        total = base["card_bytes"]

        def limited(target):
            fraction = base["predicted"] / target / total
            henv = dict(env, XLA_PYTHON_CLIENT_MEM_FRACTION=f"{fraction:.6f}", JAXSTARK_VRAM_BUDGET_MB="100000000")
            henv["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false" if args.growth else "true"  # true: JAX's default
            return dict(run_child(args.headroom, "prove", henv), target=target)

        with ThreadPoolExecutor(args.jobs) as pool:
            for row in pool.map(limited, [float(x) for x in args.targets.split(",")]):
                print(json.dumps({k: v for k, v in row.items() if k != "error"}), flush=True)
                headroom.append(row)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(rows=rows, headroom=headroom), indent=1))
    gib = 2**30
    head = f"{'shape':24} {'rows x cols @ b':>18} {'binding':>14} {'compile GiB':>12} {'predicted GiB':>14}"
    print(head + f" {'measured GiB':>13} {'ratio':>7} {'warm s':>7}  outcome")
    for r in rows:
        if "predicted" not in r:
            error = r.get("error", "")[-300:]
            print(f"{r['spec']:24} {r['outcome']}" + (f": {error}" if error else ""))
            continue
        shape = f"2^{r['rows']} x {r['width']} @ {r['blowup']}"
        ratio = r["predicted"] / r["measured"] if r.get("outcome") == "proved" else float("nan")
        print(
            f"{r['spec']:24} {shape:>18} {r['binding']:>14} {r.get('compile_peak', 0) / gib:12.3f} "
            f"{r['predicted'] / gib:14.3f} {r.get('measured', 0) / gib:13.3f} {ratio:7.3f} "
            f"{r.get('warm_prove_s', float('nan')):7.2f}  {r['outcome']} ({r.get('posture', '')})"
        )
    if headroom:
        print(f"\n{'shape':24} {'allocator limit GiB':>20} {'predicted/limit':>16} {'measured GiB':>13}  outcome")
        for r in headroom:
            if "predicted" not in r:
                print(f"{args.headroom:24} {r['outcome']}: {r.get('error', '')[-300:]}")
                continue
            print(
                f"{r['spec']:24} {r['bytes_limit'] / gib:20.3f} {r['predicted'] / r['bytes_limit']:16.3f} "
                f"{r.get('measured', 0) / gib:13.3f}  {r['outcome']}"
            )
    return 0 if any(r.get("measured") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
