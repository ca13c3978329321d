"""Run by tests/test_chunking.py in a fresh process: prove the ALU table (2^14 rows, 2^10-row
chunks, 8 at a time) on several host devices, or as one of several ``jax.distributed``
processes, and write the proof's bytes; on several devices of one process, also prove and
verify the three-table machine (whole tables, a device each, rounds 2-5 dispatched together),
writing its bytes and the runner's dispatches and host reads in order; as one of several
processes, prove the machine with its whole tables shared out over the processes' devices.

    python tests/chunk_child.py OUT DEVICES [PROCESS_ID PROCESSES PORT]
"""

import os
import sys

out, devices = sys.argv[1], int(sys.argv[2])
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
import jax  # noqa: E402

if len(sys.argv) > 3:
    pid, processes, port = (int(x) for x in sys.argv[3:6])
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=processes, process_id=pid)

import numpy as np  # noqa: E402

import jaxstark as js  # noqa: E402
from jaxstark.examples import EXAMPLES  # noqa: E402

air, trace, public = EXAMPLES["alu"](14)
config = js.StarkConfig(
    blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4, max_chunk_rows_log2=10, chunk_group=8
)
plan = js.plan(air, 14, config)
assert len(jax.devices()) == devices * jax.process_count()
proof = js.prove(air, np.asarray(trace), public, config)
with open(out, "wb") as f:
    f.write(proof.to_bytes())
print(plan.chunking(0), flush=True)

from jaxstark.examples.machine import machine_example  # noqa: E402

tables = machine_example(6, bits=4)
small = js.StarkConfig(blowup=2, num_queries=10, grinding_bits=2, fri_final_degree=4)
machine_plan = js.plan([(air, t) for air, t, _ in tables], config=small)
print(*(f"{u.name} on {u.device}" for u in machine_plan.tables), sep="\n", flush=True)
if jax.process_count() > 1:  # whole tables shared out over the processes: each proves its own
    machine = js.prove(tables, config=small)
    with open(out + ".machine", "wb") as f:
        f.write(machine.to_bytes())
    print("rounds planned here:", sorted({r.table for r in machine_plan.rounds if r.table is not None}), flush=True)
    # a value >= p in the table process 1 proves: both processes refuse with the same error
    bad = [(a, np.array(t, copy=True), p) for a, t, p in tables]
    bad[1][1][5, 0] = np.uint64(2**64 - 1)
    try:
        js.prove(bad, config=small)
        print("bad trace proven", flush=True)
    except js.errors.NonCanonicalError as exc:
        print(f"refused: {exc}", flush=True)
    # a device failure in process 1's rounds 2-5, and process 1 over its budget: both processes raise
    import dataclasses

    from jaxstark import faults

    armed = faults.arm("DEEP") if pid == 1 else None
    try:
        js.prove(tables, config=small)
        print("faulted run proven", flush=True)
    except js.errors.JaxstarkError as exc:
        print(f"fault: {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
    if armed is not None:
        faults.disarm(armed)
    try:
        js.prove(tables, config=dataclasses.replace(small, vram_budget_mb=0.01 if pid == 1 else None))
        print("over budget proven", flush=True)
    except js.errors.DeviceBudgetExceeded as exc:
        print(f"over budget: {str(exc).splitlines()[0]}", flush=True)
    # a table that does not satisfy its AIR, proven by process 1: both processes warn (no debug)
    import warnings

    fib, fib_trace, fib_public = EXAMPLES["fibonacci"](6)
    broken = np.array(fib_trace, copy=True)
    broken[5, 1] += np.uint64(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        js.prove([(fib, np.asarray(fib_trace), fib_public), (fib, broken, fib_public)], config=small)
    print("AIR warnings:", sum("does not satisfy the AIR" in str(w.message) for w in caught), flush=True)
    if pid == 1:  # a default device of another process is refused
        try:
            js.plan([(a, t) for a, t, _ in tables], config=small, device=jax.devices()[0])
        except ValueError as exc:
            print(f"foreign device: {exc}", flush=True)
else:  # a statement of whole tables: a device each, then all on one
    from jaxstark.memory import executor

    events = []  # the runner's dispatches and host waits, in order
    run, host = executor.Runner.run, executor.Runner.host
    executor.Runner.run = lambda self, table, name, *a, **k: (
        events.append(f"run {table} {name}") or run(self, table, name, *a, **k)
    )
    executor.Runner.host = lambda self, tree, *a: events.append("host") or host(self, tree, *a)
    machine = js.prove(tables, config=small)
    executor.Runner.run, executor.Runner.host = run, host
    assert js.verify([air for air, _, _ in tables], machine.to_bytes(), config=small)
    one = js.prove(tables, config=small, device=jax.devices()[0])  # every table on one device of four
    for suffix, proof in ((".machine", machine), (".machine1", one)):
        with open(out + suffix, "wb") as f:
            f.write(proof.to_bytes())
    print("machine verified", flush=True)
    print("events:", ";".join(events), flush=True)
