"""LogUp: lookups and buses between tables, derived from interaction declarations.

An AIR declares **interactions** (:meth:`AIR.interactions`): on a named bus, a table *sends* or
*receives* a tuple of column expressions with a multiplicity expression, each a function of the
current row written with :class:`~jaxstark.air.Val` arithmetic. A statement is sound when, for
every bus, the multiset of sent tuples equals the multiset of received ones (with
multiplicities). LogUp proves it with two extension challenges ``beta, gamma`` drawn after every
table's main trace is committed:

    d(row) = beta - (bus_id + gamma v_0 + gamma^2 v_1 + ...)        (the tuple's fingerprint)
    T_b(row) = sum over the table's interactions k on bus b of  +-m_k / d_k   (+ send, - receive)
    S_b = sum over rows of T_b                                          (the table's contribution)

and the verifier checks ``sum over tables of S_b = 0`` for every bus ``b``.

**Aux columns** (extension field, derived -- never written by hand). Per bus, the table's
interactions are grouped ``interactions_per_column`` at a time (1 or 2, the AIR's choice). Every
group but the last gets a *term column* ``t = sum_{k in group} +-m_k / d_k``; the last group is
folded into the bus's *running column* ``s``, which accumulates ``T_b - S_b / n`` row by row from
``s[0] = 0``. Because the per-row increments sum to zero, the running column closes cyclically and
every constraint holds on all ``n`` rows (zerofier ``x^n - 1``, the last row included):

    term column:    t(cur) * prod_k d_k - sum_k +-m_k prod_{l != k} d_l = 0
    running column: (s(next) - s(cur) + S_b / n - sum_terms t(cur)) * prod_k d_k
                    - sum_k +-m_k prod_{l != k} d_l = 0                      (k over the last group)

**Degree cost of packing.** With ``deg d`` the largest degree among a tuple's expressions and
``deg m`` a multiplicity's degree, a group of one interaction has degree ``max(1 + deg d, deg m)``
(2 for plain columns), a group of two ``max(1 + 2 deg d, deg m + deg d)`` (3 for plain columns).
Packing two per column halves the aux columns (each costs three base columns in the LDE, the
tree and the openings) at the price of one degree -- which can raise the number of composition
parts when the main constraints are of lower degree. Degrees are inferred by evaluating the
expressions on symbolic degrees (:class:`Degree`), so they cannot be understated.

The bus's field identifier is the first 8 bytes of SHA-256 of its name, reduced mod p.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.errors import BusImbalance
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.kernels.inverse import ext_batch_inv

if TYPE_CHECKING:  # pragma: no cover
    from jaxstark.air import AIR

__all__ = [
    "Interaction",
    "Degree",
    "BusLayout",
    "AuxFrame",
    "bus_layout",
    "bus_id",
    "check_buses",
    "check_bus_arity",
    "aux_degrees",
]

P = gl.P


@dataclasses.dataclass(frozen=True)
class Interaction:
    """One send or receive on a bus. ``values(row)`` returns the tuple (a list of ``Val`` or
    ints), ``multiplicity(row)`` a ``Val`` or an int; ``row`` is the current row's main columns.
    Build with :meth:`send` / :meth:`receive`."""

    bus: str
    values: Callable[[Sequence[Val]], Sequence[Val | int]]
    multiplicity: Callable[[Sequence[Val]], Val | int]
    is_send: bool

    @classmethod
    def send(cls, bus: str, values, multiplicity=None) -> Interaction:
        return cls(bus, values, multiplicity or _one, True)

    @classmethod
    def receive(cls, bus: str, values, multiplicity=None) -> Interaction:
        return cls(bus, values, multiplicity or _one, False)

    @property
    def kind(self) -> str:
        return "send" if self.is_send else "receive"


def _one(row):
    return 1


class Degree:
    """A symbolic degree: evaluating a constraint expression on ``Degree`` objects gives its
    degree in the row's values (constants, ints or :meth:`Val.const`, have degree 0)."""

    __slots__ = ("d",)

    def __init__(self, d: int):
        self.d = d

    @staticmethod
    def of(x) -> int:
        if isinstance(x, Degree):
            return x.d
        if isinstance(x, (int, np.integer)) or (isinstance(x, Val) and x.constant() is not None):
            return 0
        raise TypeError(f"an interaction expression produced {type(x).__name__}; use Val arithmetic, ints and "
                        f"Val.const only")  # fmt: skip

    def _max(self, o):
        return Degree(max(self.d, Degree.of(o)))

    def _prod(self, o):
        return Degree(self.d + Degree.of(o))

    __add__ = __radd__ = __sub__ = __rsub__ = _max
    __mul__ = __rmul__ = _prod

    def __neg__(self):
        return self

    def __pow__(self, e: int):
        return Degree(self.d * e)


def bus_id(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little") % P


@dataclasses.dataclass(frozen=True)
class BusLayout:
    """How one bus's interactions map onto a table's aux columns."""

    bus: str
    groups: tuple[tuple[int, ...], ...]  # interaction indices, in declaration order
    first_column: int  # groups[:-1] are term columns first_column...; then the running column

    @property
    def term_columns(self) -> tuple[int, ...]:
        return tuple(range(self.first_column, self.first_column + len(self.groups) - 1))

    @property
    def running_column(self) -> int:
        return self.first_column + len(self.groups) - 1


def bus_layout(air: AIR) -> tuple[BusLayout, ...]:
    """The aux-column layout of ``air``: buses in name order, each with its groups."""
    interactions = air.interactions()
    per = air.interactions_per_column
    if per not in (1, 2):
        raise ValueError(f"{air.name}.interactions_per_column must be 1 or 2, got {per!r}")
    for k, it in enumerate(interactions):
        if not isinstance(it, Interaction):
            raise TypeError(f"{air.name}.interactions()[{k}] is {type(it).__name__}, not an Interaction")
        if not isinstance(it.bus, str) or not it.bus:
            raise ValueError(f"{air.name}.interactions()[{k}] needs a non-empty bus name")
    out, col = [], 0
    for bus in sorted({it.bus for it in interactions}):
        idx = [k for k, it in enumerate(interactions) if it.bus == bus]
        groups = tuple(tuple(idx[i : i + per]) for i in range(0, len(idx), per))
        out.append(BusLayout(bus, groups, col))
        col += len(groups)
    return tuple(out)


def _expression_degrees(air: AIR, it: Interaction) -> tuple[int, int, int]:
    """(tuple length, fingerprint degree, multiplicity degree) of one interaction."""
    row = [Degree(1)] * air.width
    values = list(it.values(row))
    if not values:
        raise ValueError(f"{air.name}: an interaction on bus {it.bus!r} sends an empty tuple")
    return len(values), max(Degree.of(v) for v in values), Degree.of(it.multiplicity(row))


def check_bus_arity(airs: Sequence[AIR]) -> None:
    """Raise ValueError when interactions on one bus (in any of ``airs``) carry tuples of
    different lengths. The fingerprint does not bind the length (``(a, b)`` and ``(a, b, 0)``
    have the same one), so such a statement could balance for the verifier while its multisets
    differ; refused by the prover and the verifier alike."""
    lengths: dict[str, dict[int, str]] = {}
    for t, air in enumerate(airs):
        for it in air.interactions():
            n = _expression_degrees(air, it)[0]
            lengths.setdefault(it.bus, {}).setdefault(n, f"table {t} ({air.name}) {it.kind}s {n} value(s)")
    for bus in sorted(lengths):
        if len(lengths[bus]) > 1:
            raise ValueError(
                f"bus {bus!r} carries tuples of different lengths: {'; '.join(lengths[bus].values())}; every "
                "interaction on a bus must send or receive tuples of one length"
            )


def aux_degrees(air: AIR) -> tuple[int, ...]:
    """Degree of each aux constraint (one per aux column, in column order)."""
    interactions = air.interactions()
    degs = [_expression_degrees(air, it) for it in interactions]
    out = []
    for lay in bus_layout(air):
        for group in lay.groups:
            dd = [degs[k][1] for k in group]
            numer = max(degs[k][2] + sum(dd) - dd[i] for i, k in enumerate(group))
            out.append(max(1 + sum(dd), numer))
    return tuple(out)


def signature(air: AIR) -> tuple:
    """What the fingerprint binds: per interaction its bus, kind, tuple length and degrees."""
    return tuple((it.bus, it.kind, *_expression_degrees(air, it)) for it in air.interactions())


# -- fingerprints and terms (shared by the prover's aux build, the composition and the verifier) --


def _fingerprint(values: Sequence[Val | int], bus: str, beta: Val, gamma: Val) -> Val:
    acc, g = None, gamma
    for v in values:
        term = g * v
        acc = term if acc is None else acc + term
        g = g * gamma
    return beta - (acc + bus_id(bus))


def _fractions(air: AIR, group: Sequence[int], cur: Sequence[Val], beta: Val, gamma: Val):
    """For one group: the denominators ``d_k`` and the signed multiplicities ``+-m_k``."""
    interactions = air.interactions()
    dens, nums = [], []
    for k in group:
        it = interactions[k]
        dens.append(_fingerprint(it.values(cur), it.bus, beta, gamma))
        m = it.multiplicity(cur)
        nums.append(m if it.is_send else (-m) % P if isinstance(m, (int, np.integer)) else -m)
    return dens, nums


def aux_constraints(air: AIR, log_n: int, cur: Sequence[Val], aux: AuxFrame) -> list[Val]:
    """The aux constraints (one per aux column, in column order), each to hold on every row."""
    n_inv = pow(1 << log_n, P - 2, P)
    aux_cur, aux_nxt, beta, gamma = aux.cur, aux.nxt, aux.beta, aux.gamma
    out = []
    for lay, total in zip(bus_layout(air), aux.sums, strict=True):
        terms = [aux_cur[c] for c in lay.term_columns]
        for j, group in enumerate(lay.groups):
            dens, nums = _fractions(air, group, cur, beta, gamma)
            if j < len(lay.groups) - 1:
                lhs = terms[j]
            else:
                r = lay.running_column
                lhs = aux_nxt[r] - aux_cur[r] + total * n_inv
                for t in terms:
                    lhs = lhs - t
            prod = dens[0] if len(dens) == 1 else dens[0] * dens[1]
            numer = nums[0] if len(dens) == 1 else nums[0] * dens[1] + nums[1] * dens[0]
            out.append(lhs * prod - numer)
    return out


def build_aux(air: AIR, trace: jax.Array, beta: jax.Array, gamma: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The aux columns ``(n, a, 3)`` of a trace, the bus contributions ``(buses, 3)``, and a flag
    set when some fingerprint is zero (the challenges hit a tuple; probability about n / p^3).
    Traceable."""
    n = trace.shape[0]
    cur = [Val(trace[:, i]) for i in range(trace.shape[1])]
    b, g = Val(beta, True), Val(gamma, True)
    interactions = air.interactions()
    layouts = bus_layout(air)
    # every fingerprint of the table, inverted in one batch
    dens, nums = [], []
    for k in range(len(interactions)):
        d, m = _fractions(air, (k,), cur, b, g)
        dens.append(jnp.broadcast_to(d[0].v, (n, 3)))
        mv = m[0].v if isinstance(m[0], Val) else jnp.asarray(np.uint64(m[0] % P))
        nums.append(jnp.broadcast_to(mv, (n,)))
    d_all = jnp.stack(dens)
    degenerate = jnp.any(jnp.all(d_all == np.uint64(0), axis=-1))
    fracs = fext._mul_base(ext_batch_inv(d_all), jnp.stack(nums))  # (K, n, 3)

    n_inv = np.uint64(pow(n, P - 2, P))
    columns, sums = [], []
    for lay in layouts:
        group_sums = [gl._sum(fracs[jnp.asarray(group)], 0) for group in lay.groups]
        columns += group_sums[:-1]
        row_total = gl._sum(jnp.stack(group_sums), 0)  # T_b per row
        total = gl._sum(row_total, 0)  # S_b
        increments = gl._sub(row_total, fext._mul_base(total, n_inv)[None])
        inclusive = jax.lax.associative_scan(gl._add, increments, axis=0)
        columns.append(jnp.concatenate([jnp.zeros((1, 3), jnp.uint64), inclusive[:-1]]))
        sums.append(total)
    return jnp.stack(columns, axis=1), jnp.stack(sums), degenerate


# -- the debug check ----------------------------------------------------------------------------


def check_buses(tables: Sequence[tuple[AIR, np.ndarray]]) -> None:
    """Raise :class:`BusImbalance` naming the first bus whose sends and receives differ as
    multisets, with a witness tuple and its net multiplicity. Evaluated on the host."""
    net: dict[str, dict[tuple, int]] = {}
    where: dict[tuple[str, tuple], list[str]] = {}
    for t, (air, trace) in enumerate(tables):
        trace = np.asarray(trace)
        n = trace.shape[0]
        cur = [Val(jnp.asarray(trace[:, i])) for i in range(trace.shape[1])]
        for it in air.interactions():
            vals = [
                np.broadcast_to(np.asarray(v.v if isinstance(v, Val) else v % P, np.uint64), (n,))
                for v in it.values(cur)
            ]
            m = it.multiplicity(cur)
            mult = np.broadcast_to(np.asarray(m.v if isinstance(m, Val) else m % P, np.uint64), (n,))
            keys, inverse = np.unique(np.stack(vals, axis=1), axis=0, return_inverse=True)
            totals = _sum_by_key(mult, inverse.reshape(-1), keys.shape[0])
            bus = net.setdefault(it.bus, {})
            for key, total in zip(map(tuple, keys.tolist()), totals, strict=True):
                if total:
                    signed = total if it.is_send else P - total
                    bus[key] = (bus.get(key, 0) + signed) % P
                    where.setdefault((it.bus, key), []).append(f"table {t} ({air.name}) {it.kind}s")
    for bus in sorted(net):
        for key, value in net[bus].items():
            if value:
                shown = value if value < P // 2 else value - P
                raise BusImbalance(
                    bus,
                    f"bus {bus!r} does not balance: tuple {key} has net multiplicity {shown} "
                    f"(sends minus receives; {', '.join(where[(bus, key)])})",
                )


def _sum_by_key(mult: np.ndarray, inverse: np.ndarray, count: int) -> list[int]:
    """Exact sums mod p of ``mult`` grouped by ``inverse`` (32-bit halves, so no overflow below
    2^32 rows)."""
    lo = np.zeros(count, np.uint64)
    hi = np.zeros(count, np.uint64)
    np.add.at(lo, inverse, mult & np.uint64(0xFFFFFFFF))
    np.add.at(hi, inverse, mult >> np.uint64(32))
    return [((int(h) << 32) + int(low)) % P for h, low in zip(hi.tolist(), lo.tolist(), strict=True)]


class AuxFrame(NamedTuple):
    """What the aux constraints read at a point (or over the LDE): the aux columns at the row and
    the next row, the LogUp challenges and the table's bus contributions (all ``Val``)."""

    cur: Sequence[Val]
    nxt: Sequence[Val]
    beta: Val
    gamma: Val
    sums: Sequence[Val]
