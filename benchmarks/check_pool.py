"""The simulated pool (jaxstark.memory.pool) against the GPU allocator itself, from its own log.

    python benchmarks/check_pool.py alu:18:2 wide:20:2:8            # on a GPU
    python benchmarks/check_pool.py alu:18:2 --save tests/data       # also refresh the test data

For each shape (``example:log_rows:blowup[:width]``, as ``bench_memory.py``; host numpy traces,
40 queries, 16 grinding bits, final degree 64) a child process plans and proves once with XLA's
allocator logging every allocation and free (``TF_CPP_VMODULE=bfc_allocator=4``) and prints a
marker after each round. The log is replayed through :class:`jaxstark.memory.pool.Pool`: every
address it gives must be the allocator's, and its bytes in use and peak after every round the
allocator's own figures. Prints one line per shape (and the plan's peak against the measured
one); exit status 1 if any shape differs. Run it after a jax upgrade: the planner's figures on a
GPU rest on the pool following the allocator exactly. ``--save DIR`` writes the replayed events
as ``bfc_<shape>.json`` (what ``tests/test_pool.py`` replays).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

_ALLOC = re.compile(r"\] AllocateRaw GPU_0_bfc  (\d+) 0x([0-9a-f]+)")
_FREE = re.compile(r"\[mem-debug\] DeallocateRaw,GPU_0_bfc,(\d+),0x([0-9a-f]+)")
MARK = "@@pool "


def child(spec: str) -> None:
    import jax
    from common import memory_shape, no_allocator_stats

    import jaxstark as js
    from jaxstark.memory import executor

    air, trace, public, config = memory_shape(spec)
    dev = jax.devices()[0]
    if why := no_allocator_stats(dev):
        raise SystemExit(why)

    def mark(what: str, **fields) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(2, (MARK + json.dumps(dict(what=what, **fields)) + "\n").encode())

    plan = js.plan(air, trace, config)
    run = executor.Runner.run

    def traced(self, table, round_name, *rest, **kw):
        result = jax.block_until_ready(run(self, table, round_name, *rest, **kw))
        st = dev.memory_stats()
        mark("round", round=round_name, in_use=st["bytes_in_use"], peak=st["peak_bytes_in_use"])
        return result

    executor.Runner.run = traced
    js.prove(air, trace, public, config)
    mark("proof", planned=plan.peak, measured=dev.memory_stats()["peak_bytes_in_use"])


def events(log: str) -> list[list]:
    """The allocator's log as ``["a", bytes, address]``, ``["f", address]`` and ``["m", round,
    in use, peak]`` events, addresses relative to the first allocation's."""
    out, base = [], None
    for line in log.splitlines():
        if line.startswith(MARK):
            m = json.loads(line[len(MARK) :])
            if m["what"] == "round":
                out.append(["m", m["round"], m["in_use"], m["peak"]])
            continue
        if hit := _ALLOC.search(line):
            address = int(hit.group(2), 16)
            base = address if base is None else base
            out.append(["a", int(hit.group(1)), address - base])
        elif hit := _FREE.search(line):
            out.append(["f", int(hit.group(2), 16) - base])
    return out


def replay(evs: list[list]) -> list[str]:
    """What differs between the pool and the allocator over ``evs`` (empty: nothing)."""
    from jaxstark.memory.pool import Pool

    pool, wrong = Pool(), []
    for k, e in enumerate(evs):
        if e[0] == "a":
            got = pool.allocate(e[1])
            if got != e[2]:
                wrong.append(f"allocation {k} of {e[1]:,} B at {got:#x}, the allocator's at {e[2]:#x}")
        elif e[0] == "f":
            pool.free(e[1])
        elif (pool.in_use, pool.peak) != (e[2], e[3]):
            wrong.append(f"after {e[1]}: in use {pool.in_use:,} / peak {pool.peak:,} B, the allocator's "
                         f"{e[2]:,} / {e[3]:,}")  # fmt: skip
    return wrong


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", default=["alu:18:2", "wide:20:2:8"])
    ap.add_argument("--save", type=Path, help="write each shape's events to DIR/bfc_<shape>.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="bfc_allocator=4")
    env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.3")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")]))
    failed = False
    for spec in args.shapes:
        proc = subprocess.run([sys.executable, __file__, "--child", spec], env=env, capture_output=True, text=True)
        if proc.returncode:
            print(f"{spec}: the child failed (rc {proc.returncode})\n{proc.stderr[-2000:]}")
            return 1
        evs = events(proc.stderr)
        if not any(e[0] == "a" for e in evs):
            print(f"{spec}: the allocator logged nothing -- run this on a GPU (XLA's BFC allocator)")
            return 1
        proof = next(json.loads(ln[len(MARK) :]) for ln in proc.stderr.splitlines()
                     if ln.startswith(MARK) and '"proof"' in ln)  # fmt: skip
        wrong = replay(evs)
        allocs = sum(e[0] == "a" for e in evs)
        rounds = sum(e[0] == "m" for e in evs)
        verdict = "the pool follows the allocator" if not wrong else f"{len(wrong)} differences, first: {wrong[0]}"
        print(f"{spec}: {allocs} allocations, {rounds} rounds: {verdict}; planned peak {proof['planned']:,} B, "
              f"measured {proof['measured']:,} B ({proof['planned'] / proof['measured']:.5f})")  # fmt: skip
        failed |= bool(wrong)
        if args.save:
            source = (f"XLA's GPU allocator (BFC): every allocation and free of one proof of {spec} (40 queries, "
                      "final degree 64), from the allocator's own log (benchmarks/check_pool.py); addresses relative "
                      "to the first; 'm': its bytes_in_use and peak_bytes_in_use after a round")  # fmt: skip
            doc = dict(source=source, events=evs)
            path = args.save / f"bfc_{spec.replace(':', '_')}.json"
            path.write_text(json.dumps(doc, separators=(",", ":")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
