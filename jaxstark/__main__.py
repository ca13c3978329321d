"""``python -m jaxstark``: the main job -- plan, prove and verify an example (CPU by default).

Prints the memory plan (every round's device set, the binding round, the budget), the shape,
the security level, the times of planning (which compiles every round), proving and verifying,
and the proof's size by part. Exit code 0 when the proof verifies, 1 when it is rejected, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax

import jaxstark as js
from jaxstark.errors import JaxstarkError
from jaxstark.examples import TABLE_EXAMPLES, example_tables
from jaxstark.hash import HASHES


def _device(kind: str) -> jax.Device:
    if kind == "default":
        return jax.devices()[0]
    try:
        return jax.devices(kind)[0]
    except RuntimeError as exc:
        raise SystemExit(f"jaxstark: no {kind} device available ({exc})") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m jaxstark",
        description="Prove and verify an example AIR (CPU by default) and report times and proof size.",
    )
    ap.add_argument("--example", choices=TABLE_EXAMPLES, default="fibonacci", help="machine: three tables on two buses")
    ap.add_argument("--log-rows", type=int, default=10, help="trace height is 2^LOG_ROWS (default 10)")
    ap.add_argument("--blowup", type=int, default=4, help="LDE blowup, a power of two >= 2 (default 4)")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--grinding", type=int, default=16, help="proof-of-work bits (default 16)")
    ap.add_argument("--hash", choices=sorted(HASHES), default="blake3")
    ap.add_argument("--device", choices=["cpu", "gpu", "default"], default="cpu")
    args = ap.parse_args(argv)
    if not (2 if args.example == "machine" else 1) <= args.log_rows <= 26:
        ap.error("--log-rows must be in [1, 26] ([2, 26] for the machine)")
    try:
        config = js.StarkConfig(
            blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash
        )
    except ValueError as exc:
        ap.error(str(exc))
    try:
        return _run(args, config)
    except JaxstarkError as exc:
        print(f"jaxstark: error: {exc}", file=sys.stderr)
        return 2


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _run(args: argparse.Namespace, config: js.StarkConfig) -> int:
    dev = _device(args.device)
    with jax.default_device(dev):
        tables = example_tables(args.example, args.log_rows)
        plan, planned = _timed(lambda: js.plan([(air, trace) for air, trace, _ in tables], config=config))
        proof, first = _timed(lambda: js.prove(tables, config=config))
        proof, again = _timed(lambda: js.prove(tables, config=config))
    data = proof.to_bytes()
    statement = [(air, public) for air, _, public in tables]
    try:
        _, vfirst = _timed(lambda: js.verify(statement, data, config=config))
        _, vagain = _timed(lambda: js.verify(statement, data, config=config))
    except js.InvalidProof as exc:
        print(f"jaxstark: the proof was REJECTED: {exc}", file=sys.stderr)
        return 1
    print(f"jaxstark: {args.example} on {dev.platform}:{dev.id} ({dev.device_kind})")
    print("  plan (" + f"{planned:.1f} s, compiling every round):\n    " + str(plan).replace("\n", "\n    "))
    for air, trace, _ in tables:
        aux = f", {air.num_aux_columns} aux" if air.num_aux_columns else ""
        print(f"  table      {air.name}: 2^{trace.shape[0].bit_length() - 1} rows x {air.width} columns{aux}")
    print(f"  config     blowup {config.blowup}, hash {config.hash}")
    print(f"  security   {config.security_report()}")
    print(f"  prove      {1e3 * again:9.1f} ms  (first call {first:.2f} s, after planning)")
    print(f"  verify     {1e3 * vagain:9.1f} ms  (first call {vfirst:.1f} s, including compilation)")
    print(f"  proof      {len(data) / 1024:.1f} KiB:")
    for part, size in proof.size_breakdown().items():
        print(f"    {part:28} {size:9d} B")
    print("  verified   OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
