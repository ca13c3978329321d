"""A host array onto a device in row blocks from threads (jaxstark.transfer): the same array as
one ``device_put``, written in place, its blocks in flight counted by the plan and the model."""

import dataclasses
import time
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark import transfer
from jaxstark.examples import EXAMPLES

SHARDING = jax.sharding.SingleDeviceSharding(jax.devices()[0])


def cfg():
    return js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4)


@pytest.fixture
def blocks(monkeypatch):
    """Row blocks on this (CPU) device too, for arrays of any size; three copy threads; every
    in-place update counted."""
    monkeypatch.setattr(transfer, "WHOLE_ON", frozenset())
    monkeypatch.setattr(transfer, "MIN_BYTES", 0)
    monkeypatch.setattr(transfer, "MIN_BLOCK_BYTES", 64)
    monkeypatch.setenv(transfer.THREADS_ENV, "3")
    calls = []
    update = transfer._update

    def counted(full, block, starts):
        calls.append(tuple(int(s) for s in starts))
        before = full.unsafe_buffer_pointer()
        out = update(full, block, starts)
        assert full.is_deleted() and out.unsafe_buffer_pointer() == before  # donated: written in place
        return out

    monkeypatch.setattr(transfer, "_update", counted)
    return calls


@pytest.mark.parametrize("shape", [(1024, 7), (4, 64, 3), (2, 3, 16, 5), (512, 1)])
def test_blocks_give_the_array_device_put_gives(blocks, shape):
    x = np.random.default_rng(sum(shape)).integers(0, 2**64, size=shape, dtype=np.uint64)
    br, slots = transfer.layout(shape, 8, "cpu")
    count = int(np.prod(shape[:-1])) // br
    assert shape[-2] % br == 0 and br & (br - 1) == 0 and slots == min(3, count // 4) >= 2
    y = transfer.put(x, SHARDING)
    assert y.shape == x.shape and y.dtype == x.dtype and y.sharding == SHARDING
    np.testing.assert_array_equal(np.asarray(y), x)
    assert len(blocks) == count and len(set(blocks)) == count  # every block written once, in place
    assert transfer.in_flight(shape, np.uint64, "cpu") == slots * br * shape[-1] * 8 <= x.nbytes


def test_what_is_put_whole(blocks):
    x = np.arange(64 * 6, dtype=np.uint64).reshape(64, 6)
    for arr, sharding in ((x, None), (jnp.asarray(x), SHARDING), (x[0], SHARDING), (x[:4], SHARDING)):
        assert not transfer.wanted(arr, sharding)  # spread, on a device already, 1-D, too few blocks
    assert transfer.in_flight((64, 6), np.uint64, None) == 0
    np.testing.assert_array_equal(np.asarray(transfer.put(x[:4], SHARDING)), x[:4])
    assert blocks == []


@pytest.mark.parametrize("view", ["strided", "fortran"])
def test_arrays_that_are_not_contiguous_go_in_blocks_too(blocks, view):
    x = np.random.default_rng(3).integers(0, 2**64, size=(1024, 14), dtype=np.uint64)
    x = x[:, ::2] if view == "strided" else np.asfortranarray(x)
    assert transfer.wanted(x, SHARDING)
    np.testing.assert_array_equal(np.asarray(transfer.put(x, SHARDING)), x)
    assert len(blocks) == 1024 // transfer.layout(x.shape, 8, "cpu")[0]


def test_at_most_slots_blocks_are_on_the_device_at_once(blocks, monkeypatch):
    """The bound the plan counts: every block the copy threads have put and the main thread has
    not yet written (and dropped) is alive; there are never more than ``slots`` of them."""
    put, update = jax.device_put, transfer._update
    alive, most = [], [0]

    def slow_put(x, s=None, **kw):
        time.sleep(0.005)
        out = put(x, s, **kw)
        alive.append(weakref.ref(out))
        most[0] = max(most[0], sum(r() is not None for r in alive))
        return out

    def counting(full, block, starts):
        most[0] = max(most[0], sum(r() is not None for r in alive))
        time.sleep(0.02)  # a slow writer: every free thread lands its block meanwhile
        return update(full, block, starts)

    monkeypatch.setattr(transfer.jax, "device_put", slow_put)
    monkeypatch.setattr(transfer, "_update", counting)
    x = np.arange(1024 * 7, dtype=np.uint64).reshape(1024, 7)
    br, slots = transfer.layout(x.shape, 8, "cpu")
    np.testing.assert_array_equal(np.asarray(transfer.put(x, SHARDING)), x)
    assert len(alive) == 1024 // br > 2 * slots and most[0] == slots


def test_defaults_put_host_arrays_whole_on_a_cpu_and_small_ones_anywhere(monkeypatch):
    monkeypatch.setenv(transfer.THREADS_ENV, "16")
    assert transfer.layout((1 << 22, 62), 8, "cpu") is None
    assert transfer.layout((1 << 10, 62), 8, "gpu") is None  # 496 KiB: under MIN_BYTES
    assert transfer.layout((1 << 17, 64), 8, "gpu") is None  # 64 MiB: four blocks, one thread's worth
    for shape, slots in (((1 << 22, 62), 16), ((1 << 22, 13), 8), ((1 << 18, 62), 2), ((16, 1 << 14, 62), 4)):
        br, got = transfer.layout(shape, 8, "gpu")
        nbytes = int(np.prod(shape)) * 8
        assert got == slots and shape[-2] % br == 0, shape
        assert br * shape[-1] * 8 * 16 >= transfer.MIN_BLOCK_BYTES  # blocks of at least 1 MiB
        assert transfer.in_flight(shape, np.uint64, "gpu") == slots * br * shape[-1] * 8 <= nbytes // 4, shape
    assert transfer.layout((1 << 20, 61), 8, "gpu") is not None
    assert transfer.layout(((1 << 20) + 1, 62), 8, "gpu") is None  # odd rows: one-row blocks, put whole
    monkeypatch.setenv(transfer.THREADS_ENV, "0")
    assert transfer.layout((1 << 22, 62), 8, "gpu") is None


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_bad_thread_counts_are_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(transfer.THREADS_ENV, value)
    with pytest.raises(ValueError, match=transfer.THREADS_ENV):
        transfer.threads()


def test_a_failed_block_copy_is_raised(blocks, monkeypatch):
    put = jax.device_put

    def failing(x, s=None, **kw):
        if x.shape[0] == 64 and x[0, 0] == 64 * 7:  # the second block
            raise RuntimeError("link down")
        return put(x, s, **kw)

    running = [0]

    def slow(x, s=None, **kw):
        running[0] += 1
        try:
            time.sleep(0.01)
            return failing(x, s, **kw)
        finally:
            running[0] -= 1

    monkeypatch.setattr(transfer.jax, "device_put", slow)
    x = np.arange(1024 * 7, dtype=np.uint64).reshape(1024, 7)
    assert transfer.layout(x.shape, 8, "cpu")[0] == 64
    with pytest.raises(RuntimeError, match="link down"):
        transfer.put(x, SHARDING)
    assert running[0] == 0  # no copy outlives the failed call


def test_a_proof_from_blocks_is_the_same_and_its_plan_counts_them(blocks):
    """A numpy trace copied in blocks gives the proof bytes of one ``device_put``; the plan adds
    the blocks in flight to the rounds that take the trace (and only those), the model the same."""
    air, trace, public = EXAMPLES["fibonacci"](5)
    trace = np.asarray(trace)
    plan = js.plan(air, trace, cfg())
    staged = transfer.in_flight(trace.shape, trace.dtype, "cpu")
    assert staged > 0
    assert {r.name: r.staging for r in plan.rounds if r.staging} == {"trace commit": staged}
    assert "copied in row blocks" in plan.trace_residency()
    assert plan.to_dict()["rounds"][0]["staging"] == staged  # the trace commit, the first round
    proof = js.prove(air, trace, public, cfg()).to_bytes()
    trace_blocks = [b for b in blocks if len(b) == 2]  # (with MIN_BYTES 0 the FRI labels go in blocks too)
    assert len(trace_blocks) == trace.shape[0] // transfer.layout(trace.shape, 8, "cpu")[0]
    m = js.memory.model(air, 5, cfg(), backend="cpu", host_trace=True)
    assert [r.staging for r in m.rounds] == [r.staging for r in plan.rounds]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(transfer.THREADS_ENV, "0")  # every array put whole
        assert all(r.staging == 0 for r in js.plan(air, trace, cfg()).rounds)
        assert js.prove(air, trace, public, cfg()).to_bytes() == proof


def test_blocks_in_flight_count_where_they_bind(blocks):
    """When the blocks in flight exceed what a round adds to its arguments, the copy-in is the
    round's device set: the larger of the two counts, and its terms still add up to it."""
    air, trace, _ = EXAMPLES["fibonacci"](5)
    plan = js.plan(air, np.asarray(trace), cfg())
    r = next(r for r in plan.rounds if r.name == "trace commit")
    added = r.outputs + r.temporaries - r.aliased
    big = dataclasses.replace(r, staging=added + 1000)
    assert big.total == r.total + 1000 == big.resident_bytes + big.arguments + big.staging
    assert sum(plan.terms(big).values()) == big.total
    assert "host trace blocks in flight (copied in before the round)" in plan.terms(big)
    assert sum(plan.terms(r).values()) == r.total
    m = js.memory.model(air, 5, cfg(), backend="cpu", host_trace=True)
    mr = next(x for x in m.rounds if x.name == "trace commit")
    big = dataclasses.replace(mr, staging=mr.output_bytes + mr.temporaries + 1000)
    assert sum(big.terms().values()) == big.total == mr.held_bytes + mr.argument_bytes + big.staging


def test_the_model_counts_blocks_of_a_large_gpu_host_trace(monkeypatch):
    monkeypatch.setenv(transfer.THREADS_ENV, "16")
    m = js.memory.model(None, 22, js.StarkConfig(blowup=2), width=62, backend="gpu", host_trace=True)
    staged = transfer.in_flight((1 << 22, 62), np.uint64, "gpu")
    assert staged == (1 << 22) * 62 * 8 // 4
    assert {r.name: r.staging for r in m.rounds if r.staging} == {"trace commit": staged}
    assert all(r.staging == 0 for r in js.memory.model(None, 22, js.StarkConfig(blowup=2), width=62,
                                                        backend="gpu").rounds)  # fmt: skip
