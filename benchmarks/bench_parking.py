"""Parking held buffers in host memory: planned against measured peak, and the time it costs.

    python benchmarks/bench_parking.py --shapes fibonacci:22:2,alu:22:2

For each shape (``example:log_rows:blowup[:width]``, as :mod:`bench_memory`), in fresh processes
sharing one compilation cache: the keep-everything plan (the device's own budget); the smallest
device set parking reaches (planned under a 1 MiB budget, which it cannot fit); then two proofs,
each in a process of its own with a preallocated pool sized to its plan -- keeping everything,
and under a budget just above the smallest parked set (``JAXSTARK_VRAM_BUDGET_MB``), where the
planner must park. Each proof reports the allocator's ``peak_bytes_in_use`` and a first and a
warm proving time (a numpy trace, as :mod:`bench_memory`). Prints a table.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from bench_memory import pool_env, run_child


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="fibonacci:22:2,alu:22:2")
    ap.add_argument("--margin", type=float, default=0.02, help="the parked budget: the smallest set times 1 + this")
    args = ap.parse_args(argv)
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=tempfile.mkdtemp(prefix="jaxstark-park-xla-"),
               XLA_PYTHON_CLIENT_PREALLOCATE="false")  # fmt: skip
    env.pop("JAXSTARK_VRAM_BUDGET_MB", None)
    rows = []
    for spec in args.shapes.split(","):
        keep = run_child(spec, "compile", env)
        if "predicted" not in keep:
            print(spec, keep)
            return 1
        least = run_child(spec, "compile", dict(env, JAXSTARK_VRAM_BUDGET_MB="1"))
        budget = least["predicted"] * (1 + args.margin)
        kept = run_child(spec, "prove", pool_env(env, keep, keep["predicted"] / 0.8 + 2**28))
        penv = pool_env(dict(env, JAXSTARK_VRAM_BUDGET_MB=f"{budget / 2**20:.3f}"), keep, budget / 0.8 + 2**28)
        parked = run_child(spec, "prove", penv)
        rows.append((spec, keep, least, budget, kept, parked))
    print(f"{'shape':18} {'plan':>6} {'keep: planned':>14} {'measured':>14} {'first':>7} {'warm':>7}   "
          f"{'park: planned':>14} {'measured':>14} {'first':>7} {'warm':>7} {'parked':>6}")  # fmt: skip
    for spec, keep, least, budget, kept, parked in rows:

        def cells(r):
            if r.get("outcome") != "proved":
                return f"{r.get('outcome', '?')}: {r.get('message', r.get('error', ''))[:200]}"
            return f"{r['predicted']:14,d} {r['measured']:14,d} {r['prove_s']:7.3f} {r['warm_prove_s']:7.3f}"

        print(f"{spec:18} {keep['plan_s']:6.1f} {cells(kept)}   {cells(parked)} {len(parked.get('parked', [])):6d}")
        for name, nbytes, copies in parked.get("parked", []):
            print(f"    parked {name:44} {nbytes:14,d} B, copied back {copies}x")
        print(f"    smallest parked set {least['predicted']:,} B ({least['binding']}); budget {budget:,.0f} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
