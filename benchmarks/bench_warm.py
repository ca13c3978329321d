"""Where a warm proof's time goes: the trace's transfer in, each round, the host's share, the proof out.

    python benchmarks/bench_warm.py --example alu --log-rows 22 --blowup 2 --device gpu [--repeats 5]

The shape is planned (compiled) first and proven once, so every figure below is warm. Then, each
the median of ``--repeats`` runs:

* ``trace in``: the host (numpy) trace onto the device, waited for (bytes / seconds), by one
  ``jax.device_put`` and by :func:`jaxstark.transfer.put` (row blocks from threads, what the
  prover does);
* per round: its time with progress on (the runner then waits for each round, so each figure
  is the round's own) and the sum over rounds;
* ``prove, device trace`` / ``prove, host trace``: whole ``js.prove`` calls without progress
  (rounds are dispatched back to back; the host waits once, for the proof's values), with the
  trace already on the device and as a numpy array;
* ``host share``: the device-trace proof minus the sum of its rounds (dispatch, the wait for the
  proof's values, building the proof object);
* ``serialise``: ``Proof.to_bytes``.

Prints one table, last. Compile time is reported apart (``plan``), cold in this process.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time

from cli_args import add_proof_args


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_proof_args(ap)
    ap.add_argument("--width", type=int, help="columns of the wide example")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    import jax
    import numpy as np

    import jaxstark as js
    from jaxstark import transfer
    from jaxstark.examples import example_tables
    from jaxstark.progress import RoundTimes

    device = jax.devices(args.device)[0]
    config = js.StarkConfig(blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash)
    if args.example == "wide" and args.width:
        from jaxstark.examples import wide_example

        tables = [wide_example(args.log_rows, width=args.width)]
    else:
        tables = example_tables(args.example, args.log_rows)
    host = [(air, np.asarray(trace), pub) for air, trace, pub in tables]
    on_device = [(air, jax.device_put(trace, device), pub) for air, trace, pub in host]
    trace_bytes = sum(t.nbytes for _, t, _ in host)

    t0 = time.perf_counter()
    js.plan([(a, t) for a, t, _ in on_device], config=config, device=device)
    js.plan([(a, t) for a, t, _ in host], config=config, device=device)
    planned = time.perf_counter() - t0
    reference = js.prove(on_device, config=config, device=device).to_bytes()
    if js.prove(host, config=config, device=device).to_bytes() != reference:
        print("a host trace gave other proof bytes than a device trace", file=sys.stderr)
        return 1

    def median_of(fn) -> float:
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    rows: list[tuple[str, float, str]] = []
    whole = median_of(lambda: [jax.block_until_ready(jax.device_put(t, device)) for _, t, _ in host])
    rows.append(
        ("trace in, device_put", whole, f"{trace_bytes / 2**20:.0f} MiB at {trace_bytes / whole / 1e9:.1f} GB/s")
    )
    single = jax.sharding.SingleDeviceSharding(device)
    blocks = median_of(lambda: [jax.block_until_ready(transfer.put(t, single)) for _, t, _ in host])
    rows.append(("trace in, row blocks", blocks, f"{trace_bytes / blocks / 1e9:.1f} GB/s, {transfer.threads()} threads"
                 f" ({'blocks' if all(transfer.wanted(t, single) for _, t, _ in host) else 'whole'})"))  # fmt: skip
    rounds = RoundTimes()
    for _ in range(args.repeats):
        js.prove(on_device, config=config, device=device, progress=rounds)
    per_round = {name: s / args.repeats for name, s in rounds.seconds.items()}
    for name, s in per_round.items():
        rows.append((f"  {name}", s, f"{rounds.calls[name] // args.repeats} dispatch(es)"))
    total_rounds = sum(per_round.values())
    rows.append(("sum of rounds", total_rounds, "progress on: each round waited for"))
    dev = median_of(lambda: js.prove(on_device, config=config, device=device))
    rows.append(("prove, device trace", dev, f"{dev / total_rounds:.2f} x the sum of rounds"))
    hst = median_of(lambda: js.prove(host, config=config, device=device))
    rows.append(("prove, host trace", hst, f"+{(hst - dev) * 1e3:.1f} ms over the device trace "
                 f"({trace_bytes / max(hst - dev, 1e-9) / 1e9:.1f} GB/s)"))  # fmt: skip
    rows.append(("host share", dev - total_rounds, "device-trace proof minus its rounds"))
    proof = js.prove(on_device, config=config, device=device)
    ser = median_of(proof.to_bytes)
    rows.append(("serialise", ser, f"{len(reference) / 2**10:.0f} KiB"))

    print(f"{args.example} 2^{args.log_rows} @ b{args.blowup}, {args.queries} queries, {args.grinding} grinding bits, "
          f"{args.hash}, on {device.device_kind}; plan (compile, cold in this process) {planned:.1f} s; medians of "
          f"{args.repeats}; proof sha256 {hashlib.sha256(reference).hexdigest()[:16]}")  # fmt: skip
    print(f"  {'phase':24} {'ms':>9}  note")
    for name, s, note in rows:
        print(f"  {name:24} {s * 1e3:9.2f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
