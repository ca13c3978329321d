"""The ``jaxstark`` command (also ``python -m jaxstark``).

* ``jaxstark`` with no subcommand: the demo -- plan, prove and verify an example (CPU by default);
* ``jaxstark plan`` -- every round's device set, the binding round and the verdict
  (:mod:`.plan`);
* ``jaxstark prove`` / ``jaxstark verify`` -- proof files (:mod:`.prove`, statement files in
  :mod:`.statement`);
* ``jaxstark bench`` -- the benchmark suite (:mod:`.bench`).

Options shared by the subcommands and the exit codes live in :mod:`.common`.
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxstark.cli import bench, plan, prove
from jaxstark.cli.common import DEVICE_FAILURE, EXIT_CODES, OVER_BUDGET, USAGE, CliError, subcommand

__all__ = ["main", "run"]

COMMANDS = ("plan", "prove", "verify", "bench", "demo")
BROKEN_PIPE = 141  # the output's reader went away (128 + SIGPIPE)

DESCRIPTION = """jaxstark: a STARK prover and verifier in JAX with a static device-memory planner.

With no subcommand, plans, proves and verifies an example (Fibonacci, 2^10 rows) and prints the
memory plan, the security level, the times and the proof's size (options: jaxstark demo --help)."""

EPILOG = f"""{EXIT_CODES}

environment: JAXSTARK_VRAM_BUDGET_MB (the budget, MiB), JAXSTARK_MAX_CHUNK_ROWS_LOG2,
JAXSTARK_CHUNK_GROUP, JAXSTARK_CACHE_DIR (where compiled rounds are kept across runs, default
~/.cache/jaxstark/xla; "off" to compile every run);
see the README's "Environment knobs"."""


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="jaxstark", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(title="subcommands", metavar="{plan,prove,verify,bench,demo}")
    plan.add_parser(sub)
    prove.add_parsers(sub)
    bench.add_parser(sub)
    demo = subcommand(sub, "demo", prove.run_demo, "plan, prove and verify an example (the default)",
                      "Plan, prove and verify an example and report times and proof size.")  # fmt: skip
    prove.add_demo_options(demo)
    return ap


def main(argv: list[str] | None = None) -> int:
    from jaxstark.errors import AirViolation, DeviceBudgetExceeded, DeviceFailure, JaxstarkError

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "demo")
    ap = parser()
    args = ap.parse_args(argv)
    try:
        return args.run(args, args.parser)
    except CliError as exc:
        print(f"jaxstark: error: {exc}", file=sys.stderr)
        return USAGE
    except DeviceBudgetExceeded as exc:
        print(f"jaxstark: refused: {exc}", file=sys.stderr)
        return OVER_BUDGET
    except DeviceFailure as exc:
        print(f"jaxstark: device failure: {exc}", file=sys.stderr)
        return DEVICE_FAILURE
    except (AirViolation, JaxstarkError, ValueError, TypeError) as exc:
        kind = "the trace violates its AIR" if isinstance(exc, AirViolation) else type(exc).__name__
        print(f"jaxstark: error ({kind}): {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("jaxstark: interrupted", file=sys.stderr)
        return 130


def run() -> None:
    """The ``jaxstark`` command's entry point (the console script, ``python -m jaxstark``):
    :func:`main`, then the process ends as soon as its output is flushed. JAX's exit handlers
    would first tear the runtime down -- every executable unloaded, every buffer and the
    device's pool freed -- which the operating system does anyway when the process ends: 0.4-0.6
    s of a 4-6 s GPU process (``benchmarks/RESULTS.md``). Every file the command writes is
    closed before :func:`main` returns, and every compiled program is in the persistent cache
    by then; a plan cut short (an error, an interrupt) may leave programs compiling, and they are
    waited for, as the usual exit would. A process exits the usual way where something must run
    as it ends: in a ``jax.distributed`` run (the handler that leaves the run's shutdown
    barrier), under a profiler, tracer or coverage tool (which writes what it gathered), and
    inside an interactive session or IPython (``%run -m jaxstark``), which must go on.

    When the reader of the output goes away (``jaxstark verify F | head -1``), the command stops
    quietly with exit code 141 (128 + SIGPIPE, as a shell reports a writer the pipe ended); any
    other failure to write the output is exit code 120, as Python's own exit gives it."""
    try:
        code = main()
    except BrokenPipeError:
        code = BROKEN_PIPE
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # a closed standard stream
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # a reader gone: nothing left to write, and nothing to write at exit either
            code = BROKEN_PIPE
            _to_devnull(stream)
        except OSError as exc:  # a full disk, an I/O error: said where it can be, as Python's exit would
            code = code or 120
            _to_devnull(stream)
            try:
                print(f"jaxstark: cannot write the output: {exc}", file=sys.__stderr__, flush=True)
            except (OSError, AttributeError, ValueError):
                pass
    executor = sys.modules.get("jaxstark.memory.executor")
    if executor is not None:
        executor.wait_for_compiles()
    import jax

    initialized = getattr(jax.distributed, "is_initialized", None)
    if initialized is None or initialized() or _observed() or _interactive() or not isinstance(code, int):
        sys.exit(code)
    os._exit(code)


def _to_devnull(stream) -> None:
    """Point ``stream``'s file descriptor at the null device (nothing more reaches a reader)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):  # a stream without a file descriptor of its own
        pass


def _interactive() -> bool:
    """Whether this process is an interactive session that runs the command (``python -i``,
    IPython, a Jupyter kernel): it must go on after the command."""
    return bool(sys.flags.interactive) or hasattr(sys, "ps1") or "IPython" in sys.modules


def _observed() -> bool:
    """Whether a profiler, tracer or coverage tool watches this process (``sys.setprofile``,
    ``sys.settrace`` or, from Python 3.12, a ``sys.monitoring`` tool)."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(i) is not None for i in range(6))
