"""Row chunks: a tall row-local table proven as several units of the same AIR (jaxstark.chunking)."""

import dataclasses
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxstark as js
from jaxstark.chunking import CHUNK_ENV, GROUP_ENV
from jaxstark.examples import EXAMPLES, Fibonacci
from jaxstark.examples.machine import machine_example
from jaxstark.memory import dispatch_count


def cfg(**kw):
    return js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4, **kw)


@pytest.fixture(scope="module")
def alu14():
    air, trace, public = EXAMPLES["alu"](14)
    return air, np.asarray(trace), public


@pytest.fixture(scope="module")
def chunked(alu14):
    """All 16 chunks in one group (the planner's choice under the default budget; fixed here so
    the test does not pay for the planner's trial plan)."""
    air, trace, public = alu14
    return js.prove(air, trace, public, cfg(max_chunk_rows_log2=10, chunk_group=16))


def test_alu_2_14_in_2_10_row_chunks_proves_and_verifies(alu14, chunked):
    air, _, public = alu14
    assert chunked.chunks == (4,) and len(chunked.tables) == 16
    assert {t.log_n for t in chunked.tables} == {10}
    assert js.verify(air, chunked.to_bytes(), public, cfg())  # the verifier reads the layout from the proof
    assert js.verify(air, chunked, public, cfg(), log_n=14)
    with pytest.raises(js.InvalidProof) as err:
        js.verify(air, chunked, public, cfg(), log_n=13)
    assert err.value.code == "wrong-height" and "chunk 0" in str(err.value)


def test_the_chunk_layout_is_bound_into_the_statement(alu14, chunked):
    air, _, public = alu14
    swapped = list(chunked.tables)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(js.InvalidProof):
        js.verify(air, dataclasses.replace(chunked, tables=tuple(swapped)), public, cfg())
    # the first half of the chunks presented as a table of 2^13 rows in 8 chunks
    half = dataclasses.replace(chunked, tables=chunked.tables[:8], chunks=(3,))
    with pytest.raises(js.InvalidProof):
        js.verify(air, half, public, cfg())
    with pytest.raises(js.ProofFormatError, match="chunk counts"):
        js.Proof.from_bytes(dataclasses.replace(chunked, chunks=(3,)).to_bytes())


def test_one_chunk_is_the_unchunked_proof():
    air, trace, public = EXAMPLES["alu"](8)
    whole = js.prove(air, np.asarray(trace), public, cfg())
    one = js.prove(air, np.asarray(trace), public, cfg(max_chunk_rows_log2=8))
    assert one.chunks == (0,) and one.to_bytes() == whole.to_bytes()


@pytest.fixture(scope="module")
def in_groups_of_4(alu14):
    air, trace, public = alu14
    before = {name: dispatch_count(name) for name in ("trace commit", "trace commit again", "queries")}
    proof = js.prove(air, trace, public, cfg(max_chunk_rows_log2=10, chunk_group=4))
    return proof, {name: dispatch_count(name) - n for name, n in before.items()}


def test_the_proof_does_not_depend_on_the_group_size(alu14, chunked, in_groups_of_4):
    """16 chunks at once and 4 groups of 4 under vmap give the same bytes: the roots are absorbed
    in chunk order and every chunk has its own fork."""
    proof, dispatched = in_groups_of_4
    assert proof.to_bytes() == chunked.to_bytes()
    # four groups: each dispatched once per round, and committed again before its rounds 2-5
    assert dispatched == {"trace commit": 4, "trace commit again": 4, "queries": 4}


def test_a_value_at_or_above_p_is_named_by_its_row_in_the_whole_table(alu14, in_groups_of_4):
    """Checked on the device by each group's trace commit (the programs of the fixture's proof)."""
    air, trace, public = alu14
    bad = trace.copy()
    bad[5000, 3] = js.gl.P + 1
    match = r"table 0 \(Alu\) trace: 1 value\(s\) of rows 4096-8191 are >= p = \d+ \(first at index \(5000, 3\)"
    with pytest.raises(js.NonCanonicalError, match=match):
        js.prove(air, bad, public, cfg(max_chunk_rows_log2=10, chunk_group=4))


def test_the_plan_lists_every_group_and_holds_one_group_at_a_time(alu14, in_groups_of_4):
    air, trace, public = alu14
    plan = js.plan(air, 14, cfg(max_chunk_rows_log2=10, chunk_group=4))  # executables from the proof above
    assert [t.name for t in plan.tables] == [f"Alu chunks {j}-{j + 3} of 16" for j in range(0, 16, 4)]
    assert plan.chunks == (4,) and plan.groups == (2,)
    assert "16 chunks of 2^10 rows, 4 at a time under vmap (4 groups" in str(plan)
    assert "4 chunks of 2^10 rows (vmap)" in plan.tables[0].shape
    everything = js.plan(air, 14, cfg(max_chunk_rows_log2=10, chunk_group=16))  # executables of `chunked`
    assert everything.groups == (4,) and len(everything.tables) == 1
    assert not any(r.name == "trace commit again" for r in everything.rounds)  # nothing to commit again
    held = lambda p: max(r.resident_bytes for r in p.rounds)  # noqa: E731
    assert held(plan) < held(everything) / 2, (held(plan), held(everything))


def test_a_table_12_times_over_the_budget_is_chunked_and_grouped_by_the_planner():
    """``max_chunk_rows_log2="auto"`` under a budget of 1/12 of the whole table's compiled device
    set: the planner splits the table, picks the group size from the plan of groups of one,
    confirms it, and the proof runs that plan and verifies. (At 1/12 it takes 2^6 chunks two at a
    time on the CPU; the fixed costs of a chunk make a tighter budget take many more, smaller
    chunks.)"""
    air, trace, public = EXAMPLES["alu"](12)
    base = dict(blowup=8, num_queries=8, grinding_bits=2, fri_final_degree=4)
    whole = js.plan(air, 12, js.StarkConfig(**base))
    budget_mb = whole.peak / 12 / 2**20
    config = js.StarkConfig(**base, vram_budget_mb=budget_mb, max_chunk_rows_log2="auto")
    with pytest.raises(js.DeviceBudgetExceeded):
        js.plan(air, 12, dataclasses.replace(config, max_chunk_rows_log2=None)).admit()
    plan = js.plan(air, 12, config)
    assert plan.fits and plan.peak <= budget_mb * 2**20
    (k,), (g,) = plan.chunks, plan.groups
    assert k >= 4 and 1 <= g <= k, (k, g)  # at least 16 chunks, several at a time
    before = dispatch_count("queries")
    proof = js.prove(air, trace, public, config)  # a device trace, as the plan above assumes
    assert dispatch_count("queries") - before == 1 << (k - g)  # one dispatch per planned group
    assert proof.chunks == (k,) and js.verify(air, proof.to_bytes(), public, js.StarkConfig(**base))


@pytest.fixture(scope="module")
def machine_on_one_device():
    """The three-table machine proven with every table on one device: the bytes its proofs on
    several devices and over several processes must give."""
    tables = machine_example(6, bits=4)
    small = js.StarkConfig(blowup=2, num_queries=10, grinding_bits=2, fri_final_degree=4)
    return js.prove(tables, config=small, device=jax.devices("cpu")[0]).to_bytes()


def _child(tmp_path, name, *argv):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = tmp_path / f"{name}.bin"
    cmd = [sys.executable, str(Path(__file__).with_name("chunk_child.py")), str(out), *map(str, argv)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out


def _finish(proc, out) -> tuple[bytes, str]:
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    return out.read_bytes(), stdout


def test_groups_split_over_4_host_devices_give_the_same_proof(tmp_path, alu14, chunked, machine_on_one_device):
    """Two groups of 8 chunks, each split over a mesh of 4 host devices (2 chunks per device):
    the same bytes as the proof on one device. Whole tables take the devices in turn."""
    air, _, public = alu14
    data, stdout = _finish(*_child(tmp_path, "spread", 4))
    assert "8 at a time under vmap (2 groups, each group split over 4 devices (cpu:0+1+2+3)" in stdout, stdout
    assert data == chunked.to_bytes()
    # the machine's three whole tables on three devices, and its proof verifies (in the child)
    assert {"Alu on cpu:0", "Program on cpu:1", "RangeTable on cpu:2"} <= set(stdout.splitlines()), stdout
    assert "machine verified" in stdout
    assert js.verify(air, data, public, cfg())
    # the three tables on three devices give the one-device bytes, and their rounds 2-5 were all
    # dispatched before the host waited for any of them: the devices work at once
    machine = [(tmp_path / f"spread.bin.{suffix}").read_bytes() for suffix in ("machine", "machine1")]
    assert machine[0] == machine[1] == machine_on_one_device  # also all on one device of the four
    events = next(line for line in stdout.splitlines() if line.startswith("events: "))[8:].split(";")
    forks = [k for k, e in enumerate(events) if e.endswith(" fork")]
    queries = [k for k, e in enumerate(events) if e.endswith(" queries")]
    waits = [k for k, e in enumerate(events) if e == "host" and k > forks[0]]
    assert len(forks) == len(queries) == 3 and max(queries) < waits[0], events


def test_two_processes_prove_one_statement(tmp_path, alu14, chunked, machine_on_one_device):
    """``jax.distributed`` on localhost: two processes of 2 host devices each; every group of 8
    chunks is split over all 4 devices, so each process proves its share of every group; both
    end with the whole proof, the same bytes as on one device. The machine's three whole tables
    are shared out over the 4 devices, the processes in turn: process 0 proves two, process 1
    the other, and both end
    with the one-device proof's bytes (the roots and bus sums exchanged, the transcript chained
    on the host)."""
    air, _, public = alu14
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    children = [_child(tmp_path, f"process{i}", 2, i, 2, port) for i in range(2)]
    results = [_finish(*c) for c in children]
    assert "each group split over 4 devices" in results[0][1], results[0][1]
    assert results[0][0] == results[1][0] == chunked.to_bytes()
    assert js.verify(air, results[0][0], public, cfg())
    placed = {"Alu on cpu:0", "Program on cpu:2", "RangeTable on cpu:1"}  # the processes in turn
    assert all(p in out for p in placed for _, out in results), results  # (gloo logs on the same stdout)
    assert "rounds planned here: [0, 2]" in results[0][1] and "rounds planned here: [1]" in results[1][1]
    machine = [(tmp_path / f"process{i}.bin.machine").read_bytes() for i in range(2)]
    assert machine[0] == machine[1] == machine_on_one_device
    for _, out in results:  # a bad value in process 1's table: both processes name it, neither hangs
        assert "refused: prove: table 1 (Program) trace" in out and "(5, 0)" in out, out
    # a device failure in process 1's rounds 2-5: it raises it, process 0 an error naming it
    assert "fault: DeviceFailure: " in results[1][1], results[1][1]
    assert "fault: JaxstarkError: jax.distributed process 1 failed proving its tables: DeviceFailure" in results[0][1]
    # process 1's share over its budget: both refuse before dispatching anything
    assert "over budget: the planned device set exceeds the memory budget" in results[1][1], results[1][1]
    assert "over budget: jax.distributed process(es) [1]: their share" in results[0][1], results[0][1]
    assert all("AIR warnings: 1" in out for _, out in results), results  # process 1's table, warned in both
    assert "foreign device: plan: device cpu:0 belongs to jax.distributed process 0; this is process 1" in results[1][1]


def test_chunking_refuses_tables_that_read_the_next_row():
    air, trace, public = EXAMPLES["fibonacci"](8)
    assert isinstance(air, Fibonacci)
    with pytest.raises(ValueError, match=r"table 0 \(Fibonacci\).*next row"):
        js.prove(air, np.asarray(trace), public, cfg(max_chunk_rows_log2=4))


def test_bad_chunk_knobs_are_named(monkeypatch, alu14):
    air, trace, public = alu14
    with pytest.raises(ValueError, match="max_chunk_rows_log2"):
        cfg(max_chunk_rows_log2=0)
    for bad in ("ten", "0", "40"):
        monkeypatch.setenv(CHUNK_ENV, bad)
        with pytest.raises(ValueError, match=CHUNK_ENV):
            js.plan(air, 14, cfg())
    monkeypatch.delenv(CHUNK_ENV)
    for bad in (0, 3, "4", True):
        with pytest.raises(ValueError, match="chunk_group"):
            cfg(chunk_group=bad)
    for bad in ("four", "0", "6"):
        monkeypatch.setenv(GROUP_ENV, bad)
        with pytest.raises(ValueError, match=GROUP_ENV):
            js.plan(air, 14, cfg(max_chunk_rows_log2=10))
    with pytest.raises(ValueError, match="max_chunk_rows_log2"):
        cfg(max_chunk_rows_log2="tall")
