"""Fault injection at the prover's device stages, for tests.

The prover reaches the device at three shared dispatch points of
:class:`~jaxstark.memory.executor.Runner`, whatever the hash or the table: every round's
executable (:data:`ROUNDS`), the copies of the round's arguments and domain tables to the device,
and the copies of results back to the host. Each is a named **site** (:data:`SITES`); the runner
reports every call of a site here (:func:`reached`) and, when a fault is armed there, fails that
call the way a device fails -- so every hash and every round has the hooks by construction.

A fired fault is a device failure: in production posture the run stops with
:class:`~jaxstark.errors.DeviceFailure` and the plan's diagnostic (table, round, shape, every
term of the device set, the budget, the device); under ``JAXSTARK_TEST_ONLY_HOST_FALLBACK=1``
the stage is done on the host instead (a banner says so once) and the proof still verifies.

Arming, off by default (then a call of a site costs one dictionary update):

* ``with inject("composition", at=2):`` -- one-shot: the 2nd call of the site from now fails,
  once; ``sticky=True``: the 2nd call and every later one fail;
* ``JAXSTARK_FAULTS="composition@2,queries@1+"`` for a process (read when this module is
  imported): ``site@N`` one-shot, ``site@N+`` sticky, counted from the start of the process.

:func:`counters` gives the calls and fires per site; :func:`reset` zeroes them.

The stages inside a round's executable are sites too (:data:`STAGES`: ``LDE``, ``tree build``,
``aux build``, ``DEEP``, ``FRI fold``, ``grinding``, ``query gather``), reached once per stage
each dispatch runs -- a DEEP + FRI round of ``k`` layers reaches ``FRI fold`` and ``tree build``
``k`` times. A stage fails the way it would on a device: its round's executable fails, and the
diagnostic names the stage and the round.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator

__all__ = [
    "SITES", "ROUNDS", "STAGES", "TO_DEVICE", "TO_HOST", "ENV", "InjectedFault", "UnregisteredSite", "inject",
    "reached", "check", "stages", "fault", "counters", "reset",
]  # fmt: skip

ENV = "JAXSTARK_FAULTS"
TO_DEVICE = "host to device"
TO_HOST = "device to host"

# every round the prover dispatches (jaxstark.prover.schedule), and what runs in it
ROUNDS: dict[str, str] = {
    "statement": "the statement absorbed into the transcript",
    "trace commit": "LDE of the main trace and its Merkle tree",
    "trace commit again": "the same, recomputed for a group of row chunks before its rounds 2-5",
    "logup challenges": "the LogUp challenges drawn",
    "aux commit": "LogUp aux columns built, their LDE and Merkle tree",
    "aux commit again": "the same, recomputed for a group of row chunks",
    "fork": "a table's (or chunk's) transcript forked",
    "composition": "the constraints over the LDE, the composition parts and their tree",
    "out-of-domain": "every polynomial evaluated at the out-of-domain point",
    "DEEP + FRI": "the DEEP sum over the LDE, each FRI fold and its tree, the final polynomial",
    "queries": "grinding, query indices, the opened rows and their Merkle paths",
}
# the stages inside the rounds' executables: a stage's fault fails the executable that runs it
# (one call per stage a dispatch runs: a DEEP + FRI round of k layers calls "FRI fold" k times)
STAGES: dict[str, str] = {
    "LDE": "a coset low-degree extension: the main and aux traces, the composition parts",
    "tree build": "a Merkle tree: main, aux, composition parts, each FRI layer",
    "aux build": "the LogUp aux columns from the trace and the challenges",
    "DEEP": "the DEEP sum over the LDE",
    "FRI fold": "one FRI fold (a call per layer)",
    "grinding": "the proof-of-work search",
    "query gather": "the opened rows and their Merkle paths",
}
_ROUND_STAGES: dict[str, tuple[str, ...]] = {
    "trace commit": ("LDE", "tree build"),
    "aux commit": ("aux build", "LDE", "tree build"),
    "composition": ("LDE", "tree build"),
    "queries": ("grinding", "query gather"),
}
SITES: dict[str, str] = {
    **ROUNDS,
    **STAGES,
    TO_DEVICE: "a round's arguments or a table's domain tables copied to its device(s)",
    TO_HOST: "results copied back to the host (roots, flags, openings)",
}


class InjectedFault(RuntimeError):
    """The failure an armed site raises: treated by the runner as a device failure. ``site``:
    where it fired."""

    site: str = ""


class UnregisteredSite(KeyError):
    """A dispatch point that is not a registered site (every one must be)."""


@dataclasses.dataclass
class _Arm:
    site: str
    at: int  # fires at this call, counted from ``base``
    sticky: bool
    base: int = 0


_CALLS: dict[str, int] = dict.fromkeys(SITES, 0)
_FIRES: dict[str, int] = dict.fromkeys(SITES, 0)
_ARMS: list[_Arm] = []


def _check(site: str, at: int) -> None:
    if site not in SITES:
        raise UnregisteredSite(f"no fault site {site!r}; the sites are {list(SITES)}")
    if isinstance(at, bool) or not isinstance(at, int) or at < 1:
        raise ValueError(f"a fault fires at call N >= 1 of its site, got {at!r}")


def _from_env(text: str) -> list[_Arm]:
    arms = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        site, sep, when = item.rpartition("@")
        sticky = when.endswith("+")
        try:
            at = int(when.rstrip("+"))
        except ValueError:
            at = -1
        if not sep or at < 1:
            raise ValueError(f"{ENV}: {item!r} is not SITE@N or SITE@N+ (N >= 1)")
        _check(site, at)
        arms.append(_Arm(site, at, sticky))
    return arms


_ARMS.extend(_from_env(os.environ.get(ENV, "")))


def reached(site: str) -> bool:
    """Count a call of ``site``; True when an armed fault fires at this call."""
    try:
        n = _CALLS[site] = _CALLS[site] + 1
    except KeyError:
        raise UnregisteredSite(f"dispatch point {site!r} is not a registered fault site") from None
    if not _ARMS:
        return False
    for arm in _ARMS:
        k = n - arm.base
        if arm.site == site and (k == arm.at or (arm.sticky and k > arm.at)):
            _FIRES[site] += 1
            return True
    return False


def stages(round_name: str, fri_layers: int = 0) -> tuple[str, ...]:
    """The stage sites a dispatch of round ``round_name`` runs, in order (``fri_layers``: the
    folds of a DEEP + FRI round, each with its tree)."""
    if round_name == "DEEP + FRI":
        return ("DEEP", *("FRI fold", "tree build") * fri_layers)
    return _ROUND_STAGES.get(round_name.removesuffix(" again"), ())


def check(site: str) -> None:
    """Count a call of ``site`` (:func:`reached`) and raise its :func:`fault` when armed to fire."""
    if reached(site):
        raise fault(site)


def fault(site: str) -> InjectedFault:
    """The exception a fired site raises (its message names the site and the call)."""
    exc = InjectedFault(f"injected fault at site {site!r} (call {_CALLS[site]}; jaxstark.testing.faults)")
    exc.site = site
    return exc


@contextlib.contextmanager
def inject(site: str, at: int = 1, *, sticky: bool = False) -> Iterator[None]:
    """Arm ``site``: its ``at``-th call from now fails (and every later one when ``sticky``)."""
    _check(site, at)
    arm = _Arm(site, at, sticky, _CALLS[site])
    _ARMS.append(arm)
    try:
        yield
    finally:
        _ARMS.remove(arm)


def counters() -> dict[str, tuple[int, int]]:
    """Per site: (calls, fires) since the process started or :func:`reset`."""
    return {site: (_CALLS[site], _FIRES[site]) for site in SITES}


def reset() -> None:
    """Zero the counters (armed faults count their calls from now on)."""
    for site in SITES:
        _CALLS[site] = _FIRES[site] = 0
    for arm in _ARMS:
        arm.base = 0
