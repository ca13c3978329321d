"""Every check of the verifier meets the attack it exists for (``tests/attacks.py``), and no check
is dead: with any one of them removed from ``jaxstark/verifier.py``, some attack is accepted or
meets another rejection."""

import ast
import contextlib
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest

import jaxstark as js
from jaxstark import verifier
from jaxstark.errors import REJECTIONS
from jaxstark.testing import malicious
from tests import attacks

VERIFIER = Path(verifier.__file__)


@pytest.mark.parametrize("case", attacks.ATTACKS, ids=[a.name for a in attacks.ATTACKS])
def test_each_attack_meets_its_rejection(case):
    with pytest.raises(js.InvalidProof) as exc:
        case.run()
    assert exc.value.code == case.code, exc.value
    assert case.says in str(exc.value), exc.value


def test_the_dishonest_prover_is_the_honest_one_when_it_replaces_nothing():
    air, trace, public = attacks.fib()
    assert malicious.prove([(air, trace, public)], attacks.CFG).to_bytes() == attacks.fib_proof().to_bytes()
    tables = attacks.bus_tables()
    assert malicious.prove(tables, attacks.CFG).to_bytes() == attacks.bus_proof().to_bytes()
    assert attacks.verify_fib(attacks.fib_proof()) and attacks.verify_bus(attacks.bus_proof())


def test_every_rejection_code_is_reached_by_an_attack():
    assert set(REJECTIONS) == {a.code for a in attacks.ATTACKS}
    with pytest.raises(ValueError, match="unknown rejection code"):
        js.InvalidProof("no-such-check", "a message")


def test_a_bus_with_tuples_of_two_lengths_is_refused_by_both_sides():
    for run in attacks.statement_errors().values():
        with pytest.raises(ValueError, match="tuples of different lengths"):
            run()
    with pytest.raises(ValueError, match="tuples of different lengths"):
        js.prove([(attacks.Pairs(), np.zeros((16, 1), np.uint64)), (js.examples.RangeTable(bits=4),
                  np.zeros((16, 2), np.uint64))], config=attacks.CFG)  # fmt: skip


class Scaled(js.AIR):
    """x[i+1] = a * x[i]: a field that changes the constraint."""

    width: int = eqx.field(static=True, default=1)
    a: int = eqx.field(static=True, default=2)
    table: tuple = eqx.field(static=True, default=(1, 2))

    def constraint_degrees(self):
        return (1,)

    def transition(self, cur, nxt, periodic, public):
        return [nxt[0] - self.a * cur[0]]


def test_an_airs_fields_are_bound_into_its_fingerprint():
    """The fingerprint goes into the transcript first: a prover cannot choose an AIR's
    parameters after seeing the challenges."""
    prints = {Scaled(a=a, table=t).fingerprint() for a in (2, 3) for t in ((1, 2), (1, 2, 0), ("1", 2))}
    assert len(prints) == 6
    assert Scaled(a=2).fingerprint() == Scaled(a=2).fingerprint()


class Broken(attacks.Bytes):
    def interactions(self):
        return [js.Interaction.send("range", lambda row: [row[3]])]  # a column the table does not have


def test_a_statement_whose_air_fails_is_a_statement_error_not_a_rejection():
    with pytest.raises(ValueError, match=r"statement table 0 \(Broken\) is not a usable AIR: IndexError"):
        attacks.verify_bus(attacks.bus_proof(), [Broken(), js.examples.RangeTable(bits=4)])
    with pytest.raises(TypeError, match="finite"):
        attacks.verify_fib(attacks.fib_proof(), min_security_bits=float("nan"))


def check_sites(tree: ast.Module) -> list[ast.Call]:
    """Every call that rejects: ``_reject(...)`` and ``_first_bad(...)`` as statements."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id in ("_reject", "_first_bad")
    ]


@contextlib.contextmanager
def without_site(k: int):
    """``jaxstark.verifier`` with check site ``k`` replaced by ``None`` (the compiled programs
    are kept: no site is inside one); yields the removed call and the codes it names."""
    source = VERIFIER.read_text()
    tree = ast.parse(source)
    site = check_sites(tree)[k]
    codes = {c.value for c in ast.walk(site) if isinstance(c, ast.Constant) and c.value in REJECTIONS}
    site.func, site.args, site.keywords = ast.copy_location(ast.Name("_no_check", ast.Load()), site.func), [], []
    names = vars(verifier)
    saved = dict(names)
    try:
        exec(compile(tree, str(VERIFIER), "exec"), names)  # noqa: S102 -- the project's own source
        names["_no_check"] = lambda: None
        for name, value in saved.items():  # keep the jitted programs (and their caches)
            if isinstance(value, type(jax.jit(abs))):
                names[name] = value
        yield ast.get_source_segment(source, site) or ast.unparse(site), codes
    finally:
        names.clear()
        names.update(saved)


def escapes(case) -> str | None:
    """How ``case`` gets past the (mutated) verifier, or None if it meets its rejection."""
    try:
        case.run()
    except js.InvalidProof as exc:
        if exc.code == case.code and case.says in str(exc):
            return None
        return f"rejected as {exc.code}: {exc}"
    except Exception as exc:  # noqa: BLE001 -- a crash also shows the check mattered
        return f"crashed: {type(exc).__name__}: {exc}"
    return "accepted"


def test_removing_any_single_check_lets_an_attack_through():
    n = len(check_sites(ast.parse(VERIFIER.read_text())))
    assert n >= 30
    for case in attacks.ATTACKS:  # build every proof once, with the real verifier
        assert escapes(case) is None, case.name
    dead = []
    for k in range(n):
        with without_site(k) as (removed, codes):
            likely = sorted(attacks.ATTACKS, key=lambda case: case.code not in codes)  # its own attacks first
            if not any(escapes(case) for case in likely):
                dead.append(removed)
    assert not dead, f"checks no attack depends on: {dead}"
    assert escapes(attacks.ATTACKS[0]) is None  # the real verifier is back
