"""The example AIRs (jaxstark.examples): honest traces satisfy them, tampered ones do not, the
declared degrees are the true degrees, and the same transition runs on extension values.

Constraint code is evaluated eagerly here (op by op): jitting the 315 degree-3 constraints of
the wide table as one XLA program takes far longer to compile than evaluating it eagerly.
"""

from __future__ import annotations

import functools
from math import comb

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.air import AIR, Val
from jaxstark.errors import AirViolation
from jaxstark.examples import (
    ALU_COLUMNS,
    DEFAULT_WIDTH,
    EXAMPLES,
    Alu,
    Fibonacci,
    WideRounds,
    alu_trace,
    fibonacci_trace,
    round_constants,
    wide_trace,
)
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.prover import check_trace

P = gl.P
NAMES = tuple(EXAMPLES)
LOG_NS = (3, 6, 10)


@functools.cache
def example(name: str, log_n: int, seed: int = 0):
    return EXAMPLES[name](log_n, seed)


def evaluate(air: AIR, cur_cols, nxt_cols, public, is_ext: bool = False) -> list[Val]:
    """Run ``air.transition`` on column arrays (base: ``[rows]``; extension: ``[rows, 3]`` or ``[3]``)."""
    cur = [Val(c, is_ext) for c in cur_cols]
    nxt = [Val(c, is_ext) for c in nxt_cols]
    pub = [Val.const(int(x)) for x in public]
    return air.transition(cur, nxt, [], pub)


def frame_columns(trace):
    """cur = rows 0..n-2, nxt = rows 1..n-1, as lists of column arrays."""
    return list(trace[:-1].T), list(trace[1:].T)


def violations(air: AIR, trace, public) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Indices of transition constraints nonzero on some frame, and the failing boundary triples."""
    cur, nxt = frame_columns(trace)
    values = evaluate(air, cur, nxt, public)
    bad_t = [k for k, v in enumerate(values) if bool(jnp.any(v.v != np.uint64(0)))]
    host = np.asarray(trace)
    bad_b = [(c, r, val) for c, r, val in air.boundary(public) if int(host[r, c]) != val % P]
    return bad_t, bad_b


# ---------------------------------------------------------------------------------------------
# Shapes, registry, constructors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", LOG_NS)
def test_trace_shape_and_canonical(name, log_n):
    air, trace, public = example(name, log_n)
    assert isinstance(air, AIR)
    chex.assert_shape(trace, (1 << log_n, air.width))
    chex.assert_type(trace, jnp.uint64)
    assert bool(jnp.all(trace < np.uint64(P)))
    assert len(public) == air.num_public_inputs
    assert all(isinstance(x, int) and 0 <= x < P for x in public)


def test_registry_and_layouts():
    assert set(EXAMPLES) == {"fibonacci", "alu", "wide"}
    assert isinstance(example("fibonacci", 3)[0], Fibonacci)
    assert isinstance(example("alu", 3)[0], Alu)
    assert isinstance(example("wide", 3)[0], WideRounds)
    assert Fibonacci().width == 2 and not Fibonacci().row_local
    assert Alu().width == len(ALU_COLUMNS) == 13 and Alu().row_local
    assert WideRounds().width == DEFAULT_WIDTH == 316 and WideRounds().row_local
    assert Fibonacci().constraint_degrees() == (1, 1)
    assert max(Alu().constraint_degrees()) == 3 and len(Alu().constraint_degrees()) == 15
    assert WideRounds().constraint_degrees() == (3,) * 315
    assert WideRounds(width=7).constraint_degrees() == (3,) * 6
    assert round_constants(4) == tuple((j + 1) * 0x9E3779B97F4A7C15 % P for j in range(3))
    assert Fibonacci().fingerprint().startswith("Fibonacci/w2/d1,1/")


def test_constructor_validation():
    for bad in (1, 0, -3):
        with pytest.raises(ValueError):
            WideRounds(width=bad)
        with pytest.raises(ValueError):
            wide_trace(3, width=bad)
    with pytest.raises(ValueError):
        Fibonacci(width=3)
    with pytest.raises(ValueError):
        Alu(width=4)
    with pytest.raises(ValueError):
        fibonacci_trace(0)
    with pytest.raises(ValueError):
        alu_trace(0)


def test_seeds():
    assert bool(jnp.array_equal(alu_trace(6, seed=0)[0], alu_trace(6, seed=0)[0]))
    assert not bool(jnp.array_equal(alu_trace(6, seed=0)[0], alu_trace(6, seed=1)[0]))
    assert bool(jnp.array_equal(wide_trace(4, width=9, seed=3)[0], wide_trace(4, width=9, seed=3)[0]))
    assert not bool(jnp.array_equal(wide_trace(4, width=9, seed=3)[0], wide_trace(4, width=9, seed=4)[0]))


def test_fibonacci_values():
    trace, (result,) = fibonacci_trace(3)
    assert np.asarray(trace).tolist() == [[1, 1], [1, 2], [2, 3], [3, 5], [5, 8], [8, 13], [13, 21], [21, 34]]
    assert result == 34


@pytest.mark.parametrize("log_n", [1, 5, 12, 13, 15])
def test_fibonacci_trace_follows_the_recurrence_mod_p(log_n):
    """The blocked trace builder against the recurrence on Python integers, row by row (from
    2^13 rows it stitches blocks of 4096 rows; the values pass p from row 92 on)."""
    trace, (result,) = fibonacci_trace(log_n)
    x, y, want = 1, 1, []
    for _ in range(1 << log_n):
        want.append([x, y])
        x, y = y, (x + y) % P
    assert np.asarray(trace).tolist() == want and result == want[-1][1]


def test_wide_values_against_python():
    width = 6
    trace, _ = wide_trace(3, width=width, seed=5)
    consts = round_constants(width)
    for row in np.asarray(trace).tolist():
        x = row[0]
        for j in range(width - 1):
            x = pow(x + consts[j], 3, P)
            assert row[j + 1] == x


def test_alu_covers_every_case():
    trace, _ = alu_trace(6)
    host = np.asarray(trace)
    ops = host[:, ALU_COLUMNS.index("op")]
    assert set(ops.tolist()) == {0, 1, 2, 3, 4}
    assert host[:, ALU_COLUMNS.index("out_is_zero")][ops != 0].any()  # a real row with a zero result
    assert int(ops[-1]) == 0  # ends on padding


# ---------------------------------------------------------------------------------------------
# Honest traces satisfy the AIR; tampered ones do not
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", LOG_NS)
def test_honest_trace_satisfies(name, log_n):
    air, trace, public = example(name, log_n)
    n = 1 << log_n
    cur, nxt = frame_columns(trace)
    values = evaluate(air, cur, nxt, public)
    assert len(values) == len(air.constraint_degrees())
    for v in values:
        assert not v.is_ext
        chex.assert_shape(v.v, (n - 1,))
        chex.assert_type(v.v, jnp.uint64)
        assert not bool(jnp.any(v.v != np.uint64(0)))
    host = np.asarray(trace)
    assert len(air.boundary(public)) == (3 if name == "fibonacci" else 0)
    for col, row, val in air.boundary(public):
        assert int(host[row, col]) == val
    if air.row_local:  # the honest generators also satisfy a row-local AIR on the last row
        last = evaluate(air, list(trace[-1:].T), list(trace[:1].T), public)
        assert all(not bool(jnp.any(v.v != np.uint64(0))) for v in last)


def test_row_local_tables_constrain_their_last_row():
    """A row-local AIR's constraints hold on every row, the last one included: the prover's debug
    check (and the composition round, which drops the last-row exclusion for such AIRs) sees a
    change in row n-1 that a frame-based check over rows 0..n-2 would miss."""
    air, trace, public = example("alu", 3)
    bumped = trace.at[-1, ALU_COLUMNS.index("out")].set(np.uint64(5))
    assert violations(air, bumped, public) == ([], [])  # frames 0..n-2 only
    with pytest.raises(AirViolation, match="fails at row 7"):
        check_trace(air, bumped, public)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", LOG_NS)
def test_tampered_cell_is_detected(name, log_n):
    air, trace, public = example(name, log_n)
    n = 1 << log_n
    rng = np.random.default_rng(1000 + log_n)
    if name == "alu":
        # In a muladd row with a nonzero result every column is read by some constraint (padding rows
        # leave their operands free, add rows leave c free, by design).
        host = np.asarray(trace)
        rows = np.flatnonzero((host[:, ALU_COLUMNS.index("is_muladd")] == 1) & (host[:, ALU_COLUMNS.index("out")] != 0))
        cells = [(int(rows[-1]), c) for c in range(air.width)]
    elif name == "wide":
        # Row n-1 is left out: under the AIR convention the last frame is not constrained, so a
        # row-local table's last row is free (see test_row_local_last_row_is_unconstrained).
        last = n - 2
        cells = [
            (int(rng.integers(n - 1)), 0),
            (int(rng.integers(n - 1)), air.width - 1),
            (last, int(rng.integers(air.width))),
        ]
    else:
        cells = [(r, c) for r in (0, n // 2, n - 1) for c in range(air.width)]
    for row, col in cells:
        bumped = trace.at[row, col].set(gl.add(trace[row, col], np.uint64(1)))
        bad_t, bad_b = violations(air, bumped, public)
        assert bad_t or bad_b, f"changing cell ({row}, {col}) went unnoticed"


def test_wrong_public_result_is_detected():
    air, trace, (result,) = example("fibonacci", 6)
    assert violations(air, trace, ((result + 1) % P,))[1] == [(1, -1, (result + 1) % P)]


# ---------------------------------------------------------------------------------------------
# Declared degrees are the true degrees
# ---------------------------------------------------------------------------------------------


def _forward_difference(values: list[int], k: int, start: int = 0) -> int:
    return sum((-1) ** (k - i) * comb(k, i) * values[start + i] for i in range(k + 1)) % P


@pytest.mark.parametrize("name", NAMES)
def test_declared_degrees_are_exact(name):
    """On random lines u + t v through the frame space, each constraint is a polynomial in t of
    degree <= its declared degree (every (d+1)-th finite difference vanishes) and of degree
    exactly d on some line (the d-th difference does not vanish)."""
    air, _, public = example(name, 3)
    degrees = air.constraint_degrees()
    lines, points = 4, max(degrees) + 2
    key = jax.random.key(7)
    k_u, k_v = jax.random.split(key)
    u = gl.random(k_u, (2 * air.width, lines, 1))
    v = gl.random(k_v, (2 * air.width, lines, 1))
    t = jnp.arange(points, dtype=jnp.uint64)[None, None, :]
    x = gl.add(u, gl.mul(v, jnp.broadcast_to(t, v.shape[:2] + (points,)))).reshape(2 * air.width, lines * points)
    values = evaluate(air, list(x[: air.width]), list(x[air.width :]), public)
    assert len(values) == len(degrees)
    for k, (val, d) in enumerate(zip(values, degrees, strict=True)):
        chex.assert_shape(val.v, (lines * points,))
        table = gl.to_int(val.v.reshape(lines, points)).tolist()
        for f in table:
            for s in range(points - d - 1):
                assert _forward_difference(f, d + 1, s) == 0, f"constraint {k} has degree > {d}"
        assert any(_forward_difference(f, d) != 0 for f in table), f"constraint {k} has degree < {d}"


@pytest.mark.parametrize("name", NAMES)
def test_row_local_ignores_next_row(name):
    air, trace, public = example(name, 3)
    cur, nxt = frame_columns(trace)
    other = list(gl.random(jax.random.key(3), (air.width, trace.shape[0] - 1)))
    a = evaluate(air, cur, nxt, public)
    b = evaluate(air, cur, other, public)
    same = all(bool(jnp.array_equal(x.v, y.v)) for x, y in zip(a, b, strict=True))
    assert same == air.row_local


# ---------------------------------------------------------------------------------------------
# The same transition on extension values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", LOG_NS)
def test_extension_agrees_with_base(name, log_n):
    air, trace, public = example(name, log_n)
    n = 1 << log_n
    cur, nxt = frame_columns(trace)
    base = jnp.stack([v.v for v in evaluate(air, cur, nxt, public)])  # [constraints, n - 1]
    # One frame at a time, as the verifier does: every Val holds a single element, shape (3,).
    rows = (n - 2,) if name == "wide" else (0, n // 2, n - 2)
    for row in rows:
        ext_cur = list(fext.embed(trace[row]))
        ext_nxt = list(fext.embed(trace[row + 1]))
        values = evaluate(air, ext_cur, ext_nxt, public, is_ext=True)
        assert len(values) == len(air.constraint_degrees())
        got = jnp.stack([v.v for v in values])
        assert all(v.is_ext for v in values)
        chex.assert_shape(got, (len(values), 3))
        chex.assert_trees_all_equal(got, fext.embed(base[:, row]))


@pytest.mark.parametrize("name", ["fibonacci", "alu"])
def test_extension_batched_and_random(name):
    """Batched extension frames ([rows, 3]) agree with the base values; genuinely extension
    inputs evaluate to extension outputs of the right shape, also when mixed with base values."""
    air, trace, public = example(name, 6)
    cur, nxt = frame_columns(trace)
    base = jnp.stack([v.v for v in evaluate(air, cur, nxt, public)])
    values = evaluate(air, list(fext.embed(trace[:-1].T)), list(fext.embed(trace[1:].T)), public, is_ext=True)
    got = jnp.stack([v.v for v in values])
    chex.assert_shape(got, (len(values), trace.shape[0] - 1, 3))
    chex.assert_trees_all_equal(got, fext.embed(base))

    z = fext.random(jax.random.key(11), (air.width,))
    zc = [Val(c, True) for c in z]
    zn = [Val(c, False) for c in trace[1]]  # next row stays in the base field
    mixed = air.transition(zc, zn, [], [Val.const(x) for x in public])
    for v in mixed:
        assert v.is_ext
        chex.assert_shape(v.v, (3,))
        assert bool(jnp.all(v.v < np.uint64(P)))
