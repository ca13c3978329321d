"""A host array onto a device in row blocks from threads (jaxstark.transfer): the same array as
one ``device_put``, written in place, its blocks in flight counted by the plan and the model."""

import dataclasses

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
        return update(full, block, starts)

    monkeypatch.setattr(transfer, "_update", counted)
    return calls


@pytest.mark.parametrize("shape", [(1024, 7), (4, 64, 3), (2, 3, 16, 5), (512, 1)])
def test_blocks_give_the_array_device_put_gives(blocks, shape):
    x = np.random.default_rng(sum(shape)).integers(0, 2**64, size=shape, dtype=np.uint64)
    br, slots = transfer.layout(shape, 8, "cpu")
    count = int(np.prod(shape[:-1])) // br
    assert shape[-2] % br == 0 and br & (br - 1) == 0 and count >= 2 and slots == min(3, count)
    y = transfer.put(x, SHARDING)
    assert y.shape == x.shape and y.dtype == x.dtype and y.sharding == SHARDING
    np.testing.assert_array_equal(np.asarray(y), x)
    assert len(blocks) == count and len(set(blocks)) == count  # every block written once, in place
    assert transfer.in_flight(shape, np.uint64, "cpu") == slots * br * shape[-1] * 8 <= x.nbytes


def test_what_is_put_whole(blocks):
    x = np.arange(64 * 6, dtype=np.uint64).reshape(64, 6)
    for arr, sharding in ((x[:, ::2], SHARDING), (x, None), (jnp.asarray(x), SHARDING), (x[0], SHARDING)):
        assert not transfer.wanted(arr, sharding)
    np.testing.assert_array_equal(np.asarray(transfer.put(x[:, ::2], SHARDING)), x[:, ::2])
    assert blocks == []  # a strided view is put whole
    assert transfer.in_flight((64, 6), np.uint64, None) == 0  # spread over several devices


def test_defaults_put_host_arrays_whole_on_a_cpu_and_small_ones_anywhere(monkeypatch):
    monkeypatch.delenv(transfer.THREADS_ENV, raising=False)
    assert transfer.layout((1 << 22, 62), 8, "cpu") is None
    assert transfer.layout((1 << 10, 62), 8, "gpu") is None  # 496 KiB: under MIN_BYTES
    br, slots = transfer.layout((1 << 22, 62), 8, "gpu")  # 1984 MiB onto a GPU
    if transfer.threads() >= 2:
        assert slots == transfer.threads() and slots * br * 62 * 8 <= (1 << 22) * 62 * 8 // 4
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

    monkeypatch.setattr(transfer.jax, "device_put", failing)
    x = np.arange(1024 * 7, dtype=np.uint64).reshape(1024, 7)
    assert transfer.layout(x.shape, 8, "cpu")[0] == 64
    with pytest.raises(RuntimeError, match="link down"):
        transfer.put(x, SHARDING)


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
    assert plan.to_dict()["rounds"][1]["staging"] == staged
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
