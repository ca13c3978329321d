"""Row chunks: a tall row-local table proven as several units of the same AIR (jaxstark.chunking)."""

import dataclasses

import numpy as np
import pytest

import jaxstark as js
from jaxstark.chunking import CHUNK_ENV
from jaxstark.examples import EXAMPLES, Fibonacci
from jaxstark.memory import dispatch_count


def cfg(**kw):
    return js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4, **kw)


@pytest.fixture(scope="module")
def alu14():
    air, trace, public = EXAMPLES["alu"](14)
    return air, np.asarray(trace), public


@pytest.fixture(scope="module")
def chunked(alu14):
    air, trace, public = alu14
    return js.prove(air, trace, public, cfg(max_chunk_rows_log2=10))


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


def test_the_plan_lists_every_chunk_and_holds_one_chunk_at_a_time(alu14):
    """A chunk's commitments are dropped once its root is absorbed and computed again for its
    rounds 2-5 (dispatch counter), so the buffers held between rounds shrink."""
    air, trace, public = alu14
    plan = js.plan(air, 14, cfg(max_chunk_rows_log2=10))
    assert [t.name for t in plan.tables] == [f"Alu chunk {j} of 16" for j in range(16)]
    assert {t.log_n for t in plan.tables} == {10}
    whole = js.plan(air, 14, cfg())
    held = lambda p: max(r.resident_bytes for r in p.rounds)  # noqa: E731
    assert held(plan) < held(whole) / 2, (held(plan), held(whole))
    before = dispatch_count("trace commit again")
    js.prove(air, trace, public, cfg(max_chunk_rows_log2=10))
    assert dispatch_count("trace commit again") - before == 16


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
