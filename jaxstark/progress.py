"""Progress of a proof, round by round: ``prove(..., progress=callback)``.

The prover calls ``callback(event)`` twice for every round it dispatches -- when the round
starts (``event.seconds is None``) and when its results are ready (``event.seconds`` is the wall
time, waited for with ``block_until_ready``). Events come in the plan's order, so ``step`` of
``steps`` is exact: the plan lists every round the proof will run, the commitments of a group of
row chunks computed again included. A unit is a table, or a group of row chunks proven together
under ``vmap`` (``"Alu chunks 0-7 of 16"``).

Before that, the first proof of a shape is planned, which compiles every round: each round the
planner compiles (or loads from JAX's persistent cache) is reported with ``phase == "plan"``
(``seconds``: its compilation; ``steps``: 0 -- the planner may try several orders and group
sizes, so the count is not known in advance).

Two callbacks ship with jaxstark: :class:`RoundTimes` (wall time per round name, for a summary)
and :class:`TerminalProgress` (one updating line on a terminal, one line per finished round
elsewhere, e.g. in a log file or a notebook).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["RoundEvent", "RoundTimes", "TerminalProgress", "combine", "format_bytes"]


def format_bytes(b: int) -> str:
    """Bytes in a readable unit (GiB, MiB or KiB)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if abs(b) >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b / 1024:.1f} KiB"


@dataclasses.dataclass(frozen=True)
class RoundEvent:
    """One round of the proof, starting (``seconds is None``) or done."""

    step: int  # 1-based position in the proof's rounds
    steps: int  # rounds in the proof
    unit: str  # the table or group of chunks ("all tables" for a shared step)
    round: str  # the round's name, as in the plan
    device: str  # where it runs ("gpu:0", "gpu:0+1" for a group split over two devices)
    planned_bytes: int  # the plan's device set for the round
    seconds: float | None = None
    phase: str = "prove"  # "plan": the round was compiled and measured (seconds: compiling it; steps: 0)

    @property
    def done(self) -> bool:
        return self.seconds is not None


class RoundTimes:
    """Wall time per round name (summed over tables and groups), and the proof's total."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def __call__(self, event: RoundEvent) -> None:
        if event.done and event.phase == "prove":
            self.seconds[event.round] = self.seconds.get(event.round, 0.0) + event.seconds
            self.calls[event.round] = self.calls.get(event.round, 0) + 1

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def table(self) -> str:
        """One line per round name: total time, share of the proof, dispatches."""
        total = self.total or 1.0
        lines = [f"{'round':20} {'time':>10} {'share':>6} {'calls':>6}"]
        for name, s in self.seconds.items():
            lines.append(f"{name:20} {1e3 * s:8.1f} ms {100 * s / total:5.1f}% {self.calls[name]:6d}")
        lines.append(f"{'total':20} {1e3 * self.total:8.1f} ms")
        return "\n".join(lines)


class TerminalProgress:
    """A progress display: on a terminal one line rewritten in place (step, unit, round, planned
    device set, elapsed), elsewhere one line per finished round."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.start: float | None = None
        self._width = 0

    def __call__(self, event: RoundEvent) -> None:
        now = time.perf_counter()
        self.start = now if self.start is None else self.start
        elapsed = now - self.start
        if event.phase == "plan":
            where = f"planning: compiled {event.unit}: {event.round} in {event.seconds:.1f} s"
            text = f"{where} (device set {format_bytes(event.planned_bytes)} on {event.device}; {elapsed:.1f} s)"
            self.stream.write(("\r" + text.ljust(self._width)) if self.tty else text + "\n")
            self._width = len(text) if self.tty else 0
            self.stream.flush()
            return
        where = f"[{event.step:>{len(str(event.steps))}}/{event.steps}] {event.unit}: {event.round}"
        if self.tty:
            state = "..." if not event.done else f"{1e3 * event.seconds:.1f} ms"
            text = f"{where} {state} (planned {format_bytes(event.planned_bytes)} on {event.device}; {elapsed:.1f} s)"
            pad = max(0, self._width - len(text))
            self._width = len(text)
            end = "\n" if event.done and event.step == event.steps else ""
            self.stream.write("\r" + text + " " * pad + end)
        elif event.done:
            self.stream.write(
                f"{where}: {1e3 * event.seconds:.1f} ms (planned {format_bytes(event.planned_bytes)} on "
                f"{event.device}; {elapsed:.1f} s)\n"
            )
        self.stream.flush()


def combine(*callbacks: Callable[[RoundEvent], None] | None) -> Callable[[RoundEvent], None]:
    """One callback that calls each of ``callbacks`` (None entries skipped) in turn."""
    live = [c for c in callbacks if c is not None]

    def call(event: RoundEvent) -> None:
        for c in live:
            c(event)

    return call
