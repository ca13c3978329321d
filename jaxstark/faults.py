"""The prover's fault sites: named points where the runner reaches the device.

:class:`~jaxstark.memory.executor.Runner` reports every call of a site here (:func:`check`):
each round's executable and each stage it runs (the rounds and stages of
:mod:`jaxstark.rounds`), the copies of arguments and domain tables to the device
(:data:`TO_DEVICE`) and of results back to the host (:data:`TO_HOST`). A call counts, and fails
with :class:`InjectedFault` when a fault is armed to fire at it (:func:`arm`; the test API is
:mod:`jaxstark.testing.faults`). Off by default: then a call costs one dictionary update.

``JAXSTARK_FAULTS="composition@2,queries@1+"`` arms sites for a process (read when this module is
imported): ``site@N`` fails the N-th call once, ``site@N+`` the N-th and every later one.
"""

from __future__ import annotations

import dataclasses
import os

from jaxstark import rounds

__all__ = [
    "SITES", "ROUNDS", "STAGES", "TO_DEVICE", "TO_HOST", "ENV", "InjectedFault", "UnregisteredSite", "Arm", "arm",
    "disarm", "reached", "check", "stages", "fault", "calls", "fires", "zero",
]  # fmt: skip

ENV = "JAXSTARK_FAULTS"
TO_DEVICE = "host to device"
TO_HOST = "device to host"

ROUNDS: dict[str, str] = {name: r.description for name, r in rounds.ROUNDS.items()}
STAGES: dict[str, str] = dict(rounds.STAGES)
SITES: dict[str, str] = {
    **ROUNDS,
    **STAGES,
    TO_DEVICE: "a round's arguments, a table's domain tables or the statement's transcript copied to its device(s)",
    TO_HOST: "results copied back to the host (roots, flags, openings)",
}


class InjectedFault(RuntimeError):
    """The failure an armed site raises: treated by the runner as a device failure. ``site``:
    where it fired."""

    site: str = ""


class UnregisteredSite(KeyError):
    """A dispatch point that is not a registered site (every one must be)."""


@dataclasses.dataclass
class Arm:
    """An armed fault: it fires at call ``at`` of ``site`` counted from ``base`` (and at every
    later call when ``sticky``)."""

    site: str
    at: int
    sticky: bool
    base: int = 0


_CALLS: dict[str, int] = dict.fromkeys(SITES, 0)
_FIRES: dict[str, int] = dict.fromkeys(SITES, 0)
_ARMS: list[Arm] = []


def _valid(site: str, at: int) -> None:
    if site not in SITES:
        raise UnregisteredSite(f"no fault site {site!r}; the sites are {list(SITES)}")
    if isinstance(at, bool) or not isinstance(at, int) or at < 1:
        raise ValueError(f"a fault fires at call N >= 1 of its site, got {at!r}")


def _from_env(text: str) -> list[Arm]:
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
        _valid(site, at)
        arms.append(Arm(site, at, sticky))
    return arms


_ARMS.extend(_from_env(os.environ.get(ENV, "")))


def arm(site: str, at: int = 1, *, sticky: bool = False) -> Arm:
    """Arm ``site``: its ``at``-th call from now fails (and every later one when ``sticky``)."""
    _valid(site, at)
    armed = Arm(site, at, sticky, _CALLS[site])
    _ARMS.append(armed)
    return armed


def disarm(armed: Arm) -> None:
    """Take back a fault :func:`arm` armed."""
    _ARMS.remove(armed)


def reached(site: str) -> bool:
    """Count a call of ``site``; True when an armed fault fires at this call."""
    try:
        n = _CALLS[site] = _CALLS[site] + 1
    except KeyError:
        raise UnregisteredSite(f"dispatch point {site!r} is not a registered fault site") from None
    if not _ARMS:
        return False
    for a in _ARMS:
        k = n - a.base
        if a.site == site and (k == a.at or (a.sticky and k > a.at)):
            _FIRES[site] += 1
            return True
    return False


def stages(round_name: str, fri_layers: int = 0) -> tuple[str, ...]:
    """The stage sites a dispatch of round ``round_name`` runs, in order (``fri_layers``: the
    small layers of a FRI final round, each a tree and a fold); none for an unregistered name."""
    r = rounds.registered(round_name)
    return () if r is None else r.stage_sites(fri_layers)


def check(site: str) -> None:
    """Count a call of ``site`` (:func:`reached`) and raise its :func:`fault` when armed to fire."""
    if reached(site):
        raise fault(site)


def fault(site: str) -> InjectedFault:
    """The exception a fired site raises (its message names the site and the call)."""
    exc = InjectedFault(f"injected fault at site {site!r} (call {_CALLS[site]}; jaxstark.testing.faults)")
    exc.site = site
    return exc


def calls(site: str) -> int:
    """How often ``site`` was reached since the process started or :func:`zero`."""
    return _CALLS[site]


def fires(site: str) -> int:
    """How often a fault fired at ``site`` since the process started or :func:`zero`."""
    return _FIRES[site]


def zero() -> None:
    """Zero the counters (armed faults count their calls from now on)."""
    for site in SITES:
        _CALLS[site] = _FIRES[site] = 0
    for a in _ARMS:
        a.base = 0
