"""Fault injection (jaxstark.testing.faults): every site x every hash x {production posture, the
test-only host fallback}; one-shot and sticky arming; the environment variable; and the
meta-tests that every registered site is reached and every dispatch point is a registered site.

The statement reaches every site: a row-local table with a bus, split into two chunks proven one
group at a time (so the commitments are computed again), and a range table receiving its
values -- two tables of 2^3 rows, one FRI layer: cheap to compile for each hash. That layer of 16
evaluations is dispatched as a large layer of its own (the threshold is lowered for this module),
so the FRI layer round is reached as well as the final one. The "composition tree" round runs
only where the planner recomputes a composition tree, which it does not for groups of row
chunks: that site is reached by a Fibonacci table of 2^3 rows under a budget that makes the
planner recompute its trees (:func:`recomputing`), which must give the keep-everything bytes --
with BLAKE3 only (the round's hash-specific part, the tree build, is every other round's too)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.examples.machine import RangeTable
from jaxstark.memory import executor
from jaxstark.memory.executor import FALLBACK_ENV
from jaxstark.rounds import COMPOSITION_TREE, r4_fri_layer, registered
from jaxstark.testing import faults
from tests.attacks import Bytes  # one column sent to the "range" bus

ROOT = Path(__file__).resolve().parents[1]
HASHES = ("blake3", "keccak256", "poseidon2")


def statement():
    values = np.random.default_rng(7).integers(0, 8, 16, dtype=np.uint64)
    counts = np.bincount(values.astype(np.int64), minlength=8).astype(np.uint64)
    return [(Bytes(), values[:, None]), (RangeTable(bits=3), np.stack([np.arange(8, dtype=np.uint64), counts], 1))]


def config(hash_name: str, **kw) -> js.StarkConfig:
    return js.StarkConfig(blowup=2, num_queries=6, grinding_bits=2, fri_final_degree=4, hash=hash_name,
                          max_chunk_rows_log2=3, chunk_group=1, **kw)  # fmt: skip


FIB = EXAMPLES["fibonacci"](3)  # (air, trace, public): a table whose trees may be recomputed


def recomputing(hash_name: str) -> js.StarkConfig:
    """``config(hash_name)`` recomputing trees only, under the smallest device set that reaches
    for :data:`FIB`: its composition tree is then built in a round of its own."""
    least = js.plan(FIB[0], FIB[1], config(hash_name, held_strategies=("recompute",), vram_budget_mb=1 / 2**20))
    c = config(hash_name, held_strategies=("recompute",), vram_budget_mb=least.peak / 2**20)
    assert COMPOSITION_TREE in {r.name for r in js.plan(FIB[0], FIB[1], c).rounds}
    return c


def prove_recomputing(hash_name: str):
    return js.prove(FIB[0], FIB[1], FIB[2], recomputing(hash_name))


SITES = [site for site in faults.SITES if site != COMPOSITION_TREE]  # (that one: the tests at the end)


def verifies(proof, hash_name: str) -> bool:
    return js.verify([Bytes(), RangeTable(bits=3)], proof.to_bytes(), config=config(hash_name))


@pytest.fixture(scope="module", autouse=True)
def _one_large_fri_layer():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(r4_fri_layer, "SCAN_LAYERS_BELOW_CPU", 8)
        mp.setattr(executor, "PARK_MIN_BYTES", 0)  # the trees of 2^3 rows may be recomputed
        yield


@pytest.fixture(autouse=True)
def _domain_tables_copied_in_every_proof():
    """Each proof copies its domain tables in (the runner keeps them for the next proof of a
    shape), so the "host to device" site covers that copy, and its fallback, in every test."""
    executor._DOMAINS.clear()


@pytest.fixture(scope="module", params=HASHES)
def reference(request):
    """The proof without faults, per hash (with BLAKE3 also a Fibonacci proof recomputing its
    trees, the same bytes as keeping them); every site is reached on the way."""
    faults.reset()
    proof = js.prove(statement(), config=config(request.param))
    if request.param == "blake3":
        assert prove_recomputing("blake3").to_bytes() == js.prove(*FIB, config("blake3")).to_bytes()
    calls = {site: n for site, (n, fires) in faults.counters().items()}
    return request.param, proof.to_bytes(), calls


def test_every_registered_site_is_reached_for_every_hash(reference):
    """A site no proof reaches (say a hook that one hash's path lacks) would fail here."""
    hash_name, _, calls = reference
    unreached = [site for site, n in calls.items() if n == 0 and (site != COMPOSITION_TREE or hash_name == "blake3")]
    assert not unreached, f"{hash_name}: sites never reached: {unreached}"


def test_every_dispatch_point_is_a_registered_site(reference):
    hash_name = reference[0]
    tables = [(air, trace) for air, trace in statement()]
    rounds = [*js.plan(tables, config=config(hash_name)).rounds, *js.plan(*FIB[:2], recomputing("blake3")).rounds]
    names = {registered(r.name).name for r in rounds}
    assert names == set(faults.ROUNDS)  # every round the schedule dispatches, and no stale site
    staged = {stage for name in names for stage in faults.stages(name, fri_layers=1)}
    assert staged == set(faults.STAGES)  # every stage runs in some round
    with pytest.raises(faults.UnregisteredSite):
        faults.reached("a round nobody registered")


@pytest.mark.parametrize("site", SITES)
def test_a_fault_in_production_posture_is_loud_and_names_the_site(reference, site, monkeypatch):
    hash_name = reference[0]
    monkeypatch.delenv(FALLBACK_ENV, raising=False)
    before = faults.counters()[site][1]
    with faults.inject(site), pytest.raises(js.DeviceFailure) as exc:
        js.prove(statement(), config=config(hash_name))
    assert faults.counters()[site][1] == before + 1
    text = str(exc.value)
    assert f"at site {site!r}" in text and "injected fault" in text
    for fact in ("round '", "on cpu:", "budget", "total device set", "allocator posture"):
        assert fact in exc.value.diagnostic, fact


@pytest.mark.parametrize("site", SITES)
def test_a_fault_under_the_test_only_fallback_still_gives_a_proof_that_verifies(reference, site, monkeypatch):
    hash_name, clean, _ = reference
    monkeypatch.setenv(FALLBACK_ENV, "1")
    before = faults.counters()[site][1]
    with faults.inject(site):
        proof = js.prove(statement(), config=config(hash_name))
    assert faults.counters()[site][1] == before + 1  # the fault fired, once
    assert verifies(proof, hash_name)
    assert proof.to_bytes() == clean  # the host did the same work


def test_a_fault_in_the_composition_tree_round_is_loud_or_recomputed_on_the_host(monkeypatch):
    """The "composition tree" site (a Fibonacci table recomputing its trees): loud in the
    production posture; under the test-only fallback, the same bytes as keeping the trees."""
    hash_name = "blake3"
    clean = js.prove(*FIB, config(hash_name)).to_bytes()
    monkeypatch.delenv(FALLBACK_ENV, raising=False)
    with faults.inject(COMPOSITION_TREE), pytest.raises(js.DeviceFailure) as exc:
        prove_recomputing(hash_name)
    assert f"at site {COMPOSITION_TREE!r}" in str(exc.value) and "round 'composition tree'" in exc.value.diagnostic
    monkeypatch.setenv(FALLBACK_ENV, "1")
    before = faults.counters()[COMPOSITION_TREE][1]
    with faults.inject(COMPOSITION_TREE):
        proof = prove_recomputing(hash_name)
    assert faults.counters()[COMPOSITION_TREE][1] == before + 1
    assert proof.to_bytes() == clean and js.verify(FIB[0], proof, FIB[2], recomputing(hash_name))


def test_one_shot_and_sticky_arming_count_calls_from_arming(monkeypatch):
    monkeypatch.setenv(FALLBACK_ENV, "1")
    faults.reset()
    js.prove(statement(), config=config("blake3"))
    per_proof = faults.counters()["composition"][0]
    assert per_proof == 3  # two chunk groups and the range table
    faults.reset()
    with faults.inject("composition", at=2):
        js.prove(statement(), config=config("blake3"))
    assert faults.counters()["composition"] == (per_proof, 1)
    faults.reset()
    with faults.inject("composition", at=2, sticky=True):
        proof = js.prove(statement(), config=config("blake3"))
    assert faults.counters()["composition"] == (per_proof, per_proof - 1)  # the 2nd and every later one
    assert verifies(proof, "blake3")
    with faults.inject("composition", at=1):
        pass
    faults.reset()
    js.prove(statement(), config=config("blake3"))
    assert faults.counters()["composition"] == (per_proof, 0)  # disarmed on leaving the context
    # a stage inside a round: the 2nd FRI fold (one layer per unit here) fails its FRI layer round
    assert faults.counters()["FRI fold"][0] == faults.counters()["FRI layer"][0] == per_proof
    assert faults.counters()["FRI final"][0] == per_proof
    # main and aux trees of 3 units, again for the 2 chunk groups, the parts trees, one FRI layer each
    assert faults.counters()["tree build"][0] == 3 + 2 + 3 + 2 + 3 + 3
    faults.reset()
    with faults.inject("FRI fold", at=2), pytest.raises(js.DeviceFailure, match="at site 'FRI fold'"):
        monkeypatch.delenv(FALLBACK_ENV)
        js.prove(statement(), config=config("blake3"))


@pytest.mark.parametrize(
    "site, at, match",
    [("nowhere", 1, "no fault site"), ("queries", 0, "N >= 1"), ("queries", True, "N >= 1")],
)
def test_bad_arming_is_refused(site, at, match):
    with pytest.raises((ValueError, KeyError), match=match), faults.inject(site, at):
        pass


def _main_job(env: dict) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jaxstark", "--log-rows", "4", "--blowup", "2", "--queries", "8", "--grinding", "2"]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600, env={**os.environ, **env})


def test_the_environment_arms_a_subprocess():
    env = {faults.ENV: "DEEP@1"}
    loud = _main_job({**env, FALLBACK_ENV: ""})
    assert loud.returncode == 4, loud.stderr  # the command's exit code for a device failure
    assert "device failure" in loud.stderr and "at site 'DEEP'" in loud.stderr
    quiet = _main_job({**env, FALLBACK_ENV: "1"})
    assert quiet.returncode == 0, quiet.stderr
    assert "recomputed on the HOST" in quiet.stderr and "verified   OK" in quiet.stdout
    bad = _main_job({faults.ENV: "composition@x"})
    assert bad.returncode != 0 and "is not SITE@N or SITE@N+" in bad.stderr
