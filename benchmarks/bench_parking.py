"""Held buffers recomputed or parked: planned against measured peak, the time they cost, the bytes.

    python benchmarks/bench_parking.py --shapes fibonacci:22:2,alu:22:2
    python benchmarks/bench_parking.py --shapes fibonacci:26:2 --big fibonacci:28:2

Each shape is ``example:log_rows:blowup[:width]`` (as :mod:`bench_memory`, whose child processes
and parameters this uses: 40 queries, 16 grinding bits, a numpy trace), every process sharing
one compilation cache.

``--shapes`` (the keep-everything plan fits the device): the keep-everything plan (the device's
own budget); the smallest device set the planner reaches with the default strategies (planned
under a 1 MiB budget, which it cannot fit); then two proofs, each in a process of its own with
a preallocated pool sized to its plan -- keeping everything, and under a budget just above the
smallest set (``JAXSTARK_VRAM_BUDGET_MB``), where the planner must recompute or park. Each proof
reports the allocator's ``peak_bytes_in_use``, a first and a warm proving time, whether it
verified and a digest of its bytes: the two digests must be equal.

``--big`` (the keep-everything set is over the device's own budget): planned and proven under
that budget (no ``JAXSTARK_VRAM_BUDGET_MB``, the pool grown on demand), with the
keep-everything set it would need beside it.

Prints a table; writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bench_memory import pool_env, run_child


def _cells(r: dict) -> str:
    if r.get("outcome") != "proved":
        return f"{r.get('outcome', '?')}: {r.get('message', r.get('error', ''))[:300]}"
    ok = "verified" if r.get("verified") else "NOT VERIFIED"
    return (f"{r['predicted']:15,d} {r['measured']:15,d} {r['measured'] / r['predicted']:6.3f} {r['prove_s']:7.3f} "
            f"{r['warm_prove_s']:7.3f} {ok} {r.get('digest', '')}")  # fmt: skip


def _strategies(r: dict) -> list[str]:
    out = [f"    recomputed {n:40} {b:15,d} B, built again in {w!r}" for n, b, w in r.get("recomputed", [])]
    out += [f"    parked     {n:40} {b:15,d} B, copied back {k}x" for n, b, k in r.get("parked", [])]
    return out + [f"    row blocks {n:40} {k:15,d} blocks" for n, k in r.get("row_blocks", [])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="fibonacci:22:2,alu:22:2")
    ap.add_argument("--big", default="", help="shapes whose keep-everything set is over the device's budget")
    ap.add_argument("--margin", type=float, default=0.02, help="the reduced budget: the smallest set times 1 + this")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "parking.json")
    args = ap.parse_args(argv)
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=tempfile.mkdtemp(prefix="jaxstark-park-xla-"),
               XLA_PYTHON_CLIENT_PREALLOCATE="false")  # fmt: skip
    env.pop("JAXSTARK_VRAM_BUDGET_MB", None)
    head = f"{'':22} {'planned':>15} {'measured':>15} {'ratio':>6} {'first':>7} {'warm':>7}"
    results = dict(shapes=[], big=[])
    ok = True
    for spec in [s for s in args.shapes.split(",") if s]:
        keep = run_child(spec, "compile", env)
        if "predicted" not in keep:
            print(spec, keep)
            return 1
        least = run_child(spec, "compile", dict(env, JAXSTARK_VRAM_BUDGET_MB="1"))
        budget = least["predicted"] * (1 + args.margin)
        kept = run_child(spec, "prove", pool_env(env, keep, keep["predicted"] / 0.8 + 2**28))
        penv = pool_env(dict(env, JAXSTARK_VRAM_BUDGET_MB=f"{budget / 2**20:.3f}"), keep, budget / 0.8 + 2**28)
        reduced = run_child(spec, "prove", penv)
        same = kept.get("digest") is not None and kept.get("digest") == reduced.get("digest")
        ok &= same
        results["shapes"].append(dict(spec=spec, keep=kept, least=least, budget=budget, reduced=reduced, same=same))
        print(f"{spec}: keep-everything plan {keep['predicted']:,} B ({keep['binding']}), compiled in "
              f"{keep['plan_s']:.1f} s; smallest {least['predicted']:,} B ({least['binding']}, "
              f"{least['predicted'] / keep['predicted']:.3f} of it); reduced budget {budget:,.0f} B")  # fmt: skip
        print(head)
        print(f"{'  keep everything':22} {_cells(kept)}")
        print(f"{'  recompute / park':22} {_cells(reduced)}")
        print("\n".join(_strategies(reduced)))
        print(f"  proofs {'byte-identical' if same else 'DIFFER'}")
    for spec in [s for s in args.big.split(",") if s]:
        row = run_child(spec, "prove", env)
        results["big"].append(row)
        ok &= row.get("outcome") == "proved" and bool(row.get("verified"))
        keep_set, budget = row.get("keep_predicted", 0), max(row.get("budget", 1), 1)
        print(f"{spec}: device budget {budget:,} B; keep-everything set {keep_set:,} B "
              f"({keep_set / budget:.2f}x the budget; {row.get('keep_binding', '?')})")  # fmt: skip
        print(head)
        print(f"{'  under the budget':22} {_cells(row)}  (plan {row.get('plan_s', 0):.1f} s)")
        print("\n".join(_strategies(row)))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
