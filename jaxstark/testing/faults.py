"""Fault injection at the prover's device stages, for tests.

The prover reaches the device at three shared dispatch points of
:class:`~jaxstark.memory.executor.Runner`, whatever the hash or the table: every round's
executable (:data:`ROUNDS`), the copies of the round's arguments and domain tables to the device,
and the copies of results back to the host. Each is a named **site** (:data:`SITES`); the runner
reports every call of a site (:func:`reached`) and, when a fault is armed there, fails that
call the way a device fails -- so every hash and every round has the hooks by construction.

A fired fault is a device failure: in production posture the run stops with
:class:`~jaxstark.errors.DeviceFailure` and the plan's diagnostic (table, round, shape, every
term of the device set, the budget, the device); under ``JAXSTARK_TEST_ONLY_HOST_FALLBACK=1``
the stage is done on the host instead (a banner says so once) and the proof still verifies.

Arming, off by default (then a call of a site costs one dictionary update):

* ``with inject("composition", at=2):`` -- one-shot: the 2nd call of the site from now fails,
  once; ``sticky=True``: the 2nd call and every later one fail;
* ``JAXSTARK_FAULTS="composition@2,queries@1+"`` for a process (read when jaxstark is
  imported): ``site@N`` one-shot, ``site@N+`` sticky, counted from the start of the process.

:func:`counters` gives the calls and fires per site; :func:`reset` zeroes them.

The stages inside a round's executable are sites too (:data:`STAGES`: ``LDE``, ``tree build``,
``aux build``, ``FRI fold``, ``grinding``, ``query gather``), reached once per stage each
dispatch runs -- a FRI layer reaches ``tree build`` and ``FRI fold`` once, a FRI final round of
``k`` small layers ``k`` times. A stage fails the way it would on a device: its round's
executable fails, and the diagnostic names the stage and the round.

The sites themselves, their counters and the armed faults live in :mod:`jaxstark.faults` (what
the runner reports to); this module is the API for tests.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from jaxstark.faults import (
    ENV,
    ROUNDS,
    SITES,
    STAGES,
    TO_DEVICE,
    TO_HOST,
    InjectedFault,
    UnregisteredSite,
    arm,
    calls,
    check,
    disarm,
    fault,
    fires,
    reached,
    stages,
    zero,
)

__all__ = [
    "SITES", "ROUNDS", "STAGES", "TO_DEVICE", "TO_HOST", "ENV", "InjectedFault", "UnregisteredSite", "inject",
    "reached", "check", "stages", "fault", "counters", "reset",
]  # fmt: skip


@contextlib.contextmanager
def inject(site: str, at: int = 1, *, sticky: bool = False) -> Iterator[None]:
    """Arm ``site``: its ``at``-th call from now fails (and every later one when ``sticky``)."""
    armed = arm(site, at, sticky=sticky)
    try:
        yield
    finally:
        disarm(armed)


def counters() -> dict[str, tuple[int, int]]:
    """Per site: (calls, fires) since the process started or :func:`reset`."""
    return {site: (calls(site), fires(site)) for site in SITES}


def reset() -> None:
    """Zero the counters (armed faults count their calls from now on)."""
    zero()
