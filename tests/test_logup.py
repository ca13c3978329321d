"""LogUp buses and multi-table proofs: the derived aux columns against a Python-integer twin,
the aux constraints on honest traces, degrees and packing, the debug bus check, and end-to-end
proofs of the three-table machine with the verifier's bus rejections."""

import dataclasses

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark.air import Val
from jaxstark.examples import EXAMPLES, Alu, alu_trace
from jaxstark.examples.machine import Program, RangeTable, machine_example
from jaxstark.logup import AuxFrame, Interaction, aux_constraints, build_aux, bus_id, bus_layout, check_buses
from jaxstark.memory import dispatch_count
from jaxstark.prover import check_trace
from tests.reference import P, ext_inv, ext_mul

ALU_COLS = {"op": 5, "a": 6, "b": 7, "c": 8, "out": 10, "is_real": 4}


def cfg():
    return js.StarkConfig(blowup=2, num_queries=10, grinding_bits=2, fri_final_degree=4)


def ext_add(a, b):
    return tuple((x + y) % P for x, y in zip(a, b, strict=True))


def ext_scale(a, s):
    return tuple(x * s % P for x in a)


def reference_aux(air, trace, beta, gamma):
    """Aux columns and bus sums with Python integers, straight from the definitions."""
    trace = np.asarray(trace).tolist()
    n = len(trace)
    interactions = air.interactions()

    def frac(k, row):
        it = interactions[k]
        vals = [int(np.asarray(v.v)) if isinstance(v, Val) else v for v in it.values([Val(jnp.uint64(x)) for x in row])]
        m = it.multiplicity([Val(jnp.uint64(x)) for x in row])
        m = int(np.asarray(m.v)) if isinstance(m, Val) else m
        acc, g = (bus_id(it.bus), 0, 0), gamma
        for v in vals:
            acc = ext_add(acc, ext_scale(g, v))
            g = ext_mul(g, gamma)
        d = ext_add(beta, ext_scale(acc, P - 1))
        return ext_scale(ext_inv(d), m if it.is_send else P - m)

    columns, sums = [], []
    for lay in bus_layout(air):
        group_cols = []
        for group in lay.groups:
            col = []
            for row in trace:
                v = (0, 0, 0)
                for k in group:
                    v = ext_add(v, frac(k, row))
                col.append(v)
            group_cols.append(col)
        columns += group_cols[:-1]
        row_total = [(0, 0, 0)] * n
        for col in group_cols:
            row_total = [ext_add(x, y) for x, y in zip(row_total, col, strict=True)]
        total = (0, 0, 0)
        for x in row_total:
            total = ext_add(total, x)
        n_inv = pow(n, P - 2, P)
        running, s = [], (0, 0, 0)
        for x in row_total:
            running.append(s)
            s = ext_add(s, ext_add(x, ext_scale(total, P - n_inv)))
        assert s == (0, 0, 0)  # the running column closes
        columns.append(running)
        sums.append(total)
    return np.array(columns, np.uint64).transpose(1, 0, 2), np.array(sums, np.uint64)


class PackedOnce(Alu):
    @property
    def interactions_per_column(self):
        return 1


@pytest.mark.parametrize("air", [Alu(bus=True), PackedOnce(bus=True), Program()], ids=["alu", "alu-pack1", "program"])
def test_aux_columns_match_python_integers_and_satisfy_their_constraints(air):
    rng = np.random.default_rng(3)
    beta, gamma = (tuple(int(x) for x in rng.integers(0, P, 3, dtype=np.uint64)) for _ in range(2))
    if isinstance(air, Program):
        trace = machine_example(4, bits=3)[1][1]
    else:
        trace = alu_trace(4)[0]
    aux, sums, degenerate = build_aux(
        air, trace, jnp.asarray(np.array(beta, np.uint64)), jnp.asarray(np.array(gamma, np.uint64))
    )
    want_aux, want_sums = reference_aux(air, trace, beta, gamma)
    chex.assert_shape(aux, (trace.shape[0], air.num_aux_columns, 3))
    np.testing.assert_array_equal(np.asarray(aux), want_aux)
    np.testing.assert_array_equal(np.asarray(sums), want_sums)
    assert not bool(degenerate)
    # every aux constraint vanishes on every row, the last one included (cyclic)
    cur = [Val(trace[:, i]) for i in range(air.width)]
    ext_cols = lambda a: [Val(a[:, j], True) for j in range(a.shape[1])]  # noqa: E731
    b, g = (Val(jnp.asarray(np.array(x, np.uint64)), True) for x in (beta, gamma))
    frame = AuxFrame(ext_cols(aux), ext_cols(jnp.roll(aux, -1, axis=0)), b, g, [Val(s, True) for s in sums])
    log_n = trace.shape[0].bit_length() - 1
    values = aux_constraints(air, log_n, cur, frame)
    assert len(values) == air.num_aux_columns
    for v in values:
        assert not np.asarray(v.v).any()
    # and a changed aux value breaks one
    bad = AuxFrame(ext_cols(aux.at[1, -1, 0].add(1)), frame.nxt, frame.beta, frame.gamma, frame.sums)
    assert any(np.asarray(v.v).any() for v in aux_constraints(air, log_n, cur, bad))


def test_degrees_and_packing_are_derived_from_the_declarations():
    assert Alu(bus=True).aux_degrees() == (2, 3)  # "alu": one send; "range": two sends in one column
    assert PackedOnce(bus=True).aux_degrees() == (2, 2, 2)
    assert [lay.bus for lay in bus_layout(Alu(bus=True))] == ["alu", "range"]
    assert Alu().num_aux_columns == 0 and Alu().interactions() == []
    assert Alu(bus=True).fingerprint() != Alu().fingerprint()

    class Squares(js.AIR):
        width: int = eqx.field(static=True, default=2)

        def constraint_degrees(self):
            return (1,)

        def transition(self, cur, nxt, periodic, public):
            return [nxt[0] - cur[0]]

        def interactions(self):
            return [Interaction.send("sq", lambda row: [row[0] * row[0], 5], lambda row: row[1] * row[1] * row[1])]

    assert Squares().aux_degrees() == (3,)  # max(1 + deg d = 3, deg m = 3)
    assert Squares().max_degree == 3

    class Tagged(Squares):  # a constant written with Val.const is of degree 0, as an int is
        def interactions(self):
            return [Interaction.send("sq", lambda row: [js.Val.const(7), row[0] * js.Val.const(2)], lambda row: 1)]

    assert Tagged().aux_degrees() == (2,)


def test_debug_check_names_the_bus_and_a_witness_tuple():
    tables = machine_example(4, bits=3)
    check_buses([(air, trace) for air, trace, _ in tables])  # honest: no error
    program = tables[1][1].at[0, 5].add(np.uint64(1))
    with pytest.raises(
        js.BusImbalance, match=r"bus 'alu' does not balance: tuple \(.*\) has net multiplicity -1"
    ) as info:
        check_buses([(tables[0][0], tables[0][1]), (tables[1][0], program), (tables[2][0], tables[2][1])])
    assert info.value.bus == "alu"
    with pytest.raises(js.BusImbalance, match="bus 'range'"):
        js.prove([t for t in tables if not isinstance(t[0], RangeTable)], config=cfg(), debug=True)


# --- end to end ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def machine():
    tables = machine_example(4, bits=3)
    statement = [air for air, _, _ in tables]
    return tables, statement, js.prove(tables, config=cfg(), debug=True)


@pytest.mark.parametrize("log_n, bits", [(4, 3), (6, 4)])
def test_machine_proves_and_verifies_with_tables_of_different_heights(machine, log_n, bits):
    tables = machine_example(log_n, bits=bits)
    proof = machine[2] if (log_n, bits) == (4, 3) else js.prove(tables, config=cfg())
    assert [t.log_n for t in proof.tables] == [log_n, max(1, log_n - 2), bits]
    statement = [air for air, _, _ in tables]
    assert js.verify(statement, proof, config=cfg())
    assert js.verify(statement, proof.to_bytes(), config=cfg(), log_n=[log_n, None, bits])
    for table, (air, _, _) in zip(proof.tables, tables, strict=True):
        chex.assert_shape(
            [table.aux_root, table.bus_sums, table.aux_z],
            [(1, 32), (len(bus_layout(air)), 3), (air.num_aux_columns, 3)],
        )


def test_a_chunked_table_on_a_bus_balances_with_the_others():
    """The (6, 4) machine's ALU (2^6 rows) in four chunks of 2^4 (jaxstark.chunking): each chunk
    sends its own operations on the "alu" and "range" buses; the program and range tables (2^4
    rows) stay whole. (Every unit has a shape proven above: the executables are reused.)"""
    tables = machine_example(6, bits=4)
    chunked = js.StarkConfig(blowup=2, num_queries=10, grinding_bits=2, fri_final_degree=4, max_chunk_rows_log2=4)
    proof = js.prove(tables, config=chunked)
    assert proof.chunks == (2, 0, 0) and len(proof.tables) == 6
    statement = [air for air, _, _ in tables]
    assert js.verify(statement, proof.to_bytes(), config=cfg())
    short = dataclasses.replace(proof, tables=proof.tables[1:])  # a chunk dropped
    reject(statement, short, "tables")


def reject(statement, proof, code, match=None):
    with pytest.raises(js.InvalidProof) as info:
        js.verify(statement, proof, config=cfg())
    assert info.value.code == code, info.value
    if match:
        assert match in str(info.value), info.value
    return info.value


def test_receiver_with_a_wrong_multiplicity_is_rejected_naming_the_bus(machine):
    tables, statement, _ = machine
    bad = list(tables)
    bad[1] = (tables[1][0], tables[1][1].at[0, 5].add(np.uint64(1)), ())
    with pytest.warns(UserWarning, match="bus 'alu' does not balance"):
        proof = js.prove(bad, config=cfg())
    reject(statement, proof, "bus", "bus 'alu' does not balance")
    # a prover that publishes balancing sums instead is caught by the aux constraints
    sums = proof.tables[1].bus_sums
    total = (proof.tables[0].bus_sums[0].astype(object) + sums[0].astype(object)) % P
    forged_sums = np.array([(int(s) - int(t)) % P for s, t in zip(sums[0], total, strict=True)], np.uint64)[None]
    forged = dataclasses.replace(
        proof, tables=(proof.tables[0], dataclasses.replace(proof.tables[1], bus_sums=forged_sums), proof.tables[2])
    )
    err = reject(statement, forged, "ood")
    assert "table 0" in str(err)  # the changed sums change every later challenge; table 0 fails first


def test_sender_with_a_changed_tuple_is_rejected_naming_the_bus(machine):
    tables, statement, _ = machine
    alu = np.asarray(tables[0][1]).copy()
    rows = np.nonzero((alu[:, ALU_COLS["op"]] >= 1) & (alu[:, ALU_COLS["op"]] <= 3))[0]
    assert rows.size  # add, sub or mul: c is free there, so the ALU's own constraints still hold
    row = int(rows[0])
    alu[row, ALU_COLS["c"]] += 1
    check_trace(tables[0][0], alu)
    with pytest.warns(UserWarning, match="bus 'alu'"):
        proof = js.prove([(tables[0][0], alu, ()), *tables[1:]], config=cfg())
    reject(statement, proof, "bus", "bus 'alu'")


def test_a_missing_table_is_rejected_naming_the_bus(machine):
    tables, statement, _ = machine
    with pytest.warns(UserWarning, match="bus 'range'"):
        proof = js.prove(tables[:2], config=cfg())
    reject(statement[:2], proof, "bus", "bus 'range' does not balance")
    reject(statement, proof, "tables")


def test_statement_must_match_the_tables(machine):
    tables, statement, proof = machine
    reject([statement[1], statement[0], statement[2]], proof, "wrong-air", "table 0 (Program)")
    with pytest.raises(TypeError, match="log_n lists 1 heights for 3 tables"):
        js.verify(statement, proof, config=cfg(), log_n=[4])
    reject(statement, proof.to_bytes()[:-1], "format")


def test_bit_flips_in_a_multi_table_proof_are_rejected(machine):
    """(The statement pins the heights, as a deployment would: a flipped height is then rejected
    before the verifier compiles checks for it.)"""
    _, statement, proof = machine
    heights = [t.log_n for t in proof.tables]
    data = proof.to_bytes()
    rng = np.random.default_rng(11)
    codes = set()
    for bit in rng.choice(len(data) * 8, size=40, replace=False):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(js.InvalidProof) as info:
            js.verify(statement, bytes(flipped), config=cfg(), log_n=heights)
        codes.add(info.value.code)
    assert len(codes) >= 3, codes


def test_tables_without_interactions_skip_the_aux_round(machine):
    air, trace, public = EXAMPLES["fibonacci"](4)
    before = dispatch_count("aux commit")
    proof = js.prove(air, trace, public, cfg())
    assert dispatch_count("aux commit") == before  # no aux round for this table
    assert proof.tables[0].aux_root.shape == (0, 32) and proof.tables[0].aux_paths.shape == (10, 0, 32)
    # a table without interactions beside tables with them: proved in the same statement
    tables = machine_example(4, bits=3)
    both = js.prove([*tables, (air, trace, public)], config=cfg())
    assert both.tables[3].aux_root.shape == (0, 32)
    assert js.verify([*(t[0] for t in tables), (air, public)], both, config=cfg())
