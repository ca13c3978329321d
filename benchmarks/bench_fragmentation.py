"""The allocator's bytes in use against the arrays alive, after each round of a proof.

The plan counts the bytes each buffer asks for; the allocator may hand a request a larger free
chunk and count the whole chunk in use. After every round (waited for) this prints
``bytes_in_use`` and the sum of ``nbytes`` of the live arrays on the device, before and after,
their difference ("allocator excess"), the peak so far and the round's planned device set.

    python benchmarks/bench_fragmentation.py wide:20:2:8 alu:20:2 alu:20:4

Shapes as in ``bench_memory.py`` (``example:log_rows:blowup[:width]``), host numpy traces, 40
queries, 16 grinding bits, final degree 64. Each shape runs in a process of its own.
"""

from __future__ import annotations

import subprocess
import sys


def one(spec: str) -> None:
    import jax
    from common import memory_shape, no_allocator_stats

    import jaxstark as js
    from jaxstark.memory import executor

    air, trace, public, config = memory_shape(spec)
    dev = jax.devices()[0]
    if why := no_allocator_stats(dev):
        raise SystemExit(why)
    plan = js.plan(air, trace, config)
    run, rows = executor.Runner.run, []

    def live() -> int:
        return sum(x.nbytes for x in jax.live_arrays() if not x.is_deleted() and dev in x.devices())

    def traced(self, table, round_name, *rest, **kw):
        before = (dev.memory_stats()["bytes_in_use"], live())
        result = jax.block_until_ready(run(self, table, round_name, *rest, **kw))
        st = dev.memory_stats()
        rows.append((round_name, *before, st["bytes_in_use"], live(), st["peak_bytes_in_use"]))
        return result

    executor.Runner.run = traced
    js.prove(air, trace, public, config)
    planned = {}
    for r in plan.rounds:
        planned.setdefault(r.name, r.total)
    measured = dev.memory_stats()["peak_bytes_in_use"]
    print(f"{spec} on {dev.device_kind}: planned peak {plan.peak:,} B, measured {measured:,} B")
    print(f"  {'round':14} {'in use before':>14} {'live before':>12} {'in use after':>13} {'live after':>12} "
          f"{'excess after':>12} {'peak':>13} {'planned set':>13}")  # fmt: skip
    for n, ib, lb, ia, la, pk in rows:
        print(f"  {n:14} {ib:14,} {lb:12,} {ia:13,} {la:12,} {ia - la:12,} {pk:13,} {planned.get(n, 0):13,}")


def main(argv=None) -> int:
    specs = sys.argv[1:] if argv is None else argv
    if len(specs) == 1 and not specs[0].startswith("-"):
        one(specs[0])
        return 0
    for spec in specs or ["wide:20:2:8"]:
        subprocess.run([sys.executable, __file__, spec], check=True)
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
