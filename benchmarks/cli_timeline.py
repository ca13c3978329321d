"""A ``jaxstark`` command with a timeline: seconds since the interpreter started at each phase.

    python benchmarks/cli_timeline.py prove --device gpu --example alu --log-rows 22 --blowup 2 --no-progress

Runs the CLI (any of its commands, the same arguments) in this process and prints to stderr,
as ``[t] SECONDS PHASE (THREAD)``: jax and jaxstark imported, the backend started, then when
the plan, the proof, the example's trace (built on a thread beside the plan) and the statement's
writing begin and end, and when ``main`` returned. The process's wall time (``/usr/bin/time``)
less the last stamp is the interpreter's exit.
"""

import atexit
import sys
import threading
import time

T0 = time.perf_counter()


def mark(what: str) -> None:
    stamp = f"[t] {time.perf_counter() - T0:6.2f} {what} ({threading.current_thread().name})"
    print(stamp, file=sys.stderr, flush=True)


import jax  # noqa: E402

mark("import jax")
import jaxstark as js  # noqa: E402

mark("import jaxstark")
jax.devices()
mark("backend")
from jaxstark.cli import main  # noqa: E402
from jaxstark.cli import prove as cli_prove  # noqa: E402


def _stamped(owner, name: str) -> None:
    fn = getattr(owner, name)

    def stamped(*args, **kwargs):
        mark(f"{name} begins")
        try:
            return fn(*args, **kwargs)
        finally:
            mark(f"{name} ends")

    setattr(owner, name, stamped)


for owner, name in ((js, "plan"), (js, "prove"), (cli_prove, "tables_from"), (cli_prove.statement, "write")):
    _stamped(owner, name)
atexit.register(mark, "exit")

if __name__ == "__main__":
    code = main(sys.argv[1:])
    mark("main returned")
    sys.exit(code)
