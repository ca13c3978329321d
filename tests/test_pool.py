"""The simulated allocator pool (jaxstark.memory.pool) against the real allocator's log, a
slow twin on random sequences, and the planner's use of it."""

from __future__ import annotations

import importlib
import json
import random
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.memory import executor
from jaxstark.memory.pool import MAX_INTERNAL_FRAGMENTATION, MIN_CHUNK, Pool, Replay, rounded

DATA = Path(__file__).parent / "data"
MIB = 1 << 20


class SlowPool:
    """The same rules, written as plainly as possible: a list of [address, size, used] chunks
    by address, scanned whole for the best fit, merged by a full pass after each free."""

    def __init__(self, size: int = 1 << 48):
        self.chunks = [[0, size, False]]
        self.asked = {}

    def allocate(self, nbytes: int) -> int:
        want = -(-nbytes // 256) * 256
        fits = [c for c in self.chunks if not c[2] and c[1] >= want]
        best = min(fits, key=lambda c: (c[1], c[0]))
        if best[1] >= 2 * want or best[1] - want >= 128 * MIB:
            i = self.chunks.index(best)
            self.chunks.insert(i + 1, [best[0] + want, best[1] - want, False])
            best[1] = want
        best[2] = True
        self.asked[best[0]] = nbytes
        return best[0]

    def free(self, address: int) -> None:
        (chunk,) = [c for c in self.chunks if c[0] == address and c[2]]
        chunk[2] = False
        del self.asked[address]
        merged = []
        for c in self.chunks:
            if merged and not merged[-1][2] and not c[2]:
                merged[-1][1] += c[1]
            else:
                merged.append(list(c))
        self.chunks = merged

    @property
    def in_use(self) -> int:
        return sum(c[1] for c in self.chunks if c[2])


def test_a_free_chunk_under_twice_the_request_is_handed_out_whole():
    p = Pool()
    a = p.allocate(32 * MIB)
    b = p.allocate(MIB)  # keeps a's chunk from merging with the rest when a is freed
    p.free(a)
    c = p.allocate(24 * MIB)  # the 32 MiB chunk is the best fit and under 48 MiB: whole
    assert c == a and p.in_use == 33 * MIB and p.requested == 25 * MIB and p.excess == 8 * MIB
    p.free(c)
    d = p.allocate(16 * MIB)  # twice the request: split
    assert d == a and p.excess == 0 and p.in_use == 17 * MIB
    assert p.chunks()[:3] == [(0, 16 * MIB, True), (16 * MIB, 16 * MIB, False), (32 * MIB, MIB, True)]
    p.free(b)
    p.free(d)  # everything merges back into one free chunk
    assert p.chunks() == [(0, 1 << 48, False)] and p.in_use == 0 and p.peak == 33 * MIB


def test_a_chunk_far_larger_than_the_request_is_split_even_under_twice_it():
    p = Pool()
    a = p.allocate(300 * MIB)
    p.allocate(MIB)
    p.free(a)
    p.allocate(200 * MIB)  # 300 < 400 MiB, but 100 MiB over: under the 128 MiB limit, whole
    assert p.excess == 100 * MIB
    q = Pool()
    a = q.allocate(400 * MIB)
    q.allocate(MIB)
    q.free(a)
    q.allocate(250 * MIB)  # 400 < 500 MiB, but 150 MiB over: split
    assert q.excess == 0 and MAX_INTERNAL_FRAGMENTATION == 128 * MIB


def test_requests_are_rounded_and_bad_ones_refused():
    assert [rounded(n) for n in (1, 256, 257, 1000)] == [256, 256, 512, 1024] and MIN_CHUNK == 256
    p = Pool()
    p.allocate(1)
    assert (p.in_use, p.requested, p.excess) == (256, 1, 255)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="nbytes must be a positive int"):
            p.allocate(bad)
    with pytest.raises(ValueError, match="no chunk in use"):
        p.free(12345)
    with pytest.raises(MemoryError, match="no free chunk"):
        Pool(1 << 20).allocate(2 << 20)


@pytest.mark.parametrize("seed", range(6))
def test_the_pool_agrees_with_its_slow_twin_on_random_sequences(seed):
    rng = random.Random(seed)
    fast, slow = Pool(), SlowPool()
    live = []
    for _ in range(400):
        if live and rng.random() < 0.45:
            address = live.pop(rng.randrange(len(live)))
            fast.free(address)
            slow.free(address)
        else:
            nbytes = rng.choice([rng.randrange(1, 4096), rng.randrange(1, 64 * MIB), rng.randrange(1, 400 * MIB)])
            address = fast.allocate(nbytes)
            assert slow.allocate(nbytes) == address
            live.append(address)
        assert fast.in_use == slow.in_use
        assert fast.chunks() == [tuple(c) for c in slow.chunks]


@pytest.mark.parametrize("shape", ["alu_18_2", "wide_20_2_8"])
def test_the_pool_replays_the_gpu_allocators_own_log_address_for_address(shape):
    """Every allocation and free of one GPU proof, from XLA's allocator log: the simulated pool
    puts each buffer at the allocator's address, and counts its bytes in use and its peak after
    every round as the allocator did -- the chunks it handed out whole included (ALU 2^18 @ b2
    ends 12 MiB over what its buffers ask; the planner missed exactly that before the pool)."""
    doc = json.loads((DATA / f"bfc_{shape}.json").read_text())
    p, excess = Pool(), {}
    for event in doc["events"]:
        if event[0] == "a":
            assert p.allocate(event[1]) == event[2]
        elif event[0] == "f":
            p.free(event[1])
        else:
            _, round_name, in_use, peak = event
            assert (p.in_use, p.peak) == (in_use, peak), round_name
            excess[round_name] = p.excess
    assert len(excess) >= 10 and p.in_use == 0
    if shape == "alu_18_2":
        assert p.peak == 362_788_864 and excess["FRI final"] > 12 * MIB


def test_a_replayed_round_counts_its_copies_outputs_and_temporaries_at_its_peak():
    r = Replay()
    r.allocate("held", {"d": 4 * MIB})
    # a host copy and a large output; the copy is freed when the round ends and leaves a hole
    assert r.round(0, [("copy", {"d": 32 * MIB})], [("big", {"d": 64 * MIB})], {"d": 0}) == 0
    assert r.pools["d"].in_use == 68 * MIB
    # the next round's 24 MiB output gets the 32 MiB hole whole; its temporaries come after
    assert r.round(1, [], [("small", {"d": 24 * MIB}), ("tiny", {"d": 256})], {"d": MIB}) == 8 * MIB
    r.free("small")
    r.free("nothing held")  # a key that holds nothing frees nothing
    assert r.pools["d"].excess == 0
    # blocks in flight beside a copy are freed before the round's outputs
    assert r.round(2, [("trace", {"d": 8 * MIB})], [], {"d": 0}, [({"d": 2 * MIB}, 3)]) == 0


def _toy_rounds():
    cpu = jax.devices("cpu")[0]
    first = jax.jit(lambda h: jnp.zeros(1 << 17, jnp.uint64) + h[0], keep_unused=True)  # 1 MiB out
    second = jax.jit(lambda a: a[: 3 << 10] + 1, keep_unused=True)  # 24 KiB out
    planner = executor.Planner({0: cpu}, cpu)
    host = np.arange(1 << 12, dtype=np.uint64)  # 32 KiB, copied in for the first round only
    planner.hold("host", host, 0)
    planner.from_host(host)
    out = planner.run(0, "first", first, (host,), {})
    planner.run(0, "second", second, (out,), {})
    return planner.rounds


def test_the_planner_adds_the_chunks_it_replays_to_each_round(monkeypatch):
    """With a simulated pool (as on a GPU): the first round's host copy leaves a 32 KiB hole;
    the second round's 24 KiB output is handed it whole, and the plan counts the 8 KiB (and the
    rounding of its temporaries) in that round's device set. On the CPU nothing is added."""
    executor.clear_caches()
    plain = _toy_rounds()
    assert [r.pool for r in plain] == [0, 0]
    monkeypatch.setattr(executor, "_has_pool", lambda device: True)
    executor.clear_caches()
    pooled = _toy_rounds()
    first, second = pooled

    def slack(nbytes: int) -> int:  # what rounding a request adds
        return rounded(nbytes) - nbytes if nbytes else 0

    assert (first.pool, second.pool) == (slack(first.temporaries), 8192 + slack(second.temporaries))
    for a, b in zip(plain, pooled, strict=True):
        assert b.total == a.total + b.pool


def test_a_host_trace_whose_width_is_a_numpy_integer_is_replayed(monkeypatch):
    """Shapes may hold numpy integers (an AIR's width may be one): the replay counts them as ints."""
    monkeypatch.setattr(executor, "_has_pool", lambda device: True)
    executor.clear_caches()
    cpu = jax.devices("cpu")[0]
    planner = executor.Planner({0: cpu}, cpu)
    host = jax.ShapeDtypeStruct((1024, np.int64(8)), jnp.uint64)
    planner.hold("host", host, 0)
    planner.from_host(host)
    planner.run(0, "sum", jax.jit(lambda h: h.sum(axis=0), keep_unused=True), (host,), {})
    (r,) = planner.rounds  # the copy (64 KiB) and the 64-byte output: only the temporaries' rounding
    assert r.pool == (rounded(r.temporaries) - r.temporaries if r.temporaries else 0) + 256 - 64


def test_the_plans_table_shows_the_chunks_column_only_where_there_are_chunks(monkeypatch):
    import jaxstark as js
    from jaxstark.examples import EXAMPLES

    plan_module = importlib.import_module("jaxstark.memory.plan")  # the module (jaxstark.memory.plan is the function)

    air, trace, _ = EXAMPLES["fibonacci"](5)
    config = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=0)
    assert "chunks over" not in str(js.plan(air, np.asarray(trace), config))
    monkeypatch.setattr(executor, "_has_pool", lambda device: True)
    monkeypatch.setattr(plan_module, "_PLANS", {})  # planned again, not the plan of the same shapes above
    plan = js.plan(air, np.asarray(trace), config)
    assert "chunks over" in str(plan) and all(r.pool > 0 for r in plan.rounds)  # rounding at least
    assert all(plan.to_dict()["rounds"][i]["pool"] == r.pool for i, r in enumerate(plan.rounds))


def _check_pool():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "check_pool.py"
    spec = importlib.util.spec_from_file_location("check_pool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_pool_reads_the_allocators_log_and_finds_what_differs():
    """``benchmarks/check_pool.py`` (run on a GPU after a jax upgrade): its reading of the
    allocator's log lines -- the device pool's results and freed addresses, not the requests,
    the stack-trace lines or the host pool's -- and its replay, which names what differs."""
    check = _check_pool()
    log = "\n".join([
        "I1206 11:47:51.290 815 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 16785408 alignment=64",
        "I1206 11:47:51.290 815 bfc_allocator.cc:387] AllocateRaw GPU_0_bfc  16785408 0x302000000",
        "I1206 11:47:51.290 815 bfc_allocator.cc:388] [mem-debug] AllocateRaw,GPU_0_bfc,16785408,0x302000000,*** Begin",
        "I1206 11:47:51.318 815 bfc_allocator.cc:387] AllocateRaw GPU_0_bfc  16777224 0x303002000",
        "I1206 11:48:00.814 741 bfc_allocator.cc:387] AllocateRaw xla_gpu_host_bfc  1048576 0x8f2800000",
        "I1206 11:47:51.327 815 bfc_allocator.cc:965] [mem-debug] DeallocateRaw,GPU_0_bfc,16777224,0x303002000,***",
        "I1206 11:47:51.327 815 bfc_allocator.cc:387] AllocateRaw GPU_0_bfc  8 0x303002000",
        check.MARK + json.dumps(dict(what="round", round="trace commit", in_use=16785664, peak=33562880)),
    ])  # fmt: skip
    evs = check.events(log)
    assert evs == [["a", 16785408, 0], ["a", 16777224, 0x1002000], ["f", 0x1002000], ["a", 8, 0x1002000],
                   ["m", "trace commit", 16785664, 33562880]]  # fmt: skip
    assert check.replay(evs) == []
    wrong = check.replay([*evs[:3], ["a", 8, 0x2000000], ["m", "fork", 1, 2]])
    assert len(wrong) == 2 and "allocation 3 of 8 B at 0x1002000" in wrong[0] and "after fork" in wrong[1]
    doc = json.loads((DATA / "bfc_alu_18_2.json").read_text())
    assert check.replay(doc["events"]) == []


def test_the_replay_holds_exactly_what_the_plan_counts(monkeypatch):
    """At each round's peak the replayed buffers ask for the round's device set (without the
    chunks' excess): every held table, copy, output and temporary of the schedule is in the
    replay, and nothing else -- with parked and recomputed buffers, two tables with a LogUp bus
    on one device, and groups of row chunks. (XLA also counts its output tuples' index tables, 8 bytes
    an output, which are no buffers of their own: up to 1 KiB.)"""
    import jaxstark as js
    from jaxstark.examples import EXAMPLES
    from tests import attacks

    plan_module = importlib.import_module("jaxstark.memory.plan")
    monkeypatch.setattr(executor, "_has_pool", lambda device: True)
    monkeypatch.setattr(executor, "PARK_MIN_BYTES", 0)
    planners, allocate, replayed = [], Replay.allocate, executor.Planner._replayed

    def allocate_noting(self, key, sizes):  # what the round's device asks for once its temporaries are in
        allocate(self, key, sizes)
        if isinstance(key, tuple) and key[0] == "temporaries":
            self.asked = max((p.requested for d, p in self.pools.items() if d in sizes), default=0)

    def replayed_noting(self, index, temporaries):
        if not hasattr(self, "asked_at"):
            self.asked_at = {}
            planners.append(self)
        excess = replayed(self, index, temporaries)
        self.asked_at[index] = self._replay.asked
        return excess

    monkeypatch.setattr(Replay, "allocate", allocate_noting)
    monkeypatch.setattr(executor.Planner, "_replayed", replayed_noting)
    small = dict(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4)  # tests/test_memory.py's
    air, trace, _ = EXAMPLES["fibonacci"](5)
    keep = js.plan(air, np.asarray(trace), js.StarkConfig(**small)).peak
    alu, alu_trace, _ = EXAMPLES["alu"](8)
    cases = [
        (air, np.asarray(trace), js.StarkConfig(**small, vram_budget_mb=0.8 * keep / MIB, held_strategies=("park",))),
        (
            air,
            np.asarray(trace),
            js.StarkConfig(**small, vram_budget_mb=0.8 * keep / MIB, held_strategies=("recompute",)),
        ),  # fmt: skip
        ([(a, t) for a, t, _ in attacks.bus_tables()], None, attacks.CFG),  # two tables with a LogUp bus
        (alu, jnp.asarray(alu_trace), js.StarkConfig(**small, max_chunk_rows_log2=5)),
    ]
    ways = set()
    for tables, rows, config in cases:
        monkeypatch.setattr(plan_module, "_PLANS", {})
        planners.clear()
        p = js.plan(tables, rows, config)
        ways |= {w for w, x in (("park", p.parked), ("recompute", p.recomputed), ("chunks", any(p.chunks))) if x}
        ways |= {"tables"} if len(p.tables) > 1 else set()
        assert planners
        for planner in planners:
            for i, r in enumerate(planner._rounds):
                assert 0 <= r.total - r.pool - planner.asked_at[i] <= 1024, (r.name, r.table)
    assert ways == {"park", "recompute", "chunks", "tables"}
