"""A ``jaxstark`` command with a timeline: seconds since the script began at each phase.

    python benchmarks/cli_timeline.py prove --device gpu --example alu --log-rows 22 --blowup 2 --no-progress

Runs the CLI (any of its commands, the same arguments) in this process, ending it as the
command does (:func:`jaxstark.cli.run`), and prints to stderr, as ``[t] SECONDS PHASE
(THREAD)``: jax and jaxstark imported, the backend started, then when the plan, the proof, the
example's trace (built on a thread beside the plan) and the statement's writing begin and end,
and when ``main`` returned. The process's wall time less that last stamp is its exit (and the
interpreter's own start, a few tens of milliseconds before the first stamp's clock starts).
``benchmarks/bench_compile.py --cold-start`` reads these stamps (:func:`stamps`).
"""

import re
import sys
import threading
import time

T0 = time.perf_counter()
_ONE_AT_A_TIME = threading.Lock()  # a stamp is one line, whichever thread writes it


def mark(what: str) -> None:
    stamp = f"[t] {time.perf_counter() - T0:6.2f} {what} ({threading.current_thread().name})\n"
    with _ONE_AT_A_TIME:
        sys.stderr.write(stamp)
        sys.stderr.flush()


def stamps(stderr: str) -> dict[str, float]:
    """The stamps a run printed, by phase (``"plan ends"``: seconds since it started); a stamp
    is found wherever it stands in the text."""
    return {m.group(2): float(m.group(1)) for m in re.finditer(r"\[t\]\s+([0-9.]+) ([^()\n]+?) \([^()\n]*\)", stderr)}


def _stamped(owner, name: str) -> None:
    fn = getattr(owner, name)

    def stamped(*args, **kwargs):
        mark(f"{name} begins")
        try:
            return fn(*args, **kwargs)
        finally:
            mark(f"{name} ends")

    setattr(owner, name, stamped)


if __name__ == "__main__":
    import jax

    mark("import jax")
    import jaxstark as js

    mark("import jaxstark")
    jax.devices()
    mark("backend")
    import jaxstark.cli as cli
    from jaxstark.cli import prove as cli_prove

    for owner, name in ((js, "plan"), (js, "prove"), (cli_prove, "tables_from"), (cli_prove.statement, "write")):
        _stamped(owner, name)
    command = cli.main

    def main():
        try:
            return command(sys.argv[1:])
        finally:
            mark("main returned")

    cli.main = main
    cli.run()
