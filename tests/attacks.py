"""Attacks on the verifier, one per check: each builds a hostile proof (or statement) and names the
rejection it must meet -- its code and a fragment of its message, so that two checks with one code
are told apart. ``tests/test_attacks.py`` runs every attack, and runs them again against
the verifier with each of its checks removed in turn: every removal must let at least one attack
through (or change its rejection).

The honest proofs are small (Fibonacci at 2^5 rows; a 16-value byte table on a bus with a
16-row range table) and built once per process.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import numpy as np

import jaxstark as js
from jaxstark import verifier
from jaxstark.examples import EXAMPLES
from jaxstark.examples.machine import RangeTable
from jaxstark.field import goldilocks as gl
from jaxstark.proof import Proof, TableProof
from jaxstark.testing import malicious

P = gl.P
CFG = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4)  # 3 FRI layers at 2^5 rows
FLAT = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=64)  # no FRI layer
LOG_N = 5
TRACE_POINT = (gl.root_of_unity(LOG_N), 0, 0)  # in the trace domain
COSET_POINT = (3 * gl.root_of_unity(LOG_N + 1) % P, 0, 0)  # on the LDE coset


class Bytes(js.AIR):
    """One column whose values are sent to the bus ``"range"``."""

    width: int = eqx.field(static=True, default=1)
    row_local = True

    def constraint_degrees(self):
        return ()

    def transition(self, cur, nxt, periodic, public):
        return []

    def interactions(self):
        return [js.Interaction.send("range", lambda row: [row[0]])]


class Pairs(Bytes):
    """Like :class:`Bytes`, but sends two-value tuples on the same bus."""

    def interactions(self):
        return [js.Interaction.send("range", lambda row: [row[0], 0])]


class Stepped(js.AIR):
    """x[i+1] = x[i] + k[i mod 4]: a periodic column of length 4 (needs 4 rows or more)."""

    width: int = eqx.field(static=True, default=1)

    def constraint_degrees(self):
        return (1,)

    def transition(self, cur, nxt, periodic, public):
        return [nxt[0] - cur[0] - periodic[0]]

    def periodic_columns(self):
        return [[1, 2, 3, 4]]


class Attack(NamedTuple):
    name: str
    code: str
    says: str  # a fragment of the rejection's message
    run: Callable[[], object]


ATTACKS: list[Attack] = []


def attack(code: str, says: str):
    def register(fn):
        ATTACKS.append(Attack(fn.__name__, code, says, fn))
        return fn

    return register


# -- honest material ---------------------------------------------------------------------------


@functools.cache
def fib():
    air, trace, public = EXAMPLES["fibonacci"](LOG_N)
    return air, np.asarray(trace), tuple(public)


@functools.cache
def fib_proof(config=CFG) -> Proof:
    air, trace, public = fib()
    return js.prove(air, trace, public, config)


@functools.cache
def bus_tables():
    values = np.arange(16, dtype=np.uint64)[:, None]
    table = np.stack([np.arange(16, dtype=np.uint64), np.ones(16, np.uint64)], axis=1)
    return [(Bytes(), values, ()), (RangeTable(bits=4), table, ())]


@functools.cache
def bus_proof() -> Proof:
    return js.prove([(a, t) for a, t, _ in bus_tables()], config=CFG)


@functools.cache
def dishonest(what: str, config=CFG) -> Proof:
    """The dishonest proofs, each built once (``what`` names the replaced step)."""
    air, trace, public = fib()
    fibonacci = [(air, trace, public)]
    if what == "z in the trace domain":
        return malicious.prove(fibonacci, config, z=TRACE_POINT)
    if what == "z on the LDE coset":
        return malicious.prove(fibonacci, config, z=COSET_POINT)
    if what == "a wrong T(z)":
        return malicious.prove(
            fibonacci, config, ood=lambda values, context: dict(values, trace_z=add(values["trace_z"]))
        )
    if what == "consistent claims":
        return malicious.prove(fibonacci, config, ood=malicious.consistent_claims)
    if what.startswith("layer "):
        at = int(what.split()[1])
        return malicious.prove(fibonacci, config, layer=lambda k, values: add(values, 5) if k == at else values)
    if what == "a wrong final polynomial":
        return malicious.prove(fibonacci, config, final=bump_first)
    if what == "a forged multiplicity":
        (a, values, _), (r, table, _) = bus_tables()
        committed = table.copy()
        committed[0, 1], committed[1, 1] = 2, 0  # the committed counts say 0 twice, 1 never
        # the aux columns (and the published bus sums) are built from the honest counts: the bus balances
        return malicious.prove([(a, values, ()), (r, committed, ())], config, target=1, aux_trace=table)
    if what == "an unbalanced bus":
        (a, values, _), (r, table, _) = bus_tables()
        forged = table.copy()
        forged[0, 1] = 2  # counts 0 twice, sent once
        return malicious.prove([(a, values, ()), (r, forged, ())], config)
    raise ValueError(what)


def verify_fib(proof, config=CFG, **kw):
    air, _, public = fib()
    return js.verify(air, proof, public, config, **kw)


def verify_bus(proof, airs=None):
    return js.verify(airs or [a for a, _, _ in bus_tables()], proof, config=CFG)


def with_table(proof: Proof, t: int = 0, **changes) -> Proof:
    """``proof`` with fields of table proof ``t`` replaced (built in Python: nothing is parsed)."""
    table = proof.tables[t]
    fields = {name: getattr(table, name) for name, _ in TableProof.FIELDS} | changes
    tables = list(proof.tables)
    tables[t] = TableProof(**fields)
    return Proof(proof.config_id, tuple(tables), proof.chunks)


def add(values, delta: int = 1) -> np.ndarray:
    """``values + delta`` in the field, element-wise (canonical)."""
    a = np.asarray(values).astype(object)
    return ((a + delta) % P).astype(np.uint64)


def bump_first(values, delta: int = 1) -> np.ndarray:
    out = np.array(values, copy=True)
    flat = out.reshape(-1)
    flat[0] = np.uint64((int(flat[0]) + delta) % P)
    return out


# -- bytes, floor, identity, layout ------------------------------------------------------------------


@attack("format", "truncated")
def truncated_bytes():
    return verify_fib(fib_proof().to_bytes()[:-40])


@attack("format", "version 3")
def an_older_format_version():
    data = bytearray(fib_proof().to_bytes())
    data[8:10] = (3).to_bytes(2, "little")
    return verify_fib(bytes(data))


@attack("security", "below the verifier's floor")
def low_security():
    return verify_fib(fib_proof(), min_security_bits=100)


@attack("wrong-config", "the proof used config")
def other_config():
    return verify_fib(fib_proof(), js.StarkConfig(blowup=2, num_queries=9, grinding_bits=2, fri_final_degree=4))


@attack("malformed", "expected a Proof or its bytes")
def not_a_proof():
    return verify_fib("a proof")


@attack("malformed", "the config id is a")
def config_id_not_a_string():
    p = fib_proof()
    return verify_fib(Proof(7, p.tables, p.chunks))


@attack("malformed", "must be tuples")
def tables_not_a_tuple():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, list(p.tables), p.chunks))


@attack("malformed", "table proofs (1 ...")
def no_tables():
    return verify_fib(Proof(fib_proof().config_id, (), ()))


@attack("chunks", "chunks (0 ...")
def huge_chunk_count():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, p.tables, (40,)))


@attack("chunks", "chunks (0 ...")
def negative_chunk_count():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, p.tables, (-1,)))


@attack("tables", "the statement 2")
def fewer_tables_than_the_statement():
    air, _, public = fib()
    return js.verify([(air, public), (air, public)], fib_proof(), config=CFG)


@attack("tables", "its chunk layout needs 2")
def chunk_layout_without_its_chunks():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, p.tables, (1,)))


@attack("chunks", "cannot be split into row chunks")
def chunks_of_a_table_that_reads_the_next_row():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, p.tables * 2, (1,)))


@attack("chunks", "the chunks have different heights")
def chunks_of_different_heights():
    p = bus_proof()
    byte_table = p.tables[0]
    shorter = with_table(p, 0, log_n=3).tables[0]
    return verify_bus(Proof(p.config_id, (byte_table, shorter, p.tables[1]), (1, 0)))


@attack("bus", "does not balance")
def unbalanced_bus():
    return verify_bus(dishonest("an unbalanced bus"))


# -- one table's fields ------------------------------------------------------------------------------


@attack("malformed", "expected a TableProof")
def table_of_the_wrong_type():
    p = fib_proof()
    return verify_fib(Proof(p.config_id, ("table",), p.chunks))


@attack("wrong-air", "the proof is for AIR")
def other_air():
    return verify_fib(with_table(fib_proof(), air_id=RangeTable(bits=4).fingerprint()))


@attack("public-inputs", "takes 1 public input")
def public_inputs_the_air_does_not_take():
    air, _, _ = fib()
    return js.verify(air, fib_proof(), (), CFG)


@attack("malformed", "trace height 2^40 is out of range")
def height_out_of_range():
    return verify_fib(with_table(fib_proof(), log_n=40))


@attack("malformed", "trace height 2^True is out of range")
def height_of_the_wrong_type():
    return verify_fib(with_table(fib_proof(), log_n=True))


@attack("wrong-height", "the statement says 2^6")
def another_height_than_pinned():
    return verify_fib(fib_proof(), log_n=LOG_N + 1)


@attack("wrong-height", "periodic column 0 has length 4")
def height_the_air_cannot_carry():
    air = Stepped()
    proof = with_table(fib_proof(), air_id=air.fingerprint(), log_n=1)
    return js.verify(air, proof, (), CFG)


@attack("malformed", "expected uint64(8, 2)")
def rows_of_the_wrong_dtype():
    p = fib_proof()
    return verify_fib(with_table(p, trace_rows=np.asarray(p.tables[0].trace_rows).astype(np.int64)))


@attack("malformed", "expected uint64(8, 2)")
def rows_of_the_wrong_rank():
    p = fib_proof()
    return verify_fib(with_table(p, trace_rows=np.asarray(p.tables[0].trace_rows).reshape(-1)))


class _Hostile:
    """An object that fails when numpy reads it."""

    def __array__(self, *args, **kwargs):
        raise ZeroDivisionError("not today")


@attack("malformed", "is not an array (ZeroDivisionError")
def rows_that_fail_to_convert():
    return verify_fib(with_table(fib_proof(), trace_rows=_Hostile()))


@attack("malformed", "non-canonical field element")
def non_canonical_row_value():
    p = fib_proof()
    rows = np.array(p.tables[0].trace_rows, copy=True)
    rows[0, 0] = np.uint64(int(rows[0, 0]) + P) if int(rows[0, 0]) < 2**64 - P else np.uint64(P)
    return verify_fib(with_table(p, trace_rows=rows))


@attack("malformed", "the FRI openings must be tuples")
def fri_openings_not_a_tuple():
    p = fib_proof()
    return verify_fib(with_table(p, fri_rows=np.stack(p.tables[0].fri_rows)))


@attack("malformed", "expected 3 FRI layers")
def a_fri_layer_too_few():
    p = fib_proof()
    t = p.tables[0]
    return verify_fib(with_table(p, fri_rows=t.fri_rows[:-1], fri_paths=t.fri_paths[:-1]))


@attack("digest", "Poseidon2 digest word >= p")
def non_canonical_poseidon2_digest_word():
    config = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4, hash="poseidon2")
    p = fib_proof()
    paths = np.array(p.tables[0].trace_paths, copy=True)
    paths[0, 0, :8] = 0xFF  # a word of 2^64 - 1 >= p
    proof = with_table(Proof(config.fingerprint(), p.tables, p.chunks), trace_paths=paths)
    return verify_fib(proof, config)


# -- the table's checks, in order ----------------------------------------------------------------------


@contextlib.contextmanager
def forced_point(z):
    """The verifier draws ``z`` as its out-of-domain point (a prover that ground the transcript
    until the challenge hit it)."""
    replay = verifier._replay

    def forced(*args, **kw):
        return dict(replay(*args, **kw), z=np.array(z, np.uint64))

    verifier._replay = forced
    try:
        yield
    finally:
        verifier._replay = replay


@attack("ood", "lies in the base field")
def point_in_the_trace_domain():
    with forced_point(TRACE_POINT):
        return verify_fib(dishonest("z in the trace domain"))


@attack("ood", "lies in the base field")
def point_on_the_lde_coset():
    with forced_point(COSET_POINT):
        return verify_fib(dishonest("z on the LDE coset"))


@attack("ood", "does not match the AIR's constraints")
def wrong_out_of_domain_value():
    return verify_fib(dishonest("a wrong T(z)"))


@attack("ood", "does not match the AIR's constraints")
def bus_balanced_by_a_forged_multiplicity():
    return verify_bus(dishonest("a forged multiplicity"))


@attack("pow", "proof of work")
def wrong_nonce():
    p = fib_proof()
    nonce = int(p.tables[0].nonce)
    for k in range(1, 64):  # the first nonce that misses the 2-bit proof of work
        proof = with_table(p, nonce=np.uint64(nonce + k))
        try:
            verify_fib(proof)
        except js.InvalidProof as exc:
            if exc.code == "pow":
                raise
    raise AssertionError("no failing nonce found")


def _tampered_opening(name: str, proof_fn=fib_proof, verify=verify_fib, layer: int | None = None):
    p = proof_fn()
    value = getattr(p.tables[0], name)
    if layer is not None:
        rows = list(value)
        rows[layer] = bump_first(rows[layer])
        return verify(with_table(p, **{name: tuple(rows)}))
    return verify(with_table(p, **{name: bump_first(value)}))


@attack("trace-path", "the trace opening")
def changed_trace_row():
    return _tampered_opening("trace_rows")


@attack("aux-path", "the aux trace opening")
def changed_aux_row():
    return _tampered_opening("aux_rows", bus_proof, verify_bus)


@attack("composition-path", "the composition opening")
def changed_composition_row():
    return _tampered_opening("parts_rows")


@attack("fri-path", "FRI layer 1 opening")
def changed_fri_row():
    return _tampered_opening("fri_rows", layer=1)


@attack("deep", "does not match the DEEP composition")
def first_layer_off_the_deep_word():
    return verify_fib(dishonest("layer 0"))


class Cube(js.AIR):
    """Three columns, one constraint ``x^3 = 2``: no trace satisfies it (2 is not a cube mod p; it
    is the cube of the extension's generator ``w``)."""

    width: int = eqx.field(static=True, default=3)

    @property
    def row_local(self):
        return True

    def constraint_degrees(self):
        return (3,)

    def transition(self, cur, nxt, periodic, public):
        return [cur[0] ** 3 - 2]


class Vanishing(Cube):
    """The same shape, its constraint identically zero."""

    def transition(self, cur, nxt, periodic, public):
        return [cur[0] ** 3 - cur[0] ** 3]


@attack("deep", "does not match the DEEP composition")
def no_witness_with_as_many_queries_as_columns():
    """Every column claims ``w`` at ``z`` and ``z w`` (so ``x^3 = 2`` holds there), the committed
    composition and the first FRI layer are zero. With 3 queries and 3 columns the opened rows form
    a square matrix; a DEEP sum that mixed queries with columns would cancel the claims exactly."""
    cfg = js.StarkConfig(blowup=8, num_queries=3, grinding_bits=0, fri_final_degree=4)
    w = np.array([[0, 1, 0]] * 3, np.uint64)
    trace = np.tile(w[:1], (32, 1))
    proof = malicious.prove(
        [(Cube(), trace, ())], cfg, composition_air=Vanishing(), ood=lambda v, ctx: dict(v, trace_z=w, trace_zg=w),
        layer=lambda k, f: np.zeros_like(f) if k == 0 else f,
    )  # fmt: skip
    return js.verify(Cube(), proof, (), cfg)


@attack("fri-fold", "does not match the fold of FRI layer 0")
def wrong_fold_recommitted():
    return verify_fib(dishonest("layer 1"))


@attack("fri-final", "does not lie on the final polynomial")
def wrong_final_polynomial():
    return verify_fib(dishonest("a wrong final polynomial"))


@attack("fri-final", "does not lie on the final polynomial")
def deep_word_not_low_degree():
    return verify_fib(dishonest("consistent claims"))


@attack("deep", "does not lie on the final polynomial")
def deep_word_not_low_degree_without_fri_layers():
    return verify_fib(dishonest("consistent claims", FLAT), FLAT)


def statement_errors():
    """Not attacks on a proof: statements the verifier refuses before reading it."""
    return {"a bus with tuples of two lengths": lambda: verify_bus(bus_proof(), [Pairs(), RangeTable(bits=4)])}
