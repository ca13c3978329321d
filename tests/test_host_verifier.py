"""The verifier runs on the host: its transcript draws what the prover's draws (every hash), its
DEEP and FRI algebra equals the rounds' on random values, it compiles nothing, and no corruption
of a proof's bytes gets past it or crashes it."""

import contextlib
import dataclasses
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark import ext, gl, verifier
from jaxstark.field.host import HostVal, batch, interpolate
from jaxstark.hash.interface import HASHES
from jaxstark.ntt import intt
from jaxstark.protocol import algebra
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.rounds.r4_deep import deep_combine
from jaxstark.rounds.r4_fri_layer import _fold
from jaxstark.transcript import HostTranscript, Transcript
from tests import attacks

P = gl.P


def script(t, root, values, ext_values):
    """Every transcript operation the protocol uses, in one sequence."""
    t = t.absorb_digest("trace root", root).absorb_digest("roots", np.stack([root, root[::-1]]))
    t = t.absorb_base("public", values).absorb_base("empty", np.zeros((0,), np.uint64))
    t, alpha = t.challenge_ext("alpha")
    t, alphas = t.challenge_ext("alphas", 7)
    t = t.absorb_ext("ood", ext_values)
    t, betas = t.challenge_base("betas", 5)
    t, beta = t.challenge_base("beta")
    child = t.fork(3)
    child = child.absorb_digest("text", child.text_digest("Fibonacci/w2/d1,1/0123"))
    words = [child.pow_word(n) for n in (0, 1, 2**40)]
    child, q = child.query_indices("queries", 30, 1 << 12)
    return child, (alpha, alphas, betas, beta, q, *words)


@pytest.mark.parametrize("name", sorted(HASHES))
def test_the_host_transcript_draws_what_the_jax_transcript_draws(name):
    rng = np.random.default_rng(len(name))
    root = rng.integers(0, 256, 32, dtype=np.uint8)
    values = rng.integers(0, P, 6, dtype=np.uint64)
    ext_values = rng.integers(0, P, (3, 3), dtype=np.uint64)
    tj, outs_j = script(Transcript.new("jaxstark-test", name, annotated=True), jnp.asarray(root), values, ext_values)
    th, outs_h = script(HostTranscript.new("jaxstark-test", name, annotated=True), root, values, ext_values)
    for a, b in zip(outs_j, outs_h, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert bytes(np.asarray(tj.state)) == th.state
    assert [(e.label, e.kind) for e in tj.log] == [(e.label, e.kind) for e in th.log]
    for a, b in zip(tj.log, th.log, strict=True):
        np.testing.assert_array_equal(np.asarray(a.value), b.value)
    assert HostTranscript.new("x", name).pow_ok(5, 0) and isinstance(outs_h[-1], int)


@pytest.mark.parametrize(("c", "parts", "a"), [(4, 2, 3), (1, 1, 0), (3, 2, 3), (2, 3, 1)])
def test_the_host_algebra_equals_the_rounds_on_random_values(c, parts, a):
    """DEEP on the rounds' path (``deep_combine``) and on the verifier's (``deep_numerators`` with
    its host sums) against a direct sum over every term with its own weight, for tables with and
    without aux columns, one main column, and as many main as aux columns."""
    rng = np.random.default_rng(7 + c + 10 * a)
    q = 9
    rand = lambda *s: rng.integers(0, P, s, dtype=np.uint64)  # noqa: E731
    xs, rows, aux_rows, parts_rows = rand(q), rand(q, c), rand(q, a, 3), rand(q, parts, 3)
    ood = OutOfDomain(*(jnp.asarray(v) for v in (rand(3), rand(c, 3), rand(c, 3), rand(parts, 3), rand(a, 3),
                                                  rand(a, 3))))  # fmt: skip
    gamma, zg = rand(3), rand(3)
    g_pows = ext.powers(jnp.asarray(gamma), 2 * c + parts + 2 * a)
    want = np.asarray(deep_combine(jnp.asarray(xs), jnp.asarray(rows), jnp.asarray(aux_rows), jnp.asarray(parts_rows),
                                   ood, g_pows, jnp.asarray(zg)))  # fmt: skip
    hg = [HostVal(tuple(g)) for g in np.asarray(g_pows).tolist()]
    g1, g2, g3, g4, g5 = algebra.deep_weights(hg, c, parts, a)

    def dot(values, weights):  # values (q, k) base or (q, k, 3) extension, one HostVal batch out
        out = HostVal(0)
        for k, w in enumerate(weights):
            out = out + (HostVal(values[:, k]) if values.ndim == 3 else batch(values[:, k])) * w
        return out

    def dot_claims(values, weights):
        return dot(np.asarray(values)[None], weights)

    num_z = dot(rows, g1) + dot(parts_rows, g3) + dot(aux_rows, g4)
    num_z = num_z - (dot_claims(ood.trace_z, g1) + dot_claims(ood.parts_z, g3) + dot_claims(ood.aux_z, g4))
    num_zg = dot(rows, g2) + dot(aux_rows, g5) - (dot_claims(ood.trace_zg, g2) + dot_claims(ood.aux_zg, g5))
    got = algebra.deep_value(batch(xs), HostVal(np.asarray(ood.z)), HostVal(zg), num_z, num_zg, HostVal.inv)
    np.testing.assert_array_equal(got.array(), want)

    # the verifier's own numerators, formed as verifier._openings forms them
    fields = (ood.trace_z, ood.trace_zg, ood.parts_z, ood.aux_z, ood.aux_zg)
    claims = verifier._Claims(ood.z, *(batch(np.asarray(v)) for v in fields))
    host = algebra.deep_numerators(verifier._dot_base, verifier._dot_ext, lambda w: w, batch(rows),
                                   batch(parts_rows).reshape(q, parts, 3), batch(aux_rows).reshape(q, a, 3), claims,
                                   hg)  # fmt: skip
    for mine, direct in zip(host, (num_z, num_zg), strict=True):
        np.testing.assert_array_equal(mine.array(), direct.array())


def test_deep_numerators_refuses_weights_that_do_not_match_the_terms():
    claims = verifier._Claims(*(np.zeros(s, np.uint64) for s in ((3,), (2, 3), (2, 3), (1, 3), (0, 3), (0, 3))))
    hg = [HostVal(1)] * 4  # 2 c + P + 2 a = 5 terms
    with pytest.raises(ValueError, match="4 weights for 5 terms"):
        algebra.deep_numerators(verifier._dot_base, verifier._dot_ext, lambda w: w, None, None, None, claims, hg)


def _at_a_random_point(air, log_n: int, seed: int):
    """Everything ``combine_constraints`` reads, as host values at a random extension point."""
    rng = np.random.default_rng(seed)
    e = lambda: HostVal(tuple(int(v) for v in rng.integers(0, P, 3, dtype=np.uint64)))  # noqa: E731
    z = e()
    pub = [HostVal(int(v)) for v in rng.integers(0, P, air.num_public_inputs, dtype=np.uint64)]
    m = len(air.constraint_degrees()) + len(list(air.boundary(pub))) + air.num_aux_columns
    cur, nxt = [e() for _ in range(air.width)], [e() for _ in range(air.width)]
    periodic = [e() for _ in air.periodic_arrays()]
    return z, (z ** (1 << log_n) - 1).inv(), cur, nxt, periodic, pub, [e() for _ in range(m)], e


def test_an_aux_quotient_given_whole_is_the_one_formed_inside_and_bad_ones_are_named():
    from jaxstark.examples import Alu
    from jaxstark.examples.fibonacci import Fibonacci
    from jaxstark.logup import AuxFrame, bus_layout

    air, log_n = Alu(bus=True), 5
    z, zn_inv, cur, nxt, periodic, pub, alphas, e = _at_a_random_point(air, log_n, 11)
    a = air.num_aux_columns
    aux = AuxFrame([e() for _ in range(a)], [e() for _ in range(a)], e(), e(), [e() for _ in bus_layout(air)])
    args = (air, log_n, z, zn_inv, HostVal.inv, cur, nxt, periodic, pub, alphas)
    whole = algebra.combine_constraints(*args, aux)
    given = algebra.aux_quotient(air, log_n, cur, aux, alphas[-a:], zn_inv)
    assert algebra.combine_constraints(*args, None, None, given).c == whole.c
    assert algebra.combine_constraints(*args, None, None, given + HostVal(1)).c != whole.c
    with pytest.raises(ValueError, match=f"{a - 1} challenges for {a} aux constraints"):
        algebra.aux_quotient(air, log_n, cur, aux, alphas[-a + 1 :], zn_inv)
    with pytest.raises(ValueError, match=f"has {a} aux columns: give their values"):
        algebra.combine_constraints(*args)
    with pytest.raises(ValueError, match=f"{len(alphas) - 1} challenges for {len(alphas)} constraints"):
        algebra.combine_constraints(*args[:-1], alphas[:-1], aux)
    fib = Fibonacci()
    z, zn_inv, cur, nxt, periodic, pub, alphas, e = _at_a_random_point(fib, log_n, 12)
    with pytest.raises(ValueError, match="has no aux columns: an aux quotient was given for none"):
        algebra.combine_constraints(fib, log_n, z, zn_inv, HostVal.inv, cur, nxt, periodic, pub, alphas, aux_sum=e())


def test_the_host_fold_equals_the_rounds_on_random_values():
    rng = np.random.default_rng(8)
    q = 9
    rand = lambda *s: rng.integers(0, P, s, dtype=np.uint64)  # noqa: E731
    lo, hi, x_inv, beta = rand(q, 3), rand(q, 3), rand(q), rand(3)
    want = np.asarray(_fold(jnp.asarray(lo), jnp.asarray(hi), jnp.asarray(x_inv), jnp.asarray(beta)))
    got = algebra.fold_pair(HostVal(lo), HostVal(hi), batch(x_inv), HostVal(beta))
    np.testing.assert_array_equal(got.array(), want)
    for j in range(q):  # a batch is its scalars side by side
        one = algebra.fold_pair(HostVal(tuple(lo[j])), HostVal(tuple(hi[j])), int(x_inv[j]), HostVal(tuple(beta)))
        assert one.c == tuple(int(v) for v in want[j])


def test_points_and_interpolation_on_the_host():
    rng = np.random.default_rng(3)
    for m in (1, 2, 8, 32):
        vals = rng.integers(0, P, m, dtype=np.uint64)
        assert interpolate(vals.tolist()) == np.asarray(intt(jnp.asarray(vals)[:, None]))[:, 0].tolist()
    with pytest.raises(ValueError, match="power of two"):
        interpolate([1, 2, 3])
    pos = np.array([0, 1, 5, 31])
    got = algebra.lde_point(5, batch(pos), shift=2)
    assert list(got) == [pow(gl.root_of_unity(5), int(t), P) * pow(3, 4, P) % P for t in pos]
    x_inv = algebra.layer_x_inv(6, 1, batch(pos))
    x = algebra.lde_point(5, batch(pos), shift=1)
    assert all(int(a) * int(b) % P == 1 for a, b in zip(x_inv, x, strict=True))


@contextlib.contextmanager
def compilations():
    """Count JAX compilations (traces to jaxpr and backend compiles) inside the block."""
    events = []

    def listener(event, duration, **kw):
        if event.startswith("/jax/core/compile"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


STORED = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "verify"


def test_verifying_compiles_nothing():
    """Every hash: Fibonacci under BLAKE3 (the attacks' proof) and the stored ALU 2^22 proofs
    under Poseidon2 and Keccak-256 (made on an H200 by ``benchmarks/make_verify_proofs.sh``;
    made again when the proof format changes), a two-table bus proof and a rejection (every
    check runs for the proofs accepted; the rejection adds the error path)."""
    from jaxstark.examples import Alu

    air, _, public = attacks.fib()
    alu = js.StarkConfig(blowup=2, num_queries=40, grinding_bits=16, fri_final_degree=64)
    bus, fib = attacks.bus_proof(), attacks.fib_proof(attacks.CFG)
    forged = attacks.with_table(fib, trace_z=attacks.add(fib.tables[0].trace_z))  # a claim T(z) off by one
    with compilations() as events:
        assert js.verify(air, fib.to_bytes(), public, attacks.CFG)
        for h in ("poseidon2", "keccak256"):
            data = (STORED / f"alu22_{h}.proof").read_bytes()
            assert js.verify(Alu(), data, (), dataclasses.replace(alu, hash=h), log_n=22, min_security_bits=50)
        assert attacks.verify_bus(bus)
        with pytest.raises(js.InvalidProof):
            attacks.verify_fib(forged)
    assert events == [], events


def test_300_random_bit_flips_are_all_rejected():
    air, _, public = attacks.fib()
    raw = bytearray(attacks.fib_proof().to_bytes())
    rng = np.random.default_rng(300)
    codes = {}
    for bit in rng.choice(8 * len(raw), 300, replace=False):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(js.InvalidProof) as exc:  # anything else (a crash) fails the test
            js.verify(air, bytes(flipped), public, attacks.CFG)
        codes[exc.value.code] = codes.get(exc.value.code, 0) + 1
    assert len(codes) >= 4, codes  # flips land in the header, the roots, the openings and the claims


def test_the_prover_writes_the_layout_the_verifier_demands():
    from jaxstark.protocol.layout import table_shapes

    air, _, _ = attacks.fib()
    cases = [(air, attacks.fib_proof().tables[0])]
    cases += list(zip([t[0] for t in attacks.bus_tables()], attacks.bus_proof().tables, strict=True))
    for a, table in cases:
        for name, spec in table_shapes(a, attacks.CFG, table.log_n).items():
            values = getattr(table, name)
            if isinstance(spec, list):
                assert [(v.shape, v.dtype) for v in values] == spec, name
            else:
                assert (np.asarray(values).shape, np.asarray(values).dtype) == spec, name


class Still(js.AIR):
    """Three constant columns."""

    width: int = eqx.field(static=True, default=3)

    def constraint_degrees(self):
        return (1, 1, 1)

    def transition(self, cur, nxt, periodic, public):
        return [nxt[j] - cur[j] for j in range(3)]


def test_an_honest_proof_with_as_many_queries_as_columns_verifies():
    """The opened rows are a square (queries x columns) matrix: each query's DEEP value is its own."""
    cfg = js.StarkConfig(blowup=2, num_queries=3, grinding_bits=0, fri_final_degree=4)
    trace = np.tile(np.array([[5, 7, 9]], np.uint64), (16, 1))
    assert js.verify(Still(), js.prove(Still(), trace, (), cfg).to_bytes(), (), cfg)


class Stride(js.AIR):
    """Each row is the one before plus 2^63 + 5, a constant written with Val.const (on either
    side of the operator); the first row is zero."""

    width: int = eqx.field(static=True, default=1)

    def constraint_degrees(self):
        return (1, 1)

    def transition(self, cur, nxt, periodic, public):
        step = js.Val.const((1 << 63) + 5)
        return [nxt[0] - cur[0] - step, step + cur[0] - nxt[0]]

    def boundary(self, public):
        return [(0, 0, 0)]


def test_an_air_with_val_constants_proves_and_verifies():
    """The host evaluates the constraint code with HostVal frames: a Val.const meets them."""
    cfg = js.StarkConfig(blowup=2, num_queries=3, grinding_bits=0, fri_final_degree=4)
    trace = np.array([[i * ((1 << 63) + 5) % P] for i in range(16)], np.uint64)
    assert js.verify(Stride(), js.prove(Stride(), trace, (), cfg).to_bytes(), (), cfg)
    bad = trace.copy()
    bad[9, 0] ^= 1  # the host's constraint values at z then differ from the claimed composition
    with pytest.warns(UserWarning, match="does not satisfy the AIR"):
        proof = js.prove(Stride(), bad, (), cfg).to_bytes()
    with pytest.raises(js.InvalidProof, match="does not match the AIR's constraints"):
        js.verify(Stride(), proof, (), cfg)
