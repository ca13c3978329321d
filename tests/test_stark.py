"""End-to-end: prove and verify the example AIRs; the verifier's negative menu."""

import dataclasses

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.memory import executor

CASES = [  # every example, every hash, blowups 2/4/8, 2^3 ... 2^16 rows (kept small: each case compiles)
    ("fibonacci", 3, 2, "keccak256"),
    ("fibonacci", 5, 8, "blake3"),
    ("fibonacci", 16, 2, "blake3"),
    ("alu", 3, 2, "poseidon2"),
    ("alu", 8, 4, "blake3"),
    ("wide", 3, 2, "blake3"),
]
# The wide example at 130 columns rather than its default 316, at 40% of the compile (15.4 ->
# 6.4 s on a 2-core CPU): rows of 1040 bytes (a BLAKE3 leaf over two chunks), 16 full column
# blocks and a partial one, 129 degree-3 constraints. Leaves of three chunks and more are held
# to the references in tests/test_merkle.py (400 columns) and tests/test_kernels_merkle.py (316
# columns, against the blake3 package).
WIDTHS = {"wide": 130}


def small_config(blowup=2, hash="blake3", queries=12):
    return js.StarkConfig(blowup=blowup, num_queries=queries, grinding_bits=4, fri_final_degree=4, hash=hash)


@pytest.mark.parametrize("name, log_n, blowup, hash", CASES, ids=[f"{c[0]}-2^{c[1]}-b{c[2]}-{c[3]}" for c in CASES])
def test_examples_prove_and_verify(name, log_n, blowup, hash):
    air, trace, public = EXAMPLES[name](log_n, **({"width": WIDTHS[name]} if name in WIDTHS else {}))
    cfg = small_config(blowup, hash)
    proof = js.prove(air, trace, public, cfg, debug=True)
    table = proof.tables[0]
    n, c, q, parts = 1 << log_n, air.width, cfg.num_queries, air.composition_parts
    log_l = log_n + cfg.log_blowup
    chex.assert_shape(
        [table.trace_root, table.trace_z, table.parts_z, table.trace_rows, table.trace_paths, table.parts_rows],
        [(32,), (c, 3), (parts, 3), (q, c), (q, log_l, 32), (q, 3 * parts)],
    )
    chex.assert_shape([table.aux_root, table.bus_sums, table.aux_rows], [(0, 32), (0, 3), (q, 0)])  # no interactions
    for k, (rows, paths) in enumerate(zip(table.fri_rows, table.fri_paths, strict=True)):
        chex.assert_shape([rows, paths], [(q, 6), (q, log_l - 1 - k, 32)])
    assert table.fri_final.shape[0] <= cfg.fri_final_degree and table.fri_final.shape[0] * 2 ** len(table.fri_rows) == n
    assert js.verify(air, proof, public, cfg)
    data = proof.to_bytes()
    assert js.verify(air, data, public, cfg)
    assert js.Proof.from_bytes(data).to_bytes() == data


# --- the negative menu ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fib():
    air, trace, public = EXAMPLES["fibonacci"](6)
    cfg = small_config(4, "blake3", queries=16)
    return air, trace, public, cfg, js.prove(air, trace, public, cfg)


def reject_code(air, proof, public, cfg) -> str:
    with pytest.raises(js.InvalidProof) as info:
        js.verify(air, proof, public, cfg)
    return info.value.code


def test_changed_trace_value_is_rejected(fib):
    air, trace, public, cfg, _ = fib
    bad = trace.at[5, 1].set(trace[5, 1] + np.uint64(1))
    with pytest.warns(UserWarning, match="does not satisfy the AIR") as caught:
        proof = js.prove(air, bad, public, cfg)  # no debug check: a proof comes out
    (warned,) = [w for w in caught if "does not satisfy the AIR" in str(w.message)]
    assert warned.filename == __file__, [(w.filename, str(w.message)[:80]) for w in caught]  # the caller's line
    assert reject_code(air, proof, public, cfg) == "ood"


def test_debug_mode_names_constraint_and_row(fib):
    air, trace, public, cfg, _ = fib
    bad = trace.at[5, 1].set(trace[5, 1] + np.uint64(1))
    with pytest.raises(js.AirViolation, match="transition constraint 0 fails at row 5"):
        js.prove(air, bad, public, cfg, debug=True)
    with pytest.raises(js.AirViolation, match="boundary constraint 2 fails"):
        js.prove(air, trace, (public[0] + 1,), cfg, debug=True)


def test_changed_public_input_is_rejected(fib):
    air, _, public, cfg, proof = fib
    assert reject_code(air, proof, (public[0] + 1,), cfg) == "ood"
    assert reject_code(air, proof, (), cfg) == "public-inputs"


def test_other_air_and_other_config_are_rejected(fib):
    air, _, public, cfg, proof = fib
    alu, _, _ = EXAMPLES["alu"](6)
    assert reject_code(alu, proof, (), cfg) == "wrong-air"
    assert reject_code(air, proof, public, small_config(4, "blake3", queries=17)) == "wrong-config"
    assert reject_code(air, proof, public, small_config(4, "keccak256", queries=16)) == "wrong-config"


def test_truncated_proof_is_rejected(fib):
    air, _, public, cfg, proof = fib
    data = proof.to_bytes()
    for cut in (0, 5, 100, len(data) // 2, len(data) - 1):
        with pytest.raises(js.ProofFormatError):
            js.verify(air, data[:cut], public, cfg)
    with pytest.raises(js.ProofFormatError, match="trailing"):
        js.verify(air, data + b"\x00", public, cfg)


def test_bit_flips_anywhere_are_rejected(fib):
    """>= 200 random single-bit flips of the serialized proof: each is rejected, none crashes."""
    air, _, public, cfg, proof = fib
    data = bytearray(proof.to_bytes())
    rng = np.random.default_rng(7)
    positions = rng.choice(len(data) * 8, size=220, replace=False)
    codes = {}
    for bit in positions:
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(js.InvalidProof) as info:
            js.verify(air, bytes(flipped), public, cfg)
        codes[info.value.code] = codes.get(info.value.code, 0) + 1
    assert sum(codes.values()) == 220
    assert len(codes) >= 4, codes  # flips land in different parts and fail different checks


def test_proofs_are_deterministic_and_rounds_do_not_recompile(fib):
    air, trace, public, cfg, proof = fib
    compiled = len(executor._COMPILED)
    again = js.prove(air, trace, public, cfg)
    assert again.to_bytes() == proof.to_bytes()
    assert len(executor._COMPILED) == compiled  # the planner found every executable already built


def test_clear_caches_drops_executables_and_proofs_stay_the_same(fib):
    air, trace, public, cfg, proof = fib
    js.prove(air, trace, public, cfg)  # every round of this shape compiled
    assert js.clear_caches() > 0
    assert len(executor._COMPILED) == 0
    assert js.prove(air, trace, public, cfg).to_bytes() == proof.to_bytes()
    assert len(executor._COMPILED) > 0  # compiled (or loaded from the persistent cache) again


def test_size_breakdown_adds_up(fib):
    *_, proof = fib
    parts = proof.size_breakdown()
    assert sum(parts.values()) == len(proof.to_bytes())
    assert parts["trace paths"] > 0 and parts["FRI layer paths"] > 0


def test_bad_prover_inputs_are_named():
    air, trace, public = EXAMPLES["fibonacci"](3)
    cfg = small_config()
    with pytest.raises(js.ShapeError, match=r"trace must have shape \(rows, 2\)"):
        js.prove(air, trace[:, :1], public, cfg)
    with pytest.raises(js.ShapeError, match="power of two"):
        js.prove(air, trace[:6], public, cfg)
    with pytest.raises(ValueError, match="takes 1 public input"):
        js.prove(air, trace, (), cfg)

    class Quartic(js.AIR):
        width: int = eqx.field(static=True, default=1)

        def constraint_degrees(self):
            return (4,)

        def transition(self, cur, nxt, periodic, public):
            return [cur[0] ** 4 - cur[0] ** 4]

    with pytest.raises(ValueError, match="blowup 2 supports at most degree 3"):
        js.prove(Quartic(), trace[:, :1], (), js.StarkConfig(blowup=2, num_queries=4))


@pytest.mark.parametrize("where", ["host", "device", "debug"])
def test_trace_values_at_or_above_p_are_named_by_row_and_column(where):
    """The trace commit checks the values on the device (a numpy or a device trace); with
    ``debug`` they are checked on the host before anything runs. Either way the error names the
    table, the count and the first bad value by row and column."""
    air, trace, public = EXAMPLES["fibonacci"](3)
    bad = np.asarray(trace).copy()
    bad[5, 1], bad[6, 0] = js.gl.P, np.uint64(2**64 - 1)
    given = jnp.asarray(bad) if where == "device" else bad
    match = r"table 0 \(Fibonacci\) trace: 2 value\(s\) are >= p = \d+ \(first at index \(5, 1\): \d+\)"
    with pytest.raises(js.NonCanonicalError, match=match):
        js.prove(air, given, public, small_config(), debug=where == "debug")


def test_config_validation_and_security_report():
    with pytest.raises(ValueError, match="blowup must be a power of two"):
        js.StarkConfig(blowup=3)
    with pytest.raises(ValueError, match="num_queries"):
        js.StarkConfig(num_queries=0)
    with pytest.raises(ValueError, match="hash must be one of"):
        js.StarkConfig(hash="sha256")
    cfg = js.StarkConfig(blowup=4, num_queries=40, grinding_bits=16)
    assert cfg.security_bits() == 96
    assert "conjectured" in cfg.security_report()


class Stepper(js.AIR):
    """x[i+1] = x[i] + k[i mod 4] * y[i], y constant: exercises periodic columns."""

    width: int = eqx.field(static=True, default=2)

    def constraint_degrees(self):
        return (2, 1)

    def transition(self, cur, nxt, periodic, public):
        return [nxt[0] - (cur[0] + periodic[0] * cur[1]), nxt[1] - cur[1]]

    def boundary(self, public):
        return [(0, 0, 5)]

    def periodic_columns(self):
        return [[3, 1, 4, 1]]


def stepper_trace(log_n, y=7):
    from jaxstark import gl

    x, rows = 5, []
    for i in range(1 << log_n):
        rows.append([x, y])
        x = (x + [3, 1, 4, 1][i % 4] * y) % gl.P
    return gl.from_int(rows)


def test_periodic_columns_prove_verify_and_are_enforced():
    air, cfg = Stepper(), small_config(2, "blake3")
    trace = stepper_trace(5)
    assert js.verify(air, js.prove(air, trace, (), cfg, debug=True), (), cfg)
    bad = trace.at[3, 0].set(trace[3, 0] + np.uint64(1))
    with pytest.raises(js.AirViolation, match="transition constraint 0 fails at row 2"):
        js.prove(air, bad, (), cfg, debug=True)
    with pytest.warns(UserWarning):
        proof = js.prove(air, bad, (), cfg)
    assert reject_code(air, proof, (), cfg) == "ood"


def test_heights_the_air_cannot_carry_are_refused_by_both_sides():
    """A periodic column longer than the trace (or a boundary row past its end) makes the
    statement meaningless: the prover refuses, and the verifier rejects such a claimed height."""
    air, cfg = Stepper(), small_config(2, "blake3")
    with pytest.raises(js.ShapeError, match="periodic column 0 has length 4"):
        js.prove(air, stepper_trace(1), (), cfg)
    proof = js.prove(air, stepper_trace(3), (), cfg)
    forged = dataclasses.replace(proof, tables=(dataclasses.replace(proof.tables[0], log_n=1),))
    assert reject_code(air, forged, (), cfg) == "wrong-height"


def test_verifier_can_pin_the_trace_height(fib):
    air, _, public, cfg, proof = fib
    assert js.verify(air, proof, public, cfg, log_n=6)
    with pytest.raises(js.InvalidProof) as info:
        js.verify(air, proof, public, cfg, log_n=7)
    assert info.value.code == "wrong-height"


def test_air_fingerprint_covers_boundary_and_periodic_columns():
    class Other(Stepper):
        def periodic_columns(self):
            return [[3, 1, 4, 2]]

    assert Other().fingerprint() != Stepper().fingerprint()
    assert Other().fingerprint().split("/")[1:3] == Stepper().fingerprint().split("/")[1:3]


def test_annotated_transcript_is_the_proofs_and_rejects_like_verify(fib):
    """The replayed transcript absorbs the proof's own values in protocol order; a tampered
    proof raises the same rejection as verify."""
    from jaxstark.verifier import annotated_transcript

    air, _, public, cfg, proof = fib
    log = annotated_transcript(air, proof.to_bytes(), public, cfg)
    table = proof.tables[0]
    shared = [(label, kind) for where, label, kind, _ in log if where == "statement"]
    assert shared[:2] == [("config", "digest"), ("tables", "base")] and ("trace root", "digest") in shared
    by_label = {label: value for _, label, _, value in log}
    np.testing.assert_array_equal(by_label["trace root"], table.trace_root)
    np.testing.assert_array_equal(by_label["composition root"], table.parts_root)
    np.testing.assert_array_equal(by_label["public inputs"], np.asarray(public, np.uint64))
    np.testing.assert_array_equal(by_label["pow nonce"], np.asarray([table.nonce]).reshape(-1))
    assert by_label["fri queries"].shape == (cfg.num_queries,)
    mine = [label for where, label, _, _ in log if where != "statement"]
    assert mine[0] == "fork" and mine[-1] == "fri queries"
    assert (
        mine.index("composition alphas") < mine.index("ood point") < mine.index("deep gamma") < mine.index("pow nonce")
    )
    assert {w for w, _, _, _ in log} == {"statement", "table 0 (Fibonacci)"}
    bad = dataclasses.replace(proof, tables=(eqx.tree_at(lambda t: t.nonce, table, table.nonce + np.uint64(1)),))
    with pytest.raises(js.InvalidProof) as exc:
        annotated_transcript(air, bad, public, cfg)
    assert exc.value.code == reject_code(air, bad, public, cfg)
