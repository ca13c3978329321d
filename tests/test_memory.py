"""The memory planner: plans from shapes, admission before dispatch, loud device failures, the
test-only host fallback."""

import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark.chunking import units
from jaxstark.examples import EXAMPLES
from jaxstark.memory import cost, dispatch_count, executor
from jaxstark.memory.budget import ENV_BUDGET, device_budget
from jaxstark.memory.plan import _interleaved, _placement
from jaxstark.schedule import waves


def cfg(**kw):
    return js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4, **kw)


@pytest.fixture(scope="module")
def fib():
    return EXAMPLES["fibonacci"](5)


ROUNDS = ["trace commit", "fork", "composition", "out-of-domain", "DEEP", "FRI final", "queries",
          "openings trace", "openings composition", "openings FRI"]  # fmt: skip


def test_plan_lists_every_round_term_by_term(fib):
    air, trace, _ = fib
    plan = js.plan(air, jnp.asarray(trace), cfg())  # a trace on the device: held for the whole proof
    assert [r.name for r in plan.rounds] == ROUNDS
    assert plan.tables[0].shape == "2^5 rows x 2 main @ blowup 2"
    for r in plan.rounds:
        assert sum(plan.terms(r).values()) == r.total
    assert plan.peak == max(r.total for r in plan.rounds) and plan.binding.total == plan.peak
    comp = next(r for r in plan.rounds if r.name == "composition")
    held = dict(comp.resident)
    assert "table 0: trace (caller's)" in held and held["table 0: trace (caller's)"] == 32 * 2 * 8
    assert "table 0: trace commit[0].coeffs" in held  # kept for the out-of-domain round, not an argument here
    assert "table 0: trace commit[0].lde" not in held  # an argument of the composition round
    text = str(plan)
    assert "<- binding" in text and "fits the budget" in text and "composition" in text
    assert js.plan(air, 5, cfg()).peak == plan.peak  # log2 rows instead of a trace
    assert "on the device, held for the whole proof" in text


def test_fri_inputs_are_freed_once_the_next_dispatch_has_them(fib, monkeypatch):
    """The plan drops D's values and each FRI layer's folded values once the next FRI dispatch
    took them; the prover keeps no reference to them either (else the device holds more than
    planned). Three large layers here (the threshold lowered), then the final round."""
    import gc
    import weakref

    from jaxstark.rounds import r4_fri_layer

    monkeypatch.setattr(r4_fri_layer, "SCAN_LAYERS_BELOW_CPU", 8)
    air, trace, public = fib
    refs, seen = [], []
    real = executor.Runner.run

    def run(self, table, name, fn, args, static, axes=None, vmap=True):
        gc.collect()
        # all but the input of this dispatch (at the queries, every FRI input is gone)
        seen.append((name, [r() is None for r in (refs if name == "queries" else refs[:-1])]))
        out = real(self, table, name, fn, args, static, axes, vmap)
        if name == "DEEP":
            refs.append(weakref.ref(out[0]))
        elif name.startswith("FRI layer"):
            refs.append(weakref.ref(out[0].folded))
        return out

    monkeypatch.setattr(executor.Runner, "run", run)
    proof = js.prove(air, trace, public, cfg())
    names = [name for name, _ in seen]
    assert names[names.index("DEEP") : names.index("queries") + 1] == [
        "DEEP", "FRI layer 0", "FRI layer 1", "FRI layer 2", "FRI final", "queries"
    ]  # fmt: skip
    assert all(all(dead) for _, dead in seen) and len(seen[names.index("queries")][1]) == 4, seen
    assert js.verify(air, proof, public, cfg())


def test_a_released_units_commitments_are_freed_before_the_next_unit_runs(monkeypatch):
    """The plan drops a unit's trace commitment when the unit is released; the prover keeps no
    reference to it either, whatever the order the plan proves the units in."""
    import gc
    import weakref

    tables = [EXAMPLES["fibonacci"](k) for k in (3, 5, 4)]
    refs, released, checked = {}, set(), []
    real = executor.Runner.run

    def run(self, table, name, fn, args, static, axes=None, vmap=True):
        if name == "fork":  # a unit's rounds 2-5 begin: every unit released before is gone
            gc.collect()
            checked.extend((u, refs[u]() is None) for u in sorted(released))
        out = real(self, table, name, fn, args, static, axes, vmap)
        if name == "trace commit":
            refs[table] = weakref.ref(out[0].lde)
        elif name == "queries":
            released.add(table)
        return out

    monkeypatch.setattr(executor.Runner, "run", run)
    proof = js.prove([(air, t, p) for air, t, p in tables], config=cfg())
    assert checked and all(dead for _, dead in checked), checked
    assert js.verify([(air, p) for air, _, p in tables], proof, config=cfg())


def test_two_tables_of_one_shape_are_counted_twice(fib):
    """One executable (compiled once, or still compiling) serves both tables' rounds; the plan
    still counts each table's buffers (it tracks them by identity)."""
    air, trace, _ = fib
    plan = js.plan([(air, 5), (air, 5)], config=cfg())
    first = plan.order[0]
    comp = next(r for r in plan.rounds if r.name == "composition" and r.table == first)
    held = dict(comp.resident)
    for t in (0, 1):
        assert f"table {t}: trace commit[0].nodes" in held, sorted(held)
    assert held["table 0: trace commit[0].nodes"] == held["table 1: trace commit[0].nodes"] == 64 * 2 * 32


def test_a_host_trace_is_on_the_device_only_while_a_round_takes_it(fib):
    """A numpy trace is copied in as the argument of the rounds that take it (trace commit here),
    not held for the whole proof: every other round's device set is smaller by exactly its
    bytes, and the closed-form model agrees byte for byte on everything but the temporaries."""
    air, trace, public = fib
    trace = np.asarray(trace)
    on_device = js.plan(air, 5, cfg())
    on_host = js.plan(air, trace, cfg())  # inferred from the numpy trace
    assert on_host.host_traces == (True,) and on_device.host_traces == (False,)
    assert js.plan(air, 5, cfg(), host_traces=True).rounds == on_host.rounds
    nbytes = trace.nbytes
    for d, h in zip(on_device.rounds, on_host.rounds, strict=True):
        assert not any("trace (caller's)" in name for name, _ in h.resident)
        assert (d.arguments, d.outputs, d.temporaries) == (h.arguments, h.outputs, h.temporaries)
        assert h.total == d.total - (0 if d.name == "trace commit" else nbytes), d.name
    trace_commit = next(r for r in on_host.rounds if r.name == "trace commit")
    assert trace_commit.arguments >= nbytes  # the copy is counted where it is on the device
    assert "in host memory" in str(on_host) and on_host.to_dict()["host_traces"] == [True]
    m = js.memory.model(air, 5, cfg(), backend="cpu", host_trace=True)
    for mine, xla in zip(m.rounds, on_host.rounds, strict=True):
        assert (mine.held_bytes, mine.argument_bytes, mine.output_bytes) == (
            xla.resident_bytes, xla.arguments, xla.outputs), mine.name  # fmt: skip
    # prove plans the residency of the trace it is given
    seen = {}
    for given in (trace, jnp.asarray(trace)):
        events = []
        js.prove(air, given, public, cfg(), progress=events.append)
        seen[isinstance(given, np.ndarray)] = [e.planned_bytes for e in events if e.done and e.phase == "prove"]
    assert seen[True] == [r.total for r in on_host.rounds] and seen[False] == [r.total for r in on_device.rounds]


def test_domain_tables_stay_on_the_device_for_the_next_proof_of_the_same_shape(fib):
    """A second proof of a shape reuses the device copy of its domain tables (no second copy
    in); a proof of another shape drops it before dispatching anything, so a proof's device
    holds only the tables its own plan counts; the bytes are the same either way."""
    air, trace, public = fib
    executor.clear_caches()
    first = js.prove(air, trace, public, cfg()).to_bytes()
    ((key, tables),) = executor._DOMAINS.items()
    assert key[:2] == (5, 2)
    assert js.prove(air, trace, public, cfg()).to_bytes() == first
    assert executor._DOMAINS[key] is tables  # the same arrays, not a new copy
    other_air, other_trace, other_public = EXAMPLES["fibonacci"](4)
    js.prove(other_air, other_trace, other_public, cfg())
    assert [k[:2] for k in executor._DOMAINS] == [(4, 2)]
    executor.clear_caches()
    assert not executor._DOMAINS


@pytest.mark.parametrize("flags", [(True, False), "yes", [1]])
def test_bad_host_trace_flags_are_refused(fib, flags):
    air, _, _ = fib
    with pytest.raises(TypeError, match="host_traces"):
        js.plan(air, 5, cfg(), host_traces=flags)


def test_several_tables_are_held_until_each_is_done():
    (a, t, p), (b, u, q) = EXAMPLES["fibonacci"](4), EXAMPLES["fibonacci"](5)
    plan = js.plan([(a, t), (b, u)], config=cfg())
    first, second = plan.order
    last_round_of_first = [r for r in plan.rounds if r.table == first][-1]
    held_then = dict(last_round_of_first.resident)
    assert f"table {second}: trace commit[0].lde" in held_then  # the other table's commitment is still held
    after = [r for r in plan.rounds if r.table == second and r.name == "composition"][0]
    assert not any(name.startswith(f"table {first}: trace commit") for name, _ in after.resident)  # released
    assert plan.peak >= max(plan.table_peak(0), plan.table_peak(1))
    proof = js.prove([(a, t, p), (b, u, q)], config=cfg())
    assert js.verify([(a, p), (b, q)], proof, config=cfg())


def test_over_budget_raises_before_anything_is_dispatched(fib, monkeypatch):
    air, trace, public = fib
    monkeypatch.setenv(ENV_BUDGET, "0.001")
    before = dispatch_count()
    with pytest.raises(js.DeviceBudgetExceeded) as info:
        js.prove(air, np.asarray(trace), public, cfg())
    assert dispatch_count() == before  # no round ran
    err, text = info.value, str(info.value)
    assert err.table == "Fibonacci" and err.round in ROUNDS and err.total > err.budget
    assert sum(err.terms.values()) == err.total
    for fact in (
        "table 0 (Fibonacci)",
        f"round '{err.round}'",
        "2^5 rows x 2 main @ blowup 2",
        "round temporaries",
        "total device set",
        f"{ENV_BUDGET}=0.001",
        "live memory",
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "XLA_PYTHON_CLIENT_MEM_FRACTION",
        "XLA_PYTHON_CLIENT_ALLOCATOR",
        "nothing was dispatched",
    ):
        assert fact in text, fact
    for name in err.terms:
        assert name in text, name


def test_budget_sources_and_bad_values(monkeypatch):
    cpu = jax.devices("cpu")[0]
    monkeypatch.delenv(ENV_BUDGET, raising=False)
    assert "host physical memory" in device_budget(cpu).source
    assert device_budget(cpu, 512).bytes == 512 << 20 and "vram_budget_mb" in device_budget(cpu, 512).source
    monkeypatch.setenv(ENV_BUDGET, "256")
    assert device_budget(cpu, 512).bytes == 256 << 20  # the environment wins
    for bad in ("lots", "-3", "0"):
        monkeypatch.setenv(ENV_BUDGET, bad)
        with pytest.raises(ValueError, match=ENV_BUDGET):
            device_budget(cpu)
    with pytest.raises(ValueError, match="vram_budget_mb"):
        cfg(vram_budget_mb=-1)


def test_headroom_follows_the_allocator_posture(monkeypatch):
    from jaxstark.memory.budget import HEADROOM, HEADROOM_GROWTH, headroom

    for var in ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_ALLOCATOR"):
        monkeypatch.delenv(var, raising=False)
    assert headroom() == (HEADROOM, "preallocated allocator") and HEADROOM == 0.9
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert headroom() == (HEADROOM_GROWTH, "allocator grows on demand") and HEADROOM_GROWTH == 0.7
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    assert headroom()[0] == HEADROOM_GROWTH
    cpu = jax.devices("cpu")[0]
    monkeypatch.delenv(ENV_BUDGET, raising=False)
    phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert device_budget(cpu).bytes == int(phys * HEADROOM_GROWTH)
    with pytest.raises(ValueError, match="device_row_floor_log2"):
        cfg(device_row_floor_log2=40)


class _FailsWhenCalled:
    """A compiled round that fails the way XLA reports an out-of-memory error."""

    def __init__(self, exe):
        self.exe = exe

    def __getattr__(self, name):
        return getattr(self.exe, name)

    def __call__(self, *args):
        raise jax.errors.JaxRuntimeError(
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4096 bytes (simulated)"
        )


def _fail_round(monkeypatch, round_fn):
    real = executor.compiled_for

    def patched(fn, static, args, device):
        exe = real(fn, static, args, device)
        return _FailsWhenCalled(exe) if fn is round_fn else exe

    monkeypatch.setattr(executor, "compiled_for", patched)


def test_a_device_failure_inside_a_round_is_loud(fib, monkeypatch):
    from jaxstark.rounds.r2_composition import composition

    air, trace, public = fib
    monkeypatch.delenv(executor.FALLBACK_ENV, raising=False)
    _fail_round(monkeypatch, composition)
    with pytest.raises(js.DeviceFailure) as info:
        js.prove(air, trace, public, cfg())
    text = str(info.value)
    assert "RESOURCE_EXHAUSTED" in text and "round 'composition'" in text and "total device set" in text
    assert "budget" in text and "allocator posture" in text


def test_test_only_fallback_announces_itself_once_and_the_proof_verifies(fib, monkeypatch, capfd):
    from jaxstark.rounds.r2_composition import composition

    air, trace, public = fib
    monkeypatch.setenv(executor.FALLBACK_ENV, "1")
    monkeypatch.setattr(executor, "_BANNER_SHOWN", [False])
    _fail_round(monkeypatch, composition)
    proofs = [js.prove(air, trace, public, cfg()) for _ in range(2)]
    err = capfd.readouterr().err
    assert err.count("test-only setting and never a production configuration") == 1
    assert js.verify(air, proofs[1], public, cfg())


@pytest.mark.gpu
def test_row_floor_sends_small_tables_to_the_cpu_by_policy(fib):
    air, trace, public = fib
    small = js.plan(air, 5, cfg(device_row_floor_log2=6))
    assert small.tables[0].device.startswith("cpu") and "row floor 2^6" in small.tables[0].policy
    big = js.plan(air, 6, cfg(device_row_floor_log2=6))
    assert big.tables[0].device.startswith("gpu") and not big.tables[0].policy
    assert js.verify(air, js.prove(air, trace, public, cfg(device_row_floor_log2=6)), public, cfg())


def test_planner_refuses_a_round_whose_unused_arguments_xla_would_not_count():
    """Buffers handed to a round stay alive even when XLA prunes them from the executable; the
    planner insists on rounds jitted with keep_unused=True, so its figures include them."""
    cpu = jax.devices("cpu")[0]
    args = (np.zeros(4, np.uint64), np.zeros(8, np.uint64))
    with pytest.raises(RuntimeError, match="keep_unused=True"):
        pruning = executor.Planner({0: cpu}, cpu)
        pruning.run(0, "pruning", jax.jit(lambda x, y: x + 1), args, {})
        assert pruning.rounds  # its memory is read once its program is compiled (perhaps on a compile thread)
    planner = executor.Planner({0: cpu}, cpu)
    planner.run(0, "kept", jax.jit(lambda x, y: x + 1, keep_unused=True), args, {})
    assert planner.rounds[0].arguments == 96


@pytest.mark.parametrize("threads", ["1", "2"])
def test_planner_figures_are_the_same_whether_rounds_compile_in_place_or_on_compile_threads(monkeypatch, threads):
    """With compile threads the planner traces a round, hands its compilation to a thread and
    goes on with the round's output shapes from the lowering; the rounds it records (read in
    order, once compiled) equal those of compiling each round before tracing the next."""
    cpu = jax.devices("cpu")[0]
    first = jax.jit(lambda x, y: (x * y, jnp.concatenate([x, y])), keep_unused=True)
    second = jax.jit(lambda a, b: (a + 1, b.sum(keepdims=True)), keep_unused=True)
    args = (np.zeros(24, np.uint64), np.ones(24, np.uint64))

    def walk():
        executor.clear_caches()
        planner = executor.Planner({0: cpu}, cpu)
        out = planner.run(0, "first", first, args, {})
        planner.hold("first", out, 0)
        planner.run(0, "second", second, out, {})
        pending = sum(isinstance(x, executor._Compiling) for x in executor._COMPILE_LOG)
        return planner, out, pending

    monkeypatch.setenv(executor.COMPILE_THREADS_ENV, "0")
    in_place, out0, none = walk()
    monkeypatch.setenv(executor.COMPILE_THREADS_ENV, threads)
    deferred, out1, handed = walk()
    assert (none, handed) == (0, 2)
    assert [(x.shape, x.dtype) for x in jax.tree.leaves(out1)] == [(x.shape, x.dtype) for x in jax.tree.leaves(out0)]
    assert deferred.rounds == in_place.rounds
    assert [r.name for r in executor.compile_log()] == ["first", "second"]
    assert all(r.compile > 0 for r in executor.compile_log())


@pytest.mark.parametrize("value", ["two", "-1", "1.5"])
def test_a_bad_number_of_compile_threads_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(executor.COMPILE_THREADS_ENV, value)
    with pytest.raises(ValueError, match="JAXSTARK_COMPILE_THREADS"):
        executor.compile_threads()


def test_reserving_the_pool_does_nothing_on_the_cpu():
    from jaxstark.memory.budget import reserve_pool

    assert reserve_pool(jax.devices("cpu")[0]) is None


@pytest.mark.gpu
def test_the_pool_is_reserved_once_per_device_on_a_thread():
    """In a fresh process (this one has allocated already): no allocation before, one after."""
    import subprocess
    import sys

    code = (
        "import jax\n"
        "from jaxstark.memory.budget import reserve_pool\n"
        "gpu = jax.devices('gpu')[0]\n"
        "assert gpu.memory_stats().get('num_allocs', 0) == 0, gpu.memory_stats()\n"
        "thread = reserve_pool(gpu)\n"
        "thread.join(120)\n"
        "assert not thread.is_alive() and reserve_pool(gpu) is thread\n"
        "assert gpu.memory_stats()['num_allocs'] >= 1, gpu.memory_stats()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def _live_bytes(device, others: dict) -> int:
    """Bytes of the live arrays on ``device``, but for ``others`` (id -> array, kept alive here)."""
    live = jax.live_arrays()
    return sum(x.nbytes for x in live if id(x) not in others and not x.is_deleted() and device in x.devices())


def test_parking_held_buffers_fits_what_keeping_them_does_not(fib, monkeypatch):
    """Under a budget between the smallest parked plan and the keep-everything peak, the planner
    parks held outputs in host memory (largest first, until the plan fits) and says which; the
    proof is byte-identical to the keep-everything one and verifies; at every round's start the
    device holds no more than the plan's held buffers and arguments of that round, with and
    without parking (a parked buffer, or one dropped after its last use, is really gone from
    the device). With parking forbidden the same budget is refused,
    and the refusal says parking would be an option."""
    monkeypatch.setattr(executor, "PARK_MIN_BYTES", 0)  # Fibonacci 2^5's buffers are a few hundred bytes
    air, trace, public = fib
    keep = js.plan(air, jnp.asarray(trace), cfg())
    assert not keep.parked and "all kept on the device" in str(keep)
    park = ("park",)  # parking alone (recomputing: test_recomputing_trees_...)
    smallest = js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=1 / 2**20, held_strategies=park))  # 1 byte
    assert not smallest.fits and smallest.parked and smallest.peak < keep.peak and not smallest.recomputed
    budget_mb = (smallest.peak + keep.peak) / 2 / 2**20
    p = js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=budget_mb, held_strategies=park))
    assert p.fits and 0 < len(p.parked) <= len(smallest.parked) and p.peak < keep.peak
    for name, nbytes, copies in p.parked:
        assert p.parkable[name] == nbytes and copies >= 0
        assert f"park {name}" in str(p)
    assert p.to_dict()["parked"] == [dict(buffer=n, bytes=b, copies_in=k, extra_seconds=p.item_extra[n])
                                     for n, b, k in p.parked]  # fmt: skip
    parked = {n for n, _, _ in p.parked}
    for r in p.rounds:  # a parked buffer is on the device only as an argument
        assert not parked & {n for n, _ in r.resident}
        assert sum(p.terms(r).values()) == r.total
    assert any(r.parked_bytes for r in p.rounds) and any(r.copied_in for r in p.rounds)

    with pytest.raises(js.DeviceBudgetExceeded, match="held_strategies"):
        js.prove(air, trace, public, cfg(vram_budget_mb=budget_mb, held_strategies=()))

    on_device = jnp.asarray(trace)
    ref, kept = _prove_watching_live_bytes(air, on_device, public, cfg(), keep)
    proof, seen = _prove_watching_live_bytes(air, on_device, public, cfg(vram_budget_mb=budget_mb,
                                                                         held_strategies=park), p)  # fmt: skip
    assert proof.to_bytes() == ref.to_bytes()
    assert js.verify(air, proof, public, cfg())
    assert any(live < planned for (_, live, _), (_, _, planned) in zip(seen, kept, strict=True))


def _prove_watching_live_bytes(air, trace, public, config, plan):
    """Prove under ``plan``, checking that at every round's start the device holds no more than
    the plan's held buffers and that round's arguments: what the plan dropped or parked is gone.
    Returns the proof and, per round, (name, live bytes, planned bytes)."""
    device = jax.devices("cpu")[0]
    # arrays other tests left alive are not this proof's (the domain tables kept for this shape are)
    mine = {id(x) for x in (trace, *jax.tree.leaves(executor._DOMAINS))}
    others = {id(x): x for x in jax.live_arrays() if id(x) not in mine}
    seen = []

    def watch(event):
        if not event.done and event.phase == "prove":
            r = plan.rounds[event.step - 1]
            seen.append((r.name, _live_bytes(device, others), r.resident_bytes + r.arguments))

    proof = js.prove(air, trace, public, config, progress=watch)
    assert len(seen) == len(plan.rounds)
    assert all(live <= planned for _, live, planned in seen), seen
    return proof, seen


def test_parking_refuses_below_the_smallest_device_set_it_finds(fib, monkeypatch):
    monkeypatch.setattr(executor, "PARK_MIN_BYTES", 0)
    air, trace, public = fib
    smallest = js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=1 / 2**20, held_strategies=("park",)))
    below = cfg(vram_budget_mb=(smallest.peak - 64) / 2**20, held_strategies=("park",))
    with pytest.raises(js.DeviceBudgetExceeded, match="parked in host memory") as err:
        js.prove(air, jnp.asarray(trace), public, below)
    assert err.value.total == smallest.peak  # and recomputing, forbidden here, would have helped:
    assert "allow recomputing held trees (StarkConfig.held_strategies)" in str(err.value)
    assert "allow parking" not in str(err.value)


def test_recomputing_trees_fits_what_keeping_them_does_not(fib, monkeypatch):
    """Recomputing alone: under a budget between the smallest such plan and the keep-everything
    peak, the planner recomputes trees (the composition's built in a round of its own, the
    others only their roots kept) and says which and where each is built again; every tree is
    rebuilt in its own commitment's openings; the proof is byte-identical to the keep-everything
    one and verifies, and the device holds no more than the plan says at every round's start.
    Forbidding recomputing (and parking) refuses the same budget, naming the knob."""
    monkeypatch.setattr(executor, "PARK_MIN_BYTES", 0)
    air, trace, public = fib
    keep = js.plan(air, jnp.asarray(trace), cfg())
    only = ("recompute",)
    smallest = js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=1 / 2**20, held_strategies=only))
    assert not smallest.fits and smallest.recomputed and not smallest.parked and smallest.peak < keep.peak
    budget_mb = (smallest.peak + keep.peak) / 2 / 2**20
    p = js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=budget_mb, held_strategies=only))
    assert p.fits and p.recomputed and not p.parked and p.peak < keep.peak
    where = {"trace commit": "openings trace", "composition": "openings composition", "FRI layer": "openings FRI"}
    for name, nbytes, rebuilt in p.recomputed:
        assert name.endswith("[0].nodes") and p.recomputable[name] == nbytes > 0
        assert rebuilt == next(v for k, v in where.items() if f": {k}" in name), (name, rebuilt)
        assert f"recompute {name}" in str(p) and f"built again in '{rebuilt}'" in str(p)
    assert p.to_dict()["recomputed"] == [dict(buffer=n, bytes=b, rebuilt_in=w, extra_seconds=p.item_extra[n])
                                         for n, b, w in p.recomputed]  # fmt: skip
    names = [r.name for r in p.rounds]
    if any(": composition[" in n for n, _, _ in p.recomputed):
        assert "composition tree" in names and "composition tree" not in [r.name for r in keep.rounds]
    for r in p.rounds:  # a recomputed tree is held as its root rows only
        held = dict(r.resident)
        assert all(held.get(n, 0) <= 64 for n, _, _ in p.recomputed), r.name
    with pytest.raises(js.DeviceBudgetExceeded, match="recomputing held trees"):
        js.plan(air, jnp.asarray(trace), cfg(vram_budget_mb=budget_mb, held_strategies=())).admit()
    on_device = jnp.asarray(trace)
    ref, _ = _prove_watching_live_bytes(air, on_device, public, cfg(), keep)
    proof, _ = _prove_watching_live_bytes(
        air, on_device, public, cfg(vram_budget_mb=budget_mb, held_strategies=only), p
    )
    assert proof.to_bytes() == ref.to_bytes()
    assert js.verify(air, proof, public, cfg())


def test_more_row_blocks_fit_a_round_whose_own_temporaries_bind(monkeypatch):
    """ "blocks" alone: ALU 2^6 (with its bus) binds at the out-of-domain round, whose
    temporaries are most of it; under a budget just above the next largest round the planner
    runs that round in more blocks of coefficients (blocks of 8 rows allowed here), says so,
    and the proof is the keep-everything proof's bytes."""
    from jaxstark import rounds

    monkeypatch.setattr(rounds, "MIN_BLOCK_ROWS", 8)
    air, trace, public = EXAMPLES["alu"](6)
    base = dict(blowup=2, grinding_bits=2, num_queries=8)
    keep = js.plan(air, trace, js.StarkConfig(**base))
    assert keep.binding.name == "out-of-domain" and not keep.row_blocks
    second = max(r.total for r in keep.rounds if r is not keep.binding)
    config = js.StarkConfig(**base, vram_budget_mb=(second + 1) / 2**20, held_strategies=("blocks",))
    p = js.plan(air, trace, config)
    assert p.fits and p.row_blocks == (("table 0: out-of-domain", 8),) and not p.parked and not p.recomputed
    assert "table 0: out-of-domain in 8 blocks of rows" in str(p)
    blocks = p.to_dict()["row_blocks"]
    assert blocks == [dict(round="table 0: out-of-domain", blocks=8, extra_seconds=7 * cost.rates("cpu").block)]
    with pytest.raises(js.DeviceBudgetExceeded, match="allow more row blocks"):
        js.plan(air, trace, js.StarkConfig(**base, vram_budget_mb=(second + 1) / 2**20, held_strategies=())).admit()
    proof = js.prove(air, trace, public, config)
    assert proof.to_bytes() == js.prove(air, trace, public, js.StarkConfig(**base)).to_bytes()
    assert js.verify(air, proof, public, js.StarkConfig(**base))


def test_a_table_that_cannot_be_chunked_proves_under_half_its_keep_everything_set():
    """Fibonacci (boundary constraints: it cannot be split into row chunks) at 2^15 rows @
    blowup 2, under a budget of half its keep-everything device set, with the default
    strategies: trees recomputed and buffers parked, the plan naming both (parking alone does
    not fit it); the proof is the keep-everything proof's bytes and verifies. Under a budget
    just below the smallest plan the planner finds, it is refused with that plan's binding
    round and what it applied. (At 2^15 and above the grinding batch's fixed temporaries are a
    small part of the keep-everything set, which they are not at 2^14: the plan under half of
    it is 0.93 of the budget at 2^15, 0.97 at 2^16.)"""
    air, trace, public = EXAMPLES["fibonacci"](15)
    config = js.StarkConfig(blowup=2)
    keep = js.plan(air, jnp.asarray(trace), config)
    assert keep.fits and not keep.parked and not keep.recomputed
    half = js.StarkConfig(blowup=2, vram_budget_mb=keep.peak / 2 / 2**20)
    parking = js.plan(air, jnp.asarray(trace), js.StarkConfig(blowup=2, vram_budget_mb=keep.peak / 2 / 2**20,
                                                               held_strategies=("park",)))  # fmt: skip
    assert not parking.fits and parking.parked
    p = js.plan(air, jnp.asarray(trace), half)
    assert p.fits and p.peak <= keep.peak / 2 and p.recomputed and p.parked
    assert "tree(s) recomputed" in str(p) and "parked in host memory" in str(p)
    proof = js.prove(air, jnp.asarray(trace), public, half)
    assert proof.to_bytes() == js.prove(air, jnp.asarray(trace), public, config).to_bytes()
    assert js.verify(air, proof, public, config)

    least = js.plan(air, jnp.asarray(trace), js.StarkConfig(blowup=2, vram_budget_mb=1 / 2**20))
    assert not least.fits and least.peak < p.peak
    below = js.StarkConfig(blowup=2, vram_budget_mb=(least.peak - 64) / 2**20)
    with pytest.raises(js.DeviceBudgetExceeded, match="tree\\(s\\) recomputed where they are opened") as err:
        js.prove(air, jnp.asarray(trace), public, below)
    assert err.value.total == least.peak and err.value.round == least.binding.name
    assert "parked in host memory" in str(err.value) and "held_strategies" not in str(err.value)


def test_the_planner_compares_row_chunks_with_held_strategies(monkeypatch):
    """A row-local table the planner may split (``max_chunk_rows_log2="auto"``) over its budget:
    the planner plans it in row chunks and whole with held buffers parked or recomputed, and
    keeps the one whose estimated extra work (``jaxstark.memory.cost``) is smaller, naming both.
    The same budget under rates that make the copies and tree builds dear chooses the chunks.
    Either proof verifies; the whole table's is the unsplit proof."""
    air, trace, public = EXAMPLES["alu"](10)
    keep = js.plan(air, jnp.asarray(trace), cfg())
    config = cfg(vram_budget_mb=keep.peak * 0.9 / 2**20, max_chunk_rows_log2="auto")
    p = js.plan(air, jnp.asarray(trace), config)
    assert p.fits and len(p.compared) == 2 and all(fits for _, fits, _, _, _ in p.compared)
    (way, _, peak, x, _), (other, _, _, y, _) = p.compared
    assert way.startswith("whole table") and other.startswith("row chunks") and x <= y
    assert p.chunks == (0,) and p.parked and peak == p.peak and x == pytest.approx(sum(p.extra.values()))
    assert "chose whole table" in str(p) and "over row chunks" in str(p)
    assert sum(p.item_extra.values()) == pytest.approx(x) and "(est. +" in p.held_strategy()  # per buffer
    proof = js.prove(air, jnp.asarray(trace), public, config)
    assert not any(proof.chunks) and js.verify(air, proof, public, config)
    unsplit = cfg(vram_budget_mb=config.vram_budget_mb)
    assert proof.to_bytes() == js.prove(air, jnp.asarray(trace), public, unsplit).to_bytes()

    slow = cost.Rates(park=1e3, tree={h: 1e3 for h in cost.RATES["cpu"].tree}, commit=1e9, block=1.0, grind=1e9)
    monkeypatch.setitem(cost.RATES, "cpu", slow)
    q = js.plan(air, jnp.asarray(trace), config)
    assert q.fits and q.chunks == (1,) and q.compared[0][0].startswith("row chunks")
    assert q.compared[0][3] < q.compared[1][3] and "extra_seconds" in q.to_dict()
    chunked = js.prove(air, jnp.asarray(trace), public, config)
    assert chunked.chunks == (1,) and js.verify(air, chunked, public, config)


def test_held_strategies_are_checked():
    with pytest.raises(ValueError, match="held_strategies"):
        cfg(held_strategies=("spill",))
    with pytest.raises(ValueError, match="held_strategies"):
        cfg(held_strategies=["park"])
    assert cfg(held_strategies=()).fingerprint() == cfg().fingerprint()  # a memory knob: not part of the proof


def test_whole_tables_are_balanced_over_devices_by_estimated_work():
    """More whole tables than devices: the largest estimated work (``cost.table_work``, LDE
    bytes) first, each onto the device with the least so far; as many devices as tables: one
    each, in statement order. Rounds 2-5 then run in waves of units on distinct devices."""
    fake = [types.SimpleNamespace(process_index=0, platform="cpu", id=k) for k in range(2)]
    air = EXAMPLES["alu"](4)[0]
    log_ns = (10, 14, 12, 13, 11)  # work in proportion 1, 16, 4, 8, 2
    us = units(log_ns, (0,) * 5)
    devices, _, _ = _placement(us, (air,) * 5, cfg(), fake[0], tuple(fake))
    # 14 -> d0 (16), 13 -> d1 (8), 12 -> d1 (12), 11 -> d1 (14), 10 -> d1 (15)
    assert [devices[i].id for i in range(5)] == [1, 0, 1, 1, 1]
    assert cost.table_work(air, 14, 2) == 16 * cost.table_work(air, 10, 2)
    each, _, _ = _placement(us[:2], (air,) * 2, cfg(), fake[0], tuple(fake))
    assert [each[i].id for i in range(2)] == [0, 1]
    assert waves((0, 1, 2, 3, 4), lambda i: {devices[i].id}) == [[0, 1], [2], [3], [4]]
    assert waves((1, 0, 2), lambda i: {devices[i].id}) == [[1, 0], [2]]


def test_units_of_distinct_devices_are_interleaved_keeping_each_devices_order():
    on = {0: "a", 1: "a", 2: "b", 3: "a", 4: "b"}
    assert _interleaved((0, 1, 2, 3, 4), lambda i: frozenset(on[i])) == (0, 2, 1, 4, 3)
    assert _interleaved((3, 4, 0, 2, 1), lambda i: frozenset(on[i])) == (3, 4, 0, 2, 1)
    assert _interleaved((0, 1), lambda i: frozenset("ab" if i == 0 else "a")) == (0, 1)  # overlapping: unchanged
