"""The composition's transition constraints summed by a kernel (jaxstark.kernels.composition)
against the jnp twin and Python integers, bit for bit: in Pallas' interpreter on the CPU at small
sizes, the composition round on the kernel path against the round as XLA runs it, through the
Triton lowering (no GPU needed), and compiled on a GPU."""

import functools
import re
import types

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark.examples import Alu, alu_trace
from jaxstark.examples.fibonacci import Fibonacci, fibonacci_trace
from jaxstark.examples.machine import Program, RangeTable
from jaxstark.examples.shape import ShapeTable
from jaxstark.examples.wide import WideRounds
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.field.host import HostVal
from jaxstark.kernels import composition as kc
from jaxstark.protocol.algebra import aux_quotient
from jaxstark.protocol.statement import public_array
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r0_statement import fork_table, initial_transcript
from jaxstark.rounds.r1_aux_commit import aux_commit, logup_challenges
from jaxstark.rounds.r1_trace_commit import trace_commit
from jaxstark.rounds.r2_composition import composition


class Mixed(js.AIR):
    """Periodic columns, public inputs, constants of 2^63 and more (ints and Val.const, on either
    side), a next-row read."""

    width: int = eqx.field(static=True, default=3)

    @property
    def num_public_inputs(self):
        return 2

    def constraint_degrees(self):
        return (2, 2, 3)

    def transition(self, cur, nxt, periodic, public):
        return [
            js.Val.const((1 << 63) + 9) - nxt[0] + (cur[0] + periodic[0] * cur[1]) * js.Val.const(gl.P - 2),
            -(nxt[1] - cur[1] * public[1])
            + (gl.P - 7)
            + js.Val.const((1 << 63) + 1) * cur[0]
            + (js.Val.const(2) * js.Val.const(3) - js.Val.const(1 << 63))
            + (js.Val.const(1 << 63) + cur[2])
            - 5,
            (cur[2] - public[0]) ** 3 - periodic[1] * nxt[-1] - (1 << 63) - 5 * cur[0],
        ]

    def periodic_columns(self):
        return [[3, 1, 4, 1], [gl.P - 1, 2]]


class Miscounted(js.AIR):
    width: int = eqx.field(static=True, default=2)

    def constraint_degrees(self):
        return (1,)

    def transition(self, cur, nxt, periodic, public):
        return [nxt[0] - cur[0], nxt[1] - cur[1]]


class ExtValued(js.AIR):
    width: int = eqx.field(static=True, default=1)

    def constraint_degrees(self):
        return (1,)

    def transition(self, cur, nxt, periodic, public):
        return [cur[0] * js.Val(jnp.ones(3, jnp.uint64), True)]


AIRS = [Alu(), Fibonacci(), WideRounds(width=12), ShapeTable(width=5, degree=3), Mixed(), RangeTable()]


def _inputs(air, size, seed=0):
    key = jax.random.PRNGKey(seed)
    lde = gl.random(key, (size, air.width))
    periodic = gl.random(jax.random.fold_in(key, 1), (size, len(air.periodic_columns())))
    public = gl.random(jax.random.fold_in(key, 2), (air.num_public_inputs,))
    alphas = fext.random(jax.random.fold_in(key, 3), (len(air.constraint_degrees()),))
    return lde, periodic, public, alphas


@pytest.mark.parametrize("air", AIRS, ids=lambda a: a.name)
def test_the_kernel_is_the_twin(air):
    args = _inputs(air, 64)
    want = np.asarray(kc.reference_sum(*args, air=air, shift=4))
    tiling = kc.Tiling(rows=32)
    got = kc.transition_sum(*args, 0, air=air, shift=4, interpret=True, tiling=tiling)
    np.testing.assert_array_equal(np.asarray(got), want)
    # the last rows (their next rows wrap), two constraints per launch (the sums passed on)
    part = kc.transition_sum(
        *args, 32, air=air, shift=4, rows=32, interpret=True, tiling=tiling._replace(constraints=2)
    )
    np.testing.assert_array_equal(np.asarray(part), want[32:])


def test_the_kernel_under_vmap_is_the_twin_per_chunk():
    """Row chunks of a split table run their rounds under ``vmap``: the kernel batches."""
    air = Fibonacci()
    chunks = gl.random(jax.random.PRNGKey(4), (3, 32, air.width))
    _, periodic, public, alphas = _inputs(air, 32)
    run = lambda x: kc.transition_sum(x, periodic, public, alphas, 0, air=air, shift=2, interpret=True,  # noqa: E731
                                      tiling=kc.Tiling(rows=16))  # fmt: skip
    want = [np.asarray(kc.reference_sum(c, periodic, public, alphas, air=air, shift=2)) for c in chunks]
    np.testing.assert_array_equal(np.asarray(jax.vmap(run)(chunks)), np.stack(want))


def test_the_kernel_is_the_sum_of_python_integers():
    air, shift = Mixed(), 2
    lde, periodic, public, alphas = _inputs(air, 32, seed=5)
    lde = lde.at[7].set(gl.P - 1)  # the largest values
    got = np.asarray(kc.transition_sum(lde, periodic, public, alphas, 0, air=air, shift=shift, interpret=True,
                                       tiling=kc.Tiling(rows=8)))  # fmt: skip
    h = lambda a: [HostVal(int(v)) for v in np.asarray(a)]  # noqa: E731
    for r in (0, 7, 31):
        cs = air.transition(h(lde[r]), h(lde[(r + shift) % 32]), h(periodic[r]), h(public))
        want = HostVal(0)
        for c, a in zip(cs, np.asarray(alphas), strict=True):
            want = want + HostVal(a) * c
        np.testing.assert_array_equal(got[r], np.array(want.c, np.uint64))


def test_which_airs_the_kernel_takes():
    assert all(kc.supported(air) for air in AIRS)
    assert not kc.supported(Program())  # no transition constraints
    assert kc.supported(ShapeTable(width=kc.MAX_CONSTRAINTS))
    assert not kc.supported(ShapeTable(width=kc.MAX_CONSTRAINTS + 1))  # its launches' tracing time
    assert not kc.supported(ExtValued())  # an extension-valued constraint keeps the twin
    assert not kc.supported(Miscounted())  # two constraints, one degree: the twin names it
    lde, periodic, public, alphas = _inputs(Miscounted(), 32)
    with pytest.raises(ValueError, match="Miscounted.transition returned 2 constraints for 1 challenges"):
        kc.transition_sum(lde, periodic, public, alphas, 0, air=Miscounted(), shift=2, interpret=True)


def test_bad_shapes_are_refused_by_name():
    air = Mixed()
    lde, periodic, public, alphas = _inputs(air, 64)
    call = lambda *a, **k: kc.transition_sum(*a, 0, air=air, shift=2, interpret=True, **k)  # noqa: E731
    with pytest.raises(ValueError, match=r"the LDE must be \(2\^k, 3\)"):
        call(lde[:48], periodic[:48], public, alphas)
    with pytest.raises(ValueError, match="do not fit Mixed over 64 rows"):
        call(lde, periodic, public, alphas[:2])
    with pytest.raises(ValueError, match="24 rows is not a multiple of the block's 16 rows"):
        call(lde, periodic, public, alphas, rows=24, tiling=kc.Tiling(rows=16))
    with pytest.raises(ValueError, match="constraints per launch must be a positive int"):
        call(lde, periodic, public, alphas, tiling=kc.Tiling(constraints=0))


def _alu_round(log_n=4, blowup=2, air=None, trace_public=None):
    """The composition round's arguments for the ALU with its buses (or ``air`` on its trace)."""
    air, (trace, public) = air or Alu(bus=True), trace_public or alu_trace(log_n)
    cfg = js.StarkConfig(blowup=blowup)
    domain = make_domain(log_n, blowup)
    tr = initial_transcript((public_array(air, public),), airs=(air,), config=cfg, log_ns=(log_n,))
    r1, tr = trace_commit(trace, domain, tr, hash_name=cfg.hash)
    aux = None
    if air.num_aux_columns:
        tr, challenges = logup_challenges(tr)
        aux, tr = aux_commit(trace, domain, challenges, tr, air=air, hash_name=cfg.hash)
    tr = fork_table(tr, jnp.uint64(0))
    logup = (challenges, aux.sums) if aux else None
    return air, cfg, (domain, r1.lde, aux.lde if aux else None, logup, public_array(air, public), tr)


def test_the_round_takes_the_kernel_path_in_the_interpreter_and_keeps_its_values(monkeypatch):
    """The ALU with its buses (aux constraints beside the kernel's sum), whole and in row
    blocks, its aux quotient whole and in blocks of its own: the same round as XLA's. Only this
    round's kernel runs in the interpreter (the round's transforms and tree keep their ``jnp``
    twins, which other tests hold to theirs)."""
    from jaxstark.rounds import r2_composition

    air, cfg, args = _alu_round()

    def run(blocks):  # a new function object each time: traced again under the posture of the moment
        return jax.jit(lambda *a: composition.__wrapped__(*a, air=air, hash_name=cfg.hash, blocks=blocks))(*args)

    want = run(1)
    assert not bool(want[0].excess)
    calls = []

    def kernel_first(reference, kernel, *a):
        calls.append(kernel)
        return kernel(*a)

    posture = types.SimpleNamespace(kernel_platforms=lambda: ("cpu",), switch=kernel_first, interpret=lambda: True)
    monkeypatch.setattr(r2_composition, "kernels", posture)
    size, blowup = args[1].shape[0], cfg.blowup
    assert r2_composition.aux_blocks(size, blowup) == 1  # a small LDE: the aux quotient whole
    blocked = []
    spy = lambda *a: blocked.append(1) or aux_quotient(*a)  # noqa: E731  (only the blocked path calls the round's)
    monkeypatch.setattr(r2_composition, "aux_quotient", spy)
    for aux_rows, blocks in ((r2_composition.AUX_BLOCK_ROWS, 1), (r2_composition.AUX_BLOCK_ROWS, 2), (size // 4, 1)):
        monkeypatch.setattr(r2_composition, "AUX_BLOCK_ROWS", aux_rows)
        chex.assert_trees_all_equal(run(blocks), want)
        assert bool(blocked) == (aux_rows == size // 4), (aux_rows, blocks)  # the blocked path, and only there
    assert r2_composition.aux_blocks(size, blowup) == 4
    assert len(calls) == 3  # the kernel path was the one taken, whole and in blocks


def test_the_round_lowers_for_cuda_on_the_kernel_path(monkeypatch):
    """The whole round (the ALU with its buses), in row blocks, traced for CUDA as the executor
    traces it: the kernel is in the program. Fibonacci's too, with the base inversion kernel for
    its boundary rows' inverses."""
    from jaxstark import kernels

    fib = Fibonacci()
    assert fib.boundary([HostVal(0)] * fib.num_public_inputs)  # it has boundary rows to invert
    monkeypatch.setattr(kernels, "kernel_platforms", lambda: ("cuda",))
    for air, trace_public, name in ((None, None, None), (fib, fibonacci_trace(4), "batch_inv")):
        air, cfg, args = _alu_round(air=air, trace_public=trace_public)
        with kernels.lowering_for("cuda"):
            lowered = composition.trace(*args, air=air, hash_name=cfg.hash, blocks=2)
            text = lowered.lower(lowering_platforms=("cuda",)).as_text()
        assert "composition_transition_sum" in text
        assert name is None or re.search(rf'name = \\?"{name}"', text)  # the kernel's name, not a function's


def test_the_kernel_lowers_to_triton():
    S = jax.ShapeDtypeStruct
    for air, size in ((Alu(), 1 << 23), (Mixed(), 1 << 10)):
        shapes = [(size, air.width), (size, len(air.periodic_columns())), (air.num_public_inputs,),
                  (len(air.constraint_degrees()), 3)]  # fmt: skip
        args = (*(S(s, jnp.uint64) for s in shapes), 0)
        lowered = jax.jit(kc.transition_sum, static_argnames=("air", "shift")).trace(*args, air=air, shift=2)
        assert "triton" in lowered.lower(lowering_platforms=("cuda",)).as_text()


def test_a_launch_holds_only_its_groups_arithmetic():
    """A 62-constraint AIR in launches of 31: two kernels, together hardly larger than one of 62
    (the traced transition's other constraints are dropped before lowering)."""
    air, S = ShapeTable(width=62), jax.ShapeDtypeStruct
    args = (S((1 << 20, 62), jnp.uint64), S((1 << 20, 0), jnp.uint64), S((0,), jnp.uint64), S((62, 3), jnp.uint64), 0)

    def lowered(per_launch):
        fn = functools.partial(kc.transition_sum, air=air, shift=2, tiling=kc.Tiling(constraints=per_launch))
        return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()

    one, two = lowered(62), lowered(31)
    assert two.count("composition_transition_sum") == 2 * one.count("composition_transition_sum") > 0
    assert len(two) < 1.3 * len(one)


@pytest.mark.gpu
@pytest.mark.parametrize(("air", "log_size"), [(Alu(), 23), (Mixed(), 12), (ShapeTable(width=24, degree=3), 12)],
                         ids=str)  # fmt: skip
def test_the_kernel_matches_the_cpu_on_a_gpu(air, log_size):
    args = [np.asarray(a) for a in _inputs(air, 1 << log_size, seed=log_size)]
    gpu = jax.devices("gpu")[0]
    got = np.asarray(kc.transition_sum(*(jax.device_put(a, gpu) for a in args), 0, air=air, shift=2))
    with jax.default_device(jax.devices("cpu")[0]):
        want = np.asarray(kc.reference_sum(*map(jnp.asarray, args), air=air, shift=2))
    np.testing.assert_array_equal(got, want)
