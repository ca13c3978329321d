"""``jaxstark prove``, ``jaxstark verify`` and the demo (``jaxstark`` with no subcommand)."""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

import jaxstark as js
from jaxstark.cli import statement
from jaxstark.cli.common import (
    OK,
    REJECTED,
    CliError,
    add_config,
    add_memory,
    add_tables,
    check_log_rows,
    config_from,
    device_from,
    shapes_from,
    subcommand,
    tables_from,
    trusted_modules,
    user_tables,
)
from jaxstark.examples import TABLE_EXAMPLES, example_tables
from jaxstark.hash import HASHES
from jaxstark.memory.budget import reserve_pool
from jaxstark.memory.plan import _size
from jaxstark.progress import RoundTimes, TerminalProgress, combine
from jaxstark.protocol.layout import num_deep_terms

PROVE_HELP = """Prove a statement: an example (--example, --log-rows) or your own AIRs with their
traces (--air MODULE:CLASS --trace FILE.npy [--public A,B]; repeat the three for several tables
on shared buses). The proof is planned first (every round compiled; shown on stderr), refused
before anything runs if it exceeds the device budget, then proven with a progress line per
table, round and chunk group. Writes the proof (--out) and a statement file beside it
(OUT.json) that `jaxstark verify OUT` reads."""

PROVE_EXAMPLES = """examples:
  jaxstark prove --example alu --log-rows 14 --blowup 2 --out alu.proof
  jaxstark prove --example alu --log-rows 16 --chunk-rows 12 --blowup 2     # 16 row chunks
  jaxstark prove --air mypkg.airs:Counter --trace counter.npy --public 1024 --out counter.proof
  jaxstark prove --example machine --log-rows 12 --device gpu"""

VERIFY_HELP = """Verify a proof file. The statement (AIRs, heights, public inputs, proof parameters)
comes from the statement file `jaxstark prove` wrote beside the proof (PROOF.json, or
--statement FILE), or from the same options `prove` took (--example / --air, --public,
--log-rows and the proof parameters). On success it prints what was verified: each table's AIR,
height and public inputs, the parameters and the security they give.

Trust: the proof and its statement file come from the prover. A statement file may name only
AIR classes from jaxstark or from modules you trust (--trust MODULE, or JAXSTARK_TRUST=A,B):
importing a module runs its code, so anything else is refused before it is imported. The
security level is yours: a proof whose parameters give fewer than --min-security-bits
conjectured bits (default 100) is rejected, whatever the statement file says.

Exit code 0 when the proof verifies, 1 when it is rejected (with the check that failed), 2 when
a file cannot be read or names an untrusted AIR."""

VERIFY_EXAMPLES = """examples:
  jaxstark verify alu.proof                                   # statement from alu.proof.json
  jaxstark verify counter.proof --trust mypkg                 # the statement names mypkg.airs:Counter
  jaxstark verify alu.proof --example alu --log-rows 14 --blowup 2
  jaxstark verify toy.proof --min-security-bits 0             # accept any level (it is printed)"""

MIN_SECURITY_BITS = 100


def add_parsers(sub) -> None:
    ap = subcommand(
        sub, "prove", run_prove, "prove an example or your own AIR; write the proof file", PROVE_HELP, PROVE_EXAMPLES
    )
    add_tables(ap, traces=True)
    add_config(ap)
    add_memory(ap)
    g = ap.add_argument_group("output")
    g.add_argument("--out", type=Path, help="the proof file (default: <example>.proof)")
    g.add_argument("--debug", action="store_true", help="check every constraint and bus first; name the first failure")
    g.add_argument("--no-progress", action="store_true", help="no progress display on stderr")

    ap = subcommand(
        sub, "verify", run_verify, "verify a proof file (exit code 0 or 1 with the reason)", VERIFY_HELP,
        VERIFY_EXAMPLES,
    )  # fmt: skip
    ap.add_argument("proof", type=Path, help="the proof file")
    ap.add_argument("--statement", type=Path, help="the statement file (default: PROOF.json)")
    ap.add_argument(
        "--trust", action="append", default=[], metavar="MODULE",
        help="a module (and its submodules) whose AIRs a statement file may name; repeatable",
    )  # fmt: skip
    ap.add_argument(
        "--min-security-bits", type=float, default=MIN_SECURITY_BITS, metavar="BITS",
        help="reject a proof whose parameters give fewer conjectured bits (default %(default)s)",
    )  # fmt: skip
    add_tables(ap, traces=False, log_rows=None)
    add_config(ap)


def run_prove(args, ap) -> int:
    config = config_from(args, ap)
    check_log_rows(args, ap, 2 if args.example == "machine" else 1, 30 - config.log_blowup)
    dev = device_from(args.device)
    # the allocator's pool is reserved while a trace file is read and the plan loads its programs
    reserving = reserve_pool(dev)
    try:
        return _prove(args, ap, config, dev)
    finally:
        if reserving is not None:  # never leave (on an error) while the runtime is reserving
            reserving.join()


def _prove(args, ap, config, dev) -> int:
    name = args.example or (args.air[0].rpartition(":")[2].lower() if args.air else "fibonacci")
    out = args.out or Path(f"{name}.proof")
    with jax.default_device(dev), concurrent.futures.ThreadPoolExecutor(1) as pool:
        # a trace file is read (and checked) before planning; an example's trace is built on
        # the device, from its shapes alone, on a thread beside the plan (whose budget is the
        # allocator's limit, not what is free: the trace is planned as resident anyway)
        tables = tables_from(args, ap) if args.air else None
        building = None if tables else pool.submit(_on_device, dev, tables_from, args, ap)
        shapes = [(air, trace) for air, trace, _ in tables] if tables else shapes_from(args, ap)
        show = None if args.no_progress else TerminalProgress(sys.stderr)
        times = RoundTimes()
        start = time.perf_counter()
        plan = js.plan(shapes, config=config, device=dev, progress=show, host_traces=None if tables else False)
        planned = time.perf_counter() - start
        binding = plan.binding
        unit = "all tables" if binding.table is None else f"unit {binding.table}"
        print(
            f"plan: peak {_size(plan.peak)} in '{binding.name}' ({unit}) "
            f"of a {_size(plan.budgets[binding.device].bytes)} budget on {binding.device}; {len(plan.rounds)} rounds "
            f"({planned:.1f} s, compiling)"
        )
        for t in range(len(shapes)):
            if words := plan.chunking(t):
                print(f"  {words}")
        plan.admit()
        tables = tables or building.result()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            proof = js.prove(tables, config=config, debug=args.debug, device=dev, progress=combine(show, times))
            proved = time.perf_counter() - start
    problems = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    if problems:
        raise CliError("the statement does not hold; no proof was written:\n  " + "\n  ".join(problems))
    data = proof.to_bytes()
    try:
        out.write_bytes(data)
        airs, publics = [a for a, _, _ in tables], [p for _, _, p in tables]
        statement.write(
            _statement_path(out), airs, [t.shape[0].bit_length() - 1 for _, t, _ in tables], publics, config
        )
    except OSError as exc:
        raise CliError(f"cannot write {str(out)!r}: {exc}") from None
    print(f"proved in {proved:.2f} s on {dev.platform}:{dev.id}; times per round:")
    print("  " + times.table().replace("\n", "\n  "))
    print(f"proof: {len(data):,} B ({len(data) / 1024:.1f} KiB) -> {out}; statement -> {_statement_path(out)}")
    for part, size in proof.size_breakdown().items():
        print(f"  {part:28} {size:9d} B")
    print(f"verify with: jaxstark verify {out}")
    return OK


def _on_device(dev, fn, *args):
    """``fn(*args)`` with ``dev`` the default device (a thread does not inherit the context)."""
    with jax.default_device(dev):
        return fn(*args)


def _statement_path(proof: Path) -> Path:
    return proof.with_name(proof.name + ".json")


def run_verify(args, ap) -> int:
    try:
        data = args.proof.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read the proof file {str(args.proof)!r}: {exc.strerror or exc}") from None
    if not args.min_security_bits >= 0:
        ap.error(f"--min-security-bits must be >= 0, got {args.min_security_bits}")
    if args.example or args.air:
        if args.statement:
            ap.error("give the statement as --statement or as --example / --air, not both")
        config = config_from(args, ap)
        if args.example:
            args.log_rows = 10 if args.log_rows is None else args.log_rows
            check_log_rows(args, ap, 2 if args.example == "machine" else 1, 31 - config.log_blowup)
            tables = example_tables(args.example, args.log_rows)
            airs, publics = [a for a, _, _ in tables], [p for _, _, p in tables]
            log_ns = [t.shape[0].bit_length() - 1 for _, t, _ in tables]
        else:
            airs, publics = user_tables(args, ap, traces=False)
            if args.log_rows is not None:
                check_log_rows(args, ap, 1, 31 - config.log_blowup)
            log_ns = [args.log_rows] * len(airs)
    else:
        trusted = trusted_modules(args.trust)
        airs, log_ns, publics, config = statement.read(args.statement or _statement_path(args.proof), trusted)
    start = time.perf_counter()
    try:
        js.verify(
            list(zip(airs, publics, strict=True)), data, config=config, log_n=log_ns,
            min_security_bits=args.min_security_bits,
        )  # fmt: skip
    except js.InvalidProof as exc:
        print(f"REJECTED ({exc.code}): {exc}", file=sys.stderr)
        print(f"jaxstark: {args.proof}: the proof was rejected ({exc.code})")
        return REJECTED
    except ValueError as exc:  # the statement itself is inconsistent (e.g. a bus's tuple lengths)
        raise CliError(f"the statement cannot be verified: {exc}") from None
    took = time.perf_counter() - start
    proof = js.Proof.from_bytes(data)  # parsed and checked by verify
    first = np.cumsum([0, *(1 << k for k in proof.layout)])
    heights = [proof.tables[int(first[t])].log_n + k for t, k in enumerate(proof.layout)]
    print(f"verified: OK -- {args.proof} ({len(data):,} B, {took:.2f} s) proves:")
    for t, (air, log_n, public) in enumerate(zip(airs, heights, publics, strict=True)):
        split = f" in {1 << proof.layout[t]} row chunks" if proof.layout[t] else ""
        shown = ", ".join(str(v) for v in public) if public else "none"
        fields = ", ".join(f"{f.name}={getattr(air, f.name)!r}" for f in dataclasses.fields(air))
        cls = f"{type(air).__module__}:{type(air).__qualname__}({fields})"
        print(f"  table {t}: {cls} ({air.fingerprint()}) at 2^{log_n} rows{split}; public inputs: {shown}")
    batched = [num_deep_terms(a.width, a.composition_parts, a.num_aux_columns) for a in airs]
    proven = min(config.proven_security_bits(h, t) for h, t in zip(heights, batched, strict=True))
    print(
        f"  parameters: blowup {config.blowup}, {config.num_queries} queries, {config.grinding_bits} grinding bits, "
        f"FRI final degree {config.fri_final_degree}, hash {config.hash}"
    )
    print(
        f"  security: {config.security_bits():.0f} bits conjectured (floor {args.min_security_bits:g}), "
        f"{proven:.0f} bits proven (Johnson regime, at 2^{max(heights)} rows)"
    )
    return OK


# -- the demo: ``jaxstark`` / ``python -m jaxstark`` with no subcommand ----------------------------------------------


def add_demo_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--example", choices=TABLE_EXAMPLES, default="fibonacci", help="machine: three tables on two buses")
    ap.add_argument("--log-rows", type=int, default=10, help="trace height is 2^LOG_ROWS (default 10)")
    ap.add_argument("--blowup", type=int, default=4, help="LDE blowup, a power of two >= 2 (default 4)")
    ap.add_argument("--queries", type=int, default=42)
    ap.add_argument("--grinding", type=int, default=16, help="proof-of-work bits (default 16)")
    ap.add_argument("--hash", choices=sorted(HASHES), default="blake3")
    ap.add_argument("--device", choices=["cpu", "gpu", "default"], default="cpu")


def run_demo(args, ap) -> int:
    """Plan, prove and verify an example; print the plan, the times and the proof's size."""
    if not (2 if args.example == "machine" else 1) <= args.log_rows <= 26:
        ap.error("--log-rows must be in [1, 26] ([2, 26] for the machine)")
    try:
        config = js.StarkConfig(
            blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash
        )
    except ValueError as exc:
        ap.error(str(exc))
    dev = device_from(args.device)
    with jax.default_device(dev):
        tables = example_tables(args.example, args.log_rows)
        plan, planned = _timed(lambda: js.plan([(air, trace) for air, trace, _ in tables], config=config))
        proof, first = _timed(lambda: js.prove(tables, config=config))
        proof, again = _timed(lambda: js.prove(tables, config=config))
    data = proof.to_bytes()
    statement_ = [(air, public) for air, _, public in tables]
    try:
        _, vfirst = _timed(lambda: js.verify(statement_, data, config=config))
        _, vagain = _timed(lambda: js.verify(statement_, data, config=config))
    except js.InvalidProof as exc:
        print(f"jaxstark: the proof was REJECTED: {exc}", file=sys.stderr)
        return REJECTED
    print(f"jaxstark: {args.example} on {dev.platform}:{dev.id} ({dev.device_kind})")
    how = "every round compiled or loaded from the compilation cache"
    print(f"  plan ({planned:.1f} s, {how}):\n    " + str(plan).replace("\n", "\n    "))
    for air, trace, _ in tables:
        aux = f", {air.num_aux_columns} aux" if air.num_aux_columns else ""
        print(f"  table      {air.name}: 2^{trace.shape[0].bit_length() - 1} rows x {air.width} columns{aux}")
    print(f"  config     blowup {config.blowup}, hash {config.hash}")
    print(f"  security   {config.security_report(args.log_rows)}")
    print(f"  prove      {1e3 * again:9.1f} ms  (first call {first:.2f} s, after planning)")
    print(f"  verify     {1e3 * vagain:9.1f} ms  (first call {1e3 * vfirst:.1f} ms; the verifier compiles nothing)")
    print(f"  proof      {len(data) / 1024:.1f} KiB:")
    for part, size in proof.size_breakdown().items():
        print(f"    {part:28} {size:9d} B")
    print("  verified   OK")
    print("  next: jaxstark plan --help, jaxstark prove --help, jaxstark verify --help, jaxstark bench --help")
    return OK


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t
