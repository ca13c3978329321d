"""Compile time, per program and from a cold start.

Per program: one ``jaxstark.plan`` of an example in this process, each round's program traced,
lowered and compiled (``jaxstark.memory.executor.compile_log``); with ``--cache`` empty (the
default: a fresh directory) the compile column is XLA's own time, with a filled one it is the
time to load the program from the persistent cache.

Cold start (``--cold-start``): the whole ``jaxstark prove`` process of the same example, run
twice in fresh processes against one new, empty cache directory -- the first run compiles
everything, the second loads it. Each runs through ``cli_timeline.py`` (the command with its
phases stamped) and its wall time is printed with its parts: start-up (importing jax and
jaxstark, starting the backend), the plan, the proof, the rest (waiting for the example's trace,
built beside the plan; writing the proof) and the exit (with the interpreter's own start, a few
tens of milliseconds before the process's first stamp). They run first, before this process
starts a backend that would hold the device's memory pool, and with the default FRI thresholds
(``--fri-scan-below`` is this process's).

``--threads N`` re-compiles the planned programs (cache off) on N threads at once and prints the
wall time against the sum: what compiling a plan's programs concurrently would give.

python benchmarks/bench_compile.py --example fibonacci --log-rows 10 --blowup 4     # the quick start's shape
python benchmarks/bench_compile.py --example alu --log-rows 22 --blowup 2 --device gpu --cold-start
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cli_args import add_proof_args


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_proof_args(ap)
    ap.add_argument("--cache", help="persistent cache directory (default: a fresh, empty one; 'off')")
    ap.add_argument("--cold-start", action="store_true", help="also time whole `jaxstark prove` processes")
    ap.add_argument("--threads", type=int, default=0, help="also re-compile the programs on this many threads")
    ap.add_argument(
        "--fri-scan-below", type=int, help="FRI layers of at most this many evaluations share one scan step"
    )
    ap.add_argument("--prove", type=int, default=0, metavar="N", help="then prove N times (run time of the programs)")
    return ap.parse_args(argv)


def _prove_cmd(args, cache: str) -> tuple[list[str], dict]:
    """`jaxstark prove` of the example, through ``cli_timeline.py`` (the command, its phases
    stamped), importing the jaxstark this process would import."""
    cmd = [sys.executable, str(Path(__file__).with_name("cli_timeline.py")), "prove", "--example", args.example,
           "--log-rows", str(args.log_rows), "--blowup", str(args.blowup), "--queries", str(args.queries),
           "--grinding", str(args.grinding), "--hash", args.hash, "--device", args.device, "--no-progress",
           "--out", str(Path(cache) / "bench.proof")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    path = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
    return cmd, {**env, "JAXSTARK_CACHE_DIR": cache, "PYTHONPATH": path}


def main(argv=None) -> int:
    args = _args(argv)
    if args.cold_start and _cold_start(args):
        return 1
    cache = args.cache or tempfile.mkdtemp(prefix="jaxstark-bench-xla-")
    os.environ["JAXSTARK_CACHE_DIR"] = cache  # read when jaxstark is imported
    os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # a cache of the caller's would win over it
    import jax

    import jaxstark as js
    from jaxstark.examples import example_shapes
    from jaxstark.memory import executor
    from jaxstark.rounds import r4_fri_layer

    device = jax.devices(args.device)[0]
    if args.fri_scan_below is not None:
        setattr(r4_fri_layer, r4_fri_layer.scan_threshold_name(device.platform), args.fri_scan_below)
    tables = example_shapes(args.example, args.log_rows)  # the plan needs only the heights
    config = js.StarkConfig(blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash)
    lowered: list = []
    if args.threads:  # keep each program's lowering for the concurrent re-compile
        real = executor._compiled

        def keep(fn, static, args_, shardings, name=None, describe=None, defer=False):
            lowered.append((name, fn, static, jax.tree.map(executor._sds, args_, shardings)))
            return real(fn, static, args_, shardings, name, describe, defer)

        executor._compiled = keep
    start = time.perf_counter()
    js.plan(tables, config=config, device=device)
    planned = time.perf_counter() - start
    log = executor.compile_log()
    shape = f"{args.example} 2^{args.log_rows} b{args.blowup} {args.hash} on {device.platform}"
    print(f"{shape}, FRI layers <= {r4_fri_layer.scan_layers_below(device.platform)} scanned: plan {planned:.2f} s, "
          f"{len(log)} programs, cache {cache}")  # fmt: skip
    print(f"  {'program':22} {'trace':>7} {'lower':>7} {'compile':>8} {'total':>7} {'from s':>7} {'to s':>7}  from")
    for r in log:  # from / to: when its tracing began and its executable was ready, since the plan began
        print(f"  {r.name:22} {r.trace:7.2f} {r.lower:7.2f} {r.compile:8.2f} {r.total:7.2f} "
              f"{r.started - start:7.2f} {r.finished - start:7.2f}  {r.source}")  # fmt: skip
    t, lo, c = (sum(getattr(r, k) for r in log) for k in ("trace", "lower", "compile"))
    print(f"  {'sum':22} {t:7.2f} {lo:7.2f} {c:8.2f} {t + lo + c:7.2f}")

    if args.prove:
        import numpy as np

        from jaxstark.examples import example_tables

        real = example_tables(args.example, args.log_rows)
        real_tables = [(air, jax.device_put(trace, device), pub) for air, trace, pub in real]
        times = []
        for _ in range(args.prove):
            t0 = time.perf_counter()
            js.prove(real_tables, config=config, device=device)
            times.append(time.perf_counter() - t0)
        print(f"  prove (device trace): first {times[0] * 1e3:.1f} ms, median of the rest "
              f"{np.median(times[1:] or times) * 1e3:.1f} ms")  # fmt: skip

    if args.threads:
        from concurrent.futures import ThreadPoolExecutor

        jax.config.update("jax_enable_compilation_cache", False)
        jax.clear_caches()  # JAX's in-memory executable cache too
        lowered = [(name, fn.lower(*abstract, **static)) for name, fn, static, abstract in lowered]

        def one(item):
            t0 = time.perf_counter()
            item[1].compile()
            return item[0], time.perf_counter() - t0

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            done = list(pool.map(one, lowered))
        wall = time.perf_counter() - t0
        print(f"  re-compiled on {args.threads} threads: wall {wall:.2f} s; each: "
              + ", ".join(f"{n} {s:.1f}" for n, s in done))  # fmt: skip

    return 0


def _cold_start(args) -> int:
    """Whole `jaxstark prove` processes, before this process starts a backend of its own (one
    holding the device's memory pool would slow theirs down)."""
    from cli_timeline import stamps

    fresh = tempfile.mkdtemp(prefix="jaxstark-cold-xla-")
    for label in ("cold (empty cache)", "second process"):
        cmd, env = _prove_cmd(args, fresh)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        t = stamps(proc.stderr)
        phases = ("backend", "plan begins", "plan ends", "prove begins", "prove ends", "main returned")
        if proc.returncode != 0 or not all(p in t for p in phases):
            print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
            return 1
        plan_s, prove_s = t["plan ends"] - t["plan begins"], t["prove ends"] - t["prove begins"]
        rest = t["main returned"] - t["backend"] - plan_s - prove_s
        ends = wall - t["main returned"]
        print(f"  jaxstark prove, {label}: {wall:.2f} s = start-up {t['backend']:.2f} + plan {plan_s:.2f} "
              f"+ proof {prove_s:.2f} + the rest {rest:.2f} (waiting for the example's trace, built beside the "
              f"plan; writing the proof) + the interpreter's start and exit {ends:.2f}")  # fmt: skip
    return 0


def _package_root() -> str:
    """The directory holding the jaxstark this process would import (found, not imported): first
    on the children's path, so that they time that code and not another copy's."""
    spec = importlib.util.find_spec("jaxstark")
    return str(Path(spec.origin).resolve().parent.parent)


if __name__ == "__main__":
    sys.exit(main())
